// Package failures says what went wrong with the requests of a batch that
// failed: it sorts each failed record (package result) into a kind —
// connection refused, a connect timeout, a TLS handshake, an HTTP status,
// a connection reset or closed mid-stream, a response ended without its
// terminal event, an idle cut, the per-request timeout, an integrity
// error, the tool's own limits, … — from the record's raw facts: its
// failure kind and text (whose wording, the reference's, does not change),
// the system error behind it, which phases of the request happened,
// whether the body reached its framing end, and how long the stream had
// been silent when it ended.
//
// A Tally counts the failures of a batch by group (a kind, and for an
// HTTP status its code): how many, their share of the requests, when the
// first and the last of them happened in the run, how many tokens had
// arrived and how long the request had run when it failed (distributions
// that merge exactly), and one example message, sanitised. Summary is its
// saved form, in the run document (package rundoc), from which a Tally is
// rebuilt to merge runs. Headline and Phrase word the groups for the
// reports' verdict line; Advice holds what to look at for each kind, one
// data row per case.
//
// Everything a gateway sent that lands in a text here — an error body, a
// status line, a message — is hostile input: Sanitize bounds it and strips
// its control characters before it is kept, and the reports sanitise again
// what they read from a document.
package failures

import (
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/sse-latency/sse-latency/internal/result"
)

// Kind is what went wrong with a failed request, as the failure summary
// groups it. The zero value None is a request that did not fail.
type Kind int

// The kinds, in the order of a request's life: connecting, sending, the
// response head, the stream, its end; then the checks, the tool's own
// limits and the run's interruption.
const (
	None                 Kind = iota
	Refused                   // the connect was refused (ECONNREFUSED): nothing listens
	ConnectTimeout            // no TCP connection within the timeout (-w)
	ConnectError              // another connect failure: no route, a name that does not resolve
	TLSHandshake              // the connection was made, its TLS (or HTTP/2) setup failed
	ResetBeforeResponse       // reset (a read or write error) after the request, before the response head
	ClosedBeforeResponse      // closed after the request, before a complete response head
	HTTPStatus                // an error status (not 2xx, nor a redirect): Group.Status has its code
	Redirect                  // a 3xx, reported and not followed
	ResetMidStream            // the connection reset (a read error) during the response body
	ClosedMidStream           // the connection closed during the response body, its framing not ended
	IdleCut                   // the stream ended after at least IdleCutMinNs of silence: a gateway's idle timeout
	NoTerminal                // the body ended cleanly, without the stream's terminal event ([DONE])
	ErrorEvent                // the stream carried an error event
	RequestTimeout            // the request outlived the per-request timeout (-w)
	IdleTimeout               // no byte for the tool's --idle-timeout
	NoTokens                  // the stream ended without a content token
	Integrity                 // the content differed from what was emitted
	Malformed                 // the response broke HTTP, chunked or SSE framing
	ToolLimit                 // the tool's own limits: its descriptors, ports or memory, a response above its bounds
	Interrupted               // the run was stopped (Ctrl-C, SIGTERM) while the request was in flight
)

