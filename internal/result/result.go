// Package result holds the raw facts of one streamed request: when it was
// sent, when each token was emitted and when it arrived, and how it ended.
// Every statistic in the tool is derived from these records; nothing here
// computes one.
package result

import (
	"iter"
	"strconv"
	"syscall"
)

// Kind classifies how a request ended. The zero value is OK.
type Kind int

// The ways a request can end. The texts of the failure kinds are those of the
// reference tool (SPEC §4), reproduced by Failure.Error.
const (
	OK               Kind = iota // [DONE] arrived after at least one token
	NoTokens                     // "no content tokens received"
	ClosedBeforeDone             // "connection closed before [DONE]" (Go tool: "before <Detail>" for a dialect whose stream ends otherwise)
	BadStatus                    // "status <first bytes of the head>" (Go tool: then ": <start of the body>" when it is text)
	ShortResponse                // "short response"
	HeadTooLarge                 // "response headers too large"
	Timeout                      // "timeout after <w>ms"
	Connect                      // "connect(): <reason>"
	RecvError                    // "recv error"
	BadFraming                   // "malformed response: <detail>" (Go tool: the reference does not check)
	Interrupted                  // "interrupted" (Go tool: the run was stopped by a signal)
	Integrity                    // "integrity: <detail>" (Go tool: the content differs from what was emitted)
	StreamError                  // "stream error: <detail>" (Go tool: the stream ended with an error event)
	IdleTimeout                  // "idle timeout after <n>ms" (Go tool: no byte arrived for --idle-timeout)
	Redirect                     // "redirect <code> to <Location>" (Go tool: a 3xx, reported, not followed)
)

var kindNames = [...]string{
	OK:               "ok",
	NoTokens:         "no_tokens",
	ClosedBeforeDone: "closed_before_done",
	BadStatus:        "bad_status",
	ShortResponse:    "short_response",
	HeadTooLarge:     "head_too_large",
	Timeout:          "timeout",
	Connect:          "connect",
	RecvError:        "recv_error",
	BadFraming:       "bad_framing",
	Interrupted:      "interrupted",
	Integrity:        "integrity",
	StreamError:      "stream_error",
	IdleTimeout:      "idle_timeout",
	Redirect:         "redirect",
}

// String returns a short snake_case name for the kind, suitable as a key in
// machine-readable reports.
func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// ParseKind returns the kind whose String is s ("timeout", "integrity", …),
// as machine-readable reports name it; false for a name of no kind.
func ParseKind(s string) (Kind, bool) {
	for k, name := range kindNames {
		if name == s {
			return Kind(k), true
		}
	}
	return 0, false
}

// Failure says why a request did not end OK. Detail completes the text for
// the kinds that carry one (the status line, the timeout, the connect reason,
// the terminal event a stream lacked, what an integrity check found, the
// idle timeout, a redirect's "<code> to <Location>").
//
// Errno is the system error that ended the request, when one did
// (ECONNREFUSED from a connect, ECONNRESET from a read, EMFILE when the
// process ran out of descriptors); 0 otherwise. It is a raw fact beside
// the text, which words it as the reference does ("Connection refused"):
// what the failure summary groups by (package failures), never printed.
type Failure struct {
	Kind   Kind
	Detail string
	Errno  syscall.Errno
}

// Error returns the failure text exactly as the reference tool prints it
// after "FAILED: ".
func (f Failure) Error() string {
	switch f.Kind {
	case OK:
		return "ok"
	case NoTokens:
		return "no content tokens received"
	case ClosedBeforeDone:
		if f.Detail != "" { // the terminal event of a dialect without [DONE]
			return "connection closed before " + f.Detail
		}
		return "connection closed before [DONE]"
	case BadStatus:
		return "status " + f.Detail
	case ShortResponse:
		return "short response"
	case HeadTooLarge:
		return "response headers too large"
	case Timeout:
		return "timeout after " + f.Detail + "ms"
	case Connect:
		return "connect(): " + f.Detail
	case RecvError:
		if f.Detail != "" {
			return "recv error: " + f.Detail
		}
		return "recv error"
	case BadFraming:
		return "malformed response: " + f.Detail
	case Interrupted:
		return "interrupted"
	case Integrity:
		return "integrity: " + f.Detail
	case StreamError:
		return "stream error: " + f.Detail
	case IdleTimeout:
		return "idle timeout after " + f.Detail + "ms"
	case Redirect:
		return "redirect " + f.Detail
	}
	return f.Kind.String()
}

