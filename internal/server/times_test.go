package server

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// TestRequestArrival checks that a stream's registry entry holds when the
// server had read the whole request — after the client began sending it,
// before the first token left — over HTTP/1.1 (the body sent in a second
// write, once the server has read the head, so that the arrival is the
// body's) and HTTP/2, and that a stream that ended normally has no
// departure.
func TestRequestArrival(t *testing.T) {
	reg := emission.New()
	srv := startServer(t, Config{Tokens: 3, DelayMs: 0.1, Emissions: reg, HTTP2: true})
	body := `{"stream":true,"pi_id":"arrival-h1","pi_tokens":3}`
	raw := postRequest("/v1/chat/completions", body)
	head := raw[:len(raw)-len(body)]
	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	send(t, c, head)
	awaitRead(t, c)
	before := clock.Real.Now() // the body is sent after this
	send(t, c, body)
	resp, err := readResponse(bufio.NewReader(c))
	if err != nil {
		t.Fatalf("reading response: %v (got %q)", err, resp)
	}
	if !strings.Contains(resp, "[DONE]") {
		t.Fatalf("stream did not end with [DONE]: %q", resp)
	}
	checkArrival(t, "HTTP/1.1", reg.Lookup("arrival-h1"), before)

	h := h2Setup{srv: srv, base: "http://" + srv.Addr().String()}
	h.client, _ = h2Client(t, nil)
	before = clock.Real.Now()
	if r, _ := h.post(t, "/v1/responses", `{"stream":true,"pi_id":"arrival-h2","pi_tokens":3}`); r.StatusCode != 200 {
		t.Fatalf("h2c stream: %s", r.Status)
	}
	checkArrival(t, "h2c", reg.Lookup("arrival-h2"), before)
}

// checkArrival checks that tm's arrival is at or after notBefore and at or
// before its first token's emission, and that it has no departure.
func checkArrival(t *testing.T, what string, tm *emission.Times, notBefore int64) {
	t.Helper()
	if tm == nil {
		t.Fatalf("%s: no registry entry", what)
	}
	if a, first := tm.Arrived(), tm.At(0); a < notBefore || first == 0 || a > first {
		t.Errorf("%s: request arrived at %d, want from %d (the last byte sent) to %d (the first token's emission)", what, a, notBefore, first)
	}
	if g := tm.GoneAt(); g != 0 {
		t.Errorf("%s: a complete stream has its client gone at %d, want 0", what, g)
	}
}

// TestClientGone checks that a stream whose client goes away records when
// the server found it gone, over HTTP/1.1 and HTTP/2: after the client
// closed, and with the entry finished.
func TestClientGone(t *testing.T) {
	reg := emission.New()
	srv := startServer(t, Config{Tokens: 3, DelayMs: 1, Emissions: reg, HTTP2: true})

	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	send(t, c, postRequest("/v1/chat/completions", `{"stream":true,"pi_id":"gone-h1","pi_tokens":100000}`))
	if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
		t.Fatalf("reading the status line: %v", err)
	}
	closed := clock.Real.Now()
	c.Close()
	testutil.Await(t, "the HTTP/1.1 stream to find its client gone", func() bool { return reg.Lookup("gone-h1").GoneAt() != 0 })
	checkGone(t, "HTTP/1.1", reg.Lookup("gone-h1"), closed)

	client, _ := h2Client(t, nil)
	resp, err := client.Post("http://"+srv.Addr().String()+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"stream":true,"pi_id":"gone-h2","pi_tokens":100000}`))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("h2c stream: %s", resp.Status)
	}
	testutil.Await(t, "the h2c stream's entry", func() bool { return reg.Lookup("gone-h2") != nil })
	closed = clock.Real.Now()
	resp.Body.Close() // resets the stream
	testutil.Await(t, "the h2c stream to find its client gone", func() bool { return reg.Lookup("gone-h2").GoneAt() != 0 })
	checkGone(t, "h2c", reg.Lookup("gone-h2"), closed)
}

// checkGone checks that tm's client was found gone at or after closed, and
// that the entry is finished.
func checkGone(t *testing.T, what string, tm *emission.Times, closed int64) {
	t.Helper()
	if g := tm.GoneAt(); g < closed || !tm.Finished() {
		t.Errorf("%s: client found gone at %d (finished %v), want at or after its close at %d, finished", what, g, tm.Finished(), closed)
	}
	if tm.Arrived() == 0 {
		t.Errorf("%s: no arrival recorded", what)
	}
}
