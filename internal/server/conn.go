package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/schedule"
	"github.com/sse-latency/sse-latency/internal/wire"
)

// MaxBodyBytes is the largest request body the server reads: the largest
// prompt the client pads its requests to (api.MaxPromptBytes, --prompt-bytes)
// and BodyEnvelopeBytes for the JSON around it.
const MaxBodyBytes = api.MaxPromptBytes + BodyEnvelopeBytes

// BodyEnvelopeBytes is what MaxBodyBytes allows beyond the largest padded
// prompt: the rest of the request's JSON (model, hints, the phases' fields:
// under 1 KiB) and what a gateway adds to it (metadata, rewritten
// messages), with room to spare.
const BodyEnvelopeBytes = 64 << 10

// streamHead is the response head of a stream that ends its connection,
// exactly the reference's fields in the reference's order (SPEC §3).
const streamHead = "HTTP/1.1 200 OK\r\n" +
	"Content-Type: text/event-stream\r\n" +
	"Cache-Control: no-cache\r\n" +
	"Connection: close\r\n" +
	"X-Accel-Buffering: no\r\n" +
	"Transfer-Encoding: chunked\r\n\r\n"

// streamHeadKeepAlive is the head of a stream on a connection that stays
// open: streamHead without its Connection field.
const streamHeadKeepAlive = "HTTP/1.1 200 OK\r\n" +
	"Content-Type: text/event-stream\r\n" +
	"Cache-Control: no-cache\r\n" +
	"X-Accel-Buffering: no\r\n" +
	"Transfer-Encoding: chunked\r\n\r\n"

// withInstanceHeader returns head with the api.InstanceHeader field naming
// instance before its blank line: after the reference's fields, so that
// they keep their order.
func withInstanceHeader(head, instance string) string {
	return strings.TrimSuffix(head, "\r\n") + api.InstanceHeader + ": " + instance + "\r\n\r\n"
}

// request is a fully read request: head and body, and when its last byte
// had been read (process clock: the end of the request leg).
type request struct {
	head    wire.RequestHead
	body    []byte
	arrived int64
}

// httpError is a request the server answers with an error status and an
// OpenAI-style JSON error body.
type httpError struct {
	status  int
	code    string // OpenAI "code" field
	message string
	fields  []wire.Field // extra response fields: Allow for a 405, Retry-After for a 429
}

func (e *httpError) Error() string { return e.message }

// transport answers one request: on an HTTP/1.x connection (h1conn), on
// an HTTP/2 stream (h2Response), an HTTP/3 one (h2Stream) or a WebSocket
// (wsResponse). Everything above it — routing, dialects,
// hints, the emission schedule — is the same for both.
type transport interface {
	streamWriter
	// writeJSON sends a whole response with a JSON body and the extra
	// header fields given.
	writeJSON(status int, body []byte, fields ...wire.Field)
	// waitUntil blocks until t and reports true, or reports false as soon
	// as the client goes away or the server closes.
	waitUntil(t time.Time) bool
	// startStream begins a 200 text/event-stream response and appends to
	// dst what must precede the first event on the wire (the HTTP/1.1
	// head, the HTTP/2 HEADERS frame; nothing on HTTP/3, whose header
	// fields it sets).
	startStream(dst []byte) []byte
	// bind sets how the events of st reach the goroutine that handles them.
	bind(st *stream)
}

// The transports a stream is written to.
var (
	_ transport = (*h1conn)(nil)
	_ transport = (*h2Response)(nil)
	_ transport = (*h2Stream)(nil)
	_ transport = (*wsResponse)(nil)
)

// h1conn is one HTTP/1.x connection. It reads requests one after the other
// and is the transport of each, and the stream writer of their streams. It
// has one owner at a time: the goroutine reading its next request, or the
// stream answering its current one.
type h1conn struct {
	s      *Server
	c      net.Conn
	buf    []byte // bytes received and not consumed yet: the start of the next request
	keep   bool   // the current response leaves the connection open
	http10 bool   // the current request is HTTP/1.0
	served int    // requests read so far
	linger bool   // the connection ends on an error answer to a request not wholly read
	broken bool   // a write failed: the connection ends with a reset (releaseH1)
	// start is when the current request began: the accept (or the end of
	// the TLS handshake) for the first, the arrival of its first byte for
	// the next ones. Config.ReadHeaderTimeout and ReadTimeout count from it.
	start time.Time

	socketWriter // the shard's non-blocking write on the socket
}

