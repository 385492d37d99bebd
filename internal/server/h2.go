package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http2"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/wire"
)

// clientPreface starts every HTTP/2 connection (RFC 9113 §3.4).
const clientPreface = http2.ClientPreface

// h2MaxStreams is how many streams a client may open at once on one HTTP/2
// connection: a gateway that multiplexes many clients onto one backend
// connection must not be throttled by the dummy server (x/net's default is
// 250).
const h2MaxStreams = 10_000

// serveH2 serves the HTTP/2 connection accepted as c, read and written
// through rw (c itself, or c replaying the bytes already read), until it
// ends, then releases c: the server's own HTTP/2 (h2conn.go).
func (s *Server) serveH2(c, rw net.Conn) {
	s.logf("server: %s: HTTP/2", describe(c))
	newH2conn(s, c, rw).serve()
}

// peekPreface reads the first bytes of a plain connection into hc.buf, as
// many as it takes to tell an HTTP/2 client preface from an HTTP/1.x
// request (the first byte that differs, often the second).
func (hc *h1conn) peekPreface() (bool, error) {
	hc.c.SetReadDeadline(hc.start.Add(hc.s.cfg.ReadHeaderTimeout))
	defer hc.c.SetReadDeadline(time.Time{})
	for len(hc.buf) < len(clientPreface) && strings.HasPrefix(clientPreface, string(hc.buf)) {
		if err := hc.readMore(); err != nil {
			return false, err
		}
	}
	return bytes.HasPrefix(hc.buf, []byte(clientPreface)), nil
}

// replayConn is a connection whose first bytes were already read: Read
// returns them first.
type replayConn struct {
	net.Conn
	pending []byte
}

func (c *replayConn) Read(b []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(b, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

// enter adds a goroutine that is not a connection (an HTTP/2 handler) to
// s.wg, unless Serve is stopping.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.wg.Add(1)
	return true
}

// errClosing is the answer to a request that arrives while Serve is
// stopping, on an HTTP/3 stream or an HTTP/2 stream at or below the
// GOAWAY that told its client so.
func errClosing() *httpError {
	return &httpError{status: 503, code: "server_closing", message: "the server is shutting down"}
}

// serveH2Request is the handler of every HTTP/3 stream (h3.go; HTTP/2 has
// its own connection, h2conn.go): the same endpoints,
// dialects, hints and errors as HTTP/1.x. A stream's response ends when
// the handler returns, so the handler stays until its stream ends, and is
// the goroutine that writes each token when it is due.
func (s *Server) serveH2Request(w http.ResponseWriter, r *http.Request) {
	t := &h2Stream{s: s, w: w, r: r, rc: http.NewResponseController(w)}
	if !s.enter() {
		s.writeError(t, errClosing())
		return
	}
	defer s.wg.Done()
	defer s.recoverH2(t)
	s.requests.Add(1)
	req, err := readH2Request(r, s.cfg.ReadTimeout, s.clk)
	if err != nil {
		var he *httpError
		if errors.As(err, &he) {
			s.logf("server: %s: %d %s", t, he.status, he.message)
			s.writeError(t, he)
		} else {
			s.logf("server: %s: reading request: %v", t, err)
		}
		return
	}
	st := s.route(t, req)
	if st == nil {
		return
	}
	for ev := range st.events {
		if ended, _ := s.advance(st, ev); ended {
			if t.cut {
				panic(http.ErrAbortHandler) // a cut fault: reset the stream
			}
			return
		}
	}
}

// recoverH2 is recoverPanic for an HTTP/2 handler: http2 would recover a
// panic itself, log it and end the stream, uncounted. recoverH2 counts and
// logs it, then resets the stream (http.ErrAbortHandler, which http2 does
// not log).
func (s *Server) recoverH2(t *h2Stream) {
	r := recover()
	switch r {
	case nil:
		return
	case http.ErrAbortHandler:
		panic(r)
	}
	s.panics.Add(1)
	s.logf("server: %s: panic: %v\n%s", t, r, debug.Stack())
	panic(http.ErrAbortHandler)
}

// readH2Request turns an HTTP/2 request into the server's request: its
// pseudo-header fields as the request line, its fields, its whole body.
func readH2Request(r *http.Request, readTimeout time.Duration, clk clock.Clock) (request, error) {
	head := wire.RequestHead{
		Method:        r.Method,
		Target:        r.RequestURI,
		Proto:         r.Proto,
		ContentLength: r.ContentLength,
		Host:          r.Host,
	}
	for name, values := range r.Header {
		for _, v := range values {
			head.Fields = append(head.Fields, wire.Field{Name: name, Value: v})
		}
	}
	if r.ContentLength > MaxBodyBytes {
		return request{}, &httpError{status: 413, code: "request_too_large",
			message: fmt.Sprintf("request body of %d bytes is larger than the limit of %d", r.ContentLength, MaxBodyBytes)}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return request{}, errTimeout("body", readTimeout)
	}
	if err != nil {
		return request{}, err
	}
	if len(body) > MaxBodyBytes {
		return request{}, &httpError{status: 413, code: "request_too_large",
			message: fmt.Sprintf("request body larger than the limit of %d bytes", MaxBodyBytes)}
	}
	return request{head: head, body: body, arrived: clk.Now()}, nil
}

// h2Stream is the transport and stream writer of one HTTP/3 request (the
// name is from when x/net served HTTP/2 through it too). Every
// write is flushed at once, so each token event leaves in its own DATA
// frame; it is written by the handler goroutine, never by a shard.
type h2Stream struct {
	s   *Server
	w   http.ResponseWriter
	r   *http.Request
	rc  *http.ResponseController
	cut bool // a cut fault ended the stream: the handler resets it
}

func (t *h2Stream) writeJSON(status int, body []byte, fields ...wire.Field) {
	h := t.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	for _, f := range fields {
		h.Set(f.Name, f.Value)
	}
	t.w.WriteHeader(status)
	t.write(body)
}

func (t *h2Stream) waitUntil(at time.Time) bool {
	return sleepUntil(at, t.r.Context().Done(), t.s.quit, nil)
}

// startStream sets the fields of streamHead that HTTP/2 has (it has no
// Connection or Transfer-Encoding); they leave with the first write.
func (t *h2Stream) startStream(dst []byte) []byte {
	h := t.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	if id := t.s.cfg.Instance; id != "" {
		h.Set(api.InstanceHeader, id)
	}
	t.w.WriteHeader(200)
	return dst
}

func (t *h2Stream) bind(st *stream) { st.events = make(chan event, 1) }

func (t *h2Stream) appendEvent(dst, ev []byte) []byte { return append(dst, ev...) }

func (t *h2Stream) appendEnd(dst []byte) []byte { return dst }

// write writes b and flushes it: b leaves in one DATA frame (when it fits
// the peer's frame size and flow-control window). A client that does not
// read for Config.WriteTimeout gets its stream reset.
func (t *h2Stream) write(b []byte) error {
	t.rc.SetWriteDeadline(time.Now().Add(t.s.cfg.WriteTimeout))
	_, err := t.w.Write(b)
	if err == nil {
		err = t.rc.Flush()
	}
	t.rc.SetWriteDeadline(time.Time{})
	return err
}

func (t *h2Stream) direct() bool { return false }

func (t *h2Stream) tryWrite([]byte) (int, error) { return 0, errors.New("h2Stream: no direct write") }

func (t *h2Stream) String() string {
	if t.r.ProtoMajor == 3 {
		return t.r.RemoteAddr + " (HTTP/3)"
	}
	return t.r.RemoteAddr + " (HTTP/2)"
}
