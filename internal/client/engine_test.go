package client

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/evloop"
	"github.com/sse-latency/sse-latency/internal/result"
)

// TestMain runs the package's tests once per engine: every Request whose
// Options name no engine takes the pass's (testEngine), so that the whole
// suite — dialects, correlation by content, keep-alive and reuse failures,
// gzip, the hostile gateways, timeouts, interruption — runs on each. The
// pass's engine is printed before its tests.
//
// Under -test.fuzz (the coordinator) and -test.fuzzworker (the processes it
// starts) it runs once: m.Run is the fuzzing engine there, and starting it
// again in the same process makes the coordinator race its own deadline.
// The package's fuzz targets feed bytes to the reader and the matchers,
// which do not depend on the engine.
func TestMain(m *testing.M) {
	if fuzzing() {
		os.Exit(m.Run())
	}
	code := 0
	if err := evloop.UringAvailable(); err != nil && evloop.UringExpected() && os.Getenv("CI") == "true" {
		fmt.Fprintf(os.Stderr, "--- FAIL: io_uring refused on a kernel that should allow it: %v\n", err)
		code = 1
	}
	for _, e := range engines() {
		testEngine = e
		fmt.Fprintf(os.Stderr, "=== client tests on the %s engine\n", e)
		if c := m.Run(); c != 0 {
			fmt.Fprintf(os.Stderr, "--- FAIL: the client tests on the %s engine\n", e)
			code = c
		}
	}
	testEngine = ""
	os.Exit(code)
}

// fuzzing reports whether this test binary was started to fuzz: as the
// coordinator (-test.fuzz set) or as one of its workers (-test.fuzzworker).
func fuzzing() bool {
	if !flag.Parsed() {
		flag.Parse()
	}
	for _, name := range []string{"test.fuzz", "test.fuzzworker"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" && f.Value.String() != "false" {
			return true
		}
	}
	return false
}

// engines are the engines the client tests run on: the event loops where
// the platform has them — on epoll, and on io_uring where the kernel
// allows it —, and the goroutine engine always. A kernel that should
// allow io_uring and refuses it fails the run under CI (TestMain).
func engines() []Engine {
	var es []Engine
	if ok, _ := EngineEpoll.Loops(); ok {
		es = append(es, EngineEpoll)
	}
	if err := evloop.UringAvailable(); err == nil {
		es = append(es, EngineUring)
	} else {
		fmt.Fprintf(os.Stderr, "=== the client tests skip the uring engine: %v\n", err)
	}
	return append(es, EngineGoroutine)
}

func TestResolveEngine(t *testing.T) {
	epoll, _ := EngineEpoll.Loops()
	loopOr := func(e Engine) Engine {
		if epoll {
			return e
		}
		return EngineGoroutine
	}
	uring, uringNote := EngineUring.Resolve() // Uring, or where the kernel refuses it Epoll with a note
	tests := []struct {
		name string
		o    Options
		want Engine
		note bool
	}{
		{"auto, plain http", Options{Engine: EngineAuto}, loopOr(EngineEpoll), false},
		{"uring, plain http", Options{Engine: EngineUring}, uring, uringNote != ""},
		{"uring, https", Options{Scheme: "https", Engine: EngineUring}, uring, uringNote != ""},
		{"epoll, plain http", Options{Engine: EngineEpoll}, loopOr(EngineEpoll), !epoll},
		{"goroutine", Options{Engine: EngineGoroutine}, EngineGoroutine, false},
		{"auto, https", Options{Scheme: "https", Engine: EngineAuto}, loopOr(EngineEpoll), false},
		{"epoll, https", Options{Scheme: "https", Engine: EngineEpoll}, loopOr(EngineEpoll), !epoll},
		{"epoll, https, HTTP/2", Options{Scheme: "https", HTTP2: true, Engine: EngineEpoll}, loopOr(EngineEpoll), !epoll},
		{"uring, https, HTTP/2", Options{Scheme: "https", HTTP2: true, Engine: EngineUring}, uring, uringNote != ""},
		{"auto, https, HTTP/2", Options{Scheme: "https", HTTP2: true, Engine: EngineAuto}, loopOr(EngineEpoll), false},
		{"epoll, wss", Options{Scheme: "https", WebSocket: true, Engine: EngineEpoll}, EngineGoroutine, true},
		{"epoll, h2c", Options{H2C: true, Engine: EngineEpoll}, loopOr(EngineEpoll), !epoll},
		{"uring, h2c", Options{H2C: true, Engine: EngineUring}, uring, uringNote != ""},
		{"auto, h2c", Options{H2C: true, Engine: EngineAuto}, loopOr(EngineEpoll), false},
		{"goroutine, h2c", Options{H2C: true, Engine: EngineGoroutine}, EngineGoroutine, false},
		{"uring, h3", Options{Scheme: "https", HTTP3: true, Engine: EngineUring}, EngineGoroutine, true},
		{"auto, h3", Options{Scheme: "https", HTTP3: true, Engine: EngineAuto}, EngineGoroutine, false},
	}
	for _, tt := range tests {
		got, note := tt.o.ResolveEngine()
		if tt.o.HTTP3 && tt.note && !strings.Contains(note, "HTTP/3 (QUIC) uses the goroutine engine") {
			t.Errorf("%s: note %q, want it to name HTTP/3", tt.name, note)
		}
		if got != tt.want || (note != "") != tt.note {
			t.Errorf("%s: ResolveEngine() = %q, note %q; want %q, a note: %v", tt.name, got, note, tt.want, tt.note)
		}
	}
}

