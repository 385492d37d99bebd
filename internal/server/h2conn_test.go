package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/evloop"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// TestH2TokensWrittenByShard checks that the tokens of HTTP/2 streams,
// h2c and h2 over TLS 1.3, are written by their shard, like HTTP/1.1's:
// none is handed to a goroutine.
func TestH2TokensWrittenByShard(t *testing.T) { forEngines(t, testH2TokensWrittenByShard) }

func testH2TokensWrittenByShard(t *testing.T, e evloop.Engine) {
	for _, overTLS := range []bool{false, true} {
		name := map[bool]string{true: "h2", false: "h2c"}[overTLS]
		t.Run(name, func(t *testing.T) {
			h := newH2Setup(t, overTLS, Config{Tokens: 5, DelayMs: 0.1, Engine: e})
			const n = 20
			for i, d := range []api.Dialect{api.Chat, api.Responses} {
				_, b := h.post(t, d.Path(), fmt.Sprintf(`{"stream":true,"pi_tokens":%d,"pi_delay_ms":0.5}`, n))
				checkEvents(t, fmt.Sprint(name, " stream ", i), parseEvents(t, splitEvents(t, b)), wantEvents(d, n, false, `"sse-latency-1"`))
			}
			if got := h.srv.TokenHandoffs(); got != 0 {
				t.Errorf("%s: TokenHandoffs() = %d, want 0 (every token written by its shard)", name, got)
			}
			if got := h.srv.Lateness().N(); got != 2*n {
				t.Errorf("%s: Lateness().N() = %d, want one sample per token (%d)", name, got, 2*n)
			}
			if overTLS {
				if got := h.srv.TLSFallbacks(); got != 0 {
					t.Errorf("TLSFallbacks() = %d, want 0", got)
				}
			}
			if p := h.srv.Panics(); p != 0 {
				t.Errorf("Panics() = %d", p)
			}
		})
	}
}

// h2Raw is an HTTP/2 client driven frame by frame, in clear text.
type h2Raw struct {
	t   *testing.T
	c   net.Conn
	fr  *http2.Framer
	hb  bytes.Buffer
	enc *hpack.Encoder
}

// dialH2Raw opens an h2c connection to srv and sends the preface and a
// SETTINGS frame with settings.
func dialH2Raw(t *testing.T, srv *Server, settings ...http2.Setting) *h2Raw {
	t.Helper()
	c, _ := dialRaw(t, srv)
	h := &h2Raw{t: t, c: c, fr: http2.NewFramer(c, c)}
	h.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	h.enc = hpack.NewEncoder(&h.hb)
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if err := h.fr.WriteSettings(settings...); err != nil {
		t.Fatal(err)
	}
	return h
}

// post opens stream id with a POST of body to path.
func (h *h2Raw) post(id uint32, path, body string) {
	h.t.Helper()
	h.hb.Reset()
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", "x"}, {":path", path},
		{"content-type", "application/json"}, {"content-length", strconv.Itoa(len(body))}} {
		h.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: h.hb.Bytes(), EndHeaders: true}); err != nil {
		h.t.Fatal(err)
	}
	if err := h.fr.WriteData(id, true, []byte(body)); err != nil {
		h.t.Fatal(err)
	}
}

// next returns the next frame other than SETTINGS and PING, which it
// answers.
func (h *h2Raw) next() http2.Frame {
	h.t.Helper()
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			h.t.Fatalf("reading frames: %v", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				h.fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				h.fr.WritePing(true, f.Data)
			}
		default:
			return f
		}
	}
}

