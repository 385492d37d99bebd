// Package controltest serves a registry's control endpoints for the
// duration of a test, for the tests of the packages around package control
// (server's hostile suite, cli's runs across hosts).
package controltest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/control"
	"github.com/sse-latency/sse-latency/internal/emission"
)

// Serve serves the control endpoints of reg, guarded by token, on
// 127.0.0.1:0 until the test ends, and returns their URL. logf, when set,
// receives net/http's log lines. The test fails if Serve does not stop
// cleanly within 10 s of the end.
func Serve(t testing.TB, reg *emission.Registry, token string, logf func(format string, args ...any)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ServeOn(t, ln, reg, token, "", logf)
}

// ServeOn is Serve on the listener ln (which it closes), for the server of
// instance id instance ("" none).
func ServeOn(t testing.TB, ln net.Listener, reg *emission.Registry, token, instance string, logf func(format string, args ...any)) string {
	t.Helper()
	h, err := control.NewHandler(reg, token, instance)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- control.Serve(ctx, ln, h, logf) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("control.Serve = %v, want nil after its cancellation", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("control.Serve did not return within 10 s of its cancellation")
		}
	})
	return "http://" + ln.Addr().String()
}
