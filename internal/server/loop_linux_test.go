//go:build linux

package server

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/evloop"
)

// TestShardFollowsTheClientsLoop: on the event loops, a stream goes to the
// shard of the loop that reads the client's side of its connection when
// this process's client claimed the port; otherwise by stream number.
func TestShardFollowsTheClientsLoop(t *testing.T) {
	loops, err := evloop.Loops()
	if err != nil {
		t.Skip("no event loops here")
	}
	srv := startServer(t, Config{Engine: evloop.Epoll})
	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	port := c.LocalAddr().(*net.TCPAddr).Port
	// The server's view of the connection: its remote address is the
	// client's local one.
	hc := &h1conn{c: fakeRemote{Conn: c, remote: c.LocalAddr()}}
	last := loops[len(loops)-1]
	last.Claim(port)
	defer last.Release(port)
	for no := range uint64(4) {
		if got, want := srv.shardFor(hc, no), srv.shards[last.Index()%len(srv.shards)]; got != want {
			t.Errorf("stream %d: shard %p, want %p (the claiming loop's)", no, got, want)
		}
	}
	last.Release(port)
	for no := range uint64(4) {
		if got, want := srv.shardFor(hc, no), srv.shards[no%uint64(len(srv.shards))]; got != want {
			t.Errorf("stream %d, unclaimed port: shard %p, want %p (by number)", no, got, want)
		}
	}
}

// fakeRemote is a connection seen from the other end.
type fakeRemote struct {
	net.Conn
	remote net.Addr
}

func (f fakeRemote) RemoteAddr() net.Addr { return f.remote }

// TestShardSendsInOneEnterOnUring: on an io_uring loop a shard's tick
// queues its plain HTTP/1.1 writes in the loop's batch and sends them in
// one io_uring_enter: every stream still gets each of its tokens, one
// chunk per event, with pi_ts in order, and the loop's batch counted the
// tokens the ticks wrote (each stream's after its first, which its
// connection's goroutine writes, coalesced at most maxTokensPerWrite to
// a write).
func TestShardSendsInOneEnterOnUring(t *testing.T) {
	set := uringLoop(t)
	const streams, tokens = 12, 12
	srv, stop := runServer(t, Config{Loops: set, Shards: 1, Tokens: tokens, DelayMs: 2})
	var wg sync.WaitGroup
	raw := make([]string, streams)
	for i := range streams {
		wg.Go(func() { raw[i] = exchange(t, srv, postRequest("/v1/chat/completions", `{"stream":true}`)) })
	}
	wg.Wait()
	stop("the streams ended")
	for i, r := range raw {
		h, b := splitResponse(t, r)
		if h != streamHead {
			t.Fatalf("stream %d: response head = %q, want %q", i, h, streamHead)
		}
		checkEvents(t, fmt.Sprintf("stream %d", i), parseEvents(t, dechunk(t, b)), wantEvents(api.Chat, tokens, false, `"sse-latency-1"`))
	}
	l := set.Loops()[0]
	counted := make(chan [2]uint64, 1)
	l.Post(countSends{counted}, 0, 0)
	c := <-counted
	sends, enters := c[0], c[1]
	least := uint64(streams * ((tokens - 1 + maxTokensPerWrite - 1) / maxTokensPerWrite))
	if sends < least || sends > streams*(tokens-1) {
		t.Errorf("the loop's batch sent %d writes, want %d to %d (the ticks' tokens)", sends, least, streams*(tokens-1))
	}
	t.Logf("%d sends in %d enters", sends, enters)
}

// countSends reads, on its loop, the counts of the loop's batch of sends.
type countSends struct{ to chan<- [2]uint64 }

func (c countSends) Receive(l *evloop.Loop, _ uint8, _ uint64) {
	var n [2]uint64
	if sb := l.Sends(); sb != nil {
		n[0], n[1] = sb.Counts()
	}
	c.to <- n
}

// TestShardSendsHeldAgainstClose: a tick's batch of sends is flushed with
// its shard's sendMu held, the lock under which Serve, ending, closes the
// connections (closeConns): a queued send cannot reach a socket that took
// its descriptor's number after a close.
func TestShardSendsHeldAgainstClose(t *testing.T) {
	set := uringLoop(t)
	var srv *Server
	var flushes, unheld atomic.Int64
	cfg := Config{Loops: set, Shards: 1, Tokens: 6, DelayMs: 2}
	cfg.wrapSends = func(b sendBatch) sendBatch {
		return heldSends{b, func() {
			flushes.Add(1)
			if srv.shards[0].sendMu.TryLock() {
				srv.shards[0].sendMu.Unlock()
				unheld.Add(1)
			}
		}}
	}
	srv, stop := runServer(t, cfg)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { exchange(t, srv, postRequest("/v1/chat/completions", `{"stream":true}`)) })
	}
	wg.Wait()
	stop("the streams ended")
	if flushes.Load() == 0 || unheld.Load() != 0 {
		t.Errorf("%d flushes, %d of them without the shard's sendMu held; want some, none", flushes.Load(), unheld.Load())
	}
	srv.closeConns(func() {
		if srv.shards[0].sendMu.TryLock() {
			srv.shards[0].sendMu.Unlock()
			t.Errorf("closeConns closes without the shard's sendMu")
		}
	})
}

// heldSends is a sendBatch that runs check before each Flush.
type heldSends struct {
	sendBatch
	check func()
}

func (h heldSends) Flush() { h.check(); h.sendBatch.Flush() }

// uringLoop returns a set of one io_uring loop, stopped when t ends; t
// is skipped where io_uring cannot run.
func uringLoop(t *testing.T) *evloop.Set {
	t.Helper()
	if err := evloop.UringAvailable(); err != nil {
		t.Skip(err)
	}
	set, err := evloop.NewSet(evloop.Uring, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Stop)
	return set
}
