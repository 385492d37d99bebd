package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/rundoc"
)

// TestOutputsCheckedBeforeMeasuring: an output that cannot be written
// fails the run at once — before any request, with the flag and the path
// named — and leaves the files the run did not get to write as they were.
func TestOutputsCheckedBeforeMeasuring(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-dir", "out")
	existing := filepath.Join(dir, "earlier.json")
	if err := os.WriteFile(existing, []byte("an earlier run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, "fresh.json")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"--json", []string{"--json", missing + ".json"}, "sse-latency: --json: open " + missing + ".json: no such file or directory\n"},
		{"--html", []string{"--html", missing + ".html"}, "sse-latency: --html: open " + missing + ".html: no such file or directory\n"},
		{"--csv", []string{"--csv", missing + ".csv"}, "sse-latency: --csv: open " + missing + ".csv: no such file or directory\n"},
		{"--html a directory, beside a good --json", []string{"--json", existing, "--html", dir}, "sse-latency: --html: open " + dir + ": is a directory\n"},
		{"--csv bad, beside a new --json", []string{"--json", fresh, "--csv", missing + ".csv"}, "sse-latency: --csv: open " + missing + ".csv"},
	}
	for _, tt := range tests {
		// Requests of 5 s each to a port nothing listens on: a run that
		// measured would print its batch lines (and fail).
		args := append([]string{"-L", "127.0.0.1:0", "-t", "127.0.0.1:1", "-n", "1000", "-d", "5", "-q"}, tt.args...)
		var out, errOut bytes.Buffer
		code, _ := Measure(context.Background(), args, &out, &errOut)
		if code != ExitFailure || !strings.Contains(errOut.String(), tt.want) {
			t.Errorf("%s: exit %d, stderr\n%s\nwant 1 and %q", tt.name, code, errOut.String(), tt.want)
		}
		if s := errOut.String(); strings.Contains(s, "listening") || strings.Contains(s, "sending") || out.Len() != 0 {
			t.Errorf("%s: the run measured before failing:\nstdout:\n%s\nstderr:\n%s", tt.name, out.String(), s)
		}
	}
	if b, err := os.ReadFile(existing); err != nil || string(b) != "an earlier run\n" {
		t.Errorf("the earlier --json file became %q, %v; want it untouched", b, err)
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("the --json file of a run that failed to start was left behind: %v", err)
	}
}

// TestOutputsOfARunThatCannotStart: when the server cannot listen, the
// output files the run created are removed again, and an earlier document
// is left as it was.
func TestOutputsOfARunThatCannotStart(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0") // held: -L cannot bind it
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := t.TempDir()
	earlier := filepath.Join(dir, "earlier.html")
	if err := os.WriteFile(earlier, []byte("<p>an earlier run</p>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	newJSON, newCSV := filepath.Join(dir, "run.json"), filepath.Join(dir, "run.csv")
	var out, errOut bytes.Buffer
	args := []string{"-L", taken.Addr().String(), "-t", "127.0.0.1:1", "-q", "--json", newJSON, "--html", earlier, "--csv", newCSV}
	if code, _ := Measure(context.Background(), args, &out, &errOut); code != ExitFailure || !strings.Contains(errOut.String(), "cannot listen on") {
		t.Fatalf("Measure(-L taken) = %d\n%s\nwant 1 and the listen error", code, errOut.String())
	}
	for _, p := range []string{newJSON, newCSV} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left behind by a run that could not start: %v", p, err)
		}
	}
	if b, err := os.ReadFile(earlier); err != nil || string(b) != "<p>an earlier run</p>\n" {
		t.Errorf("the earlier --html file became %q, %v; want it untouched", b, err)
	}
}

// TestOutputFlags: output flags a run cannot honour are refused as usage
// errors.
func TestOutputFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--json", "a.json"}, "--json: nothing is measured without -t (server only)"},
		{[]string{"--json", "-"}, "--json: nothing is measured without -t (server only)"},
		{[]string{"--csv", "a.csv"}, "--csv: nothing is measured without -t (server only)"},
		{[]string{"-t", "127.0.0.1:1", "--json", "out/a.json", "--html", "out/./a.json"}, "--json and --html name the same file out/./a.json"},
		{[]string{"-t", "127.0.0.1:1", "--html", "a", "--csv", "a"}, "--html and --csv name the same file a"},
	}
	for _, tt := range tests {
		_, err := parseArgs(tt.args)
		if err == nil || err.Error() != tt.want {
			t.Errorf("parseArgs(%q) = %v, want %q", tt.args, err, tt.want)
		}
	}
	if _, err := parseArgs([]string{"-t", "127.0.0.1:1", "--json", "-", "--html", "-", "--csv", "c.csv"}); err != nil {
		t.Errorf("--json - (stdout) beside --html -: %v, want accepted", err)
	}
}

// TestOutputsReplaceEarlierFiles: a run's document replaces a longer file
// it was given, whole.
func TestOutputsReplaceEarlierFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.json")
	if err := os.WriteFile(path, bytes.Repeat([]byte("x"), 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Target, cfg.JSONPath = "127.0.0.1:1", path
	o, err := openOutputs(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	doc := rundoc.NewDocument(rundoc.RunInfo{EndReason: rundoc.EndDone}, nil)
	if err := o.writeDocument(doc); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := rundoc.ReadJSON(f); err != nil {
		t.Errorf("the document over a longer file does not read: %v", err)
	}
	o.abandon() // after the write: nothing left to close, nothing removed
	if _, err := os.Stat(path); err != nil {
		t.Errorf("abandon after the write removed the document: %v", err)
	}
}
