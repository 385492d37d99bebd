package client

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	mrand "math/rand/v2"
	"strconv"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/wire"
)

// The Responses API's WebSocket mode (Options.WebSocket), as openai-go's
// Beta.Responses.Connect speaks it: a GET on the Responses path upgrades
// the connection; each request is then one response.create message
// (api.AppendResponseCreate: the Responses body, typed, without
// "stream"), and each event of its response comes back as one text
// message. The frame layer (wire.WSReader) takes the place of the body's
// framing and the SSE lines: every message is one event, handed to the
// same event handler as an SSE data line (reader.dataEvent), timestamped
// with the return of the Read that completed it. Pings are answered and,
// after Options.WSPing of silence, sent; the close is returned.
//
// The phases of a request on a new connection: Sent is when the upgrade
// request was written, HeadAt when its 101 arrived (the head phase is the
// handshake), and the response.create goes out at once after it; on a
// kept connection (-k) Sent is when the response.create was written, and
// there is no head. TTFT runs from Sent in both.
//
// Both engines speak it: doWS on the goroutine engine, wsloop_linux.go's
// state on the event loops, feeding the same wsExchange.

// ProtoWebSocket is rec.Proto of a request made over WebSocket (an HTTP/1.1
// upgrade).
const ProtoWebSocket = "websocket"

// WebSocket defaults (Options.WSPing, Options.WSPongTimeout): a ping after
// 20 s of silence keeps the connection alive through proxies that close
// idle ones (nginx's proxy_read_timeout is 60 s, Cloudflare's 100 s); a
// peer that does not answer within 10 s fails the request.
const (
	DefaultWSPing        = 20 * time.Second
	DefaultWSPongTimeout = 10 * time.Second
)

// wsState is the WebSocket side of a session's open connection.
type wsState struct {
	key string        // its handshake's Sec-WebSocket-Key
	fr  wire.WSReader // the server's frames, across the responses it carries
}

// newWSKey returns a fresh Sec-WebSocket-Key: 16 random bytes, base64.
func newWSKey() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.StdEncoding.EncodeToString(b[:])
}

// wsMask returns a masking key for a frame the client sends.
func wsMask() *[4]byte {
	k := mrand.Uint32()
	return &[4]byte{byte(k), byte(k >> 8), byte(k >> 16), byte(k >> 24)}
}

// AppendUpgrade appends the WebSocket upgrade request, with key as its
// Sec-WebSocket-Key:
//
//	GET <path> HTTP/1.1
//	Host: <host>
//	Upgrade: websocket
//	Connection: Upgrade
//	Sec-WebSocket-Key: <key>
//	Sec-WebSocket-Version: 13
//	X-SSE-Latency: <hints>          (those of the whole batch: not the id)
//	Authorization: Bearer <key>     (APIKey)
//	<extra headers>
//
// Each response.create carries its own hints, the id among them.
func (q *Request) AppendUpgrade(dst []byte, key string) []byte {
	path, host := q.target()
	dst = append(dst, "GET "...)
	dst = append(dst, path...)
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = append(dst, host...)
	dst = append(dst, "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: "...)
	dst = append(dst, key...)
	dst = append(dst, "\r\nSec-WebSocket-Version: 13\r\n"...)
	dst = q.appendHeaders(dst, q.hints(""))
	return append(dst, "\r\n"...)
}

// AppendCreate appends the response.create message of the request with id
// id ("" for none), as a masked text frame.
func (q *Request) AppendCreate(dst []byte, id string) []byte {
	msg := api.AppendResponseCreate(make([]byte, 0, 256+min(max(q.PromptBytes, 0), api.MaxPromptBytes)), q.requestBody(q.hints(id)))
	return wire.AppendWSFrame(dst, wire.WSText, msg, wsMask())
}

