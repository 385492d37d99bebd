//go:build linux

package evloop

import (
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sse-latency/sse-latency/internal/clock"
)

// wakeKey is the key of a loop's own wake-up descriptor.
const wakeKey = -1

// A backend is the readiness (or completion) source of a loop: the seam
// between the loop — its sockets' handlers, timers, tickers — and the
// kernel interface. epollBackend reports readiness, and the loop then
// reads once with read(2); uringBackend (io_uring) receives with
// multishot receives into provided buffers, and reports a socket ready
// while a completion of it is queued, which read then hands over. The
// handlers, from the arrival time on, are the same.
type backend interface {
	// watch starts watching fd under key for want or, with added,
	// changes what it is watched for; sock says whether fd is a stream
	// socket (else a timerfd).
	watch(fd int, key int32, want Interest, added, sock bool) error
	// unwatch forgets key before its descriptor is closed.
	unwatch(key int32)
	// wait blocks until at least one watched descriptor is ready, the
	// loop is woken, or the process clock reaches until (0: no limit;
	// < 0: do not block), and stores the keys of the ready descriptors
	// in keys, returning how many. With tickers false the timers' keys
	// are left for a later wait.
	wait(until int64, keys []int32, tickers bool) (int, error)
	// read reads once from fd, watched under key, into p (or hands over
	// a buffer of its own): n > 0 bytes; none and nil at the end of the
	// stream; or an error (unix.EAGAIN: nothing after all). The bytes
	// stay valid until the next read.
	read(fd int, key int32, p []byte) ([]byte, error)
	// buffered reports whether bytes (or the end of the stream) of key
	// were received and not read yet, beyond what the socket itself
	// holds.
	buffered(key int32) bool
	// wake makes the wait in progress, or the next one, return. Any
	// goroutine.
	wake()
	// woken acknowledges a wake-up (the loop saw wakeKey).
	woken()
	// close closes the backend's descriptors (the loop is stopped).
	close()
}

// maxEvents is how many ready descriptors one wait returns at most.
const maxEvents = 256

// epollBackend is a level-triggered epoll set. The loop's goroutine parks
// in Go's netpoller, where the epoll descriptor itself is registered
// (os.NewFile on a non-blocking descriptor, as clock's timerfd Waker
// does): the runtime wakes the goroutine when the set has ready
// descriptors, and epoll_wait is then called with a zero timeout.
type epollBackend struct {
	epfd    int
	wakeFd  int // an eventfd in the set, under wakeKey
	pending atomic.Bool
	events  [maxEvents]unix.EpollEvent

	parker // on epfd

	// The result of the callback of rc.Read, which is built once.
	pollKeys []int32
	pollN    int
	pollErr  error
	pollFn   func(fd uintptr) bool
}

func newEpollBackend() (*epollBackend, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	wfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, os.NewSyscallError("eventfd", err)
	}
	b := &epollBackend{epfd: epfd, wakeFd: wfd}
	fail := func(err error) (*epollBackend, error) {
		unix.Close(epfd)
		unix.Close(wfd)
		return nil, err
	}
	if err := b.watch(wfd, wakeKey, Read, false, false); err != nil {
		return fail(err)
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		return fail(os.NewSyscallError("fcntl", err))
	}
	if b.parker, err = newParker(epfd, "epoll"); err != nil {
		unix.Close(wfd)
		return nil, err
	}
	b.pollFn = b.poll
	return b, nil
}

func (b *epollBackend) watch(fd int, key int32, want Interest, added, _ bool) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: key}
	if want == Write {
		ev.Events = unix.EPOLLOUT
	}
	op := unix.EPOLL_CTL_ADD
	if added {
		op = unix.EPOLL_CTL_MOD
	}
	if err := unix.EpollCtl(b.epfd, op, fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}

// unwatch: closing the descriptor takes it out of the epoll set.
func (b *epollBackend) unwatch(int32) {}

// buffered: the socket holds what was received.
func (b *epollBackend) buffered(int32) bool { return false }

