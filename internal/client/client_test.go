package client

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/failures"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// scripted is a gateway that serves one canned response per connection,
// after the request's first bytes: the pieces in turn, each once the
// client has read the one before (piecemeal), so that they usually reach
// it in Reads of their own. Tests that count Reads use scriptedReads.
func scripted(t testing.TB, pieces ...string) string {
	t.Helper()
	return testutil.ServeTCP(t, func(c net.Conn) {
		c.Read(make([]byte, 4096))
		piecemeal(t, c, pieces...)
	})
}

// piecemeal writes pieces to c, each after the client has read the one
// before. The client's read is seen in the kernel's socket tables
// (testutil.Unread): it has returned every byte of the piece, though on a
// machine too busy to finish the read call before the next piece arrives
// both may come in one Read (and without the tables, on other systems, the
// pieces go out at once). Tests that count Reads use scriptedReads.
func piecemeal(t testing.TB, c net.Conn, ps ...string) {
	if err := testutil.Play(c, readInTurn(c, pieces(ps...))...); errors.Is(err, testutil.ErrNotReached) {
		t.Errorf("scripted gateway: %v", err)
	}
}

// pieces are steps that write ps, waiting for nothing.
func pieces(ps ...string) []testutil.Step {
	steps := make([]testutil.Step, len(ps))
	for i, p := range ps {
		steps[i] = testutil.Step{Write: p}
	}
	return steps
}

// readInTurn makes each step but the last that has no Until of its own
// wait until the client has read it (readBy), and returns steps.
func readInTurn(c net.Conn, steps []testutil.Step) []testutil.Step {
	for i := range steps {
		if steps[i].Until == nil && i < len(steps)-1 {
			steps[i].Until = readBy(c)
		}
	}
	return steps
}

// readBy reports whether the client has read every byte written on c (or
// is gone, or cannot be watched).
func readBy(c net.Conn) func() bool {
	return func() bool {
		n, err := testutil.Unread(c)
		return err != nil || n == 0
	}
}

// read is what scriptedReads writes for one Read of the client, and the
// number of content tokens the client has counted, all told, once it has
// read it (Options.Received); 0 for the last read.
type read struct {
	bytes  string
	tokens int64
}

// scriptedReads is scripted with one Read per read, exactly: each read is
// written once received, the client's Options.Received, has reached the
// count of the read before (which the client updates after the Read that
// completed those tokens returned).
func scriptedReads(t testing.TB, received *atomic.Int64, reads ...read) string {
	t.Helper()
	steps := make([]testutil.Step, len(reads))
	for i, r := range reads {
		steps[i] = testutil.Step{Write: r.bytes}
		if i < len(reads)-1 {
			if r.tokens <= 0 {
				t.Fatalf("read %d of %d counts no tokens: the next cannot wait for the client to read it", i, len(reads))
			}
			steps[i].Until = func() bool { return received.Load() >= r.tokens }
		}
	}
	return testutil.ServeTCP(t, func(c net.Conn) {
		c.Read(make([]byte, 4096))
		if err := testutil.Play(c, steps...); errors.Is(err, testutil.ErrNotReached) {
			t.Errorf("scripted gateway: %v", err)
		}
	})
}

// do sends the reference's chat request to addr.
func do(t *testing.T, addr string) *result.Request {
	t.Helper()
	return doWith(t, Options{Dialect: api.Chat, Addr: addr, Tokens: -1, Timeout: 10 * time.Second})
}

func doWith(t *testing.T, o Options) *result.Request {
	t.Helper()
	rec := &result.Request{Batch: "gw"}
	New(o).Do(context.Background(), rec)
	if rec.End < rec.Start || rec.Start == 0 {
		t.Errorf("Start=%d End=%d: the record's times are not filled", rec.Start, rec.End)
	}
	return rec
}

const sseHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n"

// Events exactly as the server writes them (the task's wire formats), built
// from a raw JSON string content (escapes allowed) and a pi_ts (0: none).

func piTs(ts int64) string {
	if ts == 0 {
		return ""
	}
	return fmt.Sprintf(`"pi_ts":%d,`, ts)
}

func chatTok(ts int64, raw string) string {
	return `data: {"id":"chatcmpl-sse-latency-1","object":"chat.completion.chunk","created":1,` + piTs(ts) +
		`"model":"sse-latency-1","choices":[{"index":0,"delta":{"content":"` + raw + `"},"finish_reason":null}]}` + "\n\n"
}

// event is the chat token event of the reference tests.
func event(ts int64, content string) string { return chatTok(ts, content) }

