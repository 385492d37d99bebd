package cli

import (
	"net"
	"strconv"
	"testing"
)

func FuzzSplitAddr(f *testing.F) {
	for _, s := range []string{"8090", ":8090", "*:8090", "127.0.0.1:80", "::1:8090", "[::1]:8090", "host:x", "[", ":", "1:2:3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		host, port, err := splitAddr(s)
		if err != nil {
			return
		}
		if port < 0 || port > 65535 {
			t.Fatalf("splitAddr(%q) port %d out of range", s, port)
		}
		// What was accepted must survive a JoinHostPort round trip.
		h, p, err := net.SplitHostPort(net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil || h != host || p != strconv.Itoa(port) {
			t.Fatalf("splitAddr(%q) = %q, %d: does not round-trip (%q %q %v)", s, host, port, h, p, err)
		}
	})
}
