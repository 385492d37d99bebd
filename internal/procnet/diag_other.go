//go:build !linux

package procnet

import "errors"

// listeningSockets has no socket diagnostics to ask outside Linux: the
// lookup reads the socket tables (which Linux alone has too).
func listeningSockets(uint16) ([]Socket, error) {
	return nil, errors.New("sock_diag is Linux's")
}
