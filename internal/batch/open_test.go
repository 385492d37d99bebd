package batch

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/client"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/schedule"
	"github.com/sse-latency/sse-latency/internal/server"
)

// collect runs spec and returns the records that reached the sink, sorted by
// Index, failing the test if an index is reported twice or Run does not
// return within a minute.
func collect(t *testing.T, ctx context.Context, spec Spec, progress func(Progress)) []result.Request {
	t.Helper()
	var recs []result.Request
	done := make(chan error)
	go func() {
		done <- Run(ctx, spec, func(rec *result.Request) { recs = append(recs, *rec) }, progress)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run(%+v): %v", spec, err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("Run(%+v) did not return", spec)
	}
	slices.SortFunc(recs, func(a, b result.Request) int { return a.Index - b.Index })
	for i, rec := range recs {
		if rec.Index != i {
			t.Fatalf("indexes reported %v, want 0..%d each once", indexes(recs), len(recs)-1)
		}
	}
	return recs
}

func indexes(recs []result.Request) []int {
	var ix []int
	for _, rec := range recs {
		ix = append(ix, rec.Index)
	}
	return ix
}

// TestOpenLoopConstant: every request reaches the sink, ok; deadlines are
// exactly 1/Rate apart from the first; no request starts before its
// deadline; the first Warmup are flagged.
func TestOpenLoopConstant(t *testing.T) {
	addr := startServer(t, server.Config{Tokens: 3, DelayMs: 1})
	req := client.NewChatRequest(addr, -1, 10*time.Second)
	spec := Spec{Name: "gw", Requests: 6, Rate: 200, Warmup: 2, Request: req}
	recs := collect(t, context.Background(), spec, nil)
	if len(recs) != 6 {
		t.Fatalf("%d requests reported, want 6", len(recs))
	}
	for k, rec := range recs {
		if !rec.OK() || rec.Batch != "gw" {
			t.Errorf("request %d: %q, batch %q", k, rec.Failure.Error(), rec.Batch)
		}
		if got, want := rec.Scheduled-recs[0].Scheduled, int64(k)*5_000_000; got != want {
			t.Errorf("request %d scheduled %d ns after the first, want exactly %d (k/Rate)", k, got, want)
		}
		if rec.Start < rec.Scheduled {
			t.Errorf("request %d started %d ns before its deadline", k, rec.Scheduled-rec.Start)
		}
		if rec.Warmup != (k < 2) {
			t.Errorf("request %d: Warmup = %v, want %v (Warmup: 2)", k, rec.Warmup, k < 2)
		}
	}
}

// TestOpenLoopPoisson: the deadlines are those of schedule.NewPoisson with
// the same seed, from the batch's start.
func TestOpenLoopPoisson(t *testing.T) {
	addr := startServer(t, server.Config{Tokens: 3, DelayMs: 1})
	req := client.NewChatRequest(addr, -1, 10*time.Second)
	spec := Spec{Name: "gw", Requests: 5, Rate: 100, Arrival: schedule.ArrivalPoisson, Seed: 9, Request: req}
	recs := collect(t, context.Background(), spec, nil)
	if len(recs) != 5 {
		t.Fatalf("%d requests reported, want 5", len(recs))
	}
	want, _ := schedule.NewPoisson(recs[0].Scheduled, 100, 9)
	for k, rec := range recs {
		if d := want.Next(); rec.Scheduled != d {
			t.Errorf("request %d scheduled at %d, want %d (Poisson, seed 9)", k, rec.Scheduled, d)
		}
		if !rec.OK() || rec.Start < rec.Scheduled {
			t.Errorf("request %d: %q, started %d ns after its deadline", k, rec.Failure.Error(), rec.Start-rec.Scheduled)
		}
	}
}

