package server

import (
	"errors"
	"sync"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/schedule"
	"github.com/sse-latency/sse-latency/internal/stats"
)

// event is what a shard hands back to the server about a stream.
type event uint8

const (
	evFlush  event = iota + 1 // the socket was full: write st.pending, then reschedule
	evWrite                   // token st.k (or a heartbeat) is due and the writer cannot write without blocking: write it
	evFinish                  // every token is out: write the end events (finish chunk, [DONE], …)
	evFailed                  // the stream cannot go on (client gone, server closing)
)

// streamWriter is where the bytes of a stream go. Its implementations:
// h1conn, an HTTP/1.1 connection whose body is chunked, and h2Response, an
// HTTP/2 stream whose events are DATA frames — both written from the
// shard with a non-blocking write(2) when the connection has a file
// descriptor (plain, or TLS on the record layer), else from a goroutine —
// and h2Stream, an HTTP/3 response written and flushed from its handler
// goroutine, one DATA frame per write, without HTTP/1.1 framing
// (wsResponse, a WebSocket's, is in ws.go).
type streamWriter interface {
	// appendEvent appends one SSE event framed for the transport: an
	// HTTP/1.1 chunk, an HTTP/2 DATA frame, or the event as is on HTTP/3.
	appendEvent(dst, ev []byte) []byte
	// appendEnd appends what ends the body: the last chunk on HTTP/1.1,
	// a DATA frame with END_STREAM on HTTP/2, nothing on HTTP/3 (the
	// handler's return ends the stream).
	appendEnd(dst []byte) []byte
	// write writes all of b, blocking at most Config.WriteTimeout; on
	// HTTP/3 it flushes, so b leaves at once in its own DATA frame.
	write(b []byte) error
	// direct reports whether tryWrite can write without blocking (a
	// socket with a file descriptor). Without it every token is written by
	// write, on a goroutine, with its pi_ts taken right before.
	direct() bool
	// tryWrite writes what it can of b without blocking and returns how
	// much; errAgain (or a short count) means the socket is full. It is
	// only called when direct reports true.
	tryWrite(b []byte) (int, error)
	// String names the peer in debug lines.
	String() string
}

// A faultWriter wraps a transport's streamWriter and is one itself.
var _ streamWriter = (*faultWriter)(nil)

// stream is one streaming response in progress. While scheduled it belongs
// to its shard; an event hands it to a goroutine that does what may block
// — drain a full socket, write a token without a file descriptor, finish,
// close — and gives it back to the shard or ends it. Never two owners at
// once. On HTTP/1.1 and HTTP/2 that goroutine is short-lived (onEvent), so
// no goroutine waits for the whole length of a stream; on HTTP/3 it is the
// stream's handler, which must live as long as the response anyway
// (events).
type stream struct {
	w     streamWriter
	enc   api.Encoder     // the dialect's events
	times *emission.Times // where each token's pi_ts is recorded; nil records nothing
	plan  schedule.Plan
	k     int   // next token to emit
	next  int64 // deadline of token k
	grid  int64 // the step of its emission grid in a busy shard (gridFor)
	due   int64 // when its shard is to write token k: next, or a point of its grid (shard.dueAt)
	// firsts are the first tokens of the phases after the first, the
	// reasoning's and the tool call's ends; with token 0 they are written
	// on time in a busy shard too (see shard.grid).
	firsts [2]int

	heapIndex int
	result    event // what the last emitToken asked for (0: reschedule)
	// The last write: tokens wroteFrom..wroteFrom+wroteN-1, stamped wroteAt.
	wroteFrom, wroteN int
	wroteAt           int64
	// queued is the index of the write queued in its shard tick's batch
	// (scratch.sends), whose result the tick takes after the batch's
	// flush (stream.sent); queuedOut is its bytes.
	queued    int
	queuedOut []byte

	pending []byte // bytes a non-blocking write could not take

	hb heartbeat // the heartbeats written after a silence (heartbeat.go)

	shard *shard
	// Exactly one of onEvent and events is set: notify runs onEvent on a
	// new goroutine, or sends the event to the goroutine that receives on
	// events (buffered: one event at most is outstanding, as the stream has
	// one owner).
	onEvent func(st *stream, ev event)
	events  chan event
	// clk is the clock of its pi_ts and deadlines: the server's
	// (Config.Clock), clock.Real unless set after newStream.
	clk clock.Clock
}

func newStream(w streamWriter, enc api.Encoder, p schedule.Plan) *stream {
	return &stream{w: w, enc: enc, plan: p, next: p.Deadline(0), grid: gridFor(p), clk: clock.Real}
}

// scratch is where the bytes of a write are put together: an SSE event
// (payload) and the framed event(s) (out). A stream holds none between
// writes — thousands of streams would hold 1 KiB each for nothing — but
// borrows the one of the shard tick writing it, or one from scratchPool.
type scratch struct {
	payload []byte
	out     []byte
	// sends batches the writes of the tick that owns the scratch (an
	// io_uring loop's, see sendBatch); nil: one write(2) each.
	sends sendBatch
}

// sendBatch is a shard tick's batch of non-blocking writes: the sends of
// an io_uring loop (evloop.Sends), submitted together in one system call
// at the end of the tick's writes, each with the result a non-blocking
// write(2) would have had.
type sendBatch interface {
	// Queue queues p (copied) for the socket fd; false: not queued, the
	// batch is full.
	Queue(fd int, p []byte) (int, bool)
	// Pending is how many sends are queued and not flushed.
	Pending() int
	// Flush submits the queued sends and takes their results.
	Flush()
	// Result is what send i of the flushed batch took.
	Result(i int) (int, error)
}

