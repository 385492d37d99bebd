package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"maps"
	"net"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/evloop"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/server"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// frame is the bytes of one HTTP/2 frame of type typ with flags on
// stream id, carrying payload.
func frame(typ http2.FrameType, flags http2.Flags, id uint32, payload string) []byte {
	n := len(payload)
	b := []byte{byte(n >> 16), byte(n >> 8), byte(n), byte(typ), byte(flags), byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}
	return append(b, payload...)
}

// scanAll scans the pieces in turn and returns the frames reported.
func scanAll(pieces ...[]byte) []scannedFrame {
	s := frameScan{preface: len(http2.ClientPreface)}
	var got []scannedFrame
	for _, p := range pieces {
		s.scan(p, func(f scannedFrame) { got = append(got, f) })
	}
	return got
}

// TestFrameScan: the scanner reports each frame once, when its last byte
// is scanned, whatever the writes it is split into — every split of the
// stream in two — with END_STREAM on DATA, on HEADERS that end the block,
// or on HEADERS whose block ends in a CONTINUATION.
func TestFrameScan(t *testing.T) {
	var stream []byte
	stream = append(stream, http2.ClientPreface...)
	stream = append(stream, frame(http2.FrameSettings, 0, 0, "abcdef")...)
	stream = append(stream, frame(http2.FrameHeaders, http2.FlagHeadersEndHeaders, 1, "hpack")...)
	stream = append(stream, frame(http2.FrameHeaders, http2.FlagHeadersEndHeaders, 3, "hpack")...)
	stream = append(stream, frame(http2.FrameData, 0, 1, "body")...)
	stream = append(stream, frame(http2.FrameData, http2.FlagDataEndStream, 3, "body")...)
	stream = append(stream, frame(http2.FrameWindowUpdate, 0, 0, "1234")...)
	stream = append(stream, frame(http2.FrameData, http2.FlagDataEndStream, 1, "")...)
	stream = append(stream, frame(http2.FrameHeaders, http2.FlagHeadersEndStream|http2.FlagHeadersEndHeaders, 5, "h")...)
	stream = append(stream, frame(http2.FrameHeaders, http2.FlagHeadersEndStream, 7, "h1")...)
	stream = append(stream, frame(http2.FrameContinuation, 0, 7, "h2")...)
	stream = append(stream, frame(http2.FrameContinuation, http2.FlagContinuationEndHeaders, 7, "h3")...)
	want := []scannedFrame{
		{typ: http2.FrameSettings},
		{typ: http2.FrameHeaders, id: 1, opens: true},
		{typ: http2.FrameHeaders, id: 3, opens: true},
		{typ: http2.FrameData, id: 1},
		{typ: http2.FrameData, id: 3, ends: true},
		{typ: http2.FrameWindowUpdate},
		{typ: http2.FrameData, id: 1, ends: true},
		{typ: http2.FrameHeaders, id: 5, opens: true, ends: true},
		{typ: http2.FrameHeaders, id: 7, opens: true},
		{typ: http2.FrameContinuation, id: 7},
		{typ: http2.FrameContinuation, id: 7, ends: true},
	}
	for cut := range len(stream) + 1 {
		if got := scanAll(stream[:cut], stream[cut:]); !slices.Equal(got, want) {
			t.Fatalf("scan of the stream cut at byte %d:\n got %+v\nwant %+v", cut, got, want)
		}
	}
	bytewise := make([][]byte, len(stream))
	for i := range stream {
		bytewise[i] = stream[i : i+1]
	}
	if got := scanAll(bytewise...); !slices.Equal(got, want) {
		t.Errorf("scan byte by byte:\n got %+v\nwant %+v", got, want)
	}
}

