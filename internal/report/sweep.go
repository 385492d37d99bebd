package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/sse-latency/sse-latency/internal/failures"
	"github.com/sse-latency/sse-latency/internal/rundoc"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/sweep"
)

// WriteSweep writes the report of a sweep's document (Go tool only): one
// line per step done with the overhead at that load — gateway minus
// loopback, in milliseconds, for the emit->recv of the tokens and the
// TTFT, p50 and p99 — the verdict, the gateway's state (ok, the knee, or
// beyond it; FAILING when more than sweep.FailingShare of the step's
// requests failed) and the tool's (ok, or saturated: the step then
// measured the tool), and when the gateway's processes were accounted
// their CPU per token and in cores; then the knee, the failing steps, the
// step where the gateway saturated a core, and the steps where the tool
// saturated, in words.
//
//	=== sweep: concurrency, 3 of 3 steps, each 1 loopback + 1 gateway round ===
//	gateway: nginx/1.22.1 (Server header; local process 1398 nginx)
//	                        added emit->recv (ms)   added TTFT (ms)
//	concurrency  ok/failed       p50       p99       p50       p99  verdict   gateway  tool
//	          1       20/0    +0.034    +0.148    +0.135    +0.200  flushes   ok       ok
//	         10       20/0    +0.040    +0.300    +0.150    +0.310  flushes   ok       ok
//	         50       50/0    +0.900    +2.345    +0.800    +3.100  flushes   KNEE     ok
//	knee: concurrency 50: added emit->recv p99 +2.345ms exceeds the 1.000ms threshold
//
// The gateway line (the first step's gateway, named) is absent from
// documents written before it. A step without calibration gives the
// gateway's own figures, unsigned.
func WriteSweep(w io.Writer, d *rundoc.Document) error {
	s := d.Sweep
	if s == nil {
		return nil
	}
	p := printer{w: w}
	name := axisName(s.Axis)
	p.printf("\n=== sweep: %s, %d of %d steps, each %s ===\n", name, len(s.Steps), len(s.Values), roundsText(s.Rounds))
	if len(s.Steps) > 0 && s.Steps[0].Run.Identity != nil {
		p.printf("gateway: %s\n", s.Steps[0].Run.Identity.String())
	}
	width := max(len(name), 11)
	costs := sweepCosts(s)
	p.printf("%*s  %9s   %-21s %s\n", width, "", "", "added emit->recv (ms)", "  added TTFT (ms)")
	head := fmt.Sprintf("%*s  %9s %9s %9s %9s %9s  %-8s  %-7s  %s", width, name, "ok/failed", "p50", "p99", "p50", "p99", "verdict", "gateway", "tool")
	if costs {
		head += fmt.Sprintf("%*s  %s", 10-len("tool"), "", "gateway cpu")
	}
	p.printf("%s\n", head)
	for i := range s.Steps {
		st := &s.Steps[i]
		cells := stepCells(&st.Run)
		row := fmt.Sprintf("%*s  %9s %9s %9s %9s %9s  %-8s  %-7s  %s", width, sweep.FormatValue(s.Axis, st.Value), okFailed(&st.Run),
			cells[0], cells[1], cells[2], cells[3], verdictClass(&st.Run), gatewayState(s, i), toolState(st))
		if costs {
			row += fmt.Sprintf("%*s  %s", 10-len(toolState(st)), "", stepCost(&st.Run))
		}
		p.printf("%s\n", row)
	}
	if len(s.Steps) > 0 {
		if k := s.Knee; k != nil {
			p.printf("knee: %s\n", k.Text)
		} else {
			last := &s.Steps[len(s.Steps)-1]
			p.printf("knee: none up to %s %s (added emit->recv p99 within %.3fms, and growing no faster than the load)\n",
				name, sweep.FormatValue(s.Axis, last.Value), s.KneeThresholdMs)
		}
	}
	if g := s.GatewaySaturated; g != nil {
		p.printf("gateway saturated a core at %s %s: %.2f cores, %.3fus/token; from there a single-threaded gateway cannot keep up\n",
			name, sweep.FormatValue(s.Axis, g.Value), g.Cores, g.CPUPerTokenUs)
	}
	for i := range s.Steps {
		if st := &s.Steps[i]; st.Failing {
			p.printf("failing at %s %s: %s\n", name, sweep.FormatValue(s.Axis, st.Value), failures.Sanitize(st.FailingReason))
		}
	}
	for i := range s.Steps {
		if st := &s.Steps[i]; st.ToolSaturated {
			p.printf("tool saturated at %s %s: %s; that step measured sse-latency's own load, not the gateway's\n",
				name, sweep.FormatValue(s.Axis, st.Value), st.ToolReason)
		}
	}
	return p.err
}

