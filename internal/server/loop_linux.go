//go:build linux

package server

import (
	"net"

	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/evloop"
)

// onLoop puts shard sh, the i-th, on an event loop when the engine says
// so: the loop's Ticker is its alarm, and the loop runs its ticks (on an
// io_uring loop, with the loop's batch of sends: a tick's plain HTTP/1.1
// writes go out in one io_uring_enter, evloop.Sends). It reports false
// when the shard is to have its own goroutine.
func (s *Server) onLoop(sh *shard, i int) bool {
	var all []*evloop.Loop
	if s.cfg.Loops != nil {
		all = s.cfg.Loops.Loops()
	} else {
		e, _ := s.cfg.Engine.Resolve()
		if !e.OnLoops() {
			return false
		}
		var err error
		if all, err = evloop.LoopsOf(e); err != nil {
			return false
		}
	}
	l := all[i%len(all)]
	batched := false
	t, err := l.NewTicker(func(t *evloop.Ticker) {
		if !batched { // on the loop's goroutine: its batch of sends, if it has one
			batched = true
			if sb := l.Sends(); sb != nil {
				sh.scratch.sends = sb
				if s.cfg.wrapSends != nil {
					sh.scratch.sends = s.cfg.wrapSends(sb)
				}
			}
		}
		sh.tick(t.Poll)
	})
	if err != nil {
		s.logf("server: shard %d: %v; it runs on a goroutine of its own", i, err)
		return false
	}
	sh.waker = t
	if _, real := s.clk.(clock.RealClock); !real {
		sh.waker = realAlarm{t, s.clk}
	}
	s.affine = len(all) == s.cfg.Shards || s.cfg.Shards%len(all) == 0
	return true
}

// shardFor picks the shard of stream number no on transport t: on the
// event loops, the shard of the loop that reads the client's side of the
// connection when the client is this process's (see evloop.Affine), else
// (and on the goroutine engine) the shard of the HTTP/2 connection
// (pinnedShard), else by the stream number.
func (s *Server) shardFor(t transport, no uint64) *shard {
	if s.affine {
		var c net.Conn
		if hc := h1Of(t); hc != nil {
			c = hc.c
		} else if r, ok := t.(*h2Response); ok {
			c = r.c.c
		}
		if c != nil {
			if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
				if i := evloop.Affine(a.Port); i >= 0 {
					return s.shards[i%len(s.shards)]
				}
			}
		}
	}
	if i, ok := pinnedShard(t); ok {
		return s.shards[i%uint64(len(s.shards))]
	}
	return s.shards[no%uint64(len(s.shards))]
}

// realAlarm arms an event loop's Ticker, whose deadlines are readings of
// the real clock, for deadlines of the server's clock clk (a shifted one).
type realAlarm struct {
	t   *evloop.Ticker
	clk clock.Clock
}

func (a realAlarm) Arm(deadline int64) error { return a.t.Arm(clock.ToReal(a.clk, deadline)) }
func (a realAlarm) Close() error             { return a.t.Close() }
