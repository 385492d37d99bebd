package client

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/net/http2"

	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/result"
)

// Session sends the requests of one concurrency slot, one after the other.
// With Options.KeepAlive they share its connection while it stays usable;
// without, each request has a connection of its own, closed after it. A
// Session is not safe for concurrent use; Close it when done.
type Session struct {
	q    *Request // the current request's: base, or a copy of its own size (prepare)
	base *Request // the Request that made the session

	// The open connection, kept between requests: conn for HTTP/1.1 (the
	// TLS connection over https), cc over it for HTTP/2; raw is the TCP
	// connection underneath.
	conn net.Conn
	raw  net.Conn
	//lint:ignore SA1019 see shared in client.go
	cc    *http2.ClientConn
	stamp *muxConn // the connection under cc
	h3    *h3Conn  // the QUIC connection, for HTTP/3 (Options.HTTP3), in place of conn
	id    int64    // its ConnID
	proto string   // its protocol (rec.Proto)

	ws      *wsState // the open connection's WebSocket state (Options.WebSocket)
	buf     []byte   // the read buffer, ReadBufferSize
	oneShot bool     // Request.Do's: the connection closes after the request, no drain

	ev loopSession // the epoll engine's state (see Engine)

	// group is the session's group of sessions sharing HTTP/2 connections
	// (Options.StreamsPerConn), nil when it has connections of its own;
	// gc is the group's connection it holds (conn, cc and the others are
	// gc's then).
	group *h2Group
	gc    *groupConn
	// h3group and h3gc are the same for HTTP/3 (h3group.go): h3 is
	// h3gc's then.
	h3group *h3Group
	h3gc    *h3GroupConn

	// clk is the clock of every timestamp (Options.Clock), read once here
	// so that the per-token path makes one call on a concrete clock.
	clk clock.Clock
}

// NewSession returns a Session that sends q's requests.
// With Options.StreamsPerConn, the k-th session of q joins group
// k/StreamsPerConn, whose sessions share their HTTP/2 connections.
func (q *Request) NewSession() *Session {
	s := q.newSession()
	s.group = q.groupOf()
	s.h3group = q.h3GroupOf()
	return s
}

func (q *Request) newSession() *Session {
	return &Session{q: q, base: q, clk: clock.Or(q.Clock)}
}

// Close closes the session's connection, if one is open.
func (s *Session) Close() error {
	s.closeLoop()
	s.closeWS(0)
	var err error
	switch {
	case s.gc != nil:
		s.leaveGroup() // the connection stays the group's while others hold it
	case s.h3gc != nil:
		s.leaveH3Group() // likewise
	case s.h3 != nil:
		err = s.h3.close()
	case s.cc != nil:
		err = s.cc.Close()
	case s.conn != nil:
		err = s.conn.Close()
	}
	s.conn, s.raw, s.cc, s.stamp, s.h3, s.id, s.proto = nil, nil, nil, nil, nil, 0, ""
	return err
}

// keptState is what the next request would find on the session's kept
// connection (peek, on either engine); false when there is none and none
// was lost. Only between requests (the tests await it).
func (s *Session) keptState() (connState, bool) {
	if st, ok, onLoop := s.loopKeptState(); onLoop {
		return st, ok
	}
	if s.raw == nil {
		return idle, false
	}
	return peek(s.raw), true
}

// attempt is how one try of a request ended.
type attempt int

const (
	finished attempt = iota // rec holds the outcome
	deadConn                // a kept connection failed before any response byte: try again on a new one
)

// Do performs one request and records it into rec, whose Batch, Index,
// Scheduled and Warmup the caller sets. It never returns early without
// filling rec.Failure and rec.End. Cancelling ctx ends the request as
// result.Interrupted. rec.ConnID, rec.Reused and rec.Proto say which
// connection carried it; rec.Connected, rec.TLSDone, rec.Sent and
// rec.HeadAt time its phases (0 for a phase that did not happen).
//
// Reuse (Options.KeepAlive). A connection is kept for the next request only
// when its response ended cleanly at its framing end: after the terminal
// event the client reads on (bounded by Options.DrainTimeout and
// DrainBytes) until the last chunk and its trailers, or the Content-Length,
// have arrived, with no byte beyond them. It is closed instead when the
// response announced "Connection: close", when the request failed on the
// connection (status, timeout, read error, broken framing), and, marked
// rec.Poisoned, when the response had no framing end (a body read until
// close), its drain did not reach the end within the bounds, or bytes
// followed the end — at once, or while the connection was idle. HTTP/2
// reads a stream to its END_STREAM within the same bounds, else resets the
// stream; the connection stays.
//
// A kept connection that the server or gateway closed — found closed when
// the next request comes to use it, or failing on the write or before any
// response byte — is a reuse failure (rec.ReuseFailed): the request is sent
// again, once, on a new connection, and its Start stays that of the first
// try.
func (s *Session) Do(ctx context.Context, rec *result.Request) {
	s.prepare(rec)
	q := s.q
	if q.onLoop() {
		s.doLoop(ctx, rec)
		return
	}
	s.doHere(ctx, rec, s.clk.Now())
}

