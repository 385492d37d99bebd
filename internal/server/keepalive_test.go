package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/evloop"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// kaRequest is a raw POST of body to path without "Connection: close", with
// extra header lines.
func kaRequest(path, body string, header ...string) string {
	return strings.Replace(postRequest(path, body, header...), "Connection: close\r\n", "", 1)
}

// dialRaw opens a TCP connection to srv with a deadline bounding the test.
func dialRaw(t *testing.T, srv *Server) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return c, bufio.NewReader(c)
}

func send(t *testing.T, c net.Conn, raw string) {
	t.Helper()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatalf("writing request: %v", err)
	}
}

func recv(t *testing.T, r *bufio.Reader, what string) (head, body string) {
	t.Helper()
	resp, err := readResponse(r)
	if err != nil {
		t.Fatalf("%s: reading response: %v (got %q)", what, err, resp)
	}
	return splitResponse(t, resp)
}

// expectClosed checks that the server closed the connection: the next read
// ends without data.
func expectClosed(t *testing.T, r *bufio.Reader, what string) {
	t.Helper()
	b, err := r.ReadByte()
	if err == nil {
		t.Errorf("%s: read %q, want the connection closed by the server", what, b)
		return
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("%s: connection still open after 20 s, want it closed", what)
	}
}

// kaStep is one request of a keep-alive exchange and what its answer must
// be: a stream of dialect d with n tokens, or a JSON answer with status.
type kaStep struct {
	req    string
	stream bool
	d      api.Dialect
	n      int
	status string // JSON answers: "200 OK", "404 Not Found", ...
	id     string // streams: the pi_id the registry must hold
}

func streamStep(d api.Dialect, n int, id string) kaStep { return pacedStreamStep(d, n, id, 0.1) }

// pacedStreamStep is streamStep with delayMs between the tokens.
func pacedStreamStep(d api.Dialect, n int, id string, delayMs float64) kaStep {
	body := fmt.Sprintf(`{"stream":true,"pi_id":%q,"pi_tokens":%d,"pi_delay_ms":%g}`, id, n, delayMs)
	return kaStep{req: kaRequest(d.Path(), body), stream: true, d: d, n: n, id: id}
}

// checkStep reads the answer to st and checks it; keep says whether the
// head must leave the connection open.
func checkStep(t *testing.T, r *bufio.Reader, what string, st kaStep, keep bool) {
	t.Helper()
	h, b := recv(t, r, what)
	if st.stream {
		want := streamHead
		if keep {
			want = streamHeadKeepAlive
		}
		if h != want {
			t.Fatalf("%s: head %q, want %q", what, h, want)
		}
		checkEvents(t, what, parseEvents(t, dechunk(t, b)), wantEvents(st.d, st.n, false, `"sse-latency-1"`))
		return
	}
	if !strings.HasPrefix(h, "HTTP/1.1 "+st.status+"\r\n") {
		t.Fatalf("%s: head %q, want status %s", what, h, st.status)
	}
	if got := strings.Contains(h, "\r\nConnection: close\r\n"); got == keep {
		t.Errorf("%s: head %q has Connection: close = %v, want %v", what, h, got, !keep)
	}
}

// TestKeepAliveSequence sends several requests one after the other on one
// connection, each after the previous answer ended (a stream's terminal
// chunk), and checks every answer in full, the heads (no Connection field
// while the connection stays open), the registry and the counters.
func TestKeepAliveSequence(t *testing.T) {
	chatJSON := kaStep{req: kaRequest("/v1/chat/completions", `{"pi_tokens":2,"pi_delay_ms":0.1}`), status: "200 OK"}
	tests := []struct {
		name  string
		steps []kaStep
	}{
		{"two streams", []kaStep{streamStep(api.Chat, 3, "a1"), streamStep(api.Chat, 4, "a2")}},
		{"three streams of three dialects", []kaStep{streamStep(api.Anthropic, 2, "b1"),
			streamStep(api.Responses, 3, "b2"), streamStep(api.Completions, 1, "b3")}},
		{"stream, JSON answer, stream", []kaStep{streamStep(api.Chat, 2, "c1"), chatJSON, streamStep(api.Chat, 2, "c3")}},
		{"errors and models keep the connection", []kaStep{
			{req: "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", status: "404 Not Found"},
			{req: "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n", status: "200 OK"},
			{req: kaRequest("/v1/chat/completions", `{nope`), status: "400 Bad Request"},
			streamStep(api.Chat, 2, "d4")}},
	}
	forEngines(t, func(t *testing.T, e evloop.Engine) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) { testKeepAliveSequence(t, e, tt.steps) })
		}
	})
}

