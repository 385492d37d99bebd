package server

import (
	"container/heap"
	"math"
	"sync"

	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/schedule"
	"github.com/sse-latency/sse-latency/internal/stats"
)

// earlySlack is how early a token may be written when its shard is already
// awake: waking again for a deadline a few microseconds away costs more than
// the error it avoids.
const earlySlack = 10_000 // ns

// alarm wakes a shard: a clock.Waker its own goroutine waits on (the
// goroutine engine), or the Ticker of an event loop (the epoll engine).
type alarm interface {
	Arm(deadline int64) error
	Close() error
}

// shard is one emission loop: a min-heap of streams ordered by when their
// next token is to be written (stream.due), and the alarm that wakes it at
// the earliest. Each wake-up is a tick, run by the shard's own goroutine
// or by an event loop.
type shard struct {
	waker   alarm
	own     clock.Waker // the waker of the shard's own goroutine; nil on an event loop
	minGap  int64       // ns: at most one timer wake-up per minGap
	mu      sync.Mutex
	streams streamHeap   // guarded by mu
	owned   int          // guarded by mu: the streams of the heap and of the tick in progress
	armed   int64        // deadline the waker is armed for; MaxInt64 if none
	wake    wakeLateness // guarded by mu: how early the timer fires, the rest is spun
	closed  bool
	// lateness holds, per emitted token, how late it was written (ns).
	lateness *stats.Metric
	due      []*stream // owned by tick
	scratch  *scratch  // owned by tick
	// sendMu is held by a tick with a batch of sends (scratch.sends) from
	// its first queued send to the batch's results, and by Serve, ending,
	// while it closes the connections (closeConns): a queued send names
	// its socket by number, and a close in between could give that number
	// to another socket before the send goes.
	sendMu sync.Mutex
	clk    clock.Clock // the server's (Config.Clock); clock.Real unless set after newShard
}

// newShard returns a shard whose timer fires at most spinAhead before a
// deadline (see wakeLateness), and at most once per minGap.
func newShard(w alarm, minGap, spinAhead int64) *shard {
	return &shard{waker: w, minGap: minGap, wake: newWakeLateness(spinAhead), armed: math.MaxInt64,
		lateness: stats.NewMetric(), scratch: newScratch(), clk: clock.Real}
}

// add schedules st at st.next. It may be called from any goroutine.
func (sh *shard) add(st *stream) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.closed {
		st.notify(evFailed)
		return
	}
	sh.owned++
	st.due = sh.dueAt(st)
	heap.Push(&sh.streams, st)
	if at := sh.wakeFor(st); at < sh.armed {
		sh.armed = at
		if err := sh.waker.Arm(at); err != nil {
			heap.Remove(&sh.streams, st.heapIndex)
			sh.owned--
			st.notify(evFailed)
		}
	}
}

// start hands st to the shard, first writing from the calling goroutine
// (which owns st and may block) the tokens already due — the first token
// when there is no think time, the token a shard handed over with evWrite —
// so they do not wait for a shard wake-up.
func (sh *shard) start(st *stream) {
	sc := getScratch()
	defer putScratch(sc)
	for st.k < st.plan.Tokens && st.next <= sh.clk.Now()+earlySlack {
		ev := st.emitToken(sc, true)
		sh.mu.Lock()
		st.recordLateness(sh.lateness)
		sh.mu.Unlock()
		if ev != 0 {
			st.notify(ev)
			return
		}
	}
	if st.k >= st.plan.Tokens {
		st.notify(evFinish)
		return
	}
	sh.add(st)
}

// run is the shard's own goroutine, waiting on w (its alarm); it returns
// when the shard is closed.
func (sh *shard) run(w clock.Waker) {
	for {
		if err := w.Wait(); err != nil {
			return
		}
		if !sh.tick(nil) {
			return
		}
	}
}

