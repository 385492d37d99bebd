package sweep

import (
	"strings"
	"syscall"
	"testing"

	"github.com/sse-latency/sse-latency/internal/failures"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/summary"
)

func TestOrder(t *testing.T) {
	tests := []struct {
		pairs int
		loop  bool
		want  string
	}{
		{0, true, ""}, {1, true, "LG"}, {2, true, "LGGL"}, {3, true, "LGGLLG"}, {4, true, "LGGLLGGL"},
		{3, false, "GGG"}, {-1, true, ""},
	}
	for _, tt := range tests {
		if got := Order(tt.pairs, tt.loop); got != tt.want {
			t.Errorf("Order(%d, %v) = %q, want %q", tt.pairs, tt.loop, got, tt.want)
		}
	}
	// With an even number of pairs the two sides sit at the same mean
	// position: a linear drift weighs on both alike.
	for pairs := 2; pairs <= 20; pairs += 2 {
		var l, g int
		for i, c := range Order(pairs, true) {
			if c == 'L' {
				l += i
			} else {
				g += i
			}
		}
		if l != g {
			t.Errorf("Order(%d): loopback positions sum to %d, gateway to %d", pairs, l, g)
		}
	}
}

func TestParseValues(t *testing.T) {
	tests := []struct {
		axis, list string
		want       []float64
	}{
		{AxisConcurrency, "1,10,50,100,200", []float64{1, 10, 50, 100, 200}},
		{AxisConcurrency, " 2 , 4 ", []float64{2, 4}},
		{AxisRate, "10,50,100", []float64{10, 50, 100}},
		{AxisRate, "0.5,2.5", []float64{0.5, 2.5}},
		{AxisPromptBytes, "1k,64k,256k,1m", []float64{1 << 10, 64 << 10, 256 << 10, 1 << 20}},
		{AxisPromptBytes, "0,100,4M", []float64{0, 100, 4 << 20}},
	}
	for _, tt := range tests {
		got, err := ParseValues(tt.axis, tt.list)
		if err != nil || len(got) != len(tt.want) {
			t.Errorf("ParseValues(%s, %q) = %v, %v; want %v", tt.axis, tt.list, got, err, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("ParseValues(%s, %q) = %v, want %v", tt.axis, tt.list, got, tt.want)
				break
			}
		}
	}
	for _, bad := range []struct{ axis, list, want string }{
		{AxisConcurrency, "1,,3", "step 2 is empty"},
		{AxisConcurrency, "1,x", `"x" is not a whole number`},
		{AxisConcurrency, "0,1", `"0" is not a whole number of requests of at least 1`},
		{AxisConcurrency, "10,5", `the steps must increase: "5" after "10"`},
		{AxisConcurrency, "5,5", "must increase"},
		{AxisRate, "10,-1", `"-1" is not a rate above 0`},
		{AxisRate, "10,Inf", `"Inf" is not a rate`},
		{AxisPromptBytes, "1k,2g", `"2g" is not a size`},
		{AxisPromptBytes, "1k,5m", "above the largest prompt, 4m"},
		{AxisConcurrency, strings.Repeat("1,", MaxSteps) + "1", "at most 32"},
	} {
		if _, err := ParseValues(bad.axis, bad.list); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParseValues(%s, %q) error %v, want %q", bad.axis, bad.list, err, bad.want)
		}
	}
}

func TestSizes(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
		back string
	}{{"0", 0, "0"}, {"512", 512, "512"}, {"64k", 64 << 10, "64k"}, {"1024", 1024, "1k"}, {"1M", 1 << 20, "1m"}, {"1536k", 1536 << 10, "1536k"}} {
		n, err := ParseSize(tt.in)
		if err != nil || n != tt.want || FormatSize(n) != tt.back {
			t.Errorf("ParseSize(%q) = %d, %v (FormatSize %q); want %d, %q", tt.in, n, err, FormatSize(n), tt.want, tt.back)
		}
	}
	for _, bad := range []string{"", "k", "-1", "1g", "1.5m", "9999999999m"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) succeeded", bad)
		}
	}
}

func TestAxis(t *testing.T) {
	if a, l, err := Axis("1,2", "", "64k"); a != AxisConcurrency || l != "1,2" || err != nil {
		t.Errorf("Axis = %q %q %v", a, l, err)
	}
	if a, _, err := Axis("", "", "1k,2k"); a != AxisPromptBytes || err != nil {
		t.Errorf("Axis = %q %v", a, err)
	}
	if _, _, err := Axis("4", "10", ""); err != ErrNoAxis {
		t.Errorf("Axis without a list: %v", err)
	}
	if _, _, err := Axis("1,2", "1,2", ""); err == nil || !strings.Contains(err.Error(), "--concurrency and --rate") {
		t.Errorf("Axis with two lists: %v", err)
	}
}

// step is a sweep step at value v whose added emit->recv p99 is p99 ms
// over rounds whose pair differences range over spread ms.
func step(v, p99, spread float64) Step {
	loop := summary.Batch{Name: summary.LoopbackBatch}
	gw := summary.Batch{Name: summary.GatewayBatch}
	r := summary.Run{Batches: []summary.Batch{loop, gw}, Overhead: &summary.Overhead{EmitRecv: &summary.Delta{P99Ms: p99}}}
	r.Rounds = &summary.Rounds{}
	r.Rounds.Added.EmitRecv.P99 = summary.RoundStat{N: 2, MedianMs: p99, MinMs: p99 - spread/2, MaxMs: p99 + spread/2}
	return Step{Value: v, Run: r}
}

