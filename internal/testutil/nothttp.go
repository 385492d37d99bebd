package testutil

import (
	"net"
	"testing"
)

// A listener that does not speak HTTP, for the tests that point a client
// at one to see it fail with a clear error.

const Banner = "SSH-2.0-OpenSSH_9.2\r\n"

// NotHTTP returns the address of a loopback listener that answers every
// connection with Banner and closes it, whatever it was sent. The listener
// is closed, and its goroutine awaited, when the test ends.
func NotHTTP(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(Banner))
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-served })
	return ln.Addr().String()
}
