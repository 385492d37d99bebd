package server

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/evloop"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// apiError is the OpenAI-style error body of every error answer.
type apiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	} `json:"error"`
}

// checkError checks that resp (a whole raw response) has the status line
// status and an OpenAI-style JSON error body with code and a message
// containing each of msgs.
func checkError(t *testing.T, what, resp, status, code string, msgs ...string) {
	t.Helper()
	h, b := splitResponse(t, resp)
	if !strings.HasPrefix(h, "HTTP/1.1 "+status+"\r\n") {
		t.Errorf("%s: head %q, want status %s", what, h, status)
		return
	}
	if !strings.Contains(h, "\r\nContent-Type: application/json\r\n") {
		t.Errorf("%s: head %q lacks Content-Type: application/json", what, h)
	}
	checkErrorBody(t, what, b, code, msgs...)
}

func checkErrorBody(t *testing.T, what, body, code string, msgs ...string) {
	t.Helper()
	var e apiError
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Errorf("%s: body %q is not a JSON error: %v", what, body, err)
		return
	}
	if e.Error.Code != code || e.Error.Type == "" {
		t.Errorf("%s: error code %q type %q, want code %q and a type (body %s)", what, e.Error.Code, e.Error.Type, code, body)
	}
	for _, m := range msgs {
		if !strings.Contains(e.Error.Message, m) {
			t.Errorf("%s: message %q lacks %q", what, e.Error.Message, m)
		}
	}
}

func TestLimitDefaults(t *testing.T) {
	srv := startServer(t, Config{})
	c := srv.cfg
	if c.MaxTokens != DefaultMaxTokens || c.MaxDelay != DefaultMaxDelay || c.MaxStreams != DefaultMaxStreams ||
		c.ReadHeaderTimeout != DefaultReadHeaderTimeout {
		t.Errorf("New(Config{}) limits = tokens %d, delay %v, streams %d, read-header %v; want %d, %v, %d, %v",
			c.MaxTokens, c.MaxDelay, c.MaxStreams, c.ReadHeaderTimeout,
			DefaultMaxTokens, DefaultMaxDelay, DefaultMaxStreams, DefaultReadHeaderTimeout)
	}
	srv = startServer(t, Config{MaxTokens: 1 << 40, ReadTimeout: time.Second, ReadHeaderTimeout: time.Minute, MaxStreams: -1})
	c = srv.cfg
	if c.MaxTokens != 1<<31-1 || c.ReadHeaderTimeout != time.Second || c.MaxStreams != -1 {
		t.Errorf("New clamps: MaxTokens %d, ReadHeaderTimeout %v, MaxStreams %d; want 2147483647, 1s (ReadTimeout), -1 (no limit)",
			c.MaxTokens, c.ReadHeaderTimeout, c.MaxStreams)
	}
}

