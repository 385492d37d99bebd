// Package client sends one streaming request to the gateway under test and
// turns what comes back into a result.Request: when the request was sent,
// and for every content token which token it is, when the socket Read that
// delivered its last byte returned, and when it was emitted.
//
// It speaks raw HTTP/1.1 over TCP, the way the reference tool does, so that
// nothing between the socket and the timestamp buffers or reorders bytes: a
// Read returns, its arrival time is taken at once, and every token completed
// by that Read shares it.
//
// Tokens are recognised by their content, not by their framing: the client
// knows the text of every token (api.AppendToken), so the bytes of content
// received so far tell which tokens have arrived, however a gateway merged,
// split, re-serialised or translated the events. A token's emission time is
// the pi_ts of the event that carried it alone, when there is one; otherwise
// it comes from the in-process server's emission registry, by request id and
// token index, once the request has ended. At the end the received text is
// checked against the emitted one (missing, duplicated, reordered or
// corrupted tokens, a missing finish or usage), and a mismatch fails the
// request as result.Integrity.
package client

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/result"
)

// ReadBufferSize is the size of the buffer each request reads into.
const ReadBufferSize = 4 << 10

// statusDetailBytes is how much of a bad response head a failure quotes
// (SPEC §4: "status <first 32 bytes of the head>").
const statusDetailBytes = 32

// Options describe the requests of a batch.
type Options struct {
	Dialect api.Dialect
	Addr    string // host:port to dial
	Host    string // Host header; "" means Addr
	Path    string // request path; "" means Dialect.Path()
	Model   string // model to ask for; "" means api.Model

	// Tokens >= 0 asks for that many tokens (pi_tokens and the hints);
	// < 0 leaves the number to the server.
	Tokens int
	// ExpectTokens is the number of tokens the response should carry: the
	// expected text for content correlation and the integrity checks. <= 0
	// means unknown: the content is still checked token by token, but not
	// its length.
	ExpectTokens int
	// IncludeUsage asks Chat and Completions streams for their usage chunk
	// (stream_options.include_usage), and fails a request as an integrity
	// error when no usage arrives — in every dialect (Responses and
	// Anthropic always send it).
	IncludeUsage bool
	// ExtraHeaders are "Name: value" lines sent after the standard ones.
	ExtraHeaders []string
	// Timeout bounds each request, from its connect attempt.
	Timeout time.Duration

	// Registry holds the in-process server's emission times, by request id.
	// nil: only pi_ts gives emission times.
	Registry *emission.Registry
	// IDPrefix names the requests: request ids are IDPrefix-<batch>-<index>
	// (rec.Batch, rec.Index), sent as hints, and the key into Registry.
	// "" sends no id (the server then records no emission times for it).
	IDPrefix string

	// Received, when set, counts the content tokens received (for the
	// progress line).
	Received *atomic.Int64
}

// Request sends the requests of a batch. Its Options may be changed until
// the first Do; Do only reads them, and may run concurrently.
type Request struct {
	Options
}

// New returns the Request for o.
func New(o Options) *Request { return &Request{Options: o} }

// NewChatRequest is the reference's request (SPEC §4): Chat Completions to
// addr, tokens >= 0 asking for that many tokens, each extra header
// ("Name: value") sent after the standard ones. Set ExpectTokens to check
// the content's length.
func NewChatRequest(addr string, tokens int, timeout time.Duration, extraHeaders ...string) *Request {
	return New(Options{Dialect: api.Chat, Addr: addr, Tokens: tokens, Timeout: timeout, ExtraHeaders: extraHeaders})
}

// ID returns the request id of request index of batch, "" when no id is to
// be sent (no IDPrefix, or the result would not be a valid id).
func (q *Request) ID(batch string, index int) string {
	if q.IDPrefix == "" {
		return ""
	}
	id := q.IDPrefix + "-" + batch + "-" + strconv.Itoa(index)
	if !api.ValidID(id) {
		return ""
	}
	return id
}

