package client

import (
	"context"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/server"
)

// TestHeartbeatsCounted asks the dummy server for heartbeats during a
// silent think, directly and through a gateway that passes only events on
// (comments are lost): the record holds the heartbeats seen and the
// server's count of those it wrote, equal directly; through the gateway,
// the comments are gone and the server's count is not. The record holds
// when the server began the stream too.
func TestHeartbeatsCounted(t *testing.T) {
	const heartbeatAttempts = 5
	addr, reg := serveWith(t, server.Config{Tokens: 1, ThinkMs: 100, DelayMs: 0.2})
	gw := eventGateway(t, addr, func(ev sseEv) []sseEv { return []sseEv{ev} })
	for _, d := range []api.Dialect{api.Chat, api.Anthropic} {
		for _, via := range []struct{ name, addr string }{{"direct", addr}, {"event gateway", gw}} {
			what := d.String() + " " + via.name
			q := New(Options{Dialect: d, Addr: via.addr, Tokens: 2, ExpectTokens: 2, HeartbeatMs: 20,
				Timeout: 10 * time.Second, Registry: reg, IDPrefix: "hb"})
			// At least one heartbeat in 100 ms of silence at 20 ms, and
			// Anthropic's start ping — when the server's shard runs: one
			// that a busy machine wakes only once its token is due
			// writes the token, no heartbeat (2 runs in 8 of the
			// package at a load of 13). The stream is asked for again
			// then, up to heartbeatAttempts times.
			min := 1 + api.StartHeartbeats(d)
			var rec *result.Request
			for attempt := 1; ; attempt++ {
				rec = &result.Request{Batch: "gw"}
				q.Do(context.Background(), rec)
				if !rec.OK() || !rec.ServerRecord {
					t.Fatalf("%s: %q, server record %v; want ok, with the server's record", what, rec.Failure.Error(), rec.ServerRecord)
				}
				if rec.ServerHeartbeats >= min || attempt == heartbeatAttempts {
					break
				}
				t.Logf("%s: attempt %d: the server wrote %d heartbeats; again", what, attempt, rec.ServerHeartbeats)
			}
			// The server began the stream after the request began, and
			// before its head arrived.
			if rec.ServerStart <= rec.Start || rec.ServerStart > rec.HeadAt {
				t.Errorf("%s: the server began the stream at %d; want after the request's start %d, by its head %d",
					what, rec.ServerStart, rec.Start, rec.HeadAt)
			}
			seen := rec.Comments + rec.Pings
			switch {
			case rec.ServerHeartbeats < min:
				t.Errorf("%s: the server wrote %d heartbeats, want at least %d", what, rec.ServerHeartbeats, min)
			case via.addr == addr && seen != rec.ServerHeartbeats:
				t.Errorf("%s: %d heartbeats seen, the server wrote %d", what, seen, rec.ServerHeartbeats)
			case via.addr == gw && d == api.Chat && seen != 0:
				t.Errorf("%s: %d heartbeats seen through a gateway that drops comments", what, seen)
			case via.addr == gw && d == api.Anthropic && seen != rec.ServerHeartbeats:
				t.Errorf("%s: %d ping events seen, the server wrote %d (the gateway passes events)", what, seen, rec.ServerHeartbeats)
			}
		}
	}
}
