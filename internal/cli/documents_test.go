package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/testutil"
)

// measureTo runs one short loopback measurement with extra args and fails
// the test unless it succeeds.
func measureTo(t *testing.T, extra ...string) (stdout, stderr string) {
	t.Helper()
	ln := testutil.Listen(t)
	addr := ln.Addr().String()
	args := append([]string{"-L", addr, "-t", addr, "-r", "3", "-c", "3", "-n", "30", "-d", "0.5", "-q"}, extra...)
	var o, e bytes.Buffer
	if code, _ := MeasureOn(context.Background(), ln, args, &o, &e); code != ExitOK {
		t.Fatalf("Measure(%q) = %d\nstdout:\n%s\nstderr:\n%s", args, code, o.String(), e.String())
	}
	return o.String(), e.String()
}

func TestJSONHTMLCSVOutputs(t *testing.T) {
	dir := t.TempDir()
	jsonPath, htmlPath, csvPath := filepath.Join(dir, "run.json"), filepath.Join(dir, "run.html"), filepath.Join(dir, "run.csv")
	text, _ := measureTo(t, "--json", jsonPath, "--html", htmlPath, "--csv", csvPath)

	var doc map[string]any
	b, err := os.ReadFile(jsonPath)
	if err != nil || json.Unmarshal(b, &doc) != nil {
		t.Fatalf("--json file %s: %v\n%s", jsonPath, err, b)
	}
	if doc["schema_version"] != float64(1) || doc["end_reason"] != "done" {
		t.Errorf("document schema_version %v end_reason %v, want 1 and done", doc["schema_version"], doc["end_reason"])
	}
	cfg, _ := doc["config"].(map[string]any)
	if cfg["requests"] != float64(3) || cfg["api"] != "chat" {
		t.Errorf("document config %v, want the run's normalised configuration", cfg)
	}

	h, err := os.ReadFile(htmlPath)
	if err != nil || !strings.Contains(string(h), "<svg") {
		t.Errorf("--html file: %v, %d bytes, want an HTML page with charts", err, len(h))
	}

	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+3*30 || strings.Join(rows[0], ",") != "batch,request,token,emitted_ns,arrived_ns,delay_ms,read" {
		t.Errorf("--csv has %d rows (header %q), want a header and one row per token (90)", len(rows), rows[0])
	}

	// The saved run re-renders to the text the run printed.
	var out, errb bytes.Buffer
	if code, _ := Measure(context.Background(), []string{"report", jsonPath}, &out, &errb); code != ExitOK {
		t.Fatalf("report: %d %s", code, errb.String())
	}
	if out.String() != text {
		t.Errorf("report of the saved run differs from what the run printed:\n--- run\n%s\n--- report\n%s", text, out.String())
	}
}

func TestJSONToStdout(t *testing.T) {
	stdout, stderr := measureTo(t, "--json", "-")
	var doc map[string]any
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("stdout is not the JSON document: %v\n%s", err, stdout)
	}
	if !strings.Contains(stderr, "=== gateway: 3 requests, 3 ok, 0 failed, 90 tokens ===") {
		t.Errorf("with --json - the text report belongs on stderr:\n%s", stderr)
	}
}

// TestMergeReportCompare: three local runs, as parallel instances would
// make them, merged into one whose counts add up; re-rendered; compared.
func TestMergeReportCompare(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i := 0; i < 3; i++ {
		p := filepath.Join(dir, "run-"+string(rune('a'+i))+".json")
		measureTo(t, "--json", p)
		paths = append(paths, p)
	}
	var merged, errb bytes.Buffer
	if code, _ := Measure(context.Background(), append([]string{"merge", "--force"}, paths...), &merged, &errb); code != ExitOK { // each run its own gateway
		t.Fatalf("merge: %d %s", code, errb.String())
	}
	mergedPath := filepath.Join(dir, "all.json")
	os.WriteFile(mergedPath, merged.Bytes(), 0o644)
	var doc struct {
		Runs    int `json:"runs"`
		Batches []struct {
			Name     string `json:"name"`
			Requests int    `json:"requests"`
			Tokens   int    `json:"tokens"`
		} `json:"batches"`
	}
	if err := json.Unmarshal(merged.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Runs != 3 || len(doc.Batches) != 1 || doc.Batches[0].Requests != 9 || doc.Batches[0].Tokens != 270 {
		t.Errorf("merged %+v, want 3 runs, one gateway batch of 9 requests and 270 tokens", doc)
	}

	var text bytes.Buffer
	if code, _ := Measure(context.Background(), []string{"report", "--text", mergedPath}, &text, &errb); code != ExitOK ||
		!strings.Contains(text.String(), "=== gateway: 9 requests, 9 ok, 0 failed, 270 tokens ===") {
		t.Errorf("report of the merged run: %q", text.String())
	}

	var cmp bytes.Buffer
	if code, _ := Measure(context.Background(), []string{"compare", paths[0], mergedPath}, &cmp, &errb); code != ExitOK || cmp.Len() == 0 {
		t.Errorf("compare: exit %d, %q, %s", code, cmp.String(), errb.String())
	}
}

func TestSubcommandErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"schema_version": 99}`), 0o644)
	other := filepath.Join(dir, "other.json")
	measureTo(t, "--json", other)
	differs := filepath.Join(dir, "differs.json")
	ln := testutil.Listen(t)
	addr := ln.Addr().String()
	var o, e bytes.Buffer
	if code, _ := MeasureOn(context.Background(), ln, []string{"-L", addr, "-t", addr, "-r", "2", "-n", "20", "-d", "0.5", "-q", "--json", differs}, &o, &e); code != ExitOK {
		t.Fatalf("second run: %s", e.String())
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"report"}, "report takes one RUN.json"},
		{[]string{"report", filepath.Join(dir, "missing.json")}, "missing.json"},
		{[]string{"report", bad}, "99"},
		{[]string{"merge"}, "at least one"},
		{[]string{"merge", other, differs}, "tokens (30 vs 20)"},
		{[]string{"compare", other}, "BEFORE.json and AFTER.json"},
		{[]string{"report", "--bogus", other}, "unknown flag"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code, _ := Measure(context.Background(), tt.args, &out, &errb)
		if code != ExitFailure || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%q: exit %d, stderr %q; want 1 and a message containing %q", tt.args, code, errb.String(), tt.want)
		}
	}
}