// TestH2FlowControl checks the server's send windows: a client that
// gives none for Config.WriteTimeout gets its stream dropped with a named
// failure and reset, the connection staying open; one that gives them
// little by little (windows smaller than an event: frames cut to fit),
// or at once by a new SETTINGS_INITIAL_WINDOW_SIZE, gets every event.
func TestH2FlowControl(t *testing.T) {
	const n = 20
	body := fmt.Sprintf(`{"stream":true,"pi_tokens":%d,"pi_delay_ms":0.2}`, n)
	tests := []struct {
		name    string
		window  uint32 // the client's SETTINGS_INITIAL_WINDOW_SIZE
		credit  bool   // a WINDOW_UPDATE for each DATA frame read
		settle  bool   // a SETTINGS frame opening the window after the HEADERS
		stalled bool
	}{
		{name: "no WINDOW_UPDATE", window: 300, stalled: true},
		{name: "WINDOW_UPDATE per frame", window: 100, credit: true},
		{name: "window opened by SETTINGS", window: 0, settle: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var lines []string
			srv := startServer(t, Config{Tokens: 5, DelayMs: 0.1, HTTP2: true, WriteTimeout: 300 * time.Millisecond,
				Logf: func(f string, a ...any) { mu.Lock(); lines = append(lines, fmt.Sprintf(f, a...)); mu.Unlock() }})
			h := dialH2Raw(t, srv, http2.Setting{ID: http2.SettingInitialWindowSize, Val: tt.window})
			h.post(1, "/v1/chat/completions", body)
			var data []byte
			var reset bool
		read:
			for {
				switch f := h.next().(type) {
				case *http2.MetaHeadersFrame:
					if tt.settle {
						h.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
					}
				case *http2.DataFrame:
					data = append(data, f.Data()...)
					if l := f.Length; tt.credit && l > 0 {
						h.fr.WriteWindowUpdate(0, l)
						h.fr.WriteWindowUpdate(1, l)
					}
					if f.StreamEnded() {
						break read
					}
				case *http2.RSTStreamFrame:
					reset = true
					break read
				case *http2.GoAwayFrame:
					t.Fatalf("GOAWAY %v", f.ErrCode)
				}
			}
			if tt.stalled {
				if !reset {
					t.Fatalf("the stream of a client giving no window ended, want a reset")
				}
				testutil.Await(t, "the stream's place among the active ones", func() bool { return srv.ActiveStreams() == 0 })
				mu.Lock()
				log := strings.Join(lines, "\n")
				mu.Unlock()
				if !strings.Contains(log, errH2Stalled.Error()) {
					t.Errorf("the debug lines do not name the stall (%q):\n%s", errH2Stalled, log)
				}
				// The connection goes on: a window for the next stream.
				h.fr.WriteWindowUpdate(0, 1<<20)
				h.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
				h.post(3, "/v1/models", "")
				for {
					if f, ok := h.next().(*http2.DataFrame); ok && f.StreamID == 3 && f.StreamEnded() {
						break
					}
				}
				return
			}
			if reset {
				t.Fatalf("stream reset, want every event:\n%s", strings.Join(lines, "\n"))
			}
			checkEvents(t, tt.name, parseEvents(t, splitEvents(t, string(data))), wantEvents(api.Chat, n, false, `"sse-latency-1"`))
		})
	}
}

// TestH2ResetMidStream: a client that resets a stream mid-way frees its
// place (the shard drops it at its next token, and records the client as
// gone), and its connection carries the next stream whole.
func TestH2ResetMidStream(t *testing.T) {
	reg := emission.New()
	srv := startServer(t, Config{Tokens: 5, DelayMs: 0.1, HTTP2: true, Emissions: reg})
	h := dialH2Raw(t, srv)
	h.post(1, "/v1/chat/completions", `{"stream":true,"pi_tokens":100000,"pi_delay_ms":1,"pi_id":"rst"}`)
	for frames := 0; frames < 4; {
		if f, ok := h.next().(*http2.DataFrame); ok && f.StreamID == 1 {
			frames++
		}
	}
	if err := h.fr.WriteRSTStream(1, http2.ErrCodeCancel); err != nil {
		t.Fatal(err)
	}
	testutil.Await(t, "the reset stream's place among the active ones", func() bool { return srv.ActiveStreams() == 0 })
	if e := reg.Lookup("rst"); e == nil || e.GoneAt() == 0 {
		t.Errorf("registry entry %v, want the client recorded as gone", e)
	}
	const n = 6
	h.post(3, "/v1/chat/completions", fmt.Sprintf(`{"stream":true,"pi_tokens":%d,"pi_delay_ms":0.2}`, n))
	var data []byte
	for {
		f := h.next()
		if d, ok := f.(*http2.DataFrame); ok && d.StreamID == 3 {
			data = append(data, d.Data()...)
			if d.StreamEnded() {
				break
			}
		}
		if r, ok := f.(*http2.RSTStreamFrame); ok && r.StreamID == 3 {
			t.Fatalf("stream 3 reset: %v", r.ErrCode)
		}
	}
	checkEvents(t, "the stream after the reset", parseEvents(t, splitEvents(t, string(data))), wantEvents(api.Chat, n, false, `"sse-latency-1"`))
	if p := srv.Panics(); p != 0 {
		t.Errorf("Panics() = %d", p)
	}
}

