//go:build linux

package evloop

import (
	"errors"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Sends is a batch of non-blocking sends on the sockets of an io_uring
// loop: its owner — a server shard's tick, on the loop's goroutine —
// queues one send per socket with Queue, then Flush hands them all to the
// kernel in one io_uring_enter(2) instead of one write(2) each, and
// Result tells what each took, as a non-blocking write(2) would have: a
// count (short when the socket filled up), unix.EAGAIN, or an error. The
// sends carry MSG_DONTWAIT, so the kernel tries each at once, in the
// order queued, during the enter, and never parks one for later: every
// result is known when Flush returns, and a sender's Sent semantics do
// not change — only the instant the bytes are handed over moves, from
// one write each to one enter for the batch.
//
// The bytes are copied into the batch's own buffer, which no send of the
// batch outlives: the caller's buffer is free as soon as Queue returns.
// Queue at most one send per socket per batch: two sends of one socket
// could be taken out of order when the first comes up short.
type Sends struct {
	b      *uringBackend
	buf    []byte // sendBufferSize; the queued sends' bytes
	used   int
	res    []int32 // by send: bytes sent, or -errno
	got    int     // completions taken
	queued int
	done   bool // flushed: the next Queue starts a new batch
	total  uint64
	enters uint64
}

// sendBufferSize bounds the bytes of one batch: Queue declines a send
// that would not fit, which the caller then writes itself.
const sendBufferSize = 128 << 10

// maxSends bounds the sends of one batch (the submission ring's size).
const maxSends = uringSQEntries / 2

// errSendLost is the result of a send whose completion the ring never
// posted: the ring is broken, and the loop fails at its next wait.
var errSendLost = errors.New("io_uring: a send did not complete")

// Sends returns the loop's batch of sends, nil when its backend writes
// with one write(2) each (epoll). For the loop's goroutine only.
func (l *Loop) Sends() *Sends {
	b, ok := l.be.(*uringBackend)
	if !ok {
		return nil
	}
	if b.sends == nil {
		b.sends = &Sends{b: b, buf: make([]byte, sendBufferSize), res: make([]int32, 0, maxSends)}
	}
	return b.sends
}

// Queue queues a send of p on the non-blocking stream socket fd and
// returns its index for Result; ok is false, and nothing is queued, when
// the batch is full (the caller writes p itself).
func (s *Sends) Queue(fd int, p []byte) (i int, ok bool) {
	if s.done {
		s.used, s.res, s.got, s.queued, s.done = 0, s.res[:0], 0, 0, false
	}
	if len(p) == 0 || s.used+len(p) > len(s.buf) || s.queued == maxSends || s.b.err != nil {
		return 0, false
	}
	e := s.b.sqe()
	if e == nil {
		return 0, false
	}
	n := copy(s.buf[s.used:], p)
	i = s.queued
	e.opcode = iorOpSend
	e.fd = int32(fd)
	e.addr = uint64(uintptr(unsafe.Pointer(&s.buf[s.used])))
	e.len = uint32(n)
	e.opFlags = unix.MSG_DONTWAIT | unix.MSG_NOSIGNAL
	e.userData = userData(opSend, int32(i), 0)
	s.used += n
	s.res = append(s.res, noResult)
	s.queued++
	return i, true
}

// Pending reports how many sends are queued and not flushed.
func (s *Sends) Pending() int {
	if s.done {
		return 0
	}
	return s.queued
}

// Flush submits the queued sends and returns once every one of them has
// its result. The completions of the loop's other requests that come in
// meanwhile are taken as a wait takes them.
func (s *Sends) Flush() {
	if s.done || s.queued == 0 {
		s.done = true
		return
	}
	// MSG_DONTWAIT sends complete within the enter that submits them; a
	// few more enters cover a submission the kernel deferred (EAGAIN,
	// EBUSY: the ring's own back-pressure).
	for try := 0; s.got < s.queued && try < flushTries; try++ {
		s.enters++
		if err := s.b.enter(); err != nil {
			break
		}
		s.b.r.completions(s.b.cqeFn)
	}
	if s.got < s.queued {
		s.b.fail(errSendLost)
	}
	s.total += uint64(s.queued)
	s.done = true
}

// flushTries bounds the enters of one Flush.
const flushTries = 64

// Result returns what send i of the flushed batch took: n bytes, or the
// error of the send (unix.EAGAIN: the socket was full).
func (s *Sends) Result(i int) (int, error) {
	if i < 0 || i >= s.queued {
		return 0, errSendLost
	}
	switch r := s.res[i]; {
	case r > 0:
		return int(r), nil
	case r == noResult:
		return 0, errSendLost
	case r == 0:
		return 0, nil
	case r == -int32(unix.EWOULDBLOCK):
		return 0, unix.EAGAIN
	default:
		return 0, unix.Errno(-r)
	}
}

// Counts returns how many sends the batches submitted, and in how many
// io_uring_enter(2) calls.
func (s *Sends) Counts() (sends, enters uint64) { return s.total, s.enters }

// complete records the completion of send i.
func (s *Sends) complete(i int32, res int32) {
	if s == nil || i < 0 || int(i) >= len(s.res) || s.done {
		return
	}
	if s.res[i] == noResult {
		s.got++
	}
	s.res[i] = res
}

// noResult marks a send whose completion has not come.
const noResult = -1 << 31
