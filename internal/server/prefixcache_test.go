package server

import (
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/api"
)

// TestPrefixCache: a block is read from the cache only when its whole
// prefix was sent before; the partial last block is never cached; past
// its limit the cache forgets its oldest blocks first.
func TestPrefixCache(t *testing.T) {
	const block = 8 // tokens: 32 bytes
	text := func(blocks ...string) []byte {
		var b strings.Builder
		for _, s := range blocks {
			b.WriteString(strings.Repeat(s, block*api.TokenBytes))
		}
		return []byte(b.String())
	}
	c := newPrefixCache(block, 4)
	for i, tc := range []struct {
		text            []byte
		cached, written int
	}{
		{text("a", "b"), 0, 16},
		{text("a", "b", "c"), 16, 8},
		{append(text("a", "b"), "ccc"...), 16, 0}, // a partial block: not cached
		{text("x", "b"), 0, 16},                   // b after x is another block than b after a
		{text("a"), 0, 8},                         // the cache held 4 blocks: a went first
		{text("a", "b", "c"), 8, 16},
	} {
		cached, written := c.account(tc.text)
		if cached != tc.cached || written != tc.written {
			t.Errorf("prompt %d: %d cached, %d written; want %d, %d", i, cached, written, tc.cached, tc.written)
		}
	}
	if newPrefixCache(0, 0) != nil {
		t.Error("a cache of 0-token blocks: want none")
	}
}
