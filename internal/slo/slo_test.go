package slo

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/summary"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want SLO
	}{
		{"gateway emit->recv p99 < 1ms", SLO{ScopeGateway, MetricEmitRecv, "p99", false, 1}},
		{"emit->recv p99 < 1ms", SLO{ScopeGateway, MetricEmitRecv, "p99", false, 1}},
		{"  Gateway   EMIT->RECV   P99<=250us ", SLO{ScopeGateway, MetricEmitRecv, "p99", true, 0.25}},
		{"added emit->recv (tokens) p50 < 500 us", SLO{ScopeAdded, MetricEmitRecv, "p50", false, 0.5}},
		{"loopback TTFT (client) max < 2s", SLO{ScopeLoopback, MetricTTFT, "max", false, 2000}},
		{"ttft p99.9 < 1500NS", SLO{ScopeGateway, MetricTTFT, "p99.9", false, 0.0015}},
		{"TTFT emit->recv(1st) mean < 3ms", SLO{ScopeGateway, MetricFirstEmitRecv, "mean", false, 3}},
		{"added emit->recv (1st token) p95 < 0.2ms", SLO{ScopeAdded, MetricFirstEmitRecv, "p95", false, 0.2}},
		{"emit->recv(1st) p90 < 1µs", SLO{ScopeGateway, MetricFirstEmitRecv, "p90", false, 0.001}},
		{"inter-token (client) min < 6ms", SLO{ScopeGateway, MetricInterToken, "min", false, 6}},
		{"first_emit_recv p50 < 1ms", SLO{ScopeGateway, MetricFirstEmitRecv, "p50", false, 1}},
		{"added ttft mean < -0.5ms", SLO{ScopeAdded, MetricTTFT, "mean", false, -0.5}},
		{"gateway cpu/token < 20us", SLO{ScopeGateway, MetricCPUPerToken, "", false, 0.02}},
		{"cpu/stream<=3ms", SLO{ScopeGateway, MetricCPUPerStream, "", true, 3}},
		{"tool cpu/token < 0.1ms", SLO{ScopeTool, MetricCPUPerToken, "", false, 0.1}},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			continue
		}
		if back, err := Parse(got.String()); err != nil || back != got {
			t.Errorf("Parse(%q.String() = %q) = %+v, %v; want it back", tt.in, got.String(), back, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "empty"},
		{"   ", "empty"},
		{"gateway", `unknown metric "gateway"`},
		{"gateway Emit-Recv p99 < 1ms", `unknown metric "Emit-Recv"`},
		{"emit->recvs p99 < 1ms", `unknown metric "emit->recvs"`},
		{"emit->recv p98 < 1ms", `unknown statistic "p98" of gateway emit->recv (tokens) (want mean, min, p50, p90, p95, p99, p99.9, max)`},
		{"emit->recv < 1ms", `unknown statistic "<"`},
		{"emit->recv", `unknown statistic ""`},
		{"added emit->recv max < 1ms", `unknown statistic "max" of added emit->recv (tokens) (want mean, p50, p95, p99)`},
		{"emit->recv p99 > 1ms", `after "p99" want < or <=, got ">"`},
		{"emit->recv p99 1ms", `want < or <=, got "1ms"`},
		{"emit->recv p99 <", "no value"},
		{"emit->recv p99 < 1", `value "1": no unit`},
		{"emit->recv p99 < 1h", `value "1h": no unit`},
		{"emit->recv p99 < fast ms", `"fast" is not a number`},
		{"emit->recv p99 < 1ms please", `no unit`},
		{"emit->recv p99 < NaNms", `"NaN" is not a number`},
		{"loopback cpu/token < 1ms", "cpu/token is a figure of the gateway's processes or of the tool"},
		{"tool TTFT p50 < 1ms", "the tool has only cost figures"},
		{"gateway cpu/token > 1ms", `want < or <=, got ">"`},
		{"gateway cpu/tokens < 1ms", `unknown metric "cpu/tokens"`},
	}
	for _, tt := range tests {
		_, err := Parse(tt.in)
		if err == nil || !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) error = %v; want ErrSyntax containing %q", tt.in, err, tt.want)
		}
	}
}