func (b *epollBackend) wait(until int64, keys []int32, _ bool) (int, error) {
	if until < 0 {
		n, err := epollPoll(b.epfd, b.events[:min(len(keys), maxEvents)])
		if err != nil && err != unix.EINTR {
			return 0, os.NewSyscallError("epoll_wait", err)
		}
		return b.ready(max(n, 0), keys), nil
	}
	b.pollKeys, b.pollN, b.pollErr = keys, 0, nil
	ready, err := b.park(until, b.pollFn)
	n := b.pollN
	b.pollKeys = nil
	switch {
	case err != nil:
		return 0, err
	case !ready:
		return 0, nil // a timer is due
	case b.pollErr != nil:
		return 0, os.NewSyscallError("epoll_wait", b.pollErr)
	}
	return n, nil
}

// parker parks a loop's goroutine in Go's netpoller, on a non-blocking
// descriptor that becomes readable when the loop has work (the epoll set,
// or the eventfd of a ring), rather than in a blocking system call.
type parker struct {
	f        *os.File // the descriptor, registered in the netpoller
	rc       syscall.RawConn
	deadline int64 // the read deadline set on f (0: none)
}

// newParker registers fd, non-blocking, in the netpoller; the parker owns
// it from then on (closing f closes it), failed or not.
func newParker(fd int, name string) (parker, error) {
	f := os.NewFile(uintptr(fd), name)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return parker{}, err
	}
	return parker{f: f, rc: rc}, nil
}

// park calls poll, then again each time the descriptor becomes readable,
// until poll reports true (park then reports true too) or the process
// clock reaches until, 0 for no limit (park then reports false). poll
// must look before it lets park wait: rc.Read forgets a readiness the
// netpoller noted before the call.
func (p *parker) park(until int64, poll func(fd uintptr) bool) (bool, error) {
	if until != p.deadline {
		var t time.Time
		if until != 0 {
			t = clock.Real.ToTime(until)
		}
		p.f.SetReadDeadline(t)
		p.deadline = until
	}
	switch err := p.rc.Read(poll); {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// poll is the callback of rc.Read: true when epoll_wait returned events
// (or failed), false to park until the set is ready. It cannot park
// without looking first: rc.Read forgets a readiness the netpoller noted
// before the call.
func (b *epollBackend) poll(fd uintptr) bool {
	n, err := epollPoll(int(fd), b.events[:min(len(b.pollKeys), maxEvents)])
	switch {
	case err == unix.EINTR:
		return false
	case err != nil:
		b.pollErr = err
		return true
	}
	b.pollN = b.ready(n, b.pollKeys)
	return n > 0
}

// ready copies the keys of the first n events to keys.
func (b *epollBackend) ready(n int, keys []int32) int {
	for i := range n {
		keys[i] = b.events[i].Fd
	}
	return n
}

func (b *epollBackend) read(fd int, _ int32, p []byte) ([]byte, error) {
	n, err := RawRead(fd, p)
	return p[:n], err
}

func (b *epollBackend) wake() {
	if b.pending.CompareAndSwap(false, true) {
		one := [8]byte{1}
		RawWrite(b.wakeFd, one[:])
	}
}

func (b *epollBackend) close() {
	b.parker.f.Close() // the epoll set
	unix.Close(b.wakeFd)
}

// woken drains the eventfd, then clears pending, in that order. Cleared
// first, a wake() between the two would find pending clear, set it and
// write, and the read would drain that write: pending set with nothing to
// read, so every later wake() would skip its write and an idle loop would
// sleep through its posts (a batch test hung for 11 minutes so). Drained
// first, a wake() between the two finds pending still set and writes
// nothing, and its message is seen anyway: it was queued before that
// wake(), and the loop looks at its queue before it sleeps again.
func (b *epollBackend) woken() {
	var buf [8]byte
	RawRead(b.wakeFd, buf[:])
	if hook := testHookWoken.Load(); hook != nil {
		(*hook)(b)
	}
	b.pending.Store(false)
}

// testHookWoken, when set (by a test only), runs inside woken between its
// two steps.
var testHookWoken atomic.Pointer[func(*epollBackend)]
