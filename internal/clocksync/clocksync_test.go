package clocksync

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// ex builds an exchange of a server whose clock is offset ahead of the
// client's: the request leaves at sent, takes up ns to reach the server,
// and the answer down ns to come back.
func ex(offset, sent, up, down int64) Sample {
	return Sample{Sent: sent, Server: sent + up + offset, Received: sent + up + down}
}

func TestFromSamples(t *testing.T) {
	const base = 1_700_000_000_000_000_000
	tests := []struct {
		name    string
		samples []Sample
		offset  int64
		bound   int64
		n, drop int
		minRTT  int64
	}{
		{"one symmetric exchange", []Sample{ex(5000, base, 100, 100)}, 5000, 100, 1, 0, 200},
		// Asymmetric: the estimate is off by half the asymmetry, within the bound.
		{"one asymmetric exchange", []Sample{ex(5000, base, 180, 20)}, 5080, 100, 1, 0, 200},
		{"negative offset", []Sample{ex(-3_000_000_000, base, 50, 50)}, -3_000_000_000, 50, 1, 0, 100},
		// Two exchanges whose intervals overlap: [4900, 5100] ∩ [4620, 5020] = [4900, 5020].
		{"intersected", []Sample{ex(5000, base, 100, 100), ex(5000, base+1000, 20, 380)}, 4960, 60, 2, 0, 200},
		// The shortest round trip first; a contradicting one is dropped.
		{"contradicting dropped", []Sample{{Sent: base, Server: base + 9_000_000, Received: base + 500}, ex(5000, base+2000, 100, 100)}, 5000, 100, 1, 1, 200},
		{"odd width rounds the bound up", []Sample{{Sent: base, Server: base + 10, Received: base + 3}}, 8, 2, 1, 0, 3},
		{"zero round trip", []Sample{{Sent: base, Server: base + 7, Received: base}}, 7, 0, 1, 0, 0},
		{"invalid ones dropped", []Sample{{Sent: base, Server: base, Received: base - 1}, {}, ex(1, base, 10, 10)}, 1, 10, 1, 2, 20},
	}
	for _, tt := range tests {
		e, err := FromSamples(tt.samples)
		if err != nil {
			t.Errorf("%s: FromSamples: %v", tt.name, err)
			continue
		}
		if e.Offset != tt.offset || e.Bound != tt.bound || e.Samples != tt.n || e.Dropped != tt.drop || e.MinRTT != tt.minRTT {
			t.Errorf("%s: FromSamples = offset %d ± %d (%d samples, %d dropped, min rtt %d), want %d ± %d (%d, %d, %d)",
				tt.name, e.Offset, e.Bound, e.Samples, e.Dropped, e.MinRTT, tt.offset, tt.bound, tt.n, tt.drop, tt.minRTT)
		}
	}
	for _, ss := range [][]Sample{nil, {{Sent: 5, Server: 5, Received: 4}}} {
		if _, err := FromSamples(ss); !errors.Is(err, ErrNoSample) {
			t.Errorf("FromSamples(%v) error = %v, want ErrNoSample", ss, err)
		}
	}
}

// TestBoundHolds draws random offsets, network delays (asymmetric, heavy
// tailed) and bursts, and checks the promise of the package: the true
// offset is always within the bound of the estimate.
func TestBoundHolds(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 1))
	for i := range 2000 {
		offset := rng.Int64N(20_000_000_000) - 10_000_000_000
		n := 1 + rng.IntN(16)
		samples := make([]Sample, n)
		sent := int64(1_700_000_000_000_000_000)
		for j := range samples {
			delay := func() int64 { return 1 + int64(rng.ExpFloat64()*float64(10+rng.IntN(100_000))) }
			samples[j] = ex(offset, sent, delay(), delay())
			sent += 1 + rng.Int64N(1_000_000)
		}
		e, err := FromSamples(samples)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if d := e.Offset - offset; d > e.Bound || -d > e.Bound {
			t.Fatalf("case %d: estimate %d ± %d misses the true offset %d (%d samples)", i, e.Offset, e.Bound, offset, n)
		}
		if e.Dropped != 0 {
			t.Fatalf("case %d: %d consistent samples dropped", i, e.Dropped)
		}
		if e.Bound > e.MinRTT/2+1 {
			t.Fatalf("case %d: bound %d wider than half the shortest round trip %d", i, e.Bound, e.MinRTT)
		}
	}
}

func TestTracker(t *testing.T) {
	var tr Tracker
	if _, ok := tr.Current(); ok {
		t.Error("an empty Tracker has a current estimate")
	}
	if _, ok := tr.Summary(); ok {
		t.Error("an empty Tracker has a summary")
	}
	steps := []struct {
		add          Estimate
		curBound     int64 // Current().Bound after it
		sumBound     int64 // Summary().Bound
		drift, minRT int64
	}{
		{Estimate{Offset: 1000, Bound: 50, MinRTT: 100}, 50, 50, 0, 100},
		// Within both bounds: no drift.
		{Estimate{Offset: 1080, Bound: 40, MinRTT: 80}, 40, 50, 0, 80},
		// 300 apart, bounds 40 + 60 explain 100: 200 of drift.
		{Estimate{Offset: 1380, Bound: 60, MinRTT: 120}, 260, 260, 200, 80},
		// A smaller unexplained change keeps the largest drift.
		{Estimate{Offset: 1300, Bound: 10, MinRTT: 90}, 210, 260, 200, 80},
	}
	for i, s := range steps {
		tr.Add(s.add)
		cur, ok := tr.Current()
		sum, _ := tr.Summary()
		if !ok || cur.Offset != s.add.Offset || cur.Bound != s.curBound || sum.Bound != s.sumBound || sum.Drift != s.drift ||
			sum.MinRTT != s.minRT || sum.Estimates != i+1 || tr.Len() != i+1 || sum.Offset != s.add.Offset {
			t.Errorf("after estimate %d (%+v): current %d ± %d, summary %+v; want current bound %d, summary bound %d, drift %d, min rtt %d",
				i, s.add, cur.Offset, cur.Bound, sum, s.curBound, s.sumBound, s.drift, s.minRT)
		}
	}
	if got := (Estimate{Offset: 100}).ToClient(1100); got != 1000 {
		t.Errorf("ToClient(1100) with offset 100 = %d, want 1000", got)
	}
}
