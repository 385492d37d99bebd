//go:build linux

package client

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"os"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/sys/unix"

	"github.com/sse-latency/sse-latency/internal/evloop"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/tlsrecord"
)

// This file is TLS on the event loops: the TCP connect and the crypto/tls
// handshake run on a goroutine (off the per-token path), then the loop
// takes the socket and the connection's record layer (package tlsrecord):
// it opens the records it reads in the connection's buffer, feeds the
// plaintext to the same reader with the time the read that completed the
// record returned, and seals the requests it writes.

// msgTLSUp: a handshake goroutine is done (tlsDial.Receive).
const msgTLSUp uint8 = 100

// tlsDial is one connection's dial and handshake, run on a goroutine and
// posted to the loop when done.
type tlsDial struct {
	ls *loopSession

	// Set by the goroutine before it posts.
	fd        int             // the socket, the loop's from here on (-1: none)
	rl        *tlsrecord.Conn // its record layer
	connected int64           // TCP up
	tlsDone   int64           // handshake done
	alpn      string          // the protocol ALPN chose ("h2": HTTP/2)
	failure   *result.Failure // the dial or handshake failed
	why       string          // not offloadable: why (raw and tc carry the connection)
	raw       net.Conn        // with why: the TCP connection
	tc        *tls.Conn       // with why: the TLS connection on raw
}

// connectTLS starts the dial and handshake of a new TLS connection.
func (ls *loopSession) connectTLS(cfg *tls.Config) {
	d := &tlsDial{ls: ls, fd: -1}
	ls.dial = d
	q, ctx := ls.s.q, ls.ctx
	deadline := ls.s.clk.ToTime(ls.deadline)
	go func() {
		d.run(ctx, q, cfg, deadline)
		ls.l.Post(d, msgTLSUp, 0)
	}()
}

// run dials and handshakes, on the dial's goroutine.
func (d *tlsDial) run(ctx context.Context, q *Request, cfg *tls.Config, deadline time.Time) {
	nd := net.Dialer{Deadline: deadline}
	conn, err := nd.DialContext(ctx, "tcp", q.Addr)
	if err != nil {
		d.failure = ref(q.classify(ctx, err, connectFailure(err)))
		return
	}
	d.connected = d.ls.s.clk.Now()
	tcp, _ := conn.(*net.TCPConn)
	if tcp != nil {
		tcp.SetNoDelay(true)
	}
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	tc, rl, why, err := tlsrecord.Client(ctx, conn, cfg)
	stop()
	if err != nil {
		conn.Close()
		d.failure = ref(q.classify(ctx, err, sysFailure(result.Connect, "TLS handshake: ", err)))
		return
	}
	d.tlsDone = d.ls.s.clk.Now()
	if tc != nil {
		d.alpn = tc.ConnectionState().NegotiatedProtocol
	}
	if rl == nil || tcp == nil {
		if why == "" {
			why = "the connection is not TCP"
		}
		conn.SetDeadline(time.Time{})
		d.why, d.raw, d.tc = why, conn, tc
		return
	}
	fd, err := dupFD(tcp)
	conn.Close() // the loop has its own descriptor of the socket
	if err != nil {
		d.failure = ref(connectFailure(os.NewSyscallError("dup", err)))
		return
	}
	d.fd, d.rl = fd, rl
}

func ref(f result.Failure) *result.Failure { return &f }

