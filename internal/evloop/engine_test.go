package evloop

import (
	"errors"
	"testing"
)

// TestResolve: each engine, with the loops of each backend available or
// refused (io_uring_setup failing as a kernel with io_uring disabled
// makes it), resolves to the engine that runs and says why when that is
// not the one asked for; Auto falls back silently.
func TestResolve(t *testing.T) {
	ok := func() error { return nil }
	eperm := func() error { return errors.New("io_uring_setup: operation not permitted") }
	noEpoll := func() error { return errors.New("no epoll on plan9") }
	notCalled := func() error { t.Error("a probe was called for an engine that does not need it"); return nil }
	tests := []struct {
		e           Engine
		epoll, ring func() error
		want        Engine
		note        string
	}{
		{Auto, ok, notCalled, Epoll, ""},
		{Auto, noEpoll, notCalled, Goroutine, ""},
		{Epoll, ok, notCalled, Epoll, ""},
		{Epoll, noEpoll, notCalled, Goroutine, "the epoll engine is not available (no epoll on plan9); using the goroutine engine"},
		{Uring, notCalled, ok, Uring, ""},
		{Uring, ok, eperm, Epoll, "the uring engine is not available (io_uring_setup: operation not permitted); using the epoll engine"},
		{Uring, noEpoll, eperm, Goroutine, "the uring engine is not available (io_uring_setup: operation not permitted); using the goroutine engine"},
		{Goroutine, notCalled, notCalled, Goroutine, ""},
	}
	for _, tt := range tests {
		got, note := resolve(tt.e, tt.epoll, tt.ring)
		if got != tt.want || note != tt.note {
			t.Errorf("resolve(%s) = %s, %q; want %s, %q", tt.e, got, note, tt.want, tt.note)
		}
	}
}
