package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/testutil"
	"github.com/sse-latency/sse-latency/internal/wire"
)

// keepServer is a scripted HTTP/1.1 server that answers every request of a
// connection, in turn, with the steps of respond — a step without Until,
// but the last, waits until the client has read it (readInTurn), so that
// the next usually reaches it in a Read of its own — then closes the
// connection when closeAfter is set. It records every request as
// received.
type keepServer struct {
	addr string

	mu    sync.Mutex
	conns int      // connections accepted
	reqs  []string // raw requests, in arrival order
	perC  []int    // requests per connection, in accept order
}

func newKeepServer(t *testing.T, closeAfter bool, respond func(n int) []testutil.Step) *keepServer {
	t.Helper()
	ks := &keepServer{}
	ks.addr = testutil.ServeTCP(t, func(c net.Conn) {
		ks.mu.Lock()
		ci := ks.conns
		ks.conns++
		ks.perC = append(ks.perC, 0)
		ks.mu.Unlock()
		var buf []byte
		for n := 0; ; n++ {
			req, rest, ok := readRequest(c, buf)
			if !ok {
				return
			}
			buf = rest
			ks.mu.Lock()
			ks.reqs = append(ks.reqs, req)
			ks.perC[ci]++
			ks.mu.Unlock()
			if err := testutil.Play(c, readInTurn(c, respond(n))...); err != nil {
				if errors.Is(err, testutil.ErrNotReached) {
					t.Errorf("keepServer: %v", err)
				}
				return
			}
			if closeAfter {
				return
			}
		}
	})
	return ks
}

// readRequest reads one whole request (head and Content-Length body) from
// c, buf holding what was read before; it returns the request and what
// follows it.
// Once the head is in, the body is read straight into buf, grown once to
// hold it: a 16 MiB body read by 4 KiB copies into a buffer regrown as it
// goes costs seconds under -race.
func readRequest(c net.Conn, buf []byte) (req string, rest []byte, ok bool) {
	for {
		h, n, err := wire.ParseRequestHead(buf)
		if err != nil {
			return "", nil, false
		}
		end := len(buf) + 4096 // the head is not in yet: read some more
		if n > 0 {
			end = n + int(max(h.ContentLength, 0))
			if len(buf) >= end {
				return string(buf[:end]), append([]byte(nil), buf[end:]...), true
			}
		}
		buf = slices.Grow(buf, end-len(buf))
		k, err := c.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err != nil && k == 0 {
			return "", nil, false
		}
	}
}

func (ks *keepServer) stats() (conns int, perConn []int, reqs []string) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	return ks.conns, append([]int(nil), ks.perC...), append([]string(nil), ks.reqs...)
}

// keepHead is a chunked SSE response head that does not close.
const keepHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"

// keepStream is a whole chat stream of 2 tokens as one chunk, without the
// last chunk.
var keepStream = chunk(chatRole + event(100, "anan") + event(200, "huhu") + chatFinish + done)

// runSession sends n requests through one keep-alive session to addr;
// between, when set, runs before each request but the first (to await the
// state of the kept connection). Without a DrainTimeout the drain may last
// up to the request's -w: it ends at the framing end, and a busy machine's
// pause before the last piece must not end it first (cases that test the
// bound set their own).
func runSession(t *testing.T, o Options, n int, between func(s *Session)) []*result.Request {
	t.Helper()
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = o.Timeout
	}
	if o.Tokens == 0 {
		o.Tokens = -1
	}
	q := New(o)
	s := q.NewSession()
	defer s.Close()
	var recs []*result.Request
	for i := range n {
		if i > 0 && between != nil {
			between(s)
		}
		rec := &result.Request{Batch: "gw", Index: i}
		s.Do(context.Background(), rec)
		if rec.Start == 0 || rec.End < rec.Start {
			t.Errorf("request %d: Start=%d End=%d: the record's times are not filled", i, rec.Start, rec.End)
		}
		recs = append(recs, rec)
	}
	return recs
}

