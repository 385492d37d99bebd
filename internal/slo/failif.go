package slo

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/sse-latency/sse-latency/internal/summary"
)

// FailIf is a regression condition of `compare --fail-if`: a figure that
// must not grow from the run before to the run after by more than a
// threshold — and by more than the noise of the runs' rounds.
type FailIf struct {
	Scope, Metric, Stat string
	// The threshold: Percent of the value before (Relative), or Ms
	// milliseconds.
	Relative bool
	Percent  float64
	Ms       float64
}

// FailIfSyntax is the form of a condition, for messages and help.
const FailIfSyntax = `[gateway|loopback|added] <metric> <stat> +<number>% | +<number><unit>, or [gateway|tool] cpu/token|cpu/stream +<threshold>`

// ParseFailIf reads a condition such as "emit->recv p99 +20%" or "added
// TTFT p50 +0.5ms":
//
//	[gateway|loopback|added] <metric> <stat> +<number>%
//	[gateway|loopback|added] <metric> <stat> +<number><unit>
//
// with the batch, metric and units of Parse, and stat mean, p50, p95 or
// p99 (the statistics rounds keep). The threshold is a growth: it takes a
// leading + and may not be negative. Its errors wrap ErrSyntax and name the
// part that is wrong.
func ParseFailIf(s string) (FailIf, error) {
	f, rest, err := parseFigure(s, "--fail-if", overheadStats)
	c := FailIf{Scope: f.Scope, Metric: f.Metric, Stat: f.Stat}
	if err != nil {
		return c, err
	}
	th, ok := strings.CutPrefix(rest, "+")
	if !ok {
		return c, fmt.Errorf("%w --fail-if %q: after %q want a threshold such as +20%% or +0.5ms, got %q", ErrSyntax, s, c.Stat, firstWord(rest))
	}
	th = strings.TrimSpace(th)
	if pct, ok := strings.CutSuffix(th, "%"); ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return c, fmt.Errorf("%w --fail-if %q: threshold %q: %q is not a number of percent >= 0", ErrSyntax, s, "+"+th, pct)
		}
		c.Relative, c.Percent = true, v
		return c, nil
	}
	v, err := parseDuration(th)
	if err != nil {
		return c, fmt.Errorf("%w --fail-if %q: threshold: %v", ErrSyntax, s, err)
	}
	if v < 0 {
		return c, fmt.Errorf("%w --fail-if %q: threshold %q is negative", ErrSyntax, s, "+"+th)
	}
	c.Ms = v
	return c, nil
}

// String writes the condition as ParseFailIf reads it back: "gateway
// emit->recv (tokens) p99 +20%".
func (c FailIf) String() string {
	th := strconv.FormatFloat(c.Ms, 'g', -1, 64) + "ms"
	if c.Relative {
		th = strconv.FormatFloat(c.Percent, 'g', -1, 64) + "%"
	}
	if IsCost(c.Metric) {
		return fmt.Sprintf("%s %s +%s", c.Scope, reportName[c.Metric], th)
	}
	return fmt.Sprintf("%s %s %s +%s", c.Scope, reportName[c.Metric], c.Stat, th)
}

// Spread is a figure of a run and the range its rounds' values fall in;
// a run without rounds has a range of its value alone.
type Spread struct {
	Ms, MinMs, MaxMs float64
	Rounds           int // the rounds it comes from; 0 without rounds
}

// Verdict is a condition evaluated on two runs.
type Verdict struct {
	Cond          string  // the condition, as String writes it
	Before, After Spread  // the figures
	ChangeMs      float64 // after minus before
	ThresholdMs   float64 // the threshold, in milliseconds (a relative one of |before|)
	// Exceeds: the change is above the threshold. BeyondSpread: every
	// round after is worse than every round before (after's lowest above
	// before's highest); without rounds on either side that is after >
	// before. Fail: both.
	Exceeds, BeyondSpread, Fail bool
	// Reason says why the condition could not be evaluated (a figure
	// missing on a side); Fail is then false, and the caller decides.
	Reason string
}

// Eval evaluates the condition on the run before and the run after (see
// the rule in Verdict): the figure is the rounds' median, with their range,
// when a run has rounds, else its single value (the batch's statistic, or
// the overhead's).
func (c FailIf) Eval(before, after *summary.Run) Verdict {
	v := Verdict{Cond: c.String()}
	var reason string
	if v.Before, reason = c.spread(before); reason != "" {
		v.Reason = "before: " + reason
		return v
	}
	if v.After, reason = c.spread(after); reason != "" {
		v.Reason = "after: " + reason
		return v
	}
	v.ChangeMs = v.After.Ms - v.Before.Ms
	v.ThresholdMs = c.Ms
	if c.Relative {
		v.ThresholdMs = c.Percent / 100 * math.Abs(v.Before.Ms)
	}
	v.Exceeds = v.ChangeMs > v.ThresholdMs
	v.BeyondSpread = v.After.MinMs > v.Before.MaxMs
	v.Fail = v.Exceeds && v.BeyondSpread
	return v
}

// spread returns the condition's figure in run, or why there is none.
func (c FailIf) spread(run *summary.Run) (Spread, string) {
	if IsCost(c.Metric) {
		return c.costSpread(run)
	}
	if r := run.Rounds; r != nil {
		figs := map[string]*summary.RoundFigures{ScopeGateway: &r.Gateway, ScopeLoopback: &r.Loopback, ScopeAdded: &r.Added}[c.Scope]
		var m *summary.RoundMetric
		for _, nm := range figs.Named() {
			if key := metricNames[strings.ToLower(nm.Name)]; key == c.Metric {
				m = nm.Metric
			}
		}
		st := m.Stat(c.Stat)
		if st.N == 0 {
			return Spread{}, "no rounds with samples of " + reportName[c.Metric]
		}
		return Spread{Ms: st.MedianMs, MinMs: st.MinMs, MaxMs: st.MaxMs, Rounds: st.N}, ""
	}
	v, reason := value(run, figure{c.Scope, c.Metric, c.Stat})
	return Spread{Ms: v, MinMs: v, MaxMs: v}, reason
}

// costSpread is spread for a cost figure: the median and range of the
// gateway rounds' costs with rounds, else the gateway batch's.
func (c FailIf) costSpread(run *summary.Run) (Spread, string) {
	f := figure{c.Scope, c.Metric, c.Stat}
	if r := run.Rounds; r != nil {
		var xs []float64
		why := "no gateway rounds"
		for i := range r.Rounds {
			if rd := &r.Rounds[i]; rd.Batch == summary.GatewayBatch {
				v, reason := costValue(rd.Cost, f)
				if reason != "" {
					why = reason
					continue
				}
				xs = append(xs, v)
			}
		}
		if len(xs) == 0 {
			return Spread{}, why
		}
		st := summary.NewRoundStat(xs)
		return Spread{Ms: st.MedianMs, MinMs: st.MinMs, MaxMs: st.MaxMs, Rounds: st.N}, ""
	}
	v, reason := value(run, f)
	return Spread{Ms: v, MinMs: v, MaxMs: v}, reason
}
