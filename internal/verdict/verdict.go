// Package verdict tells, from the raw token records of a batch, whether the
// gateway flushed each SSE event as it came or held tokens back and released
// them in bursts — and, if it did, how big and how often the bursts were, how
// much delay that added, and which settings usually cause it. It also flags
// a first-token hold: the first event delayed much more than the rest.
package verdict

import (
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

// Verdict is the outcome of Classify.
type Verdict struct {
	Class  Class
	Reason string // why Class is Unknown, empty otherwise

	Tokens            int64   // tokens analysed in the gateway batch
	CoalescedFraction float64 // share of those tokens that arrived in a burst of 2 or more
	LoopCoalesced     float64 // the same share in the calibration batch (the tool's own noise); -1 without one
	BurstSizeP50      float64 // tokens per burst, over bursts of 2 or more (p50)
	BurstSizeMax      int64   // largest burst seen
	BurstPeriodMs     float64 // typical time between the starts of consecutive bursts (p50), ms
	EmitGapMs         float64 // typical gap at which tokens were emitted (p50), ms

	AddedMeanMs float64 // emit->recv (tokens), gateway minus loopback (absolute when no loopback), ms
	AddedP50Ms  float64
	AddedP99Ms  float64
	Relative    bool // Added* are gateway minus loopback

	FirstTokenHold   bool    // the first token was held much longer than the rest
	FirstTokenHoldMs float64 // first-token emit->recv minus the typical emit->recv of the others (p50 over requests), ms

	Causes []string // likely causes and the knobs to try, most likely first
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
