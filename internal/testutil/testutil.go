// Package testutil holds what the tests of sse-latency share so that they
// pass every time, however busy the machine:
//
//   - listeners handed over already bound (Listen), never a port number
//     that was free a moment ago, an address that refuses connections
//     for as long as the test runs (RefusedAddr), and one that answers
//     in another protocol than HTTP (NotHTTP);
//   - a server run with a bounded stop (Serve), for our internal/server;
//   - TCP peers on loopback: ServeTCP runs a handler per connection, Play
//     writes a script on command and waits, between steps, for a condition
//     such as the client having read what came before; Relay forwards
//     through a pump, Hold among them;
//   - Await and Poll, for counters and conditions set by other goroutines
//     (instead of reading them once, or sleeping);
//   - Unread (Linux), what the peer of a connection has not read yet;
//   - FullDuplex, for an in-process reverse proxy, and Gateway
//     (StartGateway), an SSE-friendly one to measure through.
//
// It is imported only by _test.go files (TestImportedOnlyByTests checks
// it) and imports none of sse-latency's packages, so that the tests of any
// package, internal/server's own included, can use it without a cycle.
package testutil

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// AwaitBound is how long Await and Play wait for a condition before they
// give up: far beyond any wait of a correct program, even under -race on a
// busy machine, so that only a broken one reaches it.
const AwaitBound = 20 * time.Second

// bound is AwaitBound, shortened by this package's own tests.
var bound = AwaitBound

// StopBound is how long the stop of Serve waits for Serve to return.
const StopBound = 10 * time.Second

// Listen returns a TCP listener bound to 127.0.0.1:0, closed when the test
// ends (a second Close by its user is harmless).
func Listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen on 127.0.0.1:0: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// Server is what Serve runs: our internal/server.Server, made with
// server.New on a listener from Listen.
type Server interface {
	Serve(ctx context.Context) error
}

// Serve runs srv.Serve until the test ends, or until stop is called; stop
// cancels Serve and fails the test unless Serve returns nil within
// StopBound (while names the situation for the message). stop must be
// called from the test's goroutine; calling it again does nothing.
func Serve(t testing.TB, srv Server) (stop func(while string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	stopped := false
	stop = func(while string) {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve = %v, want nil after cancel", err)
			}
		case <-time.After(StopBound):
			t.Fatalf("Serve did not return within %v of cancellation %s", StopBound, while)
		}
	}
	t.Cleanup(func() { stop("at the end of the test") })
	return stop
}

// ServeTCP accepts connections on a new loopback listener and runs handle
// on each, in its own goroutine, then closes the connection. When the test
// ends, the listener and every connection still open are closed and
// ServeTCP waits for the handlers to return. It returns the address.
func ServeTCP(t testing.TB, handle func(c net.Conn)) string {
	t.Helper()
	ln := Listen(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open[c] = true
			mu.Unlock()
			wg.Go(func() {
				defer func() {
					c.Close()
					mu.Lock()
					delete(open, c)
					mu.Unlock()
				}()
				handle(c)
			})
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// Poll calls cond until it returns true and reports true, or reports false
// once within has passed. It sleeps between calls, from 50 µs up to 2 ms,
// and may be called from any goroutine.
func Poll(cond func() bool, within time.Duration) bool {
	deadline := time.Now().Add(within)
	pause := 50 * time.Microsecond
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
		pause = min(2*pause, 2*time.Millisecond)
	}
	return true
}

// Await waits until cond holds, and fails the test (what names the
// condition) if it does not within AwaitBound. It must be called from the
// test's goroutine.
func Await(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !Poll(cond, bound) {
		t.Fatalf("gave up after %v waiting for %s", bound, what)
	}
}

// Step is one move of a scripted peer (Play): Write goes out in one Write
// call, then, when Until is set, the peer waits until it holds — the client
// has counted the tokens those bytes complete, say — so that the next
// step's bytes reach the client in a Read of their own.
type Step struct {
	Write string
	Until func() bool
}

// ErrNotReached is returned by Play when a step's Until did not hold within
// AwaitBound.
var ErrNotReached = errors.New("testutil: a step's condition did not hold in time")

// Play writes steps to c in order, waiting after each for its Until. It
// returns the first write error (the client went away: often what a test
// expects), or an error wrapping ErrNotReached (a broken client, or a
// broken script: the caller should fail the test).
func Play(c net.Conn, steps ...Step) error {
	for i, s := range steps {
		if _, err := c.Write([]byte(s.Write)); err != nil {
			return err
		}
		if s.Until != nil && !Poll(s.Until, bound) {
			return fmt.Errorf("step %d of %d (%q): %w", i+1, len(steps), trim(s.Write), ErrNotReached)
		}
	}
	return nil
}

func trim(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// FullDuplex wraps h, an in-process gateway such as an
// httputil.ReverseProxy, so that its HTTP/1.1 server lets the request body
// be read while the response is written. A proxy needs it: its transport
// still reads the incoming body (the check for bytes beyond Content-Length)
// after the backend has answered, while the proxy writes the answer's head;
// without full duplex the server consumes and closes that body on the first
// write of the response, the transport's read fails ("invalid Read on
// closed Body"), and the transport closes the backend connection under the
// streaming answer (golang/go#40747, #57786). HTTP/2 is always full duplex.
func FullDuplex(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			http.Error(w, "testutil.FullDuplex: "+err.Error(), http.StatusInternalServerError)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ListenUDP returns a UDP socket bound to 127.0.0.1:0, closed when the test
// ends (a second Close by its user is harmless): hand it to a QUIC server.
func ListenUDP(t testing.TB) net.PacketConn {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen on udp 127.0.0.1:0: %v", err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc
}

// DropUDP binds a loopback UDP socket that reads every datagram and drops
// it, answering nothing (a firewall that blocks UDP, as far as a client
// can tell), until the test ends; it returns its address and a count of
// the datagrams dropped.
func DropUDP(t testing.TB) (addr string, dropped *atomic.Int64) {
	t.Helper()
	pc := ListenUDP(t)
	dropped = new(atomic.Int64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			dropped.Add(1)
		}
	}()
	t.Cleanup(func() { pc.Close(); <-done })
	return pc.LocalAddr().String(), dropped
}
