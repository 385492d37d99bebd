//go:build linux

package evloop

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
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
	l, err := newLoop(0, Uring)
	uringBuffers = saved
	if err != nil {
		t.Fatal(err)
	}
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
