package client

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	h3qlog "github.com/quic-go/quic-go/http3/qlog"
	"github.com/quic-go/quic-go/qlogwriter"
	"github.com/quic-go/quic-go/quicvarint"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/server"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// h3Server runs the dummy server with TLS (a self-signed certificate) and
// HTTP/3 on a bound UDP socket until the test ends, and returns the UDP
// address.
func h3Server(t *testing.T, cfg server.Config) string {
	t.Helper()
	tc, _, err := server.SelfSignedTLS("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLS = tc
	srv := server.New(testutil.Listen(t), cfg)
	pc := testutil.ListenUDP(t)
	if err := srv.UseHTTP3(pc); err != nil {
		t.Fatal(err)
	}
	testutil.Serve(t, srv)
	return pc.LocalAddr().String()
}

// h3Options are the options of an HTTP/3 request to addr, trusting any
// certificate.
func h3Options(addr string, d api.Dialect, n int) Options {
	return Options{Dialect: d, Addr: addr, Scheme: "https", TLS: &tls.Config{InsecureSkipVerify: true}, HTTP3: true,
		Tokens: n, ExpectTokens: n, IncludeUsage: true, Timeout: 20 * time.Second, DrainTimeout: 10 * time.Second, KeepAlive: true}
}

// TestH3AgainstOurServer: every dialect over HTTP/3 to the dummy server,
// three requests per session: every token arrives with its emission time
// (pi_ts) and an arrival no earlier, the requests are streams on one QUIC
// connection (reused, one ConnID), the phases are timed.
func TestH3AgainstOurServer(t *testing.T) {
	const n = 12
	reg := emission.New()
	addr := h3Server(t, server.Config{Tokens: 1, DelayMs: 0.2, Emissions: reg})
	for _, d := range api.Dialects {
		o := h3Options(addr, d, n)
		o.Registry, o.IDPrefix = reg, "h3"
		q := New(o)
		s := q.NewSession()
		var conn int64
		for i := range 3 {
			rec := &result.Request{Batch: "gw", Index: i}
			s.Do(context.Background(), rec)
			if i == 0 {
				conn = rec.ConnID
			}
			if !rec.OK() || len(rec.Tokens) != n || rec.Proto != ProtoH3 || rec.Reused != (i > 0) || rec.ConnID != conn || rec.ReuseFailed {
				t.Fatalf("%s request %d: %q, %d tokens, proto %q, conn %d (first %d), reused %v; want ok, %d tokens over h3 on one connection",
					d, i, rec.Failure.Error(), len(rec.Tokens), rec.Proto, rec.ConnID, conn, rec.Reused, n)
			}
			if i == 0 && (rec.Connected == 0 || rec.TLSDone != rec.Connected || rec.Connected < rec.Start) {
				t.Errorf("%s: connected %d, TLS done %d, start %d: want the handshake's end after the start", d, rec.Connected, rec.TLSDone, rec.Start)
			}
			if rec.Sent == 0 || rec.HeadAt < rec.Sent {
				t.Errorf("%s request %d: sent %d, head %d", d, i, rec.Sent, rec.HeadAt)
			}
			for j, tok := range rec.Tokens {
				if tok.Emitted == 0 || tok.Arrived < tok.Emitted || tok.Arrived < rec.HeadAt {
					t.Fatalf("%s request %d token %d: emitted %d, arrived %d (head %d)", d, i, j, tok.Emitted, tok.Arrived, rec.HeadAt)
				}
			}
		}
		s.Close()
	}
}

// TestH3CutFault: the server resets a stream mid-answer (cut_after): the
// request fails naming the reset and its HTTP/3 code, and the session's
// next request goes on and succeeds. (A QUIC reset discards what the
// stream had not delivered yet: the tokens before it may or may not
// arrive, so their number is not checked.)
func TestH3CutFault(t *testing.T) {
	addr := h3Server(t, server.Config{Tokens: 1})
	o := h3Options(addr, api.Chat, 6)
	cut := New(o)
	cut.Faults = api.Faults{CutAfter: new(int64(2))}
	s := cut.NewSession()
	defer s.Close()
	rec := &result.Request{Batch: "gw"}
	s.Do(context.Background(), rec)
	if rec.Failure.Kind != result.RecvError || !strings.Contains(rec.Failure.Detail, "HTTP/3 stream reset by the peer: H3_INTERNAL_ERROR") || len(rec.Tokens) > 2 {
		t.Fatalf("cut after 2: %q with %d tokens; want a stream reset named, at most 2 tokens", rec.Failure.Error(), len(rec.Tokens))
	}
	next := New(o) // the same session, no fault
	s.q, s.base = next, next
	rec = &result.Request{Batch: "gw", Index: 1}
	s.Do(context.Background(), rec)
	if !rec.OK() || len(rec.Tokens) != 6 {
		t.Errorf("after the reset: %q with %d tokens; want ok", rec.Failure.Error(), len(rec.Tokens))
	}
}

// quicConnKey holds a request's QUIC connection in its context.
type quicConnKey struct{}

// hostileH3 serves HTTP/3 on a bound UDP socket with h, which finds the
// request's QUIC connection in its context (quicConnKey), until the test
// ends; it returns the address.
func hostileH3(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	tc := h3TestTLS(t)
	return serveH3(t, &http3.Server{Handler: h, TLSConfig: tc,
		ConnContext: func(ctx context.Context, c *quic.Conn) context.Context {
			return context.WithValue(ctx, quicConnKey{}, c)
		}})
}

// h3TestTLS is a self-signed TLS configuration for 127.0.0.1 offering
// HTTP/3 (ALPN h3), for the tests' HTTP/3 servers and raw QUIC peers.
func h3TestTLS(t *testing.T) *tls.Config {
	t.Helper()
	tc, _, err := server.SelfSignedTLS("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	tc.NextProtos = []string{http3.NextProtoH3}
	return tc
}

// serveH3 runs srv on a bound UDP socket until the test ends and returns
// its address.
func serveH3(t *testing.T, srv *http3.Server) string {
	t.Helper()
	pc := testutil.ListenUDP(t)
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(pc) }()
	t.Cleanup(func() { srv.Close(); pc.Close(); <-done })
	return pc.LocalAddr().String()
}

// TestH3ConnectionClosedMidStream: the peer sends a GOAWAY then closes the
// QUIC connection after the first token of the first request: that
// request fails naming the close, the next one finds the connection gone
// and succeeds on a new one.
func TestH3ConnectionClosedMidStream(t *testing.T) {
	const n = 4
	var requests atomic.Int64
	addr := hostileH3(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		io.WriteString(w, chatRole)
		first := requests.Add(1) == 1
		for i := range n {
			io.WriteString(w, chatTok(clock.Real.Now(), api.Token(i)))
			f.Flush()
			if first {
				c := r.Context().Value(quicConnKey{}).(*quic.Conn)
				c.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), "going away")
				return
			}
		}
		io.WriteString(w, chatFinish+done)
	})
	o := h3Options(addr, api.Chat, n)
	o.IncludeUsage = false
	s := New(o).NewSession()
	defer s.Close()
	rec := &result.Request{Batch: "gw"}
	s.Do(context.Background(), rec)
	if rec.Failure.Kind != result.RecvError || !strings.Contains(rec.Failure.Detail, "HTTP/3 connection closed by the peer: H3_NO_ERROR") {
		t.Fatalf("closed after a token: %q with %d tokens; want the close named", rec.Failure.Error(), len(rec.Tokens))
	}
	rec = &result.Request{Batch: "gw", Index: 1}
	s.Do(context.Background(), rec)
	if !rec.OK() || len(rec.Tokens) != n || rec.ConnID != 2 {
		t.Errorf("after the close: %q with %d tokens on connection %d; want ok on connection 2", rec.Failure.Error(), len(rec.Tokens), rec.ConnID)
	}
}

