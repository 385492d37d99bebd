package rundoc

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/summary/summarytest"
)

// flushing is a gateway that forwards every token of the full scenario's
// calibration at once, 0.1 ms late, with a shorter stream (-n 200): the
// "after" of a user who fixed the gateway and changed the config too.
var flushing = struct{ loop, gw []stream }{
	loop: summarytest.Scenarios["full"].Loop,
	gw: []stream{
		{Batch: "gw", Index: 0, TTFT: 150_000, FirstDelay: 40_000, Tokens: 200, Gaps: summarytest.LoopGaps, Delays: summarytest.Repeat(summarytest.Mid(100_000), 7)},
		{Batch: "gw", Index: 1, TTFT: 170_000, FirstDelay: 45_000, Tokens: 200, Gaps: summarytest.LoopGaps, Delays: summarytest.Repeat(summarytest.Mid(110_000), 5)},
		{Batch: "gw", Index: 2, TTFT: 160_000, FirstDelay: 42_000, Tokens: 200, Gaps: summarytest.LoopGaps, Delays: summarytest.LoopDelays},
		{Batch: "gw", Index: 3, Failure: result.Failure{Kind: result.NoTokens}},
	},
}

func flushingDoc(t *testing.T) *Document {
	t.Helper()
	f := newFixture(flushing.loop, flushing.gw)
	ri := f.info()
	ri.Config.Tokens, ri.Config.Target = 200, "127.0.0.1:8081"
	return fixEnv(NewDocument(ri, f.run))
}

func compareText(t *testing.T, before, after *Document) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Compare(&b, before, after); err != nil {
		t.Fatalf("Compare: %v", err)
	}
	return b.Bytes()
}

func TestCompareGolden(t *testing.T) {
	tests := []struct {
		name          string
		before, after func(*testing.T) *Document
	}{
		{"buffers_to_flushes", func(t *testing.T) *Document { return fixedDoc(t, "full") }, flushingDoc},
		{"no_calibration_to_full", func(t *testing.T) *Document { return fixedDoc(t, "no_calibration") },
			func(t *testing.T) *Document { return fixedDoc(t, "full") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			golden(t, "compare_"+tt.name+".golden", compareText(t, tt.before(t), tt.after(t)))
		})
	}
}

// TestCompareLines pins lines of the comparison independently of the
// goldens.
func TestCompareLines(t *testing.T) {
	full := fixedDoc(t, "full")
	tests := []struct {
		name          string
		before, after *Document
		want          []string // lines of the output
		absent        []string // substrings it must not contain
	}{
		{"config change", full, flushingDoc(t), []string{
			"=== compare: after minus before ===",
			"warning: the configurations differ in tokens (1000 vs 200); the figures may not be comparable",
			"=== gateway: 4 requests, 2 ok, 2 failed, 2000 tokens -> 4 requests, 3 ok, 1 failed, 600 tokens ===",
			"metric                   stat       before        after         diff   change",
			"class                    buffers -> flushes",
		}, []string{"target"}},
		{"same run", full, full, []string{
			"TTFT (client)            mean     69.183ms     69.183ms     +0.000ms    +0.0%",
			"first token held         no -> no",
		}, []string{"warning"}},
		{"no calibration before", fixedDoc(t, "no_calibration"), full, []string{
			"=== loopback (direct to listen address): only after ===",
			"=== gateway overhead: only after (no calibration before) ===",
			"emit->recv (gateway)     mean   +100.000ms    +97.986ms     -2.014ms    -2.0%",
		}, nil},
		{"no samples", fixedDoc(t, "empty"), full, []string{
			"TTFT (client)            n/a (no samples before)",
			"emit->recv (1st token)   n/a (no samples before)",
		}, nil},
	}
	for _, tt := range tests {
		out := string(compareText(t, tt.before, tt.after))
		for _, w := range tt.want {
			if !containsLine(out, w) {
				t.Errorf("Compare(%s) wrote\n%s\nwant the line\n%s", tt.name, out, w)
			}
		}
		for _, a := range tt.absent {
			if strings.Contains(out, a) {
				t.Errorf("Compare(%s) wrote\n%s\nwant no %q in it", tt.name, out, a)
			}
		}
	}
}

func TestCompareErrors(t *testing.T) {
	bad := fixedDoc(t, "full")
	bad.EndReason = "crashed"
	if err := Compare(&bytes.Buffer{}, fixedDoc(t, "full"), bad); err == nil || !strings.HasPrefix(err.Error(), "after: end_reason") {
		t.Errorf("Compare(valid, invalid) = %v, want an error starting with \"after: end_reason\"", err)
	}
	if err := Compare(&bytes.Buffer{}, bad, fixedDoc(t, "full")); err == nil || !strings.HasPrefix(err.Error(), "before: end_reason") {
		t.Errorf("Compare(invalid, valid) = %v, want an error starting with \"before: end_reason\"", err)
	}
	// The comparison is written at once: its write error is returned.
	if err := Compare(&failAfter{}, fixedDoc(t, "full"), flushingDoc(t)); !errors.Is(err, errWrite) {
		t.Errorf("Compare(failing writer) = %v, want %v", err, errWrite)
	}
}

// TestCompareCost: two runs whose gateway batches were sampled get the
// cost table, side by side; a run without one gets none.
func TestCompareCost(t *testing.T) {
	before, after := costDoc(t), costDoc(t)
	g := after.Batches[1].Cost.Gateway
	g.CPUPerTokenUs, g.WritesPerStream = g.CPUPerTokenUs/2, 9
	var b strings.Builder
	if err := Compare(&b, before, after); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"=== cost (gateway batch): before -> after ===",
		"gateway cpu/token               150.000us     75.000us    -75.000us   -50.0%",
		"gateway writes/stream                25.0          9.0        -16.0   -64.0%",
		"tool cpu/token ",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("compare:\n%s\nhas no %q", b.String(), want)
		}
	}
	b.Reset()
	if err := Compare(&b, fixedDoc(t, "full"), after); err != nil || strings.Contains(b.String(), "=== cost") {
		t.Errorf("compare with a run without cost: %v\n%s\nwant no cost table", err, b.String())
	}
}