// doHere is Do on the goroutine engine, for a request begun at start (a
// request the loops hand over keeps its own: joinFallback).
func (s *Session) doHere(ctx context.Context, rec *result.Request, start int64) {
	q := s.q
	rec.ID = q.ID(rec.Batch, rec.Index)
	// Whatever the outcome, the tokens that arrived without a usable pi_ts
	// get their emission times from the registry (and the entry is freed),
	// once the request has ended.
	defer q.fillEmitted(rec)
	clk := s.clk
	rec.Start = start
	deadline := clk.ToTime(rec.Start).Add(q.Timeout)
	defer func() {
		if rec.End == 0 {
			rec.End = clk.Now()
		}
	}()
	if s.buf == nil {
		s.buf = make([]byte, ReadBufferSize)
	}
	if (s.conn != nil || s.h3 != nil) && !s.usable(rec) {
		s.Close()
	}
	for {
		reused := s.conn != nil || s.h3 != nil
		switch {
		case reused:
		case s.group != nil:
			var ok bool
			if reused, ok = s.joinGroup(ctx, rec, deadline); !ok {
				return
			}
		case s.h3group != nil:
			var ok bool
			if reused, ok = s.joinH3Group(ctx, rec, deadline); !ok {
				return
			}
		case !s.connect(ctx, rec, deadline):
			return
		}
		rec.ConnID, rec.Reused, rec.Proto = s.id, reused, s.proto
		var a attempt
		switch {
		case s.h3 != nil:
			a = s.doH3(ctx, rec, deadline, reused)
		case s.cc != nil:
			a = s.doH2(ctx, rec, deadline, reused)
		case q.WebSocket:
			a = s.doWS(ctx, rec, deadline, reused)
		default:
			a = s.doH1(ctx, rec, deadline, reused)
		}
		if a == finished {
			return
		}
		s.Close()
		rec.ReuseFailed = true
		rec.ConnID, rec.Reused, rec.Proto = 0, false, ""
		rec.Sent, rec.HeadAt, rec.Bytes, rec.Reads = 0, 0, 0, 0
		rec.Failure = result.Failure{}
	}
}

// usable checks, before a kept connection carries a request, that it is
// still open and silent: a connection the peer closed while idle is a reuse
// failure, one with bytes waiting is poisoned. Either way it is not used.
func (s *Session) usable(rec *result.Request) bool {
	if s.ws != nil {
		return s.wsUsable(rec)
	}
	if s.h3 != nil {
		if s.h3.open() && (s.h3gc == nil || s.h3gc.usable()) {
			return true
		}
		rec.ReuseFailed = true
		return false
	}
	if s.gc != nil {
		return s.groupUsable(rec)
	}
	if s.cc != nil {
		if s.cc.CanTakeNewRequest() {
			return true
		}
		rec.ReuseFailed = true
		return false
	}
	state := peek(s.raw)
	if tc, ok := s.conn.(*tls.Conn); ok && state == pending {
		state = tlsPending(tc, s.buf)
	}
	switch state {
	case peerClosed:
		rec.ReuseFailed = true
		return false
	case pending:
		rec.Poisoned = true
		return false
	}
	return true
}

// tlsPending reads, for at most a millisecond, what waits on an idle TLS
// connection: records without application data (a session ticket) leave
// it idle, a close_notify or an error closed, data poisoned.
func tlsPending(tc *tls.Conn, buf []byte) connState {
	tc.SetReadDeadline(time.Now().Add(time.Millisecond))
	n, err := tc.Read(buf[:1])
	switch {
	case n > 0:
		return pending
	case err == nil || isTimeout(err):
		return idle
	}
	return peerClosed
}

