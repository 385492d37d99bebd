package rundoc

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// Compare writes, for a user checking that a change helped, how the run
// after differs from the run before:
//
//	=== compare: after minus before ===
//	warning: the configurations differ in tokens (1000 vs 200); the figures may not be comparable
//	=== gateway: 4 requests, 2 ok, 2 failed, 2000 tokens -> 4 requests, 3 ok, 1 failed, 600 tokens ===
//	metric                   stat       before        after         diff   change
//	TTFT (client)            mean     69.183ms      0.160ms    -69.023ms   -99.8%
//	                         p50       0.200ms      0.160ms     -0.040ms   -20.0%
//	                         …
//
// one such table per batch present in either document (loopback first),
// with the mean, p50, p95 and p99 of each metric, as the documents'
// summaries hold them; then the same table for the overhead block when either run
// had a calibration, the verdict's class, share of tokens in bursts,
// added delay and first-token hold, and what the gateway batch cost when
// both runs sampled it (compareCost). A metric without samples on a side
// prints "n/a" there; a change in percent is relative to the magnitude of
// the value before, "n/a" when that is 0. Configurations that differ in a
// field of RuleSame or RuleSum get a warning line (not the gateway, which
// a comparison expects to change, nor what is each instance's own or only
// the console's): the comparison is still made.
func Compare(w io.Writer, before, after *Document) error {
	if err := before.Validate(); err != nil {
		return fmt.Errorf("before: %w", err)
	}
	if err := after.Validate(); err != nil {
		return fmt.Errorf("after: %w", err)
	}
	for _, d := range []struct {
		name string
		doc  *Document
	}{{"before", before}, {"after", after}} {
		if d.doc.Sweep != nil {
			return fmt.Errorf("%s: a sweep; compare takes the documents of runs (sse-latency report renders a sweep)", d.name)
		}
	}
	var b strings.Builder // written at once: one write, one error
	p := &b
	fmt.Fprintf(p, "=== compare: after minus before ===\n")
	if diffs := compareDiffs(&before.Config, &after.Config); len(diffs) > 0 {
		fmt.Fprintf(p, "warning: the configurations differ in %s; the figures may not be comparable\n", joinDiffs(diffs))
	}
	compareBatch(p, summary.LoopbackTitle, before.Loop(), after.Loop())
	compareBatch(p, summary.GatewayTitle, before.Gateway(), after.Gateway())
	compareOverhead(p, before.Overhead, after.Overhead)
	compareVerdict(p, before.Verdict, after.Verdict, before.Gateway(), after.Gateway())
	compareCost(p, before.Gateway(), after.Gateway())
	_, err := io.WriteString(w, b.String())
	return err
}

// cmpColumns are the columns of the comparison tables: a name, a
// statistic, then before, after, the difference and the change in percent.
const cmpColumns = "%-24s %-4s %12s %12s %12s %8s\n"

// cmpStat is one row of a comparison table, in milliseconds.
type cmpStat struct {
	name string
	b, a float64
}

// cmpHeader writes the header line of a table.
func cmpHeader(p *strings.Builder) {
	fmt.Fprintf(p, cmpColumns, "metric", "stat", "before", "after", "diff", "change")
}

// cmpRows writes the rows of one metric, its name on the first; signed
// prints the values before and after with their sign (differences).
func cmpRows(p *strings.Builder, name string, rows []cmpStat, signed bool) {
	format := "%.3fms"
	if signed {
		format = "%+.3fms"
	}
	for j, s := range rows {
		if j > 0 {
			name = ""
		}
		fmt.Fprintf(p, cmpColumns, name, s.name, fmt.Sprintf(format, s.b), fmt.Sprintf(format, s.a),
			fmt.Sprintf("%+.3fms", s.a-s.b), change(s.b, s.a))
	}
}

