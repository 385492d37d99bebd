package report

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/rundoc"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/summary/summarytest"
)

// scenarioRun is the summary a run of the scenario computes, its
// lateness late (ns) recorded.
func scenarioRun(sc summarytest.Scenario, late ...int64) *summary.Run {
	var loop *summary.Collector
	if sc.Loop != nil {
		loop = summary.NewCollector()
		for _, r := range requests(sc.Loop...) {
			loop.Add(r)
		}
	}
	gw := summary.NewCollector()
	for _, r := range requests(sc.Gw...) {
		gw.Add(r)
	}
	m := stats.NewMetric()
	for _, ns := range late {
		m.Record(ns)
	}
	return summary.New(summary.Inputs{Loop: loop, Gateway: gw, LoopTarget: "127.0.0.1:8090", GatewayTarget: "127.0.0.1:8080", Lateness: m,
		Clock: sc.Clock, Replicas: sc.Replicas})
}

// readBack writes the document of run s and reads it back, as `sse-latency
// report` gets it.
func readBack(t *testing.T, s *summary.Run, compat bool, reason string) (orig, back *rundoc.Document) {
	t.Helper()
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	orig = rundoc.NewDocument(rundoc.RunInfo{Config: rundoc.Config{Compat: compat}, Start: start, End: start.Add(time.Second), EndReason: reason}, s)
	var js bytes.Buffer
	if err := rundoc.WriteJSON(&js, orig); err != nil {
		t.Fatal(err)
	}
	back, err := rundoc.ReadJSON(&js)
	if err != nil {
		t.Fatalf("ReadJSON(WriteJSON(NewDocument)): %v", err)
	}
	return orig, back
}

// TestDocumentText: `sse-latency report` prints from the saved summary the
// text and the warnings the run printed from its own: byte for byte, with
// or without calibration, verdict or --compat, interrupted or not.
func TestDocumentText(t *testing.T) {
	tests := []struct {
		scenario  string
		compat    bool
		noVerdict bool
		reason    string
		late      []int64 // emission lateness, ns
		warnings  []string
	}{
		{scenario: "full", reason: rundoc.EndDone, late: []int64{10_000}},
		{scenario: "no_calibration", reason: rundoc.EndDone},
		{scenario: "crosshost", reason: rundoc.EndDone},
		{scenario: "crosshost", compat: true, reason: rundoc.EndDone},
		{scenario: "empty", reason: rundoc.EndInterrupted, warnings: []string{InterruptedLine}},
		{scenario: "full", compat: true, reason: rundoc.EndDone},
		{scenario: "full", noVerdict: true, reason: rundoc.EndDone, late: []int64{3_000_000},
			warnings: []string{"warning: sse-latency fell behind its own emission schedule (lateness p99=3.000ms > 1ms): " +
				"these figures describe the tool's overload, not the gateway; lower -c or raise -d"}},
	}
	for _, tt := range tests {
		s := scenarioRun(summarytest.Scenarios[tt.scenario], tt.late...)
		if tt.noVerdict {
			s.Verdict = nil
		}
		var want bytes.Buffer
		if err := WriteText(&want, s, tt.compat); err != nil {
			t.Fatal(err)
		}
		orig, back := readBack(t, s, tt.compat, tt.reason)
		var got bytes.Buffer
		if err := WriteText(&got, &back.Run, back.Compat()); err != nil {
			t.Fatalf("%s: WriteText: %v", tt.scenario, err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%s (compat %v, verdict %v): the text of the saved run =\n%s\nwant (the run's)\n%s",
				tt.scenario, tt.compat, !tt.noVerdict, got.Bytes(), want.Bytes())
		}
		if strings.Contains(got.String(), "=== verdict ===") == (tt.compat || tt.noVerdict) || strings.Contains(got.String(), "=== stream ===") == tt.compat {
			t.Errorf("%s (compat %v, verdict %v): verdict or stream block wrongly present or absent:\n%s", tt.scenario, tt.compat, !tt.noVerdict, got.Bytes())
		}
		if w, g := Warnings(orig), Warnings(back); !slices.Equal(g, w) || !slices.Equal(g, tt.warnings) {
			t.Errorf("%s: warnings of the saved run %q, of the run %q; want %q", tt.scenario, g, w, tt.warnings)
		}
	}
}

// TestWriteTextNoGateway: a run whose setup failed prints nothing.
func TestWriteTextNoGateway(t *testing.T) {
	d := rundoc.NewDocument(rundoc.RunInfo{EndReason: rundoc.EndSetupFailed, ExitCode: 1}, nil)
	var b bytes.Buffer
	if err := WriteText(&b, &d.Run, false); err != nil || b.Len() != 0 {
		t.Errorf("WriteText(no batch) = %q, %v; want nothing, nil", b.String(), err)
	}
	if err := WriteReport(&b, &d.Run); err != nil || b.Len() != 0 {
		t.Errorf("WriteReport(no batch) = %q, %v; want nothing, nil", b.String(), err)
	}
}

// TestWarnings: one line per forced difference, one per run's warning,
// then the interruption; the writer's error is returned.
func TestWarnings(t *testing.T) {
	d := rundoc.NewDocument(rundoc.RunInfo{EndReason: rundoc.EndInterrupted}, nil)
	d.Self.Warning = "first run fell behind\nsecond run fell behind"
	d.Forced = []string{`a.json and b.json: config differs in tokens (1 vs 2)`}
	want := []string{
		"warning: merged with --force although a.json and b.json: config differs in tokens (1 vs 2): the figures may mix different measurements",
		"warning: first run fell behind", "warning: second run fell behind", InterruptedLine,
	}
	if got := Warnings(d); !slices.Equal(got, want) {
		t.Errorf("Warnings = %q, want %q", got, want)
	}
	var b bytes.Buffer
	if err := WriteWarnings(&b, d); err != nil || b.String() != strings.Join(want, "\n")+"\n" {
		t.Errorf("WriteWarnings = %q, %v", b.String(), err)
	}
	if err := WriteWarnings(&failAfter{N: 1}, d); err != errWrite {
		t.Errorf("WriteWarnings(failing writer) = %v, want %v", err, errWrite)
	}
	if got := Warnings(rundoc.NewDocument(rundoc.RunInfo{EndReason: rundoc.EndDone}, nil)); got != nil {
		t.Errorf("Warnings(quiet run) = %q, want none", got)
	}
}

// TestVersion1DocumentsRender: documents an earlier version wrote (see
// rundoc's testdata/v1) print the text and the warnings their run printed,
// byte for byte.
func TestVersion1DocumentsRender(t *testing.T) {
	dir := filepath.Join("..", "rundoc", "testdata", "v1")
	for _, name := range []string{"fail", "open", "w1"} {
		f, err := os.Open(filepath.Join(dir, name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		d, err := rundoc.ReadJSON(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var text, warnings bytes.Buffer
		if err := WriteText(&text, &d.Run, d.Compat()); err != nil {
			t.Fatal(err)
		}
		if err := WriteWarnings(&warnings, d); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			file string
			got  []byte
		}{{name + ".txt", text.Bytes()}, {name + ".err", warnings.Bytes()}} {
			want, err := os.ReadFile(filepath.Join(dir, c.file))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(c.got, want) {
				t.Errorf("%s: rendered\n%s\nwant (what the run printed, %s)\n%s", name, c.got, c.file, want)
			}
		}
	}
}