// TestH3HandshakeFailures: nothing answers on the UDP port (a socket that
// drops every datagram), the server offers no h3 in ALPN, the certificate
// is not trusted: each a connect failure that names it — the first within
// the request's timeout (300 ms), the other two by the peer's alert (a
// timeout of theirs would be the first case's failure, so they wait long:
// a handshake under -race on a loaded machine may take longer than 300 ms).
func TestH3HandshakeFailures(t *testing.T) {
	dropAddr, dropped := testutil.DropUDP(t)
	tc, _, err := server.SelfSignedTLS("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	tc.NextProtos = []string{"h2"}
	pc := testutil.ListenUDP(t)
	ln, err := quic.Listen(pc, tc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			if _, err := ln.Accept(context.Background()); err != nil {
				return
			}
		}
	}()
	h3Addr := h3Server(t, server.Config{Tokens: 1})
	for _, c := range []struct {
		name, addr string
		timeout    time.Duration
		verify     bool
		want       string
	}{
		{"UDP blocked", dropAddr, 300 * time.Millisecond, false, "QUIC handshake: no answer from UDP " + dropAddr + " within 300ms (UDP blocked, or no HTTP/3 server there)"},
		{"no h3 in ALPN", pc.LocalAddr().String(), time.Minute, false, "QUIC handshake: TLS: CRYPTO_ERROR 0x178"},
		{"untrusted certificate", h3Addr, time.Minute, true, "QUIC handshake: TLS: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := h3Options(c.addr, api.Chat, 3)
			o.Timeout = c.timeout
			if c.verify {
				o.TLS = &tls.Config{}
			}
			rec := &result.Request{Batch: "gw"}
			New(o).NewSession().Do(context.Background(), rec)
			if rec.Failure.Kind != result.Connect || !strings.Contains(rec.Failure.Detail, c.want) || rec.Connected != 0 {
				t.Errorf("%s: %q (connected %d); want a connect failure with %q", c.name, rec.Failure.Error(), rec.Connected, c.want)
			}
		})
	}
	if dropped.Load() == 0 {
		t.Errorf("the blocked port saw no datagram: the handshake was never tried")
	}
}

