package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/wire"
)

// The Responses API's WebSocket mode, as OpenAI serves it on
// wss://api.openai.com/v1/responses and openai-go speaks it
// (client.Beta.Responses.Connect): a GET on the Responses path upgrades
// the connection (HTTP/1.1, over TLS too; no subprotocol, no extension);
// then each text message {"type":"response.create", …the fields of a
// POST /v1/responses body…} starts a response, whose events come back one
// per text message, the JSON the SSE stream carries in its data lines —
// the same encoder, so every token event has its pi_ts, the same schedule
// and the same emission shards, which write each token as one frame with a
// non-blocking write like an HTTP chunk. Responses follow one another on
// the connection, one at a time (wsMaxInFlight). An error is an "error"
// event, {"type":"error","status":400,"error":{…}}, the OpenAI error
// object the HTTP answers carry, and the connection stays open. Pings are
// answered, a close is returned, a protocol error closes with its code.

// Limits of a WebSocket connection (docs/security.md).
const (
	// wsMaxInFlight is how many responses one connection may have in
	// progress: one, as OpenAI's API serves them in sequence. A
	// response.create sent meanwhile gets an error event, code
	// response_already_in_flight.
	wsMaxInFlight = 1
	// wsMaxMessage bounds a client message: a request body's bound.
	wsMaxMessage = MaxBodyBytes
	// wsMaxQueued bounds the control frames (pongs, error events) waiting
	// for a stream's partly written frame; beyond it they are dropped (a
	// pong answers the latest ping anyway).
	wsMaxQueued = 4 << 10
	// wsReadBytes is the size of a connection's read buffer.
	wsReadBytes = 4 << 10
)

// wsRequested reports whether a request asks to become a WebSocket: a GET
// with an Upgrade field that lists "websocket". The server may ignore an
// Upgrade (RFC 9110 §7.8); other methods are served as plain HTTP.
func wsRequested(h *wire.RequestHead) bool {
	return h.Method == "GET" && wire.HasFieldToken(h.Fields, "Upgrade", "websocket")
}

// wsConn is a connection that upgraded to WebSocket: the stream writer of
// its responses, one after the other (each has a wsResponse as its
// transport). Its goroutine
// (serve) reads the client's frames for as long as the connection lives;
// each response is a stream that the shards and its event goroutine write,
// as on HTTP/1.1. Writes to the socket from the two sides are serialised by
// wmu: a shard only tries it (a busy lock is a full socket to it), and a
// control frame that comes while a stream's frame is partly written waits
// for the stream to finish writing it.
type wsConn struct {
	s    *Server
	hc   *h1conn
	head wire.RequestHead // the upgrade request: its X-SSE-Latency hints apply to every response
	fr   wire.WSReader

	wmu    sync.Mutex
	mid    bool   // a stream's write stopped inside a frame: its pending bytes come first
	queued []byte // control frames written once the stream's frame is complete

	mu       sync.Mutex
	inFlight int  // responses in progress (at most wsMaxInFlight)
	refs     int  // the reading goroutine, and each response in progress; the last releases the connection
	closing  bool // the reading goroutine has ended: the connection is going

	sentClose, gotClose bool // the reading goroutine's: the close frames sent and received
}

// serveWS answers a request that asks for a WebSocket (wsRequested): it
// checks the handshake, switches protocols and serves the connection
// until it ends, then releases it. It reports whether it took the
// connection over (false: it answered with an HTTP error, and hc.keep
// says whether the connection stays).
func (s *Server) serveWS(hc *h1conn, req request) bool {
	if he := checkUpgrade(&req.head); he != nil {
		s.requests.Add(1)
		s.logf("server: %s: WebSocket upgrade refused: %d %s", hc, he.status, he.message)
		hc.keep = false
		s.writeError(hc, he)
		return false
	}
	head := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
		wire.WSAccept(req.head.Header("Sec-WebSocket-Key")) + "\r\n\r\n"
	if s.cfg.Instance != "" {
		head = withInstanceHeader(head, s.cfg.Instance)
	}
	if err := hc.write([]byte(head)); err != nil {
		s.releaseH1(hc)
		return true
	}
	s.logf("server: %s: WebSocket on %s", hc, clip(req.head.Target))
	c := &wsConn{s: s, hc: hc, head: req.head, fr: wire.WSReader{Masked: true, MaxMessage: wsMaxMessage}, refs: 1}
	c.serve()
	return true
}