// TestOpenAISDKOverH2 streams a chat completion with the official OpenAI
// SDK over HTTP/2, h2c and h2 over TLS.
func TestOpenAISDKOverH2(t *testing.T) {
	for _, overTLS := range []bool{false, true} {
		name := map[bool]string{true: "h2", false: "h2c"}[overTLS]
		t.Run(name, func(t *testing.T) {
			h := newH2Setup(t, overTLS, Config{Tokens: sdkTokens, DelayMs: 0.1})
			var proto string
			hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				resp, err := h.client.Transport.RoundTrip(r)
				if err == nil {
					proto = resp.Proto
				}
				return resp, err
			})}
			client := openai.NewClient(option.WithBaseURL(h.base+"/v1/"), option.WithAPIKey("sk-test"),
				option.WithMaxRetries(0), option.WithHTTPClient(hc))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			params := chatStreamParams(api.ChatPrompt)
			stream := client.Chat.Completions.NewStreaming(ctx, params)
			var acc openai.ChatCompletionAccumulator
			for stream.Next() {
				acc.AddChunk(stream.Current())
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("chat stream over %s: %v", name, err)
			}
			if proto != "HTTP/2.0" {
				t.Errorf("answered over %q, want HTTP/2.0", proto)
			}
			if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != allText(sdkTokens) || acc.Choices[0].FinishReason != "stop" {
				t.Errorf("accumulated %+v, want content %q and finish_reason stop", acc.Choices, allText(sdkTokens))
			}
			checkUsage(t, name+" chat stream", acc.Usage.PromptTokens, acc.Usage.CompletionTokens, acc.Usage.TotalTokens)
		})
	}
}

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// FuzzH2Conn feeds bytes after the client preface to an HTTP/2
// connection of a running server, over loopback: whatever they are, the
// connection ends (its reader returns) once the client has sent them and
// closed its side, no panic. The seeds are a whole request, settings,
// window updates, pings, a reset, the hostile suite's frames, and the
// flow-control and header-block errors of TestH2StreamFlowErrors,
// TestH2ConnectionErrors and TestH2HeaderBlockTimeout.
func FuzzH2Conn(f *testing.F) {
	settings := frame(http2.FrameSettings, 0, 0, nil)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	body := `{"stream":true,"pi_tokens":3,"pi_delay_ms":0.1}`
	for _, kv := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", "x"}, {":path", "/v1/chat/completions"},
		{"content-length", strconv.Itoa(len(body))}} {
		enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
	}
	headers := frame(http2.FrameHeaders, http2.Flags(http2.FlagHeadersEndHeaders), 1, hb.Bytes())
	request := headers + frame(http2.FrameData, http2.Flags(http2.FlagDataEndStream), 1, []byte(body))
	window := func(id, inc uint32) string {
		return frame(http2.FrameWindowUpdate, 0, id, []byte{byte(inc >> 24), byte(inc >> 16), byte(inc >> 8), byte(inc)})
	}
	small := frame(http2.FrameSettings, 0, 0, []byte{0, 4, 0, 0, 0, 10}) // INITIAL_WINDOW_SIZE 10
	for _, seed := range []string{
		"",
		settings,
		settings + request,
		small + request,
		small + request + window(1, 1000) + window(0, 1000),
		settings + request + frame(http2.FrameRSTStream, 0, 1, []byte{0, 0, 0, 8}),
		settings + frame(http2.FramePing, 0, 0, make([]byte, 8)) + request,
		settings + headers + strings.Repeat(frame(http2.FrameContinuation, 0, 1, nil), 100),
		settings + frame(http2.FrameHeaders, 0x1, 1, []byte{0x82}) + strings.Repeat(frame(http2.FrameContinuation, 0, 1, bytes.Repeat([]byte{0}, 1000)), 20),
		settings + frame(http2.FrameData, 0, 1, nil)[:3] + "\xff\xff\xff\x00\x00\x00\x00\x01",
		settings + window(0, 1<<31-1) + window(0, 1<<31-1),
		settings + request + frame(http2.FrameGoAway, 0, 0, make([]byte, 8)),
		// Flow-control and header-block errors (RFC 9113 §6.9): a stream's
		// send window past 2^31-1, by WINDOW_UPDATE or SETTINGS; zero
		// increments; header blocks left unfinished.
		settings + request + window(1, 1<<31-1),
		settings + request + window(1, 1<<31-1-65_535) + frame(http2.FrameSettings, 0, 0, []byte{0, 4, 0x7f, 0xff, 0xff, 0xff}),
		settings + request + window(1, 0) + window(0, 0),
		settings + request + frame(http2.FrameHeaders, 0, 3, []byte{0x82}),
		settings + request + frame(http2.FrameHeaders, 0, 3, []byte{0x82}) + frame(http2.FrameContinuation, 0, 3, []byte{0x84}),
		settings + request + frame(http2.FrameHeaders, 0, 3, nil)[:5],
		settings + frame(http2.FramePing, http2.Flags(http2.FlagPingAck), 0, h2DrainPing[:]) + request,
	} {
		f.Add([]byte(seed))
	}
	srv := New(testutil.Listen(f), Config{Tokens: 3, DelayMs: 0.1, HTTP2: true, WriteTimeout: time.Second, ReadHeaderTimeout: 5 * time.Second})
	testutil.Serve(f, srv)
	ln := testutil.Listen(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 1<<20 {
			return
		}
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		sc, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { defer close(done); newH2conn(srv, sc, sc).serve() }()
		go io.Copy(io.Discard, c)
		c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write(append([]byte(http2.ClientPreface), in...)); err == nil {
			c.(*net.TCPConn).CloseWrite()
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("the connection did not end 10 s after its client closed its side")
		}
		if p := srv.Panics(); p != 0 {
			t.Fatalf("Panics() = %d", p)
		}
	})
}