func newH1conn(s *Server, c net.Conn) *h1conn {
	hc := &h1conn{s: s, c: c, start: time.Now()}
	hc.socketWriter.init(c)
	return hc
}

// serveH1 serves requests on hc until one ends the connection or a stream
// takes it over (the stream calls serveH1 again when it ends on a
// connection that stays open). The connection is released when it ends.
func (s *Server) serveH1(hc *h1conn) {
	for {
		if s.serveRequest(hc) {
			return
		}
		if !hc.keep {
			if hc.linger {
				hc.lingerClose()
			}
			s.releaseH1(hc)
			return
		}
	}
}

// serveRequest reads the next request on hc and answers it. It returns true
// when it handed the connection to a stream, which then owns it; otherwise
// hc.keep says whether the connection stays open.
func (s *Server) serveRequest(hc *h1conn) (handedOff bool) {
	var idle time.Duration
	if hc.served > 0 {
		idle = s.cfg.IdleTimeout
	}
	req, err := hc.readRequest(idle)
	if err != nil {
		hc.keep = false
		var he *httpError
		if errors.As(err, &he) {
			s.logf("server: %s: %d %s", hc, he.status, he.message)
			s.writeError(hc, he)
			hc.linger = true
		} else if errors.Is(err, errIdle) {
			s.logf("server: %s: closing after %v idle", hc, idle)
		} else if !isClosed(err) {
			s.logf("server: %s: reading request: %v", hc, err)
		}
		return false
	}
	hc.served++
	if wsRequested(&req.head) {
		return s.serveWS(hc, req)
	}
	s.requests.Add(1)
	hc.keep = !req.head.Close && !s.cfg.ServerClose
	hc.http10 = req.head.Proto == "HTTP/1.0"
	return s.route(hc, req) != nil
}

// errIdle is the end of a persistent connection whose client sent nothing
// for Config.IdleTimeout.
var errIdle = errors.New("idle timeout")

// readRequest reads a request head and its whole body: the answer must not
// start before the pi_* hints have arrived, even when a gateway sends the
// body in a separate packet. Bytes after the request stay in hc.buf for the
// next one. With idle > 0 (a connection that already served requests) the
// first byte may take up to idle. From the request's start (hc.start) the
// head must arrive within Config.ReadHeaderTimeout and the body within
// Config.ReadTimeout; a request begun and not finished in time is a 408.
func (hc *h1conn) readRequest(idle time.Duration) (request, error) {
	c := hc.c
	if idle > 0 {
		if len(hc.buf) == 0 {
			c.SetReadDeadline(time.Now().Add(idle))
			if err := hc.readMore(); err != nil {
				if isTimeout(err) {
					err = errIdle
				}
				return request{}, err
			}
		}
		hc.start = time.Now()
	}
	cfg := &hc.s.cfg
	c.SetReadDeadline(hc.start.Add(cfg.ReadHeaderTimeout))
	defer c.SetReadDeadline(time.Time{})
	var head wire.RequestHead
	for {
		var n int
		var err error
		head, n, err = wire.ParseRequestHead(hc.buf)
		if errors.Is(err, wire.ErrHeadTooLarge) {
			return request{}, errHeadTooLarge()
		}
		if err != nil {
			return request{}, &httpError{status: 400, code: "bad_request", message: "malformed request head: " + err.Error()}
		}
		if n > 0 {
			hc.consume(n)
			break
		}
		if err := hc.readMore(); err != nil {
			if isTimeout(err) && len(hc.buf) > 0 {
				return request{}, errTimeout("head", cfg.ReadHeaderTimeout)
			}
			return request{}, err
		}
	}
	c.SetReadDeadline(hc.start.Add(cfg.ReadTimeout))
	var body []byte
	var err error
	switch {
	case head.Chunked:
		body, err = hc.readChunkedBody()
	case head.ContentLength > MaxBodyBytes:
		return request{}, &httpError{status: 413, code: "request_too_large",
			message: fmt.Sprintf("request body of %d bytes is larger than the limit of %d", head.ContentLength, MaxBodyBytes)}
	case head.ContentLength > 0:
		body, err = hc.readBody(int(head.ContentLength))
	}
	if err != nil {
		if isTimeout(err) {
			err = errTimeout("body", cfg.ReadTimeout)
		}
		return request{}, err
	}
	return request{head: head, body: body, arrived: hc.s.clk.Now()}, nil
}

