package stats

import (
	"slices"
	"strings"

	"github.com/sse-latency/sse-latency/internal/result"
)

// MaxFailureTexts bounds the distinct failure texts a Batch keeps per failure
// kind; failures with further texts are only counted (FailureTally.Other).
const MaxFailureTexts = 10

// Batch aggregates the records of one batch of requests (SPEC §4, §6). Create
// it with NewBatch. A Batch is not safe for concurrent use: the caller
// serialises Add and Merge.
type Batch struct {
	Requests int   // requests added
	OK       int   // of which ok
	Failed   int   // of which failed
	Tokens   int64 // visible text tokens of the ok requests only (SPEC §4)

	// Unstamped counts visible text tokens without an emission stamp
	// (Emitted == 0), left out of FirstEmitRecv and EmitRecv only.
	Unstamped int64

	// How the emission times of the tokens received (by ok and failed
	// requests alike) were found, from each record's own accounting: the
	// pi_ts of the event that carried the token alone, the token's content
	// through the emission registry, or not at all.
	ByPiTs, ByContent, Unmeasured int64

	// FailedTokens counts the tokens (all phases) received by the failed
	// requests: of the tokens received, those the title's count (Tokens,
	// ok requests only) leaves out.
	FailedTokens int64

	// The shape of the streams, over all requests: the Reads that returned
	// data, the SSE data events and the response bytes (heads included),
	// and the most tokens one Read delivered.
	Reads, Events    int64
	Bytes            int64
	MaxTokensPerRead int

	// Framing sums what the SSE framing of the responses looked like
	// (result.Framing: BOMs, events of several data lines, CR-only line
	// ends …), and RetryMaxMs is the largest reconnection time a retry
	// field set (when Framing.RetryFields > 0).
	Framing    result.Framing
	RetryMaxMs int64

	// IntegrityErrors counts the requests that failed with result.Integrity
	// (their content differed from what was emitted). They are among Failed
	// too.
	IntegrityErrors int

	// The samples, of ok and failed requests alike (SPEC §4), in ns, of
	// the visible text tokens only (result.Request.Visible): the content
	// tokens the reference sees, so that the reference and --compat agree
	// on the same stream; reasoning and tool-call tokens have their own
	// figures (summary.Timeline).
	TTFT          *Metric // first token's arrival − request sent, one per request with a token and Sent > 0
	FirstEmitRecv *Metric // first token's arrival − its emission, one per request with a stamped first token
	InterToken    *Metric // arrival gap between consecutive tokens, n−1 per request
	EmitRecv      *Metric // arrival − emission of tokens 2..n, n−1 per request (stamped tokens only)

	// Warmup counts the warm-up requests (rec.Warmup) Add was given: they
	// are counted here and nowhere else.
	Warmup int

	// Connections (Go tool), over the requests counted. A connection opened
	// by a warm-up request is counted in WarmConnections when a counted
	// request first reuses it, so that Opened + WarmConnections is the
	// number of distinct connections that carried counted requests.
	Opened          int            // requests that opened their connection (rec.ConnID > 0, not Reused)
	WarmConnections int            // connections opened by warm-up requests, then reused by counted ones
	ConnRequests    int            // requests carried by a connection (rec.ConnID > 0)
	ReuseFailures   int            // requests whose kept connection had been closed (rec.ReuseFailed)
	Poisoned        int            // requests that left, or found, their kept connection poisoned (rec.Poisoned)
	Protocols       map[string]int // requests by the protocol that carried them (rec.Proto, when set)
	StreamsAtOnce   int            // the most HTTP/2 (or shared QUIC) streams in flight on one connection, a request's own included (max rec.Streams)

	// The phases of the time to first token (k6-style), ns, one sample per
	// request where both ends are known (see Phases).
	Connect    *Metric // Connected − Start: TCP connect (new connections only)
	TLS        *Metric // TLSDone − Connected: TLS handshake
	Written    *Metric // Sent − max(TLSDone, Connected, Start): request written
	Head       *Metric // HeadAt − Sent: response head received
	FirstToken *Metric // first visible token's arrival − HeadAt

	// StartLateness is Start − Scheduled of the open-loop requests
	// (Scheduled > 0), ns: how late each started against its deadline.
	StartLateness *Metric

	// RequestLeg is ServerArrived − Sent, ns: how long the request took to
	// reach the dummy server after the client had written it (through the
	// gateway: its request-path overhead), one per request whose arrival
	// the server recorded.
	RequestLeg *Metric

	failures map[result.Kind]*FailureTally
	// warmConns are the connections opened by warm-up requests that no
	// counted request has reused yet.
	warmConns map[int64]struct{}
}

// Phase names one phase of the time to first token.
type Phase struct {
	Name   string  // "connect", "tls", "written", "head", "first-token"
	Metric *Metric // its samples
}

// Phases returns the phase metrics of b in the order of a request.
func (b *Batch) Phases() []Phase {
	return []Phase{{"connect", b.Connect}, {"tls", b.TLS}, {"written", b.Written}, {"head", b.Head}, {"first-token", b.FirstToken}}
}