// testKeepAliveSequence sends steps on one connection, then a request
// that asks to close it.
func testKeepAliveSequence(t *testing.T, e evloop.Engine, steps []kaStep) {
	reg := emission.New()
	srv := startServer(t, Config{Tokens: 5, DelayMs: 0.1, Emissions: reg, Engine: e})
	c, r := dialRaw(t, srv)
	for i, st := range steps {
		send(t, c, st.req)
		checkStep(t, r, fmt.Sprintf("request %d", i), st, true)
	}
	// The last request asks to close: the reference's head, then EOF.
	last := streamStep(api.Chat, 1, "last")
	send(t, c, postRequest(api.Chat.Path(), `{"stream":true,"pi_tokens":1}`))
	checkStep(t, r, "closing request", last, false)
	expectClosed(t, r, "after Connection: close")
	if got := srv.Connections(); got != 1 {
		t.Errorf("Connections() = %d, want 1", got)
	}
	if got, want := srv.Requests(), int64(len(steps)+1); got != want {
		t.Errorf("Requests() = %d, want %d", got, want)
	}
	for _, st := range steps {
		if times := reg.Take(st.id); st.stream && (times == nil || times.Len() != st.n) {
			t.Errorf("registry entry of %s = %v, want %d emission times", st.id, times, st.n)
		}
	}
}

// TestConnectionEnds checks when a connection ends after its response:
// when the request says Connection: close, is HTTP/1.0 without keep-alive,
// or is malformed, or when Config.ServerClose is set — and then the head is
// the reference's, Connection: close included. Otherwise a second request
// on the same connection is answered.
func TestConnectionEnds(t *testing.T) {
	stream := `{"stream":true,"pi_tokens":2}`
	http10 := func(body string, header ...string) string {
		return strings.Replace(kaRequest("/v1/chat/completions", body, header...), " HTTP/1.1\r\n", " HTTP/1.0\r\n", 1)
	}
	tests := []struct {
		name       string
		cfg        Config
		req        string
		wantHead   string // exact head; "" to check wantPrefix and wantField instead
		wantPrefix string
		wantField  string // a field line the head must have ("" for none)
		closes     bool
	}{
		{"stream, Connection: close", Config{}, postRequest("/v1/chat/completions", stream), streamHead, "", "", true},
		{"stream, keep-alive", Config{}, kaRequest("/v1/chat/completions", stream), streamHeadKeepAlive, "", "", false},
		{"stream, ServerClose", Config{ServerClose: true}, kaRequest("/v1/chat/completions", stream), streamHead, "", "", true},
		{"stream, Connection: keep-alive, ServerClose", Config{ServerClose: true},
			kaRequest("/v1/chat/completions", stream, "Connection: keep-alive"), streamHead, "", "", true},
		{"stream, HTTP/1.0", Config{}, http10(stream), streamHead, "", "", true},
		{"stream, HTTP/1.0 keep-alive (chunks need a close)", Config{}, http10(stream, "Connection: keep-alive"), streamHead, "", "", true},
		{"JSON, HTTP/1.0 keep-alive", Config{}, http10(`{"pi_tokens":1}`, "Connection: keep-alive"), "", "HTTP/1.1 200 OK\r\n", "Connection: keep-alive", false},
		{"JSON, HTTP/1.0", Config{}, http10(`{"pi_tokens":1}`), "", "HTTP/1.1 200 OK\r\n", "Connection: close", true},
		{"JSON, Connection: close", Config{}, postRequest("/v1/chat/completions", `{"pi_tokens":1}`), "", "HTTP/1.1 200 OK\r\n", "Connection: close", true},
		{"JSON, ServerClose", Config{ServerClose: true}, "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n", "", "HTTP/1.1 200 OK\r\n", "Connection: close", true},
		{"404 keeps", Config{}, "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", "", "HTTP/1.1 404 Not Found\r\n", "", false},
		{"malformed head closes", Config{}, "BROKEN\r\n\r\n", "", "HTTP/1.1 400 Bad Request\r\n", "Connection: close", true},
		{"body too large closes", Config{}, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + fmt.Sprint(MaxBodyBytes+1) + "\r\n\r\n",
			"", "HTTP/1.1 413 Content Too Large\r\n", "Connection: close", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Tokens, cfg.DelayMs = 1, 0.1
			srv := startServer(t, cfg)
			c, r := dialRaw(t, srv)
			send(t, c, tt.req)
			h, _ := recv(t, r, "first response")
			switch {
			case tt.wantHead != "" && h != tt.wantHead:
				t.Errorf("head %q, want %q", h, tt.wantHead)
			case tt.wantHead == "" && !strings.HasPrefix(h, tt.wantPrefix):
				t.Errorf("head %q, want it to start with %q", h, tt.wantPrefix)
			}
			if tt.wantField != "" && !strings.Contains(h, "\r\n"+tt.wantField+"\r\n") {
				t.Errorf("head %q lacks %q", h, tt.wantField)
			}
			if !strings.Contains(tt.wantField, "Connection") && strings.Contains(h, "\r\nConnection:") && !tt.closes {
				t.Errorf("head %q of a connection that stays open has a Connection field", h)
			}
			if tt.closes {
				expectClosed(t, r, tt.name)
				return
			}
			send(t, c, "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
			if h, _ := recv(t, r, "second response"); !strings.HasPrefix(h, "HTTP/1.1 200 OK\r\n") {
				t.Errorf("second request on the connection answered %q, want 200", h)
			}
			expectClosed(t, r, "after the second request")
		})
	}
}

