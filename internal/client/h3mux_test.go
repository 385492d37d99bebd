package client

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/qpack"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/quicvarint"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/evloop"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/server"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// TestH3StreamsPerConn: six slots, three streams per connection, over
// HTTP/3 to the dummy server: the server accepts exactly two QUIC
// connections and has all six streams open at once (its clock, a fake
// one, holds the first tokens until then), so three on each; every
// request is ok with all its tokens over h3, three per connection, its
// Sent between its start and its head; the records count three streams
// in flight at once on each connection.
func TestH3StreamsPerConn(t *testing.T) {
	const slots, perConn, tokens = 6, 3, 5
	f := clock.NewFake(1_800_000_000_000_000_000)
	tc, _, err := server.SelfSignedTLS("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(testutil.Listen(t), server.Config{Tokens: tokens, ThinkMs: 1000, DelayMs: 1, TLS: tc,
		Clock: f, Engine: evloop.Goroutine, SpinAhead: -1})
	pc := testutil.ListenUDP(t)
	if err := srv.UseHTTP3(pc); err != nil {
		t.Fatal(err)
	}
	testutil.Serve(t, srv)
	o := h3Options(pc.LocalAddr().String(), api.Chat, tokens)
	o.IncludeUsage, o.StreamsPerConn, o.Timeout = false, perConn, testutil.AwaitBound
	q := New(o)
	recsc := make(chan [][]*result.Request)
	go func() { recsc <- runSlots(t, q, slots, 1) }()
	open := testutil.Poll(func() bool { return srv.ActiveStreams() == slots }, testutil.AwaitBound)
	stop := driveFake(f)
	recs := <-recsc
	stop()
	if !open {
		t.Fatalf("the server never had %d streams open at once (%d)", slots, srv.ActiveStreams())
	}
	if n := srv.H3Connections(); n != slots/perConn {
		t.Errorf("the server accepted %d QUIC connections, want %d", n, slots/perConn)
	}
	checkGroupRecords(t, recs, perConn, tokens, ProtoH3)
}

// h3Answer is an HTTP/3 response on a raw QUIC stream: a HEADERS frame
// (":status 200", an event stream) and one DATA frame with body.
func h3Answer(t *testing.T, body string) []byte {
	t.Helper()
	var block bytes.Buffer // the encoder writes the prefix: no dynamic table
	enc := qpack.NewEncoder(&block)
	for _, f := range []qpack.HeaderField{{Name: ":status", Value: "200"}, {Name: "content-type", Value: "text/event-stream"}} {
		if err := enc.WriteField(f); err != nil {
			t.Fatal(err)
		}
	}
	b := quicvarint.Append(quicvarint.Append(nil, 0x1), uint64(block.Len()))
	b = append(b, block.Bytes()...)
	b = quicvarint.Append(quicvarint.Append(b, 0x0), uint64(len(body)))
	return append(b, body...)
}

