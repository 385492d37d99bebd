// Package report renders what the tool prints, from the records (the
// per-request lines, --csv) and from the run's summary (package summary):
// the text report, the verdict and stream blocks, the warnings, the HTML
// page with its SVG charts, the progress line. A saved run (package rundoc)
// renders through the same functions.
//
// This file holds the text of the reference tool, reproduced byte for byte
// (SPEC §6): the per-request lines, the batch and overhead blocks, the
// duration estimate and the progress line. Every format string cites the
// SPEC line it reproduces.
//
// Numbers follow the reference's C printf formats; the Go verbs used here
// (%d, %3d, %-24s, %.2f, %9.2f, %.3f, %+.3f, %02d) print the same bytes as
// their C namesakes, including "-0.000" for a tiny negative difference. No %g
// or %v is used for numbers.
package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/summary"
)

// EraseLine erases the progress line before any other line is printed on a
// terminal (SPEC §6: "erased (`\r\033[K`)").
const EraseLine = "\r\033[K"

// expectThresholdMs is the estimated batch duration above which the
// expectation line is printed (SPEC §6: "when ... exceeds 30 s").
const expectThresholdMs = 30_000

// nsPerMs and nsPerS convert the records' nanoseconds to printed units.
const (
	nsPerMs = 1e6
	nsPerS  = 1e9
)

// WriteRequestLine writes the per-request line of r (SPEC §6, stdout, per
// request unless -q). The tag is r.Batch ("loop" or "gw"), the index r.Index.
// Its figures are those of the visible text tokens, the reference's
// content tokens (result.Request.Visible): ttft and emit-delay are the
// first one's. A first token without an emission stamp (never produced by
// the reference, which ignores chunks without pi_ts) prints "n/a" in the
// emit-delay field.
func WriteRequestLine(w io.Writer, r *result.Request) error {
	var err error
	if !r.OK() {
		// SPEC §6: "gw   1: FAILED: connection closed before [DONE]"
		_, err = fmt.Fprintf(w, "%s %3d: FAILED: %s\n", r.Batch, r.Index, r.Failure.Error())
		return err
	}
	var ttft, emit int64
	stamped := true
	if first, ok := r.FirstVisible(); ok {
		ttft = first.Arrived - r.Sent
		emit = first.Arrived - first.Emitted
		stamped = first.Emitted != 0
	}
	tokens := r.VisibleCount()
	wall := float64(r.End-r.Start) / nsPerS
	if !stamped {
		// Go tool, no SPEC line: the columns of the line below, "n/a" for the delay.
		_, err = fmt.Fprintf(w, "%s %3d: ok  ttft=%9.2fms  emit-delay(first)=%9s    tokens=%d  wall=%.3fs\n",
			r.Batch, r.Index, stats.Ms(ttft), "n/a", tokens, wall)
		return err
	}
	// SPEC §6: "gw   0: ok  ttft=     0.18ms  emit-delay(first)=     0.03ms  tokens=1000  wall=5.004s"
	_, err = fmt.Fprintf(w, "%s %3d: ok  ttft=%9.2fms  emit-delay(first)=%9.2fms  tokens=%d  wall=%.3fs\n",
		r.Batch, r.Index, stats.Ms(ttft), stats.Ms(emit), tokens, wall)
	return err
}

// WriteBatch writes the block of one batch (SPEC §6): its title line and one
// line per metric.
func WriteBatch(w io.Writer, b *summary.Batch) error { return writeBatch(w, b, nil) }

// writeBatch is WriteBatch with the figures of the two-clock metrics (the
// emit->recv lines) within clock c's bound marked (markMs); nil marks
// nothing, and prints the reference's lines.
func writeBatch(w io.Writer, b *summary.Batch, c *summary.Clock) error {
	// SPEC §6: "=== loopback (direct to listen address): 3 requests, 3 ok, 0 failed, 600 tokens ==="
	if _, err := fmt.Fprintf(w, "=== %s: %d requests, %d ok, %d failed, %d tokens ===\n",
		b.Title(), b.Requests, b.OK, b.Failed, b.Tokens); err != nil {
		return err
	}
	twoClock := b.TwoClockMetrics()
	for _, nm := range b.Metrics.Named() {
		var mc *summary.Clock
		if slices.ContainsFunc(twoClock, func(t summary.NamedMetric) bool { return t.Metric == nm.Metric }) {
			mc = c
		}
		if err := writeMetricLine(w, nm.Name, nm.Metric, mc); err != nil {
			return err
		}
	}
	return nil
}