// bodyStep is how much a body buffer grows at a time: a client that
// declares a large body and sends it slowly only makes the server allocate
// what it sent.
const bodyStep = 64 << 10

// readBody reads a body of n bytes (at most MaxBodyBytes): first what
// hc.buf holds, then from the connection.
func (hc *h1conn) readBody(n int) ([]byte, error) {
	body := make([]byte, 0, min(n, bodyStep))
	take := min(n, len(hc.buf))
	body = append(body, hc.buf[:take]...)
	hc.consume(take)
	for len(body) < n {
		if len(body) == cap(body) {
			body = slices.Grow(body, min(n-len(body), bodyStep))
		}
		m, err := hc.c.Read(body[len(body):min(cap(body), n)])
		body = body[:len(body)+m]
		if err != nil && len(body) < n {
			return nil, err
		}
	}
	return body, nil
}

// errTimeout is the 408 of a request whose head or body did not arrive
// within limit.
func errTimeout(what string, limit time.Duration) *httpError {
	return &httpError{status: 408, code: "request_timeout",
		message: fmt.Sprintf("request %s not received within %v", what, limit)}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func errHeadTooLarge() *httpError {
	return &httpError{status: 431, code: "request_header_fields_too_large",
		message: fmt.Sprintf("request head larger than %d bytes", wire.MaxHeadBytes)}
}

// Lingering close: after an error answer to a request it did not read to
// the end (a 431, a 413, a 400 in the head), the server stops writing but
// reads and discards what the client still sends, for at most lingerTime
// and lingerBytes, before it closes. Closing with unread bytes makes the
// kernel send a reset, and a reset can make the client lose the answer it
// has not read yet.
const (
	lingerTime  = 500 * time.Millisecond
	lingerBytes = MaxBodyBytes + wire.MaxHeadBytes
)

// lingerClose half-closes the connection and discards what arrives until
// the client closes its side or a lingering limit is reached; the caller
// then closes it.
func (hc *h1conn) lingerClose() {
	cw, ok := hc.c.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	hc.c.SetReadDeadline(time.Now().Add(lingerTime))
	io.CopyN(io.Discard, hc.c, lingerBytes)
}

// consume drops the first n bytes of hc.buf, keeping the rest (a pipelined
// request) at the start of the same array.
func (hc *h1conn) consume(n int) {
	hc.buf = hc.buf[:copy(hc.buf, hc.buf[n:])]
}

// firstReadBytes is the size of a connection's read buffer at first; it
// doubles as a request needs.
const firstReadBytes = 1 << 10

// readBuffers holds the first read buffers that streams gave back
// (startStream): thousands of connections arriving at once each read a
// request into one and give it back when their stream starts, so that
// the next connections take them again rather than leaving 1 KiB each
// for the garbage collector (4 MB at -c 4000, the peak of the run).
var readBuffers = sync.Pool{New: func() any { b := make([]byte, 0, firstReadBytes); return &b }}

// getReadBuffer returns an empty first read buffer.
func getReadBuffer() []byte { return (*readBuffers.Get().(*[]byte))[:0] }

// putReadBuffer gives back a buffer getReadBuffer returned, unless it
// grew (a large request) or is none.
func putReadBuffer(b []byte) {
	if cap(b) == firstReadBytes {
		b = b[:0]
		readBuffers.Put(&b)
	}
}

// readMore reads once more into hc.buf, growing it up to just past the head
// limit so the parser can tell "too large" from "need more".
func (hc *h1conn) readMore() error {
	buf := hc.buf
	if cap(buf) == 0 {
		// Most requests (head and body) fit in 1 KiB; thousands of
		// connections arriving at once should not take 4 KiB each, nor
		// any while they wait for their request.
		if err := hc.awaitReadable(); err != nil {
			return err
		}
		buf = getReadBuffer()
	} else if len(buf) == cap(buf) {
		if cap(buf) > wire.MaxHeadBytes {
			return errHeadTooLarge()
		}
		buf = append(buf, make([]byte, cap(buf))...)[:len(buf)]
	}
	m, err := hc.c.Read(buf[len(buf):cap(buf)])
	hc.buf = buf[:len(buf)+m]
	if m > 0 {
		return nil
	}
	return err
}

// awaitReadable waits, without a buffer, until the connection has bytes
// to read, is closed, or its read deadline passes (the error then is the
// one a Read would return). Without a file descriptor (TLS on crypto/tls),
// or with opened bytes of TLS records waiting, it returns at once.
func (hc *h1conn) awaitReadable() error {
	if hc.raw == nil || hc.rec != nil && hc.rec.buffered() {
		return nil
	}
	return hc.raw.Read(readableFd)
}

// readChunkedBody reads a chunked request body (some gateways send one)
// from hc.buf and the connection, leaving what follows it in hc.buf.
func (hc *h1conn) readChunkedBody() ([]byte, error) {
	var dec wire.ChunkedDecoder
	var body []byte
	for {
		for len(hc.buf) > 0 && !dec.Done() {
			data, used, err := dec.Next(hc.buf)
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, &httpError{status: 400, code: "bad_request", message: "malformed chunked request body: " + err.Error()}
			}
			body = append(body, data...)
			if len(body) > MaxBodyBytes {
				return nil, &httpError{status: 413, code: "request_too_large",
					message: fmt.Sprintf("request body larger than the limit of %d bytes", MaxBodyBytes)}
			}
			hc.consume(used)
		}
		if dec.Done() {
			return body, nil
		}
		if err := hc.readMore(); err != nil {
			return nil, err
		}
	}
}

