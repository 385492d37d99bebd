package summary

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/sse-latency/sse-latency/internal/failures"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// MergeOptions say how Merge names the runs and checks the merged run's
// objectives.
type MergeOptions struct {
	// Name is the i-th run's name in the errors and notes ("a.json",
	// "run 2").
	Name func(i int) string
	// SLO checks the objectives of the merged run, whose batches, overhead
	// and tool's figures are merged by then, and says how in notes (package
	// slo, which imports this one, gives it: slo.CheckMerged); nil when no
	// run had objectives.
	SLO func(merged *Run) (*SLOs, []string)
}

// Merge combines the summaries of runs taken in parallel (N instances, one
// gateway) into the summary one run of all their requests would have
// given, where that can be computed, with notes saying what could not be
// combined exactly. The runs have the same batches, unless a forced merge
// (rundoc.Merge) let them differ: then each batch is merged from the runs
// that have it.
//
//   - the tool's own lateness is merged exactly, its CPU times summed, its
//     warnings kept, one per line;
//   - every batch's histograms are merged exactly (stats.Batch.Merge), so
//     its metrics, the overhead block and the emission lateness are those
//     of all the samples; counts, stream counters and CPU times are summed,
//     max_tokens_per_read is the largest; failures are merged per kind and
//     text (at most stats.MaxFailureTexts texts per kind, the rest counted
//     in other); targets: the distinct targets of the runs, comma-separated;
//   - samples: the request samples of all runs, their indices offset by the
//     requests of the runs before (run 2's request 0 follows run 1's last),
//     then at most MaxRequestSamples of them taken uniformly (sampled is
//     then true); of the series, for each label, the one with the lowest
//     mean delay among the runs' "fastest", the highest among the
//     "slowest", the median among the "median" (the first run's for
//     another label), each request's series once;
//   - the objectives are checked again on the merged figures (opt.SLO);
//   - the verdict cannot be recomputed without the token records: it is
//     kept only if every run has one and they agree on the class and the
//     basis (completed requests, or partial streams), with the
//     tokens, bursts, hold requests and share of tokens in bursts summed or
//     weighted exactly, the added delay recomputed from the merged
//     emit->recv histograms as the classifier computes it
//     (verdict.Verdict.SetAddedDelay), the largest burst, and the median of
//     the runs' values for the burst size, burst period, emission gap,
//     loopback share and first-token figures; a first-token hold only if
//     every run flagged one; its findings those of the merged gateway
//     timeline (Findings), its advice for the first run's gateway;
//   - the per-replica split of runs across hosts (Replica) is merged by
//     instance and endpoint (MergeReplicas);
//   - timelines are merged exactly (histograms and counts), a batch's only
//     when every run's has one;
//   - failure summaries are merged exactly (failures.Tally.Merge), a
//     batch's only when every run's has one (a note says when one was
//     dropped);
//   - the clocks of runs across hosts: the largest bound and drift, the
//     first run's offset, the figures below the bound marked again.
func Merge(runs []*Run, opt MergeOptions) (*Run, []string, error) {
	name := opt.Name
	out := &Run{}
	if err := out.mergeSelf(runs, name); err != nil {
		return nil, nil, err
	}
	batches, loop, gw, notes, err := mergeBatches(runs, name)
	if err != nil {
		return nil, nil, err
	}
	out.Batches = batches
	out.Overhead = NewOverhead(loop, gw)
	if slices.ContainsFunc(runs, func(r *Run) bool { return r.Rounds != nil }) {
		notes = append(notes, "rounds: the runs' rounds are not merged; the overhead is that of all their samples pooled")
	}
	if opt.SLO != nil {
		var sloNotes []string
		out.SLO, sloNotes = opt.SLO(out)
		notes = append(notes, sloNotes...)
	}
	v, verdictNotes := mergeVerdicts(runs, name, loop, gw)
	out.Verdict = v
	notes = append(notes, verdictNotes...)
	if b := out.Gateway(); out.Verdict != nil && b != nil {
		out.Verdict.Findings = Findings(b.Timeline)
	}
	// One gateway (a merge refuses runs of another target): the first
	// run's identity, and its advice on the merged verdict.
	out.Identity = runs[0].Identity
	Advise(out.Verdict, out.Identity)
	clock, clockNotes := mergeClocks(runs, name)
	out.Clock = clock
	notes = append(notes, clockNotes...)
	out.MarkBelowBound()
	return out, notes, nil
}