// FuzzFrameScan: on any bytes the scanner does not panic, and reports
// the same frames whether the bytes come in one write or two.
func FuzzFrameScan(f *testing.F) {
	f.Add(append([]byte(http2.ClientPreface), frame(http2.FrameData, http2.FlagDataEndStream, 1, "x")...), 30)
	f.Add([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\xff\xff\xff\x01\x05\x00\x00\x00\x03"), 3)
	f.Fuzz(func(t *testing.T, b []byte, cut int) {
		cut = min(max(cut, 0), len(b))
		if whole, split := scanAll(b), scanAll(b[:cut], b[cut:]); !slices.Equal(whole, split) {
			t.Fatalf("%q whole: %+v; cut at %d: %+v", b, whole, cut, split)
		}
	})
}

// sink is a connection whose writes all succeed, for muxConn.
type sink struct{ net.Conn }

func (sink) Write(p []byte) (int, error) { return len(p), nil }

// TestMuxConnSentPerStream: each stream's Sent is the instant of the
// write that carried its own END_STREAM, not another stream's, however
// the transport's WroteHeaders and the writes of concurrent streams
// interleave (the instants are a fake clock's, moved before each write).
func TestMuxConnSentPerStream(t *testing.T) {
	type step struct {
		wrote int    // > 0: WroteHeaders of the stream of this request (from 1)
		write []byte // else these bytes go out, at the next instant
	}
	h := func(id uint32) []byte { return frame(http2.FrameHeaders, http2.FlagHeadersEndHeaders, id, "hpack") }
	end := func(id uint32) []byte { return frame(http2.FrameData, http2.FlagDataEndStream, id, "body") }
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	preface := cat([]byte(http2.ClientPreface), frame(http2.FrameSettings, 0, 0, ""))
	tests := []struct {
		name  string
		steps []step
		want  []int64 // Sent of request 1, 2, ..., as the number of the write (from 1)
	}{
		{"one stream", []step{{write: preface}, {wrote: 1}, {write: cat(h(1), end(1))}}, []int64{2}},
		{"END_STREAMs in the order of the streams", []step{{write: preface}, {wrote: 1}, {write: h(1)}, {wrote: 2}, {write: h(3)},
			{write: end(1)}, {write: end(3)}}, []int64{4, 5}},
		{"the second stream ends first", []step{{write: preface}, {wrote: 1}, {wrote: 2}, {write: cat(h(1), h(3))},
			{write: end(3)}, {write: frame(http2.FrameWindowUpdate, 0, 0, "1234")}, {write: end(1)}}, []int64{5, 3}},
		{"a head on the wire before its WroteHeaders", []step{{write: preface}, {write: h(1)}, {wrote: 1}, {write: h(3)},
			{write: end(3)}, {wrote: 2}, {write: end(1)}}, []int64{5, 4}},
		{"two streams ended in one write", []step{{write: preface}, {wrote: 1}, {wrote: 2}, {write: cat(h(1), h(3), end(1), end(3))}},
			[]int64{2, 2}},
		{"a frame split across writes", []step{{write: preface}, {wrote: 1}, {write: h(1)}, {write: end(1)[:5]},
			{write: end(1)[5:]}}, []int64{4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewFake(0)
			c := newMuxConn(sink{}, clk)
			var stamps []*streamStamp
			writes := int64(0)
			for _, s := range tt.steps {
				if s.wrote > 0 {
					st := &streamStamp{}
					stamps = append(stamps, st)
					c.wroteHeaders(st)
					continue
				}
				writes++
				clk.Set(writes)
				c.Write(s.write)
			}
			var got []int64
			for _, st := range stamps {
				got = append(got, st.sent.Load())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Sent of the requests at writes %v, want %v", got, tt.want)
			}
		})
	}
}

// countingListener counts the connections it accepted.
type countingListener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// runSlots runs slots sessions of q, each doing perSlot requests in turn,
// concurrently, and returns the records, slot by slot; the sessions are
// closed once all are done, as a batch closes them. On the event loops it
// checks that they ran there, each group's sessions on one loop.
func runSlots(t *testing.T, q *Request, slots, perSlot int) [][]*result.Request {
	t.Helper()
	recs := make([][]*result.Request, slots)
	var wg sync.WaitGroup
	sessions := make([]*Session, slots)
	for i := range slots {
		sessions[i] = q.NewSession()
	}
	for i, s := range sessions {
		wg.Go(func() {
			for j := range perSlot {
				rec := &result.Request{Batch: "gw", Index: i*perSlot + j}
				s.Do(context.Background(), rec)
				recs[i] = append(recs[i], rec)
			}
		})
	}
	wg.Wait()
	for _, s := range sessions {
		s.Close()
	}
	onLoops := q.onLoop()
	for i, s := range sessions {
		switch {
		case !onLoops && s.ev.l != nil:
			t.Errorf("session %d ran on a loop, the engine is %s", i, testEngine)
		case onLoops && s.ev.l == nil:
			t.Errorf("session %d did not run on the %s engine's loops", i, testEngine)
		case onLoops && s.ev.l != sessions[i-i%q.StreamsPerConn].ev.l:
			t.Errorf("session %d ran on another loop than its group's first, session %d", i, i-i%q.StreamsPerConn)
		}
	}
	return recs
}

// TestStreamsPerConn: six slots, three streams per connection, against
// the dummy server over h2c: the server accepts exactly two connections
// and has all six streams open at once (its clock, a fake one, holds the
// first tokens until then), so three on each; every request is ok with all
// its tokens, // connection, and its Sent lies between its own start and its head;
// the records count three streams in flight at once on each connection.
func TestStreamsPerConn(t *testing.T) {
	const slots, perConn, tokens = 6, 3, 5
	f := clock.NewFake(1_800_000_000_000_000_000)
	ln := &countingListener{Listener: testutil.Listen(t)}
	srv := server.New(ln, server.Config{Tokens: tokens, ThinkMs: 1000, DelayMs: 1, HTTP2: true,
		Clock: f, Engine: evloop.Goroutine, SpinAhead: -1})
	testutil.Serve(t, srv)
	q := New(Options{Addr: srv.Addr().String(), H2C: true, KeepAlive: true, StreamsPerConn: perConn,
		Tokens: tokens, ExpectTokens: tokens, Timeout: testutil.AwaitBound})
	done := make(chan [][]*result.Request)
	go func() { done <- runSlots(t, q, slots, 1) }()
	open := testutil.Poll(func() bool { return srv.ActiveStreams() == slots }, testutil.AwaitBound)
	stop := driveFake(f) // the streams may go on
	recs := <-done
	stop()
	if !open {
		t.Fatalf("the server never had %d streams open at once (%d)", slots, srv.ActiveStreams())
	}
	if n := ln.accepted.Load(); n != slots/perConn {
		t.Errorf("the server accepted %d connections, want %d", n, slots/perConn)
	}
	checkGroupRecords(t, recs, perConn, tokens, ProtoH2C)
}

// checkGroupRecords checks the records of a run of slots in groups of
// perConn, one request each: every request ok with its tokens over proto,
// sent between its start and its head, perConn requests on each
// connection, and perConn streams in flight on each at the most.
func checkGroupRecords(t *testing.T, recs [][]*result.Request, perConn, tokens int, proto string) {
	t.Helper()
	slots := len(recs)
	perID, most := map[int64]int{}, map[int64]int{}
	for i, rs := range recs {
		r := rs[0]
		perID[r.ConnID]++
		most[r.ConnID] = max(most[r.ConnID], r.Streams)
		if !r.OK() || r.VisibleCount() != tokens || r.Proto != proto {
			t.Errorf("slot %d: %q, %d tokens over %s; want ok with %d over %s", i, r.Failure.Error(), r.VisibleCount(), r.Proto, tokens, proto)
		}
		if r.Sent < r.Start || r.Sent > r.HeadAt {
			t.Errorf("slot %d: start %d, sent %d, head %d; want start <= sent <= head", i, r.Start, r.Sent, r.HeadAt)
		}
	}
	if len(perID) != slots/perConn || slices.ContainsFunc(slices.Collect(maps.Values(perID)), func(n int) bool { return n != perConn }) {
		t.Errorf("requests per connection %v, want %d connections of %d", perID, slots/perConn, perConn)
	}
	if slices.ContainsFunc(slices.Collect(maps.Values(most)), func(n int) bool { return n != perConn }) {
		t.Errorf("the most streams in flight on each connection, by the records: %v; want %d on each", most, perConn)
	}
}

// driveFake moves f to each deadline a goroutine waits for, as soon as
// one waits, until the returned stop is called.
func driveFake(f *clock.Fake) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			next, err := f.Next(ctx)
			if err != nil {
				return
			}
			f.Set(next)
		}
	})
	return func() { cancel(); wg.Wait() }
}

