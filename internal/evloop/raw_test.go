//go:build linux

package evloop

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLocalPort: the port of a bound TCP socket, v4 and v6, without an
// allocation; 0 for a socket that is not TCP.
func TestLocalPort(t *testing.T) {
	for _, network := range []string{"tcp4", "tcp6"} {
		ln, err := net.Listen(network, map[string]string{"tcp4": "127.0.0.1:0", "tcp6": "[::1]:0"}[network])
		if err != nil {
			t.Logf("%s: %v", network, err)
			continue
		}
		defer ln.Close()
		f, err := ln.(*net.TCPListener).File()
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		want := ln.Addr().(*net.TCPAddr).Port
		if got := LocalPort(int(f.Fd())); got != want {
			t.Errorf("%s: LocalPort = %d, want %d", network, got, want)
		}
		if n := testing.AllocsPerRun(100, func() { LocalPort(int(f.Fd())) }); n != 0 {
			t.Errorf("%s: LocalPort allocates %v times", network, n)
		}
	}
	fd, peer := socketpair(t)
	defer unix.Close(fd)
	defer unix.Close(peer)
	if got := LocalPort(fd); got != 0 {
		t.Errorf("LocalPort(unix socket) = %d, want 0", got)
	}
}