func newScratch() *scratch {
	return &scratch{payload: make([]byte, 0, 512), out: make([]byte, 0, 576)}
}

// scratchPool serves the writes made outside a shard tick: a stream's
// start and end events, its first tokens, the tokens of a writer without
// a file descriptor.
var scratchPool = sync.Pool{New: func() any { return newScratch() }}

// getScratch takes a scratch from the pool; putScratch gives it back
// (one that grew past a few KiB is dropped).
func getScratch() *scratch { return scratchPool.Get().(*scratch) }

func putScratch(sc *scratch) {
	if cap(sc.out) <= 4<<10 && cap(sc.payload) <= 4<<10 {
		scratchPool.Put(sc)
	}
}

// recordLateness records in m how late each token of the last write was
// against its deadline (0 when early).
func (st *stream) recordLateness(m *stats.Metric) {
	for k := st.wroteFrom; k < st.wroteFrom+st.wroteN; k++ {
		m.Record(max(st.wroteAt-st.plan.Deadline(k), 0))
	}
}

// notify hands the stream and ev to its event goroutine. It is called by
// the stream's current owner, which gives the stream up by calling it.
func (st *stream) notify(ev event) {
	if st.events != nil {
		st.events <- ev
		return
	}
	go st.onEvent(st, ev)
}

// A stream that fell more than coalesceLate behind its schedule — the
// tool is overloaded: it warns past 1 ms of lateness — writes its overdue
// tokens together, at most maxTokensPerWrite per write; otherwise every
// token has a write, and a pi_ts, of its own.
const (
	coalesceLate      = 1_000_000 // ns
	maxTokensPerWrite = 16
)

// emitToken writes token st.k now — on a direct writer with the tokens
// after it that are more than coalesceLate late too, up to
// maxTokensPerWrite (elsewhere every token has its own write: one crypto/tls
// record, one HTTP/3 DATA frame) —
// stamped with pi_ts taken immediately before the write (tokens written
// together share it: they were handed to the socket at the same instant),
// putting the bytes together in sc. On a direct writer it never blocks: it
// is called from the shard goroutine, and returns 0 when the stream should
// go back on the heap, or the event to hand to the stream's goroutine; the
// shard notifies it only after recording the emission, so that everything
// about a token is accounted for before its client can see the stream end.
//
// Without a direct writer, mayBlock says whether the caller may block: the
// shard may not, and gets evWrite back with nothing done (no pi_ts taken,
// no lateness to record), so that the token is stamped and written by the
// goroutine that does the blocking write; that goroutine calls emitToken
// with mayBlock set.
//
// A stream with heartbeats may be woken before token st.k is due, for its
// heartbeat: emitToken then writes that instead (see heartbeat.go).
func (st *stream) emitToken(sc *scratch, mayBlock bool) event {
	direct := st.w.direct()
	if !direct && !mayBlock {
		st.wroteN = 0
		return evWrite
	}
	if st.hb.every > 0 && st.heartbeatDue() {
		return st.emitHeartbeat(sc, direct)
	}
	ts := st.clk.Now()
	st.wroteFrom, st.wroteN, st.wroteAt = st.k, 0, ts
	sc.out = sc.out[:0]
	for {
		st.times.Set(st.k, ts)
		sc.payload = st.enc.AppendToken(sc.payload[:0], st.k, ts)
		sc.out = st.w.appendEvent(sc.out, sc.payload)
		st.wroteN++
		st.k++
		if st.k < st.plan.Tokens {
			st.next = st.plan.Deadline(st.k)
		}
		if !direct || st.k >= st.plan.Tokens || st.next > ts-coalesceLate || st.wroteN == maxTokensPerWrite {
			break
		}
	}
	if st.hb.every > 0 {
		st.wroteSomething(ts)
	}
	return st.send(sc, sc.out, direct)
}

// evQueued is what emitToken returns when its write was queued in the
// tick's batch (scratch.sends): the tick flushes the batch, then takes the
// write's result with sent. It never leaves the tick.
const evQueued event = 255

// send writes out — with one non-blocking write on a direct writer, else
// blocking — and returns what the stream's owner must do next: 0 to
// schedule the stream again, evFinish after its last token, evFlush to
// write what the socket did not take (st.pending), evFailed when it cannot
// go on.
//
// In a tick with a batch (sc.sends), a plain HTTP/1.1 connection's write
// is queued there instead, and send returns evQueued: its pi_ts is taken
// as for a write of its own, right before, and the bytes go with the
// tick's other writes in one system call after the last of them.
func (st *stream) send(sc *scratch, out []byte, direct bool) event {
	var n int
	var err error
	if direct && sc.sends != nil {
		if hc, ok := st.w.(*h1conn); ok && hc.rec == nil && hc.queueWrite(sc.sends, out, &st.queued) {
			st.queuedOut = out
			return evQueued
		}
	}
	if direct {
		n, err = st.w.tryWrite(out)
	} else if err = st.w.write(out); err == nil {
		n = len(out)
	}
	return st.sent(out, n, err, direct)
}

// sent is what send returns for a write of out that took n bytes and
// err.
func (st *stream) sent(out []byte, n int, err error, direct bool) event {
	switch {
	case err == nil && n == len(out):
		if st.k < st.plan.Tokens {
			return 0
		}
		return evFinish
	case direct && (err == nil || errors.Is(err, errAgain)):
		st.pending = append(st.pending[:0], out[n:]...)
		return evFlush
	default:
		return evFailed
	}
}
