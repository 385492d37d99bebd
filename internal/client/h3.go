package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	h3qlog "github.com/quic-go/quic-go/http3/qlog"
	"github.com/quic-go/quic-go/qlogwriter"

	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/result"
)

// ProtoH3 is rec.Proto of a request carried over HTTP/3 (QUIC).
const ProtoH3 = "h3"

// h3Conn is a session's QUIC connection and the HTTP/3 client connection
// over it: each request is one bidirectional stream on it.
type h3Conn struct {
	qc    *quic.Conn
	cc    *http3.ClientConn
	watch *h3Watch
}

// open reports whether the connection can carry a new request: neither
// side closed it. A GOAWAY shows as a close (quic-go's client closes the
// connection once it has no stream left), or on the next stream: its
// open fails, or the server rejects it (H3_REQUEST_REJECTED); see doH3.
func (c *h3Conn) open() bool { return c.qc.Context().Err() == nil }

func (c *h3Conn) close() error {
	return c.qc.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), "")
}

// The QUIC connection's idle timeout (the lower of the two sides' wins)
// and the period of the PINGs that keep a silent connection from reaching
// it.
const (
	h3IdleTimeout = 30 * time.Second
	h3KeepAlive   = 10 * time.Second
	// h3HandshakeIdle bounds a QUIC handshake that hears nothing from the
	// server (quic-go's default is 5 s; a loaded gateway gets twice that).
	h3HandshakeIdle = 10 * time.Second
)

// h3Transport makes the sessions' HTTP/3 client connections: no gzip
// (DisableCompression, as over HTTP/1.1 and HTTP/2), nothing else of its
// own; it never dials (the session does).
var h3Transport = &http3.Transport{DisableCompression: true}

// connectH3 opens the session's QUIC connection: one UDP socket of its
// own, the QUIC handshake (TLS 1.3 inside, ALPN "h3"), then HTTP/3 over
// it. QUIC has no connection before its handshake: rec.Connected and
// rec.TLSDone are both when the handshake completed. The handshake is
// bounded by the request's deadline, and by h3HandshakeIdle without a
// packet from the server; a handshake that gets no answer at
// all (UDP blocked) and one the peer refuses (TLS, ALPN) fail as connect
// failures that say so.
func (s *Session) connectH3(ctx context.Context, rec *result.Request, deadline time.Time) bool {
	q := s.q
	cfg := q.tlsConfig() // never nil with HTTP3
	cfg.NextProtos = []string{http3.NextProtoH3}
	hctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	// The handshake gives up after h3HandshakeIdle (h3HandshakeLimit)
	// without a packet from the server (sooner when the request's deadline comes first): with
	// UDP blocked nothing ever answers, and -w (5 minutes by default) is
	// no time to wait for that.
	limit := q.h3HandshakeLimit()
	wait := max(min(time.Until(deadline), limit), time.Millisecond)
	watch := newH3Watch()
	qc, err := quic.DialAddr(hctx, q.Addr, cfg, &quic.Config{HandshakeIdleTimeout: wait,
		// A stream may stay silent longer than QUIC's idle timeout (a
		// long think time, a stalling gateway): PINGs keep the connection
		// alive, the request's own timeouts bound the wait.
		MaxIdleTimeout: h3IdleTimeout, KeepAlivePeriod: h3KeepAlive, Tracer: watch.trace})
	if err != nil {
		if ctx.Err() != nil {
			rec.Failure = result.Failure{Kind: result.Interrupted}
			return false
		}
		rec.Failure = h3HandshakeFailure(q.Addr, err, min(q.Timeout, limit))
		return false
	}
	rec.Connected = s.clk.Now()
	rec.TLSDone = rec.Connected
	id := q.state().conns.Add(1)
	rec.ConnID = id
	watch.h3.Store(true) // the HTTP/3 layer's producer comes next
	s.h3 = &h3Conn{qc: qc, cc: h3Transport.NewClientConn(qc), watch: watch}
	s.id, s.proto = id, ProtoH3
	return true
}

// h3HandshakeLimit is how long a QUIC handshake may go without a packet
// from the server: h3HandshakeIdle, unless a test lowered it.
func (q *Request) h3HandshakeLimit() time.Duration {
	if q.h3HandshakeWait > 0 {
		return q.h3HandshakeWait
	}
	return h3HandshakeIdle
}

