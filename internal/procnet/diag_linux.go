//go:build linux

package procnet

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// diagTimeout bounds each receive of a dump: the kernel answers at once,
// but a lookup must never hang the run that asked.
const diagTimeout = 2 * time.Second

// maxDiagReceives bounds the receives of one family's dump (each up to
// diagBufBytes): far more listening sockets than a host has.
const (
	maxDiagReceives = 1024
	diagBufBytes    = 32 << 10
)

// listeningSockets returns this network namespace's listening TCP sockets
// on port (0: all), IPv4 and IPv6, from the kernel's socket diagnostics
// (NETLINK_SOCK_DIAG). Asked for listening sockets alone, the kernel walks
// its table of listeners only, where reading /proc/net/tcp walks every
// bucket of the established table too: 262,144 of them on a 24 GiB VM,
// 13 ms of system time a read, whatever the number of connections.
func listeningSockets(port uint16) ([]Socket, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, fmt.Errorf("sock_diag socket: %w", err)
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval(int64(diagTimeout))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return nil, fmt.Errorf("sock_diag receive timeout: %w", err)
	}
	var out []Socket
	buf := make([]byte, diagBufBytes)
	for i, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		if err := unix.Sendto(fd, diagRequest(family, port, uint32(i+1)), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			return nil, fmt.Errorf("sock_diag request: %w", err)
		}
		done := false
		for r := 0; !done; r++ {
			if r == maxDiagReceives {
				return nil, fmt.Errorf("sock_diag: no end after %d receives", r)
			}
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				return nil, fmt.Errorf("sock_diag receive: %w", err)
			}
			if n == 0 {
				return nil, fmt.Errorf("sock_diag: the dump ended without NLMSG_DONE")
			}
			var socks []Socket
			socks, done, err = ParseDiag(buf[:n])
			if err != nil {
				return nil, err
			}
			out = append(out, socks...)
		}
	}
	return out, nil
}
