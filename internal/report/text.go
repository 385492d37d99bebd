// Package report renders what the tool prints. This file holds the text of
// the reference tool, reproduced byte for byte (SPEC §6): the per-request
// lines, the batch and overhead blocks, the duration estimate and the
// progress line. Every format string cites the SPEC line it reproduces.
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
	"time"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
)

// Batch titles (SPEC §6).
const (
	LoopbackTitle = "loopback (direct to listen address)"
	GatewayTitle  = "gateway"
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

// ms converts nanoseconds to milliseconds.
func ms(ns int64) float64 { return float64(ns) / nsPerMs }

// WriteRequestLine writes the per-request line of r (SPEC §6, stdout, per
// request unless -q). The tag is r.Batch ("loop" or "gw"), the index r.Index.
// A first token without an emission stamp (never produced by the reference,
// which ignores chunks without pi_ts) prints "n/a" in the emit-delay field.
func WriteRequestLine(w io.Writer, r *result.Request) error {
	var err error
	if !r.OK() {
		// SPEC §6: "gw   1: FAILED: connection closed before [DONE]"
		_, err = fmt.Fprintf(w, "%s %3d: FAILED: %s\n", r.Batch, r.Index, r.Failure.Error())
		return err
	}
	var ttft, emit int64
	stamped := true
	if len(r.Tokens) > 0 {
		first := r.Tokens[0]
		ttft = first.Arrived - r.Sent
		emit = first.Arrived - first.Emitted
		stamped = first.Emitted != 0
	}
	wall := float64(r.End-r.Start) / nsPerS
	if !stamped {
		// Go tool, no SPEC line: the columns of the line below, "n/a" for the delay.
		_, err = fmt.Fprintf(w, "%s %3d: ok  ttft=%9.2fms  emit-delay(first)=%9s    tokens=%d  wall=%.3fs\n",
			r.Batch, r.Index, ms(ttft), "n/a", len(r.Tokens), wall)
		return err
	}
	// SPEC §6: "gw   0: ok  ttft=     0.18ms  emit-delay(first)=     0.03ms  tokens=1000  wall=5.004s"
	_, err = fmt.Fprintf(w, "%s %3d: ok  ttft=%9.2fms  emit-delay(first)=%9.2fms  tokens=%d  wall=%.3fs\n",
		r.Batch, r.Index, ms(ttft), ms(emit), len(r.Tokens), wall)
	return err
}

// batchMetrics are the metrics of a batch block, in print order, with their
// names (SPEC §4).
func batchMetrics(b *stats.Batch) []namedMetric {
	return []namedMetric{
		{"TTFT (client)", b.TTFT},
		{"TTFT emit->recv(1st)", b.FirstEmitRecv},
		{"inter-token (client)", b.InterToken},
		{"emit->recv (tokens)", b.EmitRecv},
	}
}

type namedMetric struct {
	name string
	m    *stats.Metric
}

// WriteBatch writes the block of one batch (SPEC §6): its title line and one
// line per metric.
func WriteBatch(w io.Writer, title string, b *stats.Batch) error {
	// SPEC §6: "=== loopback (direct to listen address): 3 requests, 3 ok, 0 failed, 600 tokens ==="
	if _, err := fmt.Fprintf(w, "=== %s: %d requests, %d ok, %d failed, %d tokens ===\n",
		title, b.Requests, b.OK, b.Failed, b.Tokens); err != nil {
		return err
	}
	for _, nm := range batchMetrics(b) {
		if err := writeMetricLine(w, nm.name, nm.m); err != nil {
			return err
		}
	}
	return nil
}

// writeMetricLine writes one metric line of a batch block. As in every line
// of the batch and overhead blocks, the name is padded to 24 columns and
// followed by one space: the SPEC's example lines have their values in
// column 26.
func writeMetricLine(w io.Writer, name string, m *stats.Metric) error {
	var err error
	if m.N() == 0 {
		// SPEC §6: "an empty metric prints `n=0`"
		_, err = fmt.Fprintf(w, "%-24s n=0\n", name)
		return err
	}
	// SPEC §6: "TTFT (client)            n=3  mean=0.04ms  min=0.04ms  p50=0.04ms  p95=0.04ms  p99=0.04ms  max=0.04ms"
	_, err = fmt.Fprintf(w, "%-24s n=%d  mean=%.2fms  min=%.2fms  p50=%.2fms  p95=%.2fms  p99=%.2fms  max=%.2fms\n",
		name, m.N(), m.Mean()/nsPerMs, ms(m.Min()),
		ms(m.Percentile(0.50)), ms(m.Percentile(0.95)), ms(m.Percentile(0.99)), ms(m.Max()))
	return err
}

// WriteOverhead writes the gateway overhead block (SPEC §6): for each metric,
// the gateway's mean and percentiles minus the loopback's.
func WriteOverhead(w io.Writer, loop, gw *stats.Batch) error {
	// SPEC §6: "=== gateway overhead (gateway minus loopback; negative = loopback noise) ==="
	if _, err := fmt.Fprintf(w, "=== gateway overhead (gateway minus loopback; negative = loopback noise) ===\n"); err != nil {
		return err
	}
	lines := []struct {
		name     string
		loop, gw *stats.Metric
	}{
		{"emit->recv (1st token)", loop.FirstEmitRecv, gw.FirstEmitRecv},
		{"emit->recv (tokens)", loop.EmitRecv, gw.EmitRecv},
		{"TTFT (client)", loop.TTFT, gw.TTFT},
		{"inter-token (client)", loop.InterToken, gw.InterToken},
	}
	for _, l := range lines {
		if err := writeOverheadLine(w, l.name, l.loop, l.gw); err != nil {
			return err
		}
	}
	return nil
}

// writeOverheadLine writes one line of the overhead block.
func writeOverheadLine(w io.Writer, name string, loop, gw *stats.Metric) error {
	var err error
	if loop.N() == 0 || gw.N() == 0 {
		// SPEC §6: "an empty overhead `n/a (no samples)`"
		_, err = fmt.Fprintf(w, "%-24s n/a (no samples)\n", name)
		return err
	}
	diff := func(p float64) float64 { return ms(gw.Percentile(p) - loop.Percentile(p)) }
	// SPEC §6: "emit->recv (1st token)   mean +0.026ms  p50 +0.026ms  p95 +0.026ms  p99 +0.026ms"
	_, err = fmt.Fprintf(w, "%-24s mean %+.3fms  p50 %+.3fms  p95 %+.3fms  p99 %+.3fms\n",
		name, (gw.Mean()-loop.Mean())/nsPerMs, diff(0.50), diff(0.95), diff(0.99))
	return err
}

// WriteReport writes the report that follows the per-request lines (SPEC §6):
// a blank line, the loopback block if loop is not nil (nil: no calibration
// batch ran), the gateway block, and the overhead block if loop is not nil.
func WriteReport(w io.Writer, loop, gw *stats.Batch) error {
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	if loop != nil {
		if err := WriteBatch(w, LoopbackTitle, loop); err != nil {
			return err
		}
	}
	if err := WriteBatch(w, GatewayTitle, gw); err != nil {
		return err
	}
	if loop != nil {
		return WriteOverhead(w, loop, gw)
	}
	return nil
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
