package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/sse-latency/sse-latency/internal/report"
	"github.com/sse-latency/sse-latency/internal/rundoc"
	"github.com/sse-latency/sse-latency/internal/slo"
)

// reportAbout, mergeAbout, compareAbout and compareNotes are the helps of
// the subcommands on saved documents, around their flags (see command).
const reportAbout = `Re-renders a run (or a sweep) saved with --json: the text report (the
default, or with --text) and/or the HTML report; then, on stderr, the
warnings the run printed (its own overload, an interruption, a forced
merge, an objective not met).
`

const mergeAbout = `Combines runs taken in parallel against one gateway (for example one per pod
of a Kubernetes Indexed Job): histograms are merged exactly, counts and the
load (-r, -c, --rate, --warmup) summed. Each run may have its own listen
address and --path prefix. Runs against another gateway (-t, --host-header)
or of another measurement (-n, -d, --api, ...) are refused with the field
named; --force merges them anyway and the merged run says so.
`

const compareAbout = `Prints, metric by metric, how AFTER differs from BEFORE.
`

const compareNotes = `--fail-if '[gateway|loopback|added] <metric> <stat> +<n>%' (or +<n>ms; repeatable),
e.g. --fail-if 'emit->recv p99 +20%', exits 3 when the figure grew by more
than the threshold AND beyond the noise of the runs' rounds: every round
of AFTER worse than every round of BEFORE (runs made with --rounds). The
figure of a run with rounds is the median of its rounds; a run without
rounds has no measure of its noise, and only the threshold decides.
Stats: mean, p50, p95, p99. A condition a document cannot answer (no such
batch, no samples) exits 1.
`

// reportFlags is report's flag set.
func reportFlags(text *bool, html *string) *pflag.FlagSet {
	fs := newSubFlags("report")
	fs.BoolVar(text, "text", false, "print the text report (the default without --html)")
	fs.StringVar(html, "html", "", "<file> write the self-contained HTML report")
	return fs
}

// mergeFlags is merge's flag set.
func mergeFlags(force *bool) *pflag.FlagSet {
	fs := newSubFlags("merge")
	fs.BoolVar(force, "force", false, "merge runs of other gateways or measurements anyway (the merged run says so)")
	return fs
}

// compareFlags is compare's flag set.
func compareFlags(failIf *[]string) *pflag.FlagSet {
	fs := newSubFlags("compare")
	fs.StringArrayVar(failIf, "fail-if", nil, "<condition> exit 3 when AFTER regressed by more than this, e.g. 'emit->recv p99 +20%' (repeatable)")
	return fs
}

// subUsage prints err (if any) and the usage, and returns the exit status.
func subUsage(stderr io.Writer, usage string, err error) int {
	if errors.Is(err, pflag.ErrHelp) {
		fmt.Fprint(stderr, usage)
		return ExitOK
	}
	fmt.Fprintf(stderr, "sse-latency: %v\n%s", err, usage)
	return ExitFailure
}

func newSubFlags(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.SortFlags = false // the help lists the flags in their order
	return fs
}

// readDocument opens and decodes one saved run, naming the file in errors.
func readDocument(path string) (*rundoc.Document, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, err := rundoc.ReadJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

func reportCmd(args []string, stdout, stderr io.Writer) int {
	text, html := new(bool), new(string)
	fs := reportFlags(text, html)
	if err := fs.Parse(args); err != nil {
		return subUsage(stderr, reportUsage(), err)
	}
	if fs.NArg() != 1 {
		return subUsage(stderr, reportUsage(), fmt.Errorf("report takes one RUN.json, got %d arguments", fs.NArg()))
	}
	var htmlOut *outFile
	if *html != "" {
		var err error
		if htmlOut, err = createOutFile("--html", *html); err != nil {
			fmt.Fprintf(stderr, "sse-latency: %v\n", err)
			return ExitFailure
		}
		defer htmlOut.abandon()
	}
	d, err := readDocument(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "sse-latency: %v\n", err)
		return ExitFailure
	}
	if *text || *html == "" {
		write := func(w io.Writer) error { return report.WriteText(w, &d.Run, d.Compat()) }
		if d.Sweep != nil {
			write = func(w io.Writer) error { return report.WriteSweep(w, d) }
		}
		if err := write(stdout); err != nil {
			fmt.Fprintf(stderr, "sse-latency: %v\n", err)
			return ExitFailure
		}
	}
	// What the run warned of, as it did: after the report, on stderr.
	report.WriteWarnings(stderr, d)
	if htmlOut != nil {
		if err := htmlOut.commit(func(w io.Writer) error { return report.WriteHTML(w, d) }); err != nil {
			fmt.Fprintf(stderr, "sse-latency: %v\n", err)
			return ExitFailure
		}
	}
	return ExitOK
}

