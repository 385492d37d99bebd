//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package client

import (
	"errors"
	"net"
	"syscall"
)

// peek looks, without blocking and without consuming anything, at what
// waits on conn, a TCP connection kept idle between requests.
func peek(conn net.Conn) connState {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return idle
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return idle
	}
	var (
		b     [1]byte
		n     int
		rerr  error
		state = idle
	)
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true // never wait
	})
	switch {
	case err != nil:
		state = peerClosed // the descriptor is gone
	case n > 0:
		state = pending
	case rerr == nil: // a zero-byte read: end of file
		state = peerClosed
	case errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EWOULDBLOCK) || errors.Is(rerr, syscall.EINTR):
		state = idle
	default: // ECONNRESET and the like
		state = peerClosed
	}
	return state
}
