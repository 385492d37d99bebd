package testutil

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
)

// Relay is a TCP gateway on loopback: for each connection it dials the
// address upstream returns (asked per connection, so that it may wait for
// an address known only later; "" drops the connection), copies the
// request direction as it comes, and hands the response direction to pump,
// which copies from up to down however it likes and returns when done.
// Both connections close when pump returns or the test ends. It returns
// the relay's address.
func Relay(t testing.TB, upstream func() string, pump func(down, up net.Conn)) string {
	t.Helper()
	var mu sync.Mutex
	ups := map[net.Conn]bool{}
	addr := ServeTCP(t, func(down net.Conn) {
		addr := upstream()
		if addr == "" {
			return
		}
		up, err := net.Dial("tcp", addr)
		if err != nil {
			return
		}
		mu.Lock()
		ups[up] = true
		mu.Unlock()
		defer func() {
			up.Close()
			mu.Lock()
			delete(ups, up)
			mu.Unlock()
		}()
		go func() {
			io.Copy(up, down)
			up.(*net.TCPConn).CloseWrite() // the client is done sending: so is the relay
		}()
		pump(down, up)
	})
	// Runs before ServeTCP's cleanup (which waits for the handlers): a pump
	// blocked on its upstream returns.
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for up := range ups {
			up.Close()
		}
	})
	return addr
}

// Forward is the pump of a relay that passes every byte on as it comes.
func Forward(down, up net.Conn) { io.Copy(down, up) }

// Hold is a relay pump that passes the response on until it has passed N
// occurrences of Marker (the N-th token event, say), then passes nothing
// more: the client is left waiting with what it got. Held returns the
// client connections held so far, for a test to check (Unread) that the
// client has read everything it was given before it acts.
type Hold struct {
	Marker string
	N      int

	mu   sync.Mutex
	held []net.Conn
}

// Pump is the relay pump (see Relay).
func (h *Hold) Pump(down, up net.Conn) {
	marker := []byte(h.Marker)
	var tail []byte // the end of what was passed, where a marker may start
	seen := 0
	buf := make([]byte, 32<<10)
	for seen < h.N {
		n, err := up.Read(buf)
		if n > 0 {
			scan := append(tail, buf[:n]...)
			seen += bytes.Count(scan, marker)
			tail = append([]byte(nil), scan[max(0, len(scan)-len(marker)+1):]...)
			if _, werr := down.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
	h.mu.Lock()
	h.held = append(h.held, down)
	h.mu.Unlock()
	io.Copy(io.Discard, up) // the rest never reaches the client
}

// Held returns the client connections that have reached the hold.
func (h *Hold) Held() []net.Conn {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]net.Conn(nil), h.held...)
}

// AwaitRead waits until n client connections have reached the hold and
// each client has read every byte the relay passed it (Unread), so that
// what the test does next (cancel the run, say) comes after the client
// took those bytes in. It skips the test where Unread is not available.
func (h *Hold) AwaitRead(t testing.TB, n int) {
	t.Helper()
	Await(t, "the relay to hold the connections", func() bool { return len(h.Held()) >= n })
	if _, err := Unread(h.Held()[0]); err != nil {
		t.Skip(err)
	}
	Await(t, "the clients to read what the relay passed them", func() bool {
		for _, c := range h.Held() {
			if u, err := Unread(c); err != nil || u > 0 {
				return false
			}
		}
		return true
	})
}