// awaitConn returns a between for runSession that waits until peek finds
// want on the session's kept connection.
func awaitConn(t *testing.T, want connState) func(s *Session) {
	return func(s *Session) {
		testutil.Await(t, fmt.Sprintf("peek to find the kept connection in state %d", want), func() bool {
			st, ok := s.keptState()
			return ok && st == want
		})
	}
}

// conn is a request's connection facts, for the test messages.
type conn struct {
	ok, reused, reuseFailed, poisoned bool
	id                                int64
}

func connOf(r *result.Request) conn {
	return conn{r.OK(), r.Reused, r.ReuseFailed, r.Poisoned, r.ConnID}
}

// TestKeepAliveReuse: one connection carries every request of a session,
// whether the last chunk comes with [DONE], split over three Reads ([DONE],
// then "0\r\n", then "\r\n"), with trailers, or the body has a
// Content-Length.
func TestKeepAliveReuse(t *testing.T) {
	body := chatRole + event(100, "anan") + event(200, "huhu") + chatFinish + done
	tests := []struct {
		name   string
		pieces []string
	}{
		{"last chunk with [DONE]", []string{keepHead + keepStream + wire.LastChunk}},
		{"split terminal markers", []string{keepHead + keepStream, "0\r\n", "\r\n"}},
		{"[DONE] split from its blank line", []string{keepHead + chunk(chatRole+event(100, "anan")+event(200, "huhu")+chatFinish+"data: [DONE]\n"), chunk("\n"), "0\r\n\r\n"}},
		{"trailers", []string{keepHead + keepStream, "0\r\nX-Usage: 3\r\n", "\r\n"}},
		{"late bytes inside the body", []string{keepHead + keepStream, chunk(": late comment\n\n"), "0\r\n\r\n"}},
		{"content-length", []string{"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " +
			strconv.Itoa(len(body)+2) + "\r\n\r\n" + body, "\r\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ks := newKeepServer(t, false, func(int) []testutil.Step { return pieces(tt.pieces...) })
			recs := runSession(t, Options{Addr: ks.addr, KeepAlive: true, ExpectTokens: 2}, 3, nil)
			for i, r := range recs {
				want := conn{ok: true, reused: i > 0, id: 1}
				if got := connOf(r); got != want {
					t.Errorf("request %d: %+v (%q), want %+v", i, got, r.Failure.Error(), want)
				}
				if r.Proto != ProtoHTTP1 || r.Connected == 0 != (i > 0) || r.HeadAt < r.Sent || r.Sent < r.Start ||
					len(r.Tokens) == 0 || r.Tokens[0].Arrived < r.HeadAt {
					t.Errorf("request %d: proto %q, start %d connected %d sent %d head %d: want HTTP/1.1, connected on the first only, start <= sent <= head <= first token",
						i, r.Proto, r.Start, r.Connected, r.Sent, r.HeadAt)
				}
			}
			conns, perConn, reqs := ks.stats()
			if conns != 1 || perConn[0] != 3 {
				t.Errorf("the server accepted %d connections carrying %v requests, want 1 carrying 3", conns, perConn)
			}
			q := New(Options{Addr: ks.addr, KeepAlive: true, Tokens: -1})
			for i, raw := range reqs {
				if want := string(q.AppendHTTP(nil, "")); raw != want {
					t.Errorf("request %d as received:\n%q\nwant\n%q", i, raw, want)
				}
			}
		})
	}
}

