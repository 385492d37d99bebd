// Package server is the dummy model backend: it speaks the dialects of package
// api (OpenAI Chat Completions, legacy Completions and Responses, Anthropic
// Messages), on any path ending in their endpoint, and streams deterministic
// tokens on a precise, absolute schedule, stamping every token event with
// pi_ts, the process-clock time taken immediately before the bytes are
// handed to the socket (and recording it in Config.Emissions under the
// request's id).
//
// On the Responses path it also speaks the Responses API's WebSocket mode
// (ws.go): a GET that upgrades, then a response per response.create
// message, each event a text message, on the same schedule and shards.
//
// It speaks HTTP/1.1 with persistent connections (and the reference's one
// request per connection when the request or Config.ServerClose asks), over
// TLS when Config.TLS is set, and HTTP/2 when Config.HTTP2 is set: over TLS
// with ALPN "h2", and in clear text (h2c) with prior knowledge.
//
// Each HTTP/1.x connection has a goroutine that reads a request and writes
// the response head; the token emissions themselves are driven by a few
// emission shards (one per GOMAXPROCS), each a min-heap of stream deadlines
// woken by a timerfd on Linux (so wake-ups are accurate to microseconds
// rather than the millisecond of Go's timers): on the epoll engine the
// timerfd is in an event loop of package evloop, which runs the shard's
// ticks between the reads of the client's sockets; on the goroutine engine
// (and elsewhere, with a timer) each shard has a goroutine. A shard writes
// each token with a non-blocking write; a connection whose socket buffer is
// full is handed back to its own goroutine to drain, so one slow reader
// never stalls the other streams. HTTP/1.1 over TLS 1.3 is written the
// same way: after the crypto/tls handshake the record layer of package
// tlsrecord carries the connection on its TCP socket (tlsconn.go), the
// shard sealing each token's record right after its pi_ts. HTTP/2, h2c
// and h2 over TLS 1.3, is the server's own (h2conn.go, x/net/http2's
// framer and hpack as codecs): one goroutine reads a connection's frames,
// and the shard writes each token's DATA frame with the same non-blocking
// write, under the connection's write lock, within the send windows. A
// connection crypto/tls keeps (TLS 1.2, for HTTP/1.1 or HTTP/2) and an
// HTTP/3 stream get each token handed to a goroutine when it is due, which
// stamps and writes it. When a stream ends on a persistent connection, its
// last goroutine goes on reading the next request.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go/http3"
	"golang.org/x/net/http2"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/evloop"
	"github.com/sse-latency/sse-latency/internal/schedule"
	"github.com/sse-latency/sse-latency/internal/stats"
)