// tick is one wake-up: it spins to the earliest deadline when that is
// near, calling poll (when set) while it spins, writes every token due,
// and re-arms the alarm. It returns false when the alarm failed (closed).
func (sh *shard) tick(poll func()) bool {
	sh.mu.Lock()
	if now := sh.clk.Now(); sh.armed != math.MaxInt64 && now >= sh.armed {
		sh.wake.observe(now - sh.armed)
	}
	sh.mu.Unlock()
	sh.spinUntilDue(poll)
	woke := sh.clk.Now()
	sh.mu.Lock()
	sh.armed = math.MaxInt64
	due := sh.due[:0]
	for len(sh.streams) > 0 && sh.streams[0].due <= woke+earlySlack && len(due) < maxPerTick {
		due = append(due, heap.Pop(&sh.streams).(*stream))
	}
	full := len(due) == maxPerTick
	sh.mu.Unlock()

	sb := sh.scratch.sends
	if sb != nil {
		sh.sendMu.Lock()
	}
	for _, st := range due {
		st.result = st.emitToken(sh.scratch, false)
	}
	if sb != nil && sb.Pending() > 0 {
		sb.Flush()
		for _, st := range due {
			if st.result == evQueued {
				n, err := sb.Result(st.queued)
				st.result = st.sent(st.queuedOut, n, err, true)
				st.queuedOut = nil
			}
		}
	}
	if sb != nil {
		sh.sendMu.Unlock()
	}

	sh.mu.Lock()
	defer sh.mu.Unlock()
	for i, st := range due {
		st.recordLateness(sh.lateness) // nothing when evWrite: not written yet
		switch {
		case st.result != 0:
			sh.owned--
			st.notify(st.result)
		case sh.closed:
			st.notify(evFailed)
		default:
			st.due = sh.dueAt(st)
			heap.Push(&sh.streams, st)
		}
		due[i] = nil
	}
	sh.due = due[:0]
	if len(sh.streams) > 0 && !sh.closed {
		sh.settleTop()
		next := sh.wakeFor(sh.streams[0])
		if gap := sh.gap(); sh.owned < gridStreams && next < woke+gap && !full {
			next = woke + gap
		}
		sh.armed = next
		if err := sh.waker.Arm(next); err != nil {
			return false
		}
	}
	return true
}

// gap is the shortest time until the shard's next wake-up: minGap, and
// more as the shard holds more streams — gapPerStream each, up to
// maxGapFactor times minGap — so that a busy shard writes more tokens per
// wake-up. A wake-up costs microseconds of scheduling whatever it writes;
// tokens it holds back are at most the gap late, and their pi_ts is still
// the instant they are written. Called with mu held.
func (sh *shard) gap() int64 {
	return min(sh.minGap+int64(len(sh.streams))*gapPerStream, maxGapFactor*sh.minGap)
}

// dueAt returns when st's next token is to be written. A busy shard (one
// with gridStreams streams or more) writes on the grid of each stream
// (stream.grid): at the point nearest the deadline, where it writes,
// without spinning, every token due by then — at most half the grid's
// step early or late (the wake-up's own latency comes on top), in one
// wake-up instead of one each; the grid being the process clock's
// multiples of the step, a stream whose delay is a multiple of it is off
// by the same amount at every token, and its tokens keep their spacing
// exactly. Rounding to the nearest point rather than up halves the error
// the grid adds, for the same wake-ups. A heartbeat (st.next before the
// token's deadline) goes to the first point at or after it instead: woken
// earlier, the stream would find no heartbeat due and write the token,
// which may be far off. Otherwise, at its deadline. Called with mu held.
func (sh *shard) dueAt(st *stream) int64 {
	q := sh.grid(st)
	switch {
	case q == 0:
		return st.next
	case st.hb.every > 0 && st.k < st.plan.Tokens && st.next < st.plan.Deadline(st.k):
		return (st.next - earlySlack + q - 1) / q * q
	default:
		return (st.next + q/2) / q * q
	}
}

// settleTop updates when the first stream of the heap is due, until it
// is up to date: a stream pushed while the shard was quiet is due at its
// deadline, and on its grid once the shard is busy (and the other way
// round). Each stream is updated once per change of the shard's state,
// which happens at gridStreams streams, few. Called with mu held.
func (sh *shard) settleTop() {
	for {
		top := sh.streams[0]
		d := sh.dueAt(top)
		if d == top.due {
			return
		}
		top.due = d
		heap.Fix(&sh.streams, 0)
	}
}

// wakeFor returns when the shard's timer must fire for st's next token:
// at the point of the grid it is due at, or ahead of its deadline by the
// host's wake-up latency (wakeLateness), the tick spinning the rest.
// Called with mu held.
func (sh *shard) wakeFor(st *stream) int64 {
	if st.due != st.next {
		return st.due // on the grid
	}
	return st.due - sh.wake.ahead
}

