//go:build !unix

package testnet

import (
	"net"
	"testing"
)

// RefusedAddr returns a loopback address that refused connections a
// moment ago (elsewhere than on Unix, a port cannot be held without
// listening).
func RefusedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
