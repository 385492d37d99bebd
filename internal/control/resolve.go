package control

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/sse-latency/sse-latency/internal/client"
	"github.com/sse-latency/sse-latency/internal/clocksync"
	"github.com/sse-latency/sse-latency/internal/result"
)

// Bounds of a Resolver's fetches.
const (
	// maxFetchTokens bounds the emission times one fetch asks for: a batch
	// of records stops growing past it.
	maxFetchTokens = 1 << 20
	// fetchTimeout bounds one fetch.
	fetchTimeout = 10 * time.Second
	// maxFailedFetches is how many fetches in a row may fail before a
	// Resolver stops fetching: a server gone for good must not hold the
	// end of a run (or an interrupted one) for a timeout per fetch.
	maxFailedFetches = 2
	// resolveQueue is how many finished records may wait for a fetch
	// before Add blocks.
	resolveQueue = 1024
)

// Resolver completes the records of requests measured across hosts, in
// the order they are added, on a goroutine of its own: it converts the
// pi_ts of their tokens to this process's clock with the Syncer's current
// estimate, fetches the server's records of their ids — as many at a time
// as have finished meanwhile, so that a busy run makes few fetches — fills
// in the tokens measured by content and the request's arrival (Complete),
// and hands each to out. A fetch that fails leaves its records with their
// pi_ts converted and nothing filled in; after maxFailedFetches in a row
// the Resolver fetches no more, and its records all go out that way. Close
// reports the failures.
type Resolver struct {
	c       *Client
	s       *Syncer
	out     func(*result.Request)
	in      chan *result.Request
	done    chan struct{}
	pending sync.WaitGroup // records added and not handed to out yet

	mu       sync.Mutex
	failures int   // fetches that failed
	inARow   int   // of which the last ones in a row
	err      error // the first failure
}

// NewResolver starts a Resolver that hands the completed records to out,
// one at a time.
func NewResolver(c *Client, s *Syncer, out func(*result.Request)) *Resolver {
	r := &Resolver{c: c, s: s, out: out, in: make(chan *result.Request, resolveQueue), done: make(chan struct{})}
	go r.run()
	return r
}

// Add queues a finished record; it keeps a copy, so the caller may reuse
// rec once Add returns.
func (r *Resolver) Add(rec *result.Request) {
	cp := *rec
	cp.Tokens, cp.TokenRuns = slices.Clone(rec.Tokens), slices.Clone(rec.TokenRuns)
	r.pending.Add(1)
	r.in <- &cp
}

// Flush waits until every record added so far has been handed to out.
func (r *Resolver) Flush() { r.pending.Wait() }

// Close waits until every record added has been handed to out, then
// returns how many fetches failed and the first failure.
func (r *Resolver) Close() (failures int, err error) {
	close(r.in)
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failures, r.err
}

func (r *Resolver) run() {
	defer close(r.done)
	for rec := range r.in {
		batch := []*result.Request{rec}
		tokens := len(rec.Tokens)
	more:
		for len(batch) < MaxIDs && tokens < maxFetchTokens {
			select {
			case next, ok := <-r.in:
				if !ok {
					break more
				}
				batch = append(batch, next)
				tokens += len(next.Tokens)
			default:
				break more
			}
		}
		r.resolve(batch)
	}
}

// resolve fetches the records of batch and completes it.
func (r *Resolver) resolve(batch []*result.Request) {
	var ids []string
	emitted := false
	for _, rec := range batch {
		if rec.ID == "" {
			continue
		}
		ids = append(ids, rec.ID)
		emitted = emitted || needsEmitted(rec)
	}
	var records map[string]*Record
	r.mu.Lock()
	givenUp := r.inARow >= maxFailedFetches
	r.mu.Unlock()
	if len(ids) > 0 && !givenUp {
		ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
		var err error
		records, err = r.c.Records(ctx, ids, emitted)
		cancel()
		r.mu.Lock()
		if err != nil {
			r.failures++
			r.inARow++
			if r.err == nil {
				r.err = err
			}
		} else {
			r.inARow = 0
		}
		r.mu.Unlock()
	}
	est, _ := r.s.Current()
	for _, rec := range batch {
		Complete(rec, records[rec.ID], est)
		r.out(rec)
		r.pending.Done()
	}
}

// needsEmitted reports whether a token of rec has no emission time (its
// pi_ts did not come through): the server's record must carry them.
func needsEmitted(rec *result.Request) bool {
	for _, t := range rec.Tokens {
		if t.Emitted == 0 {
			return true
		}
	}
	return false
}

// Complete converts what rec holds on the server's clock — the pi_ts of
// its tokens — to this process's clock with est, then fills in from sr,
// the server's record of the request (nil: none), the emission times of
// the tokens without one, the request's arrival, the stream's start and
// planned end of think, converted the same way, and its heartbeat count
// (client.FillEmitted).
func Complete(rec *result.Request, sr *Record, est clocksync.Estimate) {
	for i := range rec.Tokens {
		if t := &rec.Tokens[i]; t.Emitted != 0 {
			t.Emitted = est.ToClient(t.Emitted)
		}
	}
	if sr == nil {
		return
	}
	toClient := func(ns int64) int64 {
		if ns == 0 {
			return 0
		}
		return est.ToClient(ns)
	}
	client.FillEmitted(rec, client.ServerTimes{
		Arrived: toClient(sr.Arrived), Start: toClient(sr.Started), ThinkEnd: toClient(sr.ThinkEnd),
		Heartbeats: sr.Heartbeats,
		EmittedAt:  func(k int) int64 { return toClient(sr.EmittedAt(k)) },
	})
}