// Config is the server's behaviour. Requests may override Tokens, ThinkMs,
// DelayMs, Reasoning, ToolCall and HeartbeatMs individually with hints
// (api.Hints: the pi_tokens, pi_think_ms, pi_delay_ms,
// pi_reasoning_tokens, pi_tool_call_tokens and pi_heartbeat_ms JSON
// fields, else the api.HintHeader header, else the prompt marker).
type Config struct {
	Tokens  int     // text tokens per response
	ThinkMs float64 // think time: before the first token after the reasoning (see schedule.Plan), ms
	DelayMs float64 // delay between tokens, ms

	// Reasoning reasoning tokens stream during the think time, spread over
	// ThinkMs (at DelayMs when ThinkMs is 0); then one tool call of
	// ToolCall argument tokens, at DelayMs, before the text. Completions
	// answers leave both out (a request that asks for them there gets a
	// 400). ReasoningField is how Chat and Responses carry the reasoning.
	Reasoning      int
	ToolCall       int
	ReasoningField api.ReasoningField

	// HeartbeatMs, when > 0, makes every stream write a heartbeat (an SSE
	// comment ": ping", or Anthropic's ping event) after each HeartbeatMs
	// of silence, as real providers do while a model thinks; a request
	// may ask for its own interval with the pi_heartbeat_ms hint (0: none;
	// at least api.MinHeartbeatMs, at most MaxDelay). HeartbeatMs itself
	// is not checked.
	HeartbeatMs float64

	// Emissions, when set, receives the emission time (the pi_ts) of every
	// token of every stream whose request carries an id hint, keyed by that
	// id, with when the request had been read whole, when the stream's
	// client went away and the number of heartbeats written on it. nil
	// records nothing.
	Emissions *emission.Registry

	// Instance, when set, is this server's instance id (api.ValidID): every
	// event that carries pi_ts names it (api.InstanceKey), and so does
	// every stream's response head (api.InstanceHeader), so that a client
	// measuring several replicas behind one gateway knows which one
	// emitted each token. "" sends neither: the reference's bytes.
	Instance string

	// Logf, when set, receives debug lines (the -v flag).
	Logf func(format string, args ...any)

	// Shards is the number of emission shards; 0 means GOMAXPROCS.
	Shards int
	// WakeInterval is the shortest time between two wake-ups of one shard:
	// under load, tokens due within this window are written in one pass
	// (0 means DefaultWakeInterval). A quiet stream is never delayed by it.
	WakeInterval time.Duration
	// SpinAhead bounds how long before a deadline a quiet shard's timer
	// fires, the rest being spun: within the bound the shard learns how
	// late this host wakes it and fires that much early (0 means
	// DefaultSpinAhead, negative disables spinning). It trades a little
	// CPU for emission accuracy on machines whose idle CPUs wake slowly;
	// a busy shard writes on a grid instead, without spinning (see
	// shard.wakeFor).
	SpinAhead time.Duration
	// WriteTimeout bounds how long a stream may wait for its client to
	// accept bytes before it is dropped (0 means DefaultWriteTimeout).
	WriteTimeout time.Duration
	// ReadTimeout bounds how long a client may take to send a whole
	// request, head and body, from its first byte (from the accept, or the
	// end of the TLS handshake, for a connection's first request); 0 means
	// DefaultReadTimeout. A body that does not arrive in time gets a 408.
	ReadTimeout time.Duration
	// ReadHeaderTimeout bounds, in the same way, how long a client may take
	// to send a request head, against clients that send it a byte at a time
	// (slowloris); it also bounds the TLS handshake and the HTTP/2 preface.
	// A head begun and not finished in time gets a 408; a connection on
	// which nothing arrived is closed without an answer. 0 means
	// DefaultReadHeaderTimeout; it is never more than ReadTimeout.
	ReadHeaderTimeout time.Duration
	// IdleTimeout bounds how long a persistent connection waits for its
	// next request, and an HTTP/2 connection without streams stays open
	// (0 means DefaultIdleTimeout).
	IdleTimeout time.Duration
	// h2DrainWait is h2DrainWait, unless a test raised it.
	h2DrainWait time.Duration
	// wrapSends, set by tests, wraps an io_uring loop's batch of sends
	// before the shard on it uses it.
	wrapSends func(sendBatch) sendBatch

	// MaxTokens caps each token count a request may ask for with a hint
	// (text, reasoning, tool call); past it the request gets a 400 naming
	// the hint and the cap. 0 means DefaultMaxTokens; it is never more than
	// 2³¹−1. It bounds what one request makes the server send and, with an
	// id hint, the emission times it allocates (8 bytes per token, all
	// phases: at most 3·MaxTokens). Tokens, Reasoning and ToolCall
	// themselves are not checked: the caller validates its own defaults.
	MaxTokens int
	// MaxDelay caps the think time and the delay between tokens a request
	// may ask for with a hint (each separately); past it, a 400. 0 means
	// DefaultMaxDelay. ThinkMs and DelayMs are not checked.
	MaxDelay time.Duration
	// MaxStreams caps the answers in progress at once over all
	// connections and protocols: streams, and non-streaming answers while
	// they wait for their last token's time. A request past it gets a 429
	// with "Retry-After: 1". 0 means DefaultMaxStreams; negative means no
	// limit.
	MaxStreams int

	// ServerClose closes every HTTP/1.x connection after its response, as
	// the reference does, even when the request asked to keep it open
	// (--server-close). Without it a connection stays open unless its
	// request says "Connection: close" or is HTTP/1.0 without keep-alive.
	ServerClose bool
	// TLS, when set, makes the server speak TLS with this configuration
	// (see SelfSignedTLS and LoadTLS). The server uses a copy whose
	// NextProtos advertise "h2" (with HTTP2) and "http/1.1".
	TLS *tls.Config
	// HTTP2 accepts HTTP/2: over TLS when the client negotiates "h2", on a
	// plain listener when a connection starts with the HTTP/2 client
	// preface (h2c with prior knowledge). Without it the server speaks
	// HTTP/1.x only.
	HTTP2 bool

	// Faults are the upstream faults of every answer (api.Faults): a
	// request's own fault hints override them one by one. Unlike the
	// hints, they are not checked against the caps (the caller validates
	// its own defaults).
	Faults api.Faults

	// CacheBlockTokens, when > 0, simulates a prefix cache over the
	// prompts in blocks of that many tokens (see prefixCache): the usage
	// objects report, for each request, the prompt tokens read from it
	// (the blocks whose whole prefix an earlier request sent) and written
	// to it. 0: no cache, the usage's cache fields are null — the server
	// has no figure. A request's pi_cached_tokens hint overrides both.
	CacheBlockTokens int

	// Engine is how the emission shards wait for their deadlines (see
	// evloop.Engine): on the event loops, which the client's requests
	// share ("", evloop.Auto or evloop.Epoll, on Linux), or each on a
	// goroutine of its own (evloop.Goroutine, and elsewhere). The tokens,
	// their stamps and the wire bytes are the same.
	Engine evloop.Engine
	// Loops, when set, is the set of event loops the shards run on,
	// whatever Engine says: a test's own set (evloop.NewSet), to stop
	// once Serve has returned. nil: the process's loops of Engine.
	Loops *evloop.Set

	// Clock is the clock of the pi_ts stamps, the emission deadlines and
	// the emission records; nil means clock.Real. A clock.Fake needs
	// the goroutine engine: the event loops' timers run on the real clock.
	Clock clock.Clock
}

