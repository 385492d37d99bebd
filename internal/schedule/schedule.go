// Package schedule is the tool's timing maths: absolute emission deadlines
// computed from a start time and an index, so that lateness never
// accumulates (deadline k+1 is deadline k plus the delay, whatever happened at
// k), and the absolute start deadlines of open-loop batches (constant rate or
// Poisson arrivals). It has no goroutines and never sleeps; packages server
// and batch drive it.
package schedule

import (
	"math"
	"math/bits"
)

// Plan is the emission schedule of one stream. Its tokens are numbered
// across the phases of the answer (see api.Answer): the first Reasoning of
// them are reasoning tokens, which fill the think phase; the others (a tool
// call's argument tokens, then the text) come after it, one every Delay.
// All times are nanoseconds.
//
// The think phase lasts Think; when Think is 0 and there are reasoning
// tokens, it lasts Reasoning·Delay instead (the reasoning streams at the
// text's cadence). Its reasoning tokens are spread evenly over it, the
// first at Start; without reasoning tokens it is silent, as the
// reference's. So the first token after it — the first visible one
// without a tool call — is due at Start+Think, reasoning or not.
type Plan struct {
	Start     int64 // when the stream began (its start events were written)
	Think     int64 // length of the think phase, before the first token after it
	Delay     int64 // gap between consecutive tokens after the think phase
	Tokens    int   // number of tokens, all phases
	Reasoning int   // how many of them are reasoning tokens, streamed during the think phase

	// Stall delays token StallAfter and every token after it by Stall (an
	// upstream that pauses mid-answer: the stall_after and stall_ms
	// faults); 0 is no stall.
	StallAfter int
	Stall      int64
}

// MsToNs converts a duration in (possibly fractional) milliseconds to whole
// nanoseconds, rounding to nearest; negative and NaN become 0 and values
// beyond the int64 range saturate.
func MsToNs(ms float64) int64 {
	if !(ms > 0) {
		return 0
	}
	ns := math.Round(ms * 1e6)
	if ns >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(ns)
}

// Deadline returns the absolute time at which token k (from 0) is due,
// saturating instead of overflowing: reasoning token k (k < Reasoning) at
// Start + k·Think/Reasoning (rounded down; Start + k·Delay when Think is
// 0), every other token at Start + ThinkEnd + (k−Reasoning)·Delay; plus
// Stall from token StallAfter on.
func (p Plan) Deadline(k int) int64 {
	k, r := max(k, 0), max(p.Reasoning, 0)
	var off int64
	switch {
	case k < r && p.Think > 0:
		// k·Think/r < Think: exact in 128 bits, no overflow.
		hi, lo := bits.Mul64(uint64(k), uint64(p.Think))
		q, _ := bits.Div64(hi, lo, uint64(r))
		off = int64(q)
	case k < r:
		off = mulSat(int64(k), p.Delay)
	default:
		off = addSat(p.thinkEnd(), uint64(mulSat(int64(k-r), p.Delay)))
	}
	if p.Stall > 0 && k >= p.StallAfter {
		off = addSat(off, uint64(p.Stall))
	}
	return addSat(p.Start, uint64(off))
}

// thinkEnd is the length of the think phase: Think, or Reasoning·Delay when
// Think is 0.
func (p Plan) thinkEnd() int64 {
	if p.Think > 0 || p.Reasoning <= 0 {
		return p.Think
	}
	return mulSat(int64(p.Reasoning), p.Delay)
}

// mulSat returns a·b for a, b >= 0, saturating at MaxInt64. (A multiply
// rather than the division a check against MaxInt64/a takes: Deadline
// runs about three times per token on the server.)
func mulSat(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}

// End returns when the last token is due (the end of the think phase when
// there are none).
func (p Plan) End() int64 {
	if p.Tokens <= 0 {
		return p.Deadline(0)
	}
	return p.Deadline(p.Tokens - 1)
}

// Duration is the length of one stream in nanoseconds, to its last token:
// Think + Delay·(n−1) without reasoning.
func (p Plan) Duration() int64 { return p.End() - p.Start }

// Waves is how many rounds of concurrency it takes to run requests requests
// with concurrency slots: ceil(requests/concurrency).
func Waves(requests, concurrency int) int {
	if concurrency < 1 {
		concurrency = 1
	}
	return (requests + concurrency - 1) / concurrency
}
