//go:build !linux

package server

// onLoop: there are no event loops here; every shard has its own
// goroutine.
func (s *Server) onLoop(*shard, int) bool { return false }