// Token is one content token as the client saw it. Times are nanoseconds on
// the process clock (see package clock). Its index in the stream and the
// Read that delivered it are the record's: Request.TokenIndex and
// Request.TokenRead (thousands of streams in flight hold 200 tokens each:
// 16 bytes a token instead of 24).
type Token struct {
	Emitted int64 // when the server wrote it: its pi_ts, or from the emission registry; 0 if unknown
	Arrived int64 // when the Read that delivered its last byte returned
}

// TokenRun says which index and Read the tokens from position From on have,
// up to the next run: Tokens[i] is token Index+(i-From) of the stream
// (0-based, all phases: see Request.Reasoning), delivered by Read
// Read+Step*(i-From) of the response (0-based) — Step 0 when the run's
// tokens came in one Read, 1 when each came in the Read after the last
// one's. A stream read one token per Read has a run per phase; one whose
// gateway merges tokens, a run per Read that delivered several.
type TokenRun struct {
	From, Index, Read, Step int32
}

// AppendTokens appends n tokens, the stream's tokens index, index+1, …, all
// delivered by Read read, which returned at arrived, with no emission time.
func (r *Request) AppendTokens(n int, index, read int32, arrived int64) {
	for j := range int32(n) {
		i := int32(len(r.Tokens))
		r.Tokens = append(r.Tokens, Token{Arrived: arrived})
		r.extendRuns(i, index+j, read)
	}
}

// extendRuns accounts for token i, token index of the stream, delivered by
// Read read: it continues the last run, or starts one.
func (r *Request) extendRuns(i, index, read int32) {
	if n := len(r.TokenRuns); n > 0 {
		last := &r.TokenRuns[n-1]
		if k := i - last.From; index == last.Index+k {
			switch {
			case k == 1 && read == last.Read+1: // the second token fixes the step
				last.Step = 1
				return
			case read == last.Read+last.Step*k:
				return
			}
		}
	}
	r.TokenRuns = append(r.TokenRuns, TokenRun{From: i, Index: index, Read: read})
}

// run returns the run holding token i.
func (r *Request) run(i int) TokenRun {
	runs := r.TokenRuns
	lo, hi := 0, len(runs) // the last run with From <= i is runs[lo-1]
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if int(runs[m].From) <= i {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return TokenRun{Index: 0, Read: 0, Step: 1, From: 0} // no runs: token i is token i, of Read i
	}
	return runs[lo-1]
}

// TokenIndex returns the index in the stream of Tokens[i].
func (r *Request) TokenIndex(i int) int32 {
	run := r.run(i)
	return run.Index + int32(i) - run.From
}

// TokenRead returns the index of the Read (within the response) that
// delivered Tokens[i].
func (r *Request) TokenRead(i int) int32 {
	run := r.run(i)
	return run.Read + run.Step*(int32(i)-run.From)
}

// TextBase is the index of the first text token of the stream: the
// reasoning and tool-call tokens come before it (see Request.Reasoning).
func (r *Request) TextBase() int32 { return int32(max(r.Reasoning, 0) + max(r.ToolCall, 0)) }

// Visible iterates over the visible text tokens of the record — those whose
// index is TextBase or more: the reference's content tokens, the ones its
// metrics describe — in arrival order, with their positions in Tokens.
// It walks the runs, without searching them.
func (r *Request) Visible() iter.Seq2[int, Token] {
	return func(yield func(int, Token) bool) {
		base := r.TextBase()
		runs := r.TokenRuns
		if len(runs) == 0 { // token i is token i of the stream
			runs = []TokenRun{{}}
		}
		for k, run := range runs {
			end := len(r.Tokens)
			if k+1 < len(runs) {
				end = int(runs[k+1].From)
			}
			from := int(run.From)
			if run.Index < base {
				from += int(base - run.Index)
			}
			for i := from; i < end; i++ {
				if !yield(i, r.Tokens[i]) {
					return
				}
			}
		}
	}
}

