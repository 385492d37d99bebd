//go:build linux

package client

import (
	"golang.org/x/sys/unix"

	"github.com/sse-latency/sse-latency/internal/evloop"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/wire"
)

// The epoll engine's WebSocket exchange: doWS's steps on an event loop.
// The request goes out like an HTTP one (the upgrade on a new connection,
// the response.create on a kept one) and each read feeds the same
// wsExchange; what the frames ask the client to write (the
// response.create after the 101, pongs, a close) is written at once,
// non-blocking, and what the socket cannot take yet waits in wsOut while
// the connection is watched for writing. Pings are the connection's
// timer (pingAt). A kept WebSocket is watched while idle: a ping is
// answered, a close or anything else ends it.

// appendRequest appends what the first write of an attempt sends: the
// HTTP request, or over WebSocket the upgrade on a new connection (with a
// fresh key) and the response.create on a kept one.
func (ls *loopSession) appendRequest(dst []byte, id string) []byte {
	s := ls.s
	q := s.q
	switch {
	case !q.WebSocket:
		return q.AppendHTTP(dst, id)
	case ls.reused && s.ws != nil:
		return q.AppendCreate(dst, id)
	}
	s.ws = &wsState{key: newWSKey()}
	return q.AppendUpgrade(dst, s.ws.key)
}

// feedWS feeds one read to the request's wsExchange and writes what it
// asks for; it reports whether the request has ended (a kept connection
// found closed included: wsEnded sends the request again).
func (c *econn) feedWS(p []byte, now int64) bool {
	ls := c.ls
	w := ls.ws
	ended := w.feed(p, now)
	if len(w.out) > 0 {
		err := c.sendWS(w.out)
		w.out = w.out[:0]
		if err != nil && !ended {
			ls.rec.Failure = ls.s.q.classify(ls.ctx, err, sysFailure(result.RecvError, "send: ", err))
			w.ended = true
			return true
		}
	}
	if !ended {
		c.armPing(now)
	}
	return ended
}

// sendWS writes b now, or what the socket cannot take once it can (the
// connection is then watched for writing: see flushWS).
func (c *econn) sendWS(b []byte) error {
	if len(c.wsOut) == 0 {
		n, err := evloop.RawWrite(c.reg.FD(), b)
		if n == len(b) {
			return nil
		}
		if err != nil && err != unix.EAGAIN && err != unix.EINTR {
			return err
		}
		b = b[n:]
	}
	c.wsOut = append(c.wsOut, b...)
	if c.ls.l.Watch(&c.reg, evloop.Write) != nil {
		return errLoopGone
	}
	return nil
}

// flushWS writes what waits in wsOut, the connection being writable; once
// all is out it is watched for reading again.
func (c *econn) flushWS() {
	ls := c.ls
	n, err := evloop.RawWrite(c.reg.FD(), c.wsOut)
	c.wsOut = c.wsOut[n:]
	switch {
	case len(c.wsOut) == 0:
		c.wsOut = nil
		if ls.l.Watch(&c.reg, evloop.Read) != nil {
			ls.failConn(result.Failure{Kind: result.RecvError, Detail: errLoopGone.Error()})
		}
	case err != nil && err != unix.EAGAIN && err != unix.EINTR:
		ls.failConn(ls.s.q.classify(ls.ctx, err, sysFailure(result.RecvError, "send: ", err)))
	}
}

// armPing sets when the connection pings (Options.WSPing after the last
// read) or when the pong of the ping sent is due.
func (c *econn) armPing(now int64) {
	ls := c.ls
	q, w := ls.s.q, ls.ws
	c.pingAt = 0
	ping := q.pingEvery()
	if ping == 0 || w == nil || w.r.statusFailing() {
		return
	}
	if w.pingAt != 0 {
		c.pingAt = w.pingAt + int64(q.pongTimeout())
	} else {
		c.pingAt = now + int64(ping)
	}
	c.schedule()
}

// pingFirst reports whether the ping timer is what fell due at now: before
// the idle timeout and the request's deadline.
func (c *econn) pingFirst(now int64) bool {
	return c.pingAt != 0 && c.pingAt <= now && c.pingAt <= minSet(c.idleAt, c.ls.deadline)
}

// pingDue: the silence lasted Options.WSPing (ping) or the pong is late
// (fail).
func (c *econn) pingDue(now int64) {
	ls := c.ls
	w := ls.ws
	if w.pingAt != 0 {
		ls.failConn(ls.s.q.noPong())
		return
	}
	w.pingAt = c.ls.s.clk.Now()
	if err := c.sendWS(wire.AppendWSFrame(nil, wire.WSPing, nil, wsMask())); err != nil {
		ls.failConn(ls.s.q.classify(ls.ctx, err, sysFailure(result.RecvError, "send: ", err)))
		return
	}
	c.armPing(now)
}

// wsEnded: the request over WebSocket ended (responseEnded). A kept
// connection found closed before any message sends it again on a new
// one; a connection that can carry the next request is kept (see
// wsExchange.reusable), else closed.
func (c *econn) wsEnded() {
	ls := c.ls
	c.pingAt = 0
	switch ls.ws.settle(step{cancelled: ls.ctx.Err() != nil, unsent: len(c.wsOut) > 0}) {
	case fateRetry:
		ls.rec.End = 0
		ls.retry()
		return
	case fateKeep:
	default:
		ls.closeConn()
		ls.finish()
		return
	}
	c.phase = phIdle
	c.idleAt, c.waitAt, c.drainAt = 0, 0, 0
	ls.l.Stop(&c.timer)
	ls.kept.Store(true)
	ls.finish()
}

// idleWS handles what a kept WebSocket received while idle: a ping is
// answered and the connection stays; a close (answered) is the peer
// closing it, anything else poisons it (Session.wsUsable's rules).
func (c *econn) idleWS(p []byte) {
	ls := c.ls
	ws := ls.s.ws
	fd := c.reg.FD()
	for len(p) > 0 {
		m, used, err := ws.fr.Next(p)
		p = p[used:]
		switch {
		case err != nil || m.Op == wire.WSText || m.Op == wire.WSBinary:
			ls.lost = pending
			ls.closeConn()
			return
		case m.Op == wire.WSClose:
			ls.lost = peerClosed
			evloop.RawWrite(fd, wire.AppendWSClose(nil, closeReply(m.Payload), "", wsMask()))
			ls.s.ws = nil // closed both ways: closeConn sends no close
			ls.closeConn()
			return
		case m.Op == wire.WSPing:
			evloop.RawWrite(fd, wire.AppendWSFrame(nil, wire.WSPong, m.Payload, wsMask()))
		case m.Op == 0:
			p = nil
		}
	}
	if ws.fr.Partial() {
		ls.lost = pending
		ls.closeConn()
	}
}

// closeWS sends the client's close before the connection closes, when it
// speaks WebSocket and no close went either way (best effort: what the
// socket takes now), with any frame still waiting before it.
func (c *econn) closeWS() {
	ls := c.ls
	s, w := ls.s, ls.ws
	if s.ws == nil {
		return
	}
	s.ws = nil
	out := c.wsOut
	if w == nil || w.open && !w.sentClose && !w.gotClose {
		out = wire.AppendWSClose(out, wire.WSCloseNormal, "", wsMask())
	}
	c.wsOut = nil
	evloop.RawWrite(c.reg.FD(), out)
}
