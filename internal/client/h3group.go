package client

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sse-latency/sse-latency/internal/result"
)

// This file is Options.StreamsPerConn with HTTP/3: the sessions of a
// group share one QUIC connection, each request a bidirectional stream of
// its own on it, concurrently (quic-go multiplexes them natively).
//
// The peer's stream limit. QUIC has no SETTINGS to read it from, and
// quic-go keeps the peer's MAX_STREAMS to itself: a stream beyond it waits
// in quic-go's OpenStreamSync until one of the others ends. The request
// waits there, within its own timeout (and idle timeout); one that runs
// out of time before its stream opened fails naming the limit
// (h3StreamWait), not as a plain timeout. A group has one connection at a
// time: a new one only once it is closed or the gateway's GOAWAY came.

// h3Group is one group of sessions sharing a QUIC connection: session k
// of a Request is in group k/StreamsPerConn.
type h3Group struct {
	mu  sync.Mutex
	cur *h3GroupConn // the connection new streams go to; nil before the first, or while none is open
}

// h3GroupConn is a group's QUIC connection, reference-counted by the
// sessions holding it, closed when the last one lets it go.
type h3GroupConn struct {
	ready   chan struct{} // closed once opened (c set) or abandoned (gone)
	gone    bool          // abandoned: its opener could not open it
	c       *h3Conn
	id      int64
	refs    int          // sessions holding it (h3Group.mu)
	streams atomic.Int32 // request streams open on it (their HEADERS written)
}

// usable reports whether gc takes new streams: open, and no GOAWAY from
// the gateway.
func (gc *h3GroupConn) usable() bool {
	return !gc.gone && gc.c != nil && gc.c.open() && !gc.c.watch.goneAway()
}

// h3GroupOf returns the group a new session of q joins, nil when its
// requests do not share QUIC connections.
func (q *Request) h3GroupOf() *h3Group {
	if !q.h3Multiplexes() {
		return nil
	}
	return groupFor(q, &q.state().h3groups)
}

// h3Multiplexes reports whether the requests of o share QUIC connections
// (Options.StreamsPerConn with HTTP3 and KeepAlive).
func (o *Options) h3Multiplexes() bool {
	return o.StreamsPerConn > 1 && o.KeepAlive && o.HTTP3 && !o.WebSocket
}

// acquire returns the group's connection with a reference for the caller
// (open false), or a new one the caller is to open (open true: opened or
// abandon tell the others); nil when ctx ended while one being opened was
// awaited.
func (g *h3Group) acquire(ctx context.Context) (gc *h3GroupConn, open bool) {
	for {
		g.mu.Lock()
		c := g.cur
		if c == nil || readyNow(c.ready) && !c.usable() {
			c = &h3GroupConn{ready: make(chan struct{}), refs: 1}
			g.cur = c
			g.mu.Unlock()
			return c, true
		}
		c.refs++ // held while awaited too: it stays open for the waiter
		g.mu.Unlock()
		select {
		case <-c.ready:
		case <-ctx.Done():
			g.release(c)
			return nil, false
		}
		if c.usable() {
			return c, false
		}
		g.release(c)
	}
}

// readyNow reports whether ch is closed.
func readyNow(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// opened makes the QUIC connection session s just opened the group's.
func (g *h3Group) opened(gc *h3GroupConn, s *Session) {
	g.mu.Lock()
	gc.c, gc.id = s.h3, s.id
	g.mu.Unlock()
	close(gc.ready)
}

// abandon tells the group that gc will not be opened.
func (g *h3Group) abandon(gc *h3GroupConn) {
	g.mu.Lock()
	gc.gone = true
	g.mu.Unlock()
	close(gc.ready)
	g.release(gc)
}

// release lets gc go: the last session to hold it closes it.
func (g *h3Group) release(gc *h3GroupConn) {
	g.mu.Lock()
	gc.refs--
	last := gc.refs == 0
	if last && g.cur == gc {
		g.cur = nil
	}
	g.mu.Unlock()
	if last && gc.c != nil {
		gc.c.close()
	}
}

// joinH3Group puts the session on its group's QUIC connection, opening
// it when there is none (or it is closed, or went away). ok is false when
// that failed (rec.Failure says why).
func (s *Session) joinH3Group(ctx context.Context, rec *result.Request, deadline time.Time) (reused, ok bool) {
	wctx, cancel := context.WithDeadline(ctx, deadline)
	gc, open := s.h3group.acquire(wctx)
	cancel()
	if gc == nil {
		rec.Failure = s.q.classify(ctx, context.DeadlineExceeded, result.Failure{Kind: result.Timeout})
		return false, false
	}
	if !open {
		s.h3gc = gc
		s.h3, s.id, s.proto = gc.c, gc.id, ProtoH3
		return true, true
	}
	if !s.connectH3(ctx, rec, deadline) {
		s.h3group.abandon(gc)
		return false, false
	}
	s.h3group.opened(gc, s)
	s.h3gc = gc
	return false, true
}

// leaveH3Group lets the session's group connection go (Close).
func (s *Session) leaveH3Group() {
	if s.h3gc != nil {
		s.h3group.release(s.h3gc)
		s.h3gc = nil
	}
}

// h3StreamWait is the failure of a request whose time ran out while it
// waited for a stream on its QUIC connection: the peer's stream limit
// (MAX_STREAMS) reached, inflight streams of the others open on it.
func h3StreamWait(inflight int) result.Failure {
	return result.Failure{Kind: result.RecvError, Detail: fmt.Sprintf(
		"send: HTTP/3: no QUIC stream opened before the request's time ran out: the gateway's stream limit (MAX_STREAMS) was reached, %d streams in flight on the connection", inflight)}
}
