package stats

import (
	"math"
	"testing"
)

func TestRank(t *testing.T) {
	tests := []struct {
		n    int64
		p    float64
		want int64
	}{
		{0, 0.5, 0},
		{-3, 0.5, 0},
		{1, 0, 0},
		{1, 0.5, 0},
		{1, 0.95, 0},
		{1, 0.99, 0},
		{1, 0.999, 0},
		{1, 1, 0},
		{2, 0, 0},
		{2, 0.5, 0},
		{2, 0.95, 0},
		{2, 0.99, 0},
		{2, 0.999, 0},
		{2, 1, 1},
		{3, 0.5, 1},
		{3, 0.95, 1},
		{3, 0.99, 1},
		{4, 0.5, 1},
		{10, 0.95, 8},
		{20, 0.95, 18},
		{100, 0.5, 49},
		{100, 0.95, 94},
		{100, 0.99, 98},
		{100, 0.999, 98},
		{101, 0, 0},
		{101, 0.01, 1},
		{101, 0.29, 29}, // float64(100)*0.29 == 28.999999999999996
		{101, 0.5, 50},
		{101, 0.57, 57}, // float64(100)*0.57 == 56.99999999999999
		{101, 0.95, 95},
		{101, 0.99, 99},
		{101, 0.999, 99},
		{101, 1, 100},
		{199, 0.99, 196},  // 198·0.99 = 196.02
		{200, 0.99, 197},  // 199·0.99 = 197.01
		{999, 0.999, 997}, // 998·0.999 = 997.002
		{1000, 0.999, 998},
		{1001, 0.999, 999},
		{1000, 0.5, 499},
		{101, -0.1, 0},
		{101, math.NaN(), 0},
		{101, 1.5, 100},
		{101, math.Inf(1), 100},
		{math.MaxInt64, 1, math.MaxInt64 - 1},
		{math.MaxInt64, 0.5, (math.MaxInt64 - 1) / 2},
	}
	for _, tt := range tests {
		if got := Rank(tt.n, tt.p); got != tt.want {
			t.Errorf("Rank(%d, %v) = %d, want %d", tt.n, tt.p, got, tt.want)
		}
	}
}

// TestRankMatchesReference checks that, for the percentiles the reports
// print, Rank gives the index the reference tool computes in plain double
// arithmetic, (size_t)((n-1)*p): the robust rounding only changes ranks for
// other percentiles, such as 0.29.
func TestRankMatchesReference(t *testing.T) {
	for _, p := range []float64{0.01, 0.5, 0.9, 0.95, 0.99, 0.999} {
		for n := int64(1); n <= 200_000; n++ {
			if got, ref := Rank(n, p), int64(float64(n-1)*p); got != ref {
				t.Fatalf("Rank(%d, %v) = %d, reference (n-1)*p truncates to %d", n, p, got, ref)
			}
		}
	}
}

func TestExactPercentile(t *testing.T) {
	if got := ExactPercentile(nil, 0.5); got != 0 {
		t.Errorf("ExactPercentile(nil, 0.5) = %d, want 0", got)
	}
	for _, n := range []int{1, 2, 3, 5, 100, 101, 1000, 1001} {
		sorted := make([]int64, n)
		for i := range sorted {
			sorted[i] = int64(10 * i)
		}
		for _, p := range []float64{0, 0.01, 0.29, 0.5, 0.9, 0.95, 0.99, 0.999, 1} {
			want := 10 * Rank(int64(n), p)
			if got := ExactPercentile(sorted, p); got != want {
				t.Errorf("ExactPercentile(0,10,…,%d, %v) = %d, want sorted[Rank(%d, %v)] = %d", 10*(n-1), p, got, n, p, want)
			}
		}
	}
}
