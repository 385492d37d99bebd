package batch

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/client"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/server"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// startServer runs the dummy server for the duration of the test and
// returns its address.
func startServer(t *testing.T, cfg server.Config) string {
	t.Helper()
	return runServer(t, cfg).Addr().String()
}

// runServer is startServer that returns the server.
func runServer(t *testing.T, cfg server.Config) *server.Server {
	t.Helper()
	srv := server.New(testutil.Listen(t), cfg)
	testutil.Serve(t, srv)
	return srv
}

// cancelWhenStreaming calls cancel once srv streams n answers at once (or
// gives up waiting after testutil.AwaitBound: the test then fails on what
// it reports).
func cancelWhenStreaming(srv *server.Server, n int64, cancel context.CancelFunc) {
	go func() {
		testutil.Poll(func() bool { return srv.ActiveStreams() >= n }, testutil.AwaitBound)
		cancel()
	}()
}

// TestRunKeepsConcurrencyAndReportsEveryRequest: every request reaches the
// sink exactly once with its index, and no more than Concurrency are ever
// in flight.
func TestRunKeepsConcurrencyAndReportsEveryRequest(t *testing.T) {
	addr := startServer(t, server.Config{Tokens: 5, DelayMs: 2})
	req := client.NewChatRequest(addr, -1, 10*time.Second)
	seen := map[int]bool{}
	var mu sync.Mutex
	var peak int
	spec := Spec{Name: "gw", Requests: 9, Concurrency: 3, Request: req}
	Run(context.Background(), spec, func(rec *result.Request) {
		mu.Lock()
		defer mu.Unlock()
		if seen[rec.Index] {
			t.Errorf("request %d reported twice", rec.Index)
		}
		seen[rec.Index] = true
		if !rec.OK() || rec.Batch != "gw" || len(rec.Tokens) != 5 {
			t.Errorf("request %d: %q, batch %q, %d tokens", rec.Index, rec.Failure.Error(), rec.Batch, len(rec.Tokens))
		}
	}, func(p Progress) {
		mu.Lock()
		peak = max(peak, p.InFlight)
		mu.Unlock()
	})
	if len(seen) != 9 {
		t.Errorf("%d requests reported, want 9", len(seen))
	}
	if peak > 3 {
		t.Errorf("%d requests in flight at once, want at most 3", peak)
	}
}

func TestRunCancelStopsStarting(t *testing.T) {
	srv := runServer(t, server.Config{Tokens: 100000, DelayMs: 1})
	req := client.NewChatRequest(srv.Addr().String(), -1, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelWhenStreaming(srv, 2, cancel) // both slots busy
	var n, interrupted int
	done := make(chan struct{})
	go func() {
		Run(ctx, Spec{Name: "gw", Requests: 50, Concurrency: 2, Request: req}, func(rec *result.Request) {
			n++
			if rec.Failure.Kind == result.Interrupted {
				interrupted++
			}
		}, nil)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after cancellation")
	}
	if n != 2 || interrupted != 2 {
		t.Errorf("%d requests reported (%d interrupted), want the 2 in flight, both interrupted, and no new ones", n, interrupted)
	}
}

// TestProgress: progress reports, about once a second, the total, the
// requests done and in flight and the tokens so far. The streams last until
// a report has counted tokens (then the run is cancelled), so that there is
// one however slow the machine; a batch that ended before its first report
// (a race between the ticker and the end) would report nothing.
func TestProgress(t *testing.T) {
	addr := startServer(t, server.Config{Tokens: 100000, DelayMs: 1})
	req := client.NewChatRequest(addr, -1, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var last Progress
	calls := 0
	Run(ctx, Spec{Name: "gw", Requests: 2, Concurrency: 2, Request: req}, func(*result.Request) {},
		func(p Progress) {
			calls++
			last = p
			if p.Tokens > 0 {
				cancel()
			}
		})
	if calls == 0 {
		t.Fatal("progress never called during a batch of two 100 s streams")
	}
	if last.Total != 2 || last.Tokens <= 0 || last.Done+last.InFlight != 2 || last.Elapsed < time.Second/2 {
		t.Errorf("progress %+v: want total 2, tokens counted, done+in flight = 2, about a second elapsed", last)
	}
}
