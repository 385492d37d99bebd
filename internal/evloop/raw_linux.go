//go:build linux

package evloop

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The loops' system calls never block (non-blocking sockets, epoll_wait
// with a zero timeout, timerfd_settime), so they go through RawSyscall:
// without the runtime's bookkeeping for a call that may block, which on
// every call also wakes the runtime's monitor thread when it sleeps. That
// bookkeeping was a tenth of the CPU of a -c 500 run (docs/PERF.md).

// errnoErr returns err as an error, nil for 0.
func errnoErr(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// RawRead is read(2) on a non-blocking descriptor.
func RawRead(fd int, p []byte) (int, error) { return rawIO(unix.SYS_READ, fd, p) }

// RawWrite is write(2) on a non-blocking descriptor.
func RawWrite(fd int, p []byte) (int, error) { return rawIO(unix.SYS_WRITE, fd, p) }

// rawIO is read(2) or write(2) (trap) of p on fd.
func rawIO(trap uintptr, fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// epollPoll is epoll_wait(2) with a zero timeout (epoll_pwait without a
// signal mask: the call every architecture has).
func epollPoll(epfd int, events []unix.EpollEvent) (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// timerfdSettime is timerfd_settime(2) with an absolute deadline.
func timerfdSettime(fd int, spec *unix.ItimerSpec) error {
	_, _, e := unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(fd), unix.TFD_TIMER_ABSTIME, uintptr(unsafe.Pointer(spec)), 0, 0, 0)
	return errnoErr(e)
}

// LocalPort returns the local port of the TCP socket fd, 0 when it has
// none (or is no TCP socket): getsockname(2) into an address on the
// stack, where unix.Getsockname allocates one.
func LocalPort(fd int) int {
	var rsa unix.RawSockaddrAny
	n := uint32(unix.SizeofSockaddrAny)
	_, _, e := unix.RawSyscall(unix.SYS_GETSOCKNAME, uintptr(fd), uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&n)))
	if e != 0 {
		return 0
	}
	switch rsa.Addr.Family {
	case unix.AF_INET, unix.AF_INET6:
		// sin_port and sin6_port follow the family, in network order.
		return int(uint8(rsa.Addr.Data[0]))<<8 | int(uint8(rsa.Addr.Data[1]))
	}
	return 0
}
