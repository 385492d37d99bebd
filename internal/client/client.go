// Package client sends one streaming request to the gateway under test and
// turns what comes back into a result.Request: when the request was sent,
// and for every content token which token it is, when the socket Read that
// delivered its last byte returned, and when it was emitted.
//
// It speaks raw HTTP/1.1 over TCP (or over TLS, for https targets), the way
// the reference tool does, so that nothing between the socket and the
// timestamp buffers or reorders bytes: a Read returns, its arrival time is
// taken at once, and every token completed by that Read shares it. HTTP/2
// (h2 over TLS by ALPN, h2c with prior knowledge) goes through
// golang.org/x/net/http2, one connection per Session; there the timestamp is
// taken where the response body's Read returns. HTTP/3 (Options.HTTP3)
// goes through quic-go's http3 client, one QUIC connection per Session, the
// timestamp taken where the request stream's Read returns (h3.go).
//
// A Session is one concurrency slot: with Options.KeepAlive its requests
// share one connection, which it keeps only when a response ended cleanly at
// its framing end (see Session.Do for the drain and reuse rules).
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
//
// An answer may stream reasoning and one tool call before its text
// (Options.Reasoning, Options.ToolCall). Each phase has its own words
// (api.AppendPhaseToken) and is matched on its own — the tool call's
// arguments as the exact JSON object the server emitted — so that a phase
// measured by content keeps its tokens' indexes, laid out per phase as
// result.Request documents, and a gateway that drops, merges, reorders or
// converts a phase shows in the record: the first arrival of each phase,
// the heartbeats seen, the longest silence. A reasoning or tool-call event
// whose text cannot be read fails the request, quoted.
//
// A hostile gateway cannot crash or hang a request: whatever comes back
// ends it with a failure text, in bounded memory and time. A response that
// is no HTTP fails as soon as its first bytes or its first line show it;
// interim 1xx heads are skipped (within the bound of one head); a 3xx with
// a Location is reported as a redirect, not followed; another non-2xx
// response quotes the start of its body after the reference's status
// text; the body's framing (chunked, Content-Length) is followed to its
// end; lines longer than wire.MaxLineBytes, gzip-decoded or not, fail the
// request; Options.IdleTimeout ends a silent one, Options.Timeout any one.
// Bytes a peer sent reach a failure text only escaped: printable UTF-8,
// without control bytes.
package client

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/http2"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/evloop"
	"github.com/sse-latency/sse-latency/internal/result"
)

// ReadBufferSize is the size of the buffer each request reads into.
const ReadBufferSize = 4 << 10

// statusDetailBytes is how much of a bad response head a failure quotes
// (SPEC §4: "status <first 32 bytes of the head>").
const statusDetailBytes = 32

// Drain bounds: after the terminal event of a kept-alive response, the
// client reads on to the end of the message's framing (the last chunk and
// its trailers, or the Content-Length) for at most DefaultDrainTimeout and
// DrainBytes; a message that does not end within them costs its
// connection.
const (
	DefaultDrainTimeout = 250 * time.Millisecond
	DrainBytes          = 64 << 10
)

// Protocols as rec.Proto names them.
const (
	ProtoHTTP1 = "HTTP/1.1"
	ProtoH2    = "h2"  // HTTP/2 over TLS, negotiated by ALPN
	ProtoH2C   = "h2c" // HTTP/2 over TCP with prior knowledge
)

