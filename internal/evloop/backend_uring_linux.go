//go:build linux

package evloop

import (
	"errors"
	"os"
	"runtime"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/sse-latency/sse-latency/internal/clock"
)

// uringBackend is the io_uring backend of a loop. A socket watched for
// reading has a multishot receive armed on it, which takes a provided
// buffer of the loop's buffer ring for each receive; a socket watched for
// writing a POLLOUT poll; a timer a multishot POLLIN poll. The completions
// are queued per socket, and the backend reports them to the loop as a
// level-triggered readiness: a socket is ready while it is watched for
// reading and has a completion queued (data, the end of the stream, or an
// error), and Loop.Read hands over the next one — the bytes are in the
// provided buffer, which goes back to the ring at the next Read. A
// socket watched for writing is ready once a POLLOUT poll fired that was
// still armed, or armed anew, when it was last watched for writing.
//
// The loop's goroutine is locked to its thread, which owns the ring
// (IORING_SETUP_SINGLE_ISSUER) and runs the kernel's completion work
// itself, when it enters the ring (IORING_SETUP_DEFER_TASKRUN): the
// receives happen inside that io_uring_enter(2), and the arrival time
// Loop.Read's caller takes is the instant its completion is handed over,
// after the enter that received it returned. With nothing ready the
// thread waits in the ring itself (an io_uring_enter that waits for a
// completion, see wait), not in Go's netpoller: a goroutine locked to its
// thread that parks there has its processor handed to another thread and
// back at every wake-up. Other goroutines wake it through an eventfd that
// a multishot poll of the ring watches.
type uringBackend struct {
	r  *ring
	br *bufRing

	efd       int // eventfd: wake writes it, and a multishot poll in the ring sees it
	pending   atomic.Bool
	wakeArmed bool // the poll of efd is armed
	wokenUp   bool // the poll of efd fired

	keys  []ukey  // by key
	ready []int32 // keys that may be ready (ukey.listed)
	rearm []int32 // keys whose multishot receive or poll stopped while they are watched
	lent  int32   // the buffer the last read handed over (-1: none)
	err   error   // the first failure of the ring

	sends *Sends // made at the first Loop.Sends

	cqeFn func(c *ioUringCqe)
}

// ukey is the state of one key of a uringBackend.
type ukey struct {
	live     bool // registered (watch), not yet forgotten (unwatch)
	fd       int32
	gen      uint32 // counts the registrations of the key: stale completions name an older one
	want     Interest
	sock     bool
	recv     bool // a multishot receive is armed
	pollOut  bool // a POLLOUT poll is armed
	pollIn   bool // a multishot POLLIN poll is armed (not a socket)
	writable bool // the POLLOUT poll fired
	fired    bool // the POLLIN poll fired
	ended    bool // the receive reported the end of the stream or an error: no more
	listed   bool // in uringBackend.ready
	q        []rx // completions of the receive, not read yet
}

// rx is one completion of a multishot receive: res bytes in buffer bid,
// the end of the stream (0) or an error (-errno).
type rx struct {
	res int32
	bid uint16
}

// The operations, in the top byte of a request's user data.
const (
	opRecv uint64 = iota + 1
	opPollOut
	opPollIn
	opCancel
	opSend // a send of the loop's batch (Sends); the key is its index
	opWake // the multishot poll of the wake-up eventfd
)

// userData names an operation on a key's registration gen.
func userData(op uint64, key int32, gen uint32) uint64 {
	return op<<56 | uint64(gen&0xffffff)<<32 | uint64(uint32(key))
}

// The rings of a loop: its submission ring is refilled at each wait;
// each socket has up to two completions in flight (its receive, its
// poll), and a receive posts one per read, so the completion ring is
// large. The buffers are as large as the epoll backend's one read.
const (
	uringSQEntries = 512
	uringCQEntries = 16384
	uringBufGroup  = 1
)

// uringBuffers is the number of provided buffers of a loop (a power of
// two); a variable for the tests, which run out of them on purpose.
var uringBuffers = 512

