//go:build unix && !linux

package server

import "golang.org/x/sys/unix"

// directWrites: the shards write on the sockets' descriptors themselves.
const directWrites = true

// errAgain is what a non-blocking write returns when the socket is full.
var errAgain error = unix.EAGAIN

// writeFd is one non-blocking write(2) on fd; an interrupted one counts as
// a full socket.
func writeFd(fd uintptr, b []byte) (int, error) {
	n, err := unix.Write(int(fd), b)
	if err == unix.EINTR {
		err = errAgain
	}
	return max(n, 0), err
}
