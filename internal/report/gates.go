package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/sse-latency/sse-latency/internal/slo"
	"github.com/sse-latency/sse-latency/internal/summary"
)

// This file holds the Go tool's blocks of an interleaved run, a gateway's
// declared timings and the objectives: the rounds, declared and SLO blocks
// WriteText prints after the stream block.

// WriteRounds writes the rounds block of an interleaved run (--rounds):
// each round's requests and figures in the order they ran, then, for the
// emit->recv and TTFT p50 and p99, the median over rounds of each side
// with its range, and the added figure (the overhead block's) with the
// range of the pairs' differences.
//
//	=== rounds: 2 pairs, L G G L; the overhead is the difference of the sides' medians ===
//	round  batch     requests  failed  emit->recv p50       p99   TTFT p50       p99
//	1      loopback        20       0         0.031ms   0.120ms    0.400ms   0.500ms
//	…
//	median of rounds (lowest..highest)
//	emit->recv p50     loopback 0.031ms (0.030..0.033)  gateway 0.065ms (0.060..0.070)  added +0.034ms (+0.028..+0.040)
//	…
func WriteRounds(w io.Writer, r *summary.Rounds) error {
	p := printer{w: w}
	order := strings.Join(strings.Split(r.Order, ""), " ")
	p.printf("=== rounds: %d pairs, %s; the overhead is the difference of the sides' medians ===\n", pairsOf(r), order)
	p.printf("%-6s %-9s %8s %7s %15s %9s %10s %9s\n", "round", "batch", "requests", "failed", "emit->recv p50", "p99", "TTFT p50", "p99")
	for i, rd := range r.Rounds {
		m := &rd.Metrics
		p.printf("%-6d %-9s %8d %7d %15s %9s %10s %9s\n", i+1, rd.Batch, rd.Requests, rd.Failed,
			msOrNA(&m.EmitRecv, m.EmitRecv.P50Ms), msOrNA(&m.EmitRecv, m.EmitRecv.P99Ms),
			msOrNA(&m.TTFT, m.TTFT.P50Ms), msOrNA(&m.TTFT, m.TTFT.P99Ms))
	}
	p.printf("median of rounds (lowest..highest)\n")
	for _, row := range []struct {
		name     string
		loop, gw *summary.RoundStat
		added    *summary.RoundStat
	}{
		{"emit->recv p50", &r.Loopback.EmitRecv.P50, &r.Gateway.EmitRecv.P50, &r.Added.EmitRecv.P50},
		{"emit->recv p99", &r.Loopback.EmitRecv.P99, &r.Gateway.EmitRecv.P99, &r.Added.EmitRecv.P99},
		{"TTFT p50", &r.Loopback.TTFT.P50, &r.Gateway.TTFT.P50, &r.Added.TTFT.P50},
		{"TTFT p99", &r.Loopback.TTFT.P99, &r.Gateway.TTFT.P99, &r.Added.TTFT.P99},
	} {
		p.printf("%-18s", row.name)
		if row.loop.N > 0 {
			p.printf(" loopback %s", roundStat(row.loop, "%.3f"))
		}
		p.printf(" gateway %s", roundStat(row.gw, "%.3f"))
		if row.loop.N > 0 && row.added.N > 0 {
			p.printf(" added %s", roundStat(row.added, "%+.3f"))
		}
		p.printf("\n")
	}
	return p.err
}

// pairsOf is the number of pairs of rounds (gateway rounds).
func pairsOf(r *summary.Rounds) int { return strings.Count(r.Order, "G") }

// roundStat prints a statistic over rounds as "0.031ms (0.030..0.033)",
// each number in format; "n/a" without rounds with samples.
func roundStat(s *summary.RoundStat, format string) string {
	if s.N == 0 {
		return "n/a"
	}
	return fmt.Sprintf(format+"ms ("+format+".."+format+")", s.MedianMs, s.MinMs, s.MaxMs)
}

// msOrNA prints v in milliseconds, "n/a" when m has no samples.
func msOrNA(m *summary.Metric, v float64) string {
	if m.N == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.3fms", v)
}