// FirstVisible returns the first visible text token to arrive, and false
// when none did.
func (r *Request) FirstVisible() (Token, bool) {
	for _, t := range r.Visible() {
		return t, true
	}
	return Token{}, false
}

// VisibleCount is the number of visible text tokens received.
func (r *Request) VisibleCount() int {
	if r.TextBase() == 0 {
		return len(r.Tokens)
	}
	n := 0
	for range r.Visible() {
		n++
	}
	return n
}

// Request is the record of one streamed request.
type Request struct {
	Batch string // "loop" for the calibration batch, "gw" for the gateway batch
	Index int    // position in start order within its batch

	Scheduled int64 // open-loop runs: when the request was due to start (0 in closed loop)
	Start     int64 // when the request began (connection attempt, or reuse of an open one)
	Sent      int64 // when the last request byte was written (0 if never)
	End       int64 // when the request ended, ok or not

	// Phases of the time to first token (k6-style); 0 when a phase did not
	// happen (a reused connection has no connect or TLS phase).
	Connected int64  // TCP connection established
	TLSDone   int64  // TLS handshake finished
	HeadAt    int64  // response head received (status line and headers)
	Proto     string // protocol actually used: "HTTP/1.1", "h2", "h2c", "websocket"
	ConnID    int64  // which connection carried it (per batch, from 1)
	Reused    bool   // the connection had carried an earlier request
	// Streams is how many HTTP/2 streams were in flight on the connection
	// when the request's own began, itself included: 1 for one stream at
	// a time, more when sessions share the connection (StreamsPerConn,
	// over HTTP/2 or HTTP/3: there the QUIC request streams whose HEADERS
	// were written); 0 over HTTP/1.1, WebSocket and unshared HTTP/3.
	Streams int
	Warmup  bool // a warm-up request: reported, not counted in the statistics

	// ReuseFailed: the kept connection this request came to reuse had
	// been closed by the server or gateway (found closed, or failing on the
	// write or before any response byte); the request was sent again on a
	// new connection, which ConnID and Reused describe.
	ReuseFailed bool
	// Poisoned: a kept-alive connection was closed, not reused, because of
	// this response (no framing end, a drain that did not reach it within
	// its bounds, bytes after it) or, found when this request came to reuse
	// the connection, because bytes had arrived while it was idle.
	Poisoned bool

	ID string // request id sent to the server as a hint ("" if none)

	// Instance is the dummy server instance that served the request: the
	// one its events (api.InstanceKey) or its response head
	// (api.InstanceHeader) name, or across hosts the replica whose records
	// have its id; "" when unknown (a server without an instance id, a
	// gateway that dropped both).
	Instance string

	// ServerArrived is when the dummy server had read the whole request,
	// from its record of the request id (in process, or across hosts
	// converted to this process's clock); 0 when unknown. ServerArrived −
	// Sent is the request leg: the time the gateway took to forward the
	// request.
	ServerArrived int64

	Tokens    []Token    // content tokens in arrival order, all phases
	TokenRuns []TokenRun // the tokens' indexes and Reads (AppendTokens, TokenIndex, TokenRead)
	Reads     int        // number of Reads that returned data after the request was sent
	Bytes     int64      // response bytes received, head included
	Events    int        // SSE events dispatched, WebSocket text messages (one data payload each)

	// The phases of the answer the request asked for: Reasoning reasoning
	// tokens, then a tool call of ToolCall argument tokens, then the text.
	// Token indexes are laid out per phase in that order, as the server
	// numbers its emissions: a token whose Index is below Reasoning is a
	// reasoning token, below Reasoning+ToolCall a tool-call argument token,
	// else a text token (text token j has Index Reasoning+ToolCall+j); see
	// api.LocateToken. A gateway that drops the reasoning leaves no token
	// below Reasoning and FirstReasoningAt 0, and the request OK.
	Reasoning int
	ToolCall  int

	// When the Read that delivered the first SSE event (a ping event
	// aside: gateways send those while they hold the stream), and the
	// first event carrying each phase's text, returned; 0 if none
	// arrived. FirstTextAt is the time to first visible output (TTFO).
	FirstEventAt     int64
	FirstReasoningAt int64
	FirstToolCallAt  int64
	FirstTextAt      int64

	// Encoding is the response's content coding as the client decoded it
	// ("gzip"), "" when the body was not encoded.
	Encoding string
	// BodyEnded: the response's body reached its framing end — its last
	// chunk, its Content-Length, HTTP/2's END_STREAM, the end of its gzip
	// stream. A request that failed before its terminal event with
	// BodyEnded set was ended cleanly by the peer (a gateway hiding a
	// truncation does that), not cut.
	BodyEnded bool

	// Heartbeats seen: SSE comment lines (": ping") and Anthropic
	// "event: ping" events, whoever sent them; over WebSocket, the ping
	// frames received during the request (Pings).
	Comments int
	Pings    int
	// Framing is what the response's SSE framing looked like, beyond
	// one data line per event; LastEventID the stream's last event ID
	// (its last id field before a blank line, "" when none), and RetryMs
	// the reconnection time its last valid retry field set (when
	// Framing.RetryFields > 0).
	Framing     Framing
	LastEventID string
	RetryMs     int64

	// ServerHeartbeats is how many heartbeats the in-process server wrote
	// on this request's stream (its emission record, the pings among
	// Anthropic's start events included), known when ServerRecord: the
	// difference with Comments+Pings is what a gateway injected or
	// swallowed.
	ServerHeartbeats int
	ServerRecord     bool
	// ServerStart is when the in-process server began the stream (wrote
	// its head), and ServerThinkEnd when it planned its first token after
	// the think (0: none), on the process clock, known when ServerRecord:
	// a held start is judged against the think the server meant, from
	// when it began — not against a server slow to take the request or
	// late with its tokens.
	ServerStart    int64
	ServerThinkEnd int64

	// LastReadAt is when the last Read that returned data returned, and
	// PrevReadAt the one before it (0 if none); MaxSilence the longest
	// time without a byte, in nanoseconds, from Sent to the first Read and
	// between Reads (to End, the silence after LastReadAt is
	// End-LastReadAt).
	LastReadAt int64
	PrevReadAt int64
	MaxSilence int64

	// ReasoningAsText: reasoning was asked for and none came as
	// reasoning, but the visible text carried the reasoning's words (a
	// gateway that turned the reasoning into content; the text then
	// fails its integrity check).
	ReasoningAsText bool

	// How the emission time of each token was found: from the pi_ts of the
	// event that carried it alone, or by content through the emission
	// registry (the token's text tells its index). The rest have none.
	ByPiTs    int
	ByContent int
	// MaxTokensPerRead is the largest number of tokens one Read delivered.
	MaxTokensPerRead int

	// Usage is the usage the response carried and how it compared with
	// what the server reported; nil when no usage object arrived.
	Usage *Usage

	// Shape, when set, is this request's own size — a trace line's or a
	// distribution's draw — in place of the batch's (see Shape).
	Shape *Shape
	// PromptBytes is the size of the prompt text the request sent, and
	// AskedTokens the text tokens it asked for (its output size), for the
	// breakdown by size; 0 when unknown (a record of before they were
	// kept).
	PromptBytes int
	AskedTokens int

	// Timing holds the timing headers the response head declared (a
	// gateway's own account of its overhead), raw; the summary parses
	// them.
	Timing TimingHeaders
	// GatewayHeaders are the response head's headers that help name the
	// gateway (Server, Via, vendor headers: gateway.Identifying), cleaned
	// and bounded by the client; nil when it had none.
	GatewayHeaders []HeaderField

	Failure Failure // Kind OK when the request succeeded
}