func TestParseFailIf(t *testing.T) {
	tests := []struct {
		in   string
		want FailIf
	}{
		{"emit->recv p99 +20%", FailIf{Scope: ScopeGateway, Metric: MetricEmitRecv, Stat: "p99", Relative: true, Percent: 20}},
		{"added TTFT p50 +0.5ms", FailIf{Scope: ScopeAdded, Metric: MetricTTFT, Stat: "p50", Ms: 0.5}},
		{"loopback inter-token mean + 250 us", FailIf{Scope: ScopeLoopback, Metric: MetricInterToken, Stat: "mean", Ms: 0.25}},
		{"gateway emit->recv (tokens) p95 +0%", FailIf{Scope: ScopeGateway, Metric: MetricEmitRecv, Stat: "p95", Relative: true}},
		{"gateway cpu/stream +10%", FailIf{Scope: ScopeGateway, Metric: MetricCPUPerStream, Relative: true, Percent: 10}},
		{"tool cpu/token +2us", FailIf{Scope: ScopeTool, Metric: MetricCPUPerToken, Ms: 0.002}},
	}
	for _, tt := range tests {
		got, err := ParseFailIf(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseFailIf(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			continue
		}
		if back, err := ParseFailIf(got.String()); err != nil || back != got {
			t.Errorf("ParseFailIf(%q.String() = %q) = %+v, %v; want it back", tt.in, got.String(), back, err)
		}
	}
	for _, bad := range []struct{ in, want string }{
		{"", "empty"},
		{"emit->recv p99 20%", `want a threshold such as +20% or +0.5ms, got "20%"`},
		{"emit->recv p99 -20%", `got "-20%"`},
		{"emit->recv p99.9 +20%", `unknown statistic "p99.9" of gateway emit->recv (tokens) (want mean, p50, p95, p99)`},
		{"emit->recv p99 +lots%", `threshold "+lots%": "lots" is not a number of percent`},
		{"emit->recv p99 +-5%", `"-5" is not a number of percent >= 0`},
		{"emit->recv p99 +5", `no unit`},
		{"emit->recv p99 +-5ms", "negative"},
		{"ttfb p99 +5ms", `unknown metric "ttfb"`},
	} {
		_, err := ParseFailIf(bad.in)
		if err == nil || !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParseFailIf(%q) error = %v; want ErrSyntax containing %q", bad.in, err, bad.want)
		}
	}
}

// FuzzParse: any string parses or fails with ErrSyntax, never panics, and
// what parses is written back to an objective that parses the same; so
// for conditions.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"gateway emit->recv p99 < 1ms", "added TTFT (client) p50 <= 0.5ms", "loopback inter-token max < 2s",
		"emit->recv(1st) p99.9 < 1e3us", "emit->recv p99 +20%", "added ttft p50 +0.5ms", "TTFT emit->recv(1st) mean",
		"\u212aoopback ttft p50 < 1ms", "emit->recv p99 < 1µs",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if o, err := Parse(s); err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("Parse(%q) error %v does not wrap ErrSyntax", s, err)
			}
		} else if back, err := Parse(o.String()); err != nil || !sameSLO(back, o) {
			t.Fatalf("Parse(%q) = %+v; its String %q parses to %+v, %v", s, o, o.String(), back, err)
		}
		if c, err := ParseFailIf(s); err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("ParseFailIf(%q) error %v does not wrap ErrSyntax", s, err)
			}
		} else if back, err := ParseFailIf(c.String()); err != nil || back != c {
			t.Fatalf("ParseFailIf(%q) = %+v; its String %q parses to %+v, %v", s, c, c.String(), back, err)
		}
	})
}

// sameSLO compares objectives, their bounds as the String form keeps them
// (a bound in ns or us multiplied into ms may differ in its last bit).
func sameSLO(a, b SLO) bool {
	bound := a.BoundMs == b.BoundMs || math.Abs(a.BoundMs-b.BoundMs) <= 1e-12*math.Abs(a.BoundMs)
	a.BoundMs, b.BoundMs = 0, 0
	return a == b && bound
}