// newUringBackend sets up the ring of the calling goroutine, which it
// locks to its thread: the loop's goroutine, and only it, may use the
// backend (the ring's single issuer). It returns an error when the
// kernel refuses io_uring.
func newUringBackend() (*uringBackend, error) {
	runtime.LockOSThread()
	r, err := newRing(uringSQEntries, uringCQEntries, iorSetupSubmitAll|iorSetupSingleIssuer|iorSetupDeferTaskrun)
	if err != nil {
		return nil, err
	}
	b := &uringBackend{r: r, efd: -1, lent: -1}
	fail := func(err error) (*uringBackend, error) {
		b.close()
		return nil, err
	}
	if r.features&iorFeatNoDrop == 0 {
		return fail(errors.New("io_uring: the kernel lacks IORING_FEAT_NODROP"))
	}
	if r.features&iorFeatExtArg == 0 {
		return fail(errors.New("io_uring: the kernel lacks IORING_FEAT_EXT_ARG"))
	}
	if b.br, err = newBufRing(r, uringBufGroup, uringBuffers, ReadBufferSize); err != nil {
		return fail(err)
	}
	if b.efd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		return fail(os.NewSyscallError("eventfd", err))
	}
	if err := b.armWake(); err != nil {
		return fail(err)
	}
	b.cqeFn = b.complete
	return b, nil
}

// armWake arms the multishot poll of the wake-up eventfd.
func (b *uringBackend) armWake() error {
	e := b.sqe()
	if e == nil {
		return b.err
	}
	e.opcode = iorOpPollAdd
	e.fd = int32(b.efd)
	e.opFlags = unix.POLLIN
	e.len = iorPollAddMulti
	e.userData = opWake << 56
	b.wakeArmed = true
	return nil
}

func (b *uringBackend) close() {
	if b.efd >= 0 {
		unix.Close(b.efd)
	}
	if b.r != nil {
		b.r.close()
	}
}

// key returns the state of key k, growing the table.
func (b *uringBackend) key(k int32) *ukey {
	for int(k) >= len(b.keys) {
		b.keys = append(b.keys, ukey{})
	}
	return &b.keys[k]
}

func (b *uringBackend) watch(fd int, k int32, want Interest, added, sock bool) error {
	u := b.key(k)
	if !added {
		gen := u.gen
		*u = ukey{live: true, fd: int32(fd), gen: gen, sock: sock, q: u.q[:0]}
	}
	u.want = want
	switch {
	case !sock:
		if !u.pollIn {
			return b.arm(k, u, opPollIn)
		}
	case want == Read:
		if !u.recv && !u.ended {
			if err := b.arm(k, u, opRecv); err != nil {
				return err
			}
		}
		if len(u.q) > 0 {
			b.list(k, u)
		}
	case want == Write:
		// What a poll reported while the socket was watched for reading
		// is stale: the writes since may have filled the socket, or not.
		// The poll still armed tells, or a new one does. (Kept, with no
		// poll armed, it was never reported: the key is listed only by a
		// poll's completion.)
		u.writable = false
		if !u.pollOut {
			return b.arm(k, u, opPollOut)
		}
	}
	return nil
}

// arm queues the request op of key k.
func (b *uringBackend) arm(k int32, u *ukey, op uint64) error {
	e := b.sqe()
	if e == nil {
		return b.err
	}
	e.fd = u.fd
	e.userData = userData(op, k, u.gen)
	switch op {
	case opRecv:
		e.opcode = iorOpRecv
		e.ioprio = iorRecvMultishot
		e.flags = iosqeBufferSelect
		e.bufGroup = uringBufGroup
		u.recv = true
	case opPollOut:
		e.opcode = iorOpPollAdd
		e.opFlags = unix.POLLOUT
		u.pollOut = true
	case opPollIn:
		e.opcode = iorOpPollAdd
		e.opFlags = unix.POLLIN
		e.len = iorPollAddMulti
		u.pollIn = true
	}
	return nil
}

// sqe returns a free submission entry, entering the ring first when it
// is full.
func (b *uringBackend) sqe() *ioUringSqe {
	if e := b.r.sqe(); e != nil {
		return e
	}
	if err := b.enter(); err != nil {
		return nil
	}
	if e := b.r.sqe(); e != nil {
		return e
	}
	b.fail(errors.New("io_uring: the submission ring stays full"))
	return nil
}

