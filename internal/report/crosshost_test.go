package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/summary/summarytest"
)

// TestCrossHostText: a run across hosts prints its two-clock figures
// within the bound marked, the request-leg block and the clock block after
// the reference's blocks (testdata/crosshost_text.golden); with compat,
// the reference's lines only, nothing marked.
func TestCrossHostText(t *testing.T) {
	s := scenarioRun(summarytest.Scenarios["crosshost"])
	var b bytes.Buffer
	if err := WriteText(&b, s, false); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "crosshost_text.golden")
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if want, err := os.ReadFile(path); err != nil || !bytes.Equal(b.Bytes(), want) {
		t.Errorf("WriteText(crosshost) differs from %s (%v):\n--- got\n%s--- want\n%s", path, err, b.Bytes(), want)
	}
	for _, line := range []string{
		"emit->recv (tokens)      n=297  mean=0.04ms*  min=0.03ms*  p50=0.03ms*  p95=0.06ms  p99=0.06ms  max=0.06ms",
		"TTFT (client)            n=3  mean=21.23ms  min=21.00ms  p50=21.19ms  p95=21.19ms  p99=21.19ms  max=21.50ms",
		"=== request leg (client sent -> server received) ===",
		"=== clock (server on another host) ===",
		"offset         server - client = +1234.567ms ± 0.050ms (3 estimates, best round trip 0.100ms, drift 0.000ms)",
	} {
		if !containsLine(b.String(), line) {
			t.Errorf("WriteText(crosshost) lacks the line\n%s\nin\n%s", line, b.String())
		}
	}
	b.Reset()
	if err := WriteText(&b, s, true); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "*") || strings.Contains(b.String(), "request leg") || strings.Contains(b.String(), "clock") {
		t.Errorf("WriteText(crosshost, compat) marks figures or prints the Go tool's blocks:\n%s", b.String())
	}
	// Every write error is returned.
	var all bytes.Buffer
	if err := WriteLegs(&all, s); err != nil {
		t.Fatal(err)
	}
	if err := WriteClock(&all, s.Clock); err != nil {
		t.Fatal(err)
	}
	for n := range strings.Count(all.String(), "\n") {
		err := WriteLegs(&failAfter{N: n}, s)
		if err == nil {
			err = WriteClock(&failAfter{N: n - 2}, s.Clock)
		}
		if err == nil {
			t.Errorf("WriteLegs and WriteClock with write %d failing: no error", n)
		}
	}
}

// TestLegsAndClockAbsent: one process without request legs prints neither
// block.
func TestLegsAndClockAbsent(t *testing.T) {
	s := scenarioRun(summarytest.Scenarios["full"])
	var b bytes.Buffer
	if err := WriteLegs(&b, s); err != nil || b.Len() != 0 {
		t.Errorf("WriteLegs(no legs) = %q, %v", b.String(), err)
	}
	if err := WriteClock(&b, nil); err != nil || b.Len() != 0 {
		t.Errorf("WriteClock(nil) = %q, %v", b.String(), err)
	}
	if (&summary.Clock{BoundMs: 0.05}).Below(0.05) || !(&summary.Clock{BoundMs: 0.05}).Below(-0.049) || (*summary.Clock)(nil).Below(0) {
		t.Error("Clock.Below: want |v| < bound, false without a clock")
	}
}

// TestCrossHostHTML: the HTML page of a run across hosts has the request
// leg in its summary table, marks the two-clock figures within the bound,
// and says what the clock offset was; a run in one process marks nothing.
func TestCrossHostHTML(t *testing.T) {
	_, d := readBack(t, scenarioRun(summarytest.Scenarios["crosshost"]), false, "done")
	page := renderHTML(t, d)
	for _, want := range []string{
		"<tr><td>request leg (sent → server received)</td><td>3</td><td>20.23</td>",
		"<tr><td>emit-&gt;recv (tokens)</td><td>297</td><td>0.040*</td><td>0.030*</td>",
		"mean &#43;0.040ms*  p50 &#43;0.030ms*  p99 &#43;0.060ms  (no calibration to subtract)",
		"its clock minus this host&#39;s is &#43;1234.567 ms ± 0.050 ms (3 estimates, best round trip 0.100 ms, drift 0.000 ms)",
		"Figures marked * are within ±0.050 ms of zero",
		"<h2>Server replicas (by the instance that served each request)</h2>",
		"<tr class=\"bad\"><td>srv-a</td><td class=\"text\">http://10.0.0.5:8091</td><td>2</td><td>2</td><td>200</td><td>200</td><td>20.095</td><td>0.030*</td><td>&#43;1234.567</td><td>0.050</td>",
		"<tr class=\"bad\"><td>(none)</td><td class=\"text\">http://10.0.0.7:8091</td><td>0</td><td>0</td><td>0</td><td>0</td><td>–</td><td>–</td><td>–</td><td>–</td><td class=\"text\">down: reading the server&#39;s clock:",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the HTML page of a run across hosts lacks %q", want)
		}
	}
	_, d = readBack(t, scenarioRun(summarytest.Scenarios["full"]), false, "done")
	if page := renderHTML(t, d); strings.Contains(page, "*</td>") || strings.Contains(page, "request leg") || strings.Contains(page, "another host") || strings.Contains(page, "Server replicas") {
		t.Error("the HTML page of a run in one process marks figures, or has a request leg, a clock or replicas")
	}
}