// h2Respond answers stream id on f with a head and whole, END_STREAM
// with its last byte when end.
func h2Respond(f *h2Writer, id uint32, whole []byte, end bool) {
	f.do(func(fr *http2.Framer) error {
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, EndHeaders: true,
			BlockFragment: h2Block(":status", "200", "content-type", "text/event-stream")}); err != nil {
			return err
		}
		return fr.WriteData(id, end, whole)
	})
}

// TestStreamsPerConnGoAway: three slots share a connection whose peer
// answers the three streams' heads, then sends GOAWAY with last stream id
// 1: the two streams above it fail, named, the first ends ok, and every
// slot's next request succeeds on a new connection.
func TestStreamsPerConnGoAway(t *testing.T) {
	chat := dialectStreams[0]
	whole := []byte(chat.events(false, chat.tokens(3, true)...))
	cut := 20
	var mu sync.Mutex
	var first []uint32
	addr := h2Streams(t, func(f *h2Writer, conn int, id uint32) {
		if conn > 1 {
			h2Respond(f, id, whole, true)
			return
		}
		mu.Lock()
		first = append(first, id)
		all := len(first) == 3
		mu.Unlock()
		h2Respond(f, id, whole[:cut], false)
		if all {
			f.do(func(fr *http2.Framer) error { return fr.WriteGoAway(1, http2.ErrCodeNo, nil) })
			f.do(func(fr *http2.Framer) error { return fr.WriteData(1, true, whole[cut:]) })
		}
	})
	q := New(Options{Addr: addr, H2C: true, KeepAlive: true, StreamsPerConn: 3, ExpectTokens: 3, Tokens: -1, Timeout: testutil.AwaitBound})
	recs := runSlots(t, q, 3, 2)
	var ok, goaway int
	for i, rs := range recs {
		r := rs[0]
		switch {
		case r.OK() && r.ConnID == 1:
			ok++
		case strings.Contains(r.Failure.Error(), "recv error: http2: Transport received Server's graceful shutdown GOAWAY") && r.ConnID == 1:
			goaway++
		default:
			t.Errorf("slot %d, first request: %q on connection %d", i, r.Failure.Error(), r.ConnID)
		}
		if r := rs[1]; !r.OK() || r.ConnID != 2 {
			t.Errorf("slot %d, second request: %q on connection %d, want ok on connection 2", i, r.Failure.Error(), r.ConnID)
		}
	}
	if ok != 1 || goaway != 2 {
		t.Errorf("first requests: %d ok, %d failed by the GOAWAY; want 1 and 2", ok, goaway)
	}
}

// TestStreamsPerConnPeerLimit: a peer that allows two concurrent streams
// (SETTINGS_MAX_CONCURRENT_STREAMS) carries two of three slots' streams;
// the third slot opens a second connection (the peer answers once it
// has the three streams).
func TestStreamsPerConnPeerLimit(t *testing.T) {
	chat := dialectStreams[0]
	whole := []byte(chat.events(false, chat.tokens(3, true)...))
	type stream struct {
		f  *h2Writer
		id uint32
	}
	var mu sync.Mutex
	var held []stream
	conns := map[int]bool{}
	addr := h2Peer(t, func(f *h2Writer, conn int, frame http2.Frame) {
		mu.Lock()
		conns[conn] = true // each connection's first frame is the client's SETTINGS
		var answer []stream
		if d, ok := frame.(*http2.DataFrame); ok && d.StreamEnded() {
			held = append(held, stream{f, d.StreamID})
			if len(held) == 3 {
				answer = held
			}
		}
		mu.Unlock()
		for _, s := range answer {
			h2Respond(s.f, s.id, whole, true)
		}
	}, http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 2})
	q := New(Options{Addr: addr, H2C: true, KeepAlive: true, StreamsPerConn: 3, ExpectTokens: 3, Tokens: -1, Timeout: testutil.AwaitBound})
	recs := runSlots(t, q, 3, 1)
	perID := map[int64]int{}
	for i, rs := range recs {
		r := rs[0]
		perID[r.ConnID]++
		if !r.OK() {
			t.Errorf("slot %d: %q", i, r.Failure.Error())
		}
	}
	mu.Lock()
	n := len(conns)
	mu.Unlock()
	if n != 2 || perID[1]+perID[2] != 3 || max(perID[1], perID[2]) != 2 {
		t.Errorf("%d connections accepted, requests per connection %v; want 2, carrying 2 and 1", n, perID)
	}
}

// ackPing answers frame when it is a PING.
func (f *h2Writer) ackPing(frame http2.Frame) {
	if p, ok := frame.(*http2.PingFrame); ok && !p.IsAck() {
		f.do(func(fr *http2.Framer) error { return fr.WritePing(true, p.Data) })
	}
}

// TestStreamsPerConnEngine: requests that share HTTP/2 connections run
// on the engine asked for, the loops included, without a note.
func TestStreamsPerConnEngine(t *testing.T) {
	mux := Options{H2C: true, KeepAlive: true, StreamsPerConn: 2}
	uring, uringNote := EngineUring.Resolve()
	for _, tt := range []struct {
		name string
		o    Options
		want Engine
		note string
	}{
		{"epoll asked", Options{H2C: true, KeepAlive: true, StreamsPerConn: 2, Engine: EngineEpoll}, EngineEpoll, ""},
		{"uring asked", Options{H2C: true, KeepAlive: true, StreamsPerConn: 2, Engine: EngineUring}, uring, uringNote},
		{"epoll asked, h2 over TLS", Options{Scheme: "https", HTTP2: true, KeepAlive: true, StreamsPerConn: 8, Engine: EngineEpoll}, EngineEpoll, ""},
		{"goroutine asked", Options{H2C: true, KeepAlive: true, StreamsPerConn: 2, Engine: EngineGoroutine}, EngineGoroutine, ""},
		{"without -k", Options{H2C: true, StreamsPerConn: 2, Engine: EngineGoroutine}, EngineGoroutine, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.o.Engine != EngineGoroutine && evloop.Available() != nil {
				t.Skip("no epoll loops here")
			}
			e, note := tt.o.ResolveEngine()
			if e != tt.want || note != tt.note {
				t.Errorf("ResolveEngine = %s, %q; want %s, %q", e, note, tt.want, tt.note)
			}
		})
	}
	if !mux.multiplexes() || (&Options{H2C: true, StreamsPerConn: 2}).multiplexes() || (&Options{KeepAlive: true, StreamsPerConn: 2}).multiplexes() {
		t.Errorf("multiplexes: want true only with -k and HTTP/2")
	}
}