// Defaults for the zero values of Config.
const (
	DefaultWakeInterval = 100 * time.Microsecond
	DefaultSpinAhead    = 250 * time.Microsecond
	DefaultWriteTimeout = 60 * time.Second
	DefaultReadTimeout  = 60 * time.Second
	DefaultIdleTimeout  = 60 * time.Second

	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultMaxTokens         = 1_000_000
	DefaultMaxDelay          = 10 * time.Minute
	// DefaultMaxStreams is well above the concurrency a measurement uses
	// (docs/PERF.md goes to 4,000 streams) and below the descriptor limit
	// Go raises itself to on most Linux systems.
	DefaultMaxStreams = 10_000
)

// retryAfter is the Retry-After value of a 429, in seconds.
const retryAfter = "1"

// Server is a running dummy backend. Create it with Listen, run it with
// Serve.
type Server struct {
	cfg    Config
	clk    clock.Clock // cfg.Clock, or clock.Real
	ln     net.Listener
	shards []*shard
	affine bool // shard i runs on event loop i mod the loops: see shardFor
	start  time.Time

	streamNo     atomic.Uint64
	connections  atomic.Int64      // accepted so far
	requests     atomic.Int64      // read so far
	active       atomic.Int64      // answers in progress (Config.MaxStreams)
	panics       atomic.Int64      // panics recovered in connection goroutines
	handoffs     atomic.Int64      // tokens a shard handed to a goroutine to write (TokenHandoffs)
	tlsFallbacks atomic.Int64      // TLS HTTP/1.1 connections left to crypto/tls (TLSFallbacks)
	flushes      atomic.Int64      // streams handed to a goroutine to drain a full socket (evFlush)
	limits       api.Limits        // the hint caps of Config
	instance     api.InstanceField // Config.Instance, encoded once for every event
	cache        *prefixCache      // the simulated prefix cache; nil without Config.CacheBlockTokens
	// heads are the response heads of a stream on HTTP/1.x: closing its
	// connection and keeping it (streamHead, streamHeadKeepAlive, with
	// Config.Instance's field).
	head, headKeepAlive string
	quit                chan struct{} // closed when Serve stops
	h2                  bool          // Config.HTTP2: the connections found to speak HTTP/2 are served (h2conn)
	h3                  *http3.Server // serves HTTP/3 on h3pc; nil without UseHTTP3
	h3pc                net.PacketConn
	h3conns             atomic.Int64 // QUIC connections accepted (H3Connections)

	mu sync.Mutex
	// conns maps each open connection to the socket Serve closes when it
	// stops: the connection itself, or under TLS the TCP connection (a TLS
	// close may wait for the peer).
	conns   map[net.Conn]net.Conn
	h2conns map[*h2conn]bool // the HTTP/2 connections being served: a GOAWAY each when Serve stops
	closing bool             // Serve is stopping: no goroutine may join wg any more
	// wg counts the shard loops, the open connections (each Done once, by
	// release), the running HTTP/3 handlers and the HTTP/2 streams being
	// answered (h2conn.answer to h2Response.end).
	wg sync.WaitGroup
}