// run is a summary with a loopback and a gateway batch whose metrics have
// the given p99s (ms) and one sample each.
func run(loopP99, gwP99 float64) *summary.Run {
	metric := func(v float64) summary.Metric {
		return summary.Metric{N: 1, MeanMs: v, MinMs: v, P50Ms: v, P90Ms: v, P95Ms: v, P99Ms: v, P999Ms: v, MaxMs: v}
	}
	batch := func(name string, v float64) summary.Batch {
		return summary.Batch{Name: name, Metrics: summary.Metrics{TTFT: metric(v), FirstEmitRecv: metric(v), InterToken: metric(v), EmitRecv: metric(v)}}
	}
	d := &summary.Delta{MeanMs: gwP99 - loopP99, P50Ms: gwP99 - loopP99, P95Ms: gwP99 - loopP99, P99Ms: gwP99 - loopP99}
	return &summary.Run{
		Batches:  []summary.Batch{batch(summary.LoopbackBatch, loopP99), batch(summary.GatewayBatch, gwP99)},
		Overhead: &summary.Overhead{EmitRecv: d, TTFT: d, FirstEmitRecv: d, InterToken: d},
	}
}

func TestCheck(t *testing.T) {
	parse := func(s string) SLO {
		o, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	r := run(0.1, 0.8)
	got := Check([]SLO{
		parse("gateway emit->recv p99 < 1ms"),
		parse("added emit->recv p99 < 0.5ms"),
		parse("loopback ttft p50 <= 0.1ms"),
		parse("gateway ttft max < 0.8ms"),
	}, r, nil)
	wantMet := []bool{true, false, true, false}
	wantObs := []float64{0.8, 0.7, 0.1, 0.8}
	if got.Met || len(got.Checks) != 4 || got.Goodput != nil {
		t.Fatalf("Check = %+v; want 4 checks, not all met, no goodput", got)
	}
	for i, c := range got.Checks {
		if c.Met != wantMet[i] || math.Abs(c.ObservedMs-wantObs[i]) > 1e-9 || c.Reason != "" {
			t.Errorf("check %d %+v: want met=%v observed %.3f", i, c, wantMet[i], wantObs[i])
		}
	}
	if !got.Checks[3].PerRequest || got.Checks[0].PerRequest {
		t.Errorf("PerRequest: %+v; want the gateway TTFT objective only", got.Checks)
	}
	// Figures the run does not have are not met, with the reason.
	noCal := &summary.Run{Batches: []summary.Batch{r.Batches[1]}}
	empty := run(0.1, 0.8)
	empty.Batches[1].Metrics.EmitRecv.N = 0
	for _, tt := range []struct {
		r      *summary.Run
		slo    string
		reason string
	}{
		{noCal, "added emit->recv p99 < 1ms", "no calibration"},
		{noCal, "loopback emit->recv p99 < 1ms", "no loopback batch"},
		{empty, "emit->recv p99 < 1ms", "no samples"},
	} {
		c := Check([]SLO{parse(tt.slo)}, tt.r, nil)
		if c.Met || c.Checks[0].Met || !strings.Contains(c.Checks[0].Reason, tt.reason) {
			t.Errorf("Check(%q) = %+v; want not met because %q", tt.slo, c, tt.reason)
		}
	}
}

// gatewayCost is the cost of a batch of 1000 tokens over 10 streams in
// which the gateway spent us µs per token.
func gatewayCost(us float64) *summary.Cost {
	return &summary.Cost{Tokens: 1000, Streams: 10, Gateway: &summary.GatewayCost{PIDs: []int{7},
		CPUCost: summary.CPUCost{CPUS: us * 1e-3, CPUPerTokenUs: us, CPUPerStreamMs: us / 10}}}
}

// TestCheckCost: cost objectives read the gateway batch's cost block; a
// run without one, or whose gateway was not seen, does not meet them and
// says why.
func TestCheckCost(t *testing.T) {
	parse := func(s string) SLO {
		o, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	r := run(0.1, 1)
	r.Batches[1].Cost = gatewayCost(12)
	r.Batches[1].Cost.Tool = summary.CPUCost{CPUPerTokenUs: 40, CPUPerStreamMs: 4}
	got := Check([]SLO{parse("gateway cpu/token < 20us"), parse("gateway cpu/stream < 1ms"), parse("tool cpu/token < 50us")}, r, nil)
	if c := got.Checks; len(c) != 3 || !c[0].Met || c[0].ObservedMs != 0.012 || c[1].Met || c[1].ObservedMs != 1.2 || !c[2].Met ||
		c[0].SLO != "gateway cpu/token < 0.02ms" || got.Met {
		t.Errorf("Check = %+v", got)
	}
	r.Batches[1].Cost.Gateway.Unseen = "the target 10.0.0.5:8080 is not on this host"
	if c := Check([]SLO{parse("gateway cpu/token < 20us")}, r, nil).Checks[0]; c.Met || !strings.Contains(c.Reason, "not on this host") {
		t.Errorf("unseen gateway: %+v; want not met, with the reason", c)
	}
	if c := Check([]SLO{parse("gateway cpu/token < 20us")}, run(0.1, 1), nil).Checks[0]; c.Met || !strings.Contains(c.Reason, "no cost") {
		t.Errorf("no cost: %+v; want not met, with the reason", c)
	}
}

func TestGoodput(t *testing.T) {
	const ms = 1_000_000
	objectives := []SLO{
		{Scope: ScopeGateway, Metric: MetricTTFT, Stat: "p99", BoundMs: 10},
		{Scope: ScopeGateway, Metric: MetricFirstEmitRecv, Stat: "p99", BoundMs: 2},
		{Scope: ScopeGateway, Metric: MetricEmitRecv, Stat: "p99", BoundMs: 0.001}, // per token: not counted
	}
	g := NewGoodput(objectives)
	req := func(ttft, emit int64, fail bool, warm bool) *result.Request {
		r := &result.Request{Sent: 100 * ms, Warmup: warm, Tokens: []result.Token{{Arrived: 100*ms + ttft, Emitted: 100*ms + ttft - emit}}}
		if fail {
			r.Failure = result.Failure{Kind: result.Timeout, Detail: "1"}
		}
		return r
	}
	for _, r := range []*result.Request{
		req(5*ms, 1*ms, false, false),  // good
		req(11*ms, 1*ms, false, false), // TTFT too long
		req(5*ms, 3*ms, false, false),  // first token late
		req(5*ms, 1*ms, true, false),   // failed
		req(50*ms, 9*ms, false, true),  // warm-up: not counted
		{Sent: 1},                      // no token
		req(9*ms, 1*ms, false, false),  // good
	} {
		g.Add(r)
	}
	if got := g.Result(); *got != (summary.Goodput{Requests: 6, Good: 2, Share: 2.0 / 6}) {
		t.Errorf("goodput %+v, want 2 good of 6", got)
	}
	if NewGoodput(objectives[2:]) != nil {
		t.Error("NewGoodput without a per-request objective is not nil")
	}
}

func TestFailIfEval(t *testing.T) {
	cond := func(s string) FailIf {
		c, err := ParseFailIf(s)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	rounds := func(gw ...float64) *summary.Run {
		r := run(0.1, gw[0])
		var rs []summary.Round
		for i, v := range gw {
			m := summary.Metric{N: 1, MeanMs: v, P50Ms: v, P95Ms: v, P99Ms: v}
			l := summary.Metric{N: 1, MeanMs: 0.1, P50Ms: 0.1, P95Ms: 0.1, P99Ms: 0.1}
			rs = append(rs, summary.Round{Batch: summary.LoopbackBatch, Pair: i, Metrics: summary.Metrics{EmitRecv: l}},
				summary.Round{Batch: summary.GatewayBatch, Pair: i, Metrics: summary.Metrics{EmitRecv: m}})
		}
		r.Rounds = summary.NewRounds(rs)
		return r
	}
	tests := []struct {
		name          string
		cond          string
		before, after *summary.Run
		fail, exceeds bool
	}{
		// No rounds: the threshold alone decides.
		{"single, within", "emit->recv p99 +20%", run(0.1, 1), run(0.1, 1.15), false, false},
		{"single, beyond", "emit->recv p99 +20%", run(0.1, 1), run(0.1, 1.25), true, true},
		{"single, absolute", "added emit->recv p99 +0.5ms", run(0.1, 1), run(0.1, 1.7), true, true},
		{"single, faster", "emit->recv p99 +0%", run(0.1, 1), run(0.1, 0.5), false, false},
		// Rounds: beyond the threshold but within the spread does not fail.
		{"rounds overlap", "emit->recv p99 +20%", rounds(1, 0.9, 1.4), rounds(1.3, 1.25, 1.5), false, true},
		{"rounds apart", "emit->recv p99 +20%", rounds(1, 0.9, 1.1), rounds(1.3, 1.25, 1.5), true, true},
		{"rounds apart, small", "emit->recv p99 +50%", rounds(1, 0.9, 1.1), rounds(1.3, 1.25, 1.5), false, false},
		{"added rounds", "added emit->recv p99 +0.1ms", rounds(1, 0.9, 1.1), rounds(1.3, 1.25, 1.5), true, true},
		// One side with rounds: the other is a point.
		{"mixed", "emit->recv p99 +20%", run(0.1, 1), rounds(1.3, 0.95, 1.5), false, true},
	}
	for _, tt := range tests {
		v := cond(tt.cond).Eval(tt.before, tt.after)
		if v.Fail != tt.fail || v.Exceeds != tt.exceeds || v.Reason != "" {
			t.Errorf("%s: %s = %+v; want fail=%v exceeds=%v", tt.name, tt.cond, v, tt.fail, tt.exceeds)
		}
	}
	// Cost figures: the gateway rounds' costs, or the gateway batch's.
	costRounds := func(us ...float64) *summary.Run {
		r := run(0.1, 1)
		var rs []summary.Round
		for i, v := range us {
			rs = append(rs, summary.Round{Batch: summary.LoopbackBatch, Pair: i},
				summary.Round{Batch: summary.GatewayBatch, Pair: i, Cost: gatewayCost(v)})
		}
		r.Rounds = summary.NewRounds(rs)
		return r
	}
	costRun := func(us float64) *summary.Run {
		r := run(0.1, 1)
		r.Batches[1].Cost = gatewayCost(us)
		return r
	}
	for _, tt := range []struct {
		name          string
		cond          string
		before, after *summary.Run
		fail          bool
	}{
		{"cost rounds apart", "gateway cpu/token +10%", costRounds(10, 11, 10.5), costRounds(15, 14, 16), true},
		{"cost rounds overlap", "gateway cpu/token +10%", costRounds(10, 15, 10.5), costRounds(15, 14, 16), false},
		{"cost single", "gateway cpu/stream +0.1ms", costRun(10), costRun(12), true},
		{"cost single, faster", "gateway cpu/token +0%", costRun(10), costRun(9), false},
	} {
		v := cond(tt.cond).Eval(tt.before, tt.after)
		if v.Fail != tt.fail || v.Reason != "" {
			t.Errorf("%s: %s = %+v; want fail=%v", tt.name, tt.cond, v, tt.fail)
		}
	}
	if v := cond("gateway cpu/token +1%").Eval(run(0.1, 1), costRun(10)); !strings.Contains(v.Reason, "no cost sampled") {
		t.Errorf("cpu/token without a cost before: %+v; want the reason", v)
	}
	noLoop := &summary.Run{Batches: []summary.Batch{run(0.1, 1).Batches[1]}}
	if v := cond("added emit->recv p99 +1%").Eval(noLoop, run(0.1, 1)); v.Reason == "" || v.Fail {
		t.Errorf("added without calibration before: %+v; want a reason and no fail", v)
	}
}