// checkUpgrade checks a WebSocket handshake (RFC 6455 §4.2.1) on the
// Responses path; nil when the server may switch protocols.
func checkUpgrade(h *wire.RequestHead) *httpError {
	path, _, _ := strings.Cut(h.Target, "?")
	bad := func(msg string) *httpError {
		return &httpError{status: 400, code: "bad_request", message: "WebSocket upgrade: " + msg}
	}
	switch d, ok := api.DialectForPath(path); {
	case !ok || d != api.Responses:
		return &httpError{status: 404, code: "unknown_url",
			message: fmt.Sprintf("WebSocket upgrade on %s: only the Responses path (any path ending in /responses) speaks WebSocket", clip(path))}
	case h.Proto != "HTTP/1.1":
		return bad("needs HTTP/1.1, not " + clip(h.Proto))
	case !wire.HasFieldToken(h.Fields, "Connection", "upgrade"):
		return bad("the Connection field does not list Upgrade")
	case h.Header("Sec-WebSocket-Version") != "13":
		return &httpError{status: 426, code: "upgrade_required", fields: []wire.Field{{Name: "Sec-WebSocket-Version", Value: "13"}},
			message: fmt.Sprintf("WebSocket upgrade: Sec-WebSocket-Version %q is not 13", clip(h.Header("Sec-WebSocket-Version")))}
	case !wire.ValidWSKey(h.Header("Sec-WebSocket-Key")):
		return bad("Sec-WebSocket-Key is not the base64 of 16 bytes")
	}
	return nil
}

// serve reads the client's frames until the connection ends: it starts a
// response for each response.create, answers pings and the close, and
// closes on a protocol error, a binary message, an idle connection or a
// message sent too slowly.
func (c *wsConn) serve() {
	defer c.readerDone()
	hc := c.hc
	buf := make([]byte, wsReadBytes)
	p := hc.buf // what the client sent right after its upgrade request
	hc.buf = nil
	var partialSince time.Time
	for {
		for len(p) > 0 {
			m, used, err := c.fr.Next(p)
			p = p[used:]
			if err != nil {
				c.s.logf("server: %s: %v", c, err)
				c.close(wire.WSCloseCode(err), err.Error())
				return
			}
			if m.Op == 0 {
				break
			}
			if !c.message(m) {
				return
			}
		}
		if !c.fr.Partial() {
			partialSince = time.Time{}
		} else if partialSince.IsZero() {
			partialSince = time.Now()
		}
		c.armRead(partialSince)
		n, err := hc.c.Read(buf)
		p = buf[:n]
		if n > 0 {
			continue
		}
		switch {
		case isTimeout(err) && !partialSince.IsZero():
			c.close(wire.WSClosePolicy, fmt.Sprintf("message not received within %v", c.s.cfg.ReadTimeout))
		case isTimeout(err):
			c.s.logf("server: %s: closing after %v idle", c, c.s.cfg.IdleTimeout)
			c.close(wire.WSCloseGoingAway, "idle timeout")
		case !isClosed(err):
			c.s.logf("server: %s: reading: %v", c, err)
		}
		return
	}
}

// armRead sets the read deadline for the next read: ReadTimeout from the
// start of a message in progress, else IdleTimeout from now when no
// response is in progress, else none (the client may stay silent while
// its response streams).
func (c *wsConn) armRead(partialSince time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cfg := &c.s.cfg
	switch {
	case !partialSince.IsZero():
		c.hc.c.SetReadDeadline(partialSince.Add(cfg.ReadTimeout))
	case c.inFlight == 0:
		c.hc.c.SetReadDeadline(time.Now().Add(cfg.IdleTimeout))
	default:
		c.hc.c.SetReadDeadline(time.Time{})
	}
}