// Framing counts what the SSE framing of a response looked like, as the
// client read it by the WHATWG rules (wire.Framing, field for field): a
// stream written one data line per event counts zero in every field, so a
// gateway that re-frames it shows here.
type Framing struct {
	BOMs            int // 1 when the body began with a UTF-8 byte order mark (stripped)
	MultiLineEvents int // events whose data came on two or more data lines
	NoDataBlocks    int // blocks of fields a blank line ended without data: nothing dispatched
	BareCRLines     int // lines ended by a bare CR
	InvalidUTF8     int // ill-formed UTF-8 sequences, each replaced by U+FFFD
	IDFields        int // id fields that set the last event ID
	RetryFields     int // retry fields that set the reconnection time
}

// Add adds o's counts to f.
func (f *Framing) Add(o Framing) {
	f.BOMs += o.BOMs
	f.MultiLineEvents += o.MultiLineEvents
	f.NoDataBlocks += o.NoDataBlocks
	f.BareCRLines += o.BareCRLines
	f.InvalidUTF8 += o.InvalidUTF8
	f.IDFields += o.IDFields
	f.RetryFields += o.RetryFields
}

// Plain reports whether every count is zero: one data line per event, no
// BOM, no CR-only line ends, no ids, no retry.
func (f Framing) Plain() bool { return f == Framing{} }

