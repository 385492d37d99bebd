//go:build !linux

package evloop

import (
	"errors"
	"runtime"
)

// Available reports why the event loops cannot run here: they need epoll.
func Available() error { return errors.New("no epoll on " + runtime.GOOS) }

// UringAvailable reports why the io_uring backend cannot run here: it
// needs Linux.
func UringAvailable() error { return errors.New("no io_uring on " + runtime.GOOS) }

// UringExpected reports whether this machine should allow the io_uring
// backend: not here.
func UringExpected() bool { return false }

// A Set is the event loops of one engine; there are none here (see
// Available), so NewSet always fails.
type Set struct{}

// NewSet fails: no event loops run here.
func NewSet(e Engine, n int) (*Set, error) { return nil, Available() }

// Engine is the engine of the set's loops: none here.
func (s *Set) Engine() Engine { return Goroutine }

// Stop does nothing: no set starts here.
func (s *Set) Stop() {}
