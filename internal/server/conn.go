package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/schedule"
	"github.com/sse-latency/sse-latency/internal/wire"
)

// MaxBodyBytes is the largest request body the server reads.
const MaxBodyBytes = 1 << 20

// streamHead is the response head of a stream, exactly the reference's
// fields in the reference's order (SPEC §3).
const streamHead = "HTTP/1.1 200 OK\r\n" +
	"Content-Type: text/event-stream\r\n" +
	"Cache-Control: no-cache\r\n" +
	"Connection: close\r\n" +
	"X-Accel-Buffering: no\r\n" +
	"Transfer-Encoding: chunked\r\n\r\n"

// request is a fully read request: head and body.
type request struct {
	head wire.RequestHead
	body []byte
}

// httpError is a request the server answers with an error status and an
// OpenAI-style JSON error body.
type httpError struct {
	status  int
	code    string // OpenAI "code" field
	message string
	allow   string // Allow header for 405
}

func (e *httpError) Error() string { return e.message }

// serveConn serves one connection: one request, then close (the reference
// always answers Connection: close). It returns true when it handed the
// connection to a stream, which then closes it; otherwise the caller does.
func (s *Server) serveConn(c net.Conn) (handedOff bool) {
	req, err := s.readRequest(c)
	if err != nil {
		var he *httpError
		if errors.As(err, &he) {
			s.logf("server: %s: %d %s", describe(c), he.status, he.message)
			s.writeError(c, he)
		} else if !isClosed(err) {
			s.logf("server: %s: reading request: %v", describe(c), err)
		}
		return false
	}
	path := req.head.Target
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	if d, ok := api.DialectForPath(path); ok {
		if req.head.Method != "POST" {
			s.writeError(c, &httpError{status: 405, code: "method_not_allowed", allow: "POST",
				message: fmt.Sprintf("method %s not allowed on %s: use POST", req.head.Method, path)})
			return false
		}
		return s.serveAnswer(c, req, d)
	}
	if strings.HasSuffix(path, "/models") {
		if req.head.Method != "GET" && req.head.Method != "HEAD" {
			s.writeError(c, &httpError{status: 405, code: "method_not_allowed", allow: "GET",
				message: fmt.Sprintf("method %s not allowed on %s: use GET", req.head.Method, path)})
			return false
		}
		s.serveModels(c, req.head.Method == "HEAD")
		return false
	}
	s.writeError(c, &httpError{status: 404, code: "unknown_url",
		message: fmt.Sprintf("unknown path %s: %s", path, endpoints)})
	return false
}

// endpoints is what the 404 message says the server serves.
const endpoints = "this server serves POST /v1/chat/completions, POST /v1/completions, " +
	"POST /v1/responses, POST /v1/messages (any path ending in one of these) and GET /v1/models"

// readRequest reads a request head and its whole body: the answer must not
// start before the pi_* hints have arrived, even when a gateway sends the
// body in a separate packet.
func (s *Server) readRequest(c net.Conn) (request, error) {
	c.SetReadDeadline(time.Now().Add(s.cfg.ReadTimeout))
	defer c.SetReadDeadline(time.Time{})
	buf := make([]byte, 0, 4096)
	var head wire.RequestHead
	var n int
	for {
		var err error
		head, n, err = wire.ParseRequestHead(buf)
		if errors.Is(err, wire.ErrHeadTooLarge) {
			return request{}, &httpError{status: 431, code: "request_header_fields_too_large",
				message: fmt.Sprintf("request head larger than %d bytes", wire.MaxHeadBytes)}
		}
		if err != nil {
			return request{}, &httpError{status: 400, code: "bad_request", message: "malformed request head: " + err.Error()}
		}
		if n > 0 {
			break
		}
		if buf, err = readMore(c, buf); err != nil {
			return request{}, err
		}
	}
	rest := buf[n:]
	var body []byte
	switch {
	case head.Chunked:
		var err error
		if body, err = readChunkedBody(c, rest); err != nil {
			return request{}, err
		}
	case head.ContentLength > MaxBodyBytes:
		return request{}, &httpError{status: 413, code: "request_too_large",
			message: fmt.Sprintf("request body of %d bytes is larger than the limit of %d", head.ContentLength, MaxBodyBytes)}
	case head.ContentLength > 0:
		body = make([]byte, head.ContentLength)
		got := copy(body, rest)
		for got < len(body) {
			m, err := c.Read(body[got:])
			got += m
			if err != nil && got < len(body) {
				return request{}, err
			}
		}
	}
	return request{head: head, body: body}, nil
}