const (
	chatRole   = `data: {"id":"chatcmpl-sse-latency-1","object":"chat.completion.chunk","created":1,"pi_ts":5,"model":"sse-latency-1","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}` + "\n\n"
	chatFinish = `data: {"id":"chatcmpl-sse-latency-1","object":"chat.completion.chunk","created":1,"pi_ts":9,"model":"sse-latency-1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
	chatUsage  = `data: {"id":"chatcmpl-sse-latency-1","object":"chat.completion.chunk","created":1,"pi_ts":9,"model":"sse-latency-1","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}` + "\n\n"
	done       = "data: [DONE]\n\n"
)

func complTok(ts int64, raw string) string {
	return `data: {"id":"cmpl-sse-latency-1","object":"text_completion","created":1,` + piTs(ts) +
		`"model":"sse-latency-1","choices":[{"text":"` + raw + `","index":0,"logprobs":null,"finish_reason":null}]}` + "\n\n"
}

const (
	complFinish = `data: {"id":"cmpl-sse-latency-1","object":"text_completion","created":1,"pi_ts":9,"model":"sse-latency-1","choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"stop"}]}` + "\n\n"
	complUsage  = `data: {"id":"cmpl-sse-latency-1","object":"text_completion","created":1,"pi_ts":9,"model":"sse-latency-1","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}` + "\n\n"
)

func respEv(typ, rest string) string {
	return "event: " + typ + "\ndata: " + `{"type":"` + typ + `","sequence_number":1` + rest + "}\n\n"
}

func respTok(ts int64, raw string) string {
	s := respEv("response.output_text.delta", `,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"`+raw+`","logprobs":[]`)
	if ts != 0 {
		s = strings.Replace(s, "}\n\n", fmt.Sprintf(`,"pi_ts":%d}`, ts)+"\n\n", 1)
	}
	return s
}

var (
	respPre = []string{
		respEv("response.created", `,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[],"usage":null}`),
		respEv("response.in_progress", `,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[],"usage":null}`),
		respEv("response.output_item.added", `,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}`),
		respEv("response.content_part.added", `,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}`),
	}
	respFinish = respEv("response.output_text.done", `,"item_id":"msg_1","output_index":0,"content_index":0,"text":"ananhuhu","logprobs":[]`)
	respAfter  = []string{
		respEv("response.content_part.done", `,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"ananhuhu","annotations":[]}`),
		respEv("response.output_item.done", `,"output_index":0,"item":{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"ananhuhu","annotations":[]}]}`),
	}
	respCompleted = respEv("response.completed", `,"response":{"id":"resp_1","object":"response","status":"completed","output":[{"id":"msg_1","type":"message","content":[{"type":"output_text","text":"ananhuhu","annotations":[]}]}],"usage":{"input_tokens":5,"output_tokens":2,"total_tokens":7}}`)
)

func anthEv(typ, rest string) string {
	return "event: " + typ + "\ndata: " + `{"type":"` + typ + `"` + rest + "}\n\n"
}

func anthTok(ts int64, raw string) string {
	s := anthEv("content_block_delta", `,"index":0,"delta":{"type":"text_delta","text":"`+raw+`"}`)
	if ts != 0 {
		s = strings.Replace(s, "}\n\n", fmt.Sprintf(`,"pi_ts":%d}`, ts)+"\n\n", 1)
	}
	return s
}

var (
	anthPre = []string{
		anthEv("message_start", `,"message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"sse-latency-1","stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}`),
		anthEv("content_block_start", `,"index":0,"content_block":{"type":"text","text":""}`),
		anthEv("ping", ""),
	}
	anthBlockStop    = anthEv("content_block_stop", `,"index":0`)
	anthMessageDelta = anthEv("message_delta", `,"delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}`)
	anthMessageStop  = anthEv("message_stop", "")
)

// dialectStream builds the events of a stream in one dialect.
type dialectStream struct {
	d     api.Dialect
	pre   []string                          // before the first token
	tok   func(ts int64, raw string) string // one token event
	fin   []string                          // the finish event and what follows it up to the usage
	usage string                            // the usage event asked for ("" : in fin or term)
	term  string                            // the terminal event
}

var dialectStreams = []dialectStream{
	{api.Chat, []string{chatRole}, chatTok, []string{chatFinish}, chatUsage, done},
	{api.Completions, nil, complTok, []string{complFinish}, complUsage, done},
	{api.Responses, respPre, respTok, append([]string{respFinish}, respAfter...), "", respCompleted},
	{api.Anthropic, anthPre, anthTok, []string{anthBlockStop, anthMessageDelta}, "", anthMessageStop},
}

// events returns the events of a whole stream carrying the given token
// events, with the usage event when usage is set.
func (s dialectStream) events(usage bool, toks ...string) string {
	var b strings.Builder
	for _, e := range s.pre {
		b.WriteString(e)
	}
	for _, e := range toks {
		b.WriteString(e)
	}
	for _, e := range s.fin {
		b.WriteString(e)
	}
	if usage {
		b.WriteString(s.usage)
	}
	b.WriteString(s.term)
	return b.String()
}

// tokens returns the events of tokens 0..n-1, one per event, stamped
// 100, 200, ... (0: no pi_ts).
func (s dialectStream) tokens(n int, stamped bool) []string {
	var out []string
	for i := 0; i < n; i++ {
		var ts int64
		if stamped {
			ts = int64(100 * (i + 1))
		}
		out = append(out, s.tok(ts, api.Token(i)))
	}
	return out
}

func chunk(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }

// text returns the text of tokens from..to-1.
func text(from, to int) string {
	var b []byte
	for i := from; i < to; i++ {
		b = api.AppendToken(b, i)
	}
	return string(b)
}

// TestSplitEverywhere feeds the response parser the same chunked stream
// cut at every byte: every token must be found whatever the cut, and count
// in the Read that completed its event (the blank line after its data).
func TestSplitEverywhere(t *testing.T) {
	body := chunk(chatRole+event(100, "anan")) + chunk(event(200, "huhu")+event(300, "obob")) + chunk(chatFinish+done) + "0\r\n\r\n"
	full := sseHead + "Transfer-Encoding: chunked\r\n\r\n" + body
	var lineEnds []int // where the blank line after each token's data line ends
	for _, w := range []string{"anan", "huhu", "obob"} {
		i := strings.Index(full, `"content":"`+w)
		lineEnds = append(lineEnds, i+strings.Index(full[i:], "\n\n")+1)
	}
	for cut := 1; cut < len(full); cut++ {
		rec := &result.Request{Batch: "gw"}
		r := newReader(rec, &Options{Dialect: api.Chat, Tokens: -1})
		ended := r.feed([]byte(full[:cut]), 1)
		if !ended {
			ended = r.feed([]byte(full[cut:]), 2)
		}
		if !ended {
			rec.Failure = r.endOfStream(io.EOF)
		}
		r.close()
		if !rec.OK() || len(rec.Tokens) != 3 {
			t.Fatalf("cut at %d: %q with %d tokens, want ok with 3", cut, rec.Failure.Error(), len(rec.Tokens))
		}
		if rec.Tokens[1].Emitted != 200 || rec.Tokens[2].Emitted != 300 || rec.ByPiTs != 3 {
			t.Errorf("cut at %d: pi_ts %d, %d, %d by pi_ts; want 200, 300, 3", cut, rec.Tokens[1].Emitted, rec.Tokens[2].Emitted, rec.ByPiTs)
		}
		for i, tok := range rec.Tokens {
			want := int32(0)
			if lineEnds[i] >= cut {
				want = 1
			}
			if rec.TokenRead(i) != want || tok.Arrived != int64(want+1) {
				t.Errorf("cut at %d: token %d in read %d (arrived %d), want read %d: its event ends at byte %d", cut, i, rec.TokenRead(i), tok.Arrived, want, lineEnds[i])
			}
		}
	}
}

// TestTokensOfOneReadShareArrival: the arrival time is the Read's, so two
// tokens delivered by one Read share it and a later Read's token does not.
func TestTokensOfOneReadShareArrival(t *testing.T) {
	var received atomic.Int64
	addr := scriptedReads(t, &received,
		read{sseHead + "\r\n" + event(1, "anan") + event(2, "huhu"), 2}, read{event(3, "obob"), 3}, read{chatFinish + done, 0})
	rec := doWith(t, Options{Dialect: api.Chat, Addr: addr, Tokens: -1, Timeout: 10 * time.Second, Received: &received})
	if !rec.OK() || len(rec.Tokens) != 3 {
		t.Fatalf("%q with %d tokens, want ok with 3 (a raw, unchunked body)", rec.Failure.Error(), len(rec.Tokens))
	}
	a, b, c := rec.Tokens[0], rec.Tokens[1], rec.Tokens[2]
	ra, rb, rc := rec.TokenRead(0), rec.TokenRead(1), rec.TokenRead(2)
	if a.Arrived != b.Arrived || ra != rb {
		t.Errorf("tokens of one Read: arrived %d/%d read %d/%d, want equal", a.Arrived, b.Arrived, ra, rb)
	}
	if c.Arrived <= b.Arrived || rc == rb {
		t.Errorf("token of a later Read: arrived %d (read %d) vs %d (read %d), want later", c.Arrived, rc, b.Arrived, rb)
	}
	if rec.Reads != 3 || rec.Events != 5 || rec.MaxTokensPerRead != 2 {
		t.Errorf("reads %d, events %d, max tokens per read %d; want 3, 5, 2", rec.Reads, rec.Events, rec.MaxTokensPerRead)
	}
	if want := int64(len(sseHead + "\r\n" + event(1, "anan") + event(2, "huhu") + event(3, "obob") + chatFinish + done)); rec.Bytes != want {
		t.Errorf("bytes %d, want %d", rec.Bytes, want)
	}
}

func TestFailureTexts(t *testing.T) {
	tests := []struct {
		name   string
		pieces []string
		want   string
	}{
		{"closed before done", []string{sseHead + "\r\n" + event(1, "anan")}, "connection closed before [DONE]"},
		{"no tokens", []string{sseHead + "\r\n" + event(1, "") + chatFinish + done}, "no content tokens received"},
		{"status", []string{"HTTP/1.1 503 Service Unavailable For A Long Reason\r\nContent-Length: 0\r\n\r\n"}, "status HTTP/1.1 503 Service Unavailable"},
		{"short", []string{"HTTP/1.1 200 OK\r\nContent-"}, "short response"},
		{"empty", nil, "short response"},
		{"head too large", []string{"HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", 70<<10)}, "response headers too large"},
		{"bad chunk", []string{sseHead + "Transfer-Encoding: chunked\r\n\r\nzz\r\n"}, "malformed response: "},
		{"interim then ok", []string{"HTTP/1.1 100 Continue\r\n\r\n", sseHead + "\r\n" + event(1, "anan") + chatFinish + done}, "ok"},
		{"CRLF events", []string{sseHead + "\r\n" + strings.ReplaceAll(event(1, "anan")+chatFinish, "\n", "\r\n") + "data:[DONE]\r\n\r\n"}, "ok"},
		{"error event", []string{sseHead + "\r\n" + event(1, "anan") + `data: {"error":{"message":"upstream gone","type":"server_error"}}` + "\n\n"}, "stream error: error: server_error: upstream gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := do(t, scripted(t, tt.pieces...))
			got := rec.Failure.Error()
			if !strings.HasPrefix(got, tt.want) || (!strings.HasSuffix(tt.want, ": ") && got != tt.want) {
				t.Errorf("failure %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTimeoutAndInterrupt(t *testing.T) {
	addr := testutil.ServeTCP(t, func(c net.Conn) { io.Copy(io.Discard, c) }) // reads, never answers
	q := NewChatRequest(addr, -1, 200*time.Millisecond)
	rec := &result.Request{}
	q.Do(context.Background(), rec)
	if got := rec.Failure.Error(); got != "timeout after 200ms" {
		t.Errorf("silent gateway: %q, want timeout after 200ms", got)
	}
	q = NewChatRequest(addr, -1, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	rec = &result.Request{}
	q.Do(ctx, rec)
	if rec.Failure.Kind != result.Interrupted {
		t.Errorf("cancelled request: %q, want interrupted", rec.Failure.Error())
	}
}

func TestConnectFailure(t *testing.T) {
	rec := do(t, testutil.RefusedAddr(t))
	if got := rec.Failure.Error(); got != "connect(): Connection refused" {
		t.Errorf("closed port: %q, want connect(): Connection refused", got)
	}
	// The raw fact beside the reference's text: what the failure summary
	// groups by.
	if rec.Failure.Errno != syscall.ECONNREFUSED || failures.Of(rec) != failures.Refused {
		t.Errorf("closed port: errno %d (%v), kind %s; want ECONNREFUSED, connection_refused", int(rec.Failure.Errno), rec.Failure.Errno, failures.Of(rec))
	}
}

// gzipStream compresses events with a sync flush after each, the way a
// gateway that compresses SSE without holding it back would.
func gzipStream(t *testing.T, events ...string) []string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	var pieces []string
	for _, e := range events {
		zw.Write([]byte(e))
		zw.Flush()
		pieces = append(pieces, buf.String())
		buf.Reset()
	}
	zw.Close()
	pieces[len(pieces)-1] += buf.String()
	return pieces
}

func TestGzipBody(t *testing.T) {
	z := gzipStream(t, event(1, "anan"), event(2, "huhu")+event(3, "obob"), chatFinish+done)
	head := sseHead + "Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
	var received atomic.Int64
	addr := scriptedReads(t, &received, read{head + chunk(z[0]), 1}, read{chunk(z[1]), 3}, read{chunk(z[2]) + "0\r\n\r\n", 0})
	rec := doWith(t, Options{Dialect: api.Chat, Addr: addr, Tokens: -1, Timeout: 10 * time.Second, Received: &received})
	if !rec.OK() || len(rec.Tokens) != 3 || rec.Encoding != "gzip" {
		t.Fatalf("%q with %d tokens, encoding %q; want ok with 3 from a gzip-encoded stream", rec.Failure.Error(), len(rec.Tokens), rec.Encoding)
	}
	// Each piece was its own Read: the tokens decoded from the second one
	// share its arrival, later than the first's.
	if rec.Tokens[1].Arrived != rec.Tokens[2].Arrived || rec.Tokens[1].Arrived <= rec.Tokens[0].Arrived || rec.Reads != 3 {
		t.Errorf("arrivals %d, %d, %d in %d reads: want 3 reads, the 2nd and 3rd tokens' arrivals equal and after the 1st",
			rec.Tokens[0].Arrived, rec.Tokens[1].Arrived, rec.Tokens[2].Arrived, rec.Reads)
	}
}

func TestBadEncodings(t *testing.T) {
	tests := []struct{ head, body, want string }{
		{sseHead + "Content-Encoding: br\r\n\r\n", "xxxx", `malformed response: unsupported Content-Encoding "br"`},
		{sseHead + "Content-Encoding: gzip\r\n\r\n", "this is not gzip at all", "malformed response: gzip: gzip: invalid header"},
	}
	for _, tt := range tests {
		rec := do(t, scripted(t, tt.head+tt.body))
		if got := rec.Failure.Error(); got != tt.want {
			t.Errorf("%q: failure %q, want %q", tt.head, got, tt.want)
		}
	}
}

// request returns the raw request New(o) sends for gw request 3.
func request(o Options) string {
	q := New(o)
	return string(q.AppendHTTP(nil, q.ID("gw", 3)))
}

func TestRequestBytes(t *testing.T) {
	const std = "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"the reference's gateway request", Options{Addr: "127.0.0.1:8080", Tokens: -1},
			"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n" + std + "Content-Length: 99\r\nConnection: close\r\n\r\n" +
				`{"model":"sse-latency-1","stream":true,"messages":[{"role":"user","content":"Say 4-letter words"}]}`},
		{"chat with hints and usage", Options{Addr: "h:1", Tokens: 200, IDPrefix: "k2f9ab", IncludeUsage: true},
			"POST /v1/chat/completions HTTP/1.1\r\nHost: h:1\r\n" + std + "Content-Length: N\r\nConnection: close\r\n" +
				"X-SSE-Latency: id=k2f9ab-gw-3; tokens=200\r\n\r\n" +
				`{"model":"sse-latency-1","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Say 4-letter words [sse-latency id=k2f9ab-gw-3 tokens=200]"}],"pi_id":"k2f9ab-gw-3","pi_tokens":200}`},
		{"completions, other model, path and host", Options{Dialect: api.Completions, Addr: "h:1", Host: "gw.example", Path: "/openai/v1/completions", Model: `m"1`, Tokens: -1, IDPrefix: "r"},
			"POST /openai/v1/completions HTTP/1.1\r\nHost: gw.example\r\n" + std + "Content-Length: N\r\nConnection: close\r\n" +
				"X-SSE-Latency: id=r-gw-3\r\n\r\n" +
				`{"model":"m\"1","stream":true,"prompt":"Say 4-letter words [sse-latency id=r-gw-3]","pi_id":"r-gw-3"}`},
		{"responses", Options{Dialect: api.Responses, Addr: "h:1", Tokens: 5, IDPrefix: "r", IncludeUsage: true},
			"POST /v1/responses HTTP/1.1\r\nHost: h:1\r\n" + std + "Content-Length: N\r\nConnection: close\r\n" +
				"X-SSE-Latency: id=r-gw-3; tokens=5\r\n\r\n" +
				`{"model":"sse-latency-1","stream":true,"input":"Say 4-letter words [sse-latency id=r-gw-3 tokens=5]","pi_id":"r-gw-3","pi_tokens":5}`},
		{"keep-alive: no Connection field", Options{Addr: "127.0.0.1:8080", Tokens: -1, KeepAlive: true},
			"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n" + std + "Content-Length: 99\r\n\r\n" +
				`{"model":"sse-latency-1","stream":true,"messages":[{"role":"user","content":"Say 4-letter words"}]}`},
		{"chat with an API key", Options{Addr: "h:1", Tokens: -1, APIKey: "sk-123", ExtraHeaders: []string{"X-A: b"}},
			"POST /v1/chat/completions HTTP/1.1\r\nHost: h:1\r\n" + std + "Content-Length: N\r\nConnection: close\r\n" +
				"Authorization: Bearer sk-123\r\nX-A: b\r\n\r\n" +
				`{"model":"sse-latency-1","stream":true,"messages":[{"role":"user","content":"Say 4-letter words"}]}`},
		{"anthropic with an API key", Options{Dialect: api.Anthropic, Addr: "h:1", Tokens: -1, APIKey: "sk-ant"},
			"POST /v1/messages HTTP/1.1\r\nHost: h:1\r\n" + std + "Content-Length: N\r\nConnection: close\r\n" +
				"anthropic-version: 2023-06-01\r\nx-api-key: sk-ant\r\n\r\n" +
				`{"model":"sse-latency-1","stream":true,"max_tokens":4096,"messages":[{"role":"user","content":"Say 4-letter words"}]}`},
		{"extra headers replace Host, Content-Type and Accept", Options{Addr: "h:1", Tokens: -1,
			ExtraHeaders: []string{"host: gw.example", "Content-Type: application/json; charset=utf-8", "X-B: c", "ACCEPT: */*"}},
			"POST /v1/chat/completions HTTP/1.1\r\nHost: gw.example\r\nContent-Length: N\r\nConnection: close\r\n" +
				"Content-Type: application/json; charset=utf-8\r\nX-B: c\r\nACCEPT: */*\r\n\r\n" +
				`{"model":"sse-latency-1","stream":true,"messages":[{"role":"user","content":"Say 4-letter words"}]}`},
		{"Host beats an extra Host header", Options{Addr: "h:1", Host: "flag.example", Tokens: -1, ExtraHeaders: []string{"Host: hdr.example"}},
			"POST /v1/chat/completions HTTP/1.1\r\nHost: flag.example\r\n" + std + "Content-Length: 99\r\nConnection: close\r\n\r\n" +
				`{"model":"sse-latency-1","stream":true,"messages":[{"role":"user","content":"Say 4-letter words"}]}`},
		{"anthropic with an extra header", Options{Dialect: api.Anthropic, Addr: "h:1", Tokens: 5, IDPrefix: "r", ExtraHeaders: []string{"X-A: b"}},
			"POST /v1/messages HTTP/1.1\r\nHost: h:1\r\n" + std + "Content-Length: N\r\nConnection: close\r\n" +
				"X-SSE-Latency: id=r-gw-3; tokens=5\r\nanthropic-version: 2023-06-01\r\nX-A: b\r\n\r\n" +
				`{"model":"sse-latency-1","stream":true,"max_tokens":4096,"messages":[{"role":"user","content":"Say 4-letter words [sse-latency id=r-gw-3 tokens=5]"}],"pi_id":"r-gw-3","pi_tokens":5}`},
	}
	for _, tt := range tests {
		got := request(tt.o)
		if head, body, ok := strings.Cut(tt.want, "\r\n\r\n"); ok {
			tt.want = strings.Replace(head, "Content-Length: N", fmt.Sprintf("Content-Length: %d", len(body)), 1) + "\r\n\r\n" + body
		}
		if got != tt.want {
			t.Errorf("%s: request =\n%q\nwant\n%q", tt.name, got, tt.want)
		}
		head, body, _ := strings.Cut(got, "\r\n\r\n")
		if !strings.Contains(head+"\r\n", fmt.Sprintf("Content-Length: %d\r\n", len(body))) {
			t.Errorf("%s: Content-Length does not match the body's %d bytes", tt.name, len(body))
		}
	}
}

func TestExtraHeaders(t *testing.T) {
	raw := string(NewChatRequest("h:1", -1, time.Second, "Accept-Encoding: gzip", "X-A: b").AppendHTTP(nil, ""))
	if !strings.Contains(raw, "Connection: close\r\nAccept-Encoding: gzip\r\nX-A: b\r\n\r\n{") {
		t.Errorf("extra headers not sent after the reference's: %q", raw)
	}
}

func TestIDs(t *testing.T) {
	tests := []struct {
		prefix, batch string
		index         int
		want          string
	}{
		{"k2f9ab", "gw", 17, "k2f9ab-gw-17"},
		{"", "gw", 1, ""},
		{"bad prefix", "gw", 1, ""},
	}
	for _, tt := range tests {
		if got := New(Options{IDPrefix: tt.prefix}).ID(tt.batch, tt.index); got != tt.want {
			t.Errorf("ID(%q, %q, %d) = %q, want %q", tt.prefix, tt.batch, tt.index, got, tt.want)
		}
	}
}

// newRegistry returns a registry holding the emission times of request id:
// token k emitted at 1000+k.
func newRegistry(id string, n int) *emission.Registry {
	reg := emission.New()
	times := reg.Start(id, n)
	for k := 0; k < n; k++ {
		times.Set(k, int64(1000+k))
	}
	times.Finish()
	return reg
}

// correlate sends one chat request with id "t-gw-0" and a registry holding
// its emission times to a gateway that writes reads, and returns its
// record.
func correlate(t *testing.T, expect int, reads ...read) *result.Request {
	t.Helper()
	reg := newRegistry("t-gw-0", expect)
	var received atomic.Int64
	rec := doWith(t, Options{Addr: scriptedReads(t, &received, reads...), Tokens: expect, ExpectTokens: expect,
		Timeout: 10 * time.Second, Registry: reg, IDPrefix: "t", Received: &received})
	if rec.ID != "t-gw-0" {
		t.Errorf("request id %q, want t-gw-0", rec.ID)
	}
	if reg.Len() != 0 {
		t.Errorf("the registry still holds %d entries: the request did not take its own", reg.Len())
	}
	return rec
}

// checkTokens compares the tokens' indexes, reads and emission times.
func checkTokens(t *testing.T, rec *result.Request, reads []int32, emitted []int64) {
	t.Helper()
	if !rec.OK() || len(rec.Tokens) != len(reads) {
		t.Fatalf("%q with %d tokens, want ok with %d", rec.Failure.Error(), len(rec.Tokens), len(reads))
	}
	for i, tok := range rec.Tokens {
		if index, read := rec.TokenIndex(i), rec.TokenRead(i); int(index) != i || read != reads[i] || tok.Emitted != emitted[i] {
			t.Errorf("token %d: index %d, read %d, emitted %d; want index %d, read %d, emitted %d",
				i, index, read, tok.Emitted, i, reads[i], emitted[i])
		}
		if i > 0 && (rec.TokenRead(i) == rec.TokenRead(i-1)) != (tok.Arrived == rec.Tokens[i-1].Arrived) {
			t.Errorf("token %d: tokens of one read must share its arrival, of different reads not", i)
		}
	}
}

func TestContentCorrelation(t *testing.T) {
	head := sseHead + "\r\n" + chatRole
	t.Run("merged deltas arrive together", func(t *testing.T) {
		// Tokens 0-4 in one event, 5-6 in another (with a pi_ts that is not
		// theirs alone), then one token per event without pi_ts.
		rec := correlate(t, 9, read{head + chatTok(0, text(0, 5)), 5}, read{chatTok(777, text(5, 7)), 7},
			read{chatTok(0, text(7, 8)) + chatTok(0, text(8, 9)), 9}, read{chatFinish + done, 0})
		checkTokens(t, rec, []int32{0, 0, 0, 0, 0, 1, 1, 2, 2}, []int64{1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008})
		if rec.ByContent != 9 || rec.ByPiTs != 0 || rec.MaxTokensPerRead != 5 {
			t.Errorf("%d by content, %d by pi_ts, up to %d per read; want 9, 0, 5", rec.ByContent, rec.ByPiTs, rec.MaxTokensPerRead)
		}
	})
	t.Run("split deltas count when their last byte arrives", func(t *testing.T) {
		// Token 1 arrives as "hu" in read 0 and "hu" in read 1; token 2 as
		// "o" in read 1 and "bob" in read 2, with a pi_ts on each piece
		// (not usable).
		rec := correlate(t, 3, read{head + chatTok(0, "ananhu"), 1}, read{chatTok(0, "hu") + chatTok(50, "o"), 2},
			read{chatTok(51, "bob") + chatFinish + done, 0})
		checkTokens(t, rec, []int32{0, 1, 2}, []int64{1000, 1001, 1002})
		if rec.ByContent != 3 || rec.Events != 7 {
			t.Errorf("%d by content, %d events; want 3, 7", rec.ByContent, rec.Events)
		}
	})
	t.Run("pi_ts when each event carries one token", func(t *testing.T) {
		rec := correlate(t, 3, read{head + chatTok(100, "anan"), 1}, read{chatTok(200, "huhu") + chatTok(0, "obob"), 3}, read{chatFinish + done, 0})
		checkTokens(t, rec, []int32{0, 1, 1}, []int64{100, 200, 1002})
		if rec.ByPiTs != 2 || rec.ByContent != 1 {
			t.Errorf("%d by pi_ts, %d by content; want 2, 1", rec.ByPiTs, rec.ByContent)
		}
	})
	t.Run("escaped content", func(t *testing.T) {
		rec := correlate(t, 2, read{head + chatTok(0, `\u0061nan`), 1}, read{chatTok(300, `h\u0075h\u0075`), 2}, read{chatFinish + done, 0})
		checkTokens(t, rec, []int32{0, 1}, []int64{1000, 300})
	})
	t.Run("no registry entry leaves tokens unmeasured", func(t *testing.T) {
		rec := doWith(t, Options{Addr: scripted(t, head+chatTok(0, "ananhuhu")+chatFinish+done), ExpectTokens: 2,
			Timeout: 10 * time.Second, Registry: emission.New(), IDPrefix: "t"})
		checkTokens(t, rec, []int32{0, 0}, []int64{0, 0})
		if rec.ByContent != 0 || rec.ByPiTs != 0 {
			t.Errorf("%d by content, %d by pi_ts; want 0, 0", rec.ByContent, rec.ByPiTs)
		}
	})
}

// TestDialects runs each dialect's exact events, one token per event, with
// and without pi_ts, and with merged deltas.
func TestDialects(t *testing.T) {
	for _, s := range dialectStreams {
		t.Run(s.d.String(), func(t *testing.T) {
			stream := s.events(true, s.tokens(3, true)...)
			rec := doWith(t, Options{Dialect: s.d, Addr: scripted(t, sseHead+"Transfer-Encoding: chunked\r\n\r\n"+chunk(stream)+"0\r\n\r\n"),
				Tokens: 3, ExpectTokens: 3, IncludeUsage: true, Timeout: 10 * time.Second})
			checkTokens(t, rec, []int32{0, 0, 0}, []int64{100, 200, 300})
			if rec.ByPiTs != 3 {
				t.Errorf("%d tokens by pi_ts, want 3", rec.ByPiTs)
			}

			reg := newRegistry("t-gw-0", 3)
			stream = s.events(true, s.tok(0, text(0, 2)), s.tok(9, "ob"), s.tok(9, "ob"))
			rec = doWith(t, Options{Dialect: s.d, Addr: scripted(t, sseHead+"\r\n"+stream), ExpectTokens: 3, IncludeUsage: true,
				Timeout: 10 * time.Second, Registry: reg, IDPrefix: "t"})
			checkTokens(t, rec, []int32{0, 0, 0}, []int64{1000, 1001, 1002})
		})
	}
}

func TestIntegrity(t *testing.T) {
	chat := dialectStreams[0]
	toks := func(idx ...int) []string {
		var out []string
		for _, i := range idx {
			out = append(out, chatTok(0, api.Token(i)))
		}
		return out
	}
	seq := func(from, to int) []int {
		var out []int
		for i := from; i < to; i++ {
			out = append(out, i)
		}
		return out
	}
	cat := func(parts ...[]int) []int {
		var out []int
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tok40 := api.Token(40)
	tests := []struct {
		name   string
		expect int
		usage  bool // ask for usage
		stream string
		want   string
	}{
		{"intact", 30, false, chat.events(false, toks(seq(0, 30)...)...), "ok"},
		{"missing tokens", 30, false, chat.events(false, toks(cat(seq(0, 17), seq(20, 30))...)...), "integrity: 3 tokens missing (first: token 17)"},
		{"one missing", 30, false, chat.events(false, toks(cat(seq(0, 17), seq(18, 30))...)...), "integrity: 1 token missing (first: token 17)"},
		{"27 missing (the text repeats every 26 tokens)", 60, false, chat.events(false, toks(cat(seq(0, 10), seq(37, 60))...)...), "integrity: 27 tokens missing (first: token 10)"},
		{"missing at the end", 30, false, chat.events(false, toks(seq(0, 27)...)...), "integrity: 3 tokens missing (first: token 27)"},
		{"last token cut short", 3, false, chat.events(false, chatTok(0, text(0, 2)+"ob")), "integrity: 1 token missing (first: token 2)"},
		{"duplicated", 10, false, chat.events(false, toks(cat(seq(0, 6), []int{5}, seq(6, 10))...)...), "integrity: token 5 duplicated"},
		{"out of order", 20, false, chat.events(false, toks(cat(seq(0, 12), []int{13, 12}, seq(14, 20))...)...), "integrity: tokens out of order from token 12"},
		{"corrupted", 50, false, chat.events(false, chatTok(0, text(0, 40)), chatTok(0, tok40[:2]), chatTok(0, "X"+tok40[3:]+text(41, 50))),
			`integrity: corrupted content at token 40 ("` + tok40[:2] + "X" + tok40[3:] + `")`},
		{"no finish", 3, false, chatRole + strings.Join(toks(0, 1, 2), "") + done, "integrity: no finish event"},
		{"no usage although asked", 3, true, chat.events(false, toks(0, 1, 2)...), "integrity: no usage although it was asked for"},
		{"usage when asked", 3, true, chat.events(true, toks(0, 1, 2)...), "ok"},
		{"extra content", 200, false, chat.events(false, chatTok(0, text(0, 200)+"abcdefghijkl")), "integrity: 12 bytes of unexpected content after token 199"},
		{"extra token", 3, false, chat.events(false, toks(0, 1, 2, 3)...), "integrity: 4 bytes of unexpected content after token 2"},
		{"unknown length, intact", 0, false, chat.events(false, toks(seq(0, 30)...)...), "ok"},
		{"unknown length, corrupted", 0, false, chat.events(false, chatTok(0, "anan!!!!")), `integrity: corrupted content at token 1 ("!!!!")`},
		{"nothing but garbage", 3, false, chat.events(false, chatTok(0, "hello world")), `integrity: corrupted content at token 0 ("hell")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := doWith(t, Options{Addr: scripted(t, sseHead+"\r\n"+tt.stream), ExpectTokens: tt.expect, IncludeUsage: tt.usage, Timeout: 10 * time.Second})
			if got := rec.Failure.Error(); got != tt.want {
				t.Errorf("failure %q, want %q", got, tt.want)
			}
		})
	}
}

// TestDialectEnds checks, per dialect, the terminal, finish and usage
// events and the failed ends.
func TestDialectEnds(t *testing.T) {
	for _, s := range dialectStreams {
		toks := s.tokens(2, true)
		var before strings.Builder // everything up to the terminal event
		for _, e := range s.pre {
			before.WriteString(e)
		}
		before.WriteString(strings.Join(toks, ""))
		for _, e := range s.fin {
			before.WriteString(e)
		}
		before.WriteString(s.usage)
		closed := "connection closed before [DONE]"
		switch s.d {
		case api.Responses:
			closed = "connection closed before response.completed"
		case api.Anthropic:
			closed = "connection closed before message_stop"
		}
		finish := s.fin[0]
		if s.d == api.Anthropic {
			finish = anthMessageDelta // it carries the usage too: "no finish" is checked first
		}
		noFinish := strings.Replace(s.events(true, toks...), finish, "", 1)
		noUsage := s.events(false, toks...)
		switch s.d {
		case api.Responses:
			noUsage = strings.Replace(noUsage, `,"usage":{"input_tokens":5,"output_tokens":2,"total_tokens":7}`, "", 1)
		case api.Anthropic:
			noUsage = strings.Replace(noUsage, `,"usage":{"output_tokens":2}`, "", 1)
		}
		tests := []struct {
			name, stream, want string
		}{
			{"whole", s.events(true, toks...), "ok"},
			{"no terminal event", before.String(), closed},
			{"no finish event", noFinish, "integrity: no finish event"},
			{"no usage", noUsage, "integrity: no usage although it was asked for"},
		}
		switch s.d {
		case api.Responses:
			tests = append(tests,
				struct{ name, stream, want string }{"failed", strings.Join(respPre, "") + toks[0] +
					respEv("response.failed", `,"response":{"status":"failed","error":{"code":"server_error","message":"boom"}}`), "stream error: response.failed: boom"},
				struct{ name, stream, want string }{"incomplete", strings.Join(respPre, "") + toks[0] +
					respEv("response.incomplete", `,"response":{"status":"incomplete"}`), "stream error: response.incomplete"},
				struct{ name, stream, want string }{"error", strings.Join(respPre, "") + toks[0] +
					respEv("error", `,"code":"rate_limit","message":"slow down"`), "stream error: error: slow down"})
		case api.Anthropic:
			tests = append(tests, struct{ name, stream, want string }{"error", strings.Join(anthPre, "") + toks[0] +
				anthEv("error", `,"error":{"type":"overloaded_error","message":"Overloaded"}`), "stream error: error: overloaded_error: Overloaded"})
		}
		for _, tt := range tests {
			t.Run(s.d.String()+"/"+tt.name, func(t *testing.T) {
				rec := doWith(t, Options{Dialect: s.d, Addr: scripted(t, sseHead+"\r\n"+tt.stream), ExpectTokens: 2, IncludeUsage: true, Timeout: 10 * time.Second})
				if got := rec.Failure.Error(); got != tt.want {
					t.Errorf("failure %q, want %q", got, tt.want)
				}
			})
		}
	}
}

// TestReserialised feeds events the way a gateway that re-serialises
// chunks may write them: other field order, spaces, escapes, no pi_ts, no
// "event:" lines.
func TestReserialised(t *testing.T) {
	tests := []struct {
		d      api.Dialect
		stream string
	}{
		{api.Chat, `data:{ "choices" : [ { "finish_reason" : null , "delta" : { "content" : "\u0061nan" } } ] , "id" : "x" }` + "\n\n" +
			`data: {"choices":[{"delta":{"content":"huhu","role":null},"finish_reason":null,"logprobs":{"content":[]}}],"usage":null}` + "\n\n" +
			`data: {"choices":[{"delta":{"content":null},"finish_reason":"stop"}],"usage":null}` + "\n\n" +
			`data: {"choices":[],"usage":{"completion_tokens":2}}` + "\n\n" + "data: [DONE]\n\n"},
		{api.Completions, `data: {"choices":[{"index":0,"logprobs":null,"text":"ananhuhu"}]}` + "\n\n" +
			`data: {"choices":[{"finish_reason":"length","text":""}],"usage":{"completion_tokens":2}}` + "\n\n" + "data: [DONE]\n\n"},
		{api.Responses, `data: {"content_index":0,"delta":"an","item_id":"m","output_index":0,"sequence_number":4,"type":"response.output_text.delta"}` + "\n\n" +
			`data: {"delta":"anhuhu","type":"response.output_text.delta"}` + "\n\n" +
			`data: {"text":"ananhuhu","type":"response.output_text.done"}` + "\n\n" +
			`data: {"response":{"output":[{"content":[{"text":"ananhuhu","type":"output_text"}],"type":"message"}],"usage":{"output_tokens":2}},"type":"response.completed"}` + "\n\n"},
		{api.Anthropic, "event: content_block_delta\n" + `data: {"delta":{"text":"anan","type":"text_delta"},"index":0}` + "\n\n" +
			`data: {"delta":{"text":"huhu","type":"text_delta"},"index":0,"type":"content_block_delta"}` + "\n\n" +
			`data: {"delta":{"stop_reason":"end_turn"},"type":"message_delta","usage":{"output_tokens":2}}` + "\n\n" +
			`data: {"type":"message_stop"}` + "\n\n"},
	}
	for _, tt := range tests {
		rec := doWith(t, Options{Dialect: tt.d, Addr: scripted(t, sseHead+"\r\n"+tt.stream), ExpectTokens: 2, IncludeUsage: true, Timeout: 10 * time.Second})
		if !rec.OK() || len(rec.Tokens) != 2 || rec.TokenIndex(1) != 1 {
			t.Errorf("%s: %q with %d tokens, want ok with tokens 0 and 1", tt.d, rec.Failure.Error(), len(rec.Tokens))
		}
	}
}

// TestRequestLargerThanTheSocket: a request too large for one write (a
// 16 MB model name: more than loopback's socket buffers take at once) goes
// out whole, in several writes, and the response is read after it. Its -w
// is a minute, not hostileOptions' 10 s: under -race, encoding and copying
// 16 MB takes seconds, more than ten on a busy machine, and the test is
// about the request arriving whole, not how fast.
func TestRequestLargerThanTheSocket(t *testing.T) {
	chat := dialectStreams[0]
	okStream := chat.events(false, chat.tokens(3, true)...)
	model := strings.Repeat("m", 16<<20)
	want := request(Options{Addr: "127.0.0.1:1", Tokens: -1, Model: model})
	_, wantBody, _ := strings.Cut(want, "\r\n\r\n")
	got := make(chan string, 1)
	addr := testutil.ServeTCP(t, func(c net.Conn) {
		req, _, ok := readRequest(c, nil)
		got <- req
		if ok {
			send(t, sseHead+"\r\n"+okStream)(c)
		}
	})
	o := hostileOptions(addr)
	o.Model, o.Timeout = model, time.Minute
	rec := &result.Request{Batch: "gw"}
	New(o).Do(context.Background(), rec)
	if rec.Failure.Kind != result.OK || len(rec.Tokens) != 3 {
		t.Errorf("failure %q, %d tokens; want ok with 3", rec.Failure.Error(), len(rec.Tokens))
	}
	req := <-got
	_, body, _ := strings.Cut(req, "\r\n\r\n")
	if body != wantBody {
		t.Errorf("the gateway received a body of %d bytes, want the request's %d", len(body), len(wantBody))
	}
}

// TestSentHead: the head a report records is the one on the wire, secrets
// redacted: HTTP/1.1, the WebSocket upgrade, HTTP/2's fields.
func TestSentHead(t *testing.T) {
	base := Options{Addr: "h:1", Tokens: 5, IDPrefix: "r", APIKey: "sk-123", ExtraHeaders: []string{"X-Team: a", "X-Api-Key: k2", "Host: gw.example"}}
	h1 := New(base).SentHead("r-gw-0")
	want := []string{"Host: gw.example", "Content-Type: application/json", "Accept: text/event-stream", "Content-Length: 163", "Connection: close",
		"X-SSE-Latency: id=r-gw-0; tokens=5", "Authorization: Bearer REDACTED", "X-Team: a", "X-Api-Key: REDACTED"}
	if h1.Proto != ProtoHTTP1 || h1.Method != "POST" || h1.Path != "/v1/chat/completions" || !slices.Equal(h1.Headers, want) {
		t.Errorf("HTTP/1.1 head %+v, want headers %q", h1, want)
	}
	ws := base
	ws.Dialect, ws.WebSocket = api.Responses, true
	s := New(ws).SentHead("")
	if s.Proto != "websocket" || s.Method != "GET" || !slices.Contains(s.Headers, "Upgrade: websocket") || !slices.Contains(s.Headers, "X-Team: a") ||
		!slices.Contains(s.Headers, "Authorization: Bearer REDACTED") {
		t.Errorf("WebSocket head %+v", s)
	}
	h2 := base
	h2.H2C = true
	s = New(h2).SentHead("r-gw-0")
	if s.Proto != ProtoH2C || s.Headers[0] != ":authority: gw.example" || !slices.Contains(s.Headers, "x-team: a") ||
		!slices.Contains(s.Headers, "authorization: Bearer REDACTED") || slices.Contains(s.Headers, "Connection: close") {
		t.Errorf("h2c head %+v", s)
	}
}
