package client

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"

	"github.com/sse-latency/sse-latency/internal/result"
)

// This file is Options.StreamsPerConn on the goroutine engine: the
// sessions of a group share HTTP/2 connections, each request a stream of
// its own on one of them, concurrently, as x/net's ClientConn multiplexes
// them natively.

// h2SettingsWait bounds how long the slots joining a group's new
// connection wait for the peer's first SETTINGS, counted from when the
// connection is up, each within its own request's timeout too; the same
// bound on every engine. A peer that sent nothing by then fails the
// joiners, named (noSettings), and the requests that try to join the
// connection later, until its opener lets it go; the opener's own request
// goes on within its timeout. On the goroutine engine the SETTINGS are
// known once a PING is answered (the peer's SETTINGS come before anything
// else it sends); every HTTP/2 peer answers PING (RFC 9113 §6.7), and one
// that sent something but no answer is joined after the bound, with what
// the connection knows of it, the wait showing in the joiners' written
// phase. The event loops read the SETTINGS themselves.
const h2SettingsWait = 10 * time.Second

// h2Hooks are test knobs of the groups' joiners (Options.hooks): a
// shorter bound and counters the tests await. nil outside the tests.
type h2Hooks struct {
	settingsWait time.Duration // the bound instead of h2SettingsWait, when > 0
	waits        atomic.Int64  // joins that started waiting for a group's pending connection
	writes       atomic.Int64  // on the event loops: the writes to the socket of group connections
}

// settingsWait returns the bound on the joiners' wait for a group
// connection's SETTINGS: h2SettingsWait, or the tests' own.
func (o *Options) settingsWait() time.Duration {
	if o.hooks != nil && o.hooks.settingsWait > 0 {
		return o.hooks.settingsWait
	}
	return h2SettingsWait
}

// noSettings is the failure of a request that was to join a group
// connection whose peer sent no SETTINGS within the bound (settingsWait).
func (o *Options) noSettings() result.Failure {
	return result.Failure{Kind: result.RecvError, Detail: fmt.Sprintf("http2: no SETTINGS from the server within %v", o.settingsWait())}
}

// waited counts a join that waits for a group's pending connection (the
// tests' hook).
func (o *Options) waited() {
	if o.hooks != nil {
		o.hooks.waits.Add(1)
	}
}

// h2Group is one group of sessions sharing HTTP/2 connections
// (Options.StreamsPerConn): session k of a Request is in group
// k/StreamsPerConn.
type h2Group struct {
	mu    sync.Mutex
	conns []*groupConn // the connections that may take more streams, oldest first

	loop loopGroup // the group on the event loops (h2loop_linux.go)
}

// groupConn is one connection of a group, reference-counted by the
// sessions holding it, closed when the last one lets it go.
type groupConn struct {
	ready  chan struct{} // closed once open (or abandoned) and the peer's SETTINGS are known
	gone   bool          // abandoned: its opener could not open it for the group
	silent bool          // the peer sent nothing within the bound (set before ready is closed)

	//lint:ignore SA1019 see shared in client.go
	cc        *http2.ClientConn
	mux       *muxConn
	conn, raw net.Conn
	id        int64
	proto     string
	refs      int          // sessions holding it (h2Group.mu)
	streams   atomic.Int32 // streams in flight on it
}

// groupOf returns the group a new session of q joins, nil when its
// requests do not share connections: StreamsPerConn at most 1, no
// KeepAlive, or no HTTP/2 (H2C, or HTTP2 over TLS).
func (q *Request) groupOf() *h2Group {
	if !q.multiplexes() {
		return nil
	}
	return groupFor(q, &q.state().groups)
}

// groupFor returns the group the next session of q joins in groups (a
// map of q's state), made the first time it is asked for: session k joins
// group k/StreamsPerConn.
func groupFor[G any](q *Request, groups *map[int64]*G) *G {
	st := q.state()
	k := st.sessions.Add(1) - 1
	g := k / int64(q.StreamsPerConn)
	st.groupsMu.Lock()
	defer st.groupsMu.Unlock()
	if *groups == nil {
		*groups = make(map[int64]*G)
	}
	if (*groups)[g] == nil {
		(*groups)[g] = new(G)
	}
	return (*groups)[g]
}

// multiplexes reports whether the requests of o share HTTP/2 connections
// (see Options.StreamsPerConn).
func (o *Options) multiplexes() bool {
	return o.StreamsPerConn > 1 && o.KeepAlive && !o.HTTP3 && !o.WebSocket && (o.H2C || o.HTTP2)
}