// readMore reads once more into buf, growing it up to just past the head
// limit so the parser can tell "too large" from "need more".
func readMore(c net.Conn, buf []byte) ([]byte, error) {
	if len(buf) == cap(buf) {
		if cap(buf) > wire.MaxHeadBytes {
			return buf, &httpError{status: 431, code: "request_header_fields_too_large",
				message: fmt.Sprintf("request head larger than %d bytes", wire.MaxHeadBytes)}
		}
		buf = append(buf, make([]byte, cap(buf))...)[:len(buf)]
	}
	m, err := c.Read(buf[len(buf):cap(buf)])
	buf = buf[:len(buf)+m]
	if m > 0 {
		return buf, nil
	}
	return buf, err
}

// readChunkedBody reads a chunked request body (some gateways send one),
// starting with the bytes already read after the head.
func readChunkedBody(c net.Conn, rest []byte) ([]byte, error) {
	var dec wire.ChunkedDecoder
	var body []byte
	in := rest
	buf := make([]byte, 4096)
	for {
		for len(in) > 0 && !dec.Done() {
			data, used, err := dec.Next(in)
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, &httpError{status: 400, code: "bad_request", message: "malformed chunked request body: " + err.Error()}
			}
			body = append(body, data...)
			if len(body) > MaxBodyBytes {
				return nil, &httpError{status: 413, code: "request_too_large",
					message: fmt.Sprintf("request body larger than the limit of %d bytes", MaxBodyBytes)}
			}
			in = in[used:]
		}
		if dec.Done() {
			return body, nil
		}
		m, err := c.Read(buf)
		if m == 0 && err != nil {
			return nil, err
		}
		in = buf[:m]
	}
}

// serveAnswer answers a request of dialect d: a stream, or one JSON object
// when the request did not ask for a stream. It returns true when a stream
// took the connection over.
func (s *Server) serveAnswer(c net.Conn, req request, d api.Dialect) bool {
	sr, err := api.ParseServerRequest(req.body)
	if err != nil {
		s.writeError(c, &httpError{status: 400, code: "invalid_request_error", message: err.Error()})
		return false
	}
	// Each hint from the JSON fields, else the header, else the prompt
	// marker: a gateway that rebuilds the body drops the pi_* fields, one
	// that filters headers drops the header, and the prompt survives both.
	h := sr.Hints.
		Merge(api.ParseHintHeader(req.head.Header(api.HintHeader))).
		Merge(api.FindPromptHints(req.body))
	no := s.streamNo.Add(1)
	a := api.Answer{No: no, Model: sr.Model, IncludeUsage: sr.IncludeUsage}
	if !sr.Stream {
		p := s.plan(clock.Now(), h)
		a.Tokens = p.Tokens
		s.serveCompletion(c, d, a, p)
		return false
	}
	start := clock.Now()
	p := s.plan(start, h)
	a.Tokens = p.Tokens
	a.Created = start / 1e9
	st := newStream(c, api.NewEncoder(d, a), p)
	head := append(st.out[:0], streamHead...)
	for i := range st.enc.StartEvents() {
		st.payload = st.enc.AppendStart(st.payload[:0], i, start)
		head = wire.AppendChunk(head, st.payload)
	}
	st.out = head
	if _, err := c.Write(head); err != nil {
		return false
	}
	st.times = s.cfg.Emissions.Start(h.ID, p.Tokens)
	s.logf("server: %s: %s stream %d (id %q): %d tokens, think %dns, delay %dns",
		describe(c), d, no, h.ID, p.Tokens, p.Think, p.Delay)
	st.shard = s.shards[no%uint64(len(s.shards))]
	st.onEvent = s.streamEvent
	st.shard.start(st)
	return true
}