// connect opens a new connection for the session: TCP, then TLS when
// configured, then HTTP/2 when wanted or negotiated; or QUIC for HTTP/3
// (connectH3). On failure it fills rec.Failure and returns false.
func (s *Session) connect(ctx context.Context, rec *result.Request, deadline time.Time) bool {
	q := s.q
	if q.HTTP3 {
		return s.connectH3(ctx, rec, deadline)
	}
	d := net.Dialer{Deadline: deadline}
	conn, err := d.DialContext(ctx, "tcp", q.Addr)
	if err != nil {
		rec.Failure = q.classify(ctx, err, connectFailure(err))
		return false
	}
	rec.Connected = s.clk.Now()
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	id := q.state().conns.Add(1)
	rec.ConnID = id
	s.raw, s.conn, s.id, s.proto = conn, conn, id, ProtoHTTP1
	cfg := q.tlsConfig()
	if cfg == nil {
		if q.H2C {
			return s.startH2(ctx, rec, ProtoH2C)
		}
		return true
	}
	tc := tls.Client(conn, cfg)
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	err = tc.HandshakeContext(ctx)
	stop()
	if err != nil {
		s.Close()
		rec.Failure = q.classify(ctx, err, sysFailure(result.Connect, "TLS handshake: ", err))
		return false
	}
	rec.TLSDone = s.clk.Now()
	s.conn = tc
	if tc.ConnectionState().NegotiatedProtocol == http2.NextProtoTLS {
		return s.startH2(ctx, rec, ProtoH2)
	}
	return true
}

// tlsConfig returns the TLS configuration of the connections, nil for
// plain TCP.
func (q *Request) tlsConfig() *tls.Config {
	if q.TLS == nil && q.Scheme != "https" && !q.HTTP3 {
		return nil
	}
	var cfg *tls.Config
	if q.TLS != nil {
		cfg = q.TLS.Clone()
	} else {
		cfg = &tls.Config{}
	}
	if cfg.ServerName == "" {
		_, host := q.target()
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		cfg.ServerName = host
	}
	cfg.NextProtos = []string{"http/1.1"}
	if q.HTTP2 {
		cfg.NextProtos = []string{http2.NextProtoTLS, "http/1.1"}
	}
	return cfg
}

// doH1 sends the request over HTTP/1.1 on the session's connection and
// reads the response.
func (s *Session) doH1(ctx context.Context, rec *result.Request, deadline time.Time, reused bool) attempt {
	q := s.q
	conn := s.conn
	raw := q.AppendHTTP(make([]byte, 0, 512), rec.ID)
	release := cancelUnblocks(ctx, conn, deadline)
	keep := false
	defer func() {
		if !release(keep) {
			s.Close()
		}
	}()

	if a, ok := q.send(ctx, rec, conn, raw, reused); !ok {
		return a
	}
	r := newReader(rec, &q.Options)
	defer r.close()
	x := h1Exchange{r: r, rec: rec, reused: reused, keepAlive: q.KeepAlive && !s.oneShot}
	lim := readLimit{conn: conn, ctx: ctx, deadline: deadline, set: deadline, idle: q.IdleTimeout}
	buf, clk := s.buf, s.clk
	for {
		if r.statusFailing() && lim.wait.IsZero() {
			lim.wait = time.Now().Add(q.drainTimeout())
		}
		lim.arm()
		n, err := conn.Read(buf)
		if n > 0 {
			now := clk.Now()
			rec.Reads++
			if r.feed(buf[:n], now) {
				rec.End = now
				r.close() // the gzip decoder is done: nothing more to decode
				keep = s.drainH1(&x, deadline)
				return finished
			}
		}
		if err != nil {
			if x.settle(step{err: err, cancelled: ctx.Err() != nil}) == fateRetry {
				return deadConn
			}
			rec.Failure = lim.failure(q, err, r)
			return finished
		}
	}
}

// cancelUnblocks sets conn's deadline, and lets the cancellation of ctx
// unblock its Read by moving the deadline to the past. Once the request is
// over, release ends that and reports whether a connection the exchange
// would keep (keep) stays kept: not when the deadline may yet move.
func cancelUnblocks(ctx context.Context, conn net.Conn, deadline time.Time) (release func(keep bool) bool) {
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	return func(keep bool) bool { return stop() && keep }
}

