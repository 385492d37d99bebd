package server

import (
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/schedule"
	"github.com/sse-latency/sse-latency/internal/wire"
)

// event is what a shard hands back to the server about a stream.
type event uint8

const (
	evFlush  event = iota + 1 // the socket was full: write st.pending, then reschedule
	evFinish                  // every token is out: write the end events (finish chunk, [DONE], …)
	evFailed                  // the stream cannot go on (client gone, server closing)
)

// stream is one streaming response in progress. While scheduled it belongs
// to its shard; an event hands it to a short-lived goroutine (onEvent) that
// does what may block — drain a full socket, finish, close — and gives it
// back to the shard or ends it. Never two owners at once, and no goroutine
// (with its stack) waits for the whole length of a stream.
type stream struct {
	conn  net.Conn
	raw   syscall.RawConn // nil when the conn has no file descriptor
	enc   api.Encoder     // the dialect's events
	times *emission.Times // where each token's pi_ts is recorded; nil records nothing
	plan  schedule.Plan
	k     int   // next token to emit
	next  int64 // deadline of token k

	heapIndex int
	result    event // what the last emitToken asked for (0: reschedule)
	lastLate  int64 // lateness of the last emission, ns (0 if early)

	payload []byte // the SSE event being written
	out     []byte // the HTTP chunk(s) being written
	pending []byte // bytes a non-blocking write could not take

	shard   *shard
	onEvent func(st *stream, ev event) // run on its own goroutine by notify

	// The raw write and its results live in the stream so that the
	// callback given to RawConn.Write is built once, not once per token.
	writeFn func(fd uintptr) bool
	wbuf    []byte
	wn      int
	werr    error
}

func newStream(c net.Conn, enc api.Encoder, p schedule.Plan) *stream {
	st := &stream{
		conn:    c,
		enc:     enc,
		plan:    p,
		next:    p.Deadline(0),
		payload: make([]byte, 0, 512),
		out:     make([]byte, 0, 576),
	}
	st.writeFn = func(fd uintptr) bool {
		st.wn, st.werr = unix.Write(int(fd), st.wbuf)
		if st.wn < 0 {
			st.wn = 0
		}
		return true // never wait for writability: that is onEvent's job
	}
	if sc, ok := c.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			st.raw = rc
		}
	}
	return st
}

// notify hands the stream and ev to onEvent on a new goroutine. It is called
// by the stream's current owner, which gives the stream up by calling it.
func (st *stream) notify(ev event) { go st.onEvent(st, ev) }

// emitToken writes token st.k now, from the shard goroutine, without
// blocking. It returns 0 when the stream should go back on the heap, or the
// event to hand to the connection goroutine; the shard notifies it only
// after recording the emission, so that everything about a token is
// accounted for before its client can see the stream end.
func (st *stream) emitToken() event {
	ts := clock.Now()
	st.times.Set(st.k, ts)
	st.payload = st.enc.AppendToken(st.payload[:0], st.k, ts)
	st.out = wire.AppendChunk(st.out[:0], st.payload)
	st.lastLate = max(ts-st.next, 0)
	n, err := st.tryWrite(st.out)
	st.k++
	if st.k < st.plan.Tokens {
		st.next = st.plan.Deadline(st.k)
	}
	switch {
	case err == nil && n == len(st.out):
		if st.k < st.plan.Tokens {
			return 0
		}
		return evFinish
	case err == nil || errors.Is(err, unix.EAGAIN):
		st.pending = append(st.pending[:0], st.out[n:]...)
		return evFlush
	default:
		return evFailed
	}
}

// tryWrite writes b with one non-blocking write(2) on the socket. Without a
// file descriptor it writes nothing and reports EAGAIN, which hands every
// token to the connection goroutine.
func (st *stream) tryWrite(b []byte) (int, error) {
	if st.raw == nil {
		return 0, unix.EAGAIN
	}
	st.wbuf = b
	err := st.raw.Write(st.writeFn)
	st.wbuf = nil
	if err != nil {
		return 0, err
	}
	if st.werr == unix.EINTR {
		return st.wn, unix.EAGAIN
	}
	return st.wn, st.werr
}