func TestFindKnee(t *testing.T) {
	tests := []struct {
		name   string
		steps  []Step
		knee   int // -1: none
		reason string
	}{
		{"flat", []Step{step(1, 0.1, 0), step(10, 0.12, 0), step(100, 0.2, 0)}, -1, ""},
		{"threshold", []Step{step(1, 0.1, 0), step(10, 0.3, 0), step(50, 1.5, 0)}, 2, KneeThreshold},
		{"buffering at every load", []Step{step(1, 85, 0), step(10, 85, 0)}, 0, KneeThreshold},
		// 0.2 -> 0.9 ms (x3.6 above the 0.25 floor) while the load doubles.
		{"growth", []Step{step(10, 0.2, 0), step(20, 0.9, 0), step(40, 0.95, 0)}, 1, KneeGrowth},
		// The same rise within the rounds' spread is noise.
		{"growth within noise", []Step{step(10, 0.2, 0), step(20, 0.9, 1.5)}, -1, ""},
		// Small values grow by large factors without meaning anything.
		{"noise floor", []Step{step(1, 0.01, 0), step(2, 0.05, 0), step(4, 0.2, 0)}, -1, ""},
		// Growth slower than the load is no knee.
		{"linear", []Step{step(10, 0.3, 0), step(20, 0.5, 0), step(40, 0.9, 0)}, -1, ""},
	}
	for _, tt := range tests {
		k := FindKnee(AxisConcurrency, tt.steps, DefaultKneeThresholdMs)
		switch {
		case tt.knee < 0 && k != nil:
			t.Errorf("%s: knee %+v, want none", tt.name, k)
		case tt.knee >= 0 && (k == nil || k.Step != tt.knee || k.Reason != tt.reason || k.Value != tt.steps[tt.knee].Value):
			t.Errorf("%s: knee %+v, want step %d by %s", tt.name, k, tt.knee, tt.reason)
		}
	}
	k := FindKnee(AxisPromptBytes, []Step{step(1<<10, 0.1, 0), step(64<<10, 2, 0)}, 1)
	if k == nil || k.Text != "prompt-bytes 64k: added emit->recv p99 +2.000ms exceeds the 1.000ms threshold" {
		t.Errorf("knee text %+v", k)
	}
}

func TestSaturation(t *testing.T) {
	r := summary.Run{Batches: []summary.Batch{{Name: summary.LoopbackBatch}, {Name: summary.GatewayBatch}}}
	if sat, _ := Saturation(&r, 1); sat {
		t.Error("a run without figures is saturated")
	}
	r.Self.Lateness = summary.Metric{N: 10, P99Ms: 2.5}
	if sat, why := Saturation(&r, 1); !sat || !strings.Contains(why, "emission lateness p99 2.500ms > 1ms") {
		t.Errorf("late emissions: %v %q", sat, why)
	}
	r.Self.Lateness.P99Ms = 0.2
	r.Batches[0].Metrics.EmitRecv = summary.Metric{N: 10, P99Ms: 3}
	if sat, why := Saturation(&r, 1); !sat || !strings.Contains(why, "loopback emit->recv p99 3.000ms > 1.000ms") {
		t.Errorf("slow loopback: %v %q", sat, why)
	}
}

// FuzzParseValues: any list parses or fails without panicking; what
// parses is at most MaxSteps increasing values of the axis, and every
// size written back reads back the same.
func FuzzParseValues(f *testing.F) {
	for _, s := range []string{"1,10,50", "1k,64k,256k,1m", "0.5,2", ",", "9999999999m", "1,1", "4M"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		for _, axis := range []string{AxisConcurrency, AxisRate, AxisPromptBytes} {
			vs, err := ParseValues(axis, list)
			if err != nil {
				continue
			}
			if len(vs) == 0 || len(vs) > MaxSteps {
				t.Fatalf("ParseValues(%s, %q) = %d values", axis, list, len(vs))
			}
			for i, v := range vs {
				if !(v >= 0) || i > 0 && v <= vs[i-1] || axis != AxisPromptBytes && v <= 0 {
					t.Fatalf("ParseValues(%s, %q) = %v", axis, list, vs)
				}
				if axis == AxisPromptBytes {
					if n, err := ParseSize(FormatSize(int(v))); err != nil || float64(n) != v || v > MaxPromptBytes {
						t.Fatalf("size %v written %q reads %d, %v", v, FormatSize(int(v)), n, err)
					}
				}
			}
		}
	})
}

func TestFailing(t *testing.T) {
	step := func(requests, failed int, fs *failures.Summary) *summary.Run {
		return &summary.Run{Batches: []summary.Batch{{Name: summary.GatewayBatch, Requests: requests, OK: requests - failed,
			Failed: failed, FailureSummary: fs}}}
	}
	refused := func(n, of int) *failures.Summary {
		t := failures.NewTally()
		for i := range of {
			r := &result.Request{Start: 1e9, End: 1e9 + 1}
			if i < n {
				r.Failure = result.Failure{Kind: result.Connect, Detail: "Connection refused", Errno: syscall.ECONNREFUSED}
			}
			t.Add(r)
		}
		return t.Summary()
	}
	for _, tt := range []struct {
		name string
		run  *summary.Run
		want string // "" not failing
	}{
		{"none failed", step(400, 0, refused(0, 400)), ""},
		{"1%: not beyond", step(400, 4, refused(4, 400)), ""},
		{"beyond 1%", step(400, 12, refused(12, 400)), "gateway failed 12 of 400 requests: connection refused (3.0% > 1.0%)"},
		{"a document before failure summaries", step(10, 10, nil), "10 of 10 gateway requests failed (100.0% > 1.0%)"},
		{"no gateway batch", &summary.Run{}, ""},
	} {
		failing, why := Failing(tt.run)
		if failing != (tt.want != "") || why != tt.want {
			t.Errorf("%s: Failing = %v, %q; want %q", tt.name, failing, why, tt.want)
		}
	}
}