// send writes the request raw on conn, then times it (rec.Sent) and makes
// room for its tokens. When the write fails it returns false and how the
// attempt ended: a kept connection found closed goes again (deadConn),
// else the request failed.
func (q *Request) send(ctx context.Context, rec *result.Request, conn net.Conn, raw []byte, reused bool) (attempt, bool) {
	if _, err := conn.Write(raw); err != nil {
		if keptLost(reused, 0, step{err: err, cancelled: ctx.Err() != nil}) {
			return deadConn, false
		}
		rec.Failure = q.classify(ctx, err, sysFailure(result.RecvError, "send: ", err))
		return finished, false
	}
	rec.Sent = q.clk().Now()
	if n := q.expectedTokens(); cap(rec.Tokens) == 0 && n > 0 {
		rec.Tokens = make([]result.Token, 0, n)
	}
	return finished, true
}

// readLimit sets the read deadline of an HTTP/1.1 connection before each
// Read: the request's deadline (Options.Timeout), brought forward to
// IdleTimeout from now when that comes first, or to the end of the wait
// for the body of a non-2xx response (wait).
type readLimit struct {
	conn     net.Conn
	ctx      context.Context // its cancellation moves the deadline to the past
	deadline time.Time       // the request's
	idle     time.Duration
	wait     time.Time // the end of the wait for an error body; zero: none
	set      time.Time // the read deadline in force
	byIdle   bool      // it is the idle timeout's
}

// arm sets the read deadline for the next Read; a no-op without an idle
// timeout or a wait, the request's deadline being set already.
func (l *readLimit) arm() {
	t, idle := l.deadline, false
	if l.idle > 0 {
		if i := time.Now().Add(l.idle); i.Before(t) {
			t, idle = i, true
		}
	}
	if !l.wait.IsZero() && l.wait.Before(t) {
		t, idle = l.wait, false
	}
	l.byIdle = idle
	if t.Equal(l.set) {
		return
	}
	l.set = t
	l.conn.SetReadDeadline(t)
	if l.ctx.Err() != nil {
		// A cancellation that moved the deadline to the past before this
		// call: move it back there.
		l.conn.SetReadDeadline(time.Unix(1, 0))
	}
}

// failure classifies the error of a Read armed by l: an interruption; the
// status of a non-2xx response, with what arrived of its body; the idle
// timeout; the request's timeout; else what the reader makes of it.
func (l *readLimit) failure(q *Request, err error, r *reader) result.Failure {
	switch {
	case l.ctx.Err() != nil:
		return result.Failure{Kind: result.Interrupted}
	case r.statusFailing():
		return r.statusFailure()
	case l.byIdle && isTimeout(err):
		return q.idleFailure()
	}
	return q.classify(l.ctx, err, r.endOfStream(err))
}

// idleFailure is the failure of a request that received no byte for
// IdleTimeout.
func (q *Request) idleFailure() result.Failure {
	return result.Failure{Kind: result.IdleTimeout, Detail: strconv.FormatInt(q.IdleTimeout.Milliseconds(), 10)}
}

// drainH1 reads what follows the end of a response, up to its framing end,
// as the exchange decides, and reports whether the connection can carry
// another request (see Session.Do). A cancellation does not stop it: the
// connection of a cancelled request is closed after it (doH1's stop).
func (s *Session) drainH1(x *h1Exchange, deadline time.Time) bool {
	f := x.settle(step{})
	if f == fateDrain {
		limit := time.Now().Add(s.q.drainTimeout())
		if limit.After(deadline) {
			limit = deadline
		}
		s.conn.SetReadDeadline(limit)
		for f == fateDrain {
			if idle := s.q.IdleTimeout; idle > 0 && time.Until(limit) > idle {
				s.conn.SetReadDeadline(time.Now().Add(idle))
			}
			n, err := s.conn.Read(s.buf)
			f = x.settle(step{p: s.buf[:n], err: err})
		}
	}
	return f == fateKeep
}

// errDrainTooLong: more than DrainBytes followed the terminal event.
var errDrainTooLong = errors.New("drain: too many bytes after the terminal event")

// isStreamEnd reports whether a request that ended with kind ended at the
// level of its event stream (the terminal event, an error event, what the
// content checks found), not of its connection.
func isStreamEnd(k result.Kind) bool {
	switch k {
	case result.OK, result.NoTokens, result.Integrity, result.StreamError:
		return true
	}
	return false
}

func (q *Request) drainTimeout() time.Duration {
	if q.DrainTimeout > 0 {
		return q.DrainTimeout
	}
	return DefaultDrainTimeout
}

// isClosed reports whether err says the peer closed the connection: end
// of file, reset, broken pipe.
func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED)
}

// isTimeout reports whether err is a deadline's.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
