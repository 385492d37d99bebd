// Package client sends one streaming request to the gateway under test and
// turns what comes back into a result.Request: when the request was sent,
// and for every content token when it was emitted (its pi_ts) and when the
// socket Read that delivered it returned.
//
// It speaks raw HTTP/1.1 over TCP, the way the reference tool does, so that
// nothing between the socket and the timestamp buffers or reorders bytes: a
// Read returns, its arrival time is taken at once, and every token decoded
// from that Read shares it.
package client

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/wire"
)

// ReadBufferSize is the size of the buffer each request reads into.
const ReadBufferSize = 4 << 10

// statusDetailBytes is how much of a bad response head a failure quotes
// (SPEC §4: "status <first 32 bytes of the head>").
const statusDetailBytes = 32

// Request is a prepared request: the bytes to send and where to send them.
// One Request serves every request of a batch; it is read-only once built.
type Request struct {
	Addr    string        // host:port to dial
	Timeout time.Duration // per-request timeout (-w), from the first connect attempt
	// Received, when set, counts the content tokens received (for the
	// progress line).
	Received *atomic.Int64
	// ExpectTokens sizes the token buffer of each request.
	ExpectTokens int

	raw []byte // the full HTTP request
}

// NewChatRequest prepares the Chat Completions request of SPEC §4 for addr.
// tokens >= 0 asks the server for that many tokens with pi_tokens. Each
// extra header ("Name: value") is sent after the reference's headers.
func NewChatRequest(addr string, tokens int, timeout time.Duration, extraHeaders ...string) *Request {
	body := api.AppendChatRequest(nil, tokens)
	raw := make([]byte, 0, 256+len(body))
	raw = append(raw, "POST "+api.ChatPath+" HTTP/1.1\r\nHost: "+addr+
		"\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: "...)
	raw = strconv.AppendInt(raw, int64(len(body)), 10)
	raw = append(raw, "\r\nConnection: close\r\n"...)
	for _, h := range extraHeaders {
		raw = append(raw, h+"\r\n"...)
	}
	raw = append(raw, "\r\n"...)
	raw = append(raw, body...)
	return &Request{Addr: addr, Timeout: timeout, raw: raw}
}

// Bytes returns the raw request as it goes on the wire.
func (q *Request) Bytes() []byte { return q.raw }

// Do performs one request and records it into rec (whose Batch and Index the
// caller sets). It never returns early without filling rec.Failure and
// rec.End. Cancelling ctx ends the request as result.Interrupted.
func (q *Request) Do(ctx context.Context, rec *result.Request) {
	rec.Start = clock.Now()
	deadline := clock.ToTime(rec.Start).Add(q.Timeout)
	defer func() { rec.End = clock.Now() }()

	d := net.Dialer{Deadline: deadline}
	conn, err := d.DialContext(ctx, "tcp", q.Addr)
	if err != nil {
		rec.Failure = q.classify(ctx, err, connectFailure(err))
		return
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	conn.SetDeadline(deadline)
	// Cancellation unblocks the Read by moving the deadline to the past.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	if _, err := conn.Write(q.raw); err != nil {
		rec.Failure = q.classify(ctx, err, result.Failure{Kind: result.RecvError, Detail: "send: " + errText(err)})
		return
	}
	rec.Sent = clock.Now()

	if cap(rec.Tokens) == 0 && q.ExpectTokens > 0 {
		rec.Tokens = make([]result.Token, 0, q.ExpectTokens)
	}
	r := reader{rec: rec, received: q.Received}
	defer r.close()
	buf := make([]byte, ReadBufferSize)
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			now := clock.Now()
			if r.feed(buf[:n], now) {
				return
			}
			rec.Reads++
		}
		if err != nil {
			rec.Failure = q.classify(ctx, err, r.endOfStream(err))
			return
		}
	}
}

// classify turns a read/dial error into the failure to record: an
// interruption or a timeout if that is what caused it, else fallback.
func (q *Request) classify(ctx context.Context, err error, fallback result.Failure) result.Failure {
	if ctx.Err() != nil {
		return result.Failure{Kind: result.Interrupted}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
		return result.Failure{Kind: result.Timeout, Detail: strconv.FormatInt(q.Timeout.Milliseconds(), 10)}
	}
	return fallback
}

// connectFailure is the reference's "connect(): <reason>", the reason
// worded like C's strerror.
func connectFailure(err error) result.Failure {
	return result.Failure{Kind: result.Connect, Detail: errText(err)}
}

// errText returns the system error text of err, capitalised like C's
// strerror ("Connection refused"); other errors as they are.
func errText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		s := errno.Error()
		if s != "" && s[0] >= 'a' && s[0] <= 'z' {
			s = string(s[0]-'a'+'A') + s[1:]
		}
		return s
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return dnsErr.Error()
	}
	return err.Error()
}

// reader is the response parser of one request: head, then chunked or raw
// body, then SSE lines, then the chat event scan.
type reader struct {
	rec      *result.Request
	received *atomic.Int64

	head    []byte // head bytes gathered until it is complete
	gotHead bool
	chunked bool
	dechunk wire.ChunkedDecoder
	lines   wire.LineSplitter
	readIdx int32
	now     int64     // arrival time of the Read being processed
	gunzip  *inflater // set when the body is gzip-encoded
}