// wsExchange is one request over WebSocket: its reader, and what the
// frames it reads ask the client to write.
type wsExchange struct {
	q      *Request
	r      *reader
	ws     *wsState
	id     string
	reused bool // on a kept connection: no handshake

	out       []byte // frames to write once the current Read is parsed: the response.create, pongs, a close
	ended     bool   // the request has ended (rec.Failure set)
	stray     bool   // a data message came after the terminal event
	gotClose  bool   // the peer sent its close
	sentClose bool   // the client sent its close
	open      bool   // the connection speaks WebSocket: kept, or its 101 checked
	keepAlive bool   // the connection may carry another request: Options.KeepAlive, unless a one-shot's driver cleared it
	dead      bool   // a kept connection closed by its peer before any message: try again on a new one
	pingAt    int64  // when an unanswered ping was sent, 0 if none
}

func newWSExchange(q *Request, rec *result.Request, ws *wsState, reused bool) *wsExchange {
	w := &wsExchange{q: q, r: newReader(rec, &q.Options), ws: ws, id: rec.ID, reused: reused, open: reused, keepAlive: q.KeepAlive}
	w.r.expectUpgrade(w.upgraded, reused)
	return w
}

// feed processes one Read's bytes, all arrived at now: the rest of the
// handshake's answer, then frames. It returns true when the request has
// ended; w.out may hold frames to write either way.
func (w *wsExchange) feed(p []byte, now int64) bool {
	r := w.r
	defer r.endRead(r.beginRead(p, now))
	p, ended, wait := r.headOf(p)
	if wait {
		w.ended = ended
		return ended
	}
	if r.statusFailing() { // a non-2xx answer to the upgrade: the start of its body
		w.ended = r.body(p, now)
		return w.ended
	}
	w.frames(p, now)
	return w.ended
}

// upgraded checks the head of a 101 (or 2xx) answer to the upgrade
// (RFC 6455 §4.1) and, when it is right, queues the response.create. It
// returns true when the request failed.
func (w *wsExchange) upgraded(h wire.ResponseHead) bool {
	fail := func(detail string) bool {
		w.r.rec.Failure = result.Failure{Kind: result.BadFraming, Detail: "websocket upgrade: " + detail}
		return true
	}
	switch {
	case h.StatusCode != 101:
		return fail("refused with " + printable(h.StatusLine, true, statusDetailBytes))
	case !wire.HasFieldToken(h.Fields, "Upgrade", "websocket"):
		return fail("101 without Upgrade: websocket")
	case !wire.HasFieldToken(h.Fields, "Connection", "upgrade"):
		return fail("101 without Connection: Upgrade")
	case h.Header("Sec-WebSocket-Accept") != wire.WSAccept(w.ws.key):
		return fail("Sec-WebSocket-Accept " + strconv.Quote(printable(h.Header("Sec-WebSocket-Accept"), true, 64)) + " does not answer the key")
	case h.Header("Sec-WebSocket-Extensions") != "":
		return fail("an extension none was offered: " + printable(h.Header("Sec-WebSocket-Extensions"), true, 64))
	case h.Header("Sec-WebSocket-Protocol") != "":
		return fail("a subprotocol none was offered: " + printable(h.Header("Sec-WebSocket-Protocol"), true, 64))
	}
	w.open = true
	w.r.rec.Proto = ProtoWebSocket
	w.out = w.q.AppendCreate(w.out, w.id)
	return false
}

// frames parses frames from p: text messages go to the event handler,
// pings get their pong, a close ends the request.
func (w *wsExchange) frames(p []byte, now int64) {
	r := w.r
	for len(p) > 0 && !w.gotClose {
		m, used, err := w.ws.fr.Next(p)
		p = p[used:]
		if err != nil {
			w.fail(result.Failure{Kind: result.BadFraming, Detail: err.Error()}, wire.WSCloseCode(err))
			return
		}
		switch m.Op {
		case 0:
			return
		case wire.WSText:
			if w.ended {
				w.stray = true // it belongs to no request
			} else {
				w.ended = r.dataEvent(nil, m.Payload, now)
			}
		case wire.WSBinary:
			w.fail(result.Failure{Kind: result.BadFraming, Detail: "websocket: binary message (the Responses API sends text)"}, wire.WSCloseUnsupported)
			return
		case wire.WSPing:
			if !w.ended {
				r.rec.Pings++ // a heartbeat: the server's are ping frames over WebSocket
			}
			w.out = wire.AppendWSFrame(w.out, wire.WSPong, m.Payload, wsMask())
		case wire.WSPong:
			w.pingAt = 0
		case wire.WSClose:
			w.gotClose = true
			w.sendClose(closeReply(m.Payload))
			switch {
			case w.ended:
			case w.reused && r.rec.Events == 0:
				w.dead = true
				w.ended = true
			default:
				w.ended = true
				r.rec.Failure = result.Failure{Kind: result.ClosedBeforeDone,
					Detail: terminalName(api.Responses) + " (websocket " + printable(wire.WSCloseText(m.Payload), true, 0) + ")"}
			}
		}
	}
}

