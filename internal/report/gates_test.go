package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/rundoc"
	"github.com/sse-latency/sse-latency/internal/rundoc/rundoctest"
	"github.com/sse-latency/sse-latency/internal/slo"
)

// gatesObjectives are the objectives of the gates document: two met (one
// per request: the goodput), one added not met.
var gatesObjectives = []string{"gateway emit->recv p99 < 1s", "ttft p50 < 1ms", "added emit->recv p50 < 1ms"}

// gatesDocument is the document of rundoctest.GatesRun, with fixed times.
func gatesDocument() *rundoc.Document {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cfg := rundoc.Config{Rounds: 2, SLOs: gatesObjectives}
	return rundoc.NewDocument(rundoc.RunInfo{Config: cfg, Start: start, End: start.Add(time.Second), EndReason: rundoc.EndDone,
		Version: "v"}, rundoctest.GatesRun(gatesObjectives...))
}

// sweepDocument is the document of rundoctest.Sweep, with fixed times
// and environment.
func sweepDocument() *rundoc.Document {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	d := rundoc.NewDocument(rundoc.RunInfo{Config: rundoc.Config{Target: "127.0.0.1:8080", Concurrency: 1}, Start: start,
		End: start.Add(time.Second), EndReason: rundoc.EndInterrupted, ExitCode: 130, Version: "v"}, nil)
	d.Tool.GoVersion = "go1.26.0"
	d.Environment = rundoc.Environment{OS: "linux", Arch: "amd64", NumCPU: 2, GOMAXPROCS: 2, Hostname: "bench-host"}
	d.Sweep = rundoctest.Sweep()
	return d
}

// TestGatesGolden: the rounds, declared and SLO blocks after the stream
// block, and the sweep's table; a saved document prints them the same.
func TestGatesGolden(t *testing.T) {
	for _, tt := range []struct {
		name  string
		doc   *rundoc.Document
		write func(*bytes.Buffer, *rundoc.Document) error
	}{
		{"gates.golden", gatesDocument(), func(b *bytes.Buffer, d *rundoc.Document) error { return WriteText(b, &d.Run, false) }},
		{"sweep.golden", sweepDocument(), func(b *bytes.Buffer, d *rundoc.Document) error { return WriteSweep(b, d) }},
	} {
		var got bytes.Buffer
		if err := tt.write(&got, tt.doc); err != nil {
			t.Fatal(err)
		}
		for _, w := range Warnings(tt.doc) {
			got.WriteString("stderr: " + w + "\n")
		}
		checkGolden(t, tt.name, tt.name, got.Bytes())
		var js bytes.Buffer
		if err := rundoc.WriteJSON(&js, tt.doc); err != nil {
			t.Fatal(err)
		}
		back, err := rundoc.ReadJSON(&js)
		if err != nil {
			t.Fatal(err)
		}
		var again bytes.Buffer
		if err := tt.write(&again, back); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(got.String(), again.String()) {
			t.Errorf("%s: the saved document prints differently:\n%s", tt.name, again.String())
		}
	}
	// --compat leaves the Go tool's blocks out.
	var compat bytes.Buffer
	d := gatesDocument()
	if err := WriteText(&compat, &d.Run, true); err != nil || strings.Contains(compat.String(), "=== rounds") || strings.Contains(compat.String(), "=== SLO") {
		t.Errorf("compat output holds the Go tool's blocks (%v):\n%s", err, compat.String())
	}
}

func TestWriteFailIf(t *testing.T) {
	vs := []slo.Verdict{
		{Cond: "gateway emit->recv (tokens) p99 +20%", Before: slo.Spread{Ms: 1, MinMs: 0.9, MaxMs: 1.1, Rounds: 3},
			After: slo.Spread{Ms: 1.5, MinMs: 1.3, MaxMs: 1.6, Rounds: 3}, ChangeMs: 0.5, ThresholdMs: 0.2,
			Exceeds: true, BeyondSpread: true, Fail: true},
		{Cond: "gateway emit->recv (tokens) p50 +20%", Before: slo.Spread{Ms: 1, MinMs: 0.5, MaxMs: 1.5, Rounds: 3},
			After: slo.Spread{Ms: 1.3, MinMs: 1.2, MaxMs: 1.4, Rounds: 3}, ChangeMs: 0.3, ThresholdMs: 0.2, Exceeds: true},
		{Cond: "added TTFT (client) p50 +0.5ms", Before: slo.Spread{Ms: 0.1, MinMs: 0.1, MaxMs: 0.1},
			After: slo.Spread{Ms: 0.2, MinMs: 0.2, MaxMs: 0.2}, ChangeMs: 0.1, ThresholdMs: 0.5, BeyondSpread: true},
		{Cond: "added TTFT (client) p99 +1%", Reason: "before: no calibration to subtract (no loopback batch)"},
	}
	var b bytes.Buffer
	if err := WriteFailIf(&b, vs); err != nil {
		t.Fatal(err)
	}
	want := "=== fail-if ===\n" +
		"FAIL  gateway emit->recv (tokens) p99 +20%: 1.000ms (0.900..1.100, 3 rounds) -> 1.500ms (1.300..1.600, 3 rounds): +0.500ms > +0.200ms, beyond the rounds' spread\n" +
		"ok    gateway emit->recv (tokens) p50 +20%: 1.000ms (0.500..1.500, 3 rounds) -> 1.300ms (1.200..1.400, 3 rounds): +0.300ms > +0.200ms, within the rounds' spread\n" +
		"ok    added TTFT (client) p50 +0.5ms: 0.100ms -> 0.200ms: +0.100ms <= +0.500ms, no rounds: the threshold alone decides\n" +
		"ERROR added TTFT (client) p99 +1%: cannot be evaluated: before: no calibration to subtract (no loopback batch)\n"
	if b.String() != want {
		t.Errorf("WriteFailIf =\n%s\nwant\n%s", b.String(), want)
	}
}

// TestSweepHTML: a sweep's page is offline and deterministic, with its
// table, knee, saturated step and two charts; a run's page shows its
// rounds, declared timings and objectives.
func TestSweepHTML(t *testing.T) {
	page := renderHTML(t, sweepDocument())
	if again := renderHTML(t, sweepDocument()); again != page {
		t.Error("the sweep's page differs from one rendering to the next")
	}
	htmlCheckOffline(t, "sweep", page)
	charts, counts := htmlSVGCharts(t, page)
	if len(charts) != 2 || counts[0]["path"] < 3 {
		t.Errorf("%d charts (%v), want 2 with the p50, p99 and threshold lines", len(charts), counts)
	}
	for _, want := range []string{
		"Sweep of concurrency: 2 of 3 steps, each 2 loopback &#43; 2 gateway rounds, alternated",
		`<td class="text bad">KNEE</td>`, `<td class="text bad">SATURATED</td>`, "knee: concurrency 1: added emit-&gt;recv p99",
		"tool saturated at concurrency 10: emission lateness p99 2.000ms &gt; 1ms", InterruptedLine,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the sweep's page lacks %q", want)
		}
	}
	run := renderHTML(t, gatesDocument())
	for _, want := range []string{"<h2>Rounds", "order: L G G L", "<h2>Declared by the gateway vs observed", "x-litellm-overhead-duration-ms (overhead)",
		"server-timing:upstream", "<h2>Service-level objectives", `<tr class="bad"><td class="text">NOT MET</td><td class="text">added emit-&gt;recv (tokens) p50 &lt; 1ms`,
		"goodput: 2 of 8 gateway requests (25.0%)"} {
		if !strings.Contains(run, want) {
			t.Errorf("the run's page lacks %q", want)
		}
	}
}