// comparable is what two engines must record alike for the same
// response: everything but the times and the read boundaries (which the
// kernel decides).
type comparable struct {
	failure                           string
	tokens                            int
	emitted                           string
	bytes                             int64
	events, byPiTs, byContent         int
	proto                             string
	reused, reuseFailed, poisoned, ok bool
}

func comparableOf(rec *result.Request) comparable {
	var emitted []int64
	for i, tok := range rec.Tokens {
		if int(rec.TokenIndex(i)) != i {
			emitted = append(emitted, -1)
		}
		emitted = append(emitted, tok.Emitted)
	}
	return comparable{rec.Failure.Error(), len(rec.Tokens), fmt.Sprint(emitted), rec.Bytes, rec.Events, rec.ByPiTs,
		rec.ByContent, rec.Proto, rec.Reused, rec.ReuseFailed, rec.Poisoned, rec.OK()}
}

// TestEnginesRecordTheSame sends the same responses — every dialect,
// merged and split deltas, gzip, failures of several kinds — through each
// engine and compares the records.
func TestEnginesRecordTheSame(t *testing.T) {
	if len(engines()) < 2 {
		t.Skip("one engine on this platform")
	}
	type scenario struct {
		name   string
		o      Options
		pieces []string
	}
	var scenarios []scenario
	for _, s := range dialectStreams {
		stamped := s.events(true, s.tokens(5, true)...)
		merged := s.events(false, s.tok(0, text(0, 3)), s.tok(7, text(3, 5)))
		scenarios = append(scenarios,
			// The last chunk comes with the events: sent apart, it was
			// read with them or not depending on the machine's load (the
			// terminal event ends the response), and so were its bytes.
			scenario{s.d.String() + "/chunked", Options{Dialect: s.d, ExpectTokens: 5, IncludeUsage: true},
				[]string{sseHead + "Transfer-Encoding: chunked\r\n\r\n", chunk(stamped) + "0\r\n\r\n"}},
			scenario{s.d.String() + "/merged, until close", Options{Dialect: s.d, ExpectTokens: 5},
				[]string{sseHead + "\r\n" + merged}},
			scenario{s.d.String() + "/gzip", Options{Dialect: s.d, ExpectTokens: 5, IncludeUsage: true},
				append([]string{sseHead + "Content-Encoding: gzip\r\n\r\n"}, gzipStream(t, stamped)...)},
			scenario{s.d.String() + "/cut short", Options{Dialect: s.d, ExpectTokens: 5},
				[]string{sseHead + "\r\n" + s.events(false, s.tokens(2, true)...)[:40]}},
		)
	}
	scenarios = append(scenarios,
		scenario{"missing token", Options{ExpectTokens: 3}, []string{sseHead + "\r\n" + chatRole + event(1, "anan") + event(2, "obob") + chatFinish + done}},
		scenario{"502 with a JSON body", Options{ExpectTokens: 3},
			[]string{"HTTP/1.1 502 Bad Gateway\r\nContent-Type: application/json\r\nContent-Length: 25\r\n\r\n", `{"error":"upstream down"}`}},
		scenario{"not HTTP", Options{}, []string{"SSH-2.0-OpenSSH\r\n"}},
		scenario{"bad chunk", Options{}, []string{sseHead + "Transfer-Encoding: chunked\r\n\r\nzz\r\n"}},
		scenario{"redirect", Options{}, []string{"HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n"}},
	)
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			addr := scripted(t, sc.pieces...)
			var first comparable
			for i, e := range engines() {
				o := sc.o
				o.Addr, o.Tokens, o.Timeout, o.Engine = addr, -1, 10*time.Second, e
				got := comparableOf(doWith(t, o))
				if i == 0 {
					first = got
					continue
				}
				if got != first {
					t.Errorf("%s recorded %+v\n%s recorded %+v", engines()[0], first, e, got)
				}
			}
		})
	}
}

