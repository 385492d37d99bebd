//go:build linux

package evloop

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sse-latency/sse-latency/internal/clock"
)

// TestUringOutOfBuffers: a loop with 4 provided buffers and 16 sockets
// that all receive at once runs out of buffers (the kernel ends their
// multishot receives with ENOBUFS); they are armed again as buffers come
// back, and every byte arrives, in order, on every socket.
func TestUringOutOfBuffers(t *testing.T) {
	if err := UringAvailable(); err != nil {
		t.Skip(err)
	}
	saved := uringBuffers
	uringBuffers = 4
	set, err := NewSet(Uring, 1)
	uringBuffers = saved
	if err != nil {
		t.Fatal(err)
	}
	defer stopWithin(t, "the uring set's Stop", set.Stop)
	l := set.Loops()[0]
	const socks, msgs = 16, 20
	type peer struct {
		s    *sock
		fd   int
		want string
	}
	var peers []peer
	for range socks {
		fd, p := socketpair(t)
		defer unix.Close(p)
		s := &sock{data: make(chan string, 4*msgs), ended: make(chan struct{})}
		onLoop(t, l, func() {
			if err := l.Add(&s.reg, fd, s, Read); err != nil {
				t.Error(err)
			}
		})
		peers = append(peers, peer{s: s, fd: p})
	}
	for m := range msgs {
		for i := range peers {
			msg := fmt.Sprintf("<%d:%d>", i, m)
			if _, err := unix.Write(peers[i].fd, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			peers[i].want += msg
		}
	}
	for i := range peers {
		var got strings.Builder
		for got.Len() < len(peers[i].want) {
			got.WriteString(within(t, peers[i].s.data, fmt.Sprintf("socket %d's bytes (%d of %d so far)", i, got.Len(), len(peers[i].want))))
		}
		if got.String() != peers[i].want {
			t.Errorf("socket %d received %q, want %q", i, got.String(), peers[i].want)
		}
		unix.Close(peers[i].fd)
		within(t, peers[i].s.ended, fmt.Sprintf("socket %d's end", i))
	}
}

// TestUringRearmsAnEndedPoll: when the kernel ends a timer's multishot
// poll (a completion without IORING_CQE_F_MORE, here a made-up one), the
// backend arms it again, and the ticker goes on firing.
func TestUringRearmsAnEndedPoll(t *testing.T) {
	if err := UringAvailable(); err != nil {
		t.Skip(err)
	}
	l := PickOf(Uring)
	fired := make(chan struct{}, 16)
	tk, err := l.NewTicker(func(*Ticker) { fired <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	var ended, armed bool
	onLoop(t, l, func() {
		b := l.be.(*uringBackend)
		k := tk.reg.key - 1
		u := &b.keys[k]
		b.complete(&ioUringCqe{userData: userData(opPollIn, k, u.gen)}) // res 0: no readiness, no F_MORE
		ended = !u.pollIn
	})
	onLoop(t, l, func() { // a wait later: the loop reaped, and armed it again
		armed = l.be.(*uringBackend).keys[tk.reg.key-1].pollIn
	})
	if !ended || !armed {
		t.Fatalf("after its end the poll was ended %v, armed again %v; want both", ended, armed)
	}
	for i := range 2 {
		if err := tk.Arm(clock.Real.Now() + int64(time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		within(t, fired, fmt.Sprintf("fire %d after the poll was armed again", i))
	}
}