// kindInfo is what this package knows of each kind: its name in documents
// and metrics, and its title in the reports.
var kindInfo = [...]struct{ name, title string }{
	None:                 {"none", "no failure"},
	Refused:              {"connection_refused", "connection refused"},
	ConnectTimeout:       {"connect_timeout", "connect timeout"},
	ConnectError:         {"connect_error", "connect failed"},
	TLSHandshake:         {"tls_handshake", "TLS handshake failed"},
	ResetBeforeResponse:  {"reset_before_response", "connection reset before the response"},
	ClosedBeforeResponse: {"closed_before_response", "connection closed before the response"},
	HTTPStatus:           {"http_status", "HTTP error status"},
	Redirect:             {"redirect", "redirect, not followed"},
	ResetMidStream:       {"reset_mid_stream", "connection reset mid-stream"},
	ClosedMidStream:      {"closed_mid_stream", "connection closed mid-stream"},
	IdleCut:              {"idle_cut", "idle cut"},
	NoTerminal:           {"no_terminal_event", "ended without the terminal event"},
	ErrorEvent:           {"error_event", "error event in the stream"},
	RequestTimeout:       {"request_timeout", "per-request timeout (-w)"},
	IdleTimeout:          {"idle_timeout", "idle timeout (--idle-timeout)"},
	NoTokens:             {"no_tokens", "no content tokens"},
	Integrity:            {"integrity", "integrity error"},
	Malformed:            {"malformed", "malformed response"},
	ToolLimit:            {"tool_limit", "sse-latency's own limits"},
	Interrupted:          {"interrupted", "interrupted (the run was stopped)"},
}

// Kinds returns every kind but None, in their order.
func Kinds() []Kind {
	out := make([]Kind, 0, len(kindInfo)-1)
	for k := Refused; int(k) < len(kindInfo); k++ {
		out = append(out, k)
	}
	return out
}

// String returns the kind's snake_case name, as the run document and the
// probe's label name it.
func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindInfo) {
		return kindInfo[k].name
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Title returns the kind's words in the reports ("connection refused").
func (k Kind) Title() string {
	if k >= 0 && int(k) < len(kindInfo) {
		return kindInfo[k].title
	}
	return k.String()
}

// ParseKind returns the kind named s (String), false for a name of no kind
// or "none".
func ParseKind(s string) (Kind, bool) {
	for k := Refused; int(k) < len(kindInfo); k++ {
		if kindInfo[k].name == s {
			return k, true
		}
	}
	return None, false
}

// GatewayFault reports whether failures of kind k are the gateway's
// story: not the tool's own limits, nor the run's interruption.
func (k Kind) GatewayFault() bool { return k != None && k != ToolLimit && k != Interrupted }

// MidStream reports whether failures of kind k happen, or can happen,
// after tokens arrived: those whose tokens and age the reports give.
func (k Kind) MidStream() bool {
	switch k {
	case ResetMidStream, ClosedMidStream, IdleCut, NoTerminal, ErrorEvent, RequestTimeout, IdleTimeout, Integrity:
		return true
	}
	return false
}

// IdleCutMinNs is the silence before a failed stream's end from which the
// end counts as an idle cut: gateways' idle timeouts are seconds (nginx's
// proxy_read_timeout 60 s, Cloudflare's 100 s), a stream cut for another
// reason ends between two tokens. The timeline's idle-cut finding uses it
// too (summary.IdleCutMinNs).
const IdleCutMinNs = 1_000_000_000

// cutKinds are the failures a gateway's idle timeout gives: the connection
// closed or reset, an error event, an error status, a response cut short.
// The tool's own timeouts and the content checks are not among them.
var cutKinds = map[result.Kind]bool{
	result.ClosedBeforeDone: true, result.RecvError: true, result.StreamError: true,
	result.BadStatus: true, result.ShortResponse: true,
}

// IdleCutEnd reports whether r's failure is one a gateway's idle timeout
// gives, after a silence of IdleCutMinNs or more (EndSilence), and that
// silence.
func IdleCutEnd(r *result.Request) (bool, int64) {
	if r.OK() || !cutKinds[r.Failure.Kind] || r.Sent == 0 {
		return false, 0
	}
	s := EndSilence(r)
	return s >= IdleCutMinNs, s
}

// EndSilence is the silence that preceded r's end: the longer of the one
// from its last Read to its end (the peer closed) and the one before its
// last Read (the end came with data: an error event, a status); from the
// request's write when no Read returned data.
func EndSilence(r *result.Request) int64 {
	if r.LastReadAt == 0 {
		return r.End - r.Sent
	}
	prev := r.PrevReadAt
	if prev == 0 {
		prev = r.Sent
	}
	return max(r.End-r.LastReadAt, r.LastReadAt-prev)
}

// toolLimitErrnos are the system errors that say the tool itself ran out
// of something: descriptors (its own, or the system's), local ports,
// buffer memory.
var toolLimitErrnos = []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.EADDRNOTAVAIL, syscall.ENOBUFS, syscall.ENOMEM}

