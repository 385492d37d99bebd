package client

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/evloop"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/server"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// TestPrivateLoopsStop runs requests on a private set of event loops
// (Options.Loops), then stops the set while a stream is in flight: the
// request fails naming the stop (evloop.ErrStopped), the loops'
// goroutines end, and the next request on the session fails at once with
// the same cause instead of hanging. It runs in the epoll pass of the
// package's tests only (it picks its engines itself).
func TestPrivateLoopsStop(t *testing.T) {
	if testEngine != EngineEpoll {
		t.Skip("runs in the epoll pass")
	}
	addr := serveOurs(t, server.Config{Engine: evloop.Goroutine})
	es := []evloop.Engine{evloop.Epoll}
	if evloop.UringAvailable() == nil {
		es = append(es, evloop.Uring)
	}
	for _, e := range es {
		t.Run(string(e), func(t *testing.T) { testPrivateLoopsStop(t, addr, e) })
	}
}

func testPrivateLoopsStop(t *testing.T, addr string, e evloop.Engine) {
	set, err := evloop.NewSet(e, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Stop()
	var received atomic.Int64
	delay := 5.0
	q := New(Options{Dialect: api.Chat, Addr: addr, Tokens: 2, ExpectTokens: 2, Timeout: time.Minute,
		KeepAlive: true, Loops: set, Received: &received, Engine: EngineAuto})
	if got, _ := q.ResolveEngine(); got != e {
		t.Fatalf("ResolveEngine() with Loops of %s = %s", e, got)
	}
	s := q.NewSession()
	defer s.Close()
	rec := &result.Request{Batch: "loops"}
	s.Do(context.Background(), rec)
	if rec.Failure.Kind != result.OK || len(rec.Tokens) != 2 {
		t.Fatalf("request on the private set: %q with %d tokens, want ok with 2", rec.Failure.Error(), len(rec.Tokens))
	}
	if s.ev.l != set.Loops()[0] {
		t.Fatal("the session's loop is not the private set's")
	}

	// A long stream, stopped in flight.
	q.Tokens, q.ExpectTokens, q.DelayMs = 100_000, 100_000, &delay
	long := &result.Request{Batch: "loops", Index: 1}
	done := make(chan *result.Request, 1)
	s.Start(context.Background(), long, func(r *result.Request) { done <- r })
	base := received.Load()
	awaitCount(t, &received, base+1, "a token of the long stream")
	set.Stop()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the request in flight did not end after Stop")
	}
	if long.Failure.Kind != result.RecvError || !strings.Contains(long.Failure.Error(), evloop.ErrStopped.Error()) {
		t.Errorf("the request in flight at Stop: %q, want a receive error naming %q", long.Failure.Error(), evloop.ErrStopped)
	}
	for _, l := range set.Loops() {
		frame := fmt.Sprintf("evloop.(*Loop).run(%p", l)
		testutil.AwaitNoGoroutine(t, frame)
	}
	next := &result.Request{Batch: "loops", Index: 2}
	s.Do(context.Background(), next)
	if next.Failure.Kind == result.OK || !strings.Contains(next.Failure.Error(), evloop.ErrStopped.Error()) {
		t.Errorf("a request after Stop: %q, want a failure naming %q", next.Failure.Error(), evloop.ErrStopped)
	}
}

// awaitCount waits until c reaches n (at most a minute).
func awaitCount(t *testing.T, c *atomic.Int64, n int64, what string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for c.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the count is %d after a minute, want %d", what, c.Load(), n)
		}
		runtime.Gosched()
	}
}

// TestPrivateLoopsStopWhileJoining stops a private set of event loops
// while two slots of a group wait for the SETTINGS of the group's new
// connection (a peer that never sends them): every request ends, failing
// named (a receive error naming evloop.ErrStopped: the joiners too, not
// a connect tried on the stopped loop), none hangs, and the loops'
// goroutines end. It runs in the epoll pass (it picks its engines).
func TestPrivateLoopsStopWhileJoining(t *testing.T) {
	if testEngine != EngineEpoll {
		t.Skip("runs in the epoll pass")
	}
	es := []evloop.Engine{evloop.Epoll}
	if evloop.UringAvailable() == nil {
		es = append(es, evloop.Uring)
	}
	for _, e := range es {
		t.Run(string(e), func(t *testing.T) {
			set, err := evloop.NewSet(e, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer set.Stop()
			p := newMutePeer(t, nil, 0, nil)
			hooks := &h2Hooks{}
			q := New(Options{Addr: p.addr, H2C: true, KeepAlive: true, StreamsPerConn: 3, ExpectTokens: 3, Tokens: -1,
				Timeout: 10 * testutil.AwaitBound, Loops: set, Engine: EngineAuto, hooks: hooks})
			sessions, closeAll := newSessions(q, 3)
			defer closeAll()
			done := startSlots(context.Background(), sessions)
			testutil.Await(t, "the opener's request at the peer, two joiners waiting", func() bool {
				return p.ended.Load() == 1 && hooks.waits.Load() == 2
			})
			set.Stop()
			for range 3 {
				r := awaitRecord(t, done, "the slots after Stop")
				if r.Failure.Kind != result.RecvError || !strings.Contains(r.Failure.Error(), evloop.ErrStopped.Error()) {
					t.Errorf("slot %d at Stop: %q, want a receive error naming %q", r.Index, r.Failure.Error(), evloop.ErrStopped)
				}
			}
			for _, l := range set.Loops() {
				testutil.AwaitNoGoroutine(t, fmt.Sprintf("evloop.(*Loop).run(%p", l))
			}
		})
	}
}