func mergeCmd(args []string, stdout, stderr io.Writer) int {
	force := new(bool)
	fs := mergeFlags(force)
	if err := fs.Parse(args); err != nil {
		return subUsage(stderr, mergeUsage(), err)
	}
	if fs.NArg() < 1 {
		return subUsage(stderr, mergeUsage(), errors.New("merge needs at least one RUN.json"))
	}
	var docs []*rundoc.Document
	for _, p := range fs.Args() {
		d, err := readDocument(p)
		if err != nil {
			fmt.Fprintf(stderr, "sse-latency: %v\n", err)
			return ExitFailure
		}
		docs = append(docs, d)
	}
	merged, err := rundoc.Merge(docs, rundoc.MergeOptions{Names: fs.Args(), Force: *force})
	if err != nil {
		fmt.Fprintf(stderr, "sse-latency: %v\n", err)
		return ExitFailure
	}
	for _, n := range merged.Notes {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	// The merged run's warnings, as report will print them.
	report.WriteWarnings(stderr, merged)
	if err := rundoc.WriteJSON(stdout, merged); err != nil {
		fmt.Fprintf(stderr, "sse-latency: %v\n", err)
		return ExitFailure
	}
	return ExitOK
}

func compareCmd(args []string, stdout, stderr io.Writer) int {
	failIf := new([]string)
	fs := compareFlags(failIf)
	if err := fs.Parse(args); err != nil {
		return subUsage(stderr, compareUsage(), err)
	}
	if fs.NArg() != 2 {
		return subUsage(stderr, compareUsage(), fmt.Errorf("compare takes BEFORE.json and AFTER.json, got %d arguments", fs.NArg()))
	}
	var conds []slo.FailIf
	for _, c := range *failIf {
		fc, err := slo.ParseFailIf(c)
		if err != nil {
			return subUsage(stderr, compareUsage(), fmt.Errorf("--fail-if: %v (want %s)", err, slo.FailIfSyntax))
		}
		conds = append(conds, fc)
	}
	before, err := readDocument(fs.Arg(0))
	var after *rundoc.Document
	if err == nil {
		if after, err = readDocument(fs.Arg(1)); err == nil {
			err = rundoc.Compare(stdout, before, after)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "sse-latency: %v\n", err)
		return ExitFailure
	}
	if len(conds) == 0 {
		return ExitOK
	}
	verdicts := make([]slo.Verdict, len(conds))
	for i, c := range conds {
		verdicts[i] = c.Eval(&before.Run, &after.Run)
	}
	if err := report.WriteFailIf(stdout, verdicts); err != nil {
		fmt.Fprintf(stderr, "sse-latency: %v\n", err)
		return ExitFailure
	}
	code := ExitOK
	for _, v := range verdicts {
		switch {
		case v.Reason != "":
			fmt.Fprintf(stderr, "sse-latency: --fail-if %s: cannot be evaluated: %s\n", v.Cond, v.Reason)
			code = ExitFailure
		case v.Fail && code == ExitOK:
			code = ExitGate
		}
	}
	for _, v := range verdicts {
		if v.Fail {
			fmt.Fprintf(stderr, "regression: %s: %+.3fms (%.3fms -> %.3fms), beyond the threshold (%.3fms) and the rounds' spread\n",
				v.Cond, v.ChangeMs, v.Before.Ms, v.After.Ms, v.ThresholdMs)
		}
	}
	return code
}