// Listen binds addr (host:port, host may be empty for all interfaces) and
// returns a server ready to Serve.
func Listen(addr string, cfg Config) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return New(ln, cfg), nil
}

// New returns a server that will accept connections on ln.
func New(ln net.Listener, cfg Config) *Server {
	if cfg.Shards <= 0 {
		cfg.Shards = runtime.GOMAXPROCS(0)
	}
	if cfg.WakeInterval <= 0 {
		cfg.WakeInterval = DefaultWakeInterval
	}
	if cfg.SpinAhead == 0 {
		cfg.SpinAhead = DefaultSpinAhead
	}
	if cfg.SpinAhead < 0 {
		cfg.SpinAhead = 0
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.h2DrainWait <= 0 {
		cfg.h2DrainWait = h2DrainWait
	}
	if cfg.ReadHeaderTimeout <= 0 {
		cfg.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	cfg.ReadHeaderTimeout = min(cfg.ReadHeaderTimeout, cfg.ReadTimeout)
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	cfg.MaxTokens = min(cfg.MaxTokens, math.MaxInt32)
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = DefaultMaxDelay
	}
	if cfg.MaxStreams == 0 {
		cfg.MaxStreams = DefaultMaxStreams
	}
	if cfg.TLS != nil {
		protos := []string{"http/1.1"}
		if cfg.HTTP2 {
			protos = []string{http2.NextProtoTLS, "http/1.1"}
		}
		cfg.TLS = serverTLS(cfg.TLS, protos) // handshakes in serveConn (handshakeTLS)
	}
	s := &Server{cfg: cfg, clk: clock.Or(cfg.Clock), ln: ln, start: time.Now(), conns: make(map[net.Conn]net.Conn), h2conns: make(map[*h2conn]bool), quit: make(chan struct{}),
		limits:   api.Limits{MaxTokens: int64(cfg.MaxTokens), MaxDelay: cfg.MaxDelay},
		instance: api.NewInstanceField(cfg.Instance), head: streamHead, headKeepAlive: streamHeadKeepAlive,
		cache: newPrefixCache(cfg.CacheBlockTokens, 0)}
	if cfg.Instance != "" {
		s.head, s.headKeepAlive = withInstanceHeader(streamHead, cfg.Instance), withInstanceHeader(streamHeadKeepAlive, cfg.Instance)
	}
	s.h2 = cfg.HTTP2
	for i := 0; i < cfg.Shards; i++ {
		sh := newShard(nil, int64(cfg.WakeInterval), int64(cfg.SpinAhead))
		sh.clk = s.clk
		if !s.onLoop(sh, i) {
			w := s.clk.NewWaker()
			sh.waker, sh.own = w, w
		}
		s.shards = append(s.shards, sh)
	}
	return s
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve accepts connections until ctx is cancelled, then closes the listener
// and every open connection (HTTP/2 streams included) and returns once all
// goroutines have ended. It returns nil after a cancellation and the accept
// error otherwise.
func (s *Server) Serve(ctx context.Context) error {
	for _, sh := range s.shards {
		if sh.own != nil {
			s.wg.Add(1)
			go func() { defer s.wg.Done(); sh.run(sh.own) }()
		}
	}
	if s.h3 != nil {
		s.wg.Add(1)
		go s.serveH3()
	}
	stop := context.AfterFunc(ctx, func() { s.ln.Close() })
	defer stop()
	var err error
	for {
		var c net.Conn
		c, err = s.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			break
		}
		s.connections.Add(1)
		s.mu.Lock()
		s.conns[c] = c
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serveConn(c)
	}
	s.ln.Close()
	close(s.quit)
	if s.h3 != nil {
		s.stopH3()
	}
	s.mu.Lock()
	s.closing = true
	var goAways sync.WaitGroup
	for hc := range s.h2conns { // they unregister only with s.mu: wait here
		goAways.Go(func() { hc.goAwayClosing() })
	}
	goAways.Wait()
	draining := make(map[net.Conn]bool)
	for hc := range s.h2conns {
		if hc.draining.Load() {
			draining[hc.c] = true // its reader closes it, within h2DrainWait
		}
	}
	s.closeConns(func() {
		for c, sock := range s.conns {
			if !draining[c] {
				sock.Close()
			}
		}
	})
	s.mu.Unlock()
	for _, sh := range s.shards {
		sh.close()
	}
	s.wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// closeConns runs closeAll, which closes connections that the shards may
// be writing to, between the shards' batches of sends (shard.sendMu): a
// batched send must reach the socket it was queued for, not one that took
// its descriptor's number after a close.
func (s *Server) closeConns(closeAll func()) {
	for _, sh := range s.shards {
		sh.sendMu.Lock()
	}
	defer func() {
		for _, sh := range s.shards {
			sh.sendMu.Unlock()
		}
	}()
	closeAll()
}

// serveConn serves an accepted connection: it completes the TLS handshake,
// picks HTTP/2 (ALPN "h2", or the client preface on a plain connection) or
// HTTP/1.x, and serves it until it ends.
func (s *Server) serveConn(c net.Conn) {
	if s.cfg.TLS != nil {
		var h2 bool
		if c, h2 = s.handshakeTLS(c); c == nil {
			return
		}
		defer s.recoverPanic(c)
		if h2 {
			s.serveH2(c, c)
			return
		}
		s.serveH1(newH1conn(s, c)) // its start: the end of the handshake
		return
	}
	defer s.recoverPanic(c)
	hc := newH1conn(s, c)
	if s.h2 {
		isH2, err := hc.peekPreface()
		if err != nil {
			if !isClosed(err) {
				s.logf("server: %s: reading request: %v", describe(c), err)
			}
			s.release(c)
			return
		}
		if isH2 {
			s.serveH2(c, &replayConn{Conn: c, pending: hc.buf})
			return
		}
	}
	s.serveH1(hc)
}

// release closes a connection whose exchange is over and forgets it. It is
// called once per accepted connection, by the goroutine that owns it when
// it ends; later calls (from recoverPanic) do nothing but close it again.
func (s *Server) release(c net.Conn) {
	c.Close()
	s.mu.Lock()
	_, open := s.conns[c]
	delete(s.conns, c)
	s.mu.Unlock()
	if open {
		s.wg.Done()
	}
}

// recoverPanic is deferred first by each goroutine that serves a
// connection or one of its streams. It is defence in depth, not error
// handling: a panic is a bug, but a bug met by one connection must not end
// the process and every other measurement with it. It counts the panic
// (Panics; the tests require 0), logs it with its stack, and closes and
// releases the connection; the stream's place among Config.MaxStreams, if
// it had one, stays taken.
func (s *Server) recoverPanic(c net.Conn) {
	r := recover()
	if r == nil {
		return
	}
	s.panics.Add(1)
	s.logf("server: %s: panic: %v\n%s", describe(c), r, debug.Stack())
	s.release(c)
}

// Panics returns the number of panics recovered in the goroutines serving
// connections and HTTP/2 streams (see recoverPanic); anything but 0 is a
// bug.
func (s *Server) Panics() int64 { return s.panics.Load() }

// TokenHandoffs returns how many tokens (or heartbeats) a shard handed to
// a goroutine to write: every token of an HTTP/3 stream, and of an
// HTTP/1.x or HTTP/2 connection without a file descriptor the shard can
// write on (TLS left to crypto/tls: TLS 1.2, a suite the record layer does
// not have). Plain connections, h2c and TLS 1.3 on the record layer
// (recordConn) hand none.
func (s *Server) TokenHandoffs() int64 { return s.handoffs.Load() }

// TLSFallbacks returns how many TLS HTTP/1.1 connections were left to
// crypto/tls rather than carried on by the record layer (see
// tlsrecord.Server: TLS 1.2 above all); HTTP/2 over TLS is not counted.
func (s *Server) TLSFallbacks() int64 { return s.tlsFallbacks.Load() }

// ActiveStreams returns the number of answers in progress: the streams and
// waiting non-streaming answers that count against Config.MaxStreams.
func (s *Server) ActiveStreams() int64 { return s.active.Load() }

// Connections returns the number of connections accepted so far.
func (s *Server) Connections() int64 { return s.connections.Load() }

// Requests returns the number of requests read so far over all connections
// (every HTTP/1.x request whose head and body were read, every HTTP/2
// stream, every message of a WebSocket — its upgrade is none);
// Requests()/Connections() is the mean number of requests per connection.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Lateness returns how late token emissions were against their deadlines,
// in nanoseconds (early emissions count as 0), merged over all shards.
func (s *Server) Lateness() *stats.Metric {
	m := stats.NewMetric()
	for _, sh := range s.shards {
		sh.mu.Lock()
		m.Merge(sh.lateness)
		sh.mu.Unlock()
	}
	return m
}

func (s *Server) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}

// plan resolves the request's hints against the server defaults: it sets
// the token counts of answer a, of dialect d, and returns its schedule,
// whose tokens are a's, all phases. Completions answers have no reasoning
// or tool call.
func (s *Server) plan(start int64, d api.Dialect, h api.Hints, a *api.Answer) schedule.Plan {
	count := func(def int, hint *int64) int {
		if hint != nil {
			return max(int(*hint), 0)
		}
		return max(def, 0)
	}
	a.Tokens = count(s.cfg.Tokens, h.Tokens)
	a.Reasoning = count(s.cfg.Reasoning, h.Reasoning)
	a.ToolCall = count(s.cfg.ToolCall, h.ToolCall)
	if d == api.Completions {
		a.Reasoning, a.ToolCall = 0, 0
	}
	p := schedule.Plan{
		Start:     start,
		Think:     schedule.MsToNs(s.cfg.ThinkMs),
		Delay:     schedule.MsToNs(s.cfg.DelayMs),
		Tokens:    a.Total(),
		Reasoning: a.Reasoning,
	}
	if h.ThinkMs != nil {
		p.Think = schedule.MsToNs(*h.ThinkMs)
	}
	if h.DelayMs != nil {
		p.Delay = schedule.MsToNs(*h.DelayMs)
	}
	planFaults(&p, a, h.Faults)
	return p
}

func isClosed(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF)
}

func describe(c net.Conn) string { return fmt.Sprint(c.RemoteAddr()) }
