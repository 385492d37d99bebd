package rundoc

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/sse-latency/sse-latency/internal/failures"
	"github.com/sse-latency/sse-latency/internal/slo"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// MergeOptions say how Merge names the documents and treats runs that
// differ.
type MergeOptions struct {
	// Names are the documents' names (their files) for the messages and
	// notes; a document without one is "run 1", "run 2"…
	Names []string
	// Force merges runs that Merge would refuse (different configurations
	// or batches) anyway, and records what differed in the merged
	// document's Forced.
	Force bool
}

// Merge combines the documents of runs taken in parallel (N instances,
// one gateway) into the document one run of all their requests would have
// given, where that can be computed.
//
// The documents must be valid (Validate) and of this schema version. Each
// configuration field's Rule (Config's merge tags) says how the runs may
// differ: not at all in the measurement's settings (RuleSame) and the
// gateway (RuleGateway); freely in what is each instance's own, its listen
// address and path prefix (RuleInstance: the first run's is kept, a note
// says how many there were) and in what only changed the console output
// (RuleConsole); in amount in the load each generated (RuleSum: summed).
// The batches must be the same. Otherwise Merge refuses, naming the two
// documents and the fields ("cannot merge a.json and b.json: config
// differs in target ("127.0.0.1:8080" vs "127.0.0.1:9090"); --force merges
// them anyway"), unless opt.Force: then it merges anyway (the batches any
// run has, each from the runs that have it) and lists the differences in
// Forced, which the reports warn of.
//
// The rest:
//   - every batch's histograms are merged exactly (stats.Batch.Merge), so
//     its metrics, the overhead block and the emission lateness are those
//     of all the samples; counts, stream counters and CPU times are summed,
//     max_tokens_per_read is the largest; failures are merged per kind and
//     text (at most stats.MaxFailureTexts texts per kind, the rest counted
//     in other);
//   - targets: the distinct targets of the runs, comma-separated; tool and
//     environment: the first document's (a note lists differing tool
//     versions or hosts);
//   - start is the earliest, end the latest, runs the sum, exit_code the
//     largest; end_reason is "done" only when every run's is, else
//     "setup_failed" if any run's is, else "interrupted"; the warnings of
//     the runs are kept, one per line, and so are the runs' own Forced;
//   - samples: the request samples of all runs, their indices offset by the
//     requests of the runs before (run 2's request 0 follows run 1's last),
//     then at most summary.MaxRequestSamples of them taken uniformly
//     (sampled is then true); of the series, for each label, the one with
//     the lowest mean delay among the runs' "fastest", the highest among
//     the "slowest", the median among the "median" (the first run's for
//     another label), each request's series once;
//   - the verdict cannot be recomputed without the token records: it is
//     kept only if every run has one and they agree on the class and the
//     basis (completed requests, or partial streams), with the
//     tokens, bursts, hold requests and share of tokens in bursts summed or
//     weighted exactly, the added delay recomputed from the merged
//     emit->recv histograms as the classifier computes it
//     (verdict.Verdict.SetAddedDelay), the largest burst, and the median of
//     the runs' values for the burst size, burst period, emission gap,
//     loopback share and first-token figures; a first-token hold only if
//     every run flagged one. Notes say so, or why the verdict was dropped;
//   - the per-replica split of runs across hosts (summary.Replica) is
//     merged by instance and endpoint (summary.MergeReplicas): counts
//     summed, request_leg and emit_recv merged exactly, the largest
//     bound, the estimates summed, the first run's offset;
//   - timelines are merged exactly (histograms and counts), a batch's only
//     when every run's has one, and a kept verdict's findings are those of
//     the merged gateway timeline (summary.Findings);
//   - failure summaries are merged exactly (failures.Tally.Merge: counts
//     summed, each group's first time the earliest with its example, its
//     last the latest, its distributions merged), a batch's only when
//     every run's has one (a note says when one was dropped).
func Merge(docs []*Document, opt MergeOptions) (*Document, error) {
	name := func(i int) string {
		if i < len(opt.Names) && opt.Names[i] != "" {
			return opt.Names[i]
		}
		return fmt.Sprintf("run %d", i+1)
	}
	if len(docs) == 0 {
		return nil, errors.New("nothing to merge")
	}
	for i, d := range docs {
		if err := d.Validate(); err != nil {
			return nil, fmt.Errorf("cannot merge %s: %w", name(i), err)
		}
		if d.Sweep != nil {
			return nil, fmt.Errorf("cannot merge %s: it is a sweep (merge combines runs)", name(i))
		}
	}
	forced, err := mergeable(docs, name, opt.Force)
	if err != nil {
		return nil, err
	}
	first := docs[0]
	out := &Document{
		SchemaVersion: SchemaVersion,
		Tool:          first.Tool,
		Environment:   first.Environment,
		Config:        first.Config,
		Start:         first.Start,
		End:           first.End,
		EndReason:     EndDone,
		Forced:        forced,
		Request:       first.Request,
	}
	out.Config.Headers = slices.Clone(first.Config.Headers)
	out.Config.SLOs = slices.Clone(first.Config.SLOs)
	if err := out.mergeRuns(docs, name); err != nil {
		return nil, err
	}
	loop, gw, err := out.mergeBatches(docs, name)
	if err != nil {
		return nil, err
	}
	out.Overhead = summary.NewOverhead(loop, gw)
	if slices.ContainsFunc(docs, func(d *Document) bool { return d.Rounds != nil }) {
		out.Notes = append(out.Notes, "rounds: the runs' rounds are not merged; the overhead is that of all their samples pooled")
	}
	out.Notes = append(out.Notes, out.mergeSLOs(docs)...)
	var notes []string
	out.Verdict, notes = mergeVerdicts(docs, name, loop, gw)
	out.Notes = append(out.Notes, notes...)
	if b := out.Gateway(); out.Verdict != nil && b != nil {
		out.Verdict.Findings = summary.Findings(b.Timeline)
	}
	// One gateway (merge refuses runs of another target): the first
	// run's identity, and its advice on the merged verdict.
	out.Identity = first.Identity
	summary.Advise(out.Verdict, out.Identity)
	out.Clock, notes = mergeClocks(docs, name)
	out.Notes = append(out.Notes, notes...)
	out.MarkBelowBound()
	return out, nil
}