// TestStreamsPerConnClosed: the peer closes a connection that carries
// three streams, their heads and a part of their bodies received: each
// stream fails, named, and each slot's next request succeeds on a new
// connection.
func TestStreamsPerConnClosed(t *testing.T) {
	chat := dialectStreams[0]
	whole := []byte(chat.events(false, chat.tokens(3, true)...))
	var mu sync.Mutex
	n := 0
	addr := h2Streams(t, func(f *h2Writer, conn int, id uint32) {
		if conn > 1 {
			h2Respond(f, id, whole, true)
			return
		}
		h2Respond(f, id, whole[:20], false)
		mu.Lock()
		n++
		all := n == 3
		mu.Unlock()
		if all {
			f.c.Close()
		}
	})
	q := New(Options{Addr: addr, H2C: true, KeepAlive: true, StreamsPerConn: 3, ExpectTokens: 3, Tokens: -1, Timeout: testutil.AwaitBound})
	for i, rs := range runSlots(t, q, 3, 2) {
		if r := rs[0]; r.OK() || r.ConnID != 1 || !strings.HasPrefix(r.Failure.Error(), "recv error: ") {
			t.Errorf("slot %d, first request: %q on connection %d; want a recv error on connection 1", i, r.Failure.Error(), r.ConnID)
		}
		if r := rs[1]; !r.OK() || r.ConnID != 2 {
			t.Errorf("slot %d, second request: %q on connection %d, want ok on connection 2", i, r.Failure.Error(), r.ConnID)
		}
	}
}

// TestStreamsPerConnWindowStall: three request bodies of 40 000 bytes
// each share a connection window of 65 535 that the peer never opens
// (nor does it answer): the client sends no more DATA than the window,
// so at least one body stalls on it, and every stream fails through the
// idle timeout, none hangs.
func TestStreamsPerConnWindowStall(t *testing.T) {
	var data, ended atomic.Int64
	addr := h2Peer(t, func(_ *h2Writer, _ int, frame http2.Frame) {
		if d, ok := frame.(*http2.DataFrame); ok {
			data.Add(int64(len(d.Data())))
			if d.StreamEnded() {
				ended.Add(1)
			}
		}
	})
	q := New(Options{Addr: addr, H2C: true, KeepAlive: true, StreamsPerConn: 3, ExpectTokens: 3, Tokens: -1, PromptBytes: 40_000,
		IdleTimeout: 100 * time.Millisecond, Timeout: testutil.AwaitBound})
	for i, rs := range runSlots(t, q, 3, 1) {
		if r := rs[0]; r.Failure.Error() != "idle timeout after 100ms" || r.ConnID != 1 {
			t.Errorf("slot %d: %q on connection %d, want an idle timeout on connection 1", i, r.Failure.Error(), r.ConnID)
		}
	}
	if data.Load() > 65535 || ended.Load() >= 3 {
		t.Errorf("the peer received %d DATA bytes, %d bodies whole; want at most its window of 65535, not all three", data.Load(), ended.Load())
	}
}

// TestStreamsPerConnOneRead: on the event loops, three streams whose
// heads and bodies the peer sends in one write are demuxed from one read:
// each request counts one read, and every arrival of the three — heads
// and tokens — is that read's instant.
func TestStreamsPerConnOneRead(t *testing.T) {
	chat := dialectStreams[0]
	whole := []byte(chat.events(false, chat.tokens(3, true)...))
	var mu sync.Mutex
	var ids []uint32
	addr := h2Streams(t, func(f *h2Writer, conn int, id uint32) {
		mu.Lock()
		ids = append(ids, id)
		all := slices.Clone(ids)
		mu.Unlock()
		if len(all) < 3 {
			return
		}
		var b bytes.Buffer
		fr := http2.NewFramer(&b, nil)
		for _, id := range all {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, EndHeaders: true,
				BlockFragment: h2Block(":status", "200", "content-type", "text/event-stream")})
		}
		for _, id := range all {
			fr.WriteData(id, true, whole)
		}
		f.raw(b.Bytes())
	})
	q := New(Options{Addr: addr, H2C: true, KeepAlive: true, StreamsPerConn: 3, ExpectTokens: 3, Tokens: -1, Timeout: testutil.AwaitBound})
	if !q.onLoop() {
		t.Skip("the goroutine engine times each stream's body Read")
	}
	recs := runSlots(t, q, 3, 1)
	at := recs[0][0].HeadAt
	for i, rs := range recs {
		r := rs[0]
		if !r.OK() || r.ConnID != 1 || r.Reads != 1 {
			t.Fatalf("slot %d: %q on connection %d in %d reads; want ok on connection 1 in one read", i, r.Failure.Error(), r.ConnID, r.Reads)
		}
		if r.HeadAt != at || slices.ContainsFunc(r.Tokens, func(k result.Token) bool { return k.Arrived != at }) {
			t.Errorf("slot %d: head at %d, tokens at %v; want all at %d, the one read's instant", i, r.HeadAt, r.Tokens, at)
		}
	}
}