// SweepStepLine is the line a sweep prints on stderr as each step ends.
func SweepStepLine(axis string, st *sweep.Step) string {
	c := stepCells(&st.Run)
	gw := verdictClass(&st.Run)
	if st.Failing {
		gw += ", FAILING: " + failures.Sanitize(st.FailingReason)
	}
	line := fmt.Sprintf("  %s %s: %s ok/failed, added emit->recv p50 %s p99 %s ms, TTFT p50 %s p99 %s ms; gateway %s; tool %s",
		axisName(axis), sweep.FormatValue(axis, st.Value), okFailed(&st.Run), c[0], c[1], c[2], c[3], gw,
		map[bool]string{true: "saturated (" + st.ToolReason + ")", false: "ok"}[st.ToolSaturated])
	if cost := stepCost(&st.Run); cost != "n/a" {
		line += "; gateway cpu " + cost
	}
	return line
}

// sweepCosts reports whether any step of s accounted the gateway's
// processes: then the report has a column of their CPU.
func sweepCosts(s *sweep.Sweep) bool {
	for i := range s.Steps {
		if g := s.Steps[i].Gateway(); g != nil && g.Cost != nil && g.Cost.Gateway != nil && g.Cost.Gateway.Unseen == "" {
			return true
		}
	}
	return false
}

// stepCost is a step's gateway CPU, "12.300us/token 0.42 cores", or
// "n/a".
func stepCost(r *summary.Run) string {
	g := r.Gateway()
	if g == nil || g.Cost == nil || g.Cost.Gateway == nil || g.Cost.Gateway.Unseen != "" {
		return "n/a"
	}
	c := g.Cost.Gateway
	s := fmt.Sprintf("%.3fus/token %.2f cores", c.CPUPerTokenUs, c.Cores)
	if c.SaturatesCore() {
		s += " SATURATED"
	}
	return s
}

// axisName is the axis as its flag names it.
func axisName(axis string) string { return strings.TrimPrefix(sweep.Flag(axis), "--") }

// roundsText words the rounds of each step.
func roundsText(pairs int) string {
	if pairs == 1 {
		return "1 loopback + 1 gateway round"
	}
	return fmt.Sprintf("%d loopback + %d gateway rounds, alternated", pairs, pairs)
}

// stepCells are a step's added emit->recv p50 and p99 and added TTFT p50
// and p99 ("n/a" without samples); without calibration, the gateway's own.
func stepCells(r *summary.Run) [4]string {
	out := [4]string{"n/a", "n/a", "n/a", "n/a"}
	if o := r.Overhead; o != nil {
		for i, d := range []*summary.Delta{o.EmitRecv, o.TTFT} {
			if d != nil {
				out[2*i], out[2*i+1] = fmt.Sprintf("%+.3f", d.P50Ms), fmt.Sprintf("%+.3f", d.P99Ms)
			}
		}
		return out
	}
	if g := r.Gateway(); g != nil {
		for i, m := range []*summary.Metric{&g.Metrics.EmitRecv, &g.Metrics.TTFT} {
			if m.N > 0 {
				out[2*i], out[2*i+1] = fmt.Sprintf("%.3f", m.P50Ms), fmt.Sprintf("%.3f", m.P99Ms)
			}
		}
	}
	return out
}

// okFailed is a step's gateway requests, "ok/failed".
func okFailed(r *summary.Run) string {
	if g := r.Gateway(); g != nil {
		return fmt.Sprintf("%d/%d", g.OK, g.Failed)
	}
	return "0/0"
}

// verdictClass is a step's verdict class, "none" without one.
func verdictClass(r *summary.Run) string {
	if r.Verdict == nil {
		return "none"
	}
	return r.Verdict.Class.String()
}

// gatewayState is the gateway's state at step i: FAILING when it failed
// too many requests there (sweep.Failing), else ok before the knee, KNEE
// at it, beyond after it.
func gatewayState(s *sweep.Sweep, i int) string {
	switch k := s.Knee; {
	case s.Steps[i].Failing:
		return "FAILING"
	case k == nil || i < k.Step:
		return "ok"
	case i == k.Step:
		return "KNEE"
	}
	return "beyond"
}

// toolState is the tool's state at a step.
func toolState(st *sweep.Step) string {
	if st.ToolSaturated {
		return "SATURATED"
	}
	return "ok"
}
