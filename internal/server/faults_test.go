package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/evloop"
	"github.com/sse-latency/sse-latency/internal/testutil"
	"github.com/sse-latency/sse-latency/internal/wire"
)

// rawStream is an HTTP/1.1 streamed response read from the wire: its head,
// its chunks as they were framed, whether its last chunk arrived, and how
// the connection ended after it.
type rawStream struct {
	head   string
	chunks []string
	ended  bool  // the last chunk arrived
	err    error // what ended the reading (io.EOF: the server closed)
}

// body is the stream's body, de-chunked.
func (r rawStream) body() string { return strings.Join(r.chunks, "") }

// streamRaw posts body (a chat request unless path says otherwise) and
// reads the response until its last chunk, or until the server closes.
func streamRaw(t *testing.T, srv *Server, path, body string, header ...string) rawStream {
	t.Helper()
	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	send(t, c, postRequest(path, body, header...))
	r := bufio.NewReader(c)
	var out rawStream
	var head strings.Builder
	for {
		line, err := r.ReadString('\n')
		head.WriteString(line)
		if err != nil {
			t.Fatalf("reading the head: %v (got %q)", err, head.String())
		}
		if line == "\r\n" {
			break
		}
	}
	out.head = head.String()
	h, _, err := wire.ParseResponseHead([]byte(out.head))
	if err != nil {
		t.Fatal(err)
	}
	if !h.Chunked {
		b, err := io.ReadAll(r)
		out.chunks, out.err = []string{string(b)}, err
		return out
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			out.err = err
			return out
		}
		n, err := strconv.ParseInt(strings.TrimRight(line, "\r\n"), 16, 64)
		if err != nil {
			t.Fatalf("bad chunk size line %q", line)
		}
		data := make([]byte, n+2)
		if _, err := io.ReadFull(r, data); err != nil {
			out.err = err
			return out
		}
		if n == 0 {
			out.ended = true
			_, out.err = r.ReadByte() // the server closes (Connection: close)
			return out
		}
		out.chunks = append(out.chunks, string(data[:n]))
	}
}

// dataTokens returns the text of each chat content delta in an SSE body,
// whatever its line endings and comments.
func dataTokens(body string) []string {
	var out []string
	var ls wire.LineSplitter
	ls.Feed([]byte(body))
	for {
		line, ok := ls.Next()
		if !ok {
			return out
		}
		p, ok := wire.DataPayload(line)
		if !ok {
			continue
		}
		ev := api.ScanEvent(api.Chat, nil, p)
		if ev.Has(api.HasContent) {
			out = append(out, string(ev.Content))
		}
	}
}

// tokensOf returns the texts of tokens 0..n-1 in words w.
func tokensOf(w api.TextWords, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = string(api.AppendText(nil, w, i))
	}
	return out
}

// TestFaultCut: a cut closes the connection after its K tokens — no end
// events, no last chunk — and is not taken for the client going away;
// from the hint in each channel, and from Config.Faults.
func TestFaultCut(t *testing.T) { forEngines(t, testFaultCut) }

