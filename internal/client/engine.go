package client

import (
	"context"

	"github.com/sse-latency/sse-latency/internal/evloop"
	"github.com/sse-latency/sse-latency/internal/result"
)

// Engine names how the client does its I/O (evloop.Engine).
//
// The goroutine engine is the portable one: each request runs on the
// goroutine that calls Session.Do and blocks in net.Conn.Read, through Go's
// netpoller, for every read. The epoll engine (Linux, HTTP/1.1 and HTTP/2,
// WebSocket included) reads every socket of the process from a few event
// loops (package evloop), one per CPU, each owning many raw non-blocking
// sockets: one
// read(2) per readiness, one read buffer per loop, no goroutine per request
// and none woken per token. The uring engine is the same loops on
// io_uring: a multishot receive per socket into the loop's provided
// buffers, the arrival time taken when the loop takes the completion. All
// feed the same response parser, so that they record the same tokens,
// failures and integrity results. HTTP/1.1 over TLS 1.3 runs on the loops
// too: the handshake on a goroutine, then the loop opens and seals the
// records itself (package tlsrecord). HTTP/2 runs on them as well, h2c
// and h2 over TLS 1.3: the loop writes and reads the frames itself
// (h2loop_linux.go). TLS 1.2, HTTP/3 and wss use the goroutine engine.
type Engine = evloop.Engine

// The engines; the zero value means EngineAuto.
const (
	// EngineAuto is the fastest engine that applies (Linux, HTTP/1.1
	// or HTTP/2 over TCP or TLS 1.3: EngineEpoll, see evloop.Auto), else
	// EngineGoroutine.
	EngineAuto      = evloop.Auto
	EngineEpoll     = evloop.Epoll
	EngineUring     = evloop.Uring
	EngineGoroutine = evloop.Goroutine
)

// testEngine is the engine of the Options that name none ("": EngineAuto).
// Only the package's tests set it: they run their suites once per engine
// (TestMain), so that every test of a request runs on each.
var testEngine Engine

// Engines lists the names ParseEngine accepts, for usage texts.
const Engines = evloop.Engines

// ParseEngine returns the engine named s ("" is EngineAuto).
func ParseEngine(s string) (Engine, error) { return evloop.ParseEngine(s) }

// ResolveEngine returns the engine the requests of o use, and, when it is
// not the one o.Engine asks for, why: the text of a note for the user.
// EngineAuto falls back without a note: to the goroutine engine for
// WebSocket over TLS and for HTTP/3, which always use it, and where there
// are no event loops. HTTP/1.1 and HTTP/2 (h2c, and h2 over TLS) run on
// the loops (over TLS a TLS 1.3 record layer, package tlsrecord); a
// handshake that negotiates TLS 1.2 moves the Request to the goroutine
// engine then (TLSFallback). Requests that share HTTP/2 connections
// (Options.StreamsPerConn) run on the loops too, each group's sessions
// and connections on one loop.
func (o *Options) ResolveEngine() (Engine, string) {
	want := o.Engine
	if want == "" {
		want = testEngine
	}
	if want == "" {
		want = EngineAuto
	}
	if want == EngineGoroutine {
		return EngineGoroutine, ""
	}
	tlsOn := o.TLS != nil || o.Scheme == "https"
	switch {
	case o.HTTP3:
		if want != EngineAuto {
			return EngineGoroutine, "the " + string(want) + " engine serves plain-TCP HTTP/1.1; HTTP/3 (QUIC) uses the goroutine engine"
		}
		return EngineGoroutine, ""
	case tlsOn && o.WebSocket:
		if want != EngineAuto {
			return EngineGoroutine, "the " + string(want) + " engine serves WebSocket on plain TCP; wss uses the goroutine engine"
		}
		return EngineGoroutine, ""
	}
	if o.Loops != nil {
		return o.Loops.Engine(), ""
	}
	return want.Resolve()
}

// TLSFallback returns, once a TLS handshake of q's requests on the event
// loops negotiated what their record layer does not speak (TLS 1.2), the
// text of a note saying so: that request and the later ones use the
// goroutine engine. "" while none did.
func (q *Request) TLSFallback() string {
	if why := q.state().tlsFallback.Load(); why != nil {
		return *why + ": TLS uses the goroutine engine"
	}
	return ""
}

// loopEngine returns the engine of q's requests when they run on the
// event loops, "" when they do not.
func (q *Request) loopEngine() Engine {
	if q.state().tlsFallback.Load() != nil {
		return ""
	}
	var e Engine
	if q.shared == nil {
		e, _ = q.ResolveEngine()
	} else {
		st := q.shared
		st.engineOnce.Do(func() { st.engine, _ = q.ResolveEngine() })
		e = st.engine
	}
	if e.OnLoops() {
		return e
	}
	return ""
}

// onLoop reports whether q's requests run on the event loops.
func (q *Request) onLoop() bool { return q.loopEngine() != "" }

// Start begins one request on the session, like Do, and returns at once;
// done(rec) is called once the request has ended, with rec filled as Do
// fills it. On the event loops (epoll, uring) the request runs on a loop and done
// is called from the loop's goroutine: it must not block (hand rec over to
// a channel, a buffered one). On the goroutine engine Start runs Do on a
// goroutine of its own. The session belongs to the request until done is
// called: no other Start, Do or Close meanwhile.
func (s *Session) Start(ctx context.Context, rec *result.Request, done func(*result.Request)) {
	s.prepare(rec)
	if s.q.onLoop() {
		s.startLoop(ctx, rec, done)
		return
	}
	go func() {
		s.Do(ctx, rec)
		done(rec)
	}()
}