// compareBatch writes the table of one batch; nothing when neither run had
// it.
func compareBatch(p *strings.Builder, title string, before, after *summary.Batch) {
	switch {
	case before == nil && after == nil:
		return
	case before == nil:
		fmt.Fprintf(p, "=== %s: only after ===\n", title)
		return
	case after == nil:
		fmt.Fprintf(p, "=== %s: only before ===\n", title)
		return
	}
	// Not a SPEC line: the batch titles of WriteBatch, before -> after.
	fmt.Fprintf(p, "=== %s: %d requests, %d ok, %d failed, %d tokens -> %d requests, %d ok, %d failed, %d tokens ===\n",
		title, before.Requests, before.OK, before.Failed, before.Tokens, after.Requests, after.OK, after.Failed, after.Tokens)
	cmpHeader(p)
	bm, am := before.Metrics.Named(), after.Metrics.Named()
	for i := range bm {
		b, a := bm[i].Metric, am[i].Metric
		if b.N == 0 || a.N == 0 {
			fmt.Fprintf(p, "%-24s n/a (no samples %s)\n", bm[i].Name, noSamples(b.N, a.N))
			continue
		}
		cmpRows(p, bm[i].Name, []cmpStat{
			{"mean", b.MeanMs, a.MeanMs},
			{"p50", b.P50Ms, a.P50Ms},
			{"p95", b.P95Ms, a.P95Ms},
			{"p99", b.P99Ms, a.P99Ms},
		}, false)
	}
}

// noSamples says which side had no samples.
func noSamples(before, after int64) string {
	switch {
	case before == 0 && after == 0:
		return "before or after"
	case before == 0:
		return "before"
	}
	return "after"
}

// change is the change from b to a in percent of |b|, "n/a" when b is 0.
func change(b, a float64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", 100*(a-b)/math.Abs(b))
}

// compareOverhead writes the table of the overhead blocks.
func compareOverhead(p *strings.Builder, before, after *summary.Overhead) {
	switch {
	case before == nil && after == nil:
		return
	case before == nil:
		fmt.Fprintf(p, "=== gateway overhead: only after (no calibration before) ===\n")
		return
	case after == nil:
		fmt.Fprintf(p, "=== gateway overhead: only before (no calibration after) ===\n")
		return
	}
	fmt.Fprintf(p, "=== gateway overhead (gateway minus loopback): before -> after ===\n")
	cmpHeader(p)
	bl, al := before.Named(), after.Named()
	for i, l := range bl {
		b, a := l.Delta, al[i].Delta
		if b == nil || a == nil {
			fmt.Fprintf(p, "%-24s n/a (no samples %s)\n", l.Name, noSamples(boolN(b != nil), boolN(a != nil)))
			continue
		}
		cmpRows(p, l.Name, []cmpStat{
			{"mean", b.MeanMs, a.MeanMs},
			{"p50", b.P50Ms, a.P50Ms},
			{"p95", b.P95Ms, a.P95Ms},
			{"p99", b.P99Ms, a.P99Ms},
		}, true)
	}
}