// rawH3Gateway is an HTTP/3 gateway on quic-go's QUIC alone: on each
// connection (from 1) it sends its control stream's SETTINGS, reads each
// request stream to its end and hands it to serve, with the control
// stream; it returns the UDP address.
func rawH3Gateway(t *testing.T, serve func(conn int, ctrl *quic.SendStream, str *quic.Stream)) string {
	t.Helper()
	tc := h3TestTLS(t)
	ln, err := quic.Listen(testutil.ListenUDP(t), tc, &quic.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []*quic.Conn
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for n := 1; ; n++ {
			c, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				ctrl, err := c.OpenUniStream()
				if err != nil {
					return
				}
				ctrl.Write([]byte{0x00, 0x04, 0x00}) // the control stream, an empty SETTINGS
				for {
					str, err := c.AcceptStream(context.Background())
					if err != nil {
						return
					}
					wg.Go(func() {
						io.Copy(io.Discard, str)
						serve(n, ctrl, str)
					})
				}
			})
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-accepted
		mu.Lock()
		for _, c := range conns {
			c.CloseWithError(0, "")
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// h3Events is a whole chat answer of n tokens.
func h3Events(n int) string {
	var b strings.Builder
	b.WriteString(chatRole)
	for i := range n {
		b.WriteString(chatTok(clock.Real.Now(), api.Token(i)))
	}
	b.WriteString(chatFinish + done)
	return b.String()
}

// TestH3StreamsPerConnGoAway: three slots share a QUIC connection whose
// gateway, once it has the three request streams (ids 0, 4, 8), sends a
// GOAWAY with stream id 4 and answers stream 0 alone, once the client
// has cancelled the other two: the two streams
// above the id fail at once, named, the one below ends ok, and every
// slot's next request succeeds on a new connection (one for the group).
func TestH3StreamsPerConnGoAway(t *testing.T) {
	const n = 3
	answer := h3Answer(t, h3Events(n))
	goAway := quicvarint.Append(quicvarint.Append(quicvarint.Append(nil, 0x7), 1), 4) // GOAWAY, length 1, stream 4
	var mu sync.Mutex
	var first []*quic.Stream
	addr := rawH3Gateway(t, func(conn int, ctrl *quic.SendStream, str *quic.Stream) {
		if conn > 1 {
			str.Write(answer)
			str.Close()
			return
		}
		mu.Lock()
		first = append(first, str)
		all := len(first) == n
		mu.Unlock()
		if !all {
			return
		}
		// The client has read the GOAWAY once it cancelled the streams
		// it leaves out (their STOP_SENDING ends their write side here);
		// then stream 0 is answered, and its slot's next request goes to
		// a new connection.
		ctrl.Write(goAway)
		for _, s := range first {
			if s.StreamID() != 0 {
				<-s.Context().Done()
			}
		}
		for _, s := range first {
			if s.StreamID() == 0 {
				s.Write(answer)
				s.Close()
			}
		}
	})
	o := h3Options(addr, api.Chat, n)
	o.IncludeUsage, o.StreamsPerConn, o.Timeout = false, n, testutil.AwaitBound
	recs := runSlots(t, New(o), n, 2)
	var ok, notServed int
	for i, rs := range recs {
		switch r := rs[0]; {
		case r.OK() && r.ConnID == 1:
			ok++
		case r.Failure.Error() == "recv error: send: HTTP/3: the gateway sent GOAWAY: stream not served" && r.ConnID == 1:
			notServed++
		default:
			t.Errorf("slot %d, first request: %q on connection %d", i, r.Failure.Error(), r.ConnID)
		}
		if r := rs[1]; !r.OK() || r.ConnID != 2 || len(r.Tokens) != n {
			t.Errorf("slot %d, second request: %q with %d tokens on connection %d, want ok on connection 2", i, r.Failure.Error(), len(r.Tokens), r.ConnID)
		}
	}
	if ok != 1 || notServed != 2 {
		t.Errorf("first requests: %d ok, %d not served (GOAWAY); want 1 and 2", ok, notServed)
	}
}

// TestH3StreamsPerConnClosed: the gateway closes a QUIC connection that
// carries three streams, once it has written each one's head and a token:
// each stream fails naming the close (before its head, "send: ", when
// the close overtook it: a QUIC close discards what a stream had not
// delivered yet) — or, so overtaken on a joined connection, it is a reuse
// failure, sent again on the new connection —, and each slot's
// next request succeeds on a new connection, the group's second.
func TestH3StreamsPerConnClosed(t *testing.T) {
	const n = 4
	var requests, flushed atomic.Int64
	addr := hostileH3(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		io.WriteString(w, chatRole)
		if requests.Add(1) <= 3 {
			io.WriteString(w, chatTok(clock.Real.Now(), api.Token(0)))
			f.Flush()
			if flushed.Add(1) == 3 {
				c := r.Context().Value(quicConnKey{}).(*quic.Conn)
				c.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), "going away")
			}
			<-r.Context().Done()
			return
		}
		for i := range n {
			io.WriteString(w, chatTok(clock.Real.Now(), api.Token(i)))
		}
		io.WriteString(w, chatFinish+done)
	})
	o := h3Options(addr, api.Chat, n)
	o.IncludeUsage, o.StreamsPerConn, o.Timeout = false, 3, testutil.AwaitBound
	for i, rs := range runSlots(t, New(o), 3, 2) {
		r := rs[0]
		f := r.Failure.Error()
		named := r.ConnID == 1 && (f == "recv error: HTTP/3 connection closed by the peer: H3_NO_ERROR" ||
			f == "recv error: send: HTTP/3 connection closed by the peer: H3_NO_ERROR")
		if sentAgain := r.ReuseFailed && r.OK() && r.ConnID == 2; !named && !sentAgain {
			t.Errorf("slot %d, first request: %q on connection %d (reuse failed %v); want the close named on connection 1, or ok sent again on 2",
				i, r.Failure.Error(), r.ConnID, r.ReuseFailed)
		}
		if r := rs[1]; !r.OK() || r.ConnID != 2 || len(r.Tokens) != n {
			t.Errorf("slot %d, second request: %q with %d tokens on connection %d, want ok on connection 2", i, r.Failure.Error(), len(r.Tokens), r.ConnID)
		}
	}
}