// HeaderField is one response header as a record keeps it: its name in
// lower case and its value, both made safe to print.
type HeaderField struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// String is "name: value".
func (h HeaderField) String() string { return h.Name + ": " + h.Value }

// TimingHeaders are the values of the timing headers gateways publish in
// a response head, as received ("" when absent): what a gateway declares
// it spent, to set beside what the tool observed.
type TimingHeaders struct {
	LiteLLMOverhead string // x-litellm-overhead-duration-ms: LiteLLM's overhead, ms
	KongProxy       string // X-Kong-Proxy-Latency: Kong's processing before the upstream, ms
	KongUpstream    string // X-Kong-Upstream-Latency: the upstream's time to its response head, ms
	ServerTiming    string // Server-Timing (W3C): every field of the head, joined with ", "
}

// Empty reports whether no timing header was received.
func (t TimingHeaders) Empty() bool { return t == TimingHeaders{} }

// OK reports whether the request ended with its stream's terminal event
// ([DONE] and the like) after at least one token, its content intact.
func (r *Request) OK() bool { return r.Failure.Kind == OK }

// Shape is one request's own size: its output tokens, its prompt's bytes
// and, for a trace's requests, the prefix blocks its prompt is laid out
// in (requests sharing blocks share those bytes), and where it sits in the
// trace.
type Shape struct {
	Tokens      int      // text tokens to ask for
	PromptBytes int      // the prompt's size in bytes; 0: the short prompt
	Blocks      []uint64 // the prompt's blocks, in order (nil: the padded prompt of --prompt-bytes)
	BlockBytes  int      // the size of each block, bytes
	Line        int      // the trace line it comes from (0: not from a trace)
}

// Usage is the usage a response carried: each usage object as it arrived
// (raw JSON), and once compared with what the server reported, what
// differed.
type Usage struct {
	Received []UsageObject
	// Compared is set once the objects were compared with the server's
	// record of the request (in process); Findings is then what differed,
	// empty when the usage arrived intact.
	Compared bool
	Findings []UsageFinding
}

// UsageObject is one usage object of a response: the event that carried it
// (Part: "usage chunk", "response.completed", "message_start",
// "message_delta") and its payload as it arrived, raw.
type UsageObject struct {
	Part    string
	Payload []byte
}

// UsageKind is what a gateway did to a usage field.
type UsageKind int

// The findings of the usage comparison.
const (
	UsageChanged    UsageKind = iota // another value than the server's
	UsageDropped                     // a field (or object) the server sent did not arrive, or arrived null
	UsageZeroed                      // the server had no figure (null) and 0 arrived: zeroed from null
	UsageRecomputed                  // another value, the gateway's figures consistent among themselves: it counted the tokens itself
	NumUsageKinds
)

var usageKindNames = [...]string{"changed", "dropped", "zeroed_from_null", "recomputed"}

// String is the kind's snake_case name, as the reports key it.
func (k UsageKind) String() string {
	if k >= 0 && k < NumUsageKinds {
		return usageKindNames[k]
	}
	return "usage_kind(" + strconv.Itoa(int(k)) + ")"
}

// UsageFinding is one usage field that did not arrive as the server sent
// it: in which object, its path ("prompt_tokens_details.cached_tokens"),
// what the server sent and what arrived, as JSON ("" for absent).
type UsageFinding struct {
	Kind      UsageKind
	Part      string
	Field     string
	Sent, Got string
}