// message handles one message from the client; false ends the connection.
func (c *wsConn) message(m wire.WSMessage) bool {
	switch m.Op {
	case wire.WSText:
		c.event(m.Payload)
	case wire.WSPing:
		c.control(wire.AppendWSFrame(nil, wire.WSPong, m.Payload, nil))
	case wire.WSPong:
	case wire.WSClose:
		c.gotClose = true
		code, _ := wire.ParseWSClose(m.Payload)
		if code == wire.WSCloseNoStatus {
			code = wire.WSCloseNormal
		}
		c.close(code, "")
		return false
	default: // binary
		c.close(wire.WSCloseUnsupported, "binary messages are not part of the Responses API")
		return false
	}
	return true
}

// event handles a text message: a client event of the Responses API.
func (c *wsConn) event(msg []byte) {
	s := c.s
	s.requests.Add(1)
	var env struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(msg, &env); err != nil {
		c.answerError(&httpError{status: 400, code: "invalid_request_error", message: "invalid JSON message: " + err.Error()})
		return
	}
	if env.Type != "response.create" {
		c.answerError(&httpError{status: 400, code: "unsupported_event_type",
			message: fmt.Sprintf("unsupported event type %q: this server handles response.create", clip(env.Type))})
		return
	}
	c.mu.Lock()
	if c.inFlight >= wsMaxInFlight {
		c.mu.Unlock()
		c.answerError(&httpError{status: 400, code: "response_already_in_flight",
			message: "a response is already in progress on this connection; send the next response.create after its response.completed"})
		return
	}
	c.inFlight++
	c.refs++
	c.mu.Unlock()
	// The stream may end (and call streamEvent) before serveAnswer returns.
	r := &wsResponse{wsConn: c}
	if s.serveAnswer(r, request{head: c.head, body: msg}, api.Responses) == nil {
		r.endResponse(true)
	}
}

// answerError answers a client event with an error event.
func (c *wsConn) answerError(he *httpError) {
	c.s.logf("server: %s: %d %s", c, he.status, he.message)
	c.s.writeError(&wsResponse{wsConn: c}, he)
}

// wsResponse is the transport of one response on a WebSocket connection:
// the connection, and whether the response has reached its end events.
type wsResponse struct {
	*wsConn
	ending bool // appendEnd was called: the response is no longer in flight
}

// appendEnd: the end events are about to be written. From here on the
// response is no longer in flight: its client may send the next
// response.create as soon as it reads response.completed.
func (r *wsResponse) appendEnd(dst []byte) []byte {
	r.mu.Lock()
	r.inFlight--
	r.mu.Unlock()
	r.ending = true
	return dst
}

func (r *wsResponse) bind(st *stream) { st.onEvent = r.streamEvent }

// streamEvent is the onEvent of a WebSocket connection's streams, like
// Server.streamEvent for HTTP/1.1; a response that ended without all its
// bytes written (the client went away or stopped reading) ends the
// connection.
func (r *wsResponse) streamEvent(st *stream, ev event) {
	defer r.s.recoverPanic(r.hc.c)
	ended, complete := r.s.advance(st, ev)
	if ended {
		r.endResponse(complete)
	}
}

// endResponse accounts for the end of a response; one that ended without
// all its bytes written (!complete) closes the connection.
func (r *wsResponse) endResponse(complete bool) {
	c := r.wsConn
	c.mu.Lock()
	if !r.ending {
		c.inFlight--
	}
	c.refs--
	last := c.refs == 0
	if complete && !c.closing && c.inFlight == 0 {
		c.hc.c.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
	}
	c.mu.Unlock()
	if !complete {
		c.hc.c.Close()
	}
	if last {
		c.s.releaseH1(c.hc)
	}
}