// closeReply is the code a close answers a peer's close payload p with:
// its code, or 1000 when it had none.
func closeReply(p []byte) int {
	if code, _ := wire.ParseWSClose(p); code != wire.WSCloseNoStatus {
		return code
	}
	return wire.WSCloseNormal
}

// fail ends the request with f (unless it has ended already) and queues a
// close with code.
func (w *wsExchange) fail(f result.Failure, code int) {
	if !w.ended {
		w.r.rec.Failure = f
		w.ended = true
	}
	w.sendClose(code)
}

// sendClose queues the client's close frame, once.
func (w *wsExchange) sendClose(code int) {
	if w.sentClose {
		return
	}
	w.sentClose = true
	w.out = wire.AppendWSClose(w.out, code, "", wsMask())
}

// reusable reports whether the connection can carry the next request: the
// response ended with its terminal event (or a failure of its content),
// at a message boundary, with nothing after it and no close either way.
func (w *wsExchange) reusable() bool {
	return isStreamEnd(w.r.rec.Failure.Kind) && !w.stray && !w.gotClose && !w.sentClose && !w.ws.fr.Partial() && !w.r.statusFailing()
}

// pingEvery is the silence after which the client pings (0: never).
func (q *Request) pingEvery() time.Duration {
	switch {
	case q.WSPing < 0:
		return 0
	case q.WSPing == 0:
		return DefaultWSPing
	}
	return q.WSPing
}

func (q *Request) pongTimeout() time.Duration {
	if q.WSPongTimeout > 0 {
		return q.WSPongTimeout
	}
	return DefaultWSPongTimeout
}

// noPong is the failure of a peer that did not answer a ping.
func (q *Request) noPong() result.Failure {
	return result.Failure{Kind: result.RecvError,
		Detail: "websocket: no pong within " + strconv.FormatInt(q.pongTimeout().Milliseconds(), 10) + "ms of a ping"}
}