// TestStreamsPerConnReset: three streams share a connection; the peer
// PINGs it once all three requests are in, answers them once the PING is
// acknowledged, and resets one of them mid-body: that request fails,
// named, the two others end ok, each slot's next request reuses the same
// connection, and the client acknowledged the peer's SETTINGS and PING.
func TestStreamsPerConnReset(t *testing.T) {
	chat := dialectStreams[0]
	whole := []byte(chat.events(false, chat.tokens(3, true)...))
	var mu sync.Mutex
	var ids []uint32
	var settingsAcked, pingAcked bool
	addr := h2Peer(t, func(f *h2Writer, conn int, frame http2.Frame) {
		mu.Lock()
		defer mu.Unlock()
		switch fr := frame.(type) {
		case *http2.SettingsFrame:
			settingsAcked = settingsAcked || fr.IsAck()
		case *http2.PingFrame:
			if !fr.IsAck() || fr.Data != h2PingData || pingAcked {
				return
			}
			pingAcked = true
			for _, id := range ids {
				h2Respond(f, id, whole[:20], false)
			}
			f.do(func(fr *http2.Framer) error { return fr.WriteRSTStream(3, http2.ErrCodeInternal) })
			for _, id := range ids {
				if id != 3 {
					f.do(func(fr *http2.Framer) error { return fr.WriteData(id, true, whole[20:]) })
				}
			}
		case *http2.DataFrame:
			if !fr.StreamEnded() {
				return
			}
			if ids = append(ids, fr.StreamID); len(ids) > 3 {
				h2Respond(f, fr.StreamID, whole, true)
			} else if len(ids) == 3 {
				f.do(func(fr *http2.Framer) error { return fr.WritePing(false, h2PingData) })
			}
		}
	})
	q := New(Options{Addr: addr, H2C: true, KeepAlive: true, StreamsPerConn: 3, ExpectTokens: 3, Tokens: -1, Timeout: testutil.AwaitBound})
	var ok, reset int
	for i, rs := range runSlots(t, q, 3, 2) {
		switch r := rs[0]; {
		case r.OK() && r.ConnID == 1:
			ok++
		case r.ConnID == 1 && strings.Contains(r.Failure.Error(), "stream ID 3; INTERNAL_ERROR; received from peer"):
			reset++
		default:
			t.Errorf("slot %d, first request: %q on connection %d", i, r.Failure.Error(), r.ConnID)
		}
		if r := rs[1]; !r.OK() || r.ConnID != 1 || !r.Reused {
			t.Errorf("slot %d, second request: %q on connection %d (reused %v), want ok on connection 1, reused", i, r.Failure.Error(), r.ConnID, r.Reused)
		}
	}
	if ok != 2 || reset != 1 {
		t.Errorf("first requests: %d ok, %d failed by the reset; want 2 and 1", ok, reset)
	}
	mu.Lock()
	defer mu.Unlock()
	if !settingsAcked || !pingAcked {
		t.Errorf("the client acknowledged the peer's SETTINGS: %v, its PING: %v; want both", settingsAcked, pingAcked)
	}
}

// TestStreamsPerConnTLS: six slots, three streams per connection, h2
// over TLS (ALPN): two connections of three requests each, every request
// ok over h2, the server seeing two client addresses.
func TestStreamsPerConnTLS(t *testing.T) {
	const slots, perConn, tokens = 6, 3, 4
	var s seen
	addr, roots := tlsServer(t, true, tokens, &s)
	q := New(Options{Addr: addr, TLS: &tls.Config{RootCAs: roots, ServerName: "example.com"}, HTTP2: true, KeepAlive: true,
		StreamsPerConn: perConn, ExpectTokens: tokens, Tokens: -1, Timeout: testutil.AwaitBound})
	perID := map[int64]int{}
	for i, rs := range runSlots(t, q, slots, 1) {
		r := rs[0]
		perID[r.ConnID]++
		if !r.OK() || r.Proto != ProtoH2 || len(r.Tokens) != tokens {
			t.Errorf("slot %d: %q over %q with %d tokens; want ok over h2 with %d", i, r.Failure.Error(), r.Proto, len(r.Tokens), tokens)
		}
	}
	s.mu.Lock()
	remotes := slices.Compact(slices.Sorted(slices.Values(s.remotes)))
	s.mu.Unlock()
	if len(perID) != slots/perConn || len(remotes) != slots/perConn || slices.ContainsFunc(slices.Collect(maps.Values(perID)), func(n int) bool { return n != perConn }) {
		t.Errorf("requests per connection %v, client addresses at the server %v; want %d connections of %d", perID, remotes, slots/perConn, perConn)
	}
}

// TestStreamsPerConnTLS12: a group's streams share one connection over
// TLS 1.2 (the server stops there; h2 by ALPN), as nginx 1.22 offers it
// by default: every request ok over h2 with its tokens, the server
// accepting one connection. On the event loops, whose record layer speaks
// TLS 1.3, the opener's request moves to the goroutine engine with its
// connection, and the sessions that waited for it join it there — the
// Request says why (TLSFallback).
func TestStreamsPerConnTLS12(t *testing.T) {
	const slots, tokens = 4, 4
	var s seen
	srv := httptest.NewUnstartedServer(sseHandler(tokens, &s))
	ln := &countingListener{Listener: srv.Listener}
	srv.Listener = ln
	srv.TLS = &tls.Config{MaxVersion: tls.VersionTLS12}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	q := New(Options{Addr: ln.Addr().String(), TLS: &tls.Config{InsecureSkipVerify: true}, HTTP2: true, KeepAlive: true,
		StreamsPerConn: slots, ExpectTokens: tokens, Tokens: -1, Timeout: testutil.AwaitBound})
	sessions, closeAll := newSessions(q, slots)
	recs := make([]*result.Request, slots)
	var wg sync.WaitGroup
	for i, sess := range sessions {
		recs[i] = &result.Request{Batch: "gw", Index: i}
		wg.Go(func() { sess.Do(context.Background(), recs[i]) })
	}
	wg.Wait()
	closeAll()
	ids := map[int64]bool{}
	for i, r := range recs {
		ids[r.ConnID] = true
		if !r.OK() || r.Proto != ProtoH2 || len(r.Tokens) != tokens {
			t.Errorf("slot %d over TLS 1.2: %q over %q with %d tokens; want ok over h2 with %d", i, r.Failure.Error(), r.Proto, len(r.Tokens), tokens)
		}
	}
	if n := ln.accepted.Load(); n != 1 || len(ids) != 1 {
		t.Errorf("%d slots of one group over TLS 1.2: the server accepted %d connections, the records name %d; want 1", slots, n, len(ids))
	}
	e, _ := q.ResolveEngine()
	if note := q.TLSFallback(); e.OnLoops() != (note != "") || (note != "" && !strings.Contains(note, "TLS 1.2")) {
		t.Errorf("engine %s: TLSFallback() = %q; want a note naming TLS 1.2 exactly on the event loops", e, note)
	}
}

