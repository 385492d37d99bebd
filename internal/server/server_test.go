package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/evloop"
	"github.com/sse-latency/sse-latency/internal/testutil"
	"github.com/sse-latency/sse-latency/internal/wire"
)

// runServer starts a server on a listener bound to 127.0.0.1:0 and returns
// it with stop, which cancels Serve and fails the test unless Serve returns
// nil within testutil.StopBound; while names the situation for the
// message.
func runServer(t *testing.T, cfg Config) (srv *Server, stop func(while string)) {
	t.Helper()
	srv = New(testutil.Listen(t), cfg)
	return srv, testutil.Serve(t, srv)
}

// engines are the ways the emission shards run: on the event loops,
// where there are any (epoll; io_uring where the kernel allows it), and on
// goroutines of their own.
func engines() []evloop.Engine {
	var es []evloop.Engine
	if ok, _ := evloop.Epoll.Loops(); ok {
		es = append(es, evloop.Epoll)
	}
	if evloop.UringAvailable() == nil {
		es = append(es, evloop.Uring)
	}
	return append(es, evloop.Goroutine)
}

// forEngines runs f as a subtest per engine.
func forEngines(t *testing.T, f func(t *testing.T, e evloop.Engine)) {
	for _, e := range engines() {
		t.Run(string(e), func(t *testing.T) { f(t, e) })
	}
}

// startServer runs a server on 127.0.0.1:0 for the duration of the test.
func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	srv, _ := runServer(t, cfg)
	return srv
}

// exchange sends raw request parts, each once the server has read the one
// before (so that it comes in a later read), and returns the whole
// response, delimited by its framing (the connection may stay open after
// it).
func exchange(t *testing.T, srv *Server, parts ...string) string {
	t.Helper()
	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	for i, p := range parts {
		if i > 0 {
			awaitRead(t, c)
		}
		if _, err := io.WriteString(c, p); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := readResponse(bufio.NewReader(c))
	if err != nil {
		t.Fatalf("reading response: %v (got %q)", err, resp)
	}
	return resp
}

// awaitRead waits until the server has read every byte written on c, its
// client connection (where testutil.Unread can tell).
func awaitRead(t *testing.T, c net.Conn) {
	t.Helper()
	testutil.Await(t, "the server to read what was sent", func() bool {
		n, err := testutil.Unread(c)
		return err != nil || n == 0
	})
}

// TestListen: Listen binds the address it is given.
func TestListen(t *testing.T) {
	srv, err := Listen("127.0.0.1:0", Config{Tokens: 2, DelayMs: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Serve(t, srv)
	if a, ok := srv.Addr().(*net.TCPAddr); !ok || !a.IP.Equal(net.IPv4(127, 0, 0, 1)) || a.Port == 0 {
		t.Fatalf("Addr() = %v, want 127.0.0.1 and the port bound", srv.Addr())
	}
	if h, _ := splitResponse(t, exchange(t, srv, "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")); !strings.HasPrefix(h, "HTTP/1.1 200") {
		t.Errorf("GET /v1/models: %q, want 200", h)
	}
}

// readResponse reads one whole HTTP/1.1 response, as raw bytes: the head,
// then a chunked body through its last chunk and trailer section, or
// Content-Length bytes, or everything until the connection closes.
func readResponse(r *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		line, err := r.ReadString('\n')
		b.WriteString(line)
		if err != nil {
			return b.String(), err
		}
		if line == "\r\n" {
			break
		}
	}
	head, _, err := wire.ParseResponseHead([]byte(b.String()))
	if err != nil {
		return b.String(), err
	}
	switch {
	case head.Chunked:
		for {
			line, err := r.ReadString('\n')
			b.WriteString(line)
			if err != nil {
				return b.String(), err
			}
			n, err := strconv.ParseInt(strings.TrimRight(line, "\r\n"), 16, 64)
			if err != nil {
				return b.String(), fmt.Errorf("bad chunk size line %q", line)
			}
			if n == 0 {
				break
			}
			data := make([]byte, n+2)
			_, err = io.ReadFull(r, data)
			b.Write(data)
			if err != nil {
				return b.String(), err
			}
		}
		for { // trailer section
			line, err := r.ReadString('\n')
			b.WriteString(line)
			if err != nil {
				return b.String(), err
			}
			if line == "\r\n" {
				return b.String(), nil
			}
		}
	case head.ContentLength >= 0:
		data := make([]byte, head.ContentLength)
		_, err := io.ReadFull(r, data)
		b.Write(data)
		return b.String(), err
	default:
		data, err := io.ReadAll(r)
		b.Write(data)
		return b.String(), err
	}
}

func chatRequest(body string) (head, payload string) {
	return "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n", body
}

// dechunk splits a chunked body into its chunks, failing on bad framing.
func dechunk(t *testing.T, body string) []string {
	t.Helper()
	var chunks []string
	r := bufio.NewReader(strings.NewReader(body))
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("chunk size line: %v (after %d chunks)", err, len(chunks))
		}
		n, err := strconv.ParseInt(strings.TrimRight(line, "\r\n"), 16, 64)
		if err != nil {
			t.Fatalf("bad chunk size %q", line)
		}
		if n == 0 {
			rest, _ := io.ReadAll(r)
			if string(rest) != "\r\n" {
				t.Fatalf("after last chunk: %q, want CRLF", rest)
			}
			return chunks
		}
		data := make([]byte, n+2)
		if _, err := io.ReadFull(r, data); err != nil || string(data[n:]) != "\r\n" {
			t.Fatalf("chunk of %d bytes not followed by CRLF: %q", n, data)
		}
		chunks = append(chunks, string(data[:n]))
	}
}

