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
// 1.4 MB, whatever the batch size), plus one scratch slice as long as the
// longest request, reused to find a request's median delay.
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
type Accumulator struct {
	impl accumulator
}

// NewAccumulator returns an empty Accumulator.
func NewAccumulator() *Accumulator { return &Accumulator{impl: newAccumulator()} }

// Add folds one finished request into the accumulator.
func (a *Accumulator) Add(r *result.Request) { a.impl.add(r) }

// Classify decides the verdict for the gateway batch gw, using the
// calibration batch loop (nil when there was none) as the noise floor.
// gwStats and loopStats (nil when no calibration) give the emit->recv
// figures for the added delay.
func Classify(loop, gw *Accumulator, loopStats, gwStats *stats.Batch) Verdict {
	return classify(loop, gw, loopStats, gwStats)
}