// TestRequestLimits sends one request past each limit on the request and
// checks the status and the JSON error that names what was wrong.
func TestRequestLimits(t *testing.T) {
	srv := startServer(t, Config{Tokens: 2, DelayMs: 0.1, MaxTokens: 100, MaxDelay: time.Second})
	chat := func(body string, header ...string) string {
		return postRequest("/v1/chat/completions", body, header...)
	}
	bigChunked := "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
		strings.Repeat(fmt.Sprintf("%x\r\n%s\r\n", 64<<10, strings.Repeat(" ", 64<<10)), MaxBodyBytes/(64<<10)+1) + "0\r\n\r\n"
	limit := fmt.Sprintf("limit of %d", MaxBodyBytes)
	tests := []struct {
		name, req, status, code string
		msgs                    []string
	}{
		{"head over 64 KiB", "GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 70_000) + "\r\n\r\n",
			"431 Request Header Fields Too Large", "request_header_fields_too_large", []string{"request head larger than 65536 bytes"}},
		{"body over the limit, declared", fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", MaxBodyBytes+1),
			"413 Content Too Large", "request_too_large", []string{fmt.Sprintf("%d bytes", MaxBodyBytes+1), limit}},
		{"body over the limit, sent", chat(`{"x":"` + strings.Repeat("a", MaxBodyBytes) + `"}`),
			"413 Content Too Large", "request_too_large", []string{limit}},
		{"body over the limit, chunked", bigChunked,
			"413 Content Too Large", "request_too_large", []string{limit + " bytes"}},
		{"malformed head", "POST /v1/chat/completions HTTP/1.1\r\nHost x\r\n\r\n",
			"400 Bad Request", "bad_request", []string{"malformed request head", "Host x"}},
		{"malformed chunked body", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
			"400 Bad Request", "bad_request", []string{"malformed chunked request body"}},
		{"malformed JSON", chat(`{"stream":true,`),
			"400 Bad Request", "invalid_request_error", []string{"invalid JSON body"}},
		{"pi_tokens not a number", chat(`{"pi_tokens":"many"}`),
			"400 Bad Request", "invalid_request_error", []string{"pi_tokens must be a number"}},
		{"pi_tokens beyond 2^31-1", chat(`{"pi_tokens":1e12}`),
			"400 Bad Request", "invalid_request_error", []string{"pi_tokens too large"}},
		{"pi_tokens above the cap", chat(`{"stream":true,"pi_tokens":101}`),
			"400 Bad Request", "hint_above_limit", []string{"pi_tokens 101 in the JSON body", "limit is 100"}},
		{"header tokens above the cap", chat(`{"stream":true}`, "X-SSE-Latency: id=a; tokens=101"),
			"400 Bad Request", "hint_above_limit", []string{"tokens=101 in the X-SSE-Latency header", "limit is 100"}},
		{"prompt tokens above the cap", chat(`{"messages":[{"role":"user","content":"[sse-latency tokens=5000]"}]}`),
			"400 Bad Request", "hint_above_limit", []string{"tokens=5000 in the prompt marker", "limit is 100"}},
		{"pi_think_ms above the cap", chat(`{"pi_think_ms":1000.5}`),
			"400 Bad Request", "hint_above_limit", []string{"pi_think_ms 1000.5 in the JSON body", "limit is 1000 ms (1s)"}},
		{"pi_delay_ms above the cap", chat(`{"stream":true,"pi_delay_ms":6e5}`),
			"400 Bad Request", "hint_above_limit", []string{"pi_delay_ms 600000 in the JSON body", "limit is 1000 ms"}},
		{"header delay above the cap", chat(`{}`, "X-SSE-Latency: delay=1001"),
			"400 Bad Request", "hint_above_limit", []string{"delay=1001 in the X-SSE-Latency header"}},
		{"prompt think above the cap", chat(`{"prompt":"x [sse-latency think=86400000]"}`),
			"400 Bad Request", "hint_above_limit", []string{"think=8.64e+07 in the prompt marker"}},
		{"pi_think_ms not a number", chat(`{"pi_think_ms":"soon"}`),
			"400 Bad Request", "invalid_request_error", []string{"pi_think_ms must be a number"}},
		{"pi_delay_ms not a number", chat(`{"pi_delay_ms":[1]}`),
			"400 Bad Request", "invalid_request_error", []string{"pi_delay_ms must be a number"}},
	}
	for _, tt := range tests {
		checkError(t, tt.name, exchange(t, srv, tt.req), tt.status, tt.code, tt.msgs...)
	}

	// Within the caps, or overridden by a channel that is: answered.
	ok := []struct{ name, req, tokens string }{
		{"at the caps", chat(`{"pi_tokens":100,"pi_think_ms":1,"pi_delay_ms":0}`), `"completion_tokens":100`},
		{"negative pi_tokens is 0 (SPEC)", chat(`{"pi_tokens":-5}`), `"completion_tokens":0`},
		{"header above the cap, JSON wins", chat(`{"pi_tokens":3,"pi_delay_ms":0}`, "X-SSE-Latency: tokens=1000000; delay=1e9"), `"completion_tokens":3`},
		{"malformed header hints are ignored", chat(`{}`, "X-SSE-Latency: tokens=many; think=NaN"), `"completion_tokens":2`},
	}
	for _, tt := range ok {
		h, b := splitResponse(t, exchange(t, srv, tt.req))
		if !strings.HasPrefix(h, "HTTP/1.1 200 OK\r\n") || !strings.Contains(b, tt.tokens) {
			t.Errorf("%s: answer %q %q, want 200 with %s", tt.name, h, b, tt.tokens)
		}
	}
}

