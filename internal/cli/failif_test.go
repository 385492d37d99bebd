package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/rundoc"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/summary"
)

// delayed is a request of 20 tokens each delayMs late (its emit->recv).
func delayed(delayMs float64) *result.Request {
	r := &result.Request{Sent: 1, End: 200_000_000}
	for k := range 20 {
		e := int64(1_000_000 + k*5_000_000)
		r.Tokens = append(r.Tokens, result.Token{Emitted: e, Arrived: e + int64(delayMs*1e6)})
	}
	return r
}

// gateDoc is the document of a run whose gateway rounds' tokens were
// gwMs late (one round each, paired with loopback rounds 0.05 ms late);
// with one value and rounds false, a run of the reference's single
// calibration.
func gateDoc(rounds bool, gwMs ...float64) *rundoc.Document {
	loop, gw := summary.NewCollector(), summary.NewCollector()
	var rs []summary.Round
	for pair, ms := range gwMs {
		lb, gb := stats.NewBatch(), stats.NewBatch()
		l, g := delayed(0.05), delayed(ms)
		loop.Add(l)
		lb.Add(l)
		gw.Add(g)
		gb.Add(g)
		rs = append(rs, summary.NewRound(summary.LoopbackBatch, pair, lb), summary.NewRound(summary.GatewayBatch, pair, gb))
	}
	in := summary.Inputs{Loop: loop, Gateway: gw}
	if rounds {
		in.Rounds = rs
	}
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cfg := DefaultConfig().Config
	return rundoc.NewDocument(rundoc.RunInfo{Config: cfg, Start: start, End: start, EndReason: rundoc.EndDone, Version: "v"}, summary.New(in))
}

// TestCompareFailIf: compare --fail-if on saved documents exits 3 only
// when the figure grew beyond its threshold and beyond the rounds' noise;
// without rounds the threshold alone decides.
func TestCompareFailIf(t *testing.T) {
	dir := t.TempDir()
	docs := map[string]string{
		"before":  writeDoc(t, dir, "before.json", gateDoc(true, 1, 1.1, 0.9)),
		"same":    writeDoc(t, dir, "same.json", gateDoc(true, 1.05, 1.15, 0.95)),
		"worse":   writeDoc(t, dir, "worse.json", gateDoc(true, 2, 2.1, 1.9)),
		"noisy":   writeDoc(t, dir, "noisy.json", gateDoc(true, 1, 0.5, 1.5)),
		"shifted": writeDoc(t, dir, "shifted.json", gateDoc(true, 1.3, 1.4, 1.2)),
		"one":     writeDoc(t, dir, "one.json", gateDoc(false, 1)),
		"one13":   writeDoc(t, dir, "one13.json", gateDoc(false, 1.3)),
	}
	tests := []struct {
		name, before, after string
		conds               []string
		code                int
		want                string
	}{
		{"no change", "before", "same", []string{"emit->recv p99 +20%"}, ExitOK, "ok    gateway emit->recv (tokens) p99 +20%: 1.000ms (0.900..1.100, 3 rounds) -> 1.050ms"},
		{"regression", "before", "worse", []string{"emit->recv p99 +20%"}, ExitGate, "FAIL  gateway emit->recv (tokens) p99 +20%: 1.000ms"},
		{"added regression", "before", "worse", []string{"added emit->recv p50 +0.5ms"}, ExitGate, "beyond the rounds' spread"},
		{"within the noise", "noisy", "shifted", []string{"emit->recv p99 +20%"}, ExitOK, "+0.300ms > +0.200ms, within the rounds' spread"},
		{"single rounds, within", "one", "one13", []string{"emit->recv p99 +50%"}, ExitOK, "no rounds: the threshold alone decides"},
		{"single rounds, beyond", "one", "one13", []string{"emit->recv p99 +20%"}, ExitGate, "FAIL  gateway emit->recv (tokens) p99 +20%: 1.000ms -> 1.300ms: +0.300ms > +0.200ms, no rounds"},
		{"two conditions", "before", "worse", []string{"ttft p50 +1000%", "emit->recv mean +20%"}, ExitGate, "ok    gateway TTFT (client) p50 +1000%"},
	}
	for _, tt := range tests {
		args := []string{"compare", docs[tt.before], docs[tt.after]}
		for _, c := range tt.conds {
			args = append(args, "--fail-if", c)
		}
		code, out, errOut := runMain(t, nil, args...)
		if code != tt.code || !strings.Contains(out, tt.want) || !strings.Contains(out, "=== compare: after minus before ===") {
			t.Errorf("%s: exit %d, want %d and %q\n%s\n%s", tt.name, code, tt.code, tt.want, out, errOut)
		}
		if (code == ExitGate) != strings.Contains(errOut, "regression: ") {
			t.Errorf("%s: stderr %q should name the regression exactly when it exits %d", tt.name, errOut, ExitGate)
		}
	}
	// Malformed conditions are usage errors naming the part; a condition a
	// document cannot answer exits 1.
	for _, bad := range []struct{ cond, want string }{
		{"emit->recv p99 20%", `want a threshold such as +20% or +0.5ms, got "20%"`},
		{"emit->recv p99.9 +20%", `unknown statistic "p99.9"`},
		{"latency p99 +20%", `unknown metric "latency"`},
	} {
		code, out, errOut := runMain(t, nil, "compare", docs["before"], docs["worse"], "--fail-if", bad.cond)
		if code != ExitFailure || out != "" || !strings.Contains(errOut, bad.want) || !strings.HasSuffix(errOut, compareUsage()) {
			t.Errorf("--fail-if %q: exit %d, stdout %q, stderr %q; want 1 and %q", bad.cond, code, out, errOut, bad.want)
		}
	}
	noLoop := gateDoc(false, 1)
	noLoop.Batches, noLoop.Overhead = noLoop.Batches[1:], nil
	path := writeDoc(t, dir, "noloop.json", noLoop)
	code, _, errOut := runMain(t, nil, "compare", path, docs["one13"], "--fail-if", "added emit->recv p99 +1%")
	if code != ExitFailure || !strings.Contains(errOut, "cannot be evaluated: before: no calibration to subtract") {
		t.Errorf("a condition without its figure: exit %d\n%s", code, errOut)
	}
}
