// Package batch runs one batch of streaming requests — the loopback
// calibration or the gateway batch — and hands each finished record to a
// sink as soon as it completes, so that an interrupted run keeps everything
// it measured.
//
// A batch runs closed loop (a fixed number of requests in flight, each slot
// starting its next request when the previous one ends) or open loop
// (requests started on absolute deadlines at a rate, whatever the gateway
// does, each record carrying its deadline in Scheduled so that how late it
// started — Start − Scheduled — shows coordinated omission instead of
// hiding it). The deadlines come from package schedule; this package only
// waits for them.
package batch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sse-latency/sse-latency/internal/client"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/schedule"
)

// DefaultOpenLoopCap is the cap on requests in flight of an open-loop batch
// whose Concurrency is 0: high enough that a gateway keeping up with the
// rate never meets it, finite so that a stalled one cannot make the tool
// open connections without bound. Slots (sessions) are made only as the
// load needs them, not up front.
const DefaultOpenLoopCap = 10000

// Spec describes a batch.
type Spec struct {
	Name string // "loop" or "gw": the tag of its records

	// Requests is how many requests to start. 0 means no limit, allowed
	// only with a Duration; with both, whichever limit comes first ends the
	// batch.
	Requests int
	// Duration stops starting requests once this long has passed since the
	// batch began (and, open loop, schedules none due at or after that
	// instant); those in flight run to their end. 0: no time limit.
	Duration time.Duration
	// Concurrency bounds the requests in flight. Closed loop: exactly this
	// many run at once (< 1 becomes 1, and no more than Requests). Open
	// loop: the cap — a request due while every slot is busy waits for one
	// and starts late, which its Start − Scheduled shows; < 1 means
	// DefaultOpenLoopCap.
	Concurrency int
	// Rate, when > 0, makes the batch open loop: Rate requests start per
	// second (schedule.RateResolution at the finest) on absolute deadlines,
	// whether or not earlier ones have ended. 0: closed loop.
	Rate float64
	// Arrival is the open-loop arrival process: schedule.ArrivalConstant
	// (or "") for deadlines exactly 1/Rate apart, schedule.ArrivalPoisson for
	// independent exponential gaps of mean 1/Rate.
	Arrival string
	// Seed fixes the Poisson gaps: one seed, one schedule.
	Seed uint64
	// Warmup marks the first Warmup requests started (Index < Warmup) as
	// warm-up: they run and reach the sink with rec.Warmup set, for the
	// statistics to leave out. They count toward Requests: to measure N
	// requests after W warm-ups, ask for N+W.
	Warmup int

	// Shape, when set, gives request i (from 0) its own size — a trace
	// line's, a length distribution's draw — in place of Request's
	// (result.Shape; the client applies it to that request alone). It is
	// called once per request, before the request starts, from the
	// batch's goroutine.
	Shape func(i int) *result.Shape
	// Offsets, when set, makes the batch replay a trace: open loop,
	// request i due Offsets[i]/Speed after the batch's start
	// (schedule.Offsets, ns), whatever the earlier requests do; a request
	// due while Concurrency requests are in flight waits and starts late,
	// which its Start − Scheduled shows. Requests is then at most
	// len(Offsets). Not with Rate.
	Offsets []int64
	Speed   float64

	Request *client.Request // the prepared request
}

// Validate reports the first problem that keeps spec from running.
func (s Spec) Validate() error {
	switch {
	case s.Request == nil:
		return errors.New("batch: no request")
	case s.Requests < 0:
		return fmt.Errorf("batch: %d requests", s.Requests)
	case s.Duration < 0:
		return fmt.Errorf("batch: negative duration %v", s.Duration)
	case s.Requests == 0 && s.Duration == 0:
		return errors.New("batch: no limit: set a number of requests or a duration")
	case s.Warmup < 0:
		return fmt.Errorf("batch: %d warm-up requests", s.Warmup)
	case s.Rate < 0 || math.IsNaN(s.Rate):
		return fmt.Errorf("batch: rate %v", s.Rate)
	case s.Offsets != nil && s.Rate > 0:
		return errors.New("batch: a trace's offsets and a rate exclude each other")
	case s.Offsets != nil && s.Requests > len(s.Offsets):
		return fmt.Errorf("batch: %d requests, the trace has %d", s.Requests, len(s.Offsets))
	}
	if s.Offsets != nil {
		if _, err := schedule.NewOffsets(0, s.Offsets, s.Speed); err != nil {
			return fmt.Errorf("batch: %w", err)
		}
	}
	if err := schedule.CheckArrival(s.Arrival); err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	if s.Rate > 0 {
		if _, err := schedule.NewArrivals(s.Arrival, 0, s.Rate, s.Seed); err != nil {
			return fmt.Errorf("batch: %w", err)
		}
	}
	return nil
}