// TestH3HandshakeLimit: a peer that never answers the QUIC handshake (a
// UDP socket that reads and drops) fails the request once the handshake
// limit (h3HandshakeIdle, lowered here to 200 ms) passes, well inside the
// request's own timeout (a minute): one connect failure naming the limit.
// The wait for Do is a hang guard (AwaitBound), not a measurement.
func TestH3HandshakeLimit(t *testing.T) {
	addr, dropped := testutil.DropUDP(t)
	o := h3Options(addr, api.Chat, 3)
	o.Timeout = time.Minute
	o.h3HandshakeWait = 200 * time.Millisecond
	rec := &result.Request{Batch: "gw"}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s := New(o).NewSession()
		defer s.Close()
		s.Do(context.Background(), rec)
	}()
	select {
	case <-done:
	case <-time.After(testutil.AwaitBound):
		t.Fatalf("Do against a silent UDP port with a 200ms handshake limit still running after %v", testutil.AwaitBound)
	}
	want := "connect(): QUIC handshake: no answer from UDP " + addr + " within 200ms (UDP blocked, or no HTTP/3 server there)"
	if got := rec.Failure.Error(); rec.Failure.Kind != result.Connect || got != want || rec.Connected != 0 {
		t.Errorf("handshake limit 200ms, timeout 1m: %q (connected %d); want %q", got, rec.Connected, want)
	}
	if dropped.Load() == 0 {
		t.Errorf("the silent port saw no datagram: the handshake was never tried")
	}
}

// goAwayTrace is a qlog trace of a test's QUIC listener that closes
// created once an HTTP/3 server has made a GOAWAY frame for one of its
// connections: from then on that connection's server rejects every new
// request stream (H3_REQUEST_REJECTED), whether the client has read the
// GOAWAY yet or not. It records nothing else.
type goAwayTrace struct {
	once    sync.Once
	created chan struct{}
}

