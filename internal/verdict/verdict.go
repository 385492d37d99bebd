// Package verdict tells, from the raw token records of a batch, whether the
// gateway flushed each SSE event as it came or held tokens back and released
// them in bursts — and, if it did, how big and how often the bursts were, how
// much delay that added, and how it released them (the Signature). It also
// flags a first-token hold: the first event delayed much more than the
// rest. Which setting of which gateway to change is package advice's.
//
// # Tokens judged
//
// The verdict is judged on the visible text tokens of each request
// (result.Request.Visible), those the reference's metrics describe: its
// emission gap is the text's cadence, its added delay the text's
// emit->recv. Reasoning spread over a think time and a tool call's
// arguments have cadences of their own; how a gateway treats them is what
// the findings say (Finding).
//
// # Bursts
//
// Within one request, two consecutive tokens that both carry an emission
// stamp are joined into the same burst when their arrival gap is below
// JoinFraction of their emission gap: tokens emitted 5 ms apart that arrive
// less than 1.25 ms apart travelled together. A burst is a maximal run of
// joined tokens; only bursts of 2 or more count as bursts. A token without a
// stamp ends the run. The analysable tokens are the stamped tokens with a
// stamped neighbour; CoalescedFraction is the share of them in bursts.
//
// # Thresholds
//
// Every threshold is a named constant of this package:
//
//   - MinTokens (20): fewer analysable gateway tokens give Unknown.
//   - MinEmitGapNs (0.1 ms): a typical emission gap below it (-d 0) gives
//     Unknown: tokens written back to back arrive together anyway.
//   - JoinFraction (0.25): the arrival/emission gap ratio below which two
//     tokens belong to one burst.
//   - BufferedFraction (0.5) and BufferedMargin (0.3): Buffers when at least
//     half the tokens came in bursts and 30 points more than in the
//     calibration batch;
//   - or DelayGaps (2) and BurstsPresentMargin (0.1): Buffers when the added
//     mean emit->recv exceeds 2 emission gaps while the gateway coalesces at
//     least 10 points more than the calibration batch.
//   - NoisyLoopFraction (0.1): a calibration batch coalescing this much
//     means the tool itself was overloaded (Verdict.Noisy).
//   - HoldWarnNs (10 ms), HoldFailNs (50 ms) and HoldFactor (5): FirstTokenHold
//     when the typical first-token hold exceeds the calibration's by more
//     than 10 ms and is more than 5 times the typical emit->recv of the
//     following tokens (Hold); a warning below 50 ms, a failure from it
//     (FirstTokenHoldLevel), in the run and the check alike.
//   - NagleTimingsMs (40, 200) and NagleTolerance (0.25): a burst period
//     within ±25 % of one of them points to Nagle/delayed-ACK timers.
//
// # Memory
//
// An Accumulator keeps counters and stats.Metric distributions only (about
// 1.4 MB, whatever the batch size; about twice that once a failed request
// brought tokens, its partial streams and the completed requests'
// emit->recv being kept apart from then on), plus one scratch
// slice as long as the longest request, reused to find a request's median
// delay.
//
// # Completed requests and partial streams
//
// The timing verdict is judged on the requests that completed. When none
// did — a gateway that died, or cut every stream — or they had too few
// tokens while the failed ones had enough, it is judged on the partial
// streams of the failed requests, and says so (Verdict.Basis): the reports
// then lead with the failure and leave the buffering advice out.
package verdict

import (
	"fmt"

	"github.com/sse-latency/sse-latency/internal/gateway"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
)

// Class is the classification of a gateway's streaming behaviour.
type Class int

// The classes. Unknown is used when the data cannot support a verdict
// (too few tokens, tokens emitted without delay, no samples).
const (
	Unknown Class = iota
	Flushes       // every event forwarded as it came
	Buffers       // events held back and released in bursts
)

// String returns "unknown", "flushes" or "buffers".
func (c Class) String() string {
	switch c {
	case Flushes:
		return "flushes"
	case Buffers:
		return "buffers"
	}
	return "unknown"
}

// MarshalText returns the class's name (String).
func (c Class) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText reads a class's name, refusing any other text.
func (c *Class) UnmarshalText(b []byte) error {
	for _, k := range []Class{Unknown, Flushes, Buffers} {
		if string(b) == k.String() {
			*c = k
			return nil
		}
	}
	return fmt.Errorf("verdict.class %q: want \"flushes\", \"buffers\" or \"unknown\"", b)
}

