//go:build linux

package server

import "github.com/sse-latency/sse-latency/internal/evloop"

// onLoop puts shard sh, the i-th, on an event loop when the engine says
// so: the loop's Ticker is its alarm, and the loop runs its ticks. It
// reports false when the shard is to have its own goroutine.
func (s *Server) onLoop(sh *shard, i int) bool {
	if ok, _ := s.cfg.Engine.Loops(); !ok {
		return false
	}
	all, err := evloop.Loops()
	if err != nil {
		return false
	}
	t, err := all[i%len(all)].NewTicker(func(t *evloop.Ticker) { sh.tick(t.Poll) })
	if err != nil {
		s.logf("server: shard %d: %v; it runs on a goroutine of its own", i, err)
		return false
	}
	sh.waker = t
	return true
}