// Connections returns the distinct connections that carried counted
// requests: Opened + WarmConnections.
func (b *Batch) Connections() int { return b.Opened + b.WarmConnections }

// RequestsPerConnection returns the mean number of counted requests per
// connection, 0 without connections.
func (b *Batch) RequestsPerConnection() float64 {
	if c := b.Connections(); c > 0 {
		return float64(b.ConnRequests) / float64(c)
	}
	return 0
}

// FailureTally counts the failures of one kind and keeps their first
// MaxFailureTexts distinct texts (result.Failure.Error).
type FailureTally struct {
	Kind  result.Kind
	Count int         // failures of this kind
	Texts []TextCount // at most MaxFailureTexts distinct texts, the first seen
	Other int         // failures whose text did not fit in Texts
}

// TextCount is a failure text and how many failures had it.
type TextCount struct {
	Text  string
	Count int
}

// NewBatch returns an empty Batch.
func NewBatch() *Batch {
	return &Batch{
		TTFT:          NewMetric(),
		FirstEmitRecv: NewMetric(),
		InterToken:    NewMetric(),
		EmitRecv:      NewMetric(),
		Protocols:     make(map[string]int),
		Connect:       NewMetric(),
		TLS:           NewMetric(),
		Written:       NewMetric(),
		Head:          NewMetric(),
		FirstToken:    NewMetric(),
		StartLateness: NewMetric(),
		RequestLeg:    NewMetric(),
		failures:      make(map[result.Kind]*FailureTally),
	}
}

// Add accounts for one finished request. It does not retain r, and does not
// allocate for an ok request (but the first of each protocol). A warm-up
// request is only counted in Warmup (and its connection remembered).
func (b *Batch) Add(r *result.Request) {
	if r.Warmup {
		b.Warmup++
		if r.ConnID > 0 && !r.Reused {
			if b.warmConns == nil {
				b.warmConns = make(map[int64]struct{})
			}
			b.warmConns[r.ConnID] = struct{}{}
		}
		return
	}
	b.Requests++
	if r.OK() {
		b.OK++
		b.Tokens += int64(r.VisibleCount())
	} else {
		b.Failed++
		if r.Failure.Kind == result.Integrity {
			b.IntegrityErrors++
		}
		b.tally(r.Failure.Kind, r.Failure.Error(), 1)
		b.FailedTokens += int64(len(r.Tokens))
	}
	b.ByPiTs += int64(r.ByPiTs)
	b.ByContent += int64(r.ByContent)
	b.Unmeasured += max(int64(len(r.Tokens)-r.ByPiTs-r.ByContent), 0)
	b.Reads += int64(r.Reads)
	b.Events += int64(r.Events)
	b.Bytes += r.Bytes
	b.MaxTokensPerRead = max(b.MaxTokensPerRead, r.MaxTokensPerRead)
	b.Framing.Add(r.Framing)
	if r.Framing.RetryFields > 0 {
		b.RetryMaxMs = max(b.RetryMaxMs, r.RetryMs)
	}
	b.addConnection(r)
	b.addPhases(r)
	first, prev := true, int64(0)
	for _, t := range r.Visible() {
		switch {
		case first && r.Sent > 0:
			b.TTFT.Record(t.Arrived - r.Sent)
		case !first:
			b.InterToken.Record(t.Arrived - prev)
		}
		switch {
		case t.Emitted == 0:
			b.Unstamped++
		case first:
			b.FirstEmitRecv.Record(t.Arrived - t.Emitted)
		default:
			b.EmitRecv.Record(t.Arrived - t.Emitted)
		}
		first, prev = false, t.Arrived
	}
}

// addConnection accounts for the connection that carried r.
func (b *Batch) addConnection(r *result.Request) {
	if r.ReuseFailed {
		b.ReuseFailures++
	}
	if r.Poisoned {
		b.Poisoned++
	}
	if r.Proto != "" {
		b.Protocols[r.Proto]++
	}
	b.StreamsAtOnce = max(b.StreamsAtOnce, r.Streams)
	if r.ConnID <= 0 {
		return
	}
	b.ConnRequests++
	switch _, warm := b.warmConns[r.ConnID]; {
	case !r.Reused:
		b.Opened++
	case warm:
		b.WarmConnections++
		delete(b.warmConns, r.ConnID)
	}
}