// mergeSelf sets the tool's own figures of out from runs: its lateness
// merged, its CPU times summed, its warnings kept once each.
func (out *Run) mergeSelf(runs []*Run, name func(int) string) error {
	lateness := stats.NewMetric()
	var warnings []string
	for i, d := range runs {
		late, err := d.Self.Lateness.Stats()
		if err != nil {
			return fmt.Errorf("cannot merge %s: self.emission_lateness: %w", name(i), err)
		}
		lateness.Merge(late)
		out.Self.UserS += d.Self.UserS
		out.Self.SystemS += d.Self.SystemS
		for _, w := range strings.Split(d.Self.Warning, "\n") {
			warnings = appendDistinct(warnings, w)
		}
	}
	out.Self.Lateness = NewMetric(lateness)
	out.Self.Warning = strings.Join(warnings, "\n")
	return nil
}

// timelineMerge merges the timelines of one batch of several runs: all
// of them, or none when a run has none (a document written before
// timelines).
type timelineMerge struct {
	ts      *TimelineStats
	missing bool
}

// add merges t in (nil: that run has none).
func (m *timelineMerge) add(t *Timeline) error {
	if t == nil {
		m.missing = true
		return nil
	}
	ts, err := t.Stats()
	if err != nil {
		return err
	}
	if m.ts == nil {
		m.ts = ts
	} else {
		m.ts.Merge(ts)
	}
	return nil
}

// summary returns the merged timeline, nil when a run had none.
func (m *timelineMerge) summary() *Timeline {
	if m.ts == nil || m.missing {
		return nil
	}
	t := m.ts.Summary()
	return &t
}

// failureMerge merges the failure summaries of one batch of several runs
// (failures.Tally.Merge, exact): all of them, or none when a run has none
// (a document written before them).
type failureMerge struct {
	t       *failures.Tally
	missing bool
}

// add merges s in (nil: that run has none).
func (m *failureMerge) add(s *failures.Summary) error {
	if s == nil {
		m.missing = true
		return nil
	}
	t, err := s.Tally()
	if err != nil {
		return err
	}
	if m.t == nil {
		m.t = t
	} else {
		m.t.Merge(t)
	}
	return nil
}

// summary returns the merged summary, nil when a run had none.
func (m *failureMerge) summary() *failures.Summary {
	if m.t == nil || m.missing {
		return nil
	}
	return m.t.Summary()
}

