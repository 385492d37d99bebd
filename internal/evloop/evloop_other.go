//go:build !linux

package evloop

import (
	"errors"
	"runtime"
)

// Available reports why the event loops cannot run here: they need epoll.
func Available() error { return errors.New("no epoll on " + runtime.GOOS) }
