package report

import (
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/rundoc"
	"github.com/sse-latency/sse-latency/internal/summary/summarytest"
)

// phasesDocument is the document of summarytest.PhasedRun, with fixed
// run information.
func phasesDocument() *rundoc.Document {
	start := time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)
	d := rundoc.NewDocument(rundoc.RunInfo{Config: rundoc.Config{Target: "127.0.0.1:8080", Requests: 5, Tokens: 30, Reasoning: 20, ToolCall: 10},
		Start: start, End: start.Add(5 * time.Second), EndReason: rundoc.EndDone, ExitCode: 1, Version: "v0.9.0"}, summarytest.PhasedRun())
	d.Environment = rundoc.Environment{OS: "linux", Arch: "amd64", NumCPU: 2, GOMAXPROCS: 2, Hostname: "bench"}
	d.Tool.GoVersion = "go1.26.0"
	return d
}

// TestHTMLPhases: a run whose timeline is notable gets the phases section —
// the phase timeline chart, the timeline's figures per batch, the
// heartbeats — and its findings in the verdict box, like the text report
// (testdata/html_phases.html, go test -update rewrites it). A run without
// has no such section (TestHTMLStructure counts 4 charts).
func TestHTMLPhases(t *testing.T) {
	page := renderHTML(t, phasesDocument())
	checkGolden(t, "WriteHTML(phases)", "html_phases.html", []byte(page))
	htmlCheckOffline(t, "phases", page)
	charts, counts := htmlSVGCharts(t, page)
	if len(charts) != 5 {
		t.Fatalf("%d charts, want the 4 and the phase timeline", len(charts))
	}
	tl := charts[4]
	// Loopback: waiting, reasoning, tool call, text; gateway (its
	// reasoning dropped, its start held): waiting, tool call, text.
	if !strings.Contains(tl, "<title>phase timeline") || counts[4]["rect"] != 1+4+3+4 || strings.Count(tl, `stroke-width="2"/>`) != 2+1 {
		t.Errorf("phase timeline %v: want 7 spans, 4 legend boxes, 2 head marks and their legend line:\n%s", counts[4], tl)
	}
	for _, want := range []string{
		"<h2>Phases (ms from the request's write)</h2>",
		"<td>first visible (TTFO)</td><td>4</td><td>1050.2</td>",
		"<td>emit-&gt;recv reasoning</td><td>0</td><td colspan=\"8\" class=\"na\">no samples</td>",
		"8 injected, 0 swallowed",
		"<p>held stream start: the head came 1050.20 ms into the stream (p50), with the first visible token",
		"<p>idle cut: 1 of 5 streams ended after 1500.00 ms of silence",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if plain := renderHTML(t, simDocument(false)); strings.Contains(plain, "<h2>Phases") {
		t.Error("a run without a notable timeline has a phases section")
	}
}