// mergeBatches sets out's batches from those of runs, each from the runs
// that have it (all of them, unless the merge was forced), and returns the
// merged statistics of the loopback and gateway batches (nil when absent).
func mergeBatches(runs []*Run, name func(int) string) (batches []Batch, loop, gw *stats.Batch, notes []string, err error) {
	batches = []Batch{}
	merged := make(map[string]*stats.Batch)
	costs := false
	for _, bn := range []string{LoopbackBatch, GatewayBatch} {
		var sb *stats.Batch
		var targets []string
		var samples []Samples
		var declared []*DeclaredTimings
		var replicas [][]Replica
		var sizes []*Sizes
		var usage []*Usage
		tl := &timelineMerge{}
		fails := &failureMerge{}
		offset := 0
		for i, d := range runs {
			db := d.Batch(bn)
			if db == nil {
				continue
			}
			s, err := db.Stats()
			if err != nil {
				return nil, nil, nil, nil, fmt.Errorf("cannot merge %s: %s batch: %w", name(i), bn, err)
			}
			if sb == nil {
				sb = stats.NewBatch()
			}
			sb.Merge(s)
			if err := tl.add(db.Timeline); err != nil {
				return nil, nil, nil, nil, fmt.Errorf("cannot merge %s: %s batch: %w", name(i), bn, err)
			}
			if err := fails.add(db.FailureSummary); err != nil {
				return nil, nil, nil, nil, fmt.Errorf("cannot merge %s: %s batch: failure_summary: %w", name(i), bn, err)
			}
			targets = appendDistinct(targets, db.Target)
			samples = append(samples, offsetSamples(db.Samples, offset))
			declared = append(declared, db.Declared)
			if db.Replicas != nil {
				replicas = append(replicas, db.Replicas)
			}
			sizes, usage = append(sizes, db.Sizes), append(usage, db.Usage)
			offset += db.Requests
			costs = costs || db.Cost != nil
		}
		if sb != nil {
			merged[bn] = sb
			nb := NewBatch(bn, strings.Join(targets, ", "), sb, mergeSamples(samples))
			nb.Timeline = tl.summary()
			if replicas != nil {
				if nb.Replicas, err = MergeReplicas(replicas); err != nil {
					return nil, nil, nil, nil, fmt.Errorf("cannot merge the %s batches: %w", bn, err)
				}
			}
			nb.FailureSummary = fails.summary()
			if fails.missing && fails.t != nil {
				notes = append(notes, fmt.Sprintf("failure summary of the %s batch dropped: not every run has one", bn))
			}
			var ok bool
			if nb.Declared, ok = MergeDeclared(declared); !ok {
				notes = append(notes, fmt.Sprintf("declared timings of the %s batch dropped: not every run has them", bn))
			}
			if nb.Sizes, ok = MergeSizes(sizes); !ok {
				return nil, nil, nil, nil, fmt.Errorf("cannot merge the %s batch's sizes: a histogram is damaged", bn)
			}
			nb.Usage = MergeUsage(usage)
			batches = append(batches, nb)
		}
	}
	if costs {
		notes = append(notes, "the batches' costs are left out: each run saw the whole gateway's and host's CPU, not its own share")
	}
	return batches, merged[LoopbackBatch], merged[GatewayBatch], notes, nil
}