// Options describe the requests of a batch.
type Options struct {
	Dialect api.Dialect
	Addr    string // host:port to dial
	Host    string // Host header (h2: :authority); "" means Addr
	Path    string // request path, query allowed; "" means Dialect.Path()
	Model   string // model to ask for; "" means api.Model

	// Scheme is "http" (or "") or "https". https without TLS uses a
	// default configuration whose ServerName is the host of Host, else of
	// Addr.
	Scheme string
	// TLS, when set, makes the client dial TCP then run a TLS handshake
	// (timed: rec.TLSDone) and read on the TLS connection. The client
	// clones it and sets NextProtos (ALPN): "http/1.1", or "h2" first with
	// HTTP2; an empty ServerName becomes the host of Host, else of Addr.
	TLS *tls.Config
	// HTTP2 offers h2 in ALPN and speaks HTTP/2 when the server picks it
	// (rec.Proto "h2"; else HTTP/1.1). Needs TLS (or Scheme https).
	HTTP2 bool
	// H2C speaks HTTP/2 with prior knowledge on plain TCP (rec.Proto
	// "h2c"). Ignored over TLS.
	H2C bool
	// HTTP3 speaks HTTP/3 over QUIC (UDP) to Addr, TLS as for https
	// (NextProtos "h3"), one QUIC connection per Session (or per group of
	// them: StreamsPerConn), each request a stream on it (rec.Proto
	// "h3"); not with HTTP2, H2C or WebSocket.
	HTTP3 bool
	// h3HandshakeWait, when above 0, replaces h3HandshakeIdle as the
	// bound of a QUIC handshake that hears nothing from the server: tests
	// lower it (no flag sets it).
	h3HandshakeWait time.Duration
	// StreamsPerConn, above 1 with KeepAlive and HTTP/2 (H2C, or HTTP2
	// once ALPN chose h2), makes the Sessions share connections: the k-th
	// Session of the Request (NewSession) joins group k/StreamsPerConn,
	// whose Sessions send their requests as concurrent streams on one
	// connection, opened by the first that needs it. A Session that finds
	// it unable to take another stream (the peer's
	// SETTINGS_MAX_CONCURRENT_STREAMS, a GOAWAY, closed) opens another for
	// the group. With HTTP3 (and KeepAlive) a group shares one QUIC
	// connection, a new one after a GOAWAY or a close; a stream beyond the
	// peer's MAX_STREAMS waits within its request's time (h3group.go).
	// HTTP/2 on every engine: on the event loops a group's Sessions and
	// connections are one loop's.
	StreamsPerConn int
	// KeepAlive keeps a Session's connection for its next request: the
	// request omits "Connection: close", and after the terminal event the
	// response is drained to its framing end (see Session.Do).
	KeepAlive bool
	// DrainTimeout bounds that drain, and the wait for the body of a
	// non-2xx response that its failure text quotes; 0 means
	// DefaultDrainTimeout.
	DrainTimeout time.Duration
	// APIKey, when set, is sent as "Authorization: Bearer <key>", or as
	// "x-api-key: <key>" for api.Anthropic. It never appears in an error
	// text (see Redact for printing headers).
	APIKey string

	// Tokens >= 0 asks for that many tokens (pi_tokens and the hints);
	// < 0 leaves the number to the server.
	Tokens int
	// ExpectTokens is the number of tokens the response should carry: the
	// expected text for content correlation and the integrity checks. <= 0
	// means unknown: the content is still checked token by token, but not
	// its length.
	ExpectTokens int
	// Reasoning and ToolCall are the reasoning tokens and tool-call
	// argument tokens the response should carry before its text: asked for
	// with the pi_reasoning_tokens and pi_tool_call_tokens hints when > 0,
	// and checked like the text (none may arrive when 0). A response
	// without any reasoning is not a failure (gateways drop it); the record
	// shows it. Completions has neither.
	Reasoning int
	ToolCall  int
	// ThinkMs and DelayMs, when set, ask the server for that think time and
	// delay between tokens (ms) with the pi_think_ms and pi_delay_ms hints:
	// a server on another host does not share this process's settings.
	ThinkMs, DelayMs *float64
	// HeartbeatMs > 0 asks the server for a heartbeat after every
	// HeartbeatMs of silence (the pi_heartbeat_ms hint); 0 leaves it to
	// the server.
	HeartbeatMs float64
	// IncludeUsage asks Chat and Completions streams for their usage chunk
	// (stream_options.include_usage), and fails a request as an integrity
	// error when no usage arrives — in every dialect (Responses and
	// Anthropic always send it).
	IncludeUsage bool
	// PromptBytes pads the prompt to that many bytes (--prompt-bytes,
	// api.RequestBody.PromptBytes); 0 sends the reference's short prompt.
	PromptBytes int
	// Blocks, when set, lays the prompt of PromptBytes out in blocks of
	// BlockBytes, block j's words chosen by Blocks[j]
	// (api.AppendBlockPrompt): a trace's prefix blocks.
	Blocks     []uint64
	BlockBytes int
	// Cached, when set, asks the server to report that many prompt
	// tokens as read from its cache (api.NoCacheFigure: no figure), in
	// place of its simulated cache's (the pi_cached_tokens hint).
	Cached *int64
	// Faults ask the server for upstream faults (api.Faults), sent with
	// the hints; their Text also sets the words the text is matched
	// against (the UTF-8 ones for api.TextUTF8).
	Faults api.Faults
	// ExtraHeaders are "Name: value" lines (-H) sent after the standard
	// ones; HTTP/2 sends them as fields, a "Host" one as :authority.
	ExtraHeaders []string
	// Timeout bounds each request, from its start (its connect attempt, or
	// its reuse of a kept connection), drain included.
	Timeout time.Duration
	// IdleTimeout, when > 0, ends a request that receives no byte for that
	// long as result.IdleTimeout ("idle timeout after <n>ms"): from the
	// request's write to the response head, between the reads of the
	// body, and in the drain (which then only costs the connection).
	// Connect and the TLS handshake are bounded by Timeout alone.
	IdleTimeout time.Duration

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

	// Engine is the I/O engine: "" or EngineAuto, EngineEpoll,
	// EngineGoroutine (see Engine and ResolveEngine).
	Engine Engine

	// WebSocket speaks the Responses API's WebSocket mode (api.Responses
	// only; not with HTTP2 or H2C): a GET on Path upgrades the connection,
	// then each request is a response.create message and its events come
	// back one per message (see ws.go). With KeepAlive the next request
	// sends its response.create on the same connection.
	WebSocket bool
	// WSPing is how long a WebSocket stays silent before the client pings
	// it (idle proxies, Cloudflare's 100 s, close silent connections);
	// 0 means DefaultWSPing, < 0 never. WSPongTimeout bounds the wait for
	// the pong (0: DefaultWSPongTimeout); without one the request fails.
	WSPing        time.Duration
	WSPongTimeout time.Duration

	// Loops, when set, is the set of event loops the requests of the
	// epoll and uring engines run on (its engine is theirs; a test's own
	// set, which it stops); nil: the process's loops of Engine.
	Loops *evloop.Set

	// Clock is the clock every timestamp of a request is read from; nil
	// means clock.Real. The event-loop engines' timeouts run on the real
	// clock whatever it is (internal/evloop).
	Clock clock.Clock

	hooks *h2Hooks // the tests' knobs of the groups' joiners (h2group.go); nil
}

