package tlsrecord

import (
	"context"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
)

// handshakeGate bounds how many TLS handshakes compute at the same time:
// a handshake holds a place while it runs on a CPU — key generation,
// key exchange, certificate signing or checking — and gives it back
// while it waits for the network, so that a peer slow to answer holds
// nothing.
//
// Why: a batch that opens its connections together (-r = -c) starts
// hundreds of handshakes in its first second, each ~0.5 ms of CPU on
// each side, while its first streams already carry tokens. Go's scheduler
// runs a goroutine that computes until it blocks or 10 ms pass; with
// every processor on a handshake, the event loop or shard readied by a
// token waits behind a queue of them, and the tool measures its own
// handshakes as the tail of its tokens (docs/PERF.md, "The handshake
// gate"). With at most half the processors on handshakes, the other half
// is there for the loops: a token waits for no handshake at all.
//
// Handshakes do not get slower for it: the ones that would have shared a
// CPU run one after the other instead, each as fast as alone.
type handshakeGate struct {
	places chan struct{} // a place held is a value in the channel
}

// newHandshakeGate returns a gate of n places (at least 1).
func newHandshakeGate(n int) *handshakeGate {
	return &handshakeGate{places: make(chan struct{}, max(n, 1))}
}

// gate is the process's gate: half the processors, at least one,
// counted at the first handshake (after --cpus has set GOMAXPROCS).
var gate = sync.OnceValue(func() *handshakeGate { return newHandshakeGate(runtime.GOMAXPROCS(0) / 2) })

// enter takes a place, waiting for one; it gives up when ctx ends.
func (g *handshakeGate) enter(ctx context.Context) error {
	select {
	case g.places <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// reenter takes a place back after a wait for the network, however long
// that takes: the places are held only while computing, so one is free
// within a handshake's step.
func (g *handshakeGate) reenter() { g.places <- struct{}{} }

// leave gives a place back.
func (g *handshakeGate) leave() { <-g.places }

// gatedConn is the net.Conn a handshake runs on while it holds a place
// in its gate (on): it gives the place back for the time of each read and
// write, which wait for the peer. Once the handshake is over (on false)
// it is its connection, no more.
type gatedConn struct {
	net.Conn
	g  *handshakeGate
	on atomic.Bool
}

func (c *gatedConn) Read(p []byte) (int, error) {
	if c.on.Load() {
		c.g.leave()
		defer c.g.reenter()
	}
	return c.Conn.Read(p)
}

func (c *gatedConn) Write(p []byte) (int, error) {
	if c.on.Load() {
		c.g.leave()
		defer c.g.reenter()
	}
	return c.Conn.Write(p)
}

// newGatedConn returns raw for a handshake to run on with g (see
// handshake), not yet holding a place.
func newGatedConn(raw net.Conn, g *handshakeGate) *gatedConn {
	return &gatedConn{Conn: raw, g: g}
}

// handshake runs hs (the tls.Conn's HandshakeContext, on c) holding a
// place in c's gate while it computes. The tls.Conn may close c after hs
// has returned (a cancelled context), so c is never changed but for its
// flag.
func handshake(ctx context.Context, c *gatedConn, hs func(context.Context) error) error {
	if err := c.g.enter(ctx); err != nil {
		return err
	}
	c.on.Store(true)
	defer c.g.leave()
	defer c.on.Store(false)
	return hs(ctx)
}