func (b *uringBackend) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// unwatch forgets key k: its requests are cancelled, completions still
// to come for them are ignored, and the buffers it holds go back.
func (b *uringBackend) unwatch(k int32) {
	if int(k) >= len(b.keys) {
		return
	}
	u := &b.keys[k]
	for _, op := range [...]struct {
		armed bool
		op    uint64
	}{{u.recv, opRecv}, {u.pollOut, opPollOut}, {u.pollIn, opPollIn}} {
		if !op.armed {
			continue
		}
		if e := b.sqe(); e != nil {
			e.opcode = iorOpAsyncCancel
			e.fd = -1
			e.addr = userData(op.op, k, u.gen)
			e.flags = iosqeCqeSkipSuccess
			e.userData = userData(opCancel, k, u.gen)
		}
	}
	for _, c := range u.q {
		if c.res > 0 {
			b.br.put(c.bid)
		}
	}
	*u = ukey{gen: u.gen + 1, q: u.q[:0]}
}

// enter hands the queued requests to the kernel and runs the completion
// work deferred to this thread.
func (b *uringBackend) enter() error {
	if err := b.r.enter(iorEnterGetEvents); err != nil {
		b.fail(err)
		return err
	}
	return nil
}

// reap enters the ring and takes the completions posted.
func (b *uringBackend) reap() error {
	b.br.publish()
	for _, k := range b.rearm {
		// A receive stopped for want of buffers, or a multishot request
		// the kernel ended (it may, on a full completion ring): armed
		// again now that the loop has given back what it read.
		switch u := &b.keys[k]; {
		case !u.live:
		case u.sock && u.want == Read && !u.recv && !u.ended:
			b.arm(k, u, opRecv)
		case !u.sock && !u.pollIn:
			b.arm(k, u, opPollIn)
		}
	}
	b.rearm = b.rearm[:0]
	if !b.wakeArmed {
		b.armWake()
	}
	if err := b.enter(); err != nil {
		return err
	}
	b.r.completions(b.cqeFn)
	return b.err
}

// complete takes one completion.
func (b *uringBackend) complete(c *ioUringCqe) {
	op, gen, k := c.userData>>56, uint32(c.userData>>32)&0xffffff, int32(uint32(c.userData))
	switch op {
	case opSend:
		b.sends.complete(k, c.res)
		return
	case opWake:
		if c.flags&iorCqeFMore == 0 {
			b.wakeArmed = false // armed again at the next reap
		}
		if c.res > 0 {
			b.wokenUp = true
		}
		return
	}
	more := c.flags&iorCqeFMore != 0
	var u *ukey
	if op != opCancel && int(k) < len(b.keys) && b.keys[k].gen&0xffffff == gen {
		u = &b.keys[k]
	}
	switch op {
	case opRecv:
		if u == nil {
			if c.flags&iorCqeFBuffer != 0 {
				b.br.put(uint16(c.flags >> iorCqeBufferShift))
			}
			return
		}
		if !more {
			u.recv = false
		}
		switch {
		case c.res > 0 || c.res == -int32(unix.ENOBUFS):
			if c.res > 0 {
				u.q = append(u.q, rx{res: c.res, bid: uint16(c.flags >> iorCqeBufferShift)})
			}
			if !more {
				// Out of buffers, or ended by the kernel: armed again at
				// the next reap.
				b.rearm = append(b.rearm, k)
			}
		case c.res == -int32(unix.ECANCELED):
			return
		default: // the end of the stream, or an error: nothing follows
			u.q = append(u.q, rx{res: c.res})
			u.ended = true
		}
		if u.want == Read && len(u.q) > 0 {
			b.list(k, u)
		}
	case opPollOut:
		if u == nil {
			return
		}
		u.pollOut = false
		if c.res != -int32(unix.ECANCELED) {
			u.writable = true
			if u.want == Write {
				b.list(k, u)
			}
		}
	case opPollIn:
		if u == nil {
			return
		}
		if !more {
			u.pollIn = false
			if c.res != -int32(unix.ECANCELED) {
				b.rearm = append(b.rearm, k)
			}
		}
		if c.res > 0 {
			u.fired = true
			b.list(k, u)
		}
	}
}