func splitResponse(t *testing.T, resp string) (head, body string) {
	t.Helper()
	i := strings.Index(resp, "\r\n\r\n")
	if i < 0 {
		t.Fatalf("no head in response %q", resp)
	}
	return resp[:i+4], resp[i+4:]
}

// chunkRE matches a chat chunk of TestStreamSequence, whose request asks for
// model "x" (the server echoes it).
var chunkRE = regexp.MustCompile(`^data: \{"id":"(chatcmpl-sse-latency-\d+)","object":"chat\.completion\.chunk","created":(\d+),"pi_ts":(\d+),"model":"x","choices":\[\{"index":0,"delta":(.*),"finish_reason":(null|"stop")\}\]\}\n\n$`)

func TestStreamSequence(t *testing.T) { forEngines(t, testStreamSequence) }

func testStreamSequence(t *testing.T, e evloop.Engine) {
	srv := startServer(t, Config{Tokens: 1000, DelayMs: 5, Engine: e})
	head, body := chatRequest(`{"model":"x","stream":true,"pi_tokens":30,"pi_delay_ms":0.2}`)
	resp := exchange(t, srv, head+body)
	h, b := splitResponse(t, resp)
	if h != streamHead {
		t.Errorf("response head = %q, want %q", h, streamHead)
	}
	chunks := dechunk(t, b)
	if got, want := len(chunks), 1+30+1+1; got != want {
		t.Fatalf("%d chunks, want %d (role, 30 tokens, finish, [DONE])", got, want)
	}
	if chunks[len(chunks)-1] != "data: [DONE]\n\n" {
		t.Errorf("last event = %q, want data: [DONE]", chunks[len(chunks)-1])
	}
	var id string
	var prevTs int64
	for i, c := range chunks[:len(chunks)-1] {
		m := chunkRE.FindStringSubmatch(c)
		if m == nil {
			t.Fatalf("chunk %d = %q: not a chat.completion.chunk in the SPEC's field order", i, c)
		}
		if id == "" {
			id = m[1]
		} else if m[1] != id {
			t.Errorf("chunk %d id %s, want %s", i, m[1], id)
		}
		ts, _ := strconv.ParseInt(m[3], 10, 64)
		created, _ := strconv.ParseInt(m[2], 10, 64)
		if created != ts/1e9 {
			t.Errorf("chunk %d created=%d, want pi_ts/1e9=%d", i, created, ts/1e9)
		}
		if ts < prevTs {
			t.Errorf("chunk %d pi_ts %d before previous %d", i, ts, prevTs)
		}
		prevTs = ts
		var want, finish string
		switch {
		case i == 0:
			want, finish = `{"role":"assistant"}`, "null"
		case i == len(chunks)-2:
			want, finish = `{}`, `"stop"`
		default:
			want, finish = `{"content":"`+api.Token(i-1)+`"}`, "null"
		}
		if m[4] != want || m[5] != finish {
			t.Errorf("chunk %d delta=%s finish_reason=%s, want %s %s", i, m[4], m[5], want, finish)
		}
	}
}

func TestTokenWords(t *testing.T) {
	// letter j of token i is alphabet[(7i+13j) mod 26] (SPEC §3).
	want := []string{"anan", "huhu", "obob", "vivi", "cpcp", "jwjw", "qdqd", "xkxk", "erer", "lyly",
		"sfsf", "zmzm", "gtgt", "nana", "uhuh", "bobo", "iviv", "pcpc", "wjwj", "dqdq", "kxkx", "rere",
		"ylyl", "fsfs", "mzmz", "tgtg"}
	for i, w := range want {
		if got := api.Token(i); got != w {
			t.Errorf("Token(%d) = %q, want %q", i, got, w)
		}
	}
	if api.Token(26) != api.Token(0) {
		t.Errorf("Token(26) = %q, want the cycle to restart at %q", api.Token(26), api.Token(0))
	}
}

// TestBodyInSeparateWrite is the Caddy case: the head arrives first, the
// body in a later packet. The reference answered before the body and lost
// pi_tokens; the server must wait for Content-Length bytes.
func TestBodyInSeparateWrite(t *testing.T) {
	srv := startServer(t, Config{Tokens: 1000, DelayMs: 0.1})
	head, body := chatRequest(`{"stream":true,"pi_tokens":3}`)
	resp := exchange(t, srv, head, body[:5], body[5:])
	_, b := splitResponse(t, resp)
	if got := len(dechunk(t, b)); got != 1+3+2 {
		t.Errorf("%d chunks, want %d: pi_tokens from a body sent separately was not honoured", got, 1+3+2)
	}
}