// route answers a fully read request through t. It returns the stream when
// the answer is a stream that has started (its shard owns it now), nil when
// the answer is complete or failed.
func (s *Server) route(t transport, req request) *stream {
	path := req.head.Target
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	if d, ok := api.DialectForPath(path); ok {
		if req.head.Method != "POST" {
			s.writeError(t, &httpError{status: 405, code: "method_not_allowed", fields: allow("POST"),
				message: fmt.Sprintf("method %s not allowed on %s: use POST", clip(req.head.Method), clip(path))})
			return nil
		}
		return s.serveAnswer(t, req, d)
	}
	if strings.HasSuffix(path, "/models") {
		if req.head.Method != "GET" && req.head.Method != "HEAD" {
			s.writeError(t, &httpError{status: 405, code: "method_not_allowed", fields: allow("GET"),
				message: fmt.Sprintf("method %s not allowed on %s: use GET", clip(req.head.Method), clip(path))})
			return nil
		}
		s.serveModels(t, req.head.Method == "HEAD")
		return nil
	}
	s.writeError(t, &httpError{status: 404, code: "unknown_url",
		message: fmt.Sprintf("unknown path %s: %s", clip(path), endpoints)})
	return nil
}

func allow(methods string) []wire.Field { return []wire.Field{{Name: "Allow", Value: methods}} }

// maxQuoted bounds what an error message quotes of a request's method or
// path (a head may be 64 KiB long).
const maxQuoted = 256

func clip(s string) string {
	if len(s) > maxQuoted {
		return s[:maxQuoted] + "..."
	}
	return s
}

// endpoints is what the 404 message says the server serves.
const endpoints = "this server serves POST /v1/chat/completions, POST /v1/completions, " +
	"POST /v1/responses, POST /v1/messages (any path ending in one of these) and GET /v1/models"

