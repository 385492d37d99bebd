package server

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/quic-go/quic-go/http3"

	"github.com/sse-latency/sse-latency/internal/testutil"
)

// TestHTTP3NeedsTLS: without TLS there is no HTTP/3 to serve.
func TestHTTP3NeedsTLS(t *testing.T) {
	srv := New(testutil.Listen(t), Config{})
	if err := srv.UseHTTP3(testutil.ListenUDP(t)); err == nil || !strings.Contains(err.Error(), "needs TLS") {
		t.Errorf("UseHTTP3 without TLS: %v, want it refused", err)
	}
	if _, err := srv.ListenHTTP3(); err == nil {
		t.Errorf("ListenHTTP3 without TLS: no error")
	}
}

// TestHTTP3StreamAndStop: an HTTP/3 request gets the chat stream, each
// event its own write, with the request's protocol HTTP/3; Serve stops
// with a stream still open (a long answer the client is reading), and
// returns (testutil.Serve's stop fails the test otherwise).
func TestHTTP3StreamAndStop(t *testing.T) {
	tc, _, err := SelfSignedTLS("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	srv := New(testutil.Listen(t), Config{TLS: tc, DelayMs: 1})
	addr, err := srv.ListenHTTP3()
	if err != nil {
		t.Fatal(err)
	}
	if addr.String() != srv.Addr().String() {
		t.Errorf("HTTP/3 on %s, want the TCP listener's address %s", addr, srv.Addr())
	}
	stop := testutil.Serve(t, srv)
	tr := &http3.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	defer tr.Close()
	c := &http.Client{Transport: tr}
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}],"pi_tokens":100000}`
	req, _ := http.NewRequestWithContext(context.Background(), "POST", "https://"+addr.String()+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Proto != "HTTP/3.0" || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, proto %s, type %q; want a 200 event stream over HTTP/3", resp.StatusCode, resp.Proto, resp.Header.Get("Content-Type"))
	}
	buf := make([]byte, 4096)
	var got strings.Builder
	for !strings.Contains(got.String(), `"content":"`) {
		n, err := resp.Body.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			t.Fatalf("reading the stream: %v after %q", err, got.String())
		}
	}
	stop("with an HTTP/3 stream open")
	if _, err := io.Copy(io.Discard, resp.Body); err == nil {
		t.Errorf("the stream ended cleanly after the server stopped, want it cut")
	}
}
