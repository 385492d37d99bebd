package stats

import "testing"

func TestMs(t *testing.T) {
	for _, tt := range []struct {
		ns   int64
		want float64
	}{{0, 0}, {1, 0.000001}, {1_500_000, 1.5}, {-2_000_000, -2}, {61_000, 0.061}} {
		if got := Ms(tt.ns); got != tt.want {
			t.Errorf("Ms(%d) = %v, want %v", tt.ns, got, tt.want)
		}
	}
}