func testFaultCut(t *testing.T, e evloop.Engine) {
	reg := emission.New()
	srv := startServer(t, Config{Tokens: 10, DelayMs: 0.2, Emissions: reg, Engine: e})
	for _, tt := range []struct{ name, body, header string }{
		{"json", `{"stream":true,"pi_id":"cut-json","pi_cut_after":3}`, ""},
		{"header", `{"stream":true,"pi_id":"cut-header"}`, api.HintHeader + ": cut_after=3"},
		{"prompt", `{"stream":true,"pi_id":"cut-prompt","messages":[{"content":"[sse-latency cut_after=3]"}]}`, ""},
	} {
		var header []string
		if tt.header != "" {
			header = append(header, tt.header)
		}
		r := streamRaw(t, srv, "/v1/chat/completions", tt.body, header...)
		got := dataTokens(r.body())
		if r.ended || !errors.Is(r.err, io.EOF) || strings.Join(got, " ") != strings.Join(tokensOf(api.TextASCII, 3), " ") ||
			strings.Contains(r.body(), "[DONE]") || strings.Contains(r.body(), `"finish_reason":"stop"`) {
			t.Errorf("%s: last chunk %v, end %v, tokens %q, body %q; want 3 tokens, no end events, the connection closed without the last chunk",
				tt.name, r.ended, r.err, got, r.body())
		}
		id := "cut-" + tt.name
		testutil.Await(t, id+"'s entry to finish", func() bool { return reg.Lookup(id).Finished() })
		if tm := reg.Lookup(id); tm.Len() != 3 || tm.At(2) == 0 || tm.GoneAt() != 0 {
			t.Errorf("%s: registry: %d tokens, token 2 at %d, client gone at %d; want 3 tokens, all written, no departure",
				tt.name, tm.Len(), tm.At(2), tm.GoneAt())
		}
	}

	def := startServer(t, Config{Tokens: 10, DelayMs: 0.2, Engine: e, Faults: api.Faults{CutAfter: ptr[int64](2)}})
	if r := streamRaw(t, def, "/v1/chat/completions", `{"stream":true}`); r.ended || len(dataTokens(r.body())) != 2 {
		t.Errorf("Config.Faults cut_after=2: last chunk %v, tokens %q; want 2 tokens and a cut", r.ended, dataTokens(r.body()))
	}
	if r := streamRaw(t, def, "/v1/chat/completions", `{"stream":true,"pi_cut_after":4}`); r.ended || len(dataTokens(r.body())) != 4 {
		t.Errorf("a hint over Config.Faults: tokens %q; want the hint's 4", dataTokens(r.body()))
	}
}

// TestFaultsH2: over HTTP/2 a cut resets the stream, after its tokens; a
// split, trickled or rewritten stream carries its tokens intact.
func TestFaultsH2(t *testing.T) {
	h := newH2Setup(t, false, Config{Tokens: 10, DelayMs: 0.2})
	resp, err := h.client.Post(h.base+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"stream":true,"pi_cut_after":3}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil || len(dataTokens(string(b))) != 3 || strings.Contains(string(b), "[DONE]") {
		t.Errorf("h2c cut: read error %v, tokens %q; want a reset stream after 3 tokens", err, dataTokens(string(b)))
	}
	for _, body := range []string{
		`{"stream":true,"pi_text":"utf8","pi_split":"utf8,3","pi_line_end":"crlf","pi_comments":true}`,
		`{"stream":true,"pi_text":"utf8","pi_trickle":true,"pi_split_gap_ms":0,"pi_line_end":"cr","pi_event_bytes":2000}`,
	} {
		_, got := h.post(t, "/v1/chat/completions", body)
		if toks := strings.Join(dataTokens(got), " "); toks != strings.Join(tokensOf(api.TextUTF8, 10), " ") || !strings.Contains(got, "[DONE]") {
			t.Errorf("h2c %s: tokens %q in %q", body, toks, got)
		}
	}
}

// TestFaultNoTerminal: the stream ends cleanly after its tokens, without
// its end events, and a persistent connection carries the next request.
func TestFaultNoTerminal(t *testing.T) { forEngines(t, testFaultNoTerminal) }