// Progress is a snapshot of a running batch.
type Progress struct {
	Elapsed  time.Duration
	Done     int
	Total    int // Requests, or 0 when unknown (a batch limited by Duration)
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
// itself) while the batch runs. Run returns an error, before starting
// anything, only when spec is invalid (see Validate).
func Run(ctx context.Context, spec Spec, sink Sink, progress func(Progress)) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	r := &runner{spec: spec, sink: sink}
	received := spec.Request.Received
	if received == nil {
		received = new(atomic.Int64)
		req := *spec.Request
		req.Received = received
		r.spec.Request = &req
	}
	base := received.Load()
	r.clk = clock.Or(spec.Request.Clock)
	start := r.clk.Now()
	startTime := r.clk.ToTime(start)

	// stop ends the starting of requests (ctx, or the Duration); requests
	// themselves run under ctx.
	stop := ctx
	if spec.Duration > 0 {
		var cancel context.CancelFunc
		stop, cancel = context.WithDeadline(ctx, startTime.Add(spec.Duration))
		defer cancel()
	}

	finished := make(chan struct{})
	var pwg sync.WaitGroup
	if progress != nil {
		total := spec.Requests
		if spec.Duration > 0 {
			total = 0
		}
		pwg.Go(func() {
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-finished:
					return
				case <-tick.C:
					progress(Progress{
						Elapsed:  time.Since(startTime),
						Done:     int(r.done.Load()),
						Total:    total,
						InFlight: int(r.inFlight.Load()),
						Tokens:   received.Load() - base,
					})
				}
			}
		})
	}
	if spec.Rate > 0 || spec.Offsets != nil {
		r.openLoop(ctx, stop, start)
	} else {
		r.closedLoop(ctx, stop)
	}
	close(finished)
	pwg.Wait()
	return nil
}

// runner is the state of one Run.
type runner struct {
	spec     Spec
	sink     Sink
	done     atomic.Int64
	inFlight atomic.Int64
	clk      clock.Clock // the request's (client.Options.Clock), or clock.Real
}

// record returns the record of the request started i-th.
func (r *runner) record(i int) *result.Request {
	rec := &result.Request{Batch: r.spec.Name, Index: i, Warmup: i < r.spec.Warmup}
	if r.spec.Shape != nil {
		rec.Shape = r.spec.Shape(i)
	}
	return rec
}

// slot is one concurrency slot: a session, kept for all the requests the
// slot runs, so that a keep-alive connection carries them one after the
// other.
type slot struct {
	s    *client.Session
	rec  *result.Request
	done func(*result.Request) // hands the slot back to the pool
}

// pool runs requests on at most limit slots, made as the load needs them.
// A request starts with Session.Start, which returns at once (on the epoll
// engine no goroutine waits for it; on the goroutine engine one runs it);
// when it ends its slot comes back through ended, and one goroutine hands
// the records to the sink, one at a time, in completion order, before the
// slot is free for the next request.
type pool struct {
	r      *runner
	ctx    context.Context // the requests'
	limit  int
	slots  []*slot
	free   chan *slot // slots whose request has ended and reached the sink
	ended  chan *slot // slots whose request has ended
	active sync.WaitGroup
	sinkWG sync.WaitGroup
}

func (r *runner) newPool(ctx context.Context, limit int) *pool {
	p := &pool{r: r, ctx: ctx, limit: limit, free: make(chan *slot, limit), ended: make(chan *slot, limit)}
	p.sinkWG.Go(func() {
		for sl := range p.ended {
			rec := sl.rec
			sl.rec = nil
			r.inFlight.Add(-1)
			r.done.Add(1)
			r.sink(rec)
			p.free <- sl
			p.active.Done()
		}
	})
	return p
}