// streamEvent does, on its own goroutine, what a stream's shard handed
// back: drain a full socket and give the stream back, or finish it, or drop
// it. The connection is released when the stream ends.
func (s *Server) streamEvent(st *stream, ev event) {
	c := st.conn
	switch ev {
	case evFlush:
		c.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		if _, err := c.Write(st.pending); err != nil {
			s.logf("server: %s: stream dropped: %v", describe(c), err)
			st.times.Finish()
			s.release(c)
			return
		}
		c.SetWriteDeadline(time.Time{})
		st.shard.start(st)
	case evFinish:
		s.finish(c, st)
		s.release(c)
	default:
		st.times.Finish()
		s.release(c)
	}
}

// finish writes the dialect's end events (finish chunk and [DONE], or the
// .done/.stop events) and the last HTTP chunk in one write.
func (s *Server) finish(c net.Conn, st *stream) {
	st.times.Finish()
	out := st.out[:0]
	ts := clock.Now()
	for i := range st.enc.EndEvents() {
		st.payload = st.enc.AppendEnd(st.payload[:0], i, ts)
		out = wire.AppendChunk(out, st.payload)
	}
	out = append(out, wire.LastChunk...)
	st.out = out
	c.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	c.Write(out)
}

// serveCompletion answers a non-streaming request once the whole answer
// would have been generated. A client that goes away (or a server shutdown,
// which closes the connection) ends the wait early.
func (s *Server) serveCompletion(c net.Conn, d api.Dialect, a api.Answer, p schedule.Plan) {
	if wait := time.Until(clock.ToTime(p.End())); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		gone := make(chan struct{})
		go func() {
			var one [1]byte
			c.Read(one[:])
			close(gone)
		}()
		select {
		case <-t.C:
			c.SetReadDeadline(time.Now()) // release the watcher
			<-gone
			c.SetReadDeadline(time.Time{})
		case <-gone:
			return
		}
	}
	a.Created = clock.Now() / 1e9
	s.writeJSON(c, 200, "OK", api.NewEncoder(d, a).AppendBody(nil), "")
}

func (s *Server) serveModels(c net.Conn, headOnly bool) {
	body := []byte(`{"object":"list","data":[{"id":"` + api.Model + `","object":"model","created":` +
		strconv.FormatInt(s.start.Unix(), 10) + `,"owned_by":"sse-latency"}]}`)
	if headOnly {
		body = body[:0]
	}
	s.writeJSON(c, 200, "OK", body, "")
}

func (s *Server) writeError(c net.Conn, e *httpError) {
	var b bytes.Buffer
	b.WriteString(`{"error":{"message":`)
	b.WriteString(strconv.Quote(e.message))
	errType := "invalid_request_error"
	if e.status == 404 {
		errType = "not_found_error"
	}
	b.WriteString(`,"type":"` + errType + `","param":null,"code":"` + e.code + `"}}`)
	s.writeJSON(c, e.status, statusText(e.status), b.Bytes(), e.allow)
}

func (s *Server) writeJSON(c net.Conn, status int, text string, body []byte, allow string) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n", status, text, len(body))
	if allow != "" {
		b.WriteString("Allow: " + allow + "\r\n")
	}
	b.WriteString("\r\n")
	b.Write(body)
	c.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	c.Write(b.Bytes())
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
	case 413:
		return "Content Too Large"
	case 431:
		return "Request Header Fields Too Large"
	}
	return "Error"
}