// WriteDeclared writes, for each batch with declared timings, what its
// gateway declared of itself beside what the tool observed: each header
// or Server-Timing metric with the requests that had it, those that did
// not, and its mean, p50 and p99; then the observed overhead on the time
// to first token (gateway minus loopback; the gateway's own TTFT without
// calibration), which a gateway's account should explain. Nothing when no
// head declared anything.
//
//	=== declared by the gateway vs observed ===
//	gateway  x-litellm-overhead-duration-ms (overhead)  20 of 20 requests  mean 0.812ms  p50 0.800ms  p99 1.200ms
//	gateway  server-timing:gw  18 of 20 requests, 2 without it  mean 0.310ms  p50 0.300ms  p99 0.500ms
//	observed added TTFT (client)  mean +1.215ms  p50 +1.200ms  p99 +2.100ms  (gateway minus loopback)
func WriteDeclared(w io.Writer, s *summary.Run) error {
	rows, notes := declaredRows(s)
	if rows == nil {
		return nil
	}
	p := printer{w: w}
	p.printf("=== declared by the gateway vs observed ===\n")
	for _, r := range rows {
		p.printf("%-8s %s  %s", r.batch, r.source, r.counts)
		if m := r.metric; m.N > 0 {
			p.printf("  mean %.3fms  p50 %.3fms  p99 %.3fms", m.MeanMs, m.P50Ms, m.P99Ms)
		}
		p.printf("\n")
	}
	for _, n := range notes {
		p.printf("%s\n", n)
	}
	if o, ok := observedTTFT(s); ok {
		p.printf("observed %s  mean %sms  p50 %sms  p99 %sms  (%s)\n", o.name, o.cells[0], o.cells[1], o.cells[2], o.what)
	}
	return p.err
}

// declaredRow is one declared timing of one batch, as the reports word it.
type declaredRow struct {
	batch, source, counts string
	metric                *summary.Metric
}

// declaredRows words the declared timings of s's batches, with a note per
// batch that dropped Server-Timing names; nil rows when no batch has any.
func declaredRows(s *summary.Run) (rows []declaredRow, notes []string) {
	for i := range s.Batches {
		b := &s.Batches[i]
		if b.Declared == nil {
			continue
		}
		for j := range b.Declared.Figures {
			f := &b.Declared.Figures[j]
			src := f.Source
			if f.Overhead {
				src += " (overhead)"
			}
			rows = append(rows, declaredRow{b.Name, src, declaredCounts(f, b.Declared.Heads), &f.Metric})
		}
		if n := b.Declared.Dropped; n > 0 {
			notes = append(notes, fmt.Sprintf("%-8s %d Server-Timing durations of further names ignored (at most %d sources)",
				b.Name, n, summary.MaxDeclaredSources))
		}
	}
	return rows, notes
}

// declaredCounts words how many heads had a declared timing.
func declaredCounts(f *summary.Declared, heads int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d requests", f.Requests, heads)
	if f.Missing > 0 {
		fmt.Fprintf(&b, ", %d without it", f.Missing)
	}
	if f.Invalid > 0 {
		fmt.Fprintf(&b, ", %d unreadable", f.Invalid)
	}
	return b.String()
}

// observed is the overhead a gateway's declared timings should explain:
// the added TTFT's mean, p50 and p99 (ms, signed), or without calibration
// the gateway's own TTFT.
type observed struct {
	name, what string
	cells      [3]string
}

// observedTTFT returns the observed figure of s; false when s has none.
func observedTTFT(s *summary.Run) (observed, bool) {
	switch gw := s.Gateway(); {
	case s.Overhead != nil && s.Overhead.TTFT != nil:
		d := s.Overhead.TTFT
		return observed{"added TTFT (client)", "gateway minus loopback",
			[3]string{fmt.Sprintf("%+.3f", d.MeanMs), fmt.Sprintf("%+.3f", d.P50Ms), fmt.Sprintf("%+.3f", d.P99Ms)}}, true
	case gw != nil && gw.Metrics.TTFT.N > 0:
		m := &gw.Metrics.TTFT
		return observed{"TTFT (client)", "no calibration to subtract",
			[3]string{fmt.Sprintf("%.3f", m.MeanMs), fmt.Sprintf("%.3f", m.P50Ms), fmt.Sprintf("%.3f", m.P99Ms)}}, true
	}
	return observed{}, false
}

