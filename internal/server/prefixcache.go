package server

import (
	"encoding/binary"
	"hash/maphash"
	"sync"

	"github.com/sse-latency/sse-latency/internal/api"
)

// DefaultCacheBlocks bounds the blocks the simulated prefix cache
// remembers: 262,144 blocks (134 million tokens at 512 a block) in about
// 12 MB; past it the oldest blocks are forgotten first.
const DefaultCacheBlocks = 1 << 18

// prefixCache simulates a model server's prefix (KV) cache over the
// prompts' text, as vLLM's automatic prefix caching keys it: the prompt is
// cut into blocks of blockTokens tokens (api.TokenBytes bytes each), each
// full block identified by a hash chained over every block before it, so
// that a block is found only when the whole prefix up to it was seen. A
// prompt reads from the cache the blocks it finds from its start, and
// writes the rest of its full blocks; its last, partial block is never
// cached. It runs once per request, never per token.
type prefixCache struct {
	blockTokens int
	seed        maphash.Seed

	mu    sync.Mutex
	seen  map[uint64]struct{}
	order []uint64 // the blocks in the order they were written: a ring, for the oldest to go first
	next  int      // where the next block goes in order, once it is full
	limit int
}

// newPrefixCache returns the cache of blocks of blockTokens tokens holding
// at most limit blocks (0: DefaultCacheBlocks); nil for blockTokens <= 0
// (no cache: the usage's cache fields are null).
func newPrefixCache(blockTokens, limit int) *prefixCache {
	if blockTokens <= 0 {
		return nil
	}
	if limit <= 0 {
		limit = DefaultCacheBlocks
	}
	return &prefixCache{blockTokens: blockTokens, seed: maphash.MakeSeed(), seen: make(map[uint64]struct{}), limit: limit}
}

// account looks text's full blocks up and adds them, and returns the
// prompt tokens read from the cache (the blocks found from the start) and
// written to it (the full blocks after those).
func (c *prefixCache) account(text []byte) (cached, written int) {
	size := c.blockTokens * api.TokenBytes
	n := len(text) / size
	if n == 0 {
		return 0, 0
	}
	keys := make([]uint64, n)
	var h maphash.Hash
	h.SetSeed(c.seed)
	var prev [8]byte
	for j := range n {
		h.Reset()
		h.Write(prev[:])
		h.Write(text[j*size : (j+1)*size])
		keys[j] = h.Sum64()
		binary.LittleEndian.PutUint64(prev[:], keys[j])
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	hit := 0
	for hit < n {
		if _, ok := c.seen[keys[hit]]; !ok {
			break
		}
		hit++
	}
	for _, k := range keys[hit:] {
		c.add(k)
	}
	return hit * c.blockTokens, (n - hit) * c.blockTokens
}

// add remembers block k, forgetting the oldest when the cache is full.
func (c *prefixCache) add(k uint64) {
	if _, ok := c.seen[k]; ok {
		return
	}
	if len(c.order) < c.limit {
		c.order = append(c.order, k)
	} else {
		delete(c.seen, c.order[c.next])
		c.order[c.next] = k
		c.next = (c.next + 1) % c.limit
	}
	c.seen[k] = struct{}{}
}

// promptUsage is the prompt side of the usage of a request with body and
// merged hints h: its tokens, counted in the sse-latency prompt the body
// holds (api.PromptText; the reference's short-prompt figure for another
// client's), and the cache figures — the Cached hint's when it has one
// (none: no figure), else the simulated cache's, else none.
func (s *Server) promptUsage(body []byte, h api.Hints) api.PromptUsage {
	var p api.PromptUsage
	text, ok := api.PromptText(body)
	if ok {
		p.Tokens = api.PromptTokensOf(text)
	}
	switch {
	case h.Cached != nil && *h.Cached < 0: // no figure
	case h.Cached != nil:
		p.CacheKnown, p.Cached = true, int(*h.Cached)
	case s.cache != nil:
		p.CacheKnown = true
		if ok {
			p.Cached, p.Written = s.cache.account(text)
		}
	}
	return p
}