// grid is the step of the grid st's next token is written on: st.grid in
// a busy shard, 0 (on time) in a quiet one, and for the first token of a
// phase — the first token, the first after the reasoning, the first of
// the text: the time to the first token of each phase is a measured
// figure (TTFT), which the grid would make up to a step later. Called with
// mu held.
func (sh *shard) grid(st *stream) int64 {
	if sh.owned < gridStreams || st.k == 0 || st.k == st.firsts[0] || st.k == st.firsts[1] {
		return 0
	}
	return st.grid
}

// gridStreams is how many streams make a shard busy: from there on its
// wake-ups, one per deadline or gap otherwise, are the larger part of
// the CPU it takes (docs/PERF.md, "Wake-ups").
const gridStreams = 8

// gridSteps are the steps of the emission grids, largest first: each is
// a multiple of the next, so that the points of every grid are points of
// the finer ones and the streams of a shard, whatever their grids, share
// its wake-ups. A stream takes the largest step at most a quarter of its
// shortest delay between tokens: 500 µs at the default 5 ms. Its tokens
// are then never more than an eighth of a gap off their deadline on the
// grid, and the largest step keeps the tool's own emission lateness well
// under the 1 ms past which it warns that it fell behind.
var gridSteps = [...]int64{500_000, 250_000, 125_000}

// gridFor returns the grid step of a stream with plan p (0: none, its
// delay being too short for the smallest step).
func gridFor(p schedule.Plan) int64 {
	gap := p.Delay
	if p.Reasoning > 0 && p.Think > 0 {
		gap = min(gap, p.Think/int64(p.Reasoning))
	}
	for _, q := range gridSteps {
		if q <= gap/4 {
			return q
		}
	}
	return 0
}

// How the gap grows with the streams of a shard.
const (
	gapPerStream = 500 // ns
	maxGapFactor = 3
)

// maxPerTick bounds the streams one tick writes. An overloaded shard that
// wrote every overdue stream at once would hold its event loop for
// milliseconds while the tokens it wrote wait to be read there; past the
// bound it comes back at once, after the loop has read what arrived.
const maxPerTick = 128

// spinUntilDue waits, without sleeping, for the earliest deadline when it
// is at most the timer's lead (wakeLateness) away. A sleeping CPU takes
// tens to hundreds of microseconds to wake on virtual machines, whatever
// the timer, so the timer fires early and the last stretch is spun. On an
// event loop, poll handles the loop's other sockets meanwhile, every
// pollEvery at most.
func (sh *shard) spinUntilDue(poll func()) {
	var polled int64
	for {
		sh.mu.Lock()
		next, ahead := int64(math.MaxInt64), sh.wake.ahead
		if len(sh.streams) > 0 {
			next = sh.streams[0].due
			if next != sh.streams[0].next {
				ahead = 0 // written on the grid: no spin
			}
		}
		sh.mu.Unlock()
		now := sh.clk.Now()
		if next <= now+earlySlack || next-now > ahead {
			return
		}
		if poll != nil && now-polled >= pollEvery {
			poll()
			polled = now
		}
		// busy: a Gosched here lets the runtime wake an idle P, slowly
	}
}

// pollEvery is how often a shard spinning on an event loop lets the loop
// handle its sockets: often enough that a token read there waits no
// longer, seldom enough that the spin is not a string of syscalls.
const pollEvery = 20_000 // ns

// close stops the shard: streams still scheduled are failed so their
// connection goroutines end, and run returns.
func (sh *shard) close() {
	sh.mu.Lock()
	sh.closed = true
	for _, st := range sh.streams {
		st.notify(evFailed)
	}
	sh.streams, sh.owned = nil, 0
	sh.mu.Unlock()
	sh.waker.Close()
}

// streamHeap orders streams by their next deadline (container/heap).
type streamHeap []*stream

func (h streamHeap) Len() int           { return len(h) }
func (h streamHeap) Less(i, j int) bool { return h[i].due < h[j].due }
func (h streamHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex = i
	h[j].heapIndex = j
}
func (h *streamHeap) Push(x any) {
	st := x.(*stream)
	st.heapIndex = len(*h)
	*h = append(*h, st)
}
func (h *streamHeap) Pop() any {
	old := *h
	n := len(old)
	st := old[n-1]
	old[n-1] = nil
	st.heapIndex = -1
	*h = old[:n-1]
	return st
}
