// Package batch runs one batch of streaming requests — the loopback
// calibration or the gateway batch — keeping a fixed number in flight until
// all have started, and hands each finished record to a sink as soon as it
// completes, so that an interrupted run keeps everything it measured.
package batch

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sse-latency/sse-latency/internal/client"
	"github.com/sse-latency/sse-latency/internal/result"
)

// Spec describes a batch.
type Spec struct {
	Name        string          // "loop" or "gw": the tag of its records
	Requests    int             // how many requests to send (>= 1)
	Concurrency int             // how many in flight at once (1..Requests)
	Request     *client.Request // the prepared request
}

// Progress is a snapshot of a running batch.
type Progress struct {
	Elapsed  time.Duration
	Done     int
	Total    int
	InFlight int
	Tokens   int64
}

// Sink receives every finished request, one call at a time, in completion
// order. It must not keep rec after returning.
type Sink func(rec *result.Request)

// Run executes the batch and returns when every started request has ended.
// Cancelling ctx stops starting requests and ends those in flight as
// interrupted; their records still reach sink. If progress is non-nil it is
// called about once a second from another goroutine (never concurrently with
// itself) while the batch runs.
func Run(ctx context.Context, spec Spec, sink Sink, progress func(Progress)) {
	var (
		next     atomic.Int64
		done     atomic.Int64
		inFlight atomic.Int64
		sinkMu   sync.Mutex
		wg       sync.WaitGroup
	)
	received := spec.Request.Received
	if received == nil {
		received = new(atomic.Int64)
		req := *spec.Request
		req.Received = received
		spec.Request = &req
	}
	base := received.Load()
	start := time.Now()

	workers := min(max(spec.Concurrency, 1), max(spec.Requests, 1))
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= spec.Requests {
					return
				}
				inFlight.Add(1)
				rec := result.Request{Batch: spec.Name, Index: i}
				spec.Request.Do(ctx, &rec)
				inFlight.Add(-1)
				done.Add(1)
				sinkMu.Lock()
				sink(&rec)
				sinkMu.Unlock()
			}
		}()
	}

	finished := make(chan struct{})
	var pwg sync.WaitGroup
	if progress != nil {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-finished:
					return
				case <-tick.C:
					progress(Progress{
						Elapsed:  time.Since(start),
						Done:     int(done.Load()),
						Total:    spec.Requests,
						InFlight: int(inFlight.Load()),
						Tokens:   received.Load() - base,
					})
				}
			}
		}()
	}
	wg.Wait()
	close(finished)
	pwg.Wait()
}