func (g *goAwayTrace) AddProducer() qlogwriter.Recorder { return g }

func (g *goAwayTrace) RecordEvent(ev qlogwriter.Event) {
	if fc, ok := ev.(h3qlog.FrameCreated); ok {
		if _, ok := fc.Frame.Frame.(h3qlog.GoAwayFrame); ok {
			g.once.Do(func() { close(g.created) })
		}
	}
}

func (g *goAwayTrace) Close() error { return nil }

// TestH3GoAwayMidRun: the gateway shuts the kept QUIC connection down
// gracefully (quic-go's http3.Server.Shutdown: a GOAWAY) while the
// session's first request streams. That request, below the GOAWAY's
// stream id, ends ok with all its tokens; the next one finds the
// connection refused — gone (the client closes it once its last stream
// ended), its GOAWAY read, or its stream rejected by the server
// (H3_REQUEST_REJECTED), whichever won — and is named a reuse failure,
// sent again on a new connection (ConnID 2) to the gateway's next
// instance; the one after reuses that. Ordered by the server's GOAWAY
// (its qlog event) and channels, no sleeps.
func TestH3GoAwayMidRun(t *testing.T) {
	const n = 4
	tc := h3TestTLS(t)
	trace := &goAwayTrace{created: make(chan struct{})}
	ln, err := quic.Listen(testutil.ListenUDP(t), tc, &quic.Config{
		Tracer: func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace { return trace }})
	if err != nil {
		t.Fatal(err)
	}
	streaming, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	handler := func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		io.WriteString(w, chatRole)
		for i := range n {
			io.WriteString(w, chatTok(clock.Real.Now(), api.Token(i)))
			f.Flush()
			if i == 0 && first.CompareAndSwap(false, true) {
				close(streaming)
				<-release
			}
		}
		io.WriteString(w, chatFinish+done)
	}
	// The first connection goes to the instance that shuts down, the
	// later ones to the next.
	old, next := &http3.Server{Handler: http.HandlerFunc(handler)}, &http3.Server{Handler: http.HandlerFunc(handler)}
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for i := 0; ; i++ {
			c, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			srv := next
			if i == 0 {
				srv = old
			}
			go srv.ServeQUICConn(c)
		}
	}()
	shut := make(chan error, 1)
	go func() {
		<-streaming
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), testutil.AwaitBound)
			defer cancel()
			shut <- old.Shutdown(ctx)
		}()
		<-trace.created
		close(release)
	}()
	t.Cleanup(func() { next.Close(); old.Close(); ln.Close(); <-accepted })

	o := h3Options(ln.Addr().String(), api.Chat, n)
	o.IncludeUsage = false
	s := New(o).NewSession()
	defer s.Close()
	want := []conn{{ok: true, id: 1}, {ok: true, reuseFailed: true, id: 2}, {ok: true, reused: true, id: 2}}
	for i, w := range want {
		rec := &result.Request{Batch: "gw", Index: i}
		s.Do(context.Background(), rec)
		if got := connOf(rec); got != w || len(rec.Tokens) != n || rec.Proto != ProtoH3 {
			t.Errorf("request %d: %+v over %q with %d tokens (%q); want %+v over h3 with %d", i, got, rec.Proto, len(rec.Tokens), rec.Failure.Error(), w, n)
		}
	}
	if err := <-shut; err != nil {
		t.Errorf("the first instance's Shutdown: %v; want it done once its connection closed", err)
	}
}