// TestH2WriteTLS12 checks h2 over TLS 1.2, left to crypto/tls: no file
// descriptor, every token written by the stream's goroutine (handed off).
func TestH2WriteTLS12(t *testing.T) {
	tlsCfg, roots, _ := selfSigned(t)
	tlsCfg.MaxVersion = tls.VersionTLS12
	srv := startServer(t, Config{Tokens: 5, DelayMs: 0.1, TLS: tlsCfg, HTTP2: true})
	client, _ := h2Client(t, roots)
	const n = 10
	resp, err := client.Post("https://"+srv.Addr().String()+"/v1/chat/completions", "application/json",
		strings.NewReader(fmt.Sprintf(`{"stream":true,"pi_tokens":%d,"pi_delay_ms":20}`, n)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.ProtoMajor != 2 || resp.TLS.Version != tls.VersionTLS12 {
		t.Fatalf("%s TLS %x: %v", resp.Proto, resp.TLS.Version, err)
	}
	checkEvents(t, "h2 over TLS 1.2", parseEvents(t, splitEvents(t, string(b))), wantEvents(api.Chat, n, false, `"sse-latency-1"`))
	if got := srv.TokenHandoffs(); got == 0 {
		t.Error("TokenHandoffs() = 0, want the tokens handed to the stream's goroutine")
	}
}

// TestH2ShutdownGoAway: when Serve stops, an HTTP/2 connection with a
// stream in progress gets a GOAWAY without error naming that stream and a
// PING; once the client has answered the PING, the stream is reset
// (CANCEL: no longer needed, not a failure of the server) and the
// connection ends, and Serve returns.
func TestH2ShutdownGoAway(t *testing.T) {
	srv, stop := runServer(t, Config{Tokens: 5, DelayMs: 0.1, HTTP2: true, h2DrainWait: time.Minute})
	h := dialH2Raw(t, srv)
	h.post(1, "/v1/chat/completions", `{"stream":true,"pi_think_ms":60000}`)
	for { // the stream's HEADERS (after the server's WINDOW_UPDATE)
		if _, ok := h.next().(*http2.MetaHeadersFrame); ok {
			break
		}
	}
	stopped := make(chan struct{})
	go func() { defer close(stopped); stop("with an HTTP/2 stream waiting for its think time") }()
	ping := h.stopping(t)
	h.fr.WritePing(true, ping.Data)
	var reset *http2.RSTStreamFrame
	h.untilEnd(t, "after the PING's answer", func(f http2.Frame) {
		if r, ok := f.(*http2.RSTStreamFrame); ok && r.StreamID == 1 {
			reset = r
		}
	})
	if reset == nil || reset.ErrCode != http2.ErrCodeCancel {
		t.Errorf("the connection ended with stream 1, in progress, reset %v; want RST_STREAM CANCEL", reset)
	}
	<-stopped
}

// stopping reads what a stopping server sends first on a connection
// whose stream 1 it has: a GOAWAY NO_ERROR naming stream 1, then its
// PING, which it returns.
func (h *h2Raw) stopping(t *testing.T) *http2.PingFrame {
	t.Helper()
	away, ok := h.nextRaw(t, "the GOAWAY").(*http2.GoAwayFrame)
	if !ok || away.ErrCode != http2.ErrCodeNo || away.LastStreamID != 1 {
		t.Fatalf("the stopping server sent %v, want a GOAWAY NO_ERROR naming stream 1", away)
	}
	ping, ok := h.nextRaw(t, "the PING after the GOAWAY").(*http2.PingFrame)
	if !ok || ping.IsAck() || ping.Data != h2DrainPing {
		t.Fatalf("after the GOAWAY: %v, want the server's PING %q", ping, h2DrainPing)
	}
	return ping
}

// untilEnd runs each on every frame until the connection ends; a read
// timeout instead is fatal, when names what the test waited in.
func (h *h2Raw) untilEnd(t *testing.T, when string, each func(http2.Frame)) {
	t.Helper()
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			if isTimeout(err) {
				t.Fatalf("%s: %v, want the connection's end", when, err)
			}
			return
		}
		each(f)
	}
}