// writeMetricLine writes one metric line of a batch block. As in every line
// of the batch and overhead blocks, the name is padded to 24 columns and
// followed by one space: the SPEC's example lines have their values in
// column 26.
//
// Across hosts (c not nil) a figure within the clock's bound is followed by
// a * (markMs); without one marked, the line is the reference's.
func writeMetricLine(w io.Writer, name string, m *summary.Metric, c *summary.Clock) error {
	var err error
	if m.N == 0 {
		// SPEC §6: "an empty metric prints `n=0`"
		_, err = fmt.Fprintf(w, "%-24s n=0\n", name)
		return err
	}
	f := func(v float64) string { return markMs(c, "%.2fms", v) }
	// SPEC §6: "TTFT (client)            n=3  mean=0.04ms  min=0.04ms  p50=0.04ms  p95=0.04ms  p99=0.04ms  max=0.04ms"
	_, err = fmt.Fprintf(w, "%-24s n=%d  mean=%s  min=%s  p50=%s  p95=%s  p99=%s  max=%s\n",
		name, m.N, f(m.MeanMs), f(m.MinMs), f(m.P50Ms), f(m.P95Ms), f(m.P99Ms), f(m.MaxMs))
	return err
}

// markMs formats v (ms) with format, followed by a * when it compares the
// two clocks of a run across hosts and is within the bound of their
// offset (c.Below): not an exact figure. c nil (one clock) marks nothing.
func markMs(c *summary.Clock, format string, v float64) string {
	s := fmt.Sprintf(format, v)
	if c.Below(v) {
		s += "*"
	}
	return s
}

// WriteOverhead writes the gateway overhead block (SPEC §6): for each metric,
// the gateway's mean and percentiles minus the loopback's (summary.Overhead,
// computed once from the two batches; nil prints every line n/a).
func WriteOverhead(w io.Writer, o *summary.Overhead) error { return writeOverhead(w, o, nil) }

// writeOverhead is WriteOverhead with the emit->recv figures within clock
// c's bound marked.
func writeOverhead(w io.Writer, o *summary.Overhead, c *summary.Clock) error {
	// SPEC §6: "=== gateway overhead (gateway minus loopback; negative = loopback noise) ==="
	if _, err := fmt.Fprintf(w, "=== gateway overhead (gateway minus loopback; negative = loopback noise) ===\n"); err != nil {
		return err
	}
	for _, l := range o.Named() {
		var mc *summary.Clock
		if o != nil && l.Delta != nil && (l.Delta == o.FirstEmitRecv || l.Delta == o.EmitRecv) {
			mc = c
		}
		if err := writeOverheadLine(w, l.Name, l.Delta, mc); err != nil {
			return err
		}
	}
	return nil
}

// writeOverheadLine writes one line of the overhead block.
func writeOverheadLine(w io.Writer, name string, d *summary.Delta, c *summary.Clock) error {
	var err error
	if d == nil {
		// SPEC §6: "an empty overhead `n/a (no samples)`"
		_, err = fmt.Fprintf(w, "%-24s n/a (no samples)\n", name)
		return err
	}
	f := func(v float64) string { return markMs(c, "%+.3fms", v) }
	// SPEC §6: "emit->recv (1st token)   mean +0.026ms  p50 +0.026ms  p95 +0.026ms  p99 +0.026ms"
	_, err = fmt.Fprintf(w, "%-24s mean %s  p50 %s  p95 %s  p99 %s\n",
		name, f(d.MeanMs), f(d.P50Ms), f(d.P95Ms), f(d.P99Ms))
	return err
}

// WriteReport writes the report that follows the per-request lines (SPEC §6):
// a blank line, the loopback block if a calibration batch ran, the gateway
// block, and the overhead block if a calibration batch ran. A run without
// a gateway batch (its setup failed) writes nothing.
func WriteReport(w io.Writer, s *summary.Run) error { return writeReport(w, s, nil) }