// goAwayGateway is an HTTP/3 gateway on quic-go's QUIC alone that sends
// its control stream's SETTINGS, then a GOAWAY with stream id 0 — at once
// (early), or once the client's first request stream has arrived — and
// neither answers nor resets any request stream: the GOAWAY leaves them
// out (RFC 9114 §5.2). It returns the UDP address.
func goAwayGateway(t *testing.T, early bool) string {
	t.Helper()
	tc := h3TestTLS(t)
	ln, err := quic.Listen(testutil.ListenUDP(t), tc, &quic.Config{})
	if err != nil {
		t.Fatal(err)
	}
	goAway := quicvarint.Append(quicvarint.Append(quicvarint.Append(nil, 0x7), 1), 0) // GOAWAY, length 1, stream 0
	var wg sync.WaitGroup
	serve := func(c *quic.Conn) {
		defer wg.Done()
		ctrl, err := c.OpenUniStream()
		if err != nil {
			return
		}
		ctrl.Write([]byte{0x00, 0x04, 0x00}) // the control stream, an empty SETTINGS
		if early {
			ctrl.Write(goAway)
		}
		for first := true; ; first = false {
			str, err := c.AcceptStream(context.Background())
			if err != nil {
				return
			}
			go io.Copy(io.Discard, str) // read, never answered
			if first && !early {
				ctrl.Write(goAway)
			}
		}
	}
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			wg.Add(1)
			go serve(c)
			t.Cleanup(func() { c.CloseWithError(0, "") })
		}
	}()
	t.Cleanup(func() { ln.Close(); <-accepted; wg.Wait() })
	return ln.Addr().String()
}

// TestH3GoAwayNotServed: a GOAWAY that leaves the request out — on a
// fresh connection, before any request was served on it — fails the
// request at once with a failure in the tool's words, not quic-go's
// ("connection in graceful shutdown"), and not at the request's
// timeout (5 minutes here): whether the GOAWAY came before the request
// stream was opened (quic-go opens none) or after (the stream, at the
// GOAWAY's id, would wait for an answer the gateway will not give).
func TestH3GoAwayNotServed(t *testing.T) {
	for _, early := range []bool{true, false} {
		name := map[bool]string{true: "GOAWAY before the request", false: "GOAWAY after the request stream"}[early]
		t.Run(name, func(t *testing.T) {
			addr := goAwayGateway(t, early)
			o := h3Options(addr, api.Chat, 4)
			o.Timeout = 5 * time.Minute
			s := New(o).NewSession()
			defer s.Close()
			rec := &result.Request{Batch: "gw"}
			done := make(chan struct{})
			go func() { defer close(done); s.Do(context.Background(), rec) }()
			select {
			case <-done:
			case <-time.After(testutil.AwaitBound):
				t.Fatalf("a request the GOAWAY left out still waiting after %v (its timeout is %v)", testutil.AwaitBound, o.Timeout)
			}
			want := "recv error: send: HTTP/3: the gateway sent GOAWAY: stream not served"
			if got := rec.Failure.Error(); got != want || rec.ReuseFailed || rec.ConnID != 1 {
				t.Errorf("%s: %q (reuse failed %v, conn %d); want %q on connection 1", name, got, rec.ReuseFailed, rec.ConnID, want)
			}
		})
	}
}