// serveAnswer answers a request of dialect d: a stream, or one JSON object
// when the request did not ask for a stream. It returns the stream once its
// shard has taken it over, else nil.
func (s *Server) serveAnswer(t transport, req request, d api.Dialect) *stream {
	sr, err := api.ParseServerRequest(req.body)
	if err != nil {
		s.writeError(t, &httpError{status: 400, code: "invalid_request_error", message: err.Error()})
		return nil
	}
	sr.Stream = sr.Stream || alwaysStreams(t)
	// Each hint from the JSON fields, else the header, else the prompt
	// marker: a gateway that rebuilds the body drops the pi_* fields, one
	// that filters headers drops the header, and the prompt survives both.
	h, err := s.limits.Resolve(sr.Hints, api.ParseHintHeader(req.head.Header(api.HintHeader)), api.FindPromptHints(req.body))
	if err != nil {
		code := "hint_above_limit"
		if errors.Is(err, api.ErrHintBelowMinimum) {
			code = "hint_below_minimum"
		}
		s.writeError(t, &httpError{status: 400, code: code, message: err.Error()})
		return nil
	}
	if err := api.CheckPhases(d, h); err != nil {
		s.writeError(t, &httpError{status: 400, code: "invalid_request_error", message: err.Error()})
		return nil
	}
	h.Faults = h.Faults.Merge(s.cfg.Faults)
	if h.Faults.Status != nil {
		s.writeFaultStatus(t, d, int(*h.Faults.Status))
		return nil
	}
	if !s.enterAnswer() {
		s.writeError(t, &httpError{status: 429, code: "rate_limit_exceeded",
			fields:  []wire.Field{{Name: "Retry-After", Value: retryAfter}},
			message: fmt.Sprintf("too many concurrent streams (limit %d); retry later", s.cfg.MaxStreams)})
		return nil
	}
	no := s.streamNo.Add(1)
	a := api.Answer{No: no, Model: sr.Model, IncludeUsage: sr.IncludeUsage, ReasoningField: s.cfg.ReasoningField, Instance: s.instance,
		Prompt: s.promptUsage(req.body, h)}
	if !sr.Stream {
		defer s.leaveAnswer()
		p := s.plan(s.clk.Now(), d, h, &a)
		s.serveCompletion(t, d, a, p)
		return nil
	}
	start := s.clk.Now()
	p := s.plan(start, d, h, &a)
	a.Created = start / 1e9
	st := newStream(t, api.NewEncoder(d, a), p)
	st.clk = s.clk
	st.firsts = [2]int{a.Reasoning, a.Reasoning + a.ToolCall}
	st.w = wrapFaults(t, h.Faults, st.enc.StartEvents())
	sc := getScratch()
	out := t.startStream(sc.out[:0])
	for i := range st.enc.StartEvents() {
		sc.payload = st.enc.AppendStart(sc.payload[:0], i, start)
		out = st.w.appendEvent(out, sc.payload)
	}
	sc.out = out
	err = st.w.write(out)
	putScratch(sc)
	if err != nil {
		s.leaveAnswer()
		return nil
	}
	st.times = s.cfg.Emissions.StartAt(h.ID, p.Tokens, p.Deadline)
	st.times.SetArrived(req.arrived)
	st.times.SetUsage(a.Usage())
	st.begin(d, s.heartbeatNs(h), start)
	s.logf("server: %s: %s stream %d (id %q): %d tokens (%d reasoning, %d tool call), think %dns, delay %dns%s",
		t, d, no, h.ID, p.Tokens, a.Reasoning, a.ToolCall, p.Think, p.Delay, faultsHeader(h.Faults))
	st.shard = s.shardFor(t, no)
	t.bind(st)
	st.shard.start(st)
	return st
}

// advance does, on the calling goroutine (which owns st), what st's shard
// handed back: drain a full socket or write a due token and give the stream
// back to its shard, or finish it, or drop it. It reports whether the
// stream has ended, and whether it ended with all its bytes written; the
// stream's place among Config.MaxStreams is free once it has ended.
func (s *Server) advance(st *stream, ev event) (ended, complete bool) {
	switch ev {
	case evFlush:
		s.flushes.Add(1)
		err := st.w.write(st.pending)
		if err == nil {
			st.shard.start(st)
			return false, false
		}
		s.logf("server: %s: stream dropped: %v", st.w, err)
		st.times.Gone(s.clk.Now())
	case evWrite:
		s.handoffs.Add(1)
		st.shard.start(st)
		return false, false
	case evFinish:
		if complete = s.finish(st) == nil; !complete {
			st.times.Gone(s.clk.Now())
		}
	default:
		st.times.Gone(s.clk.Now())
	}
	s.leaveAnswer()
	return true, complete
}

