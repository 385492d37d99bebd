package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/result"
	"golang.org/x/net/http2"
)

// startH2 starts HTTP/2 (proto ProtoH2 or ProtoH2C) on the session's new
// connection. From here on golang.org/x/net/http2's read loop owns the
// connection: requests are bounded by their context, not by deadlines on
// the connection.
func (s *Session) startH2(ctx context.Context, rec *result.Request, proto string) bool {
	s.conn.SetDeadline(time.Time{})
	s.stamp = newMuxConn(s.conn, s.clk)
	//lint:ignore SA1019 see shared in client.go
	cc, err := s.q.state().h2.NewClientConn(s.stamp)
	if err != nil {
		s.Close()
		rec.Failure = s.q.classify(ctx, err, sysFailure(result.Connect, "HTTP/2: ", err))
		return false
	}
	s.cc, s.proto = cc, proto
	return true
}

// doH2 sends the request as one HTTP/2 stream on the session's client
// connection and reads the response body, timestamping where its Read
// returns.
func (s *Session) doH2(ctx context.Context, rec *result.Request, deadline time.Time, reused bool) attempt {
	q := s.q
	st := newStreamCtx(ctx, deadline, q.IdleTimeout)
	defer st.close()
	scheme := "https"
	if s.proto == ProtoH2C {
		scheme = "http"
	}
	req, err := q.newHTTPRequest(st.sctx, rec.ID, scheme)
	if err != nil {
		rec.Failure = result.Failure{Kind: result.RecvError, Detail: "request: " + err.Error()}
		return finished
	}
	// The transport writes the request on a goroutine of its own: Sent is
	// when the write that carried the stream's END_STREAM returned (the
	// frame after the end of the body, flushed at once), each stream's
	// own however many share the connection; see muxConn.
	stamp, mux := &streamStamp{}, s.stamp
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteHeaders: func() { mux.wroteHeaders(stamp) },
	}))
	req.Body = &eofBody{ReadCloser: req.Body, st: stamp, clk: s.clk}
	keep := false
	rec.Streams = 1
	if gc := s.gc; gc != nil {
		rec.Streams = int(gc.streams.Add(1))
		defer gc.streams.Add(-1)
	}
	defer func() {
		if rec.Sent == 0 {
			rec.Sent = stamp.sentBefore(s.clk.Now())
		}
		if s.gc != nil {
			// A stream's end, however it ended, leaves the shared
			// connection to the others; the session lets it go only when
			// it failed or cannot carry another stream.
			if st := s.cc.State(); !keep || st.Closed || st.Closing {
				s.Close()
			}
			return
		}
		if !keep || !s.cc.CanTakeNewRequest() {
			s.Close()
		}
	}()

	x := h2Exchange{reused: reused, keepAlive: q.KeepAlive && !s.oneShot}
	resp, err := s.cc.RoundTrip(req)
	if err != nil {
		cancelled := st.cancelled()
		if x.settle(step{err: err, cancelled: cancelled}) == fateRetry || !cancelled && groupRefused(s.gc != nil, rec, err) {
			return deadConn
		}
		rec.Failure = h2Failure(ctx, st.sctx, q, err, sysFailure(result.RecvError, "send: ", err))
		return finished
	}
	now := s.clk.Now()
	rec.Sent = stamp.sentBefore(now)
	keep = s.readStream(st, rec, resp, resp.Proto+" "+resp.Status, now, &x,
		func(r *reader, err error) result.Failure { return r.endOfStream(err) })
	return finished
}

// streamCtx holds the contexts of one HTTP/2 or HTTP/3 request: the
// request's, bounded by its deadline, and the stream's own under it,
// which the idle timeout and the end of the wait for an error body cancel
// with their cause.
type streamCtx struct {
	ctx     context.Context    // the caller's: done when the run is interrupted
	cancel  context.CancelFunc // ends the request's context: resets the stream, the connection stays
	sctx    context.Context    // the stream's
	scancel context.CancelCauseFunc
	idle    *idleWatch // nil without an idle timeout
}

func newStreamCtx(ctx context.Context, deadline time.Time, idle time.Duration) *streamCtx {
	st := &streamCtx{ctx: ctx}
	rctx, cancel := context.WithDeadline(ctx, deadline)
	st.cancel = cancel
	st.sctx, st.scancel = context.WithCancelCause(rctx)
	st.idle = newIdleWatch(idle, st.scancel)
	return st
}

