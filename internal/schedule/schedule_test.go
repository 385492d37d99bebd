package schedule

import (
	"math"
	"testing"
)

func TestDeadline(t *testing.T) {
	p := Plan{Start: 1000, Think: 50, Delay: 5_000_000, Tokens: 3}
	tests := []struct {
		k    int
		want int64
	}{
		{0, 1050},
		{1, 5_001_050},
		{2, 10_001_050},
		{1000, 5_000_001_050},
	}
	for _, tt := range tests {
		if got := p.Deadline(tt.k); got != tt.want {
			t.Errorf("Plan%+v.Deadline(%d) = %d, want %d", p, tt.k, got, tt.want)
		}
	}
	if got, want := p.End(), int64(10_001_050); got != want {
		t.Errorf("End() = %d, want %d", got, want)
	}
	if got, want := p.Duration(), int64(10_001_050-1000); got != want {
		t.Errorf("Duration() = %d, want %d", got, want)
	}
}

// TestDeadlinePhases: the reasoning tokens fill the think phase, spread
// evenly (or at the -d cadence without a think time); the tokens after it
// keep the schedule they have without reasoning.
func TestDeadlinePhases(t *testing.T) {
	tests := []struct {
		name string
		p    Plan
		want []int64 // deadlines of tokens 0, 1, …
	}{
		{"no reasoning", Plan{Start: 100, Think: 1000, Delay: 10, Tokens: 3},
			[]int64{1100, 1110, 1120}},
		{"reasoning over the think time", Plan{Start: 100, Think: 1000, Delay: 10, Tokens: 6, Reasoning: 4},
			[]int64{100, 350, 600, 850, 1100, 1110}},
		{"uneven spread rounds down", Plan{Start: 0, Think: 10, Delay: 1, Tokens: 4, Reasoning: 3},
			[]int64{0, 3, 6, 10}},
		{"reasoning at the -d cadence without think", Plan{Start: 100, Delay: 10, Tokens: 5, Reasoning: 3},
			[]int64{100, 110, 120, 130, 140}},
		{"reasoning only", Plan{Start: 0, Think: 90, Delay: 5, Tokens: 3, Reasoning: 3},
			[]int64{0, 30, 60}},
		{"more reasoning tokens than nanoseconds", Plan{Start: 0, Think: 2, Delay: 5, Tokens: 5, Reasoning: 4},
			[]int64{0, 0, 1, 1, 2}},
		{"no delay", Plan{Start: 7, Tokens: 3, Reasoning: 2},
			[]int64{7, 7, 7}},
	}
	for _, tt := range tests {
		for k, want := range tt.want {
			if got := tt.p.Deadline(k); got != want {
				t.Errorf("%s: Plan%+v.Deadline(%d) = %d, want %d", tt.name, tt.p, k, got, want)
			}
		}
		if got, want := tt.p.End(), tt.want[len(tt.want)-1]; got != want {
			t.Errorf("%s: End() = %d, want %d", tt.name, got, want)
		}
	}
}

// TestDeadlineReasoningIsMonotonic: across the whole reasoning phase and
// into the next one, deadlines never go back, for large counts too (the
// spread is exact in 128 bits).
func TestDeadlineReasoningIsMonotonic(t *testing.T) {
	p := Plan{Start: 1, Think: MsToNs(600_000), Delay: 3, Tokens: 2_000_100, Reasoning: 2_000_000}
	prev := int64(0)
	for k := 0; k < p.Tokens; k += 997 {
		d := p.Deadline(k)
		if d < prev || d > p.Start+p.Think+int64(p.Tokens-p.Reasoning)*p.Delay {
			t.Fatalf("Deadline(%d) = %d after %d, beyond the end", k, d, prev)
		}
		prev = d
	}
	if got := p.Deadline(p.Reasoning); got != p.Start+p.Think {
		t.Errorf("the first token after the think phase is due at %d, want Start+Think = %d", got, p.Start+p.Think)
	}
	if got := p.Deadline(-5); got != p.Start {
		t.Errorf("Deadline(-5) = %d, want the first token's %d", got, p.Start)
	}
}

