package client

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/server"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// ourServer starts the dummy server with an emission registry.
func ourServer(t *testing.T) (addr string, reg *emission.Registry) {
	t.Helper()
	return phaseServer(t, api.ReasoningContent)
}

// strippingProxy is a gateway that re-serialises nothing but removes every
// pi_ts from the events, the way one that drops unknown fields would.
func strippingProxy(t *testing.T, backend string) string {
	t.Helper()
	return eventGateway(t, backend, stripPiTs)
}

// proxyServer serves an in-process gateway, in full duplex as a proxy
// needs (testutil.FullDuplex), and returns its address.
func proxyServer(t *testing.T, h http.Handler) string {
	t.Helper()
	gw := httptest.NewServer(testutil.FullDuplex(h))
	t.Cleanup(gw.Close)
	return gw.Listener.Addr().String()
}

var piTsField = regexp.MustCompile(`,"pi_ts":[0-9]+|"pi_ts":[0-9]+,`)

// stripPiTs passes an event on without its pi_ts.
func stripPiTs(ev sseEv) []sseEv {
	ev.data = piTsField.ReplaceAllString(ev.data, "")
	return []sseEv{ev}
}

// TestAgainstOurServer runs every dialect against the dummy server, then
// through a gateway that strips pi_ts: the first measures every token by
// pi_ts, the second every token by content, through the registry.
func TestAgainstOurServer(t *testing.T) {
	const n = 25
	addr, reg := ourServer(t)
	gw := strippingProxy(t, addr)
	for _, d := range api.Dialects {
		for _, via := range []struct {
			name             string
			addr             string
			byPiTs, byContnt int
		}{{"direct", addr, n, 0}, {"stripping gateway", gw, 0, n}} {
			t.Run(d.String()+"/"+via.name, func(t *testing.T) {
				q := New(Options{Dialect: d, Addr: via.addr, Tokens: n, ExpectTokens: n, IncludeUsage: true,
					Timeout: 10 * time.Second, Registry: reg, IDPrefix: "srv"})
				rec := &result.Request{Batch: "gw", Index: 1}
				q.Do(context.Background(), rec)
				if !rec.OK() || len(rec.Tokens) != n {
					t.Fatalf("failure %q, %d tokens; want ok with %d tokens", rec.Failure.Error(), len(rec.Tokens), n)
				}
				if rec.ByPiTs != via.byPiTs || rec.ByContent != via.byContnt {
					t.Errorf("%d tokens by pi_ts, %d by content; want %d, %d", rec.ByPiTs, rec.ByContent, via.byPiTs, via.byContnt)
				}
				for i, tok := range rec.Tokens {
					if index := rec.TokenIndex(i); int(index) != i || tok.Emitted <= 0 || tok.Arrived < tok.Emitted || tok.Arrived < rec.Sent {
						t.Errorf("token %d: index %d, emitted %d, arrived %d, sent %d: want index %d and sent, emitted <= arrived",
							i, index, tok.Emitted, tok.Arrived, rec.Sent, i)
					}
				}
			})
		}
	}
	if reg.Len() != 0 {
		t.Errorf("the registry holds %d entries after every request took its own", reg.Len())
	}
}

// splitData passes an event on with its JSON payload over two data lines,
// cut after its first comma: valid SSE, whose joined data is the same
// JSON with a line feed between two of its tokens.
func splitData(ev sseEv) []sseEv {
	if i := strings.IndexByte(ev.data, ','); i > 0 && ev.data[0] == '{' {
		ev.data = ev.data[:i+1] + "\n" + ev.data[i+1:]
	}
	return []sseEv{ev}
}

// TestMultiLineDataThroughRelay: through a relay that writes each JSON
// payload over two data lines, every token is measured by its pi_ts, the
// events are as many as straight from the server, and the record says
// they came on several data lines; in every dialect.
func TestMultiLineDataThroughRelay(t *testing.T) {
	const n = 25
	addr, reg := ourServer(t)
	gw := eventGateway(t, addr, splitData)
	for _, d := range api.Dialects {
		t.Run(d.String(), func(t *testing.T) {
			var recs [2]*result.Request
			for i, target := range []string{addr, gw} {
				q := New(Options{Dialect: d, Addr: target, Tokens: n, ExpectTokens: n, IncludeUsage: true,
					Timeout: 10 * time.Second, Registry: reg, IDPrefix: "split"})
				recs[i] = &result.Request{Batch: "gw", Index: i}
				q.Do(context.Background(), recs[i])
			}
			direct, relayed := recs[0], recs[1]
			if !direct.OK() || !direct.Framing.Plain() {
				t.Fatalf("straight from the server: %q, framing %+v", direct.Failure.Error(), direct.Framing)
			}
			// The events left on one line: [DONE] is no JSON; Anthropic's
			// ping and message_stop have no comma to cut after.
			json := relayed.Events - map[api.Dialect]int{api.Chat: 1, api.Completions: 1, api.Anthropic: 2}[d]
			if !relayed.OK() || len(relayed.Tokens) != n || relayed.ByPiTs != n || relayed.Events != direct.Events ||
				relayed.Framing != (result.Framing{MultiLineEvents: json}) {
				t.Errorf("through the relay: %q, %d tokens, %d by pi_ts, %d events, framing %+v; "+
					"want ok, %d tokens all by pi_ts, %d events (as direct), %d of several data lines",
					relayed.Failure.Error(), len(relayed.Tokens), relayed.ByPiTs, relayed.Events, relayed.Framing, n, direct.Events, json)
			}
		})
	}
}

