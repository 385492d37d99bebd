package clock

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"
)

// Fake is a Clock that moves only when a test moves it (Set, Advance), so
// that a test can assert the times the code under test reads — an
// emission's pi_ts, a heartbeat's instant — exactly, without sleeping. It
// is safe for concurrent use. Its Wakers wake when the clock is moved to
// or past their deadline; Next lets a test await a goroutine that waits on
// one instead of sleeping until it does.
//
// ToTime and FromTime map its readings onto the real clock's frame, as
// Real does: deadlines it hands to the network stay real ones, near the
// real time while the fake one starts there (NewFake(Real.Now())).
type Fake struct {
	mu      sync.Mutex
	now     int64
	wakers  map[*fakeWaker]struct{} // the open ones
	changed chan struct{}           // closed, and replaced, when a waiter or the time changes
}

// NewFake returns a Fake reading start.
func NewFake(start int64) *Fake {
	return &Fake{now: start, wakers: make(map[*fakeWaker]struct{}), changed: make(chan struct{})}
}

// Now returns the time the clock was last set to.
func (f *Fake) Now() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// ToTime converts a reading as Real does.
func (f *Fake) ToTime(ns int64) time.Time { return Real.ToTime(ns) }

// FromTime converts t as Real does.
func (f *Fake) FromTime(t time.Time) int64 { return Real.FromTime(t) }

// Advance moves the clock d forward and wakes the Wakers it passes the
// deadline of.
func (f *Fake) Advance(d time.Duration) { f.Set(f.Now() + int64(d)) }

// Set moves the clock to ns — backwards too, as a stepped host clock
// would — and wakes the Wakers armed for ns or earlier.
func (f *Fake) Set(ns int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = ns
	for w := range f.wakers {
		w.fireIfDue()
	}
	f.notify()
}

// notify tells the goroutines in Next that something changed. Called with
// mu held.
func (f *Fake) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// Next waits until at least one goroutine is blocked in the Wait of one of
// the clock's Wakers armed for a deadline still ahead, and returns the
// earliest such deadline: the instant a test moves the clock to, to let
// the code under test take its next step. It fails when ctx ends first.
func (f *Fake) Next(ctx context.Context) (int64, error) {
	for {
		f.mu.Lock()
		next, changed := f.nextLocked(), f.changed
		f.mu.Unlock()
		if next != math.MaxInt64 {
			return next, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return 0, fmt.Errorf("clock: awaiting a waiter on the fake clock: %w", context.Cause(ctx))
		}
	}
}

// Waiters returns how many goroutines are blocked in Wait on a Waker of
// the clock armed for a deadline still ahead.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for w := range f.wakers {
		if w.waiting && w.armed {
			n++
		}
	}
	return n
}

// nextLocked is Next's earliest deadline, MaxInt64 if none. Called with
// mu held.
func (f *Fake) nextLocked() int64 {
	next := int64(math.MaxInt64)
	for w := range f.wakers {
		if w.waiting && w.armed {
			next = min(next, w.deadline)
		}
	}
	return next
}

// NewWaker returns a Waker woken when the clock reaches its deadline.
func (f *Fake) NewWaker() Waker {
	w := &fakeWaker{f: f, fired: make(chan struct{}, 1), closed: make(chan struct{})}
	f.mu.Lock()
	f.wakers[w] = struct{}{}
	f.mu.Unlock()
	return w
}

// fakeWaker is a Fake's Waker. Its fields are guarded by f.mu.
type fakeWaker struct {
	f        *Fake
	deadline int64
	armed    bool // deadline is set and not yet reached
	waiting  bool // a goroutine is in Wait
	isClosed bool
	fired    chan struct{} // one wake-up pending
	closed   chan struct{}
}

var _ Waker = (*fakeWaker)(nil)

func (w *fakeWaker) Arm(deadline int64) error {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	if w.isClosed {
		return ErrClosed
	}
	w.deadline, w.armed = deadline, true
	w.fireIfDue()
	w.f.notify()
	return nil
}

// fireIfDue wakes the waiter when the deadline is reached. Called with
// f.mu held.
func (w *fakeWaker) fireIfDue() {
	if w.armed && w.deadline <= w.f.now {
		w.armed = false
		select {
		case w.fired <- struct{}{}:
		default:
		}
	}
}

func (w *fakeWaker) Wait() error {
	w.setWaiting(true)
	defer w.setWaiting(false)
	select {
	case <-w.fired:
		return nil
	case <-w.closed:
		return ErrClosed
	}
}

func (w *fakeWaker) setWaiting(on bool) {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	w.waiting = on
	w.f.notify()
}

func (w *fakeWaker) Close() error {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	if !w.isClosed {
		w.isClosed, w.armed = true, false
		close(w.closed)
		delete(w.f.wakers, w)
		w.f.notify()
	}
	return nil
}