// clk is the clock of the requests' timestamps: Clock, or clock.Real.
func (o *Options) clk() clock.Clock { return clock.Or(o.Clock) }

// Request sends the requests of a batch. Its Options may be changed until
// the first Do or NewSession; Do only reads them, and may run concurrently.
// A copy of a Request shares its connection counter.
type Request struct {
	Options
	shared *shared // nil for a Request not made by New: sharedDefault
}

// shared is what the sessions of one Request (and its copies) share.
//
// HTTP/2 uses x/net's Transport.NewClientConn on a connection the session
// dialled itself, so that connect and TLS are timed like HTTP/1.1's and a
// session owns exactly one connection. x/net marks it deprecated in favour
// of net/http's, whose client connections are pooled by the transport
// instead; moving is future work.
type shared struct {
	conns atomic.Int64 // connections opened so far: the last ConnID
	//lint:ignore SA1019 see the type's comment
	h2 *http2.Transport // makes the HTTP/2 client connections

	// The engine the requests use, resolved at the first request (not
	// cached in sharedDefault, which Requests of any Options share).
	engineOnce sync.Once
	engine     Engine
	loop       loopShared // what the event loops need of the Request, resolved once
	// The groups of sessions sharing HTTP/2 connections
	// (Options.StreamsPerConn), by group number; sessions counts the
	// sessions made.
	sessions atomic.Int64
	groupsMu sync.Mutex
	groups   map[int64]*h2Group
	h3groups map[int64]*h3Group // the same for HTTP/3 (h3group.go)

	// tlsFallback, once set, is why a TLS handshake's outcome cannot run
	// on the event loops (TLS 1.2): the Request's requests use the
	// goroutine engine from then on.
	tlsFallback atomic.Pointer[string]
}