// TestKeepAliveServerCloses: a gateway that closes the kept connection
// after every response (without saying so) makes each next request a reuse
// failure, sent again on a new connection, and ok — whether the close is
// found by the idle check before the request (awaited here), or on its
// write or read (or by the idle check, if the close came in time).
func TestKeepAliveServerCloses(t *testing.T) {
	ks := newKeepServer(t, true, func(int) []testutil.Step { return pieces(keepHead+keepStream, wire.LastChunk) })
	for _, between := range []struct {
		name  string
		await func(s *Session)
	}{{"at once", nil}, {"found closed", awaitConn(t, peerClosed)}} {
		recs := runSession(t, Options{Addr: ks.addr, KeepAlive: true, ExpectTokens: 2}, 3, between.await)
		for i, r := range recs {
			want := conn{ok: true, reuseFailed: i > 0, id: recs[0].ConnID + int64(i)}
			if got := connOf(r); got != want {
				t.Errorf("%s, request %d: %+v (%q), want %+v", between.name, i, got, r.Failure.Error(), want)
			}
			if r.Connected == 0 || r.Connected < r.Start || r.Sent < r.Connected {
				t.Errorf("%s, request %d: start %d connected %d sent %d: want a new connection, start <= connected <= sent", between.name, i, r.Start, r.Connected, r.Sent)
			}
		}
	}
	if conns, _, _ := ks.stats(); conns != 6 {
		t.Errorf("the server accepted %d connections, want 6 (one per request)", conns)
	}
}