// h3HandshakeFailure names why a QUIC handshake with addr failed: no
// answer (a timeout: nothing came back on the UDP port within wait, the
// handshake's bound, or what came was dropped), the peer's refusal (a TLS alert: wrong ALPN,
// certificate), or the error itself.
func h3HandshakeFailure(addr string, err error, wait time.Duration) result.Failure {
	var idle *quic.IdleTimeoutError
	var hs *quic.HandshakeTimeoutError
	var te *quic.TransportError
	switch {
	case errors.As(err, &idle), errors.As(err, &hs), errors.Is(err, context.DeadlineExceeded):
		return result.Failure{Kind: result.Connect, Detail: fmt.Sprintf(
			"QUIC handshake: no answer from UDP %s within %v (UDP blocked, or no HTTP/3 server there)", addr, wait.Round(time.Millisecond))}
	case errors.As(err, &te) && te.ErrorCode.IsCryptoError():
		return result.Failure{Kind: result.Connect, Detail: "QUIC handshake: TLS: " + h3ErrText(te)}
	}
	return sysFailure(result.Connect, "QUIC handshake: ", err)
}

// h3ErrText is err's text with quic-go's "CRYPTO_ERROR 0x178 (local):"
// kind of prefix kept, so the alert (0x178: no_application_protocol) is
// named; an empty reason says what the code means.
func h3ErrText(te *quic.TransportError) string {
	s := te.Error()
	if te.ErrorCode == quic.TransportErrorCode(0x100+120) && !strings.Contains(s, "application protocol") {
		s += ": no application protocol (the server does not offer ALPN h3)"
	}
	return s
}

// doH3 sends the request as one HTTP/3 request stream on the session's
// QUIC connection and reads the response body, timestamping where the
// stream's Read returns: http3's body reads the QUIC stream straight,
// one DATA frame's bytes at most per Read, with no buffer in between.
func (s *Session) doH3(ctx context.Context, rec *result.Request, deadline time.Time, reused bool) attempt {
	q := s.q
	st := newStreamCtx(ctx, deadline, q.IdleTimeout)
	defer st.close()
	req, err := q.newHTTPRequest(st.sctx, rec.ID, "https")
	if err != nil {
		rec.Failure = result.Failure{Kind: result.RecvError, Detail: "request: " + err.Error()}
		return finished
	}
	req.Proto, req.ProtoMajor = "HTTP/3.0", 3
	// http3 writes the body on a goroutine of its own, after the HEADERS
	// frame: Sent is when it read the body's end, after its last Write
	// (the stream's FIN follows at once).
	var eof atomic.Int64
	req.Body = &h3Body{ReadCloser: req.Body, eof: &eof, clk: s.clk}
	// A kept connection stays the session's even when it has ended by the
	// time the stream did — after a GOAWAY, quic-go's client closes it
	// once its last stream is done —, so that the next request finds it
	// closed and is a reuse failure (usable): the gateway's refusal of
	// the connection is named on the request it refused. A group's
	// connection (Options.StreamsPerConn) is let go, not closed, when the
	// stream fails: the others' streams go on on it.
	keep := false
	gc := s.h3gc
	defer func() {
		if rec.Sent == 0 {
			rec.Sent = eof.Load()
		}
		if !keep {
			s.Close()
		}
	}()

	x := h2Exchange{reused: reused, keepAlive: q.KeepAlive && !s.oneShot}
	// A GOAWAY that leaves this stream out ends it at once (unserved).
	watch := s.h3.watch
	wr := watch.begin(func() { st.scancel(errH3NotServed) })
	defer watch.end(wr)
	// The request's stream counts as open on a group's connection from
	// its header fields on (WroteHeaderField runs on this goroutine,
	// inside RoundTrip, once quic-go opened the stream).
	counted := false
	defer func() {
		if counted {
			gc.streams.Add(-1)
		}
	}()
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteHeaderField: func(string, []string) {
			watch.writingHeaders(wr)
			if gc != nil && !counted {
				counted = true
				rec.Streams = int(gc.streams.Add(1))
			}
		},
	}))
	unserved := func() bool { return errors.Is(context.Cause(st.sctx), errH3NotServed) || watch.leftOut(wr) }
	resp, err := s.h3.cc.RoundTrip(req)
	if err != nil {
		// On a group's connection, a stream the GOAWAY left out fails,
		// named (the others' streams below the id go on); one that never
		// opened goes again on a new connection, as below.
		if gc != nil && unserved() && watch.opened(wr) && ctx.Err() == nil {
			rec.Failure = h3NotServed("send: ")
			return finished
		}
		// Not served is not a cancellation: on a kept connection the
		// request goes again on a new one (a reuse failure), as when the
		// gateway closes or refuses it.
		if x.settle(step{err: err, cancelled: st.cancelled() && !unserved()}) == fateRetry {
			return deadConn
		}
		if unserved() && ctx.Err() == nil {
			rec.Failure = h3NotServed("send: ")
			return finished
		}
		// Out of time before quic-go opened the stream: the peer's
		// stream limit held it back (the handshake was done).
		if ctx.Err() == nil && st.sctx.Err() != nil && !watch.opened(wr) && s.h3.open() {
			others := 0
			if gc != nil {
				others = int(gc.streams.Load())
			}
			rec.Failure = h3StreamWait(others)
			return finished
		}
		rec.Failure = h2Failure(ctx, st.sctx, q, err, h3Failure("send: ", err))
		return finished
	}
	now := s.clk.Now()
	if sent := eof.Load(); sent != 0 && sent <= now {
		rec.Sent = sent
	}
	keep = s.readStream(st, rec, resp, "HTTP/3 "+resp.Status, now, &x,
		func(_ *reader, err error) result.Failure { return h3Failure("", err) })
	return finished
}