func testFaultNoTerminal(t *testing.T, e evloop.Engine) {
	srv := startServer(t, Config{Tokens: 4, DelayMs: 0.2, Engine: e})
	r := streamRaw(t, srv, "/v1/chat/completions", `{"stream":true,"stream_options":{"include_usage":true},"pi_no_terminal":true}`)
	if !r.ended || len(dataTokens(r.body())) != 4 || strings.Contains(r.body(), "[DONE]") ||
		strings.Contains(r.body(), `"usage"`) || strings.Contains(r.body(), `"finish_reason":"stop"`) {
		t.Errorf("no_terminal: last chunk %v, body %q; want 4 tokens, no end events, a clean end", r.ended, r.body())
	}
	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	keep := func(body string) string {
		return "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	}
	br := bufio.NewReader(c)
	for i, body := range []string{`{"stream":true,"pi_no_terminal":true}`, `{"stream":true}`} {
		send(t, c, keep(body))
		resp, err := readResponse(br)
		if err != nil || strings.Contains(resp, "[DONE]") != (i == 1) {
			t.Fatalf("request %d on a kept connection: %v, response %q", i, err, resp)
		}
	}
}

// TestFaultStatus: a status fault answers at once with that status and an
// error body in the dialect's shape, naming the injected fault.
func TestFaultStatus(t *testing.T) {
	srv := startServer(t, Config{Tokens: 3})
	for _, d := range api.Dialects {
		for _, code := range []int{429, 500, 529} {
			r := streamRaw(t, srv, d.Path(), fmt.Sprintf(`{"stream":true,"pi_status":%d}`, code))
			line, _, _ := strings.Cut(r.head, "\r\n")
			if want := fmt.Sprintf("HTTP/1.1 %d %s", code, faultStatusText(code)); line != want {
				t.Errorf("%s %d: status line %q, want %q", d, code, line, want)
			}
			if strings.Contains(r.head, "Retry-After: 1\r\n") != (code == 429) {
				t.Errorf("%s %d: head %q: want Retry-After exactly on a 429", d, code, r.head)
			}
			var body struct {
				Type  string `json:"type"`
				Error struct {
					Type, Message, Code string
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(r.body()), &body); err != nil || !strings.Contains(body.Error.Message, faultMessage) {
				t.Errorf("%s %d: body %q (%v): want JSON whose error message says %q", d, code, r.body(), err, faultMessage)
				continue
			}
			anthropic := d == api.Anthropic
			if anthropic && (body.Type != "error" || body.Error.Type != anthropicErrorType(code)) ||
				!anthropic && (body.Error.Code != "injected_fault" || body.Error.Type != openAIErrorType(code)) {
				t.Errorf("%s %d: body %q is not in the dialect's shape", d, code, r.body())
			}
		}
	}
	if got := anthropicErrorType(529); got != "overloaded_error" {
		t.Errorf("Anthropic's 529 is %q, want overloaded_error", got)
	}
}

// TestFaultStall: from token K on the tokens are the stall late: the gap
// before token K holds it, and the registry agrees with pi_ts.
func TestFaultStall(t *testing.T) { forEngines(t, testFaultStall) }

func testFaultStall(t *testing.T, e evloop.Engine) {
	reg := emission.New()
	srv := startServer(t, Config{Tokens: 5, DelayMs: 0.2, Emissions: reg, Engine: e})
	r := streamRaw(t, srv, "/v1/chat/completions", `{"stream":true,"pi_id":"stall","pi_stall_after":2,"pi_stall_ms":300}`)
	ts := piTsRE.FindAllStringSubmatch(r.body(), -1)
	if !r.ended || len(ts) < 6 {
		t.Fatalf("stall: %d stamped events in %q", len(ts), r.body())
	}
	stamp := func(k int) int64 { v, _ := strconv.ParseInt(ts[k+1][1], 10, 64); return v } // ts[0] is the role chunk's
	tm := reg.Lookup("stall")
	for k := range 5 {
		if tm.At(k) != stamp(k) {
			t.Errorf("token %d: registry %d, pi_ts %d", k, tm.At(k), stamp(k))
		}
	}
	// Token 2 is due 2 delays and the stall after the start (the role
	// chunk's stamp); a token may leave up to earlySlack before its
	// deadline, never more.
	start, _ := strconv.ParseInt(ts[0][1], 10, 64)
	if after := stamp(2) - start; after < 300_400_000-earlySlack {
		t.Errorf("token 2 left %d ns after the start, want at least 2 × 0.2 ms and the 300 ms stall", after)
	}
	if after := stamp(1) - start; after > 300_000_000 {
		t.Errorf("token 1 left %d ns after the start: the stall delayed a token before it", after)
	}
}

// TestFaultBytes: the faults that rewrite events — the first token's
// event padded to event_bytes, CRLF or CR line endings, a comment before
// every event — keep every token intact, on every engine.
func TestFaultBytes(t *testing.T) { forEngines(t, testFaultBytes) }

func testFaultBytes(t *testing.T, e evloop.Engine) {
	srv := startServer(t, Config{Tokens: 4, DelayMs: 0.2, Engine: e})
	want := strings.Join(tokensOf(api.TextASCII, 4), " ")

	r := streamRaw(t, srv, "/v1/chat/completions", `{"stream":true,"pi_event_bytes":65536}`)
	if len(r.chunks) < 2 || len(r.chunks[1]) != 65536 || !strings.Contains(r.chunks[1], `"pi_pad":"ananhuhu`) {
		t.Errorf("event_bytes: the first token's chunk has %d bytes, want 65536 with a pi_pad field", len(r.chunks[1]))
	} else if p, ok := wire.DataPayload([]byte(strings.TrimSuffix(r.chunks[1], "\n\n"))); !ok || !json.Valid(p) {
		t.Errorf("event_bytes: the padded event is not one valid JSON data line: %.200q", r.chunks[1])
	}
	if got := strings.Join(dataTokens(r.body()), " "); got != want || len(r.chunks[2]) > 1000 {
		t.Errorf("event_bytes: tokens %q, second token's event %d bytes; want %q, only the first padded", got, len(r.chunks[2]), want)
	}

	r = streamRaw(t, srv, "/v1/chat/completions", `{"stream":true,"pi_line_end":"crlf","pi_comments":1}`)
	body := r.body()
	if strings.Count(body, "\n") != strings.Count(body, "\r\n") || strings.Count(body, ": sse-latency comment\r\n\r\n") != len(r.chunks) ||
		strings.Join(dataTokens(body), " ") != want {
		t.Errorf("crlf + comments: %q; want CRLF line ends only, a comment in every event's chunk, tokens %q", body, want)
	}
	r = streamRaw(t, srv, "/v1/chat/completions", `{"stream":true,"pi_line_end":"cr"}`)
	if body := r.body(); strings.Contains(body, "\n") || !strings.Contains(body, "\r\r") || strings.Join(dataTokens(body), " ") != want {
		t.Errorf("cr: %q; want CR line ends only and tokens %q", body, want)
	}
}

// readEvent is an event as a client reading by the specification gets it:
// its type ("message" by default) and what its data carries.
type readEvent struct {
	typ     string
	content string // the text the dialect's scan finds in it
	json    bool   // the data is valid JSON
	lines   int    // data lines ("data: " lines of the raw block)
	commas  int    // commas in the data (none of the payloads has one in a string)
}

// readEvents reads an SSE body as a client does (wire.EventReader) and
// scans each event in dialect d; it returns the events and the framing.
func readEvents(t *testing.T, d api.Dialect, body string) ([]readEvent, wire.Framing) {
	t.Helper()
	var er wire.EventReader
	er.Feed([]byte(body))
	var out []readEvent
	for {
		ev, ok := er.Next()
		if !ok {
			break
		}
		typ := string(ev.Type)
		if typ == "" {
			typ = "message"
		}
		sc := api.ScanEvent(d, ev.Type, ev.Data)
		out = append(out, readEvent{typ: typ, content: string(sc.Content), json: json.Valid(ev.Data),
			lines: 1 + bytes.Count(ev.Data, []byte("\n")), commas: bytes.Count(ev.Data, []byte(","))})
	}
	if err := er.Err(); err != nil {
		t.Fatalf("reading %q: %v", body, err)
	}
	return out, er.Framing()
}

// TestFaultFraming: bom, multiline_data and event_after_data reframe the
// stream — a byte order mark first, each JSON payload over N data lines,
// the event line after the data — and a client reading by the
// specification gets the same events: the same types, the same texts,
// JSON still; in every dialect, on every engine.
func TestFaultFraming(t *testing.T) { forEngines(t, testFaultFraming) }

func testFaultFraming(t *testing.T, e evloop.Engine) {
	srv := startServer(t, Config{Tokens: 4, DelayMs: 0.2, Engine: e})
	for _, d := range api.Dialects {
		plain, _ := readEvents(t, d, streamRaw(t, srv, d.Path(), `{"stream":true}`).body())
		for _, tt := range []struct {
			name, hints string
			check       func(body string, f wire.Framing) string
		}{
			{"bom", `"pi_bom":true`, func(body string, f wire.Framing) string {
				if !strings.HasPrefix(body, "\xEF\xBB\xBF") || strings.Count(body, "\xEF\xBB\xBF") != 1 || f.BOMs != 1 {
					return "want one byte order mark, at the start"
				}
				return ""
			}},
			{"multiline_data=3", `"pi_multiline_data":3`, func(body string, f wire.Framing) string {
				if f.MultiLineEvents < 4 {
					return fmt.Sprintf("%d events of several data lines, want every token's at least", f.MultiLineEvents)
				}
				return ""
			}},
			{"event_after_data", `"pi_event_after_data":true`, func(body string, f wire.Framing) string {
				for _, block := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
					lines := strings.Split(block, "\n")
					if !strings.HasPrefix(lines[len(lines)-1], "event: ") || strings.Count(block, "event:") != 1 {
						return fmt.Sprintf("the event %q does not end with its one event line", block)
					}
				}
				return ""
			}},
		} {
			body := streamRaw(t, srv, d.Path(), `{"stream":true,`+tt.hints+`}`).body()
			got, framing := readEvents(t, d, body)
			if problem := tt.check(body, framing); problem != "" {
				t.Errorf("%s, %s: %s\n%q", d, tt.name, problem, body)
			}
			if len(got) != len(plain) {
				t.Errorf("%s, %s: %d events, want the plain stream's %d\n%q", d, tt.name, len(got), len(plain), body)
				continue
			}
			multi := 0
			for i := range got {
				g, w := got[i], plain[i]
				if g.lines > 1 {
					multi++
				}
				wantLines := 1
				if tt.name == "multiline_data=3" && g.json {
					wantLines = min(3, 1+g.commas) // cut after commas
				}
				w.lines = wantLines
				if g != w {
					t.Errorf("%s, %s: event %d is %+v; want %+v", d, tt.name, i, g, w)
				}
			}
			if multi != framing.MultiLineEvents {
				t.Errorf("%s, %s: the reader counts %d events of several data lines, there are %d", d, tt.name, framing.MultiLineEvents, multi)
			}
		}
	}
}

// TestFaultWriteBytes: under write_bytes the body after the first write
// (head and start events) comes in writes of B bytes, the rest with the
// end, whatever the pace of the tokens: at 2 ms between tokens, the
// client's reads are at most the coalesced writes (a read cannot return
// less than a write on loopback without a reader that falls behind, and
// then it merges writes), where without the fault it sees one per token.
// The stream is whole: every token in order.
func TestFaultWriteBytes(t *testing.T) { forEngines(t, testFaultWriteBytes) }

func testFaultWriteBytes(t *testing.T, e evloop.Engine) {
	const tokens = 20
	srv := startServer(t, Config{Tokens: tokens, DelayMs: 2, Engine: e})
	want := strings.Join(tokensOf(api.TextASCII, tokens), " ")
	for _, b := range []int{1000, 1 << 20} {
		c, err := net.Dial("tcp", srv.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(20 * time.Second))
		send(t, c, postRequest("/v1/chat/completions", fmt.Sprintf(`{"stream":true,"pi_write_bytes":%d}`, b)))
		var all []byte
		reads := 0
		buf := make([]byte, 1<<16)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				reads++
				all = append(all, buf[:n]...)
			}
			if err != nil {
				break
			}
		}
		c.Close()
		_, body, ok := strings.Cut(string(all), "\r\n\r\n")
		if !ok {
			t.Fatalf("write_bytes=%d: no head in %q", b, all)
		}
		got := strings.Join(dataTokens(strings.Join(dechunk(t, body), "")), " ")
		if got != want {
			t.Errorf("write_bytes=%d: tokens %q, want %q", b, got, want)
		}
		if most := 2 + (len(all)+b-1)/b; reads > most {
			t.Errorf("write_bytes=%d: %d reads of %d bytes, want at most %d (the first write, then writes of %d bytes)", b, reads, len(all), most, b)
		}
	}
}