// cancelled reports whether the run or the stream's context is done.
func (st *streamCtx) cancelled() bool { return st.ctx.Err() != nil || st.sctx.Err() != nil }

// close stops the idle timer and ends both contexts.
func (st *streamCtx) close() {
	st.idle.stop()
	st.scancel(nil)
	st.cancel()
}

// readStream reads the response resp of an HTTP/2 or HTTP/3 stream, whose
// head arrived at now and whose status line is status, timestamping where
// each Read of its body returns, and settles it with x: it reports
// whether the connection may carry the next request. A body that ends
// with an error other than io.EOF fails as bodyFailure names it.
func (s *Session) readStream(st *streamCtx, rec *result.Request, resp *http.Response, status string, now int64, x *h2Exchange, bodyFailure func(*reader, error) result.Failure) (keep bool) {
	q := s.q
	body := &idleBody{r: resp.Body, w: st.idle}
	defer resp.Body.Close()
	if n := q.expectedTokens(); cap(rec.Tokens) == 0 && n > 0 {
		rec.Tokens = make([]result.Token, 0, n)
	}
	r := newReader(rec, &q.Options)
	defer r.close()
	x.r = r
	if r.h2Head(resp.StatusCode, status, resp.Header, now) {
		rec.End = now
		return x.settle(step{}) == fateKeep
	}
	x.streaming = true
	if r.statusFailing() {
		// The start of an error body, within DrainTimeout.
		t := time.AfterFunc(q.drainTimeout(), func() { st.scancel(errStatusWait) })
		defer t.Stop()
	}
	buf, clk := s.buf, s.clk
	for {
		n, err := body.Read(buf)
		if n > 0 {
			now := clk.Now()
			rec.Reads++
			if r.feed(buf[:n], now) {
				rec.End = now
				r.close()
				if keep = x.settle(step{}) == fateDrain; keep {
					s.drainH2(rec, body, st.cancel)
				}
				return keep
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				rec.BodyEnded = true // END_STREAM or FIN: the peer ended the response
			}
			switch {
			case r.statusFailing() && st.ctx.Err() == nil:
				rec.Failure = r.statusFailure()
			case errors.Is(err, io.EOF):
				rec.Failure = h2Failure(st.ctx, st.sctx, q, err, r.endOfStream(err))
			default:
				rec.Failure = h2Failure(st.ctx, st.sctx, q, err, bodyFailure(r, err))
			}
			return x.settle(step{err: err}) == fateKeep
		}
	}
}

// Causes of the cancellation of an HTTP/2 stream's context.
var (
	errIdle       = errors.New("idle timeout")
	errStatusWait = errors.New("end of the wait for an error body")
)

// idleWatch cancels a stream's context with errIdle when no Read returned
// for its duration; nil when there is no idle timeout.
type idleWatch struct {
	t *time.Timer
	d time.Duration
}

func newIdleWatch(d time.Duration, cancel context.CancelCauseFunc) *idleWatch {
	if d <= 0 {
		return nil
	}
	return &idleWatch{t: time.AfterFunc(d, func() { cancel(errIdle) }), d: d}
}

// reset starts the idle time again: a Read is about to start.
func (w *idleWatch) reset() {
	if w != nil {
		w.t.Reset(w.d)
	}
}

func (w *idleWatch) stop() {
	if w != nil {
		w.t.Stop()
	}
}

// idleBody is a response body whose every Read starts the idle time
// again.
type idleBody struct {
	r io.Reader
	w *idleWatch
}

func (b *idleBody) Read(p []byte) (int, error) {
	b.w.reset()
	return b.r.Read(p)
}

// eofBody notes in st when the transport reads the end of the request
// body.
type eofBody struct {
	io.ReadCloser
	st  *streamStamp
	clk clock.Clock
}

func (b *eofBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && b.st.eof.Load() == 0 {
		b.st.eof.Store(b.clk.Now())
	}
	return n, err
}

