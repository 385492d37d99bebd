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
