//go:build !linux

package server

// onLoop: there are no event loops here; every shard has its own
// goroutine.
func (s *Server) onLoop(*shard, int) bool { return false }

// shardFor picks the shard of stream number no.
func (s *Server) shardFor(_ transport, no uint64) *shard {
	return s.shards[no%uint64(len(s.shards))]
}