func boolN(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// compareVerdict writes how the verdict changed. The added delay compares
// gateway minus loopback when both runs had a calibration, else the
// gateway's own emit->recv (tokens) of both, from the batches bg and ag.
func compareVerdict(p *strings.Builder, before, after *verdict.Verdict, bg, ag *summary.Batch) {
	if before == nil && after == nil {
		return
	}
	fmt.Fprintf(p, "=== verdict: before -> after ===\n")
	class := func(v *verdict.Verdict) string {
		if v == nil {
			return "none"
		}
		return v.Class.String()
	}
	fmt.Fprintf(p, "%-24s %s -> %s\n", "class", class(before), class(after))
	if before == nil || after == nil {
		return
	}
	fmt.Fprintf(p, "%-24s %.1f%% of %d tokens -> %.1f%% of %d tokens (%+.1f points)\n", "tokens in bursts",
		100*before.CoalescedFraction, before.Tokens, 100*after.CoalescedFraction, after.Tokens,
		100*(after.CoalescedFraction-before.CoalescedFraction))
	cmpHeader(p)
	var b, a summary.Metric // the gateways' emit->recv (tokens); none without a gateway batch
	if bg != nil {
		b = bg.Metrics.EmitRecv
	}
	if ag != nil {
		a = ag.Metrics.EmitRecv
	}
	switch {
	case before.Relative && after.Relative:
		cmpRows(p, "added emit->recv", []cmpStat{
			{"mean", before.AddedMeanMs, after.AddedMeanMs},
			{"p50", before.AddedP50Ms, after.AddedP50Ms},
			{"p99", before.AddedP99Ms, after.AddedP99Ms},
		}, true)
	case b.N > 0 && a.N > 0:
		// A side without calibration has no added delay to compare with.
		cmpRows(p, "emit->recv (gateway)", []cmpStat{
			{"mean", b.MeanMs, a.MeanMs},
			{"p50", b.P50Ms, a.P50Ms},
			{"p99", b.P99Ms, a.P99Ms},
		}, true)
	default:
		fmt.Fprintf(p, "%-24s n/a (no samples %s)\n", "emit->recv (gateway)", noSamples(b.N, a.N))
	}
	hold := func(v *verdict.Verdict) string {
		if !v.FirstTokenHold {
			return "no"
		}
		return fmt.Sprintf("yes (%+.2fms)", v.FirstTokenHoldMs)
	}
	fmt.Fprintf(p, "%-24s %s -> %s\n", "first token held", hold(before), hold(after))
}

// compareCost writes the cost of the gateway batches side by side, when
// both runs sampled it: the gateway's processes' CPU per token and per
// stream, their writes and context switches, and the tool's CPU per
// token. A figure a side does not have (no gateway accounted, writes not
// readable) prints n/a.
//
//	=== cost (gateway batch): before -> after ===
//	figure                             before        after         diff   change
//	gateway cpu/token                 9.120us      7.040us     -2.080us   -22.8%
//	gateway writes/stream              1304.0          9.0      -1295.0   -99.3%
func compareCost(p *strings.Builder, bg, ag *summary.Batch) {
	if bg == nil || ag == nil || bg.Cost == nil || ag.Cost == nil {
		return
	}
	b, a := bg.Cost, ag.Cost
	const cols = "%-28s %12s %12s %12s %8s\n"
	fmt.Fprintf(p, "=== cost (gateway batch): before -> after ===\n")
	fmt.Fprintf(p, cols, "figure", "before", "after", "diff", "change")
	row := func(name, format string, bv, av float64, ok bool) {
		if !ok {
			fmt.Fprintf(p, "%-28s n/a\n", name)
			return
		}
		fmt.Fprintf(p, cols, name, fmt.Sprintf(format, bv), fmt.Sprintf(format, av),
			fmt.Sprintf(strings.Replace(format, "%", "%+", 1), av-bv), change(bv, av))
	}
	bgw, agw := seenGateway(b), seenGateway(a)
	gwOK := bgw != nil && agw != nil
	writesOK := gwOK && bgw.WritesKnown && agw.WritesKnown
	if !gwOK {
		bgw, agw = &summary.GatewayCost{}, &summary.GatewayCost{}
	}
	row("gateway cpu/token", "%.3fus", bgw.CPUPerTokenUs, agw.CPUPerTokenUs, gwOK)
	row("gateway cpu/stream", "%.3fms", bgw.CPUPerStreamMs, agw.CPUPerStreamMs, gwOK)
	row("gateway cores", "%.2f", bgw.Cores, agw.Cores, gwOK)
	row("gateway writes/token", "%.3f", bgw.WritesPerToken, agw.WritesPerToken, writesOK)
	row("gateway writes/stream", "%.1f", bgw.WritesPerStream, agw.WritesPerStream, writesOK)
	row("gateway switches/token", "%.3f", bgw.SwitchesPerToken, agw.SwitchesPerToken, gwOK)
	row("tool cpu/token", "%.3fus", b.Tool.CPUPerTokenUs, a.Tool.CPUPerTokenUs, true)
}

// seenGateway is c's gateway when its processes were accounted, else nil.
func seenGateway(c *summary.Cost) *summary.GatewayCost {
	if g := c.Gateway; g != nil && g.Unseen == "" {
		return g
	}
	return nil
}
