//go:build linux

package evloop

import (
	"sync/atomic"
	"testing"
	"time"
)

// chanReceiver hands each message's arg to a channel.
type chanReceiver chan uint64

func (c chanReceiver) Receive(_ *Loop, _ uint8, arg uint64) { c <- arg }

// TestWakeDuringWoken: a wake-up that lands while the epoll loop
// acknowledges the one before (inside woken, between draining the eventfd
// and clearing pending) must not leave the loop deaf: a message posted to
// the idle loop afterwards still wakes it. Before the fix woken cleared
// pending first, that wake-up's write was drained with the first, and
// every later wake() skipped its write: the second post below was never
// received.
func TestWakeDuringWoken(t *testing.T) {
	set, err := NewSet(Epoll, 1)
	if err != nil {
		t.Skip(err)
	}
	defer stopWithin(t, "the epoll set's Stop", set.Stop)
	l := set.Loops()[0]
	var hooked atomic.Int32
	hook := func(b *epollBackend) {
		if hooked.Add(1) == 1 {
			b.wake() // a poster that saw the loop asleep, just as it woke
		}
	}
	testHookWoken.Store(&hook)
	defer testHookWoken.Store(nil)
	got := make(chanReceiver, 2)
	for i := range uint64(2) {
		asleep(t, l)
		l.Post(got, 0, i)
		select {
		case arg := <-got:
			if arg != i {
				t.Fatalf("message %d received as %d", i, arg)
			}
		case <-time.After(10 * time.Second):
			// Wake the deaf loop by hand, so that the deferred Stop's
			// own post is seen and the test fails instead of hanging.
			one := [8]byte{1}
			RawWrite(l.be.(*epollBackend).wakeFd, one[:])
			t.Fatalf("message %d posted to the idle loop not received in 10 s (woken ran %d times): a lost wake-up", i, hooked.Load())
		}
		if hooked.Load() == 0 {
			t.Fatalf("message %d: the loop was not woken through its eventfd, the test proves nothing", i)
		}
	}
}

// asleep waits until l is about to sleep (or sleeping) with an empty
// inbox, so that a post must wake it; bounded.
func asleep(t *testing.T, l *Loop) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !(l.sleeping.Load() && l.queued.Load() == 0); {
		if time.Now().After(end) {
			t.Fatal("the loop did not go to sleep within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}