// errH3NotServed is the cause that ends a request stream the gateway's
// GOAWAY left out.
var errH3NotServed = errors.New("the gateway sent GOAWAY: stream not served")

// h3NotServed is the failure of a request the gateway's GOAWAY left out:
// its stream at or above the GOAWAY's stream id, or none opened once the
// GOAWAY came (quic-go's own words are "connection in graceful shutdown",
// or a close of the connection it makes itself).
func h3NotServed(prefix string) result.Failure {
	return result.Failure{Kind: result.RecvError, Detail: prefix + "HTTP/3: " + errH3NotServed.Error()}
}

// h3Watch is the qlog trace of a session's QUIC connection, there to see
// the gateway's GOAWAY, which quic-go's client keeps to itself: it only
// stops opening streams, and leaves a stream at or above the GOAWAY's id
// waiting for an answer that will not come (RFC 9114 §5.2: the gateway
// will not process it, and need not reset it). quic-go records each
// HTTP/3 frame it parses and creates in the qlog producer of the HTTP/3
// layer; the watch asks for only that one (the QUIC layer's, which would
// record every packet, gets none) and keeps from it the GOAWAY's stream
// id and, for each request in flight on the connection (one, or the
// streams of a group: Options.StreamsPerConn), its request stream, from
// its HEADERS frame. When both say a request's stream is left out,
// whichever came last, it calls that request's unserved.
//
// Which HEADERS frame is whose: quic-go encodes a request's header fields
// and records its HEADERS frame under one lock of the connection's
// request writer, calling the request's httptrace WroteHeaderField for
// each field on the way (writingHeaders): the frame recorded next is that
// request's.
type h3Watch struct {
	h3 atomic.Bool // the next producer asked for is the HTTP/3 layer's

	mu      sync.Mutex
	goAway  int64               // guarded by mu: the GOAWAY's stream id, -1 before one came
	reqs    map[*h3Req]struct{} // guarded by mu: the requests in flight
	writing *h3Req              // guarded by mu: the request whose header fields quic-go is encoding
}

// h3Req is one request in flight on a watched connection.
type h3Req struct {
	stream   int64  // guarded by h3Watch.mu: its request stream, -1 before its HEADERS
	unserved func() // guarded by h3Watch.mu: called once if a GOAWAY leaves it out; nil after
}

var _ qlogwriter.Trace = (*h3Watch)(nil)

func newH3Watch() *h3Watch { return &h3Watch{goAway: -1, reqs: make(map[*h3Req]struct{})} }

// trace is the connection's quic.Config.Tracer.
func (w *h3Watch) trace(context.Context, bool, quic.ConnectionID) qlogwriter.Trace { return w }