// WriteSLO writes the objectives block: each objective, met or not, with
// the figure observed (or why there is none), then the goodput when an
// objective is per request.
//
//	=== SLO ===
//	met       gateway emit->recv (tokens) p99 < 1ms: 0.150ms
//	NOT MET   added TTFT (client) p50 < 0.1ms: +0.135ms
//	goodput   18 of 20 gateway requests (90.0%) succeeded within every per-request objective
func WriteSLO(w io.Writer, s *summary.SLOs) error {
	p := printer{w: w}
	p.printf("=== SLO ===\n")
	for _, c := range s.Checks {
		p.printf("%-9s %s: %s\n", sloState(c.Met), c.SLO, sloObserved(&c))
	}
	if g := s.Goodput; g != nil {
		p.printf("%-9s %d of %d gateway requests (%.1f%%) succeeded within every per-request objective\n",
			"goodput", g.Good, g.Requests, 100*g.Share)
	}
	return p.err
}

func sloState(met bool) string {
	if met {
		return "met"
	}
	return "NOT MET"
}

// sloObserved is the figure a check observed, signed for an added one, or
// why there is none.
func sloObserved(c *summary.SLOCheck) string {
	switch {
	case c.Reason != "":
		return c.Reason
	case strings.HasPrefix(c.SLO, "added "):
		return fmt.Sprintf("%+.3fms", c.ObservedMs)
	}
	return fmt.Sprintf("%.3fms", c.ObservedMs)
}

// sloWarnings are the lines of Warnings for the objectives not met.
func sloWarnings(s *summary.SLOs) []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, c := range s.Checks {
		if !c.Met {
			out = append(out, fmt.Sprintf("SLO not met: %s (observed %s)", c.SLO, sloObserved(&c)))
		}
	}
	return out
}

// WriteFailIf writes the block of compare --fail-if: each condition, the
// figures before and after (the median of a run's rounds, with their range
// when it has rounds), the change against the threshold, and whether it
// fails — only when the change exceeds the threshold and lies beyond the
// rounds' spread.
//
//	=== fail-if ===
//	FAIL  gateway emit->recv (tokens) p99 +20%: 0.150ms (0.140..0.160, 3 rounds) -> 0.300ms (0.280..0.330, 3 rounds): +0.150ms > +0.030ms, beyond the rounds' spread
//	ok    added TTFT (client) p50 +0.5ms: +0.100ms -> +0.200ms: +0.100ms <= +0.500ms (no rounds: the threshold alone decides)
func WriteFailIf(w io.Writer, vs []slo.Verdict) error {
	p := printer{w: w}
	p.printf("=== fail-if ===\n")
	for _, v := range vs {
		if v.Reason != "" {
			p.printf("%-5s %s: cannot be evaluated: %s\n", "ERROR", v.Cond, v.Reason)
			continue
		}
		state := "ok"
		if v.Fail {
			state = "FAIL"
		}
		cmp := "<="
		if v.Exceeds {
			cmp = ">"
		}
		noise := "within the rounds' spread"
		switch {
		case v.Before.Rounds == 0 && v.After.Rounds == 0:
			noise = "no rounds: the threshold alone decides"
		case v.BeyondSpread:
			noise = "beyond the rounds' spread"
		}
		p.printf("%-5s %s: %s -> %s: %+.3fms %s %+.3fms, %s\n", state, v.Cond, spreadText(v.Before), spreadText(v.After),
			v.ChangeMs, cmp, v.ThresholdMs, noise)
	}
	return p.err
}

// spreadText prints a figure and, from rounds, its range.
func spreadText(s slo.Spread) string {
	if s.Rounds == 0 {
		return fmt.Sprintf("%.3fms", s.Ms)
	}
	return fmt.Sprintf("%.3fms (%.3f..%.3f, %d rounds)", s.Ms, s.MinMs, s.MaxMs, s.Rounds)
}