// drainH2 reads the rest of a stream whose terminal event has arrived, up to
// its END_STREAM, within the drain bounds; past them, cancel resets the
// stream (the connection stays usable).
func (s *Session) drainH2(rec *result.Request, body io.Reader, cancel context.CancelFunc) {
	t := time.AfterFunc(s.q.drainTimeout(), cancel)
	defer t.Stop()
	for drained := 0; drained <= DrainBytes; {
		n, err := body.Read(s.buf)
		if n > 0 {
			rec.Reads++
			rec.Bytes += int64(n)
			drained += n
		}
		if err != nil {
			return
		}
	}
}

// h2Failure classifies the error of an HTTP/2 request: interrupted when
// ctx is done, an idle timeout or a timeout when that is what ended the
// stream's context (sctx), else fallback.
func h2Failure(ctx, sctx context.Context, q *Request, err error, fallback result.Failure) result.Failure {
	if ctx.Err() == nil {
		switch cause := context.Cause(sctx); {
		case errors.Is(cause, errIdle):
			return q.idleFailure()
		case errors.Is(cause, context.DeadlineExceeded):
			return q.classify(ctx, context.DeadlineExceeded, fallback)
		}
	}
	return q.classify(ctx, err, fallback)
}

// newHTTPRequest builds the request with id id for an HTTP/2 round trip:
// the method, path, headers and body of AppendHTTP (no Connection field,
// which HTTP/2 forbids; a "Host" extra header becomes :authority; no
// User-Agent, as over HTTP/1.1).
func (q *Request) newHTTPRequest(ctx context.Context, id, scheme string) (*http.Request, error) {
	u, host, hdr, body, err := q.h2Parts(id, scheme)
	if err != nil {
		return nil, err
	}
	req := &http.Request{
		Method:        http.MethodPost,
		URL:           u,
		Proto:         "HTTP/2.0",
		ProtoMajor:    2,
		Header:        hdr,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Host:          host,
	}
	return req.WithContext(ctx), nil
}

// h2Parts returns what an HTTP/2 request with id id is made of: its URL
// (scheme and :authority host set), its header fields and its body.
func (q *Request) h2Parts(id, scheme string) (u *url.URL, host string, hdr http.Header, body []byte, err error) {
	h := q.hints(id)
	body = q.body(h)
	path, host := q.target()
	u, err = url.ParseRequestURI(path)
	if err != nil {
		return nil, "", nil, nil, err
	}
	u.Scheme, u.Host = scheme, host
	hdr = http.Header{
		"Content-Type": {"application/json"},
		"Accept":       {"text/event-stream"},
		"User-Agent":   nil, // none, as over HTTP/1.1
	}
	if !h.Empty() {
		hdr.Set(api.HintHeader, h.HeaderValue())
	}
	if q.Dialect == api.Anthropic {
		hdr.Set("anthropic-version", anthropicVersion)
	}
	if name, value := q.authHeader(); name != "" {
		hdr.Set(name, value)
	}
	for _, x := range q.ExtraHeaders {
		name, value, ok := strings.Cut(x, ":")
		if !ok {
			continue
		}
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if strings.EqualFold(name, "Host") {
			continue // target's :authority
		}
		if slices.ContainsFunc(replaced, func(r string) bool { return strings.EqualFold(r, name) }) {
			hdr.Del(name)
		}
		hdr.Add(name, value)
	}
	return u, host, hdr, body, nil
}

// groupRefused reports whether a stream of a group's connection (inGroup)
// that failed before its response, err, is sent again although the
// session opened the connection itself (a joiner's always is: reused):
// the connection is shared from its first stream, so the opener's may go
// after the joiners' and be the one the peer refuses — above the last
// stream of a GOAWAY (a request cap reached, a reload), never written
// because one had come, or reset with REFUSED_STREAM; the peer served
// none of it. Once only (rec.ReuseFailed: already sent again), and not
// for any other failure: a peer that hangs up on a new connection's
// first stream fails it, as it would a connection of its own.
func groupRefused(inGroup bool, rec *result.Request, err error) bool {
	return inGroup && !rec.ReuseFailed && refusedUnserved(err)
}

// refusedUnserved reports whether err, a stream's failure before its
// response, says that the peer did not serve it, in x/net/http2's words
// (which the event loops' streams use too).
func refusedUnserved(err error) bool {
	var se http2.StreamError
	if errors.As(err, &se) && se.Code == http2.ErrCodeRefusedStream {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "graceful shutdown GOAWAY") || strings.Contains(msg, "client conn not usable")
}
