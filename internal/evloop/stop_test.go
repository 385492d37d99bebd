//go:build linux

package evloop

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// stopSock is a sock that records the error its loop's stop told it.
type stopSock struct {
	sock
	stopped chan error
}

func (s *stopSock) Stopped(l *Loop, err error) {
	s.stopped <- err
	l.Drop(&s.reg)
}

// TestSetStop: a private set runs a socket and a Ticker; Stop tells the
// socket's handler (ErrStopped) and closes its socket (its peer reads the
// end of the stream), closes the Ticker (Arm fails), ends every loop's
// goroutine, and leaves the loops refusing new work with ErrStopped — a
// message posted to one runs on the poster's goroutine.
func TestSetStop(t *testing.T) {
	for _, e := range loopEngines(t) {
		t.Run(string(e), func(t *testing.T) { testSetStop(t, e) })
	}
}

func testSetStop(t *testing.T, e Engine) {
	set, err := NewSet(e, 2)
	if err != nil {
		t.Fatal(err)
	}
	loops := set.Loops()
	if len(loops) != 2 || set.Engine() != e {
		t.Fatalf("NewSet(%s, 2): %d loops of %s", e, len(loops), set.Engine())
	}
	l := loops[0]
	fd, peer := socketpair(t)
	defer unix.Close(peer)
	s := &stopSock{sock: sock{data: make(chan string, 4), ended: make(chan struct{})}, stopped: make(chan error, 1)}
	onLoop(t, l, func() {
		if err := l.Add(&s.reg, fd, s, Read); err != nil {
			t.Error(err)
		}
	})
	// The socket works before the stop.
	if _, err := unix.Write(peer, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	if got := within(t, s.data, "the bytes before the stop"); got != "ping" {
		t.Fatalf("read %q, want ping", got)
	}
	tk, err := loops[1].NewTicker(func(*Ticker) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.Arm(clock.Real.Now() + int64(time.Hour)); err != nil {
		t.Fatal(err)
	}

	set.Stop()

	if err := within(t, s.stopped, "the handler's Stopped"); !errors.Is(err, ErrStopped) {
		t.Errorf("Stopped(%v), want ErrStopped", err)
	}
	// The loop closed the socket: its peer reads the end of the stream.
	fds := []unix.PollFd{{Fd: int32(peer), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, 10_000); n != 1 || err != nil {
		t.Fatalf("poll of the peer: %d, %v; want its end of stream", n, err)
	}
	var b [8]byte
	if n, err := unix.Read(peer, b[:]); n != 0 || err != nil {
		t.Errorf("peer read after Stop: %d, %v; want 0, nil (the end of the stream)", n, err)
	}
	if err := tk.Arm(clock.Real.Now()); !errors.Is(err, clock.ErrClosed) {
		t.Errorf("Ticker.Arm after Stop: %v, want clock.ErrClosed", err)
	}
	for _, l := range loops {
		testutil.AwaitNoGoroutine(t, fmt.Sprintf("evloop.(*Loop).run(%p", l))
	}
	// A stopped loop handles a message on the poster's goroutine, and
	// refuses new work.
	fd2, peer2 := socketpair(t)
	defer unix.Close(peer2)
	ran := false
	l.Post(funcReceiver(func() {
		ran = true
		var r Reg
		if err := l.Add(&r, fd2, &sock{}, Read); !errors.Is(err, ErrStopped) {
			t.Errorf("Add on a stopped loop: %v, want ErrStopped", err)
		}
	}), 0, 0)
	unix.Close(fd2)
	if !ran {
		t.Error("a message posted to a stopped loop was not handled before Post returned")
	}
	if _, err := loops[1].NewTicker(func(*Ticker) {}); !errors.Is(err, ErrStopped) {
		t.Errorf("NewTicker on a stopped loop: %v, want ErrStopped", err)
	}
	set.Stop() // a second Stop does nothing
}

// TestStopProcessSetPanics: the process's own loops are shared by every
// user in the process and are never stopped.
func TestStopProcessSetPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Stop of the process's epoll set did not panic")
		}
	}()
	epollLoops.Stop()
}