// readerDone: the reading goroutine has ended, and the connection with
// it. After a close the server sent first, it lingers (see lingerClose) so
// that the client reads the close frame rather than a reset. A response in
// progress fails at its next write; the last of the two releases the
// connection.
func (c *wsConn) readerDone() {
	c.mu.Lock()
	c.closing = true
	c.refs--
	last := c.refs == 0
	c.mu.Unlock()
	if c.sentClose && !c.gotClose {
		c.hc.lingerClose()
	}
	c.hc.c.Close()
	if last {
		c.s.releaseH1(c.hc)
	}
}

// close sends a close frame with code and reason (best effort).
func (c *wsConn) close(code int, reason string) {
	c.sentClose = true
	c.control(wire.AppendWSClose(nil, code, reason, nil))
}

// control writes a control frame or a whole message from the reading
// goroutine, after a stream's frame in progress if there is one.
func (c *wsConn) control(frame []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.mid {
		if len(c.queued)+len(frame) <= wsMaxQueued {
			c.queued = append(c.queued, frame...)
		}
		return
	}
	c.hc.write(frame)
}

// writeJSON sends an error answer as an error event:
// {"type":"error","status":<status>,"error":{…}}. The WebSocket mode has
// no other JSON answer.
func (c *wsConn) writeJSON(status int, body []byte, _ ...wire.Field) {
	msg := fmt.Appendf(nil, `{"type":"error","status":%d,`, status)
	msg = append(msg, bytes.TrimPrefix(body, []byte("{"))...)
	c.control(wire.AppendWSFrame(nil, wire.WSText, msg, nil))
}

// waitUntil is never needed: a WebSocket response always streams.
func (c *wsConn) waitUntil(time.Time) bool { return true }

// startStream: nothing precedes the first event.
func (c *wsConn) startStream(dst []byte) []byte { return dst }

// appendEvent appends the data of each SSE event of ev (the encoder's
// "event: …\ndata: …\n\n") as a text message of one frame, and a comment
// (a heartbeat, ": ping") as a ping frame carrying its text: WebSocket's
// own keep-alive, which gateways that relay frames pass on and the client
// counts as the heartbeat it is.
func (c *wsConn) appendEvent(dst, ev []byte) []byte {
	for len(ev) > 0 {
		var line []byte
		line, ev, _ = bytes.Cut(ev, []byte{'\n'})
		if payload, ok := wire.DataPayload(line); ok {
			dst = wire.AppendWSHeader(dst, wire.WSText, len(payload), nil)
			dst = append(dst, payload...)
		} else if len(line) > 0 && line[0] == ':' {
			text := bytes.TrimSpace(line[1:])
			dst = wire.AppendWSFrame(dst, wire.WSPing, text[:min(len(text), wire.MaxWSControlPayload)], nil)
		}
	}
	return dst
}

// write writes b (whole frames, or the rest of a partly written one),
// then the control frames that waited for it.
func (c *wsConn) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	err := c.hc.write(b)
	if err == nil {
		c.mid = false
		if len(c.queued) > 0 {
			err = c.hc.write(c.queued)
			c.queued = c.queued[:0]
		}
	}
	return err
}

func (c *wsConn) direct() bool { return c.hc.direct() }

// tryWrite writes what it can of b without blocking; the lock held by a
// control frame's write counts as a full socket.
func (c *wsConn) tryWrite(b []byte) (int, error) {
	if !c.wmu.TryLock() {
		return 0, errAgain
	}
	defer c.wmu.Unlock()
	n, err := c.hc.tryWrite(b)
	c.mid = n > 0 && n < len(b)
	return n, err
}

func (c *wsConn) String() string { return c.hc.String() + " (WebSocket)" }

// h1Of returns the HTTP/1.x connection under transport t, nil on HTTP/2.
func h1Of(t transport) *h1conn {
	switch t := t.(type) {
	case *h1conn:
		return t
	case *wsResponse:
		return t.hc
	}
	return nil
}

// alwaysStreams reports whether t streams every answer, whatever the
// request says: a WebSocket response does ("stream" is implicit there).
func alwaysStreams(t transport) bool {
	_, ok := t.(*wsResponse)
	return ok
}