// TestH3WatchLeftOut: the GOAWAY watch on the qlog events quic-go
// records, in either order: a request whose stream is at or above the
// GOAWAY's id, or that has none when the GOAWAY comes (quic-go then opens
// none), is left out; unserved is called once for a stream left out
// (the one that waits: a request without a stream gets quic-go's error at
// once); for one below it, neither.
func TestH3WatchLeftOut(t *testing.T) {
	headers := func(id quic.StreamID) qlogwriter.Event {
		return h3qlog.FrameCreated{StreamID: id, Frame: h3qlog.Frame{Frame: h3qlog.HeadersFrame{}}}
	}
	goAway := func(id quic.StreamID) qlogwriter.Event {
		return h3qlog.FrameParsed{StreamID: 3, Frame: h3qlog.Frame{Frame: h3qlog.GoAwayFrame{StreamID: id}}}
	}
	data := h3qlog.FrameParsed{StreamID: 0, Frame: h3qlog.Frame{Frame: h3qlog.DataFrame{}}}
	tests := []struct {
		name    string
		events  []qlogwriter.Event
		leftOut bool
		calls   int
	}{
		{"GOAWAY 0 before the stream", []qlogwriter.Event{goAway(0)}, true, 0},
		{"stream 0, then GOAWAY 0", []qlogwriter.Event{headers(0), data, goAway(0)}, true, 1},
		{"stream 0, then GOAWAY 4", []qlogwriter.Event{headers(0), data, goAway(4)}, false, 0},
		{"GOAWAY 4, then stream 4", []qlogwriter.Event{goAway(4), headers(4)}, true, 1},
		{"stream 8, then GOAWAY 4", []qlogwriter.Event{headers(8), goAway(4)}, true, 1},
		{"stream 8, then GOAWAY 4 twice", []qlogwriter.Event{headers(8), goAway(4), goAway(4)}, true, 1},
		{"HEADERS on a control stream (id 2), then GOAWAY 0", []qlogwriter.Event{headers(2), goAway(0)}, true, 0},
		{"DATA only", []qlogwriter.Event{data, data}, false, 0},
	}
	for _, tt := range tests {
		w := newH3Watch()
		if r := w.AddProducer(); r != nil {
			t.Fatalf("the QUIC layer's producer is %v, want nil (no event per packet)", r)
		}
		w.h3.Store(true)
		r := w.AddProducer()
		calls := 0
		req := w.begin(func() { calls++ })
		for _, ev := range tt.events {
			if fc, ok := ev.(h3qlog.FrameCreated); ok {
				if _, ok := fc.Frame.Frame.(h3qlog.HeadersFrame); ok {
					w.writingHeaders(req) // quic-go's WroteHeaderField, before the frame
				}
			}
			r.RecordEvent(ev)
		}
		if got := w.leftOut(req); got != tt.leftOut || calls != tt.calls {
			t.Errorf("%s: leftOut() = %v, unserved called %d times; want %v, %d", tt.name, got, calls, tt.leftOut, tt.calls)
		}
		w.end(req)
	}
}

// TestH3WatchStreams: requests in flight at once on one connection (a
// group's, --streams-per-conn) each get the HEADERS frame recorded after
// their own header fields, whatever the order they began in; a GOAWAY
// leaves out exactly those at or above its id (one call each), and one
// whose stream never opened; a HEADERS frame with no request writing its
// fields is nobody's.
func TestH3WatchStreams(t *testing.T) {
	headers := func(id quic.StreamID) qlogwriter.Event {
		return h3qlog.FrameCreated{StreamID: id, Frame: h3qlog.Frame{Frame: h3qlog.HeadersFrame{}}}
	}
	w := newH3Watch()
	w.h3.Store(true)
	rec := w.AddProducer()
	calls := make([]int, 4)
	reqs := make([]*h3Req, 4)
	for i := range reqs {
		reqs[i] = w.begin(func() { calls[i]++ })
	}
	// Streams 0, 4, 8 go to requests 2, 0, 1; request 3 waits for one.
	for i, id := range map[int]quic.StreamID{2: 0, 0: 4, 1: 8} {
		w.writingHeaders(reqs[i])
		rec.RecordEvent(headers(id))
	}
	rec.RecordEvent(headers(12)) // nobody's: no request was writing
	rec.RecordEvent(h3qlog.FrameParsed{StreamID: 3, Frame: h3qlog.Frame{Frame: h3qlog.GoAwayFrame{StreamID: 4}}})
	for i, want := range []struct {
		opened, leftOut bool
		calls           int
	}{{true, true, 1}, {true, true, 1}, {true, false, 0}, {false, true, 0}} {
		if o, l := w.opened(reqs[i]), w.leftOut(reqs[i]); o != want.opened || l != want.leftOut || calls[i] != want.calls {
			t.Errorf("request %d: opened %v, left out %v, unserved called %d times; want %v, %v, %d", i, o, l, calls[i], want.opened, want.leftOut, want.calls)
		}
	}
	if !w.goneAway() {
		t.Errorf("goneAway() false after a GOAWAY")
	}
	for _, r := range reqs {
		w.end(r)
	}
	if len(w.reqs) != 0 || w.writing != nil {
		t.Errorf("after every end: %d requests in flight, writing %v; want none", len(w.reqs), w.writing)
	}
}