func TestDeadlineIsAbsolute(t *testing.T) {
	// deadline(k+1) - deadline(k) is exactly Delay for every k: no drift from
	// repeated addition of a rounded float.
	p := Plan{Start: 123, Think: 7, Delay: MsToNs(0.3333333), Tokens: 100000}
	for k := 0; k < p.Tokens-1; k++ {
		if d := p.Deadline(k+1) - p.Deadline(k); d != p.Delay {
			t.Fatalf("gap after token %d = %d, want %d", k, d, p.Delay)
		}
	}
}

func TestDeadlineSaturates(t *testing.T) {
	p := Plan{Start: math.MaxInt64 - 10, Think: 5, Delay: math.MaxInt64 / 2}
	if got := p.Deadline(3); got != math.MaxInt64 {
		t.Errorf("Deadline(3) = %d, want saturation at MaxInt64", got)
	}
	p = Plan{Start: 10, Delay: math.MaxInt64 / 2, Reasoning: 1 << 40, Tokens: 1<<40 + 1}
	for _, k := range []int{3, 1 << 40} {
		if got := p.Deadline(k); got != math.MaxInt64 {
			t.Errorf("Deadline(%d) = %d of a reasoning phase of 2⁴⁰ huge delays, want saturation at MaxInt64", k, got)
		}
	}
}

func TestMsToNs(t *testing.T) {
	tests := []struct {
		ms   float64
		want int64
	}{
		{5, 5_000_000},
		{0.0005, 500},
		{0.0000004, 0},
		{-3, 0},
		{math.NaN(), 0},
		{math.Inf(1), math.MaxInt64},
		{1e300, math.MaxInt64},
	}
	for _, tt := range tests {
		if got := MsToNs(tt.ms); got != tt.want {
			t.Errorf("MsToNs(%v) = %d, want %d", tt.ms, got, tt.want)
		}
	}
}

func TestWaves(t *testing.T) {
	tests := []struct{ r, c, want int }{{1, 1, 1}, {20, 5, 4}, {21, 5, 5}, {3, 0, 3}}
	for _, tt := range tests {
		if got := Waves(tt.r, tt.c); got != tt.want {
			t.Errorf("Waves(%d, %d) = %d, want %d", tt.r, tt.c, got, tt.want)
		}
	}
}

// TestDeadlineStall: a stall delays the token it starts at and every
// token after it, reasoning included, and nothing before it; a huge stall
// saturates.
func TestDeadlineStall(t *testing.T) {
	p := Plan{Start: 1000, Delay: 10, Tokens: 6, Reasoning: 2, StallAfter: 1, Stall: 500}
	for k, want := range []int64{1000, 1510, 1520, 1530, 1540, 1550} {
		if got := p.Deadline(k); got != want {
			t.Errorf("Plan%+v.Deadline(%d) = %d, want %d", p, k, got, want)
		}
	}
	p.StallAfter, p.Stall = 4, math.MaxInt64
	if got := p.Deadline(3); got != 1030 {
		t.Errorf("Deadline(3) before a stall at 4 = %d, want 1030", got)
	}
	if got := p.Deadline(4); got != math.MaxInt64 {
		t.Errorf("Deadline(4) with a huge stall = %d, want MaxInt64", got)
	}
}

func TestMulSat(t *testing.T) {
	tests := []struct{ a, b, want int64 }{
		{0, 5, 0}, {5, 0, 0}, {-1, 5, 0}, {5, -1, 0},
		{3, 7, 21},
		{math.MaxInt64, 1, math.MaxInt64},
		{1 << 31, 1 << 31, 1 << 62},
		{1 << 32, 1 << 31, math.MaxInt64},                         // 2^63
		{3_037_000_499, 3_037_000_499, 9_223_372_030_926_249_001}, // just under
		{3_037_000_500, 3_037_000_500, math.MaxInt64},             // just over
		{math.MaxInt64, 2, math.MaxInt64},
	}
	for _, tt := range tests {
		if got := mulSat(tt.a, tt.b); got != tt.want {
			t.Errorf("mulSat(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