// TestOpenLoopDuration: with no request count, Duration ends the batch; no
// request is scheduled at or after its end, progress reports the total as
// unknown; with a count reached first, the count ends it.
func TestOpenLoopDuration(t *testing.T) {
	addr := startServer(t, server.Config{Tokens: 3, DelayMs: 1})
	req := client.NewChatRequest(addr, -1, 10*time.Second)
	const d = 1100 * time.Millisecond
	recs := collect(t, context.Background(), Spec{Name: "gw", Rate: 10, Duration: d, Request: req}, nil)
	if len(recs) < 1 || len(recs) > 11 {
		t.Errorf("%d requests in %v at 10/s, want 1 to 11", len(recs), d)
	}
	for k, rec := range recs {
		if off := rec.Scheduled - recs[0].Scheduled; off >= int64(d) {
			t.Errorf("request %d scheduled %v after the start, at or after the %v duration", k, time.Duration(off), d)
		}
	}

	// Progress, about once a second: streams that last until the first
	// report (then the run is cancelled) make sure there is one.
	long := client.NewChatRequest(startServer(t, server.Config{Tokens: 100000, DelayMs: 1}), -1, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var last Progress
	calls := 0
	collect(t, ctx, Spec{Name: "gw", Rate: 10, Duration: d, Request: long}, func(p Progress) { calls++; last = p; cancel() })
	if calls == 0 || last.Total != 0 {
		t.Errorf("progress called %d times, last %+v: want at least once, Total 0 (unknown)", calls, last)
	}

	recs = collect(t, context.Background(), Spec{Name: "gw", Requests: 3, Rate: 100, Duration: time.Hour, Request: req}, nil)
	if len(recs) != 3 {
		t.Errorf("%d requests with Requests 3 and Duration 1h, want 3", len(recs))
	}
}

// TestOpenLoopCapMakesLatenessVisible: with one slot and a rate far above
// what it serves, each request waits for the previous one to end, so it
// starts late, and the lateness grows by about one request's length each
// time: the deadlines do not slide with the gateway.
func TestOpenLoopCapMakesLatenessVisible(t *testing.T) {
	// Each stream lasts at least 4 delays of 5 ms = 20 ms; the period is 1 ms.
	addr := startServer(t, server.Config{Tokens: 5, DelayMs: 5})
	req := client.NewChatRequest(addr, -1, 10*time.Second)
	recs := collect(t, context.Background(), Spec{Name: "gw", Requests: 5, Rate: 1000, Concurrency: 1, Request: req}, nil)
	if len(recs) != 5 {
		t.Fatalf("%d requests reported, want 5", len(recs))
	}
	const period = int64(time.Millisecond)
	for k, rec := range recs {
		if !rec.OK() || rec.Start < rec.Scheduled {
			t.Errorf("request %d: %q, started %d ns after its deadline", k, rec.Failure.Error(), rec.Start-rec.Scheduled)
		}
		if k == 0 {
			continue
		}
		prev := recs[k-1]
		if rec.Start < prev.End {
			t.Errorf("request %d started %d ns before request %d ended, with one slot", k, prev.End-rec.Start, k-1)
		}
		// Lateness grows by (time between starts) − period >= 20 ms − 1 ms;
		// assert 10 periods, an order of magnitude.
		if grow := (rec.Start - rec.Scheduled) - (prev.Start - prev.Scheduled); grow < 10*period {
			t.Errorf("lateness grew by %v from request %d to %d, want >= %v (one 20 ms request per 1 ms deadline)",
				time.Duration(grow), k-1, k, time.Duration(10*period))
		}
	}
	if late := recs[4].Start - recs[4].Scheduled; late < 40*period {
		t.Errorf("request 4 started %v late, want >= 40 ms (4 requests of >= 20 ms before it, due 4 ms after the first)", time.Duration(late))
	}
}

// TestOpenLoopCancel: cancelling stops the schedule; the requests in flight
// end interrupted and reach the sink, and Run returns — whether the
// scheduler was waiting for a deadline or for a free slot.
func TestOpenLoopCancel(t *testing.T) {
	tests := []struct {
		name      string
		spec      Spec
		streaming int64 // cancelled once the server streams this many
		want      int   // exact count, or 0 for "at least one"
	}{
		// The next deadline is 50 ms after the first request's.
		{"waiting for a deadline", Spec{Name: "gw", Requests: 1000, Rate: 20}, 1, 0},
		{"waiting for a slot", Spec{Name: "gw", Requests: 1000, Rate: 1000, Concurrency: 2}, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A server of its own: it counts this run's streams only.
			srv := runServer(t, server.Config{Tokens: 100000, DelayMs: 1})
			tt.spec.Request = client.NewChatRequest(srv.Addr().String(), -1, time.Hour)
			// Cancelled like Ctrl-C, not by a deadline the dialer would
			// also see (it would end a connect as a timeout).
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cancelWhenStreaming(srv, tt.streaming, cancel)
			recs := collect(t, ctx, tt.spec, nil)
			if len(recs) < 1 || len(recs) >= 1000 || (tt.want > 0 && len(recs) != tt.want) {
				t.Errorf("%d requests reported, want %s", len(recs), map[bool]string{true: "2 (the cap)", false: "some, not all 1000"}[tt.want > 0])
			}
			for k, rec := range recs {
				if rec.Failure.Kind != result.Interrupted {
					t.Errorf("request %d ended %q, want interrupted", k, rec.Failure.Error())
				}
			}
		})
	}
}

