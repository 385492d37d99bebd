//go:build !unix

package server

import "errors"

// directWrites: here a shard cannot write a socket without blocking; every
// token goes through the stream's goroutine (as over TLS).
const directWrites = false

// errAgain would be a full socket's error.
var errAgain = errors.New("resource temporarily unavailable")

// writeFd is never called here (directWrites is false).
func writeFd(uintptr, []byte) (int, error) { return 0, errors.ErrUnsupported }

// readableFd is never called here (no connection has a raw descriptor).
func readableFd(uintptr) bool { return true }