// BenchmarkEngineToken measures one token through each engine, end to end
// on loopback: a write of one chunked token event on the server's side of
// the connection, the engine's wake-up, its read, the parse, and the
// token's record. It must not allocate per token; over h2c (the
// h2c/<engine> cases: one DATA frame per token) neither must the loops,
// while x/net/http2's transport on the goroutine engine takes one
// allocation per DATA frame.
func BenchmarkEngineToken(b *testing.B) {
	for _, e := range engines() {
		b.Run(string(e), func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			var received atomic.Int64
			o := Options{Dialect: api.Chat, Addr: ln.Addr().String(), Tokens: -1, Timeout: time.Hour, Received: &received, Engine: e}
			// Room for every token of a second's run: no append may grow it.
			rec := &result.Request{Tokens: make([]result.Token, 0, 1<<20)}
			ended := make(chan struct{})
			s := New(o).NewSession()
			s.Start(context.Background(), rec, func(*result.Request) { close(ended) })
			c, err := ln.Accept()
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			go io.Copy(io.Discard, c)
			if _, err := io.WriteString(c, sseHead+"Transfer-Encoding: chunked\r\n\r\n"); err != nil {
				b.Fatal(err)
			}
			var events [periodTokens][]byte
			for i := range events {
				events[i] = []byte(chunk(event(int64(i+1), api.Token(i))))
			}
			b.ReportAllocs()
			n := int64(0)
			for b.Loop() {
				if _, err := c.Write(events[n%periodTokens]); err != nil {
					b.Fatal(err)
				}
				n++
				for received.Load() < n {
					runtime.Gosched()
				}
			}
			b.StopTimer()
			io.WriteString(c, chunk(chatFinish+done)+"0\r\n\r\n")
			<-ended
			if !rec.OK() || int64(len(rec.Tokens)) != n {
				b.Fatalf("%q, %d tokens, want ok with %d", rec.Failure.Error(), len(rec.Tokens), n)
			}
		})
	}
	for _, e := range engines() {
		b.Run("h2c/"+string(e), func(b *testing.B) { benchmarkH2CToken(b, e) })
	}
}

// benchmarkH2CToken is BenchmarkEngineToken over h2c: a DATA frame of one
// token event per write, on stream 1 of a scripted HTTP/2 peer.
func benchmarkH2CToken(b *testing.B, e Engine) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	var received atomic.Int64
	o := Options{Dialect: api.Chat, Addr: ln.Addr().String(), Tokens: -1, Timeout: time.Hour, Received: &received, Engine: e, H2C: true}
	rec := &result.Request{Tokens: make([]result.Token, 0, 1<<20)}
	ended := make(chan struct{})
	s := New(o).NewSession()
	defer s.Close()
	s.Start(context.Background(), rec, func(*result.Request) { close(ended) })
	c, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	got := make(chan *h2Writer, 1)
	go h2Serve(c, func(f *h2Writer) { got <- f })
	f := <-got
	f.headers(false, ":status", "200", "content-type", "text/event-stream")
	// The DATA frames, framed once: the peer's side allocates nothing in
	// the loop either.
	var frames [periodTokens][]byte
	for i := range frames {
		var w bytes.Buffer
		http2.NewFramer(&w, nil).WriteData(1, false, []byte(event(int64(i+1), api.Token(i))))
		frames[i] = w.Bytes()
	}
	b.ReportAllocs()
	n := int64(0)
	for b.Loop() {
		f.mu.Lock()
		_, err := c.Write(frames[n%periodTokens])
		f.mu.Unlock()
		if err != nil {
			b.Fatal(err)
		}
		n++
		for received.Load() < n {
			runtime.Gosched()
		}
	}
	b.StopTimer()
	f.do(func(fr *http2.Framer) error { return fr.WriteData(1, true, []byte(chatFinish+done)) })
	<-ended
	if !rec.OK() || int64(len(rec.Tokens)) != n {
		b.Fatalf("%q, %d tokens, want ok with %d", rec.Failure.Error(), len(rec.Tokens), n)
	}
}