// TestPromptMarkerSurvives: a gateway that rebuilds the request JSON and
// drops the pi_* fields and the header still leaves the prompt; the server
// reads the hints from it, and the client measures by content.
func TestPromptMarkerSurvives(t *testing.T) {
	addr, reg := ourServer(t)
	u, _ := url.Parse("http://" + addr)
	p := &httputil.ReverseProxy{FlushInterval: -1, Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(u)
		r := pr.Out
		r.Header.Del(api.HintHeader)
		body, _ := io.ReadAll(r.Body)
		body = regexp.MustCompile(`,"pi_[a-z]+":("[^"]*"|[0-9]+)`).ReplaceAll(body, nil)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}}
	p.ModifyResponse = func(r *http.Response) error {
		r.Body = &eventRewriter{rc: r.Body, rewrite: stripPiTs}
		return nil
	}
	gw := proxyServer(t, p)
	const n = 7
	rec := &result.Request{Batch: "gw"}
	New(Options{Addr: gw, Tokens: n, ExpectTokens: n, Timeout: 10 * time.Second,
		Registry: reg, IDPrefix: "mk"}).Do(context.Background(), rec)
	if !rec.OK() || len(rec.Tokens) != n || rec.ByContent != n {
		t.Errorf("%q, %d tokens, %d by content; want ok with %d tokens, all by content", rec.Failure.Error(), len(rec.Tokens), rec.ByContent, n)
	}
}

// TestKeepAliveAgainstOurServer: through the dummy server directly and
// through an httputil gateway, a keep-alive session carries all its
// requests on one connection, each drained to its last chunk.
func TestKeepAliveAgainstOurServer(t *testing.T) {
	const n = 5
	addr, reg := ourServer(t)
	gw := strippingProxy(t, addr)
	for _, d := range api.Dialects {
		for _, via := range []struct{ name, addr string }{{"direct", addr}, {"gateway", gw}} {
			// The drain may last up to -w: a busy machine's pause before
			// the last chunk must not cost the connection.
			q := New(Options{Dialect: d, Addr: via.addr, Tokens: n, ExpectTokens: n, IncludeUsage: true,
				Timeout: 10 * time.Second, DrainTimeout: 10 * time.Second, Registry: reg, IDPrefix: "ka", KeepAlive: true})
			s := q.NewSession()
			for i := range 3 {
				rec := &result.Request{Batch: "gw", Index: i}
				s.Do(context.Background(), rec)
				if !rec.OK() || len(rec.Tokens) != n || rec.Reused != (i > 0) || rec.ConnID != 1 || rec.ReuseFailed || rec.Poisoned {
					t.Errorf("%s/%s request %d: %q, %d tokens, conn %d, reused %v, reuse failed %v, poisoned %v; want ok with %d tokens on connection 1",
						d, via.name, i, rec.Failure.Error(), len(rec.Tokens), rec.ConnID, rec.Reused, rec.ReuseFailed, rec.Poisoned, n)
				}
			}
			s.Close()
		}
	}
	if reg.Len() != 0 {
		t.Errorf("the registry holds %d entries after every request took its own", reg.Len())
	}
}

// TestH2LargeBodyAgainstOurServer: over h2c, requests whose bodies are
// the largest prompt and its JSON (past the server's connection credit,
// h2ConnCredit, and more than the loopback socket buffers take at once)
// reach the dummy server whole and stream their tokens, on a fresh
// connection and on a reused one. The client's writer goes from writing
// (the connect) to reading (the preface out) to writing (the body, once
// the server's SETTINGS open the windows) to reading: on the uring
// engine the loop once never reported the socket writable again, and
// the request timed out with its body half sent.
func TestH2LargeBodyAgainstOurServer(t *testing.T) {
	const n = 2
	addr, reg := serveWith(t, server.Config{Tokens: n, DelayMs: 0.2, HTTP2: true})
	for _, tt := range []struct {
		name      string
		keepAlive bool
		requests  int
	}{{"fresh connection", false, 1}, {"one kept-alive connection", true, 3}} {
		t.Run(tt.name, func(t *testing.T) {
			q := New(Options{Dialect: api.Chat, Addr: addr, H2C: true, KeepAlive: tt.keepAlive, PromptBytes: api.MaxPromptBytes,
				Tokens: n, ExpectTokens: n, Timeout: testutil.AwaitBound, Registry: reg, IDPrefix: "big"})
			s := q.NewSession()
			defer s.Close()
			for i := range tt.requests {
				rec := &result.Request{Batch: "gw", Index: i}
				s.Do(context.Background(), rec)
				if !rec.OK() || len(rec.Tokens) != n || rec.PromptBytes != api.MaxPromptBytes || (tt.keepAlive && rec.ConnID != 1) {
					t.Fatalf("request %d: %q, %d tokens, prompt %d bytes, connection %d; want ok with %d tokens, a prompt of %d bytes (on connection 1 kept alive)",
						i, rec.Failure.Error(), len(rec.Tokens), rec.PromptBytes, rec.ConnID, n, api.MaxPromptBytes)
				}
			}
		})
	}
}