// timelineMerge merges the timelines of one batch of several runs: all
// of them, or none when a run has none (a document written before
// timelines).
type timelineMerge struct {
	ts      *summary.TimelineStats
	missing bool
}

// add merges t in (nil: that run has none).
func (m *timelineMerge) add(t *summary.Timeline) error {
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
func (m *timelineMerge) summary() *summary.Timeline {
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

// mergeable checks the configurations and batches of docs against the
// first's (see Merge): it refuses what differs, or, when forced, returns
// the differences, with those the documents already carried.
func mergeable(docs []*Document, name func(int) string, force bool) ([]string, error) {
	first := docs[0]
	var forced []string
	for _, d := range docs {
		for _, f := range d.Forced {
			forced = appendDistinct(forced, f)
		}
	}
	for i, d := range docs[1:] {
		var why []string
		if diffs := mergeDiffs(&first.Config, &d.Config); len(diffs) > 0 {
			why = append(why, "config differs in "+joinDiffs(diffs))
		}
		if a, b := batchNames(first), batchNames(d); a != b {
			why = append(why, fmt.Sprintf("batches differ (%s vs %s)", a, b))
		}
		if len(why) == 0 {
			continue
		}
		if !force {
			return nil, fmt.Errorf("cannot merge %s and %s: %s; --force merges them anyway", name(0), name(i+1), strings.Join(why, "; "))
		}
		forced = append(forced, fmt.Sprintf("%s and %s: %s", name(0), name(i+1), strings.Join(why, "; ")))
	}
	return forced, nil
}

// mergeSLOs checks the merged run against the first run's objectives
// again (slo.Check) when any run had some, and returns the notes to add:
// the goodput is the runs' summed when every run counted it for the same
// objectives, else dropped.
func (out *Document) mergeSLOs(docs []*Document) []string {
	if len(out.Config.SLOs) == 0 {
		return nil
	}
	objectives := make([]slo.SLO, 0, len(out.Config.SLOs))
	for _, s := range out.Config.SLOs {
		o, err := slo.Parse(s)
		if err != nil {
			return []string{fmt.Sprintf("slo: not checked again: the first run's objective %q does not read: %v", s, err)}
		}
		objectives = append(objectives, o)
	}
	out.SLO = slo.Check(objectives, &out.Run, nil)
	notes := []string{"slo: the first run's objectives checked again on the merged figures"}
	var good summary.Goodput
	for _, d := range docs {
		if d.SLO == nil || d.SLO.Goodput == nil || !slices.Equal(d.Config.SLOs, out.Config.SLOs) {
			if slo.NewGoodput(objectives) != nil {
				notes = append(notes, "slo: goodput dropped: not every run counted it for the same objectives")
			}
			return notes
		}
		good.Requests += d.SLO.Goodput.Requests
		good.Good += d.SLO.Goodput.Good
	}
	if good.Requests > 0 {
		good.Share = float64(good.Good) / float64(good.Requests)
	}
	out.SLO.Goodput = &good
	return notes
}

// mergeRuns sets what out says of the runs themselves from docs (see
// Merge): the load summed into the config, times, runs, exit code and end
// reason, the tool's own lateness, CPU and warnings, and the notes on what
// differed between them without mattering.
func (out *Document) mergeRuns(docs []*Document, name func(int) string) error {
	lateness := stats.NewMetric()
	var warnings, versions, hosts []string
	cfgs := make([]*Config, len(docs))
	for i, d := range docs {
		cfgs[i] = &d.Config
		if i > 0 {
			out.Config.addLoad(&d.Config)
		}
		if d.Start.Before(out.Start) {
			out.Start = d.Start
		}
		if d.End.After(out.End) {
			out.End = d.End
		}
		out.Runs += d.Runs
		out.ExitCode = max(out.ExitCode, d.ExitCode)
		switch {
		case d.EndReason == EndSetupFailed || out.EndReason == EndSetupFailed:
			out.EndReason = EndSetupFailed
		case d.EndReason == EndInterrupted:
			out.EndReason = EndInterrupted
		}
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
		versions = appendDistinct(versions, d.Tool.Version)
		hosts = appendDistinct(hosts, d.Environment.Hostname)
	}
	out.Self.Lateness = summary.NewMetric(lateness)
	out.Self.Warning = strings.Join(warnings, "\n")
	if len(versions) > 1 {
		out.Notes = append(out.Notes, "the runs were made by different versions of the tool: "+strings.Join(versions, ", "))
	}
	if len(hosts) > 1 {
		out.Notes = append(out.Notes, "the runs were made on different hosts: "+strings.Join(hosts, ", "))
	}
	if inst := instanceValues(cfgs); len(inst) > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("each run had its own %s; config keeps %s's", strings.Join(inst, ", "), name(0)))
	}
	return nil
}

