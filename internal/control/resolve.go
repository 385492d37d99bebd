package control

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
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

// Replica is one server replica a run reads: its control endpoint and the
// estimates of its clock offset (its Syncer), or why it cannot be read.
type Replica struct {
	Syncer *Syncer
	// Down is why the replica cannot be read (its first estimate failed):
	// nothing is fetched from it, and the tokens it served stay
	// unmeasured. nil when it is up.
	Down error
}

// Instance is the instance id the replica's endpoint answers as ("" when
// it has none, or is down).
func (r *Replica) Instance() string { return r.Syncer.Instance() }

// String is the replica's control endpoint.
func (r *Replica) String() string { return r.Syncer.Client().String() }

// FetchFailures are the fetches of one replica's records that failed.
type FetchFailures struct {
	Replica *Replica
	Count   int   // fetches that failed
	First   error // the first failure
}

// Resolver completes the records of requests measured across hosts, in
// the order they are added, on a goroutine of its own, against the
// replicas that served them: it fetches the records of their ids — as
// many at a time as have finished meanwhile, so that a busy run makes few
// fetches, and from every replica at once — converts the pi_ts of their
// tokens to this process's clock with the serving replica's current
// estimate, fills in the tokens measured by content and the request's
// arrival (Complete), and hands each to out.
//
// A record is attributed to the replica its events or its response head
// name (result.Request.Instance); one that names none is looked up in
// every replica that is up (the first whose records have its id served
// it) — when there is a single replica, it is that one's. A record that
// names an instance no replica answers as is not measured (its pi_ts are
// on an unknown clock) and, when every replica is up, fails as an
// integrity error: the gateway sent it to a server the run does not read.
//
// A fetch that fails leaves the records attributed to that replica with
// their pi_ts converted and nothing filled in; after maxFailedFetches in
// a row the Resolver fetches no more from that replica. Close reports the
// failures.
type Resolver struct {
	replicas []*replicaState
	timeout  time.Duration // of one fetch
	out      func(*result.Request)
	in       chan *result.Request
	done     chan struct{}
	pending  sync.WaitGroup // records added and not handed to out yet
}

// replicaState is a replica and the failures of its fetches.
type replicaState struct {
	*Replica
	mu       sync.Mutex
	failures int   // fetches that failed
	inARow   int   // of which the last ones in a row
	err      error // the first failure
}

// NewResolver starts a Resolver of the records the replicas served (at
// least one), which hands the completed records to out, one at a time.
func NewResolver(replicas []*Replica, out func(*result.Request)) *Resolver {
	return newResolver(replicas, out, fetchTimeout)
}

// newResolver is NewResolver with the given bound of one fetch.
func newResolver(replicas []*Replica, out func(*result.Request), timeout time.Duration) *Resolver {
	r := &Resolver{timeout: timeout, out: out, in: make(chan *result.Request, resolveQueue), done: make(chan struct{})}
	for _, rep := range replicas {
		r.replicas = append(r.replicas, &replicaState{Replica: rep})
	}
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
// returns the fetches that failed, by replica (those with failures only,
// in the replicas' order).
func (r *Resolver) Close() []FetchFailures {
	close(r.in)
	<-r.done
	var out []FetchFailures
	for _, rs := range r.replicas {
		rs.mu.Lock()
		if rs.failures > 0 {
			out = append(out, FetchFailures{Replica: rs.Replica, Count: rs.failures, First: rs.err})
		}
		rs.mu.Unlock()
	}
	return out
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

// lookUp is the replica index of a record not attributed yet, to be found
// by its id in every replica's records.
const lookUp = -1

// unknownInstance is the replica index of a record that names an instance
// no replica answers as.
const unknownInstance = -2

// replicaOf returns the index of the replica that served rec, lookUp or
// unknownInstance.
func (r *Resolver) replicaOf(rec *result.Request) int {
	if len(r.replicas) == 1 { // one server: every record is its own, unless it names another
		if rs := r.replicas[0]; rs.Down == nil && (rec.Instance == "" || rs.Instance() == "" || rec.Instance == rs.Instance()) {
			return 0
		}
	}
	if rec.Instance == "" {
		return lookUp
	}
	for j, rs := range r.replicas {
		if rs.Down == nil && rs.Instance() == rec.Instance {
			return j
		}
	}
	return unknownInstance
}

// resolve fetches the records of batch from the replicas that served
// them, and completes it.
func (r *Resolver) resolve(batch []*result.Request) {
	at := make([]int, len(batch))
	ids := make([][]string, len(r.replicas))
	emitted := make([]bool, len(r.replicas))
	var lookIDs []string
	lookEmitted := false
	for i, rec := range batch {
		at[i] = r.replicaOf(rec)
		switch j := at[i]; {
		case rec.ID == "" || j == unknownInstance:
		case j == lookUp:
			lookIDs = append(lookIDs, rec.ID)
			lookEmitted = lookEmitted || needsEmitted(rec)
		default:
			ids[j] = append(ids[j], rec.ID)
			emitted[j] = emitted[j] || needsEmitted(rec)
		}
	}
	records := make([]map[string]*Record, len(r.replicas))
	var wg sync.WaitGroup
	for j, rs := range r.replicas {
		want := append(ids[j], lookIDs...)
		if rs.Down != nil || len(want) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			records[j] = rs.fetch(want, emitted[j] || lookEmitted && len(lookIDs) > 0, r.timeout)
		}()
	}
	wg.Wait()
	for i, rec := range batch {
		j := at[i]
		if j == lookUp {
			for k := range r.replicas {
				if records[k][rec.ID] != nil {
					j = k
					break
				}
			}
		}
		if j >= 0 {
			rs := r.replicas[j]
			if rec.Instance == "" {
				rec.Instance = rs.Instance()
			}
			est, _ := rs.Syncer.Current()
			Complete(rec, records[j][rec.ID], est)
		} else {
			r.unattributed(rec, j == unknownInstance)
		}
		r.out(rec)
		r.pending.Done()
	}
}

// fetch reads the records of ids from the replica, unless it has given up
// after failures; nil when the fetch fails.
func (rs *replicaState) fetch(ids []string, emitted bool, timeout time.Duration) map[string]*Record {
	rs.mu.Lock()
	givenUp := rs.inARow >= maxFailedFetches
	rs.mu.Unlock()
	if givenUp {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	records, err := rs.Syncer.Client().Records(ctx, ids, emitted)
	cancel()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if err != nil {
		rs.failures++
		rs.inARow++
		if rs.err == nil {
			rs.err = err
		}
		return nil
	}
	rs.inARow = 0
	return records
}

// unattributed leaves rec unmeasured: its pi_ts are on the clock of a
// server the run does not read. When it names an instance although every
// replica is up, it is an integrity error (unless it failed already).
func (r *Resolver) unattributed(rec *result.Request, named bool) {
	for i := range rec.Tokens {
		rec.Tokens[i].Emitted = 0
	}
	rec.ByPiTs, rec.ByContent = 0, 0
	if !named || !rec.OK() {
		return
	}
	var known []string
	for _, rs := range r.replicas {
		if rs.Down != nil {
			return // perhaps the replica that is down: unmeasured, not a finding
		}
		known = append(known, strconv.Quote(rs.Instance()))
	}
	rec.Failure = result.Failure{Kind: result.Integrity, Detail: fmt.Sprintf("served by server instance %q, which no control endpoint answers as (%s): the gateway reached a server this run does not read",
		rec.Instance, strings.Join(known, ", "))}
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