// TestPipelining sends requests in one write, before any answer: the bytes
// after the first request must be kept for the next, whatever the first
// one's body framing and answer.
func TestPipelining(t *testing.T) {
	chunkedBody := `{"stream":true,"pi_tokens":2,"pi_id":"ch"}`
	chunked := "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
		fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(chunkedBody), chunkedBody)
	tests := []struct {
		name  string
		steps []kaStep
	}{
		{"two streams", []kaStep{streamStep(api.Chat, 3, "p1"), streamStep(api.Anthropic, 2, "p2")}},
		{"chunked body then stream", []kaStep{{req: chunked, stream: true, d: api.Chat, n: 2, id: "ch"}, streamStep(api.Chat, 1, "p3")}},
		{"JSON answer then stream", []kaStep{{req: kaRequest("/v1/completions", `{"pi_tokens":3,"pi_delay_ms":2}`), status: "200 OK"},
			streamStep(api.Completions, 2, "p4")}},
		{"three at once", []kaStep{{req: "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n", status: "200 OK"},
			streamStep(api.Responses, 2, "p5"), {req: "GET /x HTTP/1.1\r\nHost: x\r\n\r\n", status: "404 Not Found"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startServer(t, Config{Tokens: 5, DelayMs: 0.1})
			c, r := dialRaw(t, srv)
			var all strings.Builder
			for _, st := range tt.steps {
				all.WriteString(st.req)
			}
			send(t, c, all.String())
			for i, st := range tt.steps {
				checkStep(t, r, fmt.Sprintf("request %d", i), st, true)
			}
			if got, want := srv.Requests(), int64(len(tt.steps)); got != want {
				t.Errorf("Requests() = %d, want %d", got, want)
			}
		})
	}
}

// TestPipelinedDuringWait sends the next request while the server waits to
// send a non-streaming answer, watching the connection for a client that
// goes away: the bytes it reads are the next request, not a departure.
func TestPipelinedDuringWait(t *testing.T) {
	srv := startServer(t, Config{Tokens: 5, DelayMs: 0.1})
	c, r := dialRaw(t, srv)
	first := kaStep{req: kaRequest("/v1/chat/completions", `{"pi_tokens":5,"pi_delay_ms":20}`), status: "200 OK"}
	second := streamStep(api.Chat, 2, "w2")
	send(t, c, first.req)
	// Once the server has read the first request, it waits 100 ms: the
	// second most likely comes inside the wait (any order must work).
	testutil.Await(t, "the server to read the first request", func() bool { return srv.Requests() == 1 })
	send(t, c, second.req)
	checkStep(t, r, "non-streaming answer", first, true)
	checkStep(t, r, "pipelined stream", second, true)
}

// TestIdleTimeout checks that a persistent connection with no next request
// is closed after Config.IdleTimeout.
func TestIdleTimeout(t *testing.T) {
	srv := startServer(t, Config{Tokens: 1, DelayMs: 0.1, IdleTimeout: 20 * time.Millisecond})
	c, r := dialRaw(t, srv)
	st := streamStep(api.Chat, 1, "i1")
	send(t, c, st.req)
	checkStep(t, r, "stream", st, true)
	expectClosed(t, r, "idle connection")
}

// TestShutdownWithIdleConnections checks that Serve returns promptly when
// cancelled while keep-alive connections wait for their next request (the
// idle timeout is far away) and closes them.
func TestShutdownWithIdleConnections(t *testing.T) {
	srv, stop := runServer(t, Config{Tokens: 1, DelayMs: 0.1, IdleTimeout: time.Hour})
	var readers []*bufio.Reader
	for i := range 3 {
		c, r := dialRaw(t, srv)
		st := streamStep(api.Chat, 1, fmt.Sprint("s", i))
		send(t, c, st.req)
		checkStep(t, r, "stream", st, true)
		readers = append(readers, r)
	}
	stop("while keep-alive connections were idle")
	for i, r := range readers {
		expectClosed(t, r, fmt.Sprint("idle connection ", i))
	}
}
