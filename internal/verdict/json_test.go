package verdict

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/gateway"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
)

// TestVerdictJSON: a verdict reads back as written, its class by name, and
// a class of another name is refused with the field named.
func TestVerdictJSON(t *testing.T) {
	for _, v := range []Verdict{
		{Class: Buffers, Tokens: 3996, CoalescedFraction: 0.99925, LoopCoalesced: 0.002, BurstSizeP50: 40, BurstSizeMax: 41,
			Bursts: 100, BurstPeriodMs: 200.0448, EmitGapMs: 5.0001, AddedMeanMs: 97.52061, Relative: true,
			FirstTokenHold: true, FirstTokenHoldLevel: HoldWarn, FirstTokenHoldMs: 12.5, FollowingMs: 0.03, HoldRequests: 20,
			Causes: []string{"HAProxy: set option http-no-delay"},
			Advice: []gateway.Advice{{Key: "time_period", Gateway: gateway.HAProxy, Setting: "set option http-no-delay", Snippet: "defaults\n    option http-no-delay",
				Reference: "https://docs.haproxy.org/"}}},
		{Class: Flushes, LoopCoalesced: -1, Causes: []string{}},
		{Class: Unknown, Reason: "no gateway batch", LoopCoalesced: -1, Causes: []string{}},
	} {
		js, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("json.Marshal(%+v): %v", v, err)
		}
		if want := `{"class":"` + v.Class.String() + `",`; !strings.HasPrefix(string(js), want) {
			t.Errorf("json.Marshal(verdict %s) = %s, want it to start with %s", v.Class, js, want)
		}
		var back Verdict
		if err := json.Unmarshal(js, &back); err != nil || !reflect.DeepEqual(back, v) {
			t.Errorf("json.Unmarshal(%s) = %+v, %v; want %+v", js, back, err, v)
		}
	}
	var v Verdict
	err := json.Unmarshal([]byte(`{"class":"maybe"}`), &v)
	if err == nil || !strings.Contains(err.Error(), `verdict.class "maybe": want "flushes", "buffers" or "unknown"`) {
		t.Errorf("json.Unmarshal(class maybe) = %v, want an error naming verdict.class", err)
	}
	if js, _ := json.Marshal(Verdict{Reason: "x"}); !strings.Contains(string(js), `"reason":"x"`) {
		t.Errorf("the reason is not written: %s", js)
	}
	if js, _ := json.Marshal(Verdict{Class: Flushes}); strings.Contains(string(js), `"reason"`) {
		t.Errorf("an empty reason is written: %s", js)
	}
}

// TestSetAddedDelay: relative with a calibration that has samples, the
// gateway's own without, zero (and not relative) without gateway samples,
// whatever the verdict held before.
func TestSetAddedDelay(t *testing.T) {
	batch := func(delays ...int64) *stats.Batch {
		b := stats.NewBatch()
		for _, d := range delays {
			b.Add(&result.Request{Sent: 1, Tokens: []result.Token{{Emitted: 10, Arrived: 20}, {Emitted: 1000, Arrived: 1000 + d}}})
		}
		return b
	}
	loop, gw := batch(100, 200, 600), batch(1100, 1300, 2000) // under 2048 ns: exact
	tests := []struct {
		name           string
		loop, gw       *stats.Batch
		mean, p50, p99 float64
		relative       bool
	}{
		{"relative", loop, gw, 0.0011666667, 0.0011, 0.0011, true},
		{"no calibration", nil, gw, 0.0014666667, 0.0013, 0.0013, false},
		{"calibration without samples", batch(), gw, 0.0014666667, 0.0013, 0.0013, false},
		{"no gateway samples", loop, batch(), 0, 0, 0, false},
		{"no gateway", loop, nil, 0, 0, 0, false},
	}
	for _, tt := range tests {
		v := Verdict{AddedMeanMs: 9, AddedP50Ms: 9, AddedP99Ms: 9, Relative: true}
		v.SetAddedDelay(tt.loop, tt.gw)
		round := func(x float64) float64 { return math.Round(x*1e10) / 1e10 }
		if round(v.AddedMeanMs) != tt.mean || round(v.AddedP50Ms) != tt.p50 || round(v.AddedP99Ms) != tt.p99 || v.Relative != tt.relative {
			t.Errorf("SetAddedDelay(%s): mean %g p50 %g p99 %g relative %v; want %g %g %g %v", tt.name,
				v.AddedMeanMs, v.AddedP50Ms, v.AddedP99Ms, v.Relative, tt.mean, tt.p50, tt.p99, tt.relative)
		}
	}
}
