package client

import (
	"context"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/testutil"
	"github.com/sse-latency/sse-latency/internal/wsrelay"
)

// startRelay runs a wsrelay in front of upstream for the test.
func startRelay(t *testing.T, upstream string, cfg wsrelay.Config) string {
	t.Helper()
	cfg.Upstream = func() string { return upstream }
	r := wsrelay.Start(testutil.Listen(t), cfg)
	t.Cleanup(func() { r.Close() })
	return r.Addr()
}

// TestWebSocketThroughRelay measures through the seed report's relay
// (WebSocket to the client, SSE Responses upstream to the dummy server,
// one message per event): every token by its pi_ts, which the relay
// passes unchanged; through a relay that strips pi_ts, every token by
// content; through one that merges text deltas two by two, every token
// by content too, two per message. The connection is kept across
// requests (-k).
func TestWebSocketThroughRelay(t *testing.T) {
	const n, requests = 10, 3
	addr, reg := ourServer(t)
	for _, tt := range []struct {
		name              string
		cfg               wsrelay.Config
		byPiTs, byContent int
		maxPerRead        int // at least
	}{
		{"one message per event", wsrelay.Config{}, n, 0, 1},
		{"pi_ts stripped", wsrelay.Config{StripPiTs: true}, 0, n, 1},
		{"deltas merged", wsrelay.Config{Merge: 2}, 0, n, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := wsOptions(startRelay(t, addr, tt.cfg), n)
			o.Registry, o.KeepAlive = reg, true
			s := New(o).NewSession()
			defer s.Close()
			for i := range requests {
				rec := &result.Request{Batch: "gw", Index: i}
				s.Do(context.Background(), rec)
				if !rec.OK() || len(rec.Tokens) != n || rec.ByPiTs != tt.byPiTs || rec.ByContent != tt.byContent {
					t.Fatalf("request %d: %q, %d tokens, %d by pi_ts, %d by content; want ok, %d tokens, %d by pi_ts, %d by content",
						i, rec.Failure.Error(), len(rec.Tokens), rec.ByPiTs, rec.ByContent, n, tt.byPiTs, tt.byContent)
				}
				if rec.Reused != (i > 0) || rec.Proto != ProtoWebSocket {
					t.Errorf("request %d: reused %v over %q; want reused after the first, over websocket", i, rec.Reused, rec.Proto)
				}
				if tt.maxPerRead > 1 && rec.MaxTokensPerRead < tt.maxPerRead {
					t.Errorf("request %d: at most %d tokens per read through a relay that merges deltas by %d", i, rec.MaxTokensPerRead, tt.maxPerRead)
				}
				for k, tok := range rec.Tokens {
					if int(rec.TokenIndex(k)) != k || tok.Emitted <= 0 || tok.Arrived < tok.Emitted {
						t.Errorf("request %d, token %d: index %d, emitted %d, arrived %d", i, k, rec.TokenIndex(k), tok.Emitted, tok.Arrived)
					}
				}
			}
		})
	}
	if reg.Len() != 0 {
		t.Errorf("the registry holds %d entries after every request took its own", reg.Len())
	}
}

// TestWebSocketRelayUpstreamDown: the relay answers an error event when its
// upstream is gone; the request fails with it, quoted.
func TestWebSocketRelayUpstreamDown(t *testing.T) {
	// Nothing listens on port 1: the relay's upstream is refused.
	o := wsOptions(startRelay(t, "127.0.0.1:1", wsrelay.Config{}), 3)
	o.Timeout = 10 * time.Second
	rec := &result.Request{Batch: "gw"}
	New(o).Do(context.Background(), rec)
	if rec.Failure.Kind != result.StreamError || rec.Failure.Detail == "" {
		t.Errorf("%q (kind %s), want a stream error quoting the relay's error event", rec.Failure.Error(), rec.Failure.Kind)
	}
}
