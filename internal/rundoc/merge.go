package rundoc

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sse-latency/sse-latency/internal/slo"
	"github.com/sse-latency/sse-latency/internal/summary"
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
//   - targets: the distinct targets of the runs, comma-separated; tool and
//     environment: the first document's (a note lists differing tool
//     versions or hosts);
//   - start is the earliest, end the latest, runs the sum, exit_code the
//     largest; end_reason is "done" only when every run's is, else
//     "setup_failed" if any run's is, else "interrupted"; the runs' own
//     Forced are kept;
//   - the summaries — batches, samples, verdict, timelines, failures,
//     replicas, clocks, the tool's own figures — are merged by
//     summary.Merge, which says how; the first run's objectives are
//     checked again on the merged figures (slo.CheckMerged), the goodput
//     summed when every run counted it for the same objectives.
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
	out.mergeRuns(docs, name)
	runs := make([]*summary.Run, len(docs))
	for i, d := range docs {
		runs[i] = &d.Run
	}
	merged, notes, err := summary.Merge(runs, summary.MergeOptions{Name: name, SLO: mergedSLOs(docs)})
	if err != nil {
		return nil, err
	}
	out.Run = *merged
	out.Notes = append(out.Notes, notes...)
	return out, nil
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

// mergedSLOs checks the merged run against the first run's objectives
// again (slo.CheckMerged) when it had some: nil when it had none.
func mergedSLOs(docs []*Document) func(*summary.Run) (*summary.SLOs, []string) {
	if len(docs[0].Config.SLOs) == 0 {
		return nil
	}
	runs := make([]slo.RunOutcome, len(docs))
	for i, d := range docs {
		runs[i] = slo.RunOutcome{Objectives: d.Config.SLOs, Check: d.SLO}
	}
	return func(merged *summary.Run) (*summary.SLOs, []string) { return slo.CheckMerged(merged, runs) }
}

// mergeRuns sets what out says of the runs themselves from docs (see
// Merge): the load summed into the config, times, runs, exit code and end
// reason, and the notes on what differed between them without mattering.
func (out *Document) mergeRuns(docs []*Document, name func(int) string) {
	var versions, hosts []string
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
		versions = appendDistinct(versions, d.Tool.Version)
		hosts = appendDistinct(hosts, d.Environment.Hostname)
	}
	if len(versions) > 1 {
		out.Notes = append(out.Notes, "the runs were made by different versions of the tool: "+strings.Join(versions, ", "))
	}
	if len(hosts) > 1 {
		out.Notes = append(out.Notes, "the runs were made on different hosts: "+strings.Join(hosts, ", "))
	}
	if inst := instanceValues(cfgs); len(inst) > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("each run had its own %s; config keeps %s's", strings.Join(inst, ", "), name(0)))
	}
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
