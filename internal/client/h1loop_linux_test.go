//go:build linux

package client

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/evloop"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// TestOneWatchPerContext: on the event loops the requests under one
// context share a watch per loop. Cancelling the context ends every one
// of them as interrupted, and the watches go with the last request under
// them, whether it ended by the cancellation or by itself.
func TestOneWatchPerContext(t *testing.T) {
	addr := testutil.ServeTCP(t, func(c net.Conn) { io.Copy(io.Discard, c) }) // reads, never answers
	if !NewChatRequest(addr, -1, time.Hour).onLoop() {
		t.Skip("the goroutine engine watches each request's context itself")
	}
	const n = 40
	for _, cancelled := range []bool{true, false} {
		// Without the cancellation, the requests end by their -w.
		timeout := time.Hour
		if !cancelled {
			timeout = 50 * time.Millisecond
		}
		q := NewChatRequest(addr, -1, timeout)
		ctx, cancel := context.WithCancel(context.Background())
		recs := make(chan *result.Request, n)
		for range n {
			q.NewSession().Start(ctx, &result.Request{}, func(rec *result.Request) { recs <- rec })
		}
		if cancelled {
			awaitWatched(t, n)
			cancel()
		}
		for range n {
			select {
			case rec := <-recs:
				want := result.Timeout
				if cancelled {
					want = result.Interrupted
				}
				if rec.Failure.Kind != want {
					t.Errorf("cancelled %v: %q, want %v", cancelled, rec.Failure.Error(), want)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("cancelled %v: a request did not end", cancelled)
			}
		}
		cancel()
		watches.mu.Lock()
		left := len(watches.m)
		watches.mu.Unlock()
		if left != 0 {
			t.Errorf("cancelled %v: %d watches left after every request ended", cancelled, left)
		}
	}
}

// awaitWatched waits until n requests are in the loops' watches, counted
// by each watch's loop.
func awaitWatched(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		watches.mu.Lock()
		var ws []*ctxWatch
		for _, w := range watches.m {
			ws = append(ws, w)
		}
		watches.mu.Unlock()
		got := 0
		for _, w := range ws {
			c := make(chan int, 1)
			w.key.l.Post(counter{w, c}, 0, 0)
			got += <-c
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests watched, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// counter counts a watch's requests on its loop.
type counter struct {
	w *ctxWatch
	c chan int
}

func (c counter) Receive(*evloop.Loop, uint8, uint64) { c.c <- len(c.w.sessions) }
