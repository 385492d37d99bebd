//go:build linux

package server

import (
	"net"
	"testing"

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