func TestChunkedRequestBody(t *testing.T) {
	srv := startServer(t, Config{Tokens: 1000, DelayMs: 0.1})
	body := `{"stream":true,"pi_tokens":2}`
	req := "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
		fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body)
	_, b := splitResponse(t, exchange(t, srv, req))
	if got := len(dechunk(t, b)); got != 1+2+2 {
		t.Errorf("%d chunks, want %d", got, 1+2+2)
	}
}

func TestNonStreaming(t *testing.T) {
	srv := startServer(t, Config{Tokens: 1000, DelayMs: 0.01})
	for _, body := range []string{`{"pi_tokens":4}`, `{"stream":false,"pi_tokens":4}`} {
		head, b := chatRequest(body)
		h, rb := splitResponse(t, exchange(t, srv, head+b))
		if !strings.HasPrefix(h, "HTTP/1.1 200 OK\r\n") || !strings.Contains(h, "Content-Type: application/json\r\n") {
			t.Fatalf("%s: head %q", body, h)
		}
		var got struct {
			Object  string
			Model   string
			Choices []struct {
				Message      struct{ Role, Content string }
				FinishReason string `json:"finish_reason"`
			}
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		if err := json.Unmarshal([]byte(rb), &got); err != nil {
			t.Fatalf("%s: body %q: %v", body, rb, err)
		}
		want := api.Token(0) + api.Token(1) + api.Token(2) + api.Token(3)
		if got.Object != "chat.completion" || len(got.Choices) != 1 || got.Choices[0].Message.Content != want ||
			got.Choices[0].FinishReason != "stop" || got.Usage.CompletionTokens != 4 || got.Model != api.Model {
			t.Errorf("%s: got %+v, want a chat.completion with content %q", body, got, want)
		}
	}
}

func TestRouting(t *testing.T) {
	srv := startServer(t, Config{Tokens: 1, DelayMs: 1})
	tests := []struct {
		req        string
		wantStatus string
		wantBody   string
	}{
		{"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n", "200 OK", `"id":"sse-latency-1"`},
		{"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", "404 Not Found", `unknown path /nope`},
		{"POST /v2/other HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", "404 Not Found", `"error":{"message"`},
		{"GET /v1/chat/completions HTTP/1.1\r\nHost: x\r\n\r\n", "405 Method Not Allowed", `use POST`},
		{"DELETE /v1/models HTTP/1.1\r\nHost: x\r\n\r\n", "405 Method Not Allowed", `use GET`},
		{"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n{nope", "400 Bad Request", `invalid JSON body`},
		{"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 22\r\n\r\n{\"pi_tokens\":\"many\"}  ", "400 Bad Request", `pi_tokens must be a number`},
		{"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(MaxBodyBytes+1) + "\r\n\r\n", "413 Content Too Large", `larger than the limit`},
		{"BROKEN\r\n\r\n", "400 Bad Request", `malformed request head`},
	}
	for _, tt := range tests {
		resp := exchange(t, srv, tt.req)
		h, b := splitResponse(t, resp)
		if !strings.HasPrefix(h, "HTTP/1.1 "+tt.wantStatus+"\r\n") {
			t.Errorf("%q: status line of %q, want %s", tt.req, h, tt.wantStatus)
			continue
		}
		if !strings.Contains(b, tt.wantBody) {
			t.Errorf("%q: body %q, want it to contain %q", tt.req, b, tt.wantBody)
		}
		if !json.Valid([]byte(b)) {
			t.Errorf("%q: body %q is not JSON", tt.req, b)
		}
	}
}

func TestShutdownEndsStreams(t *testing.T) { forEngines(t, testShutdownEndsStreams) }

func testShutdownEndsStreams(t *testing.T, e evloop.Engine) {
	srv, stop := runServer(t, Config{Tokens: 1000, ThinkMs: 60_000, DelayMs: 5, Engine: e})
	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	head, body := chatRequest(`{"stream":true}`)
	io.WriteString(c, head+body)
	buf := make([]byte, 4096)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(buf); err != nil { // the role chunk
		t.Fatal(err)
	}
	stop("while a stream waited for its 60 s think time")
}

func TestLatenessRecorded(t *testing.T) { forEngines(t, testLatenessRecorded) }

func testLatenessRecorded(t *testing.T, e evloop.Engine) {
	srv := startServer(t, Config{Tokens: 1000, DelayMs: 0.5, Engine: e})
	head, body := chatRequest(`{"stream":true,"pi_tokens":20}`)
	exchange(t, srv, head+body)
	if got := srv.Lateness().N(); got != 20 {
		t.Errorf("Lateness().N() = %d, want one sample per emitted token (20)", got)
	}
}
