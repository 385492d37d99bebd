//go:build !linux

package server

// onLoop: there are no event loops here; every shard has its own
// goroutine.
func (s *Server) onLoop(*shard, int) bool { return false }

// shardFor picks the shard of stream number no on transport t: the shard
// of its HTTP/2 connection (pinnedShard), else by the stream number.
func (s *Server) shardFor(t transport, no uint64) *shard {
	if i, ok := pinnedShard(t); ok {
		return s.shards[i%uint64(len(s.shards))]
	}
	return s.shards[no%uint64(len(s.shards))]
}
