//go:build linux

package evloop

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSendsBatch: the sends of one batch, queued on several sockets and
// flushed in one enter, each get the result a non-blocking write(2) of
// their own would have had — all the bytes, a short count or EAGAIN on a
// full socket, EPIPE on a socket whose peer is gone — and the peers read
// exactly the bytes queued; a send larger than the batch's buffer is
// declined (the caller writes it itself), and the epoll backend has no
// batch.
func TestSendsBatch(t *testing.T) {
	if err := UringAvailable(); err != nil {
		t.Skip(err)
	}
	set, err := NewSet(Uring, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer stopWithin(t, "the uring set's Stop", set.Stop)
	l := set.Loops()[0]

	// A socket's state before the batch.
	const (
		open   = iota // empty, its peer reading
		full          // its send buffer filled up
		closed        // its peer closed
	)
	tests := []struct {
		name    string
		sockets []int
		size    int // bytes per send
	}{
		{"one", []int{open}, 160},
		{"many", []int{open, open, open, open, open, open, open, open}, 160},
		{"a full socket among open ones", []int{open, full, open}, 4096},
		{"a closed peer among open ones", []int{open, closed, open}, 160},
		{"larger than the batch", []int{open}, sendBufferSize + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fds, peers []int
			for _, state := range tt.sockets {
				fd, p := socketpair(t)
				defer unix.Close(fd)
				fds = append(fds, fd)
				switch state {
				case full:
					fill(t, fd)
				case closed:
					unix.Close(p)
					p = -1
				}
				if p >= 0 {
					defer unix.Close(p)
				}
				peers = append(peers, p)
			}
			type result struct {
				n      int
				err    error
				queued bool
			}
			results := make([]result, len(fds))
			payload := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i)}, tt.size) }
			var sends, enters uint64
			onLoop(t, l, func() {
				sb := l.Sends()
				before, beforeEnters := sb.Counts()
				idx := make([]int, len(fds))
				for i, fd := range fds {
					p := payload(i)
					idx[i], results[i].queued = sb.Queue(fd, p)
					clear(p) // the batch holds a copy: the caller's buffer is free
				}
				sb.Flush()
				for i := range fds {
					if results[i].queued {
						results[i].n, results[i].err = sb.Result(idx[i])
					}
				}
				s, e := sb.Counts()
				sends, enters = s-before, e-beforeEnters
			})
			queued := 0
			for i, state := range tt.sockets {
				r := results[i]
				if tt.size > sendBufferSize {
					if r.queued {
						t.Errorf("socket %d: a send of %d bytes was queued in a %d-byte batch", i, tt.size, sendBufferSize)
					}
					continue
				}
				if !r.queued {
					t.Fatalf("socket %d: not queued", i)
				}
				queued++
				switch state {
				case open:
					if r.n != tt.size || r.err != nil {
						t.Errorf("socket %d: sent %d, %v; want %d, nil", i, r.n, r.err, tt.size)
					}
					if got := drain(peers[i]); !bytes.Equal(got, payload(i)) {
						t.Errorf("socket %d: the peer read %d bytes (%.10q…), want %d of %q", i, len(got), got, tt.size, rune('a'+i))
					}
				case full:
					if r.err != nil && !errors.Is(r.err, unix.EAGAIN) || r.err == nil && r.n >= tt.size {
						t.Errorf("full socket %d: sent %d, %v; want a short count or EAGAIN", i, r.n, r.err)
					}
				case closed:
					if !errors.Is(r.err, unix.EPIPE) {
						t.Errorf("socket %d with its peer gone: sent %d, %v; want EPIPE", i, r.n, r.err)
					}
				}
			}
			if want := min(uint64(queued), 1); sends != uint64(queued) || enters != want {
				t.Errorf("the batch counted %d sends in %d enters; want %d in %d", sends, enters, queued, want)
			}
		})
	}
	t.Run("epoll", func(t *testing.T) {
		es, err := NewSet(Epoll, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer stopWithin(t, "the epoll set's Stop", es.Stop)
		el := es.Loops()[0]
		var got *Sends
		onLoop(t, el, func() { got = el.Sends() })
		if got != nil {
			t.Errorf("an epoll loop's Sends = %p, want nil (one write(2) each)", got)
		}
	})
}

// fill writes to the non-blocking socket fd until it is full.
func fill(t *testing.T, fd int) {
	t.Helper()
	chunk := make([]byte, 64<<10)
	for {
		_, err := unix.Write(fd, chunk)
		if err == unix.EAGAIN {
			return
		}
		if err != nil {
			t.Fatal(fmt.Errorf("filling the socket: %w", err))
		}
	}
}

// drain reads what the non-blocking socket fd holds.
func drain(fd int) []byte {
	var got []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, buf)
		if n <= 0 || err != nil {
			return got
		}
		got = append(got, buf[:n]...)
	}
}