// goAway reads frames up to the connection's GOAWAY and returns it; the
// connection ending first is fatal, what names the case.
func (h *h2Raw) goAway(t *testing.T, what string) *http2.GoAwayFrame {
	t.Helper()
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			t.Fatalf("%s: the connection ended without a GOAWAY: %v", what, err)
		}
		if away, ok := f.(*http2.GoAwayFrame); ok {
			return away
		}
	}
}

// nextRaw returns the next frame other than SETTINGS, WINDOW_UPDATE and
// DATA; want names what the caller waits for.
func (h *h2Raw) nextRaw(t *testing.T, want string) http2.Frame {
	t.Helper()
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading %s: %v", want, err)
		}
		switch f.(type) {
		case *http2.SettingsFrame, *http2.WindowUpdateFrame, *http2.DataFrame:
			continue
		}
		return f
	}
}

// TestH2StoppingRequests: requests that reach a stopping server's HTTP/2
// connection after its GOAWAY, ordered by what the client reads: one on
// a stream above the GOAWAY's is refused (RST_STREAM REFUSED_STREAM, safe
// to send again), one on a stream at or below it, whose body was still
// coming, gets the 503 server_closing HTTP/3 gives; then the connection
// ends, and Serve returns.
func TestH2StoppingRequests(t *testing.T) {
	srv := New(testutil.Listen(t), Config{Tokens: 5, DelayMs: 0.1, HTTP2: true, h2DrainWait: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	defer func() { cancel(); <-served }()
	h := dialH2Raw(t, srv)
	body := `{"stream":true,"pi_tokens":3}`
	h.hb.Reset()
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", "x"}, {":path", "/v1/chat/completions"}} {
		h.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	// Stream 1: its HEADERS, its body to come; a PING's answer says the
	// server has read them.
	if err := h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: h.hb.Bytes(), EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	sync := [8]byte{'s', 'y', 'n', 'c'}
	h.fr.WritePing(false, sync)
	for {
		if p, ok := h.nextRaw(t, "the PING's answer").(*http2.PingFrame); ok && p.IsAck() && p.Data == sync {
			break
		}
	}
	cancel()
	ping := h.stopping(t)
	// As a client that had not read the GOAWAY yet: stream 3, stream 1's
	// body; then the PING's answer.
	h.post(3, "/v1/chat/completions", body)
	h.fr.WriteData(1, true, []byte(body))
	h.fr.WritePing(true, ping.Data)
	var refused bool
	var status string
	var answer []byte
	h.untilEnd(t, "after stream 3, stream 1's body and the PING's answer", func(f http2.Frame) {
		switch f := f.(type) {
		case *http2.RSTStreamFrame:
			switch {
			case f.StreamID == 3 && f.ErrCode == http2.ErrCodeRefusedStream:
				refused = true
			default:
				t.Errorf("RST_STREAM %d %v", f.StreamID, f.ErrCode)
			}
		case *http2.MetaHeadersFrame:
			if f.StreamID != 1 {
				t.Errorf("HEADERS on stream %d, want none above the GOAWAY's", f.StreamID)
			}
			status = f.PseudoValue("status")
		case *http2.DataFrame:
			answer = append(answer, f.Data()...)
		}
	})
	if !refused {
		t.Errorf("stream 3, above the GOAWAY's, not refused (RST_STREAM REFUSED_STREAM)")
	}
	if status != "503" || !strings.Contains(string(answer), `"code":"server_closing"`) {
		t.Errorf("stream 1, at the GOAWAY's, answered %q %q; want the 503 server_closing", status, answer)
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve = %v", err)
	}
	served <- nil
}

// TestH2BodyTimeout: a request whose body does not arrive within
// Config.ReadTimeout of its HEADERS gets the JSON 408, then a
// RST_STREAM without error (the client may stop sending it).
func TestH2BodyTimeout(t *testing.T) {
	srv := startServer(t, Config{Tokens: 5, DelayMs: 0.1, HTTP2: true, ReadTimeout: 200 * time.Millisecond})
	h := dialH2Raw(t, srv)
	h.hb.Reset()
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", "x"}, {":path", "/v1/chat/completions"}} {
		h.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: h.hb.Bytes(), EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	var status string
	var body []byte
	for {
		switch f := h.next().(type) {
		case *http2.MetaHeadersFrame:
			status = f.PseudoValue("status")
		case *http2.DataFrame:
			body = append(body, f.Data()...)
		case *http2.RSTStreamFrame:
			if f.ErrCode != http2.ErrCodeNo {
				t.Errorf("RST_STREAM %v, want NO_ERROR after the answer", f.ErrCode)
			}
			if status != "408" || !strings.Contains(string(body), `"code":"request_timeout"`) {
				t.Errorf("answered %s %q, want the JSON 408", status, body)
			}
			return
		case *http2.GoAwayFrame:
			t.Fatalf("GOAWAY %v", f.ErrCode)
		}
	}
}

// TestH2ConnectionErrors: a connection error of the client gets a GOAWAY
// with its code, then the connection's end.
func TestH2ConnectionErrors(t *testing.T) {
	headers := func(id uint32) string {
		var hb bytes.Buffer
		enc := hpack.NewEncoder(&hb)
		for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "x"}, {":path", "/v1/models"}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		return frame(http2.FrameHeaders, http2.Flags(http2.FlagHeadersEndHeaders), id, hb.Bytes())
	}
	inc := func(n uint32) []byte { return []byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)} }
	// An open stream: a request whose think time outlasts the test.
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", "x"}, {":path", "/v1/chat/completions"}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	open := frame(http2.FrameHeaders, http2.Flags(http2.FlagHeadersEndHeaders), 1, hb.Bytes()) +
		frame(http2.FrameData, http2.Flags(http2.FlagDataEndStream), 1, []byte(`{"stream":true,"pi_think_ms":60000}`))
	initialWindow := func(n uint32) string {
		return frame(http2.FrameSettings, 0, 0, append([]byte{0, byte(http2.SettingInitialWindowSize)}, inc(n)...))
	}
	tests := []struct {
		name  string
		bytes string
		code  http2.ErrCode
	}{
		{"HEADERS on an even stream", headers(2), http2.ErrCodeProtocol},
		{"HEADERS on a stream below the last", headers(5) + headers(3), http2.ErrCodeProtocol},
		{"DATA on an idle stream", frame(http2.FrameData, 0, 7, []byte("x")), http2.ErrCodeProtocol},
		{"PUSH_PROMISE from the client", frame(http2.FramePushPromise, http2.Flags(http2.FlagPushPromiseEndHeaders), 1, []byte{0, 0, 0, 2}), http2.ErrCodeProtocol},
		{"frame above 16 KiB", frame(http2.FramePing, 0, 0, make([]byte, h2FrameBytes+1)), http2.ErrCodeFrameSize},
		{"connection window above 2^31-1", frame(http2.FrameWindowUpdate, 0, 0, inc(1<<31-1)) + frame(http2.FrameWindowUpdate, 0, 0, inc(1<<31-1)), http2.ErrCodeFlowControl},
		{"WINDOW_UPDATE of 0 on the connection", frame(http2.FrameWindowUpdate, 0, 0, inc(0)), http2.ErrCodeProtocol},
		{"SETTINGS_INITIAL_WINDOW_SIZE taking an open stream's window above 2^31-1",
			open + frame(http2.FrameWindowUpdate, 0, 1, inc(1<<31-1-65_535)) + initialWindow(1<<31-1), http2.ErrCodeFlowControl},
		{"empty CONTINUATION flood", frame(http2.FrameHeaders, 0, 1, nil) + strings.Repeat(frame(http2.FrameContinuation, 0, 1, nil), h2MaxReadPerFrame/9+1), http2.ErrCodeEnhanceYourCalm},
	}
	srv := startServer(t, Config{Tokens: 5, DelayMs: 0.1, HTTP2: true})
	for _, tt := range tests {
		h := dialH2Raw(t, srv)
		go io.WriteString(h.c, tt.bytes) // the server may stop reading before the end
		away := h.goAway(t, tt.name)
		if away.ErrCode != tt.code {
			t.Errorf("%s: GOAWAY %v, want %v", tt.name, away.ErrCode, tt.code)
		}
		// Its end: EOF, or a reset when the client's bytes were not all
		// read; not the test's deadline.
		if _, err := io.Copy(io.Discard, h.c); isTimeout(err) {
			t.Errorf("%s: after the GOAWAY: %v, want the connection's end", tt.name, err)
		}
	}
	if p := srv.Panics(); p != 0 {
		t.Errorf("Panics() = %d", p)
	}
}

