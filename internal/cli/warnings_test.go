package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// cancelOn is a stdout that cancels the run once a line starting with
// prefix was printed.
func cancelOn(prefix string, cancel context.CancelFunc) *watched {
	return &watched{on: func(p []byte) {
		if bytes.HasPrefix(p, []byte(prefix)) {
			cancel()
		}
	}}
}

// warningLines are the lines of stderr that warn about the figures.
func warningLines(stderr string) []string {
	var out []string
	for l := range strings.Lines(stderr) {
		if strings.HasPrefix(l, "warning: ") || strings.HasPrefix(l, "interrupted: ") {
			out = append(out, l)
		}
	}
	return out
}

// TestReportPrintsTheRunsWarnings: a run interrupted after its first
// gateway request saves its document; `report` of it prints the text the
// run printed on stdout and, on stderr, the warnings the run printed after
// it (the interruption, and the overload warning if the run had one).
func TestReportPrintsTheRunsWarnings(t *testing.T) {
	g := startPodGateway(t)
	path := filepath.Join(t.TempDir(), "run.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout := cancelOn("gw ", cancel)
	stderr := announcer(g, "pod-0")
	args := []string{"-L", "127.0.0.1:0", "-t", g.addr, "--path", "/pod-0/v1/chat/completions",
		"-r", "4", "-c", "1", "-n", "50", "-d", "1", "--json", path}
	if code, _ := Measure(ctx, args, stdout, stderr); code != ExitInterrupted {
		t.Fatalf("Measure = %d, want %d (interrupted)\nstderr:\n%s", code, ExitInterrupted, stderr.String())
	}
	runWarnings := warningLines(stderr.String())
	if len(runWarnings) == 0 || runWarnings[len(runWarnings)-1] != "interrupted: the report covers the requests that finished or were cut short\n" {
		t.Fatalf("the run's warnings %q, want the interruption last", runWarnings)
	}

	code, text, errOut := subcommand("report", path)
	if code != ExitOK {
		t.Fatalf("report: exit %d\n%s", code, errOut)
	}
	if got := warningLines(errOut); strings.Join(got, "") != strings.Join(runWarnings, "") || errOut != strings.Join(got, "") {
		t.Errorf("report printed on stderr\n%s\nwant the run's warnings\n%s", errOut, strings.Join(runWarnings, ""))
	}
	// The report follows the per-request lines of the run's stdout.
	if run := stdout.String(); !strings.HasSuffix(run, text) || !strings.Contains(text, "=== gateway: ") {
		t.Errorf("report printed\n%s\nwant the end of the run's stdout\n%s", text, run)
	}
}