// sharedDefault serves the Requests not made by New.
var sharedDefault = newShared()

func newShared() *shared {
	//lint:ignore SA1019 see shared
	return &shared{h2: &http2.Transport{AllowHTTP: true, DisableCompression: true}}
}

// New returns the Request for o.
func New(o Options) *Request { return &Request{Options: o, shared: newShared()} }

func (q *Request) state() *shared {
	if q.shared == nil {
		return sharedDefault
	}
	return q.shared
}

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
	h := api.Hints{ID: id, ThinkMs: q.ThinkMs, DelayMs: q.DelayMs, Faults: q.Faults, Cached: q.Cached}
	if q.Tokens >= 0 {
		n := int64(q.Tokens)
		h.Tokens = &n
	}
	if q.Reasoning > 0 {
		n := int64(q.Reasoning)
		h.Reasoning = &n
	}
	if q.ToolCall > 0 {
		n := int64(q.ToolCall)
		h.ToolCall = &n
	}
	if q.HeartbeatMs > 0 {
		ms := q.HeartbeatMs
		h.HeartbeatMs = &ms
	}
	return h
}

// expectedTokens is the number of tokens a response should carry, all
// phases (0: unknown), the capacity of the record's tokens.
func (q *Request) expectedTokens() int {
	if q.ExpectTokens <= 0 {
		return 0
	}
	return q.ExpectTokens + max(q.Reasoning, 0) + max(q.ToolCall, 0)
}

// body returns the request body for hints h.
func (q *Request) body(h api.Hints) []byte {
	return api.AppendRequestBody(make([]byte, 0, 256+min(max(q.PromptBytes, 0), api.MaxPromptBytes)), q.Dialect,
		q.requestBody(h))
}

// requestBody describes the body of a request with hints h.
func (q *Request) requestBody(h api.Hints) api.RequestBody {
	return api.RequestBody{Model: q.Model, Hints: h, IncludeUsage: q.IncludeUsage, PromptBytes: q.PromptBytes,
		Blocks: q.Blocks, BlockBytes: q.BlockBytes}
}

// shaped returns q with the size of shape sh: its tokens asked for and
// expected, its prompt's bytes and blocks. A copy per request, made
// before it starts (never on the per-token path).
func (q *Request) shaped(sh *result.Shape) *Request {
	c := *q
	c.Tokens, c.ExpectTokens = sh.Tokens, sh.Tokens
	c.PromptBytes, c.Blocks, c.BlockBytes = sh.PromptBytes, sh.Blocks, sh.BlockBytes
	return &c
}

// prepare readies the session for rec: its own size when rec has a
// Shape (else the session's Request's), recorded in rec for the breakdown
// by size.
func (s *Session) prepare(rec *result.Request) {
	if s.base == nil {
		s.base = s.q
	}
	s.q = s.base
	if rec.Shape != nil {
		s.q = s.base.shaped(rec.Shape)
	}
	rec.PromptBytes, rec.AskedTokens = s.q.PromptBytes, max(s.q.ExpectTokens, 0)
	if rec.PromptBytes <= len(api.ChatPrompt) {
		rec.PromptBytes = len(api.ChatPrompt)
	}
}