// feed processes one Read's bytes, all arrived at now. It returns true when
// the request has ended (rec.Failure set).
func (r *reader) feed(p []byte, now int64) bool {
	r.rec.Bytes += int64(len(p))
	defer func() { r.readIdx++ }()
	if !r.gotHead {
		r.head = append(r.head, p...)
		for {
			h, n, err := wire.ParseResponseHead(r.head)
			if errors.Is(err, wire.ErrHeadTooLarge) {
				r.rec.Failure = result.Failure{Kind: result.HeadTooLarge}
				return true
			}
			if err != nil {
				r.rec.Failure = badStatus(r.head)
				return true
			}
			if n == 0 {
				return false
			}
			if h.IsInformational() {
				r.head = r.head[n:]
				continue
			}
			if h.StatusCode < 200 || h.StatusCode > 299 {
				r.rec.Failure = badStatus(r.head)
				return true
			}
			r.gotHead = true
			r.chunked = h.Chunked
			switch enc := h.Header("Content-Encoding"); enc {
			case "", "identity":
			case "gzip", "x-gzip":
				r.gunzip = newInflater(func(p []byte) bool { return r.sse(p, r.now) })
			default:
				r.rec.Failure = result.Failure{Kind: result.BadFraming, Detail: "unsupported Content-Encoding " + strconv.Quote(enc)}
				return true
			}
			p = r.head[n:]
			break
		}
	}
	before := len(r.rec.Tokens)
	ended := r.body(p, now)
	if got := len(r.rec.Tokens) - before; got > 0 && r.received != nil {
		r.received.Add(int64(got))
	}
	return ended
}

func badStatus(head []byte) result.Failure {
	line := head
	for i, c := range line {
		if c == '\r' || c == '\n' {
			line = line[:i]
			break
		}
	}
	if len(line) > statusDetailBytes {
		line = line[:statusDetailBytes]
	}
	return result.Failure{Kind: result.BadStatus, Detail: string(line)}
}

// body de-chunks p if needed and hands the data to the SSE splitter,
// through the gzip decoder when the body is compressed.
func (r *reader) body(p []byte, now int64) bool {
	r.now = now
	if !r.chunked {
		return r.decoded(p, now)
	}
	for len(p) > 0 && !r.dechunk.Done() {
		data, used, err := r.dechunk.Next(p)
		if errors.Is(err, io.EOF) {
			return false // the last chunk: [DONE] never came; the close will tell
		}
		if err != nil {
			r.rec.Failure = result.Failure{Kind: result.BadFraming, Detail: err.Error()}
			return true
		}
		p = p[used:]
		if len(data) > 0 && r.decoded(data, now) {
			return true
		}
	}
	return false
}

// decoded passes body bytes to the SSE splitter, decompressing them first
// when the body is gzip-encoded.
func (r *reader) decoded(data []byte, now int64) bool {
	if r.gunzip == nil {
		return r.sse(data, now)
	}
	if r.gunzip.feed(data) {
		return false
	}
	if errors.Is(r.gunzip.err, errSinkEnded) {
		return true // the sink saw [DONE] or a failure
	}
	r.rec.Failure = result.Failure{Kind: result.BadFraming, Detail: "gzip: " + r.gunzip.err.Error()}
	return true
}

// close releases what the reader holds (the gzip decoder's goroutine).
func (r *reader) close() {
	if r.gunzip != nil {
		r.gunzip.close()
	}
}

// sse splits data into lines and inspects every data: payload.
func (r *reader) sse(data []byte, now int64) bool {
	r.lines.Feed(data)
	for {
		line, ok := r.lines.Next()
		if !ok {
			break
		}
		payload, ok := wire.DataPayload(line)
		if !ok {
			continue
		}
		ev := api.ScanChatEvent(payload)
		switch {
		case ev.Done:
			if len(r.rec.Tokens) == 0 {
				r.rec.Failure = result.Failure{Kind: result.NoTokens}
			}
			return true
		case ev.Content && ev.PiTs != 0:
			r.rec.Tokens = append(r.rec.Tokens, result.Token{Emitted: ev.PiTs, Arrived: now, Read: r.readIdx})
		}
	}
	if err := r.lines.Err(); err != nil {
		r.rec.Failure = result.Failure{Kind: result.BadFraming, Detail: err.Error()}
		return true
	}
	return false
}

// endOfStream classifies a Read error that arrived before [DONE].
func (r *reader) endOfStream(err error) result.Failure {
	if !r.gotHead {
		if errors.Is(err, io.EOF) {
			return result.Failure{Kind: result.ShortResponse}
		}
		return result.Failure{Kind: result.RecvError, Detail: errText(err)}
	}
	if errors.Is(err, io.EOF) {
		return result.Failure{Kind: result.ClosedBeforeDone}
	}
	return result.Failure{Kind: result.RecvError, Detail: errText(err)}
}