// addPhases records the phases of r whose both ends are known, its start
// lateness and its request leg.
func (b *Batch) addPhases(r *result.Request) {
	if r.Start > 0 && r.Connected > 0 {
		b.Connect.Record(r.Connected - r.Start)
	}
	if r.Connected > 0 && r.TLSDone > 0 {
		b.TLS.Record(r.TLSDone - r.Connected)
	}
	if from := max(r.TLSDone, r.Connected, r.Start); r.Sent > 0 && from > 0 {
		b.Written.Record(r.Sent - from)
	}
	if r.Sent > 0 && r.HeadAt > 0 {
		b.Head.Record(r.HeadAt - r.Sent)
	}
	if first, ok := r.FirstVisible(); ok && r.HeadAt > 0 {
		b.FirstToken.Record(first.Arrived - r.HeadAt)
	}
	if r.Scheduled > 0 && r.Start > 0 {
		b.StartLateness.Record(r.Start - r.Scheduled)
	}
	if r.Sent > 0 && r.ServerArrived > 0 {
		b.RequestLeg.Record(r.ServerArrived - r.Sent)
	}
}

// tallyOf returns the tally of kind k, creating it if needed.
func (b *Batch) tallyOf(k result.Kind) *FailureTally {
	t := b.failures[k]
	if t == nil {
		t = &FailureTally{Kind: k}
		b.failures[k] = t
	}
	return t
}

// tally counts n failures of kind k with the given text.
func (b *Batch) tally(k result.Kind, text string, n int) {
	t := b.tallyOf(k)
	t.Count += n
	for i := range t.Texts {
		if t.Texts[i].Text == text {
			t.Texts[i].Count += n
			return
		}
	}
	if len(t.Texts) < MaxFailureTexts {
		t.Texts = append(t.Texts, TextCount{Text: strings.Clone(text), Count: n})
		return
	}
	t.Other += n
}

// Merge adds everything o holds to b. o is left unchanged.
func (b *Batch) Merge(o *Batch) {
	if o == nil {
		return
	}
	b.Requests += o.Requests
	b.OK += o.OK
	b.Failed += o.Failed
	b.Tokens += o.Tokens
	b.Unstamped += o.Unstamped
	b.ByPiTs += o.ByPiTs
	b.ByContent += o.ByContent
	b.Unmeasured += o.Unmeasured
	b.FailedTokens += o.FailedTokens
	b.Reads += o.Reads
	b.Events += o.Events
	b.Bytes += o.Bytes
	b.MaxTokensPerRead = max(b.MaxTokensPerRead, o.MaxTokensPerRead)
	b.Framing.Add(o.Framing)
	b.RetryMaxMs = max(b.RetryMaxMs, o.RetryMaxMs)
	b.IntegrityErrors += o.IntegrityErrors
	b.TTFT.Merge(o.TTFT)
	b.FirstEmitRecv.Merge(o.FirstEmitRecv)
	b.InterToken.Merge(o.InterToken)
	b.EmitRecv.Merge(o.EmitRecv)
	b.Warmup += o.Warmup
	b.Opened += o.Opened
	b.WarmConnections += o.WarmConnections
	b.ConnRequests += o.ConnRequests
	b.ReuseFailures += o.ReuseFailures
	b.Poisoned += o.Poisoned
	b.StreamsAtOnce = max(b.StreamsAtOnce, o.StreamsAtOnce)
	for p, n := range o.Protocols {
		b.Protocols[p] += n
	}
	for _, m := range []struct{ dst, src *Metric }{
		{b.Connect, o.Connect}, {b.TLS, o.TLS}, {b.Written, o.Written}, {b.Head, o.Head},
		{b.FirstToken, o.FirstToken}, {b.StartLateness, o.StartLateness}, {b.RequestLeg, o.RequestLeg},
	} {
		m.dst.Merge(m.src)
	}
	for id := range o.warmConns {
		if b.warmConns == nil {
			b.warmConns = make(map[int64]struct{})
		}
		b.warmConns[id] = struct{}{}
	}
	for _, t := range o.Failures() {
		b.AddFailureTally(t)
	}
}

// AddFailureTally counts the failures of t into b's tallies, as Merge does
// with another batch's: each text with its count (at most MaxFailureTexts
// texts per kind, the rest counted in Other), and t.Other, whose texts are
// lost, as counted only. It leaves Failed, Requests and IntegrityErrors to
// the caller: it is how a batch rebuilt from a saved summary gets its
// failure texts back.
func (b *Batch) AddFailureTally(t FailureTally) {
	for _, tc := range t.Texts {
		b.tally(t.Kind, tc.Text, tc.Count)
	}
	if t.Other > 0 {
		bt := b.tallyOf(t.Kind)
		bt.Count += t.Other
		bt.Other += t.Other
	}
}

// Failures returns copies of the failure tallies in ascending order of kind,
// each with its texts by descending count, then text.
func (b *Batch) Failures() []FailureTally {
	out := make([]FailureTally, 0, len(b.failures))
	for _, t := range b.failures {
		c := *t
		c.Texts = slices.Clone(t.Texts)
		slices.SortFunc(c.Texts, func(x, y TextCount) int {
			if x.Count != y.Count {
				return y.Count - x.Count
			}
			return strings.Compare(x.Text, y.Text)
		})
		out = append(out, c)
	}
	slices.SortFunc(out, func(x, y FailureTally) int { return int(x.Kind) - int(y.Kind) })
	return out
}