// take returns a slot for the next request: a free one, a new one while
// there are fewer than limit, or else the first to become free; nil when
// stop is done first.
func (p *pool) take(stop context.Context) *slot {
	select {
	case sl := <-p.free:
		return sl
	default:
	}
	if len(p.slots) < p.limit {
		sl := &slot{s: p.r.spec.Request.NewSession()}
		sl.done = func(*result.Request) { p.ended <- sl }
		p.slots = append(p.slots, sl)
		return sl
	}
	select { // every slot busy: the request waits, and will start late
	case sl := <-p.free:
		return sl
	case <-stop.Done():
		return nil
	}
}

// start runs rec on sl.
func (p *pool) start(sl *slot, rec *result.Request) {
	p.r.inFlight.Add(1)
	p.active.Add(1)
	sl.rec = rec
	sl.s.Start(p.ctx, rec, sl.done)
}

// close waits for every started request to reach the sink and closes the
// sessions.
func (p *pool) close() {
	p.active.Wait()
	close(p.ended)
	p.sinkWG.Wait()
	for _, sl := range p.slots {
		sl.s.Close()
	}
}

// closedLoop keeps Concurrency requests in flight, each slot starting its
// next request as soon as its previous one ends, until Requests have
// started or stop is done.
func (r *runner) closedLoop(ctx, stop context.Context) {
	slots := max(r.spec.Concurrency, 1)
	if r.spec.Requests > 0 {
		slots = min(slots, r.spec.Requests)
	}
	p := r.newPool(ctx, slots)
	defer p.close()
	for i := 0; r.spec.Requests == 0 || i < r.spec.Requests; i++ {
		if stop.Err() != nil {
			return
		}
		sl := p.take(stop)
		if sl == nil || stop.Err() != nil {
			if sl != nil {
				p.free <- sl
			}
			return
		}
		p.start(sl, r.record(i))
	}
}

// openLoop walks the arrival deadlines from start, waits for each, and
// starts its request on a free slot, on a new one while fewer than the cap
// exist, or else on the first slot to become free — then the request
// starts late. Each slot keeps one session for all its requests.
func (r *runner) openLoop(ctx, stop context.Context, start int64) {
	var arrivals schedule.Arrivals
	var err error
	if r.spec.Offsets != nil {
		arrivals, err = schedule.NewOffsets(start, r.spec.Offsets, r.spec.Speed)
	} else {
		arrivals, err = schedule.NewArrivals(r.spec.Arrival, start, r.spec.Rate, r.spec.Seed)
	}
	if err != nil {
		panic("batch: spec validated but " + err.Error()) // Run validated the spec
	}
	limit := r.spec.Concurrency
	if limit < 1 {
		limit = DefaultOpenLoopCap
	}
	if r.spec.Requests > 0 {
		limit = min(limit, r.spec.Requests)
	}
	end := int64(math.MaxInt64)
	if r.spec.Duration > 0 {
		end = start + int64(r.spec.Duration)
	}

	w := r.clk.NewWaker()
	defer w.Close()
	// Stopping wakes the scheduler from its wait for a deadline.
	defer context.AfterFunc(stop, func() { w.Arm(r.clk.Now()) })()

	p := r.newPool(ctx, limit)
	defer p.close()
	for i := 0; r.spec.Requests == 0 || i < r.spec.Requests; i++ {
		due := arrivals.Next()
		if due == math.MaxInt64 { // past a trace's last request
			return
		}
		if due >= end || !sleepUntil(stop, r.clk, w, due) {
			return
		}
		sl := p.take(stop)
		if sl == nil {
			return
		}
		rec := r.record(i)
		rec.Scheduled = due
		p.start(sl, rec)
	}
}

// sleepUntil waits until the process clock reaches due, and reports
// whether it did; false means stop is done. It never returns true early,
// whatever the waker's resolution, so that no request starts before its
// deadline.
func sleepUntil(stop context.Context, clk clock.Clock, w clock.Waker, due int64) bool {
	for {
		if stop.Err() != nil {
			return false
		}
		if clk.Now() >= due {
			return true
		}
		if err := w.Arm(due); err != nil {
			return false
		}
		// A stop between the check above and Arm re-armed the waker before
		// our Arm replaced it: look again before waiting.
		if stop.Err() != nil {
			return false
		}
		if err := w.Wait(); err != nil {
			return false
		}
	}
}