// dupFD returns a non-blocking, close-on-exec duplicate of c's socket.
func dupFD(c *net.TCPConn) (int, error) {
	sc, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := sc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, derr
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// Receive: the dial is done; the loop takes the connection on, or ends
// the request.
func (d *tlsDial) Receive(*evloop.Loop, uint8, uint64) {
	ls := d.ls
	if ls.dial != d || !ls.active { // cannot happen: a dial holds its request
		if d.fd >= 0 {
			unix.Close(d.fd)
		}
		if d.raw != nil {
			d.raw.Close()
		}
		return
	}
	ls.dial = nil
	switch {
	case d.failure != nil:
		if d.connected != 0 { // the handshake failed: the TCP connection had come up
			ls.rec.Connected = d.connected
			ls.rec.ConnID = ls.s.q.state().conns.Add(1)
		}
		ls.fail(*d.failure)
	case d.why != "":
		ls.tlsFallback(d)
	default:
		ls.tlsUp(d)
	}
}

// tlsUp puts the handshaken socket on the loop, and the request goes out.
func (ls *loopSession) tlsUp(d *tlsDial) {
	c := &econn{ls: ls, phase: phConnecting, tls: d.rl}
	if ls.l.Add(&c.reg, d.fd, c, evloop.Read) != nil {
		unix.Close(d.fd)
		ls.fail(connectFailure(errLoopGone))
		return
	}
	ls.c = c
	if d.alpn == http2.NextProtoTLS {
		ls.newH2(c, ProtoH2)
	} else {
		ls.openDone() // HTTP/1.1: a connection of the session's own
	}
	if c.port = evloop.LocalPort(d.fd); c.port > 0 {
		ls.l.Claim(c.port)
	}
	ls.rec.TLSDone = d.tlsDone
	c.connectedAt(d.connected)
}

// tlsFallback: the handshake negotiated what the loops' record layer does
// not speak (TLS 1.2): this request ends on the goroutine engine, on the
// connection it has, and the Request's later ones run there (on that
// connection too, when kept: Request.TLSFallback says why). The opener of
// a group's connection (Options.StreamsPerConn) carries it over to the
// group's connections on the goroutine engine, as pending, before the
// sessions that waited for it on the loop are woken: they go there too
// (loopSession.joinFallback) and join it.
func (ls *loopSession) tlsFallback(d *tlsDial) {
	s, ctx, rec, done := ls.s, ls.ctx, ls.rec, ls.done
	st := s.q.state()
	st.tlsFallback.CompareAndSwap(nil, &d.why)
	var gc *groupConn
	if s.group != nil && d.tc.ConnectionState().NegotiatedProtocol == http2.NextProtoTLS {
		gc = s.group.carry()
	}
	ls.openDone()
	ls.unwatchCtx()
	ls.active = false
	ls.ctx, ls.rec, ls.done, ls.x, ls.ws = nil, nil, nil, h1Exchange{}, nil
	rec.Connected, rec.TLSDone = d.connected, d.tlsDone
	go func() {
		s.doFallback(ctx, rec, d.raw, d.tc, gc)
		done(rec)
	}()
}

// joinFallback: the Request's TLS moved to the goroutine engine
// (tlsFallback) while this request of a group waited on the loop for the
// group's connection: the request goes there too, from its start, and
// joins the group's connection as Session.Do does — the one its opener
// carried over, not one of its own.
func (ls *loopSession) joinFallback() {
	s, ctx, rec, done := ls.s, ls.ctx, ls.rec, ls.done
	ls.unwatchCtx()
	ls.active = false
	ls.ctx, ls.rec, ls.done, ls.x, ls.ws = nil, nil, nil, h1Exchange{}, nil
	go func() {
		s.doHere(ctx, rec, rec.Start)
		done(rec)
	}()
}

// doFallback runs the rest of a request whose connection the handshake
// goroutine made on the goroutine engine, which keeps the connection
// when the exchange allows, as its own — or, with gc, as its group's
// (gc pending until then: h2Group.carry).
func (s *Session) doFallback(ctx context.Context, rec *result.Request, raw net.Conn, tc *tls.Conn, gc *groupConn) {
	q := s.q
	defer q.fillEmitted(rec)
	if s.buf == nil {
		s.buf = make([]byte, ReadBufferSize)
	}
	s.id = q.state().conns.Add(1)
	s.raw, s.conn, s.proto = raw, tc, ProtoHTTP1
	rec.ConnID = s.id
	deadline := s.clk.ToTime(rec.Start).Add(q.Timeout)
	if tc.ConnectionState().NegotiatedProtocol == http2.NextProtoTLS {
		// HTTP/2 over TLS 1.2, as Session.connect starts it.
		ok := s.startH2(ctx, rec, ProtoH2)
		switch {
		case gc != nil && ok:
			s.group.opened(gc, s)
			s.gc = gc
		case gc != nil:
			s.group.abandon(gc)
		}
		if ok {
			rec.Reused, rec.Proto = false, s.proto
			s.doH2(ctx, rec, deadline, false)
		}
	} else {
		rec.Reused, rec.Proto = false, s.proto
		// doH1 keeps the connection (s.conn) for the session's next
		// request, which runs on the goroutine engine, or closes it.
		s.doH1(ctx, rec, deadline, false)
	}
	if rec.End == 0 {
		rec.End = s.clk.Now()
	}
}

// maxKeptPlaintext bounds the plaintext buffer a TLS connection keeps
// from one read to the next (token reads need a few hundred bytes).
const maxKeptPlaintext = 16 << 10

// recv reads once from c's socket. Over TLS it opens the records read and
// returns their plaintext (c.readAt is when the read returned), which may
// be empty (a record not yet complete, a session ticket): err is then
// unix.EAGAIN. As from evloop.Loop.Read, no bytes and a nil error is the
// end of the stream: the peer's FIN, or its close_notify. Over TLS the
// records after the plaintext may have ended the stream: then both are
// returned, the plaintext and io.EOF (a close_notify) or the error.
func (c *econn) recv() ([]byte, error) {
	l := c.ls.l
	if c.tls == nil {
		return l.Read(&c.reg)
	}
	if c.tlsEOF {
		return nil, nil
	}
	p, err := l.Read(&c.reg)
	c.readAt = c.ls.s.clk.Now()
	if len(p) == 0 {
		if err == nil {
			if err := c.tls.AtEOF(); err != io.EOF {
				return nil, err
			}
		}
		return nil, err
	}
	if cap(c.pt) > maxKeptPlaintext { // a large read once: thousands of connections would each keep it
		c.pt = nil
	}
	c.pt, err = c.tls.Open(c.pt[:0], p)
	switch {
	case err == io.EOF:
		c.tlsEOF = true
		if len(c.pt) == 0 {
			return nil, nil
		}
		return c.pt, io.EOF
	case err != nil:
		return c.pt, err
	case len(c.pt) == 0:
		return nil, unix.EAGAIN
	}
	return c.pt, nil
}

// seal returns the request bytes as they go on c's wire: sealed into
// dst over TLS, else out itself.
func (c *econn) seal(dst, out []byte) []byte {
	if c.tls == nil {
		return out
	}
	return c.tls.Seal(dst, out)
}