// appendDistinct appends s to list unless it is empty or already there.
func appendDistinct(list []string, s string) []string {
	if s == "" || slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// offsetSamples returns a copy of s whose request indices are offset by n.
func offsetSamples(s Samples, n int) Samples {
	s = NormSamples(s)
	for i := range s.Requests {
		s.Requests[i].Index += n
	}
	for i := range s.Series {
		s.Series[i].Index += n
	}
	return s
}

// mergeSamples combines the samples of the runs (see Merge).
func mergeSamples(list []Samples) Samples {
	var out Samples
	byLabel := make(map[string][]Series)
	var labels []string
	for _, s := range list {
		out.Requests = append(out.Requests, s.Requests...)
		out.Sampled = out.Sampled || s.Sampled
		for _, se := range s.Series {
			if _, ok := byLabel[se.Label]; !ok {
				labels = append(labels, se.Label)
			}
			byLabel[se.Label] = append(byLabel[se.Label], se)
		}
	}
	if n := len(out.Requests); n > MaxRequestSamples {
		kept := make([]RequestSample, MaxRequestSamples)
		for i := range kept {
			kept[i] = out.Requests[i*n/MaxRequestSamples]
		}
		out.Requests, out.Sampled = kept, true
	}
	used := make(map[int]bool) // as the collector, one series serves one label only
	for _, l := range labels {
		if se := pickSeries(l, byLabel[l]); !used[se.Index] {
			used[se.Index] = true
			out.Series = append(out.Series, se)
		}
	}
	return NormSamples(out)
}

// pickSeries chooses, among the runs' series of one label, the fastest of
// the "fastest", the slowest of the "slowest" and the median of the
// "median", by the mean delay of their points; the first for another label.
func pickSeries(label string, ss []Series) Series {
	sorted := slices.Clone(ss)
	slices.SortStableFunc(sorted, func(a, b Series) int {
		ma, mb := seriesMean(a), seriesMean(b)
		switch {
		case ma < mb:
			return -1
		case ma > mb:
			return 1
		}
		return 0
	})
	switch label {
	case "fastest":
		return sorted[0]
	case "slowest":
		return sorted[len(sorted)-1]
	case "median":
		return sorted[(len(sorted)-1)/2]
	}
	return ss[0]
}

// seriesMean is the mean delay of s's points, +Inf without any (so that an
// empty series is never the fastest).
func seriesMean(s Series) float64 {
	if len(s.Points) == 0 {
		return math.Inf(1)
	}
	var sum float64
	for _, p := range s.Points {
		sum += p[1]
	}
	return sum / float64(len(s.Points))
}

// mergeVerdicts combines the runs' verdicts (see Merge), with notes
// saying how, or why there is none.
func mergeVerdicts(runs []*Run, name func(int) string, loop, gw *stats.Batch) (*verdict.Verdict, []string) {
	var missing, classes []string
	for i, d := range runs {
		if d.Verdict == nil {
			missing = append(missing, name(i))
			continue
		}
		classes = append(classes, name(i)+": "+d.Verdict.Class.String())
	}
	switch {
	case len(missing) == len(runs):
		return nil, nil
	case len(missing) > 0:
		return nil, []string{"verdict dropped: " + strings.Join(missing, ", ") + " had none"}
	}
	first := runs[0].Verdict
	for _, d := range runs[1:] {
		if d.Verdict.Class != first.Class {
			return nil, []string{"verdict dropped: the runs disagree (" + strings.Join(classes, ", ") + ")"}
		}
	}
	if slices.ContainsFunc(runs, func(d *Run) bool { return d.Verdict.Basis != first.Basis }) {
		var bases []string
		for i, d := range runs {
			bases = append(bases, fmt.Sprintf("%s: %s", name(i), cmp.Or(d.Verdict.Basis, "unknown")))
		}
		return nil, []string{"verdict dropped: the runs judged different requests (" + strings.Join(bases, ", ") + ")"}
	}

	v := &verdict.Verdict{Class: first.Class, Reason: first.Reason, Causes: []string{}, Basis: first.Basis}
	var coalesced float64
	var loopShares, sizes, periods, gaps, holds, following []float64
	holdRuns := 0
	var levels []string
	for _, d := range runs {
		dv := d.Verdict
		v.Tokens += dv.Tokens
		coalesced += dv.CoalescedFraction * float64(dv.Tokens)
		v.Bursts += dv.Bursts
		v.BurstSizeMax = max(v.BurstSizeMax, dv.BurstSizeMax)
		v.HoldRequests += dv.HoldRequests
		v.BasisRequests += dv.BasisRequests
		loopShares = append(loopShares, dv.LoopCoalesced)
		sizes = append(sizes, dv.BurstSizeP50)
		periods = append(periods, dv.BurstPeriodMs)
		gaps = append(gaps, dv.EmitGapMs)
		holds = append(holds, dv.FirstTokenHoldMs)
		following = append(following, dv.FollowingMs)
		if dv.FirstTokenHold {
			holdRuns++
			levels = append(levels, dv.FirstTokenHoldLevel)
		}
	}
	if v.Tokens > 0 {
		v.CoalescedFraction = coalesced / float64(v.Tokens)
	}
	v.LoopCoalesced = median(loopShares)
	if slices.Min(loopShares) < 0 {
		v.LoopCoalesced = -1
	}
	v.Noisy = v.LoopCoalesced >= verdict.NoisyLoopFraction
	v.BurstSizeP50, v.BurstPeriodMs, v.EmitGapMs = median(sizes), median(periods), median(gaps)
	v.FirstTokenHoldMs, v.FollowingMs = median(holds), median(following)
	v.SetAddedDelay(loop, gw)

	var mixed []string
	for i, d := range runs {
		if g := d.Gateway(); g != nil && g.Stream.FailedTokens > 0 && d.Verdict.Basis != "" {
			mixed = append(mixed, name(i))
		}
	}
	notes := []string{fmt.Sprintf("verdict: the %d merged runs all found %q; tokens, bursts, hold requests, the share of tokens "+
		"in bursts and the added delay are exact over all of them; the burst size, burst period, emission gap, loopback share "+
		"and first-token figures are the median of the runs' values", len(runs), v.Class.String())}
	if len(mixed) > 0 {
		notes = append(notes, "verdict: the added delay is recomputed over the tokens of every request, failed ones included ("+
			strings.Join(mixed, ", ")+" had failed requests with tokens); each run judged its own on the requests of its basis")
	}
	sig, sigNotes := mergeSignatures(runs, name)
	v.Signature = sig
	notes = append(notes, sigNotes...)
	v.FirstTokenHold = holdRuns == len(runs)
	switch {
	case holdRuns > 0 && !v.FirstTokenHold:
		notes = append(notes, fmt.Sprintf("first-token hold flagged by %d of %d runs: not kept", holdRuns, len(runs)))
	case v.FirstTokenHold && slices.Contains(levels, verdict.HoldWarn):
		v.FirstTokenHoldLevel = verdict.HoldWarn // a failure only when every run failed
	case v.FirstTokenHold && slices.Contains(levels, verdict.HoldFail):
		v.FirstTokenHoldLevel = verdict.HoldFail
	}
	return v, notes
}

// median is the SPEC's p50, floor((n−1)/2) of the sorted values; 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// mergeSignatures combines the signatures of the runs' verdicts (all of
// one class, see mergeVerdicts): kept when every run found the same kind
// and shape — its pauses summed, its other figures and evidence the first
// run's, as a note says — dropped with a note otherwise. Runs without a
// signature (documents older than them) drop it silently.
func mergeSignatures(runs []*Run, name func(int) string) (*verdict.Signature, []string) {
	var kinds []string
	same := true
	for i, d := range runs {
		s := d.Verdict.Signature
		if s == nil {
			return nil, nil
		}
		kinds = append(kinds, name(i)+": "+s.Kind.Name())
		if f := runs[0].Verdict.Signature; s.Kind != f.Kind || s.Shape != f.Shape {
			same = false
		}
	}
	if !same {
		return nil, []string{"signature dropped: the runs disagree (" + strings.Join(kinds, ", ") + ")"}
	}
	out := *runs[0].Verdict.Signature
	out.Pauses, out.HeldPauses = 0, 0
	for _, d := range runs {
		out.Pauses += d.Verdict.Signature.Pauses
		out.HeldPauses += d.Verdict.Signature.HeldPauses
	}
	return &out, []string{fmt.Sprintf("signature: the %d merged runs all found %q; the pauses are summed, "+
		"the other figures and the evidence are the first run's", len(runs), out.Kind.Name())}
}

// mergeClocks combines the clocks of runs across hosts (each instance with
// its own offset to its own server): the largest bound and drift, the
// shortest round trip, the estimates summed, the first run's offset (a note
// says when they differ). nil when no run has one; the figures below the
// bound are marked again on the merged run.
func mergeClocks(runs []*Run, name func(int) string) (*Clock, []string) {
	var out *Clock
	var notes []string
	for i, d := range runs {
		c := d.Clock
		if c == nil {
			continue
		}
		if out == nil {
			cp := *c
			out = &cp
			continue
		}
		out.BoundMs = max(out.BoundMs, c.BoundMs)
		out.DriftMs = max(out.DriftMs, c.DriftMs)
		out.MinRTTMs = min(out.MinRTTMs, c.MinRTTMs)
		out.Estimates += c.Estimates
		if c.OffsetMs != out.OffsetMs && len(notes) == 0 {
			notes = append(notes, fmt.Sprintf("each run had its own clock offset to its server (%s: %+.3f ms, %s: %+.3f ms, …); clock keeps %s's and the largest bound",
				name(0), runs[0].clockOffset(), name(i), c.OffsetMs, name(0)))
		}
	}
	if out != nil {
		out.BelowBound = []string{}
	}
	return out, notes
}

// clockOffset is d's clock offset, 0 without a clock.
func (d *Run) clockOffset() float64 {
	if d.Clock == nil {
		return 0
	}
	return d.Clock.OffsetMs
}
