package summary

import (
	"fmt"
	"math"

	"github.com/sse-latency/sse-latency/internal/clocksync"
	"github.com/sse-latency/sse-latency/internal/stats"
)

// Clock is what a run across hosts knows of the offset between the
// server's clock and its own (package clocksync), in milliseconds. Every
// figure that compares a server time with a client time — the emit->recv
// metrics, the request leg, the verdict's added delay — carries an error
// of up to BoundMs; one whose magnitude is below it is not exact, and is
// listed in BelowBound (the reports mark it).
type Clock struct {
	OffsetMs   float64  `json:"offset_ms"`   // server clock − client clock, the latest estimate
	BoundMs    float64  `json:"bound_ms"`    // the error bound of every converted time: the largest estimate's bound plus the drift
	DriftMs    float64  `json:"drift_ms"`    // the largest change between consecutive estimates beyond their bounds
	Estimates  int      `json:"estimates"`   // bursts of exchanges made (before the run, then periodically)
	MinRTTMs   float64  `json:"min_rtt_ms"`  // the shortest round trip of an exchange
	BelowBound []string `json:"below_bound"` // the figures, as paths in the document, whose magnitude is below bound_ms
}

// NewClock converts a run's clocksync figures.
func NewClock(s clocksync.Summary) *Clock {
	return &Clock{OffsetMs: stats.Ms(s.Offset), BoundMs: stats.Ms(s.Bound), DriftMs: stats.Ms(s.Drift), Estimates: s.Estimates,
		MinRTTMs: stats.Ms(s.MinRTT), BelowBound: []string{}}
}

// Below reports whether v (ms), a figure that compares the two clocks, is
// smaller in magnitude than the bound: within the clock's error, not
// exact. Always false without a Clock (one process: one clock).
func (c *Clock) Below(v float64) bool { return c != nil && math.Abs(v) < c.BoundMs }

// TwoClockMetrics returns the metrics of b that compare a server time with
// a client time, with their paths in the document (relative to the batch).
func (b *Batch) TwoClockMetrics() []NamedMetric {
	out := []NamedMetric{{"metrics.first_emit_recv", &b.Metrics.FirstEmitRecv}, {"metrics.emit_recv", &b.Metrics.EmitRecv}}
	if b.RequestLeg != nil {
		out = append(out, NamedMetric{"request_leg", b.RequestLeg})
	}
	return out
}

// Figures returns m's figures that a clock offset shifts, by their JSON
// names: not its spread (stddev), which no constant offset changes.
func (m *Metric) Figures() []NamedFigure {
	return []NamedFigure{{"mean_ms", m.MeanMs}, {"min_ms", m.MinMs}, {"p50_ms", m.P50Ms}, {"p90_ms", m.P90Ms},
		{"p95_ms", m.P95Ms}, {"p99_ms", m.P99Ms}, {"p99_9_ms", m.P999Ms}, {"max_ms", m.MaxMs}}
}

// NamedFigure is one figure with its JSON name.
type NamedFigure struct {
	Name  string
	Value float64
}

// MarkBelowBound lists in r.Clock.BelowBound every two-clock figure of r
// below the bound: those of the batches' two-clock metrics (with samples),
// of the overhead's emit->recv lines and of the verdict's added delay.
// Without a Clock it does nothing.
func (r *Run) MarkBelowBound() {
	c := r.Clock
	if c == nil {
		return
	}
	c.BelowBound = []string{}
	mark := func(path string, v float64) {
		if c.Below(v) {
			c.BelowBound = append(c.BelowBound, path)
		}
	}
	for i := range r.Batches {
		for _, nm := range r.Batches[i].TwoClockMetrics() {
			if nm.Metric.N == 0 {
				continue
			}
			for _, f := range nm.Metric.Figures() {
				mark(fmt.Sprintf("batches[%d].%s.%s", i, nm.Name, f.Name), f.Value)
			}
		}
	}
	if o := r.Overhead; o != nil {
		for _, d := range []struct {
			name  string
			delta *Delta
		}{{"first_emit_recv", o.FirstEmitRecv}, {"emit_recv", o.EmitRecv}} {
			if d.delta == nil {
				continue
			}
			for _, f := range []NamedFigure{{"mean_ms", d.delta.MeanMs}, {"p50_ms", d.delta.P50Ms}, {"p95_ms", d.delta.P95Ms}, {"p99_ms", d.delta.P99Ms}} {
				mark("overhead."+d.name+"."+f.Name, f.Value)
			}
		}
	}
	if v := r.Verdict; v != nil && v.Tokens > 0 {
		for _, f := range []NamedFigure{{"added_mean_ms", v.AddedMeanMs}, {"added_p50_ms", v.AddedP50Ms}, {"added_p99_ms", v.AddedP99Ms}} {
			mark("verdict."+f.Name, f.Value)
		}
	}
}