// limitTexts are the texts of the errors the client's readers return for
// a response beyond the tool's own bounds (package wire's named limits);
// a malformed-response failure quoting one is the tool's limit, not the
// gateway's framing.
var limitTexts = []string{
	"wire: chunk too large", "wire: chunked trailer too large", "wire: SSE line too long",
	"websocket message too large",
}

// Of returns what went wrong with r, None when it did not fail. It reads
// only the record's facts: its failure (kind, text, Errno), its phases
// (Connected, TLSDone, Sent, HeadAt), Reused, BodyEnded, and its end's
// silence (IdleCutEnd).
func Of(r *result.Request) Kind {
	f := r.Failure
	if f.Errno != 0 && slices.Contains(toolLimitErrnos, f.Errno) {
		return ToolLimit
	}
	switch f.Kind {
	case result.OK:
		return None
	case result.Interrupted:
		return Interrupted
	case result.Connect:
		switch {
		case r.Connected > 0:
			return TLSHandshake
		case f.Errno == syscall.ECONNREFUSED:
			return Refused
		case f.Errno == syscall.ETIMEDOUT:
			return ConnectTimeout
		}
		return ConnectError
	case result.Timeout:
		switch {
		case r.Sent > 0 || r.Reused:
			return RequestTimeout
		case r.Connected == 0:
			return ConnectTimeout
		case r.TLSDone == 0:
			return TLSHandshake // connected, the request not written: its handshake timed out
		}
		return RequestTimeout
	case result.IdleTimeout:
		return IdleTimeout
	case result.BadStatus:
		return HTTPStatus
	case result.Redirect:
		return Redirect
	case result.HeadTooLarge:
		return ToolLimit
	case result.BadFraming:
		for _, t := range limitTexts {
			if strings.Contains(f.Detail, t) {
				return ToolLimit
			}
		}
		return Malformed
	case result.NoTokens:
		return NoTokens
	case result.Integrity:
		return Integrity
	}
	if cut, _ := IdleCutEnd(r); cut {
		return IdleCut
	}
	switch f.Kind {
	case result.StreamError:
		return ErrorEvent
	case result.ShortResponse:
		return ClosedBeforeResponse
	case result.RecvError:
		if r.HeadAt == 0 {
			return ResetBeforeResponse
		}
		return ResetMidStream
	case result.ClosedBeforeDone:
		if r.BodyEnded {
			return NoTerminal
		}
		return ClosedMidStream
	}
	return Malformed
}

// StatusOf returns the status code a BadStatus failure's text quotes
// ("HTTP/1.1 502 Bad Gateway: …" gives 502), 0 when the record is not one
// or the code does not read as three digits.
func StatusOf(r *result.Request) int {
	if r.Failure.Kind != result.BadStatus {
		return 0
	}
	return parseStatus(r.Failure.Detail)
}

// parseStatus reads the code of a status line's start: "HTTP/x" then a
// space and three digits, 100 to 999; 0 otherwise.
func parseStatus(line string) int {
	proto, rest, ok := strings.Cut(line, " ")
	if !ok || !strings.HasPrefix(proto, "HTTP/") || len(rest) < 3 {
		return 0
	}
	code := 0
	for _, c := range []byte(rest[:3]) {
		if c < '0' || c > '9' {
			return 0
		}
		code = code*10 + int(c-'0')
	}
	if len(rest) > 3 && rest[3] != ' ' && rest[3] != ':' {
		return 0
	}
	if code < 100 {
		return 0
	}
	return code
}