// target returns the request path and the Host header: Host, else an
// extra "Host:" header's value, else Addr.
func (q *Request) target() (path, host string) {
	path, host = q.Path, q.Host
	if path == "" {
		path = q.Dialect.Path()
	}
	if host == "" {
		host = q.extraValue("Host")
	}
	if host == "" {
		host = q.Addr
	}
	return path, host
}

// extraValue returns the value of the extra header named name (any
// case), "" when none names it.
func (q *Request) extraValue(name string) string {
	for _, x := range q.ExtraHeaders {
		if n, v, ok := strings.Cut(x, ":"); ok && strings.EqualFold(strings.TrimSpace(n), name) {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// replaced are the standard header lines an extra header of the same
// name replaces (curl's habit): the extra one is sent in their place.
var replaced = []string{"Host", "Content-Type", "Accept"}

// replacedBy reports whether an extra header replaces the standard line
// name.
func (q *Request) replacedBy(name string) bool {
	for _, x := range q.ExtraHeaders {
		if n, _, ok := strings.Cut(x, ":"); ok && strings.EqualFold(strings.TrimSpace(n), name) {
			return true
		}
	}
	return false
}

// authHeader returns the header that carries the API key ("" without
// one): its name and value.
func (q *Request) authHeader() (name, value string) {
	switch {
	case q.APIKey == "":
		return "", ""
	case q.Dialect == api.Anthropic:
		return "x-api-key", q.APIKey
	}
	return "Authorization", "Bearer " + q.APIKey
}

// AppendHTTP appends the request with id id ("" for none) as it goes on the
// wire: head and body.
//
//	POST <path> HTTP/1.1
//	Host: <host>
//	Content-Type: application/json
//	Accept: text/event-stream
//	Content-Length: <n>
//	Connection: close               (unless KeepAlive)
//	X-SSE-Latency: <hints>          (when there are hints)
//	anthropic-version: 2023-06-01   (Anthropic)
//	Authorization: Bearer <key>     (APIKey; x-api-key: <key> for Anthropic)
//	<extra headers>
//
// An extra header named Host, Content-Type or Accept replaces the
// standard line (Host: the value of Host, else of that header, else
// Addr).
func (q *Request) AppendHTTP(dst []byte, id string) []byte {
	h := q.hints(id)
	body := q.body(h)
	path, host := q.target()
	dst = append(dst, "POST "...)
	dst = append(dst, path...)
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = append(dst, host...)
	if !q.replacedBy("Content-Type") {
		dst = append(dst, "\r\nContent-Type: application/json"...)
	}
	if !q.replacedBy("Accept") {
		dst = append(dst, "\r\nAccept: text/event-stream"...)
	}
	dst = append(dst, "\r\nContent-Length: "...)
	dst = strconv.AppendInt(dst, int64(len(body)), 10)
	if q.KeepAlive {
		dst = append(dst, "\r\n"...)
	} else {
		dst = append(dst, "\r\nConnection: close\r\n"...)
	}
	dst = q.appendHeaders(dst, h)
	dst = append(dst, "\r\n"...)
	return append(dst, body...)
}

// appendHeaders appends the header lines every request ends with: the
// hints h (when there are any), Anthropic's version, the API key, the
// extra headers.
func (q *Request) appendHeaders(dst []byte, h api.Hints) []byte {
	if !h.Empty() {
		dst = append(dst, api.HintHeader+": "...)
		dst = append(dst, h.HeaderValue()...)
		dst = append(dst, "\r\n"...)
	}
	if q.Dialect == api.Anthropic {
		dst = append(dst, "anthropic-version: "+anthropicVersion+"\r\n"...)
	}
	if name, value := q.authHeader(); name != "" {
		dst = append(dst, name...)
		dst = append(dst, ": "...)
		dst = append(dst, value...)
		dst = append(dst, "\r\n"...)
	}
	for _, x := range q.ExtraHeaders {
		if n, _, _ := strings.Cut(x, ":"); strings.EqualFold(strings.TrimSpace(n), "Host") {
			continue // the Host line is target's
		}
		dst = append(dst, x...)
		dst = append(dst, "\r\n"...)
	}
	return dst
}

// anthropicVersion is the API version an Anthropic request names (the
// Messages API requires the header; gateways may check it).
const anthropicVersion = "2023-06-01"

// Do performs one request on a connection of its own (a one-shot Session)
// and records it into rec, whose Batch and Index the caller sets. It never
// returns early without filling rec.Failure and rec.End. Cancelling ctx
// ends the request as result.Interrupted.
func (q *Request) Do(ctx context.Context, rec *result.Request) {
	s := q.newSession()
	s.oneShot = true
	defer s.Close()
	s.Do(ctx, rec)
}

// fillEmitted takes the in-process registry's record of rec's request id
// and completes rec with it (FillEmitted).
func (q *Request) fillEmitted(rec *result.Request) {
	if rec.ID == "" {
		return
	}
	if times := q.Registry.Take(rec.ID); times != nil {
		FillEmitted(rec, ServerTimes{
			Arrived: times.Arrived(), Start: times.StreamStart(), ThinkEnd: times.ThinkEnd(),
			Heartbeats: times.Heartbeats(), EmittedAt: times.At,
		})
		if u, ok := times.Usage(); ok {
			CompareUsage(rec, q.Dialect, q.IncludeUsage, u)
		}
	}
}

// ServerTimes is what the server recorded of one request, on this
// process's clock (0: unknown): when it had read the whole request, when
// it began the stream and when it planned its first token after the think
// (0: none), how many heartbeats it wrote, and when it wrote each token
// (EmittedAt, by token index).
type ServerTimes struct {
	Arrived, Start, ThinkEnd int64
	Heartbeats               int
	EmittedAt                func(k int) int64
}

// FillEmitted completes rec with the server's record of its request: the
// tokens that have no emission time yet get the one st.EmittedAt returns
// for their index (0: unknown), and are counted as measured by content;
// rec's ServerArrived, ServerStart, ServerThinkEnd and ServerHeartbeats
// become st's, and rec.ServerRecord true.
func FillEmitted(rec *result.Request, st ServerTimes) {
	rec.ServerArrived = st.Arrived
	rec.ServerHeartbeats, rec.ServerRecord = st.Heartbeats, true
	rec.ServerStart, rec.ServerThinkEnd = st.Start, st.ThinkEnd
	at := st.EmittedAt
	for i := range rec.Tokens {
		t := &rec.Tokens[i]
		if t.Emitted != 0 {
			continue
		}
		if ts := at(int(rec.TokenIndex(i))); ts != 0 {
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
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return result.Failure{Kind: result.Timeout, Detail: strconv.FormatInt(q.Timeout.Milliseconds(), 10)}
	}
	return fallback
}

// connectFailure is the reference's "connect(): <reason>", the reason
// worded like C's strerror, with the system error behind it.
func connectFailure(err error) result.Failure {
	return sysFailure(result.Connect, "", err)
}

// sysFailure is the failure of kind k that err caused: its detail prefix
// followed by err's text (errText), its Errno the system error behind err
// (0 when none is).
func sysFailure(k result.Kind, prefix string, err error) result.Failure {
	return result.Failure{Kind: k, Detail: prefix + errText(err), Errno: errnoOf(err)}
}

// errnoOf returns the system error behind err, 0 when there is none.
func errnoOf(err error) syscall.Errno {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return 0
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