// TestStreamsPerConnWindowUpdates: three streams share a connection and
// receive 8.25 MiB between them, 2.75 MiB each: the client gives the
// connection's window back in batches of half of it — on the event loops
// exactly one WINDOW_UPDATE for the connection after its opening one,
// none for a stream (each below half of its window) — and every request
// ends ok with its tokens.
func TestStreamsPerConnWindowUpdates(t *testing.T) {
	chat := dialectStreams[0]
	whole := []byte(chat.events(false, chat.tokens(3, true)...))
	const chunk, chunks = 16 << 10, 176 // 2.75 MiB a stream
	comment := append(append([]byte(": "), bytes.Repeat([]byte("x"), chunk-4)...), "\n\n"...)
	var mu sync.Mutex
	var ids []uint32
	updates := map[uint32][]uint32{} // increments by stream, after the peer's preface
	addr := h2Peer(t, func(f *h2Writer, conn int, frame http2.Frame) {
		mu.Lock()
		defer mu.Unlock()
		switch fr := frame.(type) {
		case *http2.WindowUpdateFrame:
			updates[fr.StreamID] = append(updates[fr.StreamID], fr.Increment)
		case *http2.DataFrame:
			if !fr.StreamEnded() {
				return
			}
			if ids = append(ids, fr.StreamID); len(ids) < 3 {
				return
			}
			for _, id := range ids {
				f.do(func(fr *http2.Framer) error {
					return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, EndHeaders: true,
						BlockFragment: h2Block(":status", "200", "content-type", "text/event-stream")})
				})
			}
			for range chunks {
				for _, id := range ids {
					f.do(func(fr *http2.Framer) error { return fr.WriteData(id, false, comment) })
				}
			}
			for _, id := range ids {
				f.do(func(fr *http2.Framer) error { return fr.WriteData(id, true, whole) })
			}
		}
	})
	q := New(Options{Addr: addr, H2C: true, KeepAlive: true, StreamsPerConn: 3, ExpectTokens: 3, Tokens: -1, Timeout: testutil.AwaitBound})
	for i, rs := range runSlots(t, q, 3, 1) {
		if r := rs[0]; !r.OK() || r.VisibleCount() != 3 || r.ConnID != 1 {
			t.Errorf("slot %d: %q with %d tokens on connection %d; want ok with 3 on connection 1", i, r.Failure.Error(), r.VisibleCount(), r.ConnID)
		}
	}
	if !q.onLoop() {
		return // x/net's transport batches by its own rule
	}
	// The connection's update goes as the last bodies are read: the
	// requests can end before the peer has read it.
	testutil.Poll(func() bool { mu.Lock(); defer mu.Unlock(); return len(updates[0]) >= 2 }, testutil.AwaitBound)
	mu.Lock()
	defer mu.Unlock()
	if len(updates[0]) == 0 || updates[0][0] != h2Window-h2DefaultWindow {
		t.Fatalf("connection WINDOW_UPDATEs %v: want the opening one, %d, first", updates[0], h2Window-h2DefaultWindow)
	}
	if got := updates[0][1:]; len(got) != 1 || got[0] < h2Window/2 {
		t.Errorf("connection WINDOW_UPDATEs after the opening one: %v; want one of at least %d", got, h2Window/2)
	}
	for id, incs := range updates {
		if id != 0 {
			t.Errorf("stream %d: WINDOW_UPDATEs %v; want none (2.75 MiB is below half its window)", id, incs)
		}
	}
}

// risingClock is the real clock whose readings strictly increase: two
// calls of Now never return the same instant.
type risingClock struct {
	clock.Clock
	last atomic.Int64
}

func (c *risingClock) Now() int64 {
	for {
		last, now := c.last.Load(), c.Clock.Now()
		now = max(now, last+1)
		if c.last.CompareAndSwap(last, now) {
			return now
		}
	}
}

// TestStreamsPerConnSentPartialWrites: three streams share a
// connection, their request bodies about 4 MiB each, all queued at once
// (the peer opens its windows wide), about what one write takes at most
// (the socket's send buffer): their END_STREAMs are 8 MiB apart at least
// between the first and the last, so they go out in different writes,
// and their Sent instants are not all one (a clock whose readings never
// repeat) — each is the return of the write that carried its own
// END_STREAM, not that of the write that emptied the queue.
func TestStreamsPerConnSentPartialWrites(t *testing.T) {
	chat := dialectStreams[0]
	whole := []byte(chat.events(false, chat.tokens(3, true)...))
	const slots = 3
	var mu sync.Mutex
	var ended []uint32
	opened := false
	addr := h2Peer(t, func(f *h2Writer, conn int, frame http2.Frame) {
		mu.Lock()
		defer mu.Unlock()
		if !opened {
			opened = true
			f.do(func(fr *http2.Framer) error { return fr.WriteWindowUpdate(0, 1<<30) })
		}
		if d, ok := frame.(*http2.DataFrame); ok && d.StreamEnded() {
			if ended = append(ended, d.StreamID); len(ended) == slots {
				for _, id := range ended {
					h2Respond(f, id, whole, true)
				}
			}
		}
	}, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1})
	q := New(Options{Addr: addr, H2C: true, KeepAlive: true, StreamsPerConn: slots, ExpectTokens: 3, Tokens: -1, PromptBytes: 8 << 20,
		Clock: &risingClock{Clock: clock.Real}, Timeout: testutil.AwaitBound})
	sent := map[int64]bool{}
	for i, rs := range runSlots(t, q, slots, 1) {
		r := rs[0]
		if !r.OK() || r.ConnID != 1 || r.Sent < r.Start || r.Sent > r.HeadAt {
			t.Fatalf("slot %d: %q on connection %d, start %d, sent %d, head %d; want ok on connection 1, start <= sent <= head",
				i, r.Failure.Error(), r.ConnID, r.Start, r.Sent, r.HeadAt)
		}
		sent[r.Sent] = true
	}
	if len(sent) == 1 {
		t.Errorf("every stream sent at %v: want each at the return of the write that carried its own END_STREAM", slices.Collect(maps.Keys(sent)))
	}
}

