// Package schedule is the tool's timing maths: absolute emission deadlines
// computed from a start time and an index, so that lateness never
// accumulates (deadline k+1 is deadline k plus the delay, whatever happened at
// k), and the absolute start deadlines of open-loop batches (constant rate or
// Poisson arrivals). It has no goroutines and never sleeps; packages server
// and batch drive it.
package schedule

import "math"

// Plan is the emission schedule of one stream: after Think, one token every
// Delay. All values are nanoseconds.
type Plan struct {
	Start  int64 // when the stream began (the role chunk was written)
	Think  int64 // delay before the first token
	Delay  int64 // gap between consecutive tokens
	Tokens int   // number of content tokens
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

// Deadline returns the absolute time at which token k (from 0) is due:
// Start + Think + k·Delay, saturating instead of overflowing.
func (p Plan) Deadline(k int) int64 {
	off := p.Think
	if k > 0 && p.Delay > 0 {
		if p.Delay > (math.MaxInt64-off)/int64(k) {
			return math.MaxInt64
		}
		off += int64(k) * p.Delay
	}
	if off > math.MaxInt64-p.Start {
		return math.MaxInt64
	}
	return p.Start + off
}

// End returns when the last token is due (Start+Think when there are none).
func (p Plan) End() int64 {
	if p.Tokens <= 0 {
		return p.Deadline(0)
	}
	return p.Deadline(p.Tokens - 1)
}

// Duration is the length of one stream in nanoseconds: Think + Delay·(n−1).
func (p Plan) Duration() int64 { return p.End() - p.Start }

// Waves is how many rounds of concurrency it takes to run requests requests
// with concurrency slots: ceil(requests/concurrency).
func Waves(requests, concurrency int) int {
	if concurrency < 1 {
		concurrency = 1
	}
	return (requests + concurrency - 1) / concurrency
}