// TestKeepAliveNotKept: a connection is closed, not reused, after a
// response that announced its close (not a failure), and after one that
// poisoned it: bytes after the last chunk (at once, or arriving while the
// connection was idle), no framing at all, a last chunk that never comes.
func TestKeepAliveNotKept(t *testing.T) {
	tests := []struct {
		name     string
		pieces   []string
		later    bool    // the second piece comes once the client has its 2 tokens, and before the next request
		poisoned [2]bool // on the first request, on the second
		drain    time.Duration
	}{
		{"Connection: close", []string{sseHead + "Transfer-Encoding: chunked\r\n\r\n" + keepStream + wire.LastChunk}, false, [2]bool{}, 0},
		{"bytes after the last chunk", []string{keepHead + keepStream + wire.LastChunk + "HTTP/1.1 200 OK\r\n"}, false, [2]bool{true, true}, 0},
		{"bytes after the last chunk, later", []string{keepHead + keepStream + wire.LastChunk, "\r\n"}, true, [2]bool{false, true}, 0},
		{"no framing", []string{"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + chatRole + event(1, "anan") + event(2, "huhu") + chatFinish + done}, false, [2]bool{true, true}, 0},
		{"no last chunk", []string{keepHead + keepStream}, false, [2]bool{true, true}, 50 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var received atomic.Int64
			var between func(s *Session)
			ks := newKeepServer(t, false, func(n int) []testutil.Step {
				steps := pieces(tt.pieces...)
				if tt.later {
					// After the Read that brought this request's 2 tokens
					// (the client counted those before it: it sends a
					// request once the one before has ended): the response
					// is complete in that Read, so the rest comes while the
					// connection is idle.
					want := received.Load() + 2
					steps[0].Until = func() bool { return received.Load() >= want }
				}
				return steps
			})
			if tt.later {
				between = awaitConn(t, pending)
			}
			recs := runSession(t, Options{Addr: ks.addr, KeepAlive: true, ExpectTokens: 2, DrainTimeout: tt.drain, Received: &received}, 2, between)
			for i, r := range recs {
				want := conn{ok: true, poisoned: tt.poisoned[i], id: recs[0].ConnID + int64(i)}
				if got := connOf(r); got != want {
					t.Errorf("request %d: %+v (%q), want %+v", i, got, r.Failure.Error(), want)
				}
			}
			if conns, _, _ := ks.stats(); conns != 2 {
				t.Errorf("the server accepted %d connections, want 2", conns)
			}
		})
	}
}

// TestKeepAliveEndsWithoutTerminal: on a kept-alive connection the end of a
// framed body ends the request (the connection does not close to say so),
// and the connection is still reused.
func TestKeepAliveEndsWithoutTerminal(t *testing.T) {
	ks := newKeepServer(t, false, func(n int) []testutil.Step {
		if n == 0 {
			return pieces(keepHead+chunk(chatRole+event(1, "anan")), wire.LastChunk)
		}
		return pieces(keepHead + keepStream + wire.LastChunk)
	})
	recs := runSession(t, Options{Addr: ks.addr, KeepAlive: true, ExpectTokens: 2, Timeout: time.Hour}, 2, nil)
	if got := recs[0].Failure.Error(); got != "connection closed before [DONE]" {
		t.Errorf("a body that ended before [DONE]: %q, want connection closed before [DONE]", got)
	}
	if got := connOf(recs[1]); got != (conn{ok: true, reused: true, id: recs[0].ConnID}) {
		t.Errorf("the next request: %+v, want ok on the same connection", got)
	}
}

// TestNoKeepAlive: without KeepAlive every request of a session has a
// connection of its own, and sends the reference's bytes.
func TestNoKeepAlive(t *testing.T) {
	ks := newKeepServer(t, false, func(int) []testutil.Step { return pieces(keepHead + keepStream + wire.LastChunk) })
	recs := runSession(t, Options{Addr: ks.addr, ExpectTokens: 2}, 2, nil)
	for i, r := range recs {
		if got, want := connOf(r), (conn{ok: true, id: int64(i + 1)}); got != want {
			t.Errorf("request %d: %+v, want %+v", i, got, want)
		}
	}
	conns, _, reqs := ks.stats()
	want := "POST /v1/chat/completions HTTP/1.1\r\nHost: " + ks.addr + "\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n" +
		"Content-Length: 99\r\nConnection: close\r\n\r\n" +
		`{"model":"sse-latency-1","stream":true,"messages":[{"role":"user","content":"Say 4-letter words"}]}`
	if conns != 2 || len(reqs) != 2 || reqs[0] != want {
		t.Errorf("%d connections, requests %q; want 2, each\n%q", conns, reqs, want)
	}
}

// TestAPIKeyHeaders: the key travels as Authorization: Bearer, or
// x-api-key to Anthropic.
func TestAPIKeyHeaders(t *testing.T) {
	const key = "sk-secret-0123456789"
	for _, tt := range []struct {
		d    api.Dialect
		want string
	}{{api.Chat, "\r\nAuthorization: Bearer " + key + "\r\n"}, {api.Anthropic, "\r\nx-api-key: " + key + "\r\n"}} {
		ks := newKeepServer(t, false, func(int) []testutil.Step { return pieces("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n") })
		recs := runSession(t, Options{Dialect: tt.d, Addr: ks.addr, APIKey: key}, 1, nil)
		_, _, reqs := ks.stats()
		if len(reqs) != 1 || !strings.Contains(reqs[0], tt.want) {
			t.Errorf("%s: the server got %q, want a request with %q", tt.d, reqs, tt.want)
		}
		if strings.Count(strings.Join(reqs, ""), key) != 1 {
			t.Errorf("%s: the key appears other than once in the request", tt.d)
		}
		if got := recs[0].Failure.Error(); got != "status HTTP/1.1 401 Unauthorized" {
			t.Errorf("%s: failure %q, want status HTTP/1.1 401 Unauthorized", tt.d, got)
		}
	}
}

// TestKeepAliveGzip: a gzip-encoded chunked body drains to its last chunk
// like any other.
func TestKeepAliveGzip(t *testing.T) {
	z := gzipStream(t, chatRole+event(1, "anan"), event(2, "huhu"), chatFinish+done)
	head := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
	ks := newKeepServer(t, false, func(int) []testutil.Step {
		return pieces(head+chunk(z[0]), chunk(z[1]), chunk(z[2]), wire.LastChunk)
	})
	recs := runSession(t, Options{Addr: ks.addr, KeepAlive: true, ExpectTokens: 2}, 2, nil)
	for i, r := range recs {
		if got, want := connOf(r), (conn{ok: true, reused: i > 0, id: 1}); got != want {
			t.Errorf("request %d: %+v (%q), want %+v", i, got, r.Failure.Error(), want)
		}
	}
}