// writeReport is WriteReport with the two-clock figures within clock c's
// bound marked (nil: the reference's lines).
func writeReport(w io.Writer, s *summary.Run, c *summary.Clock) error {
	loop, gw := s.Loop(), s.Gateway()
	if gw == nil {
		return nil
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	if loop != nil {
		if err := writeBatch(w, loop, c); err != nil {
			return err
		}
	}
	if err := writeBatch(w, gw, c); err != nil {
		return err
	}
	if loop != nil {
		return writeOverhead(w, s.Overhead, c)
	}
	return nil
}

// WriteText writes everything a run prints on stdout after its per-request
// lines, and `sse-latency report` prints again from a saved run: WriteReport,
// then, unless compat (the reference's output only), WriteFailures when
// requests failed, WriteRounds for an
// interleaved run, WriteVerdict when the run has a verdict, WriteStream,
// WriteLegs when the run has a request leg, WriteTimeline, WriteDeclared
// when the gateway declared timings, WriteCost when the gateway batch's
// CPU was sampled, WriteSLO when the run checked
// objectives, and WriteClock and WriteReplicas across hosts. Across hosts (s.Clock), the
// two-clock figures within the clock's bound are marked with a *, unless
// compat. A run without a gateway batch writes nothing.
func WriteText(w io.Writer, s *summary.Run, compat bool) error {
	if s.Gateway() == nil {
		return nil
	}
	c := s.Clock
	if compat {
		c = nil
	}
	if err := writeReport(w, s, c); err != nil {
		return err
	}
	if compat {
		return nil
	}
	if err := WriteFailures(w, s); err != nil {
		return err
	}
	if s.Rounds != nil {
		if err := WriteRounds(w, s.Rounds); err != nil {
			return err
		}
	}
	if s.Verdict != nil {
		if err := writeVerdict(w, *s.Verdict, s.Identity, c, s.Gateway().FailureSummary); err != nil {
			return err
		}
	}
	if err := WriteStream(w, s); err != nil {
		return err
	}
	if err := WriteLegs(w, s); err != nil {
		return err
	}
	if err := WriteSizes(w, s); err != nil {
		return err
	}
	if err := WriteTimeline(w, s); err != nil {
		return err
	}
	if err := WriteDeclared(w, s); err != nil {
		return err
	}
	if err := WriteCost(w, s); err != nil {
		return err
	}
	if s.SLO != nil {
		if err := WriteSLO(w, s.SLO); err != nil {
			return err
		}
	}
	if err := WriteClock(w, s.Clock); err != nil {
		return err
	}
	return WriteReplicas(w, s)
}

// ExpectLine returns the line announcing a long batch's duration (SPEC §6,
// stderr), without its newline, and true when the estimate
// (T + d·(n−1)) · ceil(r/c) ms exceeds 30 s; otherwise "" and false. The
// estimate is printed truncated to whole seconds. Counts below 1 are read as
// 1, as the SPEC clamps -r and -c; n = 0 counts no inter-token delay.
func ExpectLine(thinkMs, delayMs float64, tokens, requests, concurrency int) (string, bool) {
	requests, concurrency = max(requests, 1), max(concurrency, 1)
	waves := (requests + concurrency - 1) / concurrency
	totalMs := (thinkMs + delayMs*float64(max(tokens-1, 0))) * float64(waves)
	if !(totalMs > expectThresholdMs) {
		return "", false
	}
	secs := int64(math.Min(totalMs/1000, math.MaxInt64/2))
	// SPEC §6: "  (expect ~<M>min<SS>s for this batch)"
	return fmt.Sprintf("  (expect ~%dmin%02ds for this batch)", secs/60, secs%60), true
}

// ProgressLine returns the progress line shown once a second on a terminal
// (SPEC §6), starting with a carriage return and without a newline; elapsed
// is printed in whole seconds.
func ProgressLine(elapsed time.Duration, done, total, inFlight int, tokens int64) string {
	if total <= 0 { // Go tool: a batch limited by --duration has no known total
		return fmt.Sprintf("\r  streaming: %ds elapsed, %d done, %d in flight, %d tokens received",
			int64(elapsed/time.Second), done, inFlight, tokens)
	}
	// SPEC §6: "\r  streaming: <s>s elapsed, <done>/<total> done, <k> in flight, <t> tokens received"
	return fmt.Sprintf("\r  streaming: %ds elapsed, %d/%d done, %d in flight, %d tokens received",
		int64(elapsed/time.Second), done, total, inFlight, tokens)
}