// Verdict is the outcome of Classify. Its JSON form (snake_case keys, the
// class as its name) is the verdict object of the run document.
type Verdict struct {
	Class  Class  `json:"class"`
	Reason string `json:"reason,omitempty"` // why Class is Unknown, empty otherwise

	Tokens            int64   `json:"tokens"`                  // analysable tokens of the gateway batch: stamped, with a stamped neighbour
	CoalescedFraction float64 `json:"coalesced_fraction"`      // share of those tokens that arrived in a burst of 2 or more
	LoopCoalesced     float64 `json:"loop_coalesced_fraction"` // the same share in the calibration batch (the tool's own noise); -1 without one
	Noisy             bool    `json:"noisy"`                   // LoopCoalesced >= NoisyLoopFraction: the tool itself was overloaded
	BurstSizeP50      float64 `json:"burst_size_p50"`          // tokens per burst, over bursts of 2 or more (p50)
	BurstSizeMax      int64   `json:"burst_size_max"`          // largest burst seen
	Bursts            int64   `json:"bursts"`                  // bursts of 2 or more tokens
	BurstPeriodMs     float64 `json:"burst_period_ms"`         // typical time between the starts of consecutive bursts of a request (p50), ms; 0 if no request had two
	EmitGapMs         float64 `json:"emit_gap_ms"`             // typical gap at which tokens were emitted (p50), ms

	AddedMeanMs float64 `json:"added_mean_ms"` // emit->recv (tokens), gateway minus loopback (absolute when no loopback), ms
	AddedP50Ms  float64 `json:"added_p50_ms"`
	AddedP99Ms  float64 `json:"added_p99_ms"`
	Relative    bool    `json:"relative"` // Added* are gateway minus loopback

	FirstTokenHold      bool    `json:"first_token_hold"`                 // the first token was held much longer than the rest (Hold)
	FirstTokenHoldLevel string  `json:"first_token_hold_level,omitempty"` // HoldWarn or HoldFail when held; absent otherwise
	FirstTokenHoldMs    float64 `json:"first_token_hold_ms"`              // first-token emit->recv minus the typical emit->recv of the others (p50 over requests), ms
	FollowingMs         float64 `json:"following_ms"`                     // typical emit->recv of the tokens after the first (p50 over requests of each request's median), ms
	HoldRequests        int64   `json:"hold_requests"`                    // requests that gave a first-token hold sample

	Causes []string `json:"causes"` // the advice in one line each (gateway.Advice.Line), most telling first
	// Advice is what to change, for the identified gateway (package
	// advice): one per finding, most telling first; absent from documents
	// written before it.
	Advice []gateway.Advice `json:"advice,omitempty"`

	// Basis is which requests the timing verdict — the class, the bursts,
	// the added delay, the first-token hold and the signature — was judged
	// on: BasisCompleted, the requests that completed, or, when too few
	// did, BasisPartial, the partial streams of the failed ones
	// (Classify); BasisRequests how many. Documents written before it have
	// neither.
	Basis         string `json:"basis,omitempty"`
	BasisRequests int64  `json:"basis_requests,omitempty"`

	// Signature is how the gateway releases the stream (signature.go);
	// nil when the class is Unknown, and in documents written before it.
	Signature *Signature `json:"signature,omitempty"`
	// Findings about the phases, heartbeats and silences, each with its
	// evidence (findings.go); absent when there are none.
	Findings []Finding `json:"findings,omitempty"`
}

// Accumulator gathers, in bounded memory, what Classify needs from the
// records of one batch. Add is called once per finished request, by one
// goroutine at a time; it does not keep the record.
//
// It keeps the requests that completed apart from the partial streams of
// those that failed: the timing verdict is judged on the first, or, when
// too few completed (see Classify), on the second, and says which
// (Verdict.Basis). The added delay of the judged requests alone needs
// their emit->recv apart from the batch's (stats.Batch.EmitRecv), which
// mixes in the failed requests' once one brought tokens: SplitFrom starts
// keeping it apart then, so that a batch where nothing failed pays no
// second histogram per token.
type Accumulator struct {
	impl    accumulator  // the requests that completed
	partial *accumulator // the failed requests with tokens; nil until one
	// completed and partials count the requests of impl and partial,
	// failed all the failed requests; failedSamples says a failed request
	// had emit->recv samples, which the batch's emit->recv then mixes in.
	completed, partials, failed int64
	failedSamples               bool
}

// NewAccumulator returns an empty Accumulator.
func NewAccumulator() *Accumulator { return &Accumulator{impl: newAccumulator()} }

// SplitFrom keeps, from now on, the completed requests' emit->recv apart
// from the batch's, starting from a copy of batch — the batch's
// emit->recv so far, which must hold the completed requests' samples
// alone (no failed request with tokens has joined it yet). Its caller
// (summary.Collector) calls it before the first failed request with
// tokens joins the batch's statistics; later calls do nothing. Without
// it, a verdict whose failed requests had samples takes the batch's
// emit->recv, theirs included, for its added delay.
func (a *Accumulator) SplitFrom(batch *stats.Metric) {
	if a.impl.emitRecv != nil {
		return
	}
	m := stats.NewMetric()
	m.Merge(batch)
	a.impl.emitRecv = m
}

// Add folds one finished request into the accumulator: into the completed
// requests when it is OK, else, when it received tokens, into the partial
// streams.
func (a *Accumulator) Add(r *result.Request) {
	if r.OK() {
		a.completed++
		a.impl.add(r)
		return
	}
	a.failed++
	if len(r.Tokens) == 0 {
		return
	}
	if a.partial == nil {
		p := newAccumulator()
		p.emitRecv = stats.NewMetric()
		a.partial = &p
	}
	a.partials++
	before := a.partial.emitRecv.N()
	a.partial.add(r)
	a.failedSamples = a.failedSamples || a.partial.emitRecv.N() > before
}

// The bases of a timing verdict (Verdict.Basis).
const (
	BasisCompleted = "completed" // the requests that completed
	BasisPartial   = "partial"   // too few completed: the partial streams of the failed requests
)

// Classify decides the verdict for the gateway batch gw, using the
// calibration batch loop (nil when there was none) as the noise floor.
// gwStats and loopStats (nil when no calibration) give the emit->recv
// figures for the added delay.
//
// The timing verdict is judged on the gateway requests that completed
// (loop's too), unless none completed, or they had fewer than MinTokens
// analysable tokens while the partial streams of the failed requests had
// that many: then on those partial streams (Verdict.Basis says which).
// When failed requests had emit->recv samples, the added delay is that of
// the judged requests alone (see Accumulator.SplitFrom); otherwise
// gwStats' (the same samples).
func Classify(loop, gw *Accumulator, loopStats, gwStats *stats.Batch) Verdict {
	return classify(loop, gw, loopStats, gwStats)
}