// enterAnswer takes a place among the Config.MaxStreams answers in
// progress, and reports false when there is none left.
func (s *Server) enterAnswer() bool {
	n := s.active.Add(1)
	if limit := s.cfg.MaxStreams; limit > 0 && n > int64(limit) {
		s.active.Add(-1)
		return false
	}
	return true
}

// leaveAnswer gives back the place taken by enterAnswer.
func (s *Server) leaveAnswer() { s.active.Add(-1) }

// streamEvent is the onEvent of HTTP/1.1 streams: it runs on its own
// goroutine, and when the stream has ended it either goes on reading the
// connection's next request or releases the connection.
func (s *Server) streamEvent(st *stream, ev event) {
	hc := h1connOf(st.w)
	defer s.recoverPanic(hc.c)
	ended, complete := s.advance(st, ev)
	if !ended {
		return
	}
	if complete && hc.keep {
		s.serveH1(hc)
		return
	}
	s.releaseH1(hc)
}

// releaseH1 releases an HTTP/1.x connection. After a failed write (a
// client that stopped reading for WriteTimeout, or one that went away) it
// resets the connection rather than closing it: a close would leave the
// unsent bytes (megabytes, for a stream) to the kernel, which keeps trying
// to deliver them to a client that does not read; a TLS close would even
// wait to send its close_notify alert.
func (s *Server) releaseH1(hc *h1conn) {
	if hc.broken {
		s.mu.Lock()
		sock := s.conns[hc.c]
		s.mu.Unlock()
		if tc, ok := sock.(*net.TCPConn); ok {
			tc.SetLinger(0)
			tc.Close()
		}
	}
	s.release(hc.c)
}

// finish writes the dialect's end events (finish chunk and [DONE], or the
// .done/.stop events) and the end of the body in one write.
func (s *Server) finish(st *stream) error {
	st.times.Finish()
	if ended, err := faultEnd(st); ended {
		return err
	}
	sc := getScratch()
	defer putScratch(sc)
	out := sc.out[:0]
	ts := s.clk.Now()
	for i := range st.enc.EndEvents() {
		sc.payload = st.enc.AppendEnd(sc.payload[:0], i, ts)
		out = st.w.appendEvent(out, sc.payload)
	}
	out = st.w.appendEnd(out)
	sc.out = out
	return st.w.write(out)
}

// serveCompletion answers a non-streaming request once the whole answer
// would have been generated. A client that goes away (or a server shutdown)
// ends the wait early.
func (s *Server) serveCompletion(t transport, d api.Dialect, a api.Answer, p schedule.Plan) {
	if !t.waitUntil(s.clk.ToTime(p.End())) {
		return
	}
	a.Created = s.clk.Now() / 1e9
	t.writeJSON(200, api.NewEncoder(d, a).AppendBody(nil))
}

func (s *Server) serveModels(t transport, headOnly bool) {
	body := []byte(`{"object":"list","data":[{"id":"` + api.Model + `","object":"model","created":` +
		strconv.FormatInt(s.start.Unix(), 10) + `,"owned_by":"sse-latency"}]}`)
	if headOnly {
		body = body[:0]
	}
	t.writeJSON(200, body)
}

func (s *Server) writeError(t transport, e *httpError) {
	var b bytes.Buffer
	b.WriteString(`{"error":{"message":`)
	msg, _ := json.Marshal(e.message) // valid JSON even when the message quotes invalid UTF-8
	b.Write(msg)
	errType := "invalid_request_error"
	switch e.status {
	case 404:
		errType = "not_found_error"
	case 429:
		errType = "rate_limit_error"
	}
	b.WriteString(`,"type":"` + errType + `","param":null,"code":"` + e.code + `"}}`)
	t.writeJSON(e.status, b.Bytes(), e.fields...)
}