// mergeBatches sets out's batches from those of docs, each from the runs
// that have it (all of them, unless the merge was forced), and returns the
// merged statistics of the loopback and gateway batches (nil when absent).
func (out *Document) mergeBatches(docs []*Document, name func(int) string) (loop, gw *stats.Batch, err error) {
	out.Batches = []summary.Batch{}
	merged := make(map[string]*stats.Batch)
	costs := false
	for _, bn := range []string{summary.LoopbackBatch, summary.GatewayBatch} {
		var sb *stats.Batch
		var targets []string
		var samples []summary.Samples
		var declared []*summary.DeclaredTimings
		var replicas [][]summary.Replica
		var sizes []*summary.Sizes
		var usage []*summary.Usage
		tl := &timelineMerge{}
		fails := &failureMerge{}
		offset := 0
		for i, d := range docs {
			db := d.Batch(bn)
			if db == nil {
				continue
			}
			s, err := db.Stats()
			if err != nil {
				return nil, nil, fmt.Errorf("cannot merge %s: %s batch: %w", name(i), bn, err)
			}
			if sb == nil {
				sb = stats.NewBatch()
			}
			sb.Merge(s)
			if err := tl.add(db.Timeline); err != nil {
				return nil, nil, fmt.Errorf("cannot merge %s: %s batch: %w", name(i), bn, err)
			}
			if err := fails.add(db.FailureSummary); err != nil {
				return nil, nil, fmt.Errorf("cannot merge %s: %s batch: failure_summary: %w", name(i), bn, err)
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
			nb := summary.NewBatch(bn, strings.Join(targets, ", "), sb, mergeSamples(samples))
			nb.Timeline = tl.summary()
			if replicas != nil {
				if nb.Replicas, err = summary.MergeReplicas(replicas); err != nil {
					return nil, nil, fmt.Errorf("cannot merge the %s batches: %w", bn, err)
				}
			}
			nb.FailureSummary = fails.summary()
			if fails.missing && fails.t != nil {
				out.Notes = append(out.Notes, fmt.Sprintf("failure summary of the %s batch dropped: not every run has one", bn))
			}
			var ok bool
			if nb.Declared, ok = summary.MergeDeclared(declared); !ok {
				out.Notes = append(out.Notes, fmt.Sprintf("declared timings of the %s batch dropped: not every run has them", bn))
			}
			if nb.Sizes, ok = summary.MergeSizes(sizes); !ok {
				return nil, nil, fmt.Errorf("cannot merge the %s batch's sizes: a histogram is damaged", bn)
			}
			nb.Usage = summary.MergeUsage(usage)
			out.Batches = append(out.Batches, nb)
		}
	}
	if costs {
		out.Notes = append(out.Notes, "the batches' costs are left out: each run saw the whole gateway's and host's CPU, not its own share")
	}
	return merged[summary.LoopbackBatch], merged[summary.GatewayBatch], nil
}

// batchNames lists the batches of d, as "[loopback gateway]".
func batchNames(d *Document) string {
	names := make([]string, len(d.Batches))
	for i, b := range d.Batches {
		names[i] = b.Name
	}
	return "[" + strings.Join(names, " ") + "]"
}

// appendDistinct appends s to list unless it is empty or already there.
func appendDistinct(list []string, s string) []string {
	if s == "" || slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// offsetSamples returns a copy of s whose request indices are offset by n.
func offsetSamples(s summary.Samples, n int) summary.Samples {
	s = summary.NormSamples(s)
	for i := range s.Requests {
		s.Requests[i].Index += n
	}
	for i := range s.Series {
		s.Series[i].Index += n
	}
	return s
}

// mergeSamples combines the samples of the runs (see Merge).
func mergeSamples(list []summary.Samples) summary.Samples {
	var out summary.Samples
	byLabel := make(map[string][]summary.Series)
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
	if n := len(out.Requests); n > summary.MaxRequestSamples {
		kept := make([]summary.RequestSample, summary.MaxRequestSamples)
		for i := range kept {
			kept[i] = out.Requests[i*n/summary.MaxRequestSamples]
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
	return summary.NormSamples(out)
}

// pickSeries chooses, among the runs' series of one label, the fastest of
// the "fastest", the slowest of the "slowest" and the median of the
// "median", by the mean delay of their points; the first for another label.
func pickSeries(label string, ss []summary.Series) summary.Series {
	sorted := slices.Clone(ss)
	slices.SortStableFunc(sorted, func(a, b summary.Series) int {
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
func seriesMean(s summary.Series) float64 {
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
func mergeVerdicts(docs []*Document, name func(int) string, loop, gw *stats.Batch) (*verdict.Verdict, []string) {
	var missing, classes []string
	for i, d := range docs {
		if d.Verdict == nil {
			missing = append(missing, name(i))
			continue
		}
		classes = append(classes, name(i)+": "+d.Verdict.Class.String())
	}
	switch {
	case len(missing) == len(docs):
		return nil, nil
	case len(missing) > 0:
		return nil, []string{"verdict dropped: " + strings.Join(missing, ", ") + " had none"}
	}
	first := docs[0].Verdict
	for _, d := range docs[1:] {
		if d.Verdict.Class != first.Class {
			return nil, []string{"verdict dropped: the runs disagree (" + strings.Join(classes, ", ") + ")"}
		}
	}
	if slices.ContainsFunc(docs, func(d *Document) bool { return d.Verdict.Basis != first.Basis }) {
		var bases []string
		for i, d := range docs {
			bases = append(bases, fmt.Sprintf("%s: %s", name(i), cmp.Or(d.Verdict.Basis, "unknown")))
		}
		return nil, []string{"verdict dropped: the runs judged different requests (" + strings.Join(bases, ", ") + ")"}
	}

	v := &verdict.Verdict{Class: first.Class, Reason: first.Reason, Causes: []string{}, Basis: first.Basis}
	var coalesced float64
	var loopShares, sizes, periods, gaps, holds, following []float64
	holdRuns := 0
	var levels []string
	for _, d := range docs {
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
	for i, d := range docs {
		if g := d.Gateway(); g != nil && g.Stream.FailedTokens > 0 && d.Verdict.Basis != "" {
			mixed = append(mixed, name(i))
		}
	}
	notes := []string{fmt.Sprintf("verdict: the %d merged runs all found %q; tokens, bursts, hold requests, the share of tokens "+
		"in bursts and the added delay are exact over all of them; the burst size, burst period, emission gap, loopback share "+
		"and first-token figures are the median of the runs' values", len(docs), v.Class.String())}
	if len(mixed) > 0 {
		notes = append(notes, "verdict: the added delay is recomputed over the tokens of every request, failed ones included ("+
			strings.Join(mixed, ", ")+" had failed requests with tokens); each run judged its own on the requests of its basis")
	}
	sig, sigNotes := mergeSignatures(docs, name)
	v.Signature = sig
	notes = append(notes, sigNotes...)
	v.FirstTokenHold = holdRuns == len(docs)
	switch {
	case holdRuns > 0 && !v.FirstTokenHold:
		notes = append(notes, fmt.Sprintf("first-token hold flagged by %d of %d runs: not kept", holdRuns, len(docs)))
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
