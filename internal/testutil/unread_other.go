//go:build !linux

package testutil

import (
	"errors"
	"net"
)

// Unread reports an error: it reads Linux's socket tables, which this
// platform does not have. Tests that need it skip.
func Unread(c net.Conn) (int, error) {
	return 0, errors.New("testutil.Unread: Linux only")
}