// mutePeer is an h2c peer that holds back its SETTINGS: it reads the
// client's preface and frames, counts the request streams that ended, and
// sends its SETTINGS only once release is closed (never when nil), and
// answers PINGs from then on; once its connection has had answerAt
// request streams, it answers them all with whole. hangUp closes its
// connections.
type mutePeer struct {
	addr  string
	ended atomic.Int32 // request streams whose END_STREAM came, all connections

	mu    sync.Mutex
	conns []net.Conn
}

func newMutePeer(t *testing.T, release <-chan struct{}, answerAt int, whole []byte) *mutePeer {
	t.Helper()
	p := &mutePeer{}
	p.addr = testutil.ServeTCP(t, func(c net.Conn) {
		p.mu.Lock()
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(c, preface); err != nil {
			return
		}
		f := &h2Writer{c: c, fr: http2.NewFramer(c, c)}
		var smu sync.Mutex
		settled := false
		if release != nil {
			go func() {
				<-release
				smu.Lock()
				defer smu.Unlock()
				settled = true
				f.do(func(fr *http2.Framer) error { return fr.WriteSettings() })
			}()
		}
		var ended []uint32
		for {
			frame, err := f.fr.ReadFrame()
			if err != nil {
				return
			}
			smu.Lock()
			if settled {
				f.ackPing(frame) // a peer's first frame is its SETTINGS
			}
			smu.Unlock()
			end := false
			switch fr := frame.(type) {
			case *http2.DataFrame:
				end = fr.StreamEnded()
			case *http2.HeadersFrame:
				end = fr.StreamEnded()
			}
			if !end {
				continue
			}
			ended = append(ended, frame.Header().StreamID)
			p.ended.Add(1)
			if len(ended) == answerAt {
				for _, id := range ended {
					h2Respond(f, id, whole, true)
				}
			}
		}
	})
	return p
}

// hangUp closes the peer's connections.
func (p *mutePeer) hangUp() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// newSessions returns n sessions of q, and a function that closes them
// all (to defer: they close before what the test deferred earlier).
func newSessions(q *Request, n int) (sessions []*Session, closeAll func()) {
	for range n {
		sessions = append(sessions, q.NewSession())
	}
	return sessions, func() {
		for _, s := range sessions {
			s.Close()
		}
	}
}

// startSlots starts a request on each of the sessions, concurrently,
// under ctx; each record comes on the channel returned once its Do
// returned.
func startSlots(ctx context.Context, sessions []*Session) <-chan *result.Request {
	done := make(chan *result.Request, len(sessions))
	for i, s := range sessions {
		go func() {
			rec := &result.Request{Batch: "gw", Index: i}
			s.Do(ctx, rec)
			done <- rec
		}()
	}
	return done
}

// awaitRecord returns the next record of done, failing the test when
// none comes within testutil.AwaitBound.
func awaitRecord(t *testing.T, done <-chan *result.Request, what string) *result.Request {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(testutil.AwaitBound):
		t.Fatalf("%s: no request ended within %v", what, testutil.AwaitBound)
		return nil
	}
}

// stallPeer is a peer that reads the client's preface, sends first (no
// SETTINGS, or only a part of them, or no HTTP/2 at all), then reads and
// says nothing more until hangUp.
func newStallPeer(t *testing.T, first []byte) *mutePeer {
	t.Helper()
	p := &mutePeer{}
	p.addr = testutil.ServeTCP(t, func(c net.Conn) {
		p.mu.Lock()
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(c, preface); err != nil {
			return
		}
		if _, err := c.Write(first); err != nil {
			return
		}
		io.Copy(io.Discard, c)
	})
	return p
}

// TestStreamsPerConnNoSettings: a peer that accepts the connection of a
// group of three slots and never sends its whole SETTINGS: it sends
// nothing, or a part of the SETTINGS frame and stalls, or bytes that are
// not HTTP/2. The two slots joining it fail, named, within the bound on
// the peer's SETTINGS (a test's bound, not h2SettingsWait), well within
// their own timeout, never hanging, on every engine; so does the next
// request that tries to join it. A silent peer's opener goes on within
// its own timeout until the peer hangs up, then fails, named otherwise; a
// peer that is not HTTP/2 fails the opener at once.
func TestStreamsPerConnNoSettings(t *testing.T) {
	silent := "recv error: http2: no SETTINGS from the server within 20ms"
	// x/net's words for a peer that is not HTTP/2: its reader's, or, for
	// a request that comes after the reader has failed, its RoundTrip's.
	tooLarge := "recv error: send: http2: failed reading the frame payload: http2: frame too large, " +
		"note that the frame header looked like an HTTP/1.1 header"
	notEstablished := "recv error: send: http2: client conn could not be established"
	settings := frame(http2.FrameSettings, 0, 0, "\x00\x03\x00\x00\x00\x64")
	for _, tt := range []struct {
		name  string
		first []byte   // what the peer sends after the client's preface
		want  []string // the joiners' failure, one of these
		// fails: the opener fails at once, with a failure of want,
		// rather than going on until the peer hangs up; the bound on
		// the SETTINGS is then far beyond the test's, so that the
		// failure is the bytes', however late the loaded machine reads
		// them.
		fails bool
	}{
		{"nothing", nil, []string{silent}, false},
		{"part of a SETTINGS frame", settings[:len(settings)-2], []string{silent}, false},
		{"not HTTP/2", []byte("HTTP/1.1 400 Bad Request\r\n"), []string{tooLarge, notEstablished}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newStallPeer(t, tt.first)
			hooks := &h2Hooks{settingsWait: 20 * time.Millisecond}
			if tt.fails {
				hooks.settingsWait = 10 * testutil.AwaitBound
			}
			q := New(Options{Addr: p.addr, H2C: true, KeepAlive: true, StreamsPerConn: 3, ExpectTokens: 3, Tokens: -1,
				Timeout: 10 * testutil.AwaitBound, hooks: hooks})
			sessions, closeAll := newSessions(q, 3)
			defer closeAll()
			done := startSlots(context.Background(), sessions)
			slots := 2 // the joiners
			if tt.fails {
				slots = 3 // and the opener, as soon
			}
			var joiner *Session
			for range slots {
				r := awaitRecord(t, done, "the joiners")
				if got := r.Failure.Error(); !slices.Contains(tt.want, got) {
					t.Errorf("slot %d: %q, want one of %q", r.Index, got, tt.want)
				}
				joiner = sessions[r.Index]
			}
			again := &result.Request{Batch: "gw", Index: 3}
			joiner.Do(context.Background(), again)
			if got := again.Failure.Error(); !slices.Contains(tt.want, got) {
				t.Errorf("a slot's next request, the connection without SETTINGS: %q, want one of %q", got, tt.want)
			}
			if tt.fails {
				return
			}
			select {
			case r := <-done:
				t.Fatalf("the opener's request ended before the peer hung up: %q", r.Failure.Error())
			default:
			}
			p.hangUp()
			if r := awaitRecord(t, done, "the opener"); r.OK() || slices.Contains(tt.want, r.Failure.Error()) {
				t.Errorf("the opener, the peer hung up: %q, want a failure other than %q", r.Failure.Error(), tt.want)
			}
		})
	}
}