// writeJSON sends the response in one write. Its head says
// "Connection: close" when the connection ends after it (byte for byte the
// reference's head), nothing about the connection when it stays open, and
// "Connection: keep-alive" to an HTTP/1.0 client that asked for it.
func (hc *h1conn) writeJSON(status int, body []byte, fields ...wire.Field) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", status, statusText(status), len(body))
	switch {
	case !hc.keep:
		b.WriteString("Connection: close\r\n")
	case hc.http10:
		b.WriteString("Connection: keep-alive\r\n")
	}
	for _, f := range fields {
		b.WriteString(f.Name + ": " + f.Value + "\r\n")
	}
	b.WriteString("\r\n")
	b.Write(body)
	hc.write(b.Bytes())
}

// startStream appends the stream's head. A chunked body cannot be delimited
// by an HTTP/1.0 client, so a stream to one always ends the connection.
func (hc *h1conn) startStream(dst []byte) []byte {
	if hc.http10 {
		hc.keep = false
	}
	if len(hc.buf) == 0 {
		// Nothing pipelined: give the read buffer back for the length of
		// the stream (thousands of streams would hold 4 KiB each);
		// readMore takes one again for the next request.
		putReadBuffer(hc.buf)
		hc.buf = nil
	}
	if hc.keep {
		return append(dst, hc.s.headKeepAlive...)
	}
	return append(dst, hc.s.head...)
}

func (hc *h1conn) bind(st *stream) { st.onEvent = hc.s.streamEvent }

func (hc *h1conn) appendEvent(dst, ev []byte) []byte { return wire.AppendChunk(dst, ev) }

func (hc *h1conn) appendEnd(dst []byte) []byte { return append(dst, wire.LastChunk...) }

func (hc *h1conn) write(b []byte) error {
	hc.c.SetWriteDeadline(time.Now().Add(hc.s.cfg.WriteTimeout))
	_, err := hc.c.Write(b)
	hc.c.SetWriteDeadline(time.Time{})
	if err != nil {
		hc.keep = false
		hc.broken = true
	}
	return err
}

func (hc *h1conn) direct() bool { return hc.raw != nil }

// tryWrite writes b with one non-blocking write(2) on the socket; on TLS
// on the record layer, the records that seal it (recordConn.wrote says
// what the count means then).
func (hc *h1conn) tryWrite(b []byte) (int, error) {
	if rc := hc.rec; rc != nil {
		if rc.waiting() {
			return 0, errAgain
		}
		out := rc.seal(b)
		n, err := hc.rawWrite(out)
		return rc.wrote(b, out, n, err)
	}
	return hc.rawWrite(b)
}

func (hc *h1conn) String() string { return describe(hc.c) }

// waitUntil waits for t while watching the connection: a client that goes
// away ends the wait (and the connection). Bytes that arrive meanwhile are
// a pipelined request: they are kept in hc.buf, and the wait goes on.
func (hc *h1conn) waitUntil(t time.Time) bool {
	wait := time.Until(t)
	if wait <= 0 {
		return true
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	type readResult struct {
		n   int
		err error
	}
	var gone chan readResult
	var tmp []byte
	if len(hc.buf) == 0 { // with bytes pending the client has not gone
		gone = make(chan readResult, 1)
		tmp = make([]byte, 4096)
		go func() {
			n, err := hc.c.Read(tmp)
			gone <- readResult{n, err}
		}()
	}
	for {
		select {
		case <-timer.C:
			if gone != nil {
				hc.c.SetReadDeadline(time.Now()) // release the watcher
				r := <-gone
				hc.c.SetReadDeadline(time.Time{})
				hc.buf = append(hc.buf, tmp[:r.n]...)
			}
			return true
		case r := <-gone:
			gone = nil
			if r.n == 0 {
				hc.keep = false
				return false
			}
			hc.buf = append(hc.buf, tmp[:r.n]...)
		case <-hc.s.quit:
			hc.keep = false
			return false
		}
	}
}

func statusText(code int) string {
	switch code {
	case 200:
		return "OK"
	case 400:
		return "Bad Request"
	case 404:
		return "Not Found"
	case 405:
		return "Method Not Allowed"
	case 408:
		return "Request Timeout"
	case 413:
		return "Content Too Large"
	case 429:
		return "Too Many Requests"
	case 431:
		return "Request Header Fields Too Large"
	case 503:
		return "Service Unavailable"
	}
	return faultStatusText(code)
}
