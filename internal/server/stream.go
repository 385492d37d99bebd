package server

import (
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/schedule"
	"github.com/sse-latency/sse-latency/internal/wire"
)

// event is what a shard tells a stream's connection goroutine.
type event uint8

const (
	evFlush  event = iota + 1 // the socket was full: write st.pending, then reschedule
	evFinish                  // every token is out: write the finish chunk and [DONE]
	evFailed                  // the stream cannot go on (client gone, server closing)
)

// stream is one streaming response in progress. Between add and the next
// emission it belongs to its shard; while handed off (evFlush) it belongs to
// its connection goroutine. Never to both at once.
type stream struct {
	conn  net.Conn
	raw   syscall.RawConn // nil when the conn has no file descriptor
	chunk api.ChatChunk
	plan  schedule.Plan
	k     int   // next token to emit
	next  int64 // deadline of token k

	heapIndex int
	result    event // what the last emitToken asked for (0: reschedule)
	lastLate  int64 // lateness of the last emission, ns (0 if early)

	payload []byte // JSON of the chunk being written
	out     []byte // the HTTP chunk being written
	pending []byte // bytes a non-blocking write could not take
	signal  chan event
}

func newStream(c net.Conn, no uint64, p schedule.Plan) *stream {
	st := &stream{
		conn:    c,
		chunk:   api.NewChatChunk(no),
		plan:    p,
		next:    p.Deadline(0),
		payload: make([]byte, 0, 256),
		out:     make([]byte, 0, 320),
		signal:  make(chan event, 1),
	}
	if sc, ok := c.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			st.raw = rc
		}
	}
	return st
}

// notify hands ev to the connection goroutine. The goroutine waits for one
// event at a time, and a stream produces one event per hand-off, so the
// buffered channel never blocks; a second event (a close racing a flush) is
// dropped as the first already ends the wait.
func (st *stream) notify(ev event) {
	select {
	case st.signal <- ev:
	default:
	}
}

// emitToken writes token st.k now, from the shard goroutine, without
// blocking. It returns 0 when the stream should go back on the heap, or the
// event to hand to the connection goroutine; the shard notifies it only
// after recording the emission, so that everything about a token is
// accounted for before its client can see the stream end.
func (st *stream) emitToken() event {
	ts := clock.Now()
	st.payload = st.chunk.AppendToken(st.payload[:0], ts, st.k)
	st.out = wire.AppendChunkedSSEData(st.out[:0], st.payload)
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
	var n int
	var werr error
	err := st.raw.Write(func(fd uintptr) bool {
		n, werr = unix.Write(int(fd), b)
		if n < 0 {
			n = 0
		}
		return true // never wait for writability: that is the connection goroutine's job
	})
	if err != nil {
		return 0, err
	}
	if werr == unix.EINTR {
		werr = unix.EAGAIN
	}
	return n, werr
}
