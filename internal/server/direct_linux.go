//go:build linux

package server

import (
	"golang.org/x/sys/unix"

	"github.com/sse-latency/sse-latency/internal/evloop"
)

// directWrites: the shards write on the sockets' descriptors themselves.
const directWrites = true

// errAgain is what a non-blocking write returns when the socket is full.
var errAgain error = unix.EAGAIN

// writeFd is one non-blocking write(2) on fd (without the runtime's
// bookkeeping for a call that may block: see evloop.RawWrite); an
// interrupted one counts as a full socket.
func writeFd(fd uintptr, b []byte) (int, error) {
	n, err := evloop.RawWrite(int(fd), b)
	if err == unix.EINTR {
		err = errAgain
	}
	return n, err
}

// readableFd reports whether the socket fd has bytes to read, or has
// ended or failed: a non-blocking peek at one byte.
func readableFd(fd uintptr) bool {
	var b [1]byte
	_, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	return err != unix.EAGAIN && err != unix.EINTR
}