// AddProducer gives the HTTP/3 layer the watch itself, the QUIC layer
// nothing (a nil Recorder: quic-go then builds no event).
func (w *h3Watch) AddProducer() qlogwriter.Recorder {
	if !w.h3.Load() {
		return nil
	}
	return h3Recorder{w}
}

// begin puts a request in flight, unserved its to call, until end.
func (w *h3Watch) begin(unserved func()) *h3Req {
	r := &h3Req{stream: -1, unserved: unserved}
	w.mu.Lock()
	w.reqs[r] = struct{}{}
	w.mu.Unlock()
	return r
}

func (w *h3Watch) end(r *h3Req) {
	w.mu.Lock()
	delete(w.reqs, r)
	if w.writing == r {
		w.writing = nil
	}
	w.mu.Unlock()
}

// writingHeaders notes that quic-go encodes r's header fields: the next
// HEADERS frame it records is r's.
func (w *h3Watch) writingHeaders(r *h3Req) {
	w.mu.Lock()
	w.writing = r
	w.mu.Unlock()
}

// opened reports whether r's request stream is known (its HEADERS made).
func (w *h3Watch) opened(r *h3Req) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return r.stream >= 0
}

// goneAway reports whether the gateway's GOAWAY came: no new stream on
// the connection.
func (w *h3Watch) goneAway() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.goAway >= 0
}

// leftOut reports whether a GOAWAY came that leaves r out: its stream at
// or above the GOAWAY's id, or none opened (quic-go opens none after a
// GOAWAY).
func (w *h3Watch) leftOut(r *h3Req) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.goAway >= 0 && (r.stream < 0 || r.stream >= w.goAway)
}

// check calls r's unserved once its stream is known to be left out.
// Called with mu held.
func (w *h3Watch) check(r *h3Req) {
	if w.goAway >= 0 && r.stream >= w.goAway && r.unserved != nil {
		r.unserved()
		r.unserved = nil
	}
}

// h3Recorder is the watch as the HTTP/3 layer's qlog producer. Its
// RecordEvent runs for every HTTP/3 frame, a token's DATA frame
// included: a type switch, no lock, for those.
type h3Recorder struct{ w *h3Watch }

func (r h3Recorder) RecordEvent(ev qlogwriter.Event) {
	w := r.w
	switch ev := ev.(type) {
	case h3qlog.FrameParsed:
		if g, ok := ev.Frame.Frame.(h3qlog.GoAwayFrame); ok {
			w.mu.Lock()
			w.goAway = int64(g.StreamID)
			for r := range w.reqs {
				w.check(r)
			}
			w.mu.Unlock()
		}
	case h3qlog.FrameCreated:
		if _, ok := ev.Frame.Frame.(h3qlog.HeadersFrame); ok && ev.StreamID%4 == 0 { // a request stream
			w.mu.Lock()
			if r := w.writing; r != nil {
				r.stream = int64(ev.StreamID)
				w.writing = nil
				w.check(r)
			}
			w.mu.Unlock()
		}
	}
}

func (h3Recorder) Close() error { return nil }

// h3Failure names an HTTP/3 error of a request: the stream reset by the
// peer (with its HTTP/3 error code), the connection closed by it (a
// GOAWAY that ended it, an application or transport close), else the
// error's text; a receive error.
func h3Failure(prefix string, err error) result.Failure {
	var se *quic.StreamError
	var ae *quic.ApplicationError
	switch {
	case errors.As(err, &se) && se.Remote:
		return result.Failure{Kind: result.RecvError, Detail: prefix + "HTTP/3 stream reset by the peer: " + http3.ErrCode(se.ErrorCode).String()}
	case errors.As(err, &ae) && ae.Remote:
		return result.Failure{Kind: result.RecvError, Detail: prefix + "HTTP/3 connection closed by the peer: " + http3.ErrCode(ae.ErrorCode).String()}
	}
	return sysFailure(result.RecvError, prefix+"HTTP/3: ", err)
}

// h3Body notes when http3's body goroutine reads the end of the request
// body.
type h3Body struct {
	io.ReadCloser
	eof *atomic.Int64
	clk clock.Clock
}

func (b *h3Body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof.CompareAndSwap(0, b.clk.Now())
	}
	return n, err
}