// doWS sends the request over WebSocket on the session's connection — the
// upgrade first on a new one — and reads its response (see Session.Do;
// the goroutine engine).
func (s *Session) doWS(ctx context.Context, rec *result.Request, deadline time.Time, reused bool) attempt {
	q := s.q
	conn := s.conn
	s.proto, rec.Proto = ProtoWebSocket, ProtoWebSocket
	if !reused || s.ws == nil {
		s.ws = &wsState{key: newWSKey()}
	}
	w := newWSExchange(q, rec, s.ws, reused)
	w.keepAlive = w.keepAlive && !s.oneShot
	r := w.r
	defer r.close()
	var out []byte
	if reused {
		out = q.AppendCreate(make([]byte, 0, 512), rec.ID)
	} else {
		out = q.AppendUpgrade(make([]byte, 0, 512), s.ws.key)
	}
	release := cancelUnblocks(ctx, conn, deadline)
	keep := false
	defer func() {
		if !release(keep) {
			if w.open && !w.sentClose && !w.gotClose {
				s.closeWS(wire.WSCloseNormal)
			}
			s.ws = nil
			s.Close()
		}
	}()

	if a, ok := q.send(ctx, rec, conn, out, reused); !ok {
		return a
	}
	lim := readLimit{conn: conn, ctx: ctx, deadline: deadline, set: deadline, idle: q.IdleTimeout}
	ping, last := q.pingEvery(), time.Now()
	for {
		if r.statusFailing() && lim.wait.IsZero() {
			lim.wait = time.Now().Add(q.drainTimeout())
		}
		lim.arm()
		byPing := false
		if ping > 0 && !r.statusFailing() {
			due := last.Add(ping)
			if w.pingAt != 0 {
				due = s.clk.ToTime(w.pingAt).Add(q.pongTimeout())
			}
			if due.Before(lim.set) {
				byPing = true
				lim.set, lim.byIdle = due, false
				conn.SetReadDeadline(due)
				if ctx.Err() != nil {
					conn.SetReadDeadline(time.Unix(1, 0))
				}
			}
		}
		n, err := conn.Read(s.buf)
		if n > 0 {
			now := s.clk.Now()
			last = time.Now()
			rec.Reads++
			ended := w.feed(s.buf[:n], now)
			if len(w.out) > 0 {
				_, werr := conn.Write(w.out)
				w.out = w.out[:0]
				if werr != nil && !ended {
					rec.Failure = q.classify(ctx, werr, sysFailure(result.RecvError, "send: ", werr))
					return finished
				}
			}
			if ended {
				switch w.settle(step{cancelled: ctx.Err() != nil}) {
				case fateRetry:
					return deadConn
				case fateKeep:
					keep = true
				}
				rec.End = now
				return finished
			}
		}
		if err == nil {
			continue
		}
		switch {
		case ctx.Err() != nil:
			rec.Failure = result.Failure{Kind: result.Interrupted}
		case byPing && isTimeout(err) && w.pingAt == 0:
			w.pingAt = s.clk.Now()
			if _, werr := conn.Write(wire.AppendWSFrame(nil, wire.WSPing, nil, wsMask())); werr == nil {
				continue
			} else {
				err = werr
			}
			rec.Failure = q.classify(ctx, err, sysFailure(result.RecvError, "send: ", err))
		case byPing && isTimeout(err):
			rec.Failure = q.noPong()
		case w.settle(step{err: err}) == fateRetry: // ctx not done: the first case
			return deadConn
		default:
			rec.Failure = lim.failure(q, err, r)
		}
		return finished
	}
}

// closeWS writes the client's close frame with code (0: 1000) on the
// session's WebSocket connection, if it has one, with a short deadline;
// the caller then closes the connection.
func (s *Session) closeWS(code int) {
	if s.ws == nil || s.conn == nil {
		return
	}
	if code == 0 {
		code = wire.WSCloseNormal
	}
	s.conn.SetWriteDeadline(time.Now().Add(wsCloseWrite))
	s.conn.Write(wire.AppendWSClose(nil, code, "", wsMask()))
	s.ws = nil
}

// wsCloseWrite bounds the write of the client's close frame.
const wsCloseWrite = 100 * time.Millisecond

// wsUsable is Session.usable for a kept WebSocket connection: what waited
// on it while it was idle is read (for at most a millisecond) and parsed.
// A ping is answered and a pong ignored, and the connection stays; a
// close, or the peer gone, is a reuse failure; a data message, or bytes
// that are no frame, poison it.
func (s *Session) wsUsable(rec *result.Request) bool {
	switch peek(s.raw) {
	case idle:
		return true
	case peerClosed:
		rec.ReuseFailed = true
		return false
	}
	s.conn.SetReadDeadline(time.Now().Add(time.Millisecond))
	n, err := s.conn.Read(s.buf)
	s.conn.SetReadDeadline(time.Time{})
	if n == 0 {
		if err != nil && !isTimeout(err) {
			rec.ReuseFailed = true
			return false
		}
		return true // TLS records without data (a session ticket)
	}
	for p := s.buf[:n]; len(p) > 0; {
		m, used, err := s.ws.fr.Next(p)
		p = p[used:]
		switch {
		case err != nil || m.Op == wire.WSText || m.Op == wire.WSBinary:
			rec.Poisoned = true
			return false
		case m.Op == wire.WSClose:
			rec.ReuseFailed = true
			return false
		case m.Op == wire.WSPing:
			s.conn.Write(wire.AppendWSFrame(nil, wire.WSPong, m.Payload, wsMask()))
		case m.Op == 0:
			p = nil
		}
	}
	if s.ws.fr.Partial() {
		rec.Poisoned = true
		return false
	}
	return true
}
