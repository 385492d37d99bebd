package tlsrecord

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/testutil"
)

// TestHandshakeGatePlaces checks the gate's count of places: at least
// one, a full gate makes enter wait until its context ends, and a place
// given back can be taken again.
func TestHandshakeGatePlaces(t *testing.T) {
	for _, tt := range []struct{ n, places int }{{-1, 1}, {0, 1}, {1, 1}, {3, 3}} {
		g := newHandshakeGate(tt.n)
		for i := range tt.places {
			if err := g.enter(context.Background()); err != nil {
				t.Fatalf("newHandshakeGate(%d): enter %d: %v", tt.n, i, err)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := g.enter(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("newHandshakeGate(%d): enter with %d places held = %v, want context.Canceled", tt.n, tt.places, err)
		}
		g.leave()
		if err := g.enter(context.Background()); err != nil {
			t.Errorf("newHandshakeGate(%d): enter after a leave: %v", tt.n, err)
		}
	}
	if got, want := cap(gate().places), max(1, runtime.GOMAXPROCS(0)/2); got != want {
		t.Errorf("the process's gate has %d places, want %d (half of GOMAXPROCS, at least 1)", got, want)
	}
}

// TestHandshakeGateFreeWhileWaiting checks that a handshake waiting for
// its peer holds no place: with a gate of one place and a handshake stuck
// on a server that never answers its ClientHello, another handshake still
// runs to its end. Afterwards both places are given back, the failed
// handshake's too.
func TestHandshakeGateFreeWhileWaiting(t *testing.T) {
	g := newHandshakeGate(1)
	cfg := &tls.Config{InsecureSkipVerify: true}

	// A server that reads the ClientHello's record header and says nothing.
	helloSeen := make(chan struct{})
	stuckRaw := dial(t, testutil.ServeTCP(t, func(c net.Conn) {
		var hdr [HeaderLen]byte
		if _, err := io.ReadFull(c, hdr[:]); err == nil {
			close(helloSeen)
		}
		io.Copy(io.Discard, c) // until the client goes
	}))
	stuckCtx, stopStuck := context.WithCancel(context.Background())
	defer stopStuck()
	stuck := make(chan error, 1)
	go func() {
		_, _, _, err := client(stuckCtx, stuckRaw, cfg, g)
		stuck <- err
	}()
	select {
	case <-helloSeen:
	case err := <-stuck:
		t.Fatalf("the handshake with the silent server ended before its ClientHello: %v", err)
	}

	// A real server: its handshake must not wait for the stuck one.
	srvCfg := &tls.Config{Certificates: []tls.Certificate{cert(t)}}
	raw := dial(t, testutil.ServeTCP(t, func(c net.Conn) {
		tc := tls.Server(c, srvCfg)
		if tc.Handshake() == nil {
			io.Copy(io.Discard, tc)
		}
	}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound on a hang only
	defer cancel()
	if _, _, _, err := client(ctx, raw, cfg, g); err != nil {
		t.Fatalf("handshake while another waits for its peer: %v (the waiting one holds the gate's place?)", err)
	}

	stopStuck()
	if err := <-stuck; err == nil {
		t.Fatal("the handshake with the silent server succeeded")
	}
	if n := len(g.places); n != 0 {
		t.Errorf("%d places held after both handshakes ended, want 0", n)
	}
}

// TestHandshakeGateAfterFailure checks that a handshake that fails — the
// peer answers with something that is not TLS — gives its place back.
func TestHandshakeGateAfterFailure(t *testing.T) {
	g := newHandshakeGate(1)
	raw := dial(t, testutil.ServeTCP(t, func(c net.Conn) {
		c.Write([]byte("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n"))
	}))
	raw.SetDeadline(time.Now().Add(time.Minute)) // a bound on a hang only
	if _, _, _, err := client(context.Background(), raw, &tls.Config{InsecureSkipVerify: true}, g); err == nil {
		t.Fatal("handshake with an HTTP server succeeded")
	}
	if n := len(g.places); n != 0 {
		t.Errorf("%d places held after the failed handshake, want 0", n)
	}
}

// dial connects to addr, the connection closed when the test ends.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