// TestFaultSplit: a split event is framed in pieces at its offsets — the
// utf8 offset inside a character of the UTF-8 words — and a trickled one a
// byte per chunk; the pieces put back together are the whole event.
func TestFaultSplit(t *testing.T) { forEngines(t, testFaultSplit) }

func testFaultSplit(t *testing.T, e evloop.Engine) {
	srv := startServer(t, Config{Tokens: 3, DelayMs: 0.2, Engine: e})
	r := streamRaw(t, srv, "/v1/chat/completions", `{"stream":true,"pi_text":"utf8","pi_split":"utf8","pi_split_gap_ms":0.5}`)
	inChar := 0 // chunks that end inside a character: after its leading byte
	for _, c := range r.chunks {
		if b := c[len(c)-1]; b == 0xD0 || b == 0xD1 {
			inChar++
		} else if !utf8.ValidString(c) && !utf8.RuneStart(c[0]) {
			continue // the rest of a character cut in the chunk before
		} else if !utf8.ValidString(c) {
			t.Errorf("chunk %q is cut elsewhere than after a character's leading byte", c)
		}
	}
	if got, want := strings.Join(dataTokens(r.body()), " "), strings.Join(tokensOf(api.TextUTF8, 3), " "); !r.ended || got != want || inChar != 3 {
		t.Errorf("split=utf8: tokens %q, %d chunks cut inside a character; want %q and one per token", got, inChar, want)
	}

	r = streamRaw(t, srv, "/v1/chat/completions", `{"stream":true,"pi_split":[17,5],"pi_split_gap_ms":0}`)
	for i := 0; i+1 < len(r.chunks) && i < 9; i += 3 { // three pieces per event
		if len(r.chunks[i]) != 5 || len(r.chunks[i+1]) != 12 {
			t.Errorf("split=5,17: pieces %q %q, want 5 and 12 bytes", r.chunks[i], r.chunks[i+1])
		}
	}
	if got := strings.Join(dataTokens(r.body()), " "); got != strings.Join(tokensOf(api.TextASCII, 3), " ") {
		t.Errorf("split=5,17: tokens %q", got)
	}

	r = streamRaw(t, srv, "/v1/completions", `{"stream":true,"pi_tokens":1,"pi_trickle":true,"pi_split_gap_ms":0}`)
	for _, c := range r.chunks {
		if len(c) != 1 {
			t.Fatalf("trickle: a chunk of %d bytes (%q), want 1", len(c), c)
		}
	}
	if !r.ended || !strings.Contains(r.body(), `"text":"anan"`) || !strings.HasSuffix(r.body(), "data: [DONE]\n\n") {
		t.Errorf("trickle: body %q", r.body())
	}
}