// TestStreamsPerConnJoinersOneWrite: on the event loops, the two slots
// waiting for the SETTINGS of their group's new connection write their
// streams' frames in one system call once the SETTINGS came (with the
// acknowledgement of the SETTINGS), not one each (the peer answers the
// three streams once it has them all, so that no response brings a write
// of its own meanwhile); every request is ok.
func TestStreamsPerConnJoinersOneWrite(t *testing.T) {
	chat := dialectStreams[0]
	whole := []byte(chat.events(false, chat.tokens(3, true)...))
	release := make(chan struct{})
	p := newMutePeer(t, release, 3, whole)
	hooks := &h2Hooks{}
	q := New(Options{Addr: p.addr, H2C: true, KeepAlive: true, StreamsPerConn: 3, ExpectTokens: 3, Tokens: -1,
		Timeout: testutil.AwaitBound, hooks: hooks})
	if !q.onLoop() {
		t.Skip("the writes are the event loops'; the goroutine engine's are x/net's")
	}
	sessions, closeAll := newSessions(q, 3)
	defer closeAll()
	done := startSlots(context.Background(), sessions)
	testutil.Await(t, "the opener's request at the peer, two joiners waiting, the opener's write counted", func() bool {
		return p.ended.Load() == 1 && hooks.waits.Load() == 2 && hooks.writes.Load() >= 1
	})
	before := hooks.writes.Load()
	close(release)
	for range 3 {
		if r := awaitRecord(t, done, "the slots"); !r.OK() {
			t.Errorf("slot %d: %q", r.Index, r.Failure.Error())
		}
	}
	if n := hooks.writes.Load() - before; n != 1 {
		t.Errorf("the joiners' streams went out in %d writes, want 1", n)
	}
}

// TestStreamsPerConnCancelWhileJoining: the run is cancelled (Ctrl-C)
// while two slots wait for the SETTINGS of their group's new connection,
// on every engine: every request ends, interrupted, and once the
// sessions are closed no goroutine of the group's is left.
func TestStreamsPerConnCancelWhileJoining(t *testing.T) {
	p := newMutePeer(t, nil, 0, nil)
	hooks := &h2Hooks{settingsWait: 10 * testutil.AwaitBound}
	q := New(Options{Addr: p.addr, H2C: true, KeepAlive: true, StreamsPerConn: 3, ExpectTokens: 3, Tokens: -1,
		Timeout: 10 * testutil.AwaitBound, hooks: hooks})
	sessions := []*Session{q.NewSession(), q.NewSession(), q.NewSession()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := startSlots(ctx, sessions)
	testutil.Await(t, "the opener's request at the peer, two joiners waiting", func() bool {
		return p.ended.Load() == 1 && hooks.waits.Load() == 2
	})
	cancel()
	for range 3 {
		if r := awaitRecord(t, done, "the cancelled slots"); r.Failure.Kind != result.Interrupted {
			t.Errorf("slot %d, cancelled: %q, want %q", r.Index, r.Failure.Error(), result.Failure{Kind: result.Interrupted}.Error())
		}
	}
	for _, s := range sessions {
		s.Close()
	}
	testutil.AwaitNoGoroutine(t, "client.(*h2Group).opened")
}

// TestStreamsPerConnOpenerRefused: the session that opens a group's
// connection may find its own stream refused before its response — the
// peer's GOAWAY (here right after its SETTINGS, last stream 0: a reload,
// or a request cap reached by the streams of the sessions that joined
// it, which went first) reaching the client before or after the stream
// was written. The stream was not served: it is sent again, once, on a
// new connection, as a joiner's is — a reuse failure, not the request's.
func TestStreamsPerConnOpenerRefused(t *testing.T) {
	chat := dialectStreams[0]
	whole := []byte(chat.events(false, chat.tokens(3, true)...))
	var opened atomic.Int32
	addr := h2Peer(t, func(f *h2Writer, conn int, frame http2.Frame) {
		switch fr := frame.(type) {
		case *http2.SettingsFrame:
			if conn == 1 && !fr.IsAck() {
				opened.Add(1)
				f.do(func(fr *http2.Framer) error { return fr.WriteGoAway(0, http2.ErrCodeNo, nil) })
			}
		case *http2.DataFrame:
			if conn > 1 && fr.StreamEnded() {
				h2Respond(f, fr.StreamID, whole, true)
			}
		}
	})
	q := New(Options{Addr: addr, H2C: true, KeepAlive: true, StreamsPerConn: 2, ExpectTokens: 3, Tokens: -1, Timeout: testutil.AwaitBound})
	recs := runSlots(t, q, 1, 1)
	r := recs[0][0]
	if !r.OK() || r.VisibleCount() != 3 {
		t.Errorf("the opener's request: %q with %d tokens; want ok with 3, sent again", r.Failure.Error(), r.VisibleCount())
	}
	if !r.ReuseFailed || r.ConnID != 2 {
		t.Errorf("the opener's request: reuse failure %v on connection %d; want a reuse failure, then connection 2", r.ReuseFailed, r.ConnID)
	}
	if n := opened.Load(); n != 1 {
		t.Errorf("the peer's first connection saw %d client SETTINGS, want 1", n)
	}
}