// acquire returns a connection of the group with a stream reserved on it
// for the caller (open false), or a new entry the caller is to open
// (open true; opened or abandon tell the others); nil when ctx ended
// while a connection being opened was awaited, or (silent true) when the
// one to join is a connection whose peer sent no SETTINGS within the
// bound.
func (g *h2Group) acquire(ctx context.Context, o *Options) (c *groupConn, open, silent bool) {
	for {
		g.mu.Lock()
		var pending *groupConn
		live := g.conns[:0]
		for _, c := range g.conns {
			select {
			case <-c.ready:
			default:
				pending = c
				live = append(live, c)
				continue
			}
			if c.gone || c.cc == nil {
				continue
			}
			if s := c.cc.State(); s.Closed || s.Closing {
				continue // out of the list: its sessions let it go, the last closes it
			}
			live = append(live, c)
		}
		clear(g.conns[len(live):])
		g.conns = live
		mute := false
		for _, c := range g.conns {
			select {
			case <-c.ready:
			default:
				continue
			}
			if c.silent {
				mute = true
				continue
			}
			if c.cc.ReserveNewRequest() {
				c.refs++
				g.mu.Unlock()
				return c, false, false
			}
		}
		switch {
		case pending == nil && mute:
			g.mu.Unlock()
			return nil, false, true
		case pending == nil:
			c := &groupConn{ready: make(chan struct{}), refs: 1}
			g.conns = append(g.conns, c)
			g.mu.Unlock()
			return c, true, false
		}
		// The wait holds a reference: the connection stays open for the
		// waiter even if its opener is done with it first.
		pending.refs++
		g.mu.Unlock()
		o.waited()
		select {
		case <-pending.ready:
		case <-ctx.Done():
			g.release(pending)
			return nil, false, false
		}
		if pending.silent {
			g.release(pending)
			return nil, false, true
		}
		if !pending.gone && pending.cc.ReserveNewRequest() {
			return pending, false, false
		}
		g.release(pending)
	}
}

// opened makes c, just opened by session s (its cc, its connection), the
// group's, with the opener's stream reserved on it, and lets the other
// slots join it once the peer's SETTINGS are known.
func (g *h2Group) opened(c *groupConn, s *Session) {
	g.mu.Lock()
	c.cc, c.mux, c.conn, c.raw, c.id, c.proto = s.cc, s.stamp, s.conn, s.raw, s.id, s.proto
	g.mu.Unlock()
	c.cc.ReserveNewRequest() // the opener's stream, counted before another joins
	wait := s.q.settingsWait()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		// Answered after the peer's SETTINGS, which come first; the
		// connection closed, it returns at once.
		if c.cc.Ping(ctx) != nil && ctx.Err() != nil && !c.mux.heard.Load() {
			c.silent = true
		}
		close(c.ready)
	}()
}

// carry adds to the group a connection its opener has made, pending
// until opened (or abandon) says how it went, held by the opener: on the
// event loops a handshake that fell back to the goroutine engine
// (tlsFallback) hands its connection to the group so, and the sessions
// that waited for it there wait for it here. It never blocks: the loop
// calls it.
func (g *h2Group) carry() *groupConn {
	c := &groupConn{ready: make(chan struct{}), refs: 1}
	g.mu.Lock()
	g.conns = append(g.conns, c)
	g.mu.Unlock()
	return c
}

// abandon tells the group that c will not be opened for it: the connect
// failed, or the server chose HTTP/1.1.
func (g *h2Group) abandon(c *groupConn) {
	g.mu.Lock()
	c.gone = true
	g.mu.Unlock()
	close(c.ready)
	g.release(c) // the opener's reference
}

// release lets c go: the last session to hold it closes it.
func (g *h2Group) release(c *groupConn) {
	g.mu.Lock()
	c.refs--
	last := c.refs == 0
	if last {
		for i, x := range g.conns {
			if x == c {
				g.conns = append(g.conns[:i], g.conns[i+1:]...)
				break
			}
		}
	}
	g.mu.Unlock()
	if last && c.cc != nil {
		c.cc.Close()
	}
}

// joinGroup puts the session on a connection of its group: one that can
// take another stream (reused), else one it opens for the group. ok is
// false when that failed (rec.Failure says why). A server that answers
// h2 over TLS with HTTP/1.1 leaves the session a connection of its own.
func (s *Session) joinGroup(ctx context.Context, rec *result.Request, deadline time.Time) (reused, ok bool) {
	wctx, cancel := context.WithDeadline(ctx, deadline)
	c, open, silent := s.group.acquire(wctx, &s.q.Options)
	cancel()
	if silent {
		rec.Failure = s.q.classify(ctx, nil, s.q.noSettings())
		return false, false
	}
	if c == nil {
		rec.Failure = s.q.classify(ctx, context.DeadlineExceeded, result.Failure{Kind: result.Timeout})
		return false, false
	}
	if !open {
		s.gc = c
		s.conn, s.raw, s.cc, s.stamp, s.id, s.proto = c.conn, c.raw, c.cc, c.mux, c.id, c.proto
		return true, true
	}
	if !s.connect(ctx, rec, deadline) {
		s.group.abandon(c)
		return false, false
	}
	if s.cc == nil {
		s.group.abandon(c)
		return false, true
	}
	s.group.opened(c, s)
	s.gc = c
	return false, true
}

// leaveGroup lets the session's group connection go (Close).
func (s *Session) leaveGroup() {
	if s.gc != nil {
		s.group.release(s.gc)
		s.gc = nil
	}
}

// groupUsable reports whether the session's group connection takes its
// next stream (reserved then): false when the connection is full (not a
// failure: another one is joined) or, a reuse failure, closed or closing.
func (s *Session) groupUsable(rec *result.Request) bool {
	if s.cc.ReserveNewRequest() {
		return true
	}
	if st := s.cc.State(); st.Closed || st.Closing {
		rec.ReuseFailed = true
	}
	return false
}