// TestClosedLoopDurationAndWarmup: closed loop with no count runs until the
// duration has passed, without deadlines, flagging the warm-up requests.
func TestClosedLoopDurationAndWarmup(t *testing.T) {
	addr := startServer(t, server.Config{Tokens: 3, DelayMs: 1})
	req := client.NewChatRequest(addr, -1, 10*time.Second)
	const d = 100 * time.Millisecond
	t0 := clock.Real.Now()
	recs := collect(t, context.Background(), Spec{Name: "gw", Concurrency: 2, Duration: d, Warmup: 1, Request: req}, nil)
	if elapsed := time.Duration(clock.Real.Now() - t0); elapsed < d {
		t.Errorf("Run returned after %v, before the %v duration", elapsed, d)
	}
	if len(recs) < 1 {
		t.Fatal("no request in a 100 ms closed-loop batch")
	}
	for k, rec := range recs {
		if !rec.OK() || rec.Scheduled != 0 || rec.Warmup != (k == 0) {
			t.Errorf("request %d: %q, Scheduled %d, Warmup %v: want ok, 0 (closed loop), Warmup only for request 0",
				k, rec.Failure.Error(), rec.Scheduled, rec.Warmup)
		}
	}
}

func TestValidate(t *testing.T) {
	req := client.NewChatRequest("127.0.0.1:1", -1, time.Second)
	tests := []struct {
		spec Spec
		ok   bool
	}{
		{Spec{Requests: 1, Request: req}, true},
		{Spec{Duration: time.Second, Request: req}, true},
		{Spec{Requests: 5, Rate: 10, Arrival: schedule.ArrivalPoisson, Request: req}, true},
		{Spec{Requests: 5, Arrival: schedule.ArrivalConstant, Request: req}, true},
		{Spec{Requests: 1}, false},
		{Spec{Requests: -1, Request: req}, false},
		{Spec{Request: req}, false},
		{Spec{Requests: 1, Duration: -time.Second, Request: req}, false},
		{Spec{Requests: 1, Warmup: -1, Request: req}, false},
		{Spec{Requests: 1, Rate: -1, Request: req}, false},
		{Spec{Requests: 1, Rate: math.NaN(), Request: req}, false},
		{Spec{Requests: 1, Rate: math.Inf(1), Request: req}, false},
		{Spec{Requests: 1, Rate: 1e-9, Request: req}, false},
		{Spec{Requests: 1, Arrival: "burst", Request: req}, false},
	}
	for _, tt := range tests {
		err := tt.spec.Validate()
		if (err == nil) != tt.ok {
			t.Errorf("Spec%+v.Validate() = %v, want ok = %v", tt.spec, err, tt.ok)
		}
		if err != nil {
			called := false
			if rerr := Run(context.Background(), tt.spec, func(*result.Request) { called = true }, nil); rerr == nil || called {
				t.Errorf("Run with an invalid spec returned %v and called the sink = %v, want the error and no request", rerr, called)
			}
		}
	}
	if err := (Spec{Requests: 1, Arrival: "burst", Request: req}).Validate(); !errors.Is(err, schedule.ErrArrival) {
		t.Errorf("unknown arrival: %v, want it to wrap schedule.ErrArrival", err)
	}
}

// TestWorkersReuseTheirConnection: each worker sends all its requests
// through one client session, so with keep-alive a slot's requests after
// its first reuse its connection — closed loop and open loop alike.
func TestWorkersReuseTheirConnection(t *testing.T) {
	addr := startServer(t, server.Config{Tokens: 3, DelayMs: 1})
	for _, spec := range []Spec{
		{Name: "gw", Requests: 4, Concurrency: 1},
		{Name: "gw", Requests: 4, Concurrency: 1, Rate: 1000},
	} {
		req := client.NewChatRequest(addr, -1, 10*time.Second)
		req.KeepAlive = true
		spec.Request = req
		recs := collect(t, context.Background(), spec, nil)
		if len(recs) != 4 {
			t.Fatalf("Rate %v: %d requests reported, want 4", spec.Rate, len(recs))
		}
		for k, rec := range recs {
			if !rec.OK() || rec.Reused != (k > 0) || rec.ConnID != recs[0].ConnID {
				t.Errorf("Rate %v, one slot, keep-alive: request %d %q, Reused %v, ConnID %d: want ok, reused after the first, on connection %d",
					spec.Rate, k, rec.Failure.Error(), rec.Reused, rec.ConnID, recs[0].ConnID)
			}
		}
	}
}
