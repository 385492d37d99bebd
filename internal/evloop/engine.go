package evloop

import (
	"fmt"
	"strings"
)

// Engine names how the client and the server do their I/O: the event
// loops of this package, on one of their two backends, or a goroutine per
// request (the client) and per emission shard (the server) blocking in
// Go's netpoller.
type Engine string

// The engines. The zero value means Auto.
const (
	// Auto is the fastest engine available here, as measured
	// (docs/PERF.md): Epoll on Linux, else Goroutine.
	Auto = Engine("auto")
	// Epoll: the client's plain-TCP HTTP/1.1 requests and the server's
	// emission shards run on the event loops, which wait with epoll and
	// read with read(2) (Linux).
	Epoll = Engine("epoll")
	// Uring: the same event loops on io_uring — multishot receives into
	// provided buffers (Linux 6.1 and later, where the kernel allows
	// io_uring; else Epoll, with a note).
	Uring = Engine("uring")
	// Goroutine is the portable engine, and the reference the others are
	// tested against.
	Goroutine = Engine("goroutine")
)

// Engines lists the names ParseEngine accepts, for usage texts.
const Engines = "auto, epoll, uring, goroutine"

// ParseEngine returns the engine named s ("" is Auto).
func ParseEngine(s string) (Engine, error) {
	switch e := Engine(strings.ToLower(s)); e {
	case "", Auto:
		return Auto, nil
	case Epoll, Uring, Goroutine:
		return e, nil
	}
	return "", fmt.Errorf("unknown engine %q (want one of: %s)", s, Engines)
}

// OnLoops reports whether e, an engine Resolve returned, runs on the
// event loops.
func (e Engine) OnLoops() bool { return e == Epoll || e == Uring }

// Resolve returns the engine e stands for here — Auto the fastest one
// available, an engine the platform or the kernel refuses the next one
// down (Uring, Epoll, Goroutine) — and, when e named an engine it cannot
// have, why: the text of a note for the user.
func (e Engine) Resolve() (Engine, string) { return resolve(e, Available, UringAvailable) }

// resolve is Resolve with the probes of the epoll and the io_uring loops
// (called only when e needs them: they start the loops).
func resolve(e Engine, epoll, uring func() error) (Engine, string) {
	switch e {
	case Goroutine:
		return Goroutine, ""
	case Uring:
		err := uring()
		if err == nil {
			return Uring, ""
		}
		if epoll() != nil {
			return Goroutine, "the uring engine is not available (" + err.Error() + "); using the goroutine engine"
		}
		return Epoll, "the uring engine is not available (" + err.Error() + "); using the epoll engine"
	}
	if err := epoll(); err != nil {
		if e == Epoll {
			return Goroutine, "the epoll engine is not available (" + err.Error() + "); using the goroutine engine"
		}
		return Goroutine, ""
	}
	return Epoll, ""
}

// Loops reports whether engine e runs on the event loops here, and when
// it asked for an engine it cannot have, why not (see Resolve).
func (e Engine) Loops() (bool, string) {
	r, note := e.Resolve()
	return r.OnLoops(), note
}
