// Package advice is what sse-latency tells the user to change, as data:
// one table (table.go) whose rows each give, for one gateway and one
// finding — a buffering signature, a first-token hold, a finding about
// the answer's phases, a check that failed — the setting to change, a
// configuration snippet and the gateway's own documentation. A report
// gives the identified gateway's row (package gateway names it), never
// another gateway's; for a gateway not recognised, or one without a row
// for the finding, the finding's generic row, with the known gateways'
// rows listed as "if your gateway is …".
package advice

import (
	"slices"
	"strings"

	"github.com/sse-latency/sse-latency/internal/gateway"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// Key is what a row advises on.
type Key string

// The keys: the buffering signatures (verdict.SignatureKind), Nagle's
// timing, the first-token hold, the run's findings (verdict.Finding*),
// and the check's failures.
const (
	ByteThreshold  = Key(verdict.ByteThreshold)
	TimePeriod     = Key(verdict.TimePeriod)
	OneEventBehind = Key(verdict.OneEventBehind)
	WholeResponse  = Key(verdict.WholeResponse)
	DispatchBursts = Key(verdict.DispatchBursts)
	Compression    = Key(verdict.Compression)
	Nagle          = Key("nagle")            // releases at Nagle/delayed-ACK periods (~40, ~200 ms)
	FirstTokenHold = Key("first_token_hold") // the first event held beyond the others (verdict.HoldWarnNs)

	HeldStart           = Key(verdict.FindingHeldStart)
	ReasoningDropped    = Key(verdict.FindingReasoningDropped)
	ReasoningConverted  = Key(verdict.FindingReasoningConverted)
	ArgumentsHeld       = Key(verdict.FindingArgumentsHeld)
	IdleCut             = Key(verdict.FindingIdleCut) // also the check's long silences
	HeartbeatsInjected  = Key(verdict.FindingHeartbeatsInjected)
	HeartbeatsSwallowed = Key(verdict.FindingHeartbeatsSwallowed)

	LargeEvent        = Key("large_event")         // a 64 KB event cut or refused
	EventRebuilt      = Key("event_rebuilt")       // events re-serialised
	UTF8Split         = Key("utf8_split")          // a character split across reads broken
	LineEndings       = Key("line_endings")        // CRLF, CR or comments refused
	SSEFraming        = Key("sse_framing")         // a spec-valid framing (BOM, multi-line data, event after data) broken
	UsageDropped      = Key("usage_dropped")       // the usage event lost
	UsageRewritten    = Key("usage_rewritten")     // a usage field changed, dropped, zeroed from null or recomputed
	TerminalDropped   = Key("terminal_dropped")    // the terminal event lost
	UpstreamCutHidden = Key("upstream_cut_hidden") // an upstream cut ended as a normal response
	ErrorStatus       = Key("error_status")        // an upstream error's status or body changed
	CancelIgnored     = Key("cancel_ignored")      // the upstream kept streaming after the client left
	LargeBody         = Key("large_body")          // a 1 MB prompt refused
	LargeBodySlow     = Key("large_body_slow")     // a 1 MB prompt slow to forward
	KeepaliveClosed   = Key("keepalive_closed")    // the connection closed after a stream
	KeepaliveBroken   = Key("keepalive_broken")    // a kept connection broken under the next request
	StreamBroken      = Key("stream_broken")       // a plain stream failed through the gateway
	MuxStreams        = Key("mux_streams")         // the streams of one HTTP/2 or QUIC connection serialised, held, reset or limited
	MuxRefused        = Key("mux_refused")         // streams of a shared connection refused before their response (a per-connection request cap's GOAWAY, a reset) and sent again
)

// Keys lists every key; each has a generic row (a test checks it).
var Keys = []Key{ByteThreshold, TimePeriod, OneEventBehind, WholeResponse, DispatchBursts, Compression, Nagle, FirstTokenHold,
	HeldStart, ReasoningDropped, ReasoningConverted, ArgumentsHeld, IdleCut, HeartbeatsInjected, HeartbeatsSwallowed,
	LargeEvent, EventRebuilt, UTF8Split, LineEndings, SSEFraming, UsageDropped, UsageRewritten, TerminalDropped, UpstreamCutHidden, ErrorStatus,
	CancelIgnored, LargeBody, LargeBodySlow, KeepaliveClosed, KeepaliveBroken, StreamBroken, MuxStreams, MuxRefused}

// Row is one row of the table: for gateway Gateway (gateway.Unknown for
// the generic row) and finding Key, the setting to change, a snippet of
// configuration that does it, and the documentation that says so.
type Row struct {
	Gateway   gateway.Name
	Key       Key
	Setting   string
	Snippet   string
	Reference string
}

func (r Row) advice() gateway.Advice {
	return gateway.Advice{Key: string(r.Key), Gateway: r.Gateway, Setting: r.Setting, Snippet: r.Snippet, Reference: r.Reference}
}

// lookup returns the row of (g, k), false when the table has none.
func lookup(g gateway.Name, k Key) (Row, bool) {
	i := slices.IndexFunc(Table, func(r Row) bool { return r.Gateway == g && r.Key == k })
	if i < 0 {
		return Row{}, false
	}
	return Table[i], true
}

// For returns the advice on key k for gateway g: g's row when the table
// has one; else the generic row, with, when g is not recognised, every
// known gateway's row for k as Others (in the order of gateway.Names).
// A gateway recognised but without a row gets the generic advice alone:
// never another gateway's.
func For(g gateway.Name, k Key) gateway.Advice {
	if g != gateway.Unknown {
		if r, ok := lookup(g, k); ok {
			return r.advice()
		}
	}
	r, _ := lookup(gateway.Unknown, k)
	a := r.advice()
	a.Key = string(k)
	if g != gateway.Unknown {
		return a
	}
	for _, n := range gateway.Names {
		if o, ok := lookup(n, k); ok {
			a.Others = append(a.Others, o.advice())
		}
	}
	return a
}

// Verdict returns the advice on what verdict v found, most telling
// first, for gateway id (nil: not identified): Nagle's timing and the
// signature of a buffering gateway, the first-token hold, then each
// finding that has advice.
func Verdict(id *gateway.Identity, v *verdict.Verdict) []gateway.Advice {
	var keys []Key
	if v.Class == verdict.Buffers {
		if verdict.NagleLike(v.BurstPeriodMs) {
			keys = append(keys, Nagle)
		}
		if s := v.Signature; s != nil && s.Kind != verdict.FlushPerEvent {
			keys = append(keys, Key(s.Kind))
		}
	}
	if v.FirstTokenHold {
		keys = append(keys, FirstTokenHold)
	}
	for _, f := range v.Findings {
		if k := Key(f.Name); slices.Contains(Keys, k) {
			keys = append(keys, k)
		}
	}
	return ForAll(id, keys...)
}

// ForAll is For of each key, for gateway id (nil: not identified), each
// key once.
func ForAll(id *gateway.Identity, keys ...Key) []gateway.Advice {
	g := gateway.Unknown
	if id != nil {
		g = id.Name
	}
	out := []gateway.Advice{}
	var seen []Key
	for _, k := range keys {
		if !slices.Contains(seen, k) {
			seen = append(seen, k)
			out = append(out, For(g, k))
		}
	}
	return out
}

// Causes are the advice as the verdict's causes list them: one line each
// (gateway.Advice.Line).
func Causes(as []gateway.Advice) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Line()
	}
	return out
}

// Title is the finding a key names, in words ("whole response", "first
// token held").
func Title(k Key) string {
	switch k {
	case ByteThreshold, TimePeriod, OneEventBehind, WholeResponse, DispatchBursts, Compression:
		return verdict.SignatureKind(k).Name()
	case Nagle:
		return "Nagle/delayed-ACK timing"
	case FirstTokenHold:
		return "first token held"
	case HeldStart:
		return "held stream start"
	case IdleCut:
		return "idle cut"
	case LargeBodySlow:
		return "large body slow"
	}
	return strings.ReplaceAll(string(k), "_", " ")
}