// TestH2StreamFlowErrors: a stream error of the client on an open stream
// (its request ended: half-closed (remote), RFC 9113 §5.1) gets that
// stream reset with its code, before the answer to a PING sent after it,
// and the connection goes on.
func TestH2StreamFlowErrors(t *testing.T) {
	inc := func(n uint32) string {
		return frame(http2.FrameWindowUpdate, 0, 1, []byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
	}
	tests := []struct {
		name  string
		bytes string
		code  http2.ErrCode
	}{
		{"WINDOW_UPDATE taking the stream's send window above 2^31-1", inc(1<<31 - 1), http2.ErrCodeFlowControl},
		{"two WINDOW_UPDATEs taking it there", inc(1<<30) + inc(1<<30), http2.ErrCodeFlowControl},
		{"WINDOW_UPDATE of 0 on the stream", inc(0), http2.ErrCodeProtocol},
		{"DATA after the request's END_STREAM", frame(http2.FrameData, 0, 1, []byte("x")), http2.ErrCodeStreamClosed},
		{"HEADERS after the request's END_STREAM", frame(http2.FrameHeaders, http2.FlagHeadersEndHeaders|http2.FlagHeadersEndStream, 1, []byte{0x82}),
			http2.ErrCodeStreamClosed},
	}
	srv := startServer(t, Config{Tokens: 5, DelayMs: 0.1, HTTP2: true})
	for _, tt := range tests {
		h := dialH2Raw(t, srv)
		h.post(1, "/v1/chat/completions", `{"stream":true,"pi_think_ms":60000}`)
		for {
			if _, ok := h.next().(*http2.MetaHeadersFrame); ok {
				break
			}
		}
		mark := [8]byte{'a', 'f', 't', 'e', 'r'}
		io.WriteString(h.c, tt.bytes)
		h.fr.WritePing(false, mark)
		var reset *http2.RSTStreamFrame
		for {
			f := h.nextRaw(t, tt.name+": the RST_STREAM")
			if r, ok := f.(*http2.RSTStreamFrame); ok && r.StreamID == 1 {
				reset = r
			}
			if p, ok := f.(*http2.PingFrame); ok && p.IsAck() && p.Data == mark {
				break
			}
			if g, ok := f.(*http2.GoAwayFrame); ok {
				t.Fatalf("%s: GOAWAY %v, want the stream reset and the connection kept", tt.name, g.ErrCode)
			}
		}
		if reset == nil || reset.ErrCode != tt.code {
			t.Errorf("%s: stream 1 reset %v, want RST_STREAM %v before the PING's answer", tt.name, reset, tt.code)
		}
		h.c.Close()
	}
	if p := srv.Panics(); p != 0 {
		t.Errorf("Panics() = %d", p)
	}
}

// TestH2DataPastStreamWindow: a client that sends more DATA on a stream
// than the window the server gave it (SETTINGS_INITIAL_WINDOW_SIZE, never
// grown) gets that stream reset with FLOW_CONTROL_ERROR — here while the
// server's 413 for the body waits for a send window the client never
// gives.
func TestH2DataPastStreamWindow(t *testing.T) {
	srv := startServer(t, Config{Tokens: 5, DelayMs: 0.1, HTTP2: true, WriteTimeout: time.Minute})
	h := dialH2Raw(t, srv, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	h.hb.Reset()
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", "x"}, {":path", "/v1/chat/completions"}} {
		h.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: h.hb.Bytes(), EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	sent := make(chan error, 1)
	go func() {
		chunk := make([]byte, h2FrameBytes)
		fr := http2.NewFramer(h.c, nil)
		for range h2StreamWindow/h2FrameBytes + 1 {
			if err := fr.WriteData(1, false, chunk); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	var status string
	for {
		f := h.nextRaw(t, "stream 1's reset")
		if m, ok := f.(*http2.MetaHeadersFrame); ok {
			status = m.PseudoValue("status")
		}
		if r, ok := f.(*http2.RSTStreamFrame); ok {
			if r.StreamID != 1 || r.ErrCode != http2.ErrCodeFlowControl {
				t.Errorf("RST_STREAM %d %v, want 1 FLOW_CONTROL_ERROR", r.StreamID, r.ErrCode)
			}
			break
		}
	}
	if status != "413" {
		t.Errorf("stream 1 answered %q before its reset, want the 413 of a body above the limit", status)
	}
	if err := <-sent; err != nil {
		t.Errorf("sending the body: %v", err)
	}
}

// TestH2HeaderBlockTimeout: a header block begun and not ended within
// Config.ReadHeaderTimeout ends its connection with a GOAWAY
// ENHANCE_YOUR_CALM that says so, while another stream is open: an
// unfinished header block stops the connection's reader, and cannot be
// skipped (the HPACK state is the connection's).
func TestH2HeaderBlockTimeout(t *testing.T) {
	tests := []struct {
		name  string
		bytes string
	}{
		{"HEADERS without END_HEADERS, no CONTINUATION", frame(http2.FrameHeaders, 0, 3, []byte{0x82})},
		{"CONTINUATION without END_HEADERS", frame(http2.FrameHeaders, 0, 3, []byte{0x82}) + frame(http2.FrameContinuation, 0, 3, []byte{0x84})},
		{"half a frame header", frame(http2.FrameHeaders, 0, 3, []byte{0x82})[:5]},
	}
	srv := startServer(t, Config{Tokens: 5, DelayMs: 0.1, HTTP2: true, ReadHeaderTimeout: 100 * time.Millisecond, IdleTimeout: time.Minute})
	for _, tt := range tests {
		h := dialH2Raw(t, srv)
		h.post(1, "/v1/chat/completions", `{"stream":true,"pi_think_ms":60000}`)
		for {
			if _, ok := h.next().(*http2.MetaHeadersFrame); ok {
				break
			}
		}
		io.WriteString(h.c, tt.bytes)
		away := h.goAway(t, tt.name)
		if away.ErrCode != http2.ErrCodeEnhanceYourCalm || away.LastStreamID != 1 || !strings.Contains(string(away.DebugData()), "ReadHeaderTimeout") {
			t.Errorf("%s: GOAWAY %v, last stream %d, %q; want ENHANCE_YOUR_CALM, 1, naming ReadHeaderTimeout",
				tt.name, away.ErrCode, away.LastStreamID, away.DebugData())
		}
		if _, err := io.Copy(io.Discard, h.c); isTimeout(err) {
			t.Errorf("%s: after the GOAWAY: %v, want the connection's end", tt.name, err)
		}
	}
}
