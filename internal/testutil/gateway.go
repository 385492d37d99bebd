package testutil

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// GatewayOptions shape a Gateway; the zero GatewayOptions is a plain
// gateway on 127.0.0.1.
type GatewayOptions struct {
	// Listener, when set, is the gateway's listener (it closes it when the
	// test ends); else it listens on 127.0.0.1:0.
	Listener net.Listener
	// Dial, when set, makes its connections to the upstream.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Hold is how long it holds each request before forwarding it: the
	// gateway's own work on the request path (authentication, routing, a
	// body read whole).
	Hold time.Duration
	// OnRequest sees the number of each request (from 1) as it arrives,
	// before the hold.
	OnRequest func(n int64)
	// Strip removes from every event the dummy server's pi_ts and
	// pi_instance fields, and its X-SSE-Latency-Instance head field: a
	// gateway that rebuilds the events, so that the client must measure
	// by content and find the replica by the request's id.
	Strip bool
	// RewriteEvent, when set, rewrites the payload of every SSE data line
	// of the responses (a gateway that re-serialises events: one that
	// rewrites their usage, say); it returns the new payload.
	RewriteEvent func(payload []byte) []byte
}

// Gateway is a running in-process gateway, for the tests that measure
// through one (StartGateway): an httputil.ReverseProxy that flushes every
// event (an SSE-friendly gateway), whose upstream may be set after it
// started — from the line a run prints when its server listens — and
// which can hold each request before forwarding it, count the requests,
// and live in another network namespace (its listener and upstream
// connections made by the caller), balance its requests round-robin over
// several upstreams (server replicas), and strip the emission stamps and
// instance ids the dummy server sends (a gateway that rebuilds the events).
type Gateway struct {
	Addr string // where it listens

	n     atomic.Int64
	once  sync.Once
	ready chan struct{} // closed when the upstream is known
	ups   []*url.URL    // the upstreams, taken in turn
	next  atomic.Int64  // the requests forwarded
}

// StartGateway starts a gateway for the duration of the test. A request waits
// for the upstream (SetUpstream) before it is forwarded.
func StartGateway(t testing.TB, o GatewayOptions) *Gateway {
	t.Helper()
	g := &Gateway{ready: make(chan struct{})}
	ln := o.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	g.Addr = ln.Addr().String()
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(g.ups[int(g.next.Add(1)-1)%len(g.ups)])
		},
		FlushInterval: -1, // flush every event
	}
	if o.Strip || o.RewriteEvent != nil {
		rp.ModifyResponse = func(resp *http.Response) error {
			if o.Strip {
				resp.Header.Del(instanceHeader)
				resp.Body = &stripReader{body: resp.Body, br: bufio.NewReader(resp.Body)}
			}
			if o.RewriteEvent != nil {
				resp.Body = &eventRewriter{src: bufio.NewReaderSize(resp.Body, 64<<10), body: resp.Body, rewrite: o.RewriteEvent}
				resp.Header.Del("Content-Length")
				resp.ContentLength = -1
			}
			return nil
		}
	}
	if o.Dial != nil {
		rp.Transport = &http.Transport{DialContext: o.Dial}
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := g.n.Add(1)
		if o.OnRequest != nil {
			o.OnRequest(n)
		}
		select {
		case <-g.ready:
		case <-r.Context().Done():
			return
		}
		if o.Hold > 0 {
			time.Sleep(o.Hold) // the behaviour under test, not an ordering
		}
		// Stream the answer while the request body is still open, or Go's
		// server may close the upstream connection mid-stream (what
		// testutil.FullDuplex does for the tests' other gateways; this
		// package is not a _test.go file, which alone may import testutil).
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		rp.ServeHTTP(w, r)
	})}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return g
}

// SetUpstream sets the server the gateway forwards to (the first call
// wins).
func (g *Gateway) SetUpstream(addr string) { g.SetUpstreams(addr) }

// SetUpstreams sets the servers the gateway forwards to, each request to
// the next in turn (round-robin, as a load balancer across replicas); the
// first call wins.
func (g *Gateway) SetUpstreams(addrs ...string) {
	g.once.Do(func() {
		for _, a := range addrs {
			g.ups = append(g.ups, &url.URL{Scheme: "http", Host: a})
		}
		close(g.ready)
	})
}

// instanceHeader is api.InstanceHeader (this package imports none of the
// tool's).
const instanceHeader = "X-SSE-Latency-Instance"

// stamps are what Strip removes from an event: the dummy server's fields,
// each after a comma (neither is ever an object's first field).
var stamps = regexp.MustCompile(`,"pi_ts":\d+|,"pi_instance":"[^"]*"`)

// stripReader hands on a response body a line at a time, each without
// stamps: a line is an SSE line, and the proxy flushes after every Read.
type stripReader struct {
	body    io.ReadCloser
	br      *bufio.Reader
	pending []byte
}

func (s *stripReader) Read(p []byte) (int, error) {
	if len(s.pending) == 0 {
		line, err := s.br.ReadBytes('\n')
		if len(line) == 0 {
			return 0, err
		}
		s.pending = stamps.ReplaceAll(line, nil)
	}
	n := copy(p, s.pending)
	s.pending = s.pending[n:]
	return n, nil
}

func (s *stripReader) Close() error { return s.body.Close() }

// Listening finds where a run's server listens in its stderr.
var Listening = regexp.MustCompile(`listening on (\S+) `)

// UpstreamFrom sets the upstream from text when it is the line a run
// prints once its server listens, and reports whether it was.
func (g *Gateway) UpstreamFrom(text string) bool {
	m := Listening.FindStringSubmatch(text)
	if m != nil {
		g.SetUpstream(m[1])
	}
	return m != nil
}

// Requests returns the number of requests received so far.
func (g *Gateway) Requests() int64 { return g.n.Load() }

// eventRewriter is a response body that rewrites the payload of each SSE
// data line as it passes, one line per Read (the proxy flushes each).
type eventRewriter struct {
	src     *bufio.Reader
	body    io.Closer
	rewrite func([]byte) []byte
	out     []byte
	partial bool // the last line read was cut by the buffer: its rest is not rewritten
}

func (e *eventRewriter) Read(p []byte) (int, error) {
	for len(e.out) == 0 {
		line, err := e.src.ReadSlice('\n')
		whole := !e.partial
		e.partial = err == bufio.ErrBufferFull
		if payload, ok := bytes.CutPrefix(line, []byte("data: ")); ok && whole && !e.partial {
			payload = bytes.TrimRight(payload, "\r\n")
			line = append(append([]byte("data: "), e.rewrite(bytes.Clone(payload))...), '\n')
		}
		e.out = append(e.out[:0], line...)
		if err != nil && err != bufio.ErrBufferFull && len(e.out) == 0 {
			return 0, err
		}
	}
	n := copy(p, e.out)
	e.out = e.out[n:]
	return n, nil
}

func (e *eventRewriter) Close() error { return e.body.Close() }