// hints returns what the request tells the server besides its body's
// fixed fields.
func (q *Request) hints(id string) api.Hints {
	h := api.Hints{ID: id}
	if q.Tokens >= 0 {
		n := int64(q.Tokens)
		h.Tokens = &n
	}
	return h
}

// AppendHTTP appends the request with id id ("" for none) as it goes on the
// wire: head and body.
//
//	POST <path> HTTP/1.1
//	Host: <host>
//	Content-Type: application/json
//	Accept: text/event-stream
//	Content-Length: <n>
//	Connection: close
//	X-SSE-Latency: <hints>          (when there are hints)
//	anthropic-version: 2023-06-01   (Anthropic)
//	<extra headers>
func (q *Request) AppendHTTP(dst []byte, id string) []byte {
	h := q.hints(id)
	body := api.AppendRequestBody(make([]byte, 0, 256), q.Dialect, api.RequestBody{Model: q.Model, Hints: h, IncludeUsage: q.IncludeUsage})
	path, host := q.Path, q.Host
	if path == "" {
		path = q.Dialect.Path()
	}
	if host == "" {
		host = q.Addr
	}
	dst = append(dst, "POST "...)
	dst = append(dst, path...)
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = append(dst, host...)
	dst = append(dst, "\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: "...)
	dst = strconv.AppendInt(dst, int64(len(body)), 10)
	dst = append(dst, "\r\nConnection: close\r\n"...)
	if !h.Empty() {
		dst = append(dst, api.HintHeader+": "...)
		dst = append(dst, h.HeaderValue()...)
		dst = append(dst, "\r\n"...)
	}
	if q.Dialect == api.Anthropic {
		dst = append(dst, "anthropic-version: "+anthropicVersion+"\r\n"...)
	}
	for _, x := range q.ExtraHeaders {
		dst = append(dst, x...)
		dst = append(dst, "\r\n"...)
	}
	dst = append(dst, "\r\n"...)
	return append(dst, body...)
}

// anthropicVersion is the API version an Anthropic request names (the
// Messages API requires the header; gateways may check it).
const anthropicVersion = "2023-06-01"

// Do performs one request and records it into rec, whose Batch and Index
// the caller sets. It never returns early without filling rec.Failure and
// rec.End. Cancelling ctx ends the request as result.Interrupted.
func (q *Request) Do(ctx context.Context, rec *result.Request) {
	rec.ID = q.ID(rec.Batch, rec.Index)
	raw := q.AppendHTTP(make([]byte, 0, 512), rec.ID)
	// Whatever the outcome, the tokens that arrived without a usable pi_ts
	// get their emission times from the registry (and the entry is freed),
	// once the request has ended.
	defer q.fillEmitted(rec)
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

	if _, err := conn.Write(raw); err != nil {
		rec.Failure = q.classify(ctx, err, result.Failure{Kind: result.RecvError, Detail: "send: " + errText(err)})
		return
	}
	rec.Sent = clock.Now()

	if cap(rec.Tokens) == 0 && q.ExpectTokens > 0 {
		rec.Tokens = make([]result.Token, 0, q.ExpectTokens)
	}
	r := newReader(rec, &q.Options)
	defer r.close()
	buf := make([]byte, ReadBufferSize)
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			now := clock.Now()
			rec.Reads++
			if r.feed(buf[:n], now) {
				return
			}
		}
		if err != nil {
			rec.Failure = q.classify(ctx, err, r.endOfStream(err))
			return
		}
	}
}

// fillEmitted gives the tokens that have no emission time yet the one the
// server recorded for their index, and counts them as measured by content.
func (q *Request) fillEmitted(rec *result.Request) {
	if rec.ID == "" {
		return
	}
	times := q.Registry.Take(rec.ID)
	if times == nil {
		return
	}
	for i := range rec.Tokens {
		t := &rec.Tokens[i]
		if t.Emitted != 0 {
			continue
		}
		if ts := times.At(int(t.Index)); ts != 0 {
			t.Emitted = ts
			rec.ByContent++
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