// TestMaxStreams fills Config.MaxStreams with streams, checks that the next
// request (streaming or not) gets a 429 with Retry-After, and that places
// come back when streams end (here: dropped because their clients left).
func TestMaxStreams(t *testing.T) {
	srv := startServer(t, Config{Tokens: 1, DelayMs: 0.1, MaxStreams: 2})
	long := postRequest("/v1/chat/completions", `{"stream":true,"pi_tokens":100000,"pi_delay_ms":5}`)
	var conns []net.Conn
	for i := range 2 {
		c, r := dialRaw(t, srv)
		send(t, c, long)
		line, err := r.ReadString('\n')
		if err != nil || line != "HTTP/1.1 200 OK\r\n" {
			t.Fatalf("stream %d: status line %q, %v", i, line, err)
		}
		conns = append(conns, c)
	}
	if got := srv.ActiveStreams(); got != 2 {
		t.Errorf("ActiveStreams() = %d with 2 streams open", got)
	}
	for _, body := range []string{`{"stream":true}`, `{}`} {
		resp := exchange(t, srv, postRequest("/v1/responses", body))
		checkError(t, "past MaxStreams "+body, resp, "429 Too Many Requests", "rate_limit_exceeded",
			"too many concurrent streams (limit 2)")
		if h, _ := splitResponse(t, resp); !strings.Contains(h, "\r\nRetry-After: 1\r\n") {
			t.Errorf("429 head %q lacks Retry-After: 1", h)
		}
	}
	if got := srv.ActiveStreams(); got != 2 {
		t.Errorf("ActiveStreams() = %d after refusals, want 2", got)
	}
	// Other endpoints do not count.
	if h, _ := splitResponse(t, exchange(t, srv, "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")); !strings.HasPrefix(h, "HTTP/1.1 200") {
		t.Errorf("GET /v1/models at MaxStreams: %q, want 200", h)
	}
	for _, c := range conns {
		c.Close()
	}
	testutil.Await(t, "the dropped streams to give their places back", func() bool { return srv.ActiveStreams() == 0 })
	streamEvents(t, srv, postRequest("/v1/chat/completions", `{"stream":true,"pi_tokens":2}`))
	if got := srv.Panics(); got != 0 {
		t.Errorf("Panics() = %d", got)
	}
}