// list puts key k among the keys that may be ready.
func (b *uringBackend) list(k int32, u *ukey) {
	if !u.listed {
		u.listed = true
		b.ready = append(b.ready, k)
	}
}

// collect stores in keys the listed keys that are ready, and drops from
// the list those that are not; with tickers false, it leaves the timers'
// keys listed (Ticker.Poll does not handle them).
func (b *uringBackend) collect(keys []int32, tickers bool) int {
	n, kept := 0, 0
	list := b.ready
	for _, k := range list {
		u := &b.keys[k]
		var ready, stay bool
		switch {
		case n == len(keys):
			stay = true // no room: next time
		case !u.sock:
			ready, stay = u.fired && tickers, u.fired && !tickers
			if ready {
				u.fired = false
			}
		case u.want == Read:
			ready = len(u.q) > 0
		case u.want == Write:
			ready = u.writable
			if ready {
				// A poll fires once: armed again for the writes that
				// the handler may still not get through (a level, as
				// epoll's).
				u.writable = false
				b.arm(k, u, opPollOut)
			}
		}
		if ready {
			keys[n] = k
			n++
		}
		if stay {
			list[kept] = k
			kept++
		} else {
			u.listed = false
		}
	}
	b.ready = list[:kept]
	return n
}

// wait reaps and collects; with nothing ready it waits in the ring itself
// (enterWait), on the loop's thread: the thread sleeps in the kernel until
// a completion — a receive, a timer's poll, the poll of the wake-up
// eventfd — or the timeout, and the Go runtime keeps the processor for
// it, where parking the loop's goroutine (locked to its thread) in the
// netpoller would hand it to another thread and back at each wake-up,
// with futex calls and context switches for both (docs/PERF.md, "The
// io_uring loop's wake-ups").
func (b *uringBackend) wait(until int64, keys []int32, tickers bool) (int, error) {
	if err := b.reap(); err != nil {
		return 0, err
	}
	for {
		woken := b.pending.Swap(false)
		n := b.collect(keys, tickers)
		if until < 0 || n > 0 || woken || b.wokenUp {
			if b.wokenUp {
				b.wokenUp = false
				var buf [8]byte
				RawRead(b.efd, buf[:])
			}
			return n, b.err
		}
		timeout := int64(-1)
		if until > 0 {
			if timeout = until - clock.Real.Now(); timeout <= 0 {
				return 0, nil // a timer is due
			}
		}
		if err := b.r.enterWait(timeout); err != nil {
			b.fail(err)
			return 0, err
		}
		b.r.completions(b.cqeFn)
		if len(b.rearm) > 0 || !b.wakeArmed {
			if err := b.reap(); err != nil {
				return 0, err
			}
		}
	}
}

// read hands over the next completion queued for key k: bytes in a
// provided buffer (valid until the next read), the end of the stream, or
// an error. The buffer of the previous read goes back to the ring.
func (b *uringBackend) read(_ int, k int32, _ []byte) ([]byte, error) {
	if b.lent >= 0 {
		b.br.put(uint16(b.lent))
		b.lent = -1
	}
	if int(k) >= len(b.keys) {
		return nil, unix.EAGAIN
	}
	u := &b.keys[k]
	if len(u.q) == 0 {
		return nil, unix.EAGAIN
	}
	c := u.q[0]
	u.q = u.q[:copy(u.q, u.q[1:])]
	if len(u.q) > 0 {
		b.list(k, u)
	}
	switch {
	case c.res > 0:
		b.lent = int32(c.bid)
		return b.br.buf(c.bid)[:c.res], nil
	case c.res == 0:
		return nil, nil
	}
	return nil, unix.Errno(-c.res)
}

// buffered reports whether key k has a completion queued, after taking
// those posted.
func (b *uringBackend) buffered(k int32) bool {
	b.reap()
	return int(k) < len(b.keys) && len(b.keys[k].q) > 0
}

func (b *uringBackend) wake() {
	if b.pending.CompareAndSwap(false, true) {
		one := [8]byte{1}
		RawWrite(b.efd, one[:])
	}
}

func (b *uringBackend) woken() {}
