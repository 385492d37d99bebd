package cli

import (
	"bytes"
	"context"
	"io"
	"os"
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

// TestDocumentRedactsSecrets: the configuration a run records (and so
// the JSON and HTML of the run) has the API key and secret header values
// masked, as every report does.
func TestDocumentRedactsSecrets(t *testing.T) {
	g := startPodGateway(t)
	dir := t.TempDir()
	jsonPath, htmlPath := filepath.Join(dir, "run.json"), filepath.Join(dir, "run.html")
	args := []string{"-L", "127.0.0.1:0", "-t", g.addr, "--path", "/pod-0/v1/chat/completions", "-r", "1", "-n", "5", "-d", "0.5", "-q",
		"--api-key", "sk-secret-key", "-H", "X-Api-Key: hdr-secret", "--json", jsonPath, "--html", htmlPath}
	stderr := announcer(g, "pod-0")
	if code, _ := Measure(context.Background(), args, io.Discard, stderr); code != ExitOK {
		t.Fatalf("Measure = %d\n%s", code, stderr.String())
	}
	for _, p := range []string{jsonPath, htmlPath} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "sk-secret-key") || strings.Contains(string(b), "hdr-secret") || !strings.Contains(string(b), "REDACTED") {
			t.Errorf("%s shows a secret, or no REDACTED", p)
		}
	}
}