// TestMaxStreamsH2 checks the 429 on HTTP/2, where one connection carries
// the streams.
func TestMaxStreamsH2(t *testing.T) {
	h := newH2Setup(t, false, Config{Tokens: 1, DelayMs: 0.1, MaxStreams: 1})
	resp, err := h.client.Post(h.base+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"stream":true,"pi_tokens":100000,"pi_delay_ms":5}`))
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(resp.Body)
	if _, err := r.ReadString('\n'); err != nil { // the stream has begun
		t.Fatal(err)
	}
	refused, body := h.post(t, "/v1/messages", `{"stream":true}`)
	if refused.StatusCode != http.StatusTooManyRequests || refused.Header.Get("Retry-After") != "1" {
		t.Errorf("second stream: %s, Retry-After %q; want 429 with Retry-After: 1", refused.Status, refused.Header.Get("Retry-After"))
	}
	checkErrorBody(t, "HTTP/2 429", body, "rate_limit_exceeded", "too many concurrent streams (limit 1)")
	resp.Body.Close() // resets the stream: its place comes back
	testutil.Await(t, "the reset stream to give its place back", func() bool { return h.srv.ActiveStreams() == 0 })
	if ok, _ := h.post(t, "/v1/chat/completions", `{"stream":true,"pi_tokens":1}`); ok.StatusCode != 200 {
		t.Errorf("after the first stream ended: %s, want 200", ok.Status)
	}
}

// TestReadHeaderTimeout checks the slowloris defence: a head begun and not
// finished within Config.ReadHeaderTimeout gets a 408, even when bytes keep
// trickling in, on a fresh connection and on a persistent one; a connection
// on which nothing arrives is closed without an answer; a body that does not
// arrive within ReadTimeout gets a 408 too. The read timeout, the idle
// timeout and the test's own deadline are far longer: the connection must
// end because of the head timeout.
func TestReadHeaderTimeout(t *testing.T) {
	const rht = 200 * time.Millisecond
	srv := startServer(t, Config{Tokens: 1, DelayMs: 0.1, ReadHeaderTimeout: rht, ReadTimeout: 800 * time.Millisecond, IdleTimeout: time.Minute})
	head408 := []string{"request head not received within 200ms"}

	c, r := dialRaw(t, srv)
	send(t, c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
	resp, err := readResponse(r)
	if err != nil {
		t.Fatalf("partial head: %v (%q)", err, resp)
	}
	checkError(t, "partial head", resp, "408 Request Timeout", "request_timeout", head408...)
	expectClosed(t, r, "after the 408")

	// A byte every 20 ms: the head timer runs from the first byte.
	slow, r := dialRaw(t, srv)
	go func() {
		for _, b := range []byte("GET /v1/models HTTP/1.1\r\nHost: slowloris.example\r\nX-A: " + strings.Repeat("a", 200)) {
			if _, err := slow.Write([]byte{b}); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	resp, err = readResponse(r)
	if err != nil {
		t.Fatalf("slowloris: %v (%q)", err, resp)
	}
	checkError(t, "slowloris", resp, "408 Request Timeout", "request_timeout", head408...)

	// Nothing at all: closed, no answer.
	_, r = dialRaw(t, srv)
	expectClosed(t, r, "silent connection")

	// A persistent connection: the idle wait (a minute) is not the head's.
	c, r = dialRaw(t, srv)
	send(t, c, kaRequest("/v1/chat/completions", `{"pi_tokens":1}`))
	if h, _ := recv(t, r, "first request"); !strings.HasPrefix(h, "HTTP/1.1 200") {
		t.Fatalf("first request: %q", h)
	}
	time.Sleep(2 * rht) // idle, not late: the idleness under test, not an ordering
	send(t, c, "GET /v1/models HTTP/1.1\r\n")
	resp, err = readResponse(r)
	if err != nil {
		t.Fatalf("second request: %v (%q)", err, resp)
	}
	checkError(t, "partial head on a persistent connection", resp, "408 Request Timeout", "request_timeout", head408...)

	// A body that stops half-way.
	c, r = dialRaw(t, srv)
	send(t, c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"stream\":")
	resp, err = readResponse(r)
	if err != nil {
		t.Fatalf("partial body: %v (%q)", err, resp)
	}
	checkError(t, "partial body", resp, "408 Request Timeout", "request_timeout", "request body not received within 800ms")
}

// TestHandshakeTimeout checks that a TLS client that never finishes its
// handshake is dropped after ReadHeaderTimeout, not ReadTimeout.
func TestHandshakeTimeout(t *testing.T) {
	tc, _, _ := selfSigned(t)
	srv := startServer(t, Config{Tokens: 1, TLS: tc, ReadHeaderTimeout: 100 * time.Millisecond, ReadTimeout: time.Hour})
	c, r := dialRaw(t, srv)
	send(t, c, "\x16\x03\x01") // the start of a ClientHello record
	expectClosed(t, r, "half a handshake")
}

// TestStuckReader streams to a client that never reads, fast enough to fill
// the socket buffers, while another client streams normally: the normal
// stream must complete while the stuck one is blocked, and the stuck one is
// dropped after WriteTimeout, giving its place back and closing its
// connection — over plain TCP (written from the emission shard) and over TLS
// (written from a goroutine).
func TestStuckReader(t *testing.T) { forEngines(t, testStuckReader) }

func testStuckReader(t *testing.T, e evloop.Engine) {
	for _, overTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "tcp", true: "tls"}[overTLS], func(t *testing.T) {
			cfg := Config{Tokens: 1, DelayMs: 0.1, WriteTimeout: time.Second, Shards: 1, Engine: e} // one shard: the stuck stream shares it
			var roots *x509.CertPool
			if overTLS {
				cfg.TLS, roots, _ = selfSigned(t)
			}
			srv := startServer(t, cfg)
			// dial returns the connection and the TCP one underneath.
			dial := func(rcvbuf int) (net.Conn, net.Conn) {
				c, err := net.Dial("tcp", srv.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				if rcvbuf > 0 {
					c.(*net.TCPConn).SetReadBuffer(rcvbuf)
				}
				c.SetDeadline(time.Now().Add(20 * time.Second))
				if roots == nil {
					return c, c
				}
				tc := tls.Client(c, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}})
				if err := tc.Handshake(); err != nil {
					t.Fatalf("TLS handshake: %v", err)
				}
				return tc, c
			}

			stuck, stuckTCP := dial(4096)
			// 1,000,000 tokens at no delay: ~200 MB, far more than any buffer.
			send(t, stuck, postRequest("/v1/chat/completions", `{"stream":true,"pi_tokens":1000000,"pi_delay_ms":0}`))
			testutil.Await(t, "the stuck stream to start", func() bool { return srv.ActiveStreams() == 1 })
			// The server's end of the stuck connection exists as long as
			// the stuck stream is not dropped (it resets the connection):
			// the kernel tells, where testutil.Unread can ask it.
			_, canTell := testutil.Unread(stuckTCP)

			normal, _ := dial(0)
			const n = 50
			send(t, normal, postRequest("/v1/chat/completions", fmt.Sprintf(`{"stream":true,"pi_tokens":%d,"pi_delay_ms":1}`, n)))
			resp, err := readResponse(bufio.NewReader(normal))
			if err != nil {
				t.Fatalf("normal stream beside a stuck one: %v", err)
			}
			// The normal stream has ended: the stuck one must still be there
			// (dropped only after WriteTimeout, far longer than the normal
			// stream takes), or the normal one waited for its drop.
			if _, err := testutil.Unread(stuckTCP); canTell == nil && err != nil {
				t.Errorf("the stuck connection was gone when the normal stream ended (%v): it waited for the stuck one", err)
			}
			_, b := splitResponse(t, resp)
			checkEvents(t, "normal stream", parseEvents(t, dechunk(t, b)), wantEvents(api.Chat, n, false, `"sse-latency-1"`))
			// Its place comes back once it has ended (after its last bytes
			// reached the client).
			testutil.Await(t, "the normal stream to give its place back", func() bool { return srv.ActiveStreams() <= 1 })

			testutil.Await(t, "the stuck stream to be dropped", func() bool { return srv.ActiveStreams() == 0 })
			if canTell == nil {
				testutil.Await(t, "the server's end of the stuck connection to go", func() bool { _, err := testutil.Unread(stuckTCP); return err != nil })
			}
			got, err := io.Copy(io.Discard, stuck)
			if isTimeout(err) {
				t.Errorf("stuck connection still open after its stream was dropped (read %d bytes)", got)
			}
			if got > 100<<20 {
				t.Errorf("stuck client read %d bytes: the stream was not held back", got)
			}
			if p := srv.Panics(); p != 0 {
				t.Errorf("Panics() = %d", p)
			}
		})
	}
}

// TestH2ReadTimeout checks Config.ReadTimeout on HTTP/2: a request body
// that does not arrive in time gets a 408, and a stream that lasts longer
// than the read timeout, its body long read, is not cut.
func TestH2ReadTimeout(t *testing.T) {
	h := newH2Setup(t, false, Config{Tokens: 1, DelayMs: 0.1, ReadTimeout: 200 * time.Millisecond})
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte(`{"stream":`)) // and nothing more
	resp, err := h.client.Post(h.base+"/v1/chat/completions", "application/json", pr)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("HTTP/2 body that stops: %s %q, want 408", resp.Status, b)
	}
	checkErrorBody(t, "HTTP/2 408", string(b), "request_timeout", "request body not received within 200ms")

	const n = 40 // 40 tokens 10 ms apart: twice the read timeout
	_, got := h.post(t, "/v1/chat/completions", fmt.Sprintf(`{"stream":true,"pi_tokens":%d,"pi_delay_ms":10}`, n))
	checkEvents(t, "HTTP/2 stream longer than the read timeout", parseEvents(t, splitEvents(t, got)), wantEvents(api.Chat, n, false, `"sse-latency-1"`))
}
