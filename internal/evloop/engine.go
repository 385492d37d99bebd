package evloop

import (
	"fmt"
	"strings"
)

// Engine names how the client and the server do their I/O: the event
// loops of this package, or a goroutine per request (the client) and per
// emission shard (the server) blocking in Go's netpoller.
type Engine string

// The engines. The zero value means Auto.
const (
	// Auto is Epoll where it applies, else Goroutine.
	Auto = Engine("auto")
	// Epoll: the client's plain-TCP HTTP/1.1 requests and the server's
	// emission shards run on the event loops (Linux).
	Epoll = Engine("epoll")
	// Goroutine is the portable engine, and the reference the other is
	// tested against.
	Goroutine = Engine("goroutine")
)

// Engines lists the names ParseEngine accepts, for usage texts.
const Engines = "auto, epoll, goroutine"

// ParseEngine returns the engine named s ("" is Auto).
func ParseEngine(s string) (Engine, error) {
	switch e := Engine(strings.ToLower(s)); e {
	case "", Auto:
		return Auto, nil
	case Epoll, Goroutine:
		return e, nil
	}
	return "", fmt.Errorf("unknown engine %q (want one of: %s)", s, Engines)
}

// Loops reports whether engine e runs on the event loops here, and when
// it asked for them (Epoll) and cannot have them, why not.
func (e Engine) Loops() (bool, string) {
	if e == Goroutine {
		return false, ""
	}
	if err := Available(); err != nil {
		if e == Epoll {
			return false, "the epoll engine is not available (" + err.Error() + "); using the goroutine engine"
		}
		return false, ""
	}
	return true, ""
}