// limitedH3 serves h over HTTP/3 with a QUIC limit of two concurrent
// request streams (MAX_STREAMS) until the test ends, counting the QUIC
// connections it accepts; it returns the address.
func limitedH3(t *testing.T, h http.HandlerFunc, conns *atomic.Int32) string {
	t.Helper()
	tc := h3TestTLS(t)
	return serveH3(t, &http3.Server{Handler: h, TLSConfig: tc, QUICConfig: &quic.Config{MaxIncomingStreams: 2},
		ConnContext: func(ctx context.Context, _ *quic.Conn) context.Context { conns.Add(1); return ctx }})
}

// TestH3StreamsPerConnStreamLimit: three slots share a QUIC connection
// whose peer allows two request streams at once. The third stream waits
// for one of the others to end, on the same connection (no second one is
// opened): when the peer answers the first two once both are open, all
// three end ok on one connection (the records may count three in flight:
// a stream the peer has ended, its credit given back, counts until the
// client has read its end); when the peer holds the first two, the third
// request's time runs out before its stream opened, and it fails naming
// the stream limit and the two streams in flight.
func TestH3StreamsPerConnStreamLimit(t *testing.T) {
	const n = 3
	t.Run("answered", func(t *testing.T) {
		var conns atomic.Int32
		var held atomic.Int32
		both := make(chan struct{})
		addr := limitedH3(t, func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			if k := held.Add(1); k == 2 {
				close(both)
			}
			<-both
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, h3Events(n))
		}, &conns)
		o := h3Options(addr, api.Chat, n)
		o.IncludeUsage, o.StreamsPerConn, o.Timeout = false, n, testutil.AwaitBound
		for i, rs := range runSlots(t, New(o), n, 1) {
			if r := rs[0]; !r.OK() || r.ConnID != 1 || r.Streams < 1 {
				t.Errorf("slot %d: %q on connection %d, %d streams in flight; want ok on connection 1", i, r.Failure.Error(), r.ConnID, r.Streams)
			}
		}
		if c := conns.Load(); c != 1 {
			t.Errorf("the peer accepted %d QUIC connections, want 1", c)
		}
	})
	t.Run("never answered", func(t *testing.T) {
		var conns, held atomic.Int32
		release := make(chan struct{})
		var once sync.Once
		free := func() { once.Do(func() { close(release) }) }
		addr := limitedH3(t, func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			held.Add(1)
			<-release // not the request's context: the streams stay open, the limit reached
		}, &conns)
		t.Cleanup(free) // before the server closes
		o := h3Options(addr, api.Chat, n)
		o.IncludeUsage, o.StreamsPerConn, o.Timeout = false, n, testutil.AwaitBound
		q := New(o)
		sessions, closeAll := newSessions(q, 3)
		defer closeAll()
		// The third session's requests have a timeout of their own
		// (another Request, the same group): the first two hold the
		// connection's two streams while it waits.
		o.Timeout = 300 * time.Millisecond
		short := New(o)
		sessions[2].q, sessions[2].base = short, short
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Go(func() { sessions[i].Do(context.Background(), &result.Request{Batch: "gw", Index: i}) })
		}
		if !testutil.Poll(func() bool { return held.Load() == 2 }, testutil.AwaitBound) {
			t.Fatalf("the peer never held two streams (%d)", held.Load())
		}
		rec := &result.Request{Batch: "gw", Index: 2}
		sessions[2].Do(context.Background(), rec)
		want := "recv error: send: HTTP/3: no QUIC stream opened before the request's time ran out: the gateway's stream limit (MAX_STREAMS) was reached, 2 streams in flight on the connection"
		if got := rec.Failure.Error(); got != want || rec.ConnID != 1 {
			t.Errorf("the third stream, two held: %q on connection %d; want %q on connection 1", got, rec.ConnID, want)
		}
		if c := conns.Load(); c != 1 {
			t.Errorf("the peer accepted %d QUIC connections, want 1", c)
		}
		free()
		wg.Wait()
	})
}