// TestFaultHintCaps: a fault hint past its cap gets a 400 hint_above_limit
// naming it as its channel spells it, with the cap; a malformed JSON fault
// a 400 invalid_request_error naming the field. Every cap, every channel.
func TestFaultHintCaps(t *testing.T) {
	srv := startServer(t, Config{Tokens: 3, MaxTokens: 100, MaxDelay: time.Second})
	const above, bad = "hint_above_limit", "invalid_request_error"
	marker := func(hints string) string {
		return `{"stream":true,"messages":[{"role":"user","content":"Say 4-letter words [sse-latency ` + hints + `]"}]}`
	}
	for _, tt := range []struct{ name, body, header, code, want string }{
		{"cut_after, JSON", `{"stream":true,"pi_cut_after":101}`, "", above, "pi_cut_after 101 in the JSON body; the limit is 100"},
		{"cut_after, header", `{"stream":true}`, "cut_after=101", above, "cut_after=101 in the X-SSE-Latency header; the limit is 100"},
		{"stall_after, marker", marker("stall_after=101"), "", above, "stall_after=101 in the prompt marker; the limit is 100"},
		{"status below", `{"stream":true,"pi_status":200}`, "", above, "pi_status 200 in the JSON body; the limit is 400 to 599"},
		{"status above, marker", marker("status=600"), "", above, "status=600 in the prompt marker; the limit is 400 to 599"},
		{"stall_ms, JSON", `{"stream":true,"pi_stall_ms":1000.5}`, "", above, "pi_stall_ms 1000.5 in the JSON body; the limit is 1000 ms (1s)"},
		{"stall_ms, header", `{"stream":true}`, "stall_ms=700000", above, "stall_ms=700000 in the X-SSE-Latency header; the limit is 1000 ms (1s)"},
		{"event_bytes", `{"stream":true,"pi_event_bytes":1048577}`, "", above, "pi_event_bytes 1048577 in the JSON body; the limit is 1048576"},
		{"split_gap_ms", `{"stream":true,"pi_split_gap_ms":1001}`, "", above, "pi_split_gap_ms 1001 in the JSON body; the limit is 1000 ms (1s)"},
		{"split_gap_ms, header", `{"stream":true}`, "split_gap_ms=5000", above, "split_gap_ms=5000 in the X-SSE-Latency header; the limit is 1000 ms (1s)"},
		{"split offsets", `{"stream":true,"pi_split":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}`, "", bad, "pi_split: split=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17: 17 offsets: at most 16"},
		{"split offset", `{"stream":true,"pi_split":[1048577]}`, "", bad, `pi_split: split=1048577: offset "1048577": want utf8 or a byte offset from 1 to 1048576`},
		{"split malformed", `{"stream":true,"pi_split":"x"}`, "", bad, `pi_split: split=x`},
		{"status a boolean", `{"stream":true,"pi_status":true}`, "", bad, "pi_status: a boolean where a number is wanted"},
		{"multiline_data", `{"stream":true,"pi_multiline_data":65}`, "", above, "pi_multiline_data 65 in the JSON body; the limit is 64"},
		{"multiline_data, header", `{"stream":true}`, "multiline_data=100", above, "multiline_data=100 in the X-SSE-Latency header; the limit is 64"},
		{"multiline_data a boolean", `{"stream":true,"pi_multiline_data":true}`, "", bad, "pi_multiline_data: a boolean where a number is wanted"},
		{"bom a string", `{"stream":true,"pi_bom":"yes"}`, "", bad, "pi_bom: a string where a number or a boolean is wanted"},
	} {
		var header []string
		if tt.header != "" {
			header = append(header, api.HintHeader+": "+tt.header)
		}
		checkError(t, tt.name, exchange(t, srv, postRequest("/v1/chat/completions", tt.body, header...)), "400 Bad Request", tt.code, tt.want)
	}
}

// TestSplitEvent checks the cutting of an event into pieces.
func TestSplitEvent(t *testing.T) {
	ev := []byte("data: {\"x\":\"aé\"}\n\n")
	tests := []struct {
		f    api.Faults
		want []string
	}{
		{api.Faults{}, []string{string(ev)}},
		{api.Faults{Split: []int{}}, []string{string(ev)}},
		{api.Faults{Split: []int{6}}, []string{"data: ", "{\"x\":\"aé\"}\n\n"}},
		{api.Faults{Split: []int{api.SplitInChar}}, []string{"data: {\"x\":\"a\xc3", "\xa9\"}\n\n"}},
		{api.Faults{Split: []int{200, 6, 6, 0}}, []string{"data: ", "{\"x\":\"aé\"}\n\n"}},
		{api.Faults{Trickle: ptr(true)}, strings.Split(string(ev), "")},
	}
	for _, tt := range tests {
		var got []string
		for _, p := range splitEvent(ev, tt.f) {
			got = append(got, string(p))
		}
		if tt.f.Trickle != nil { // byte by byte: compare bytes
			if len(got) != len(ev) || !bytes.Equal([]byte(strings.Join(got, "")), ev) {
				t.Errorf("trickle: %d pieces, want %d of one byte", len(got), len(ev))
			}
			continue
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("splitEvent(%q, split %v) = %q, want %q", ev, tt.f.Split, got, tt.want)
		}
	}
	if got := appendPadded(nil, []byte("data: {\"a\":{}}\n\n"), 40); len(got) != 40 || string(got) != `data: {"a":{},"pi_pad":"ananhuhuobob"}`+"\n\n" {
		t.Errorf("appendPadded = %q (%d bytes), want the pad in the last object, 40 bytes", got, len(got))
	}
	if got := appendPadded(nil, []byte("data: {}\n\n"), 30); len(got) != 30 || string(got) != `data: {"pi_pad":"ananhuhuo"}`+"\n\n" {
		t.Errorf("appendPadded of an empty object = %q (%d bytes)", got, len(got))
	}
	if got := appendPadded(nil, []byte("data: [DONE]\n\n"), 100); string(got) != "data: [DONE]\n\n" {
		t.Errorf("appendPadded of an event without an object = %q, want it unchanged", got)
	}
}

func ptr[T any](v T) *T { return &v }
