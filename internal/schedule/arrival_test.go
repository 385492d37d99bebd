package schedule

import (
	"errors"
	"math"
	"testing"
)

func TestConstantDeadline(t *testing.T) {
	tests := []struct {
		start int64
		rate  float64
		k     int
		want  int64
	}{
		{1000, 200, 0, 1000},
		{1000, 200, 1, 1000 + 5_000_000},
		{1000, 200, 7, 1000 + 35_000_000},
		{0, 3, 1, 333_333_333},
		{0, 3, 2, 666_666_666},
		{0, 3, 3, 1_000_000_000},
		{0, 3, 3_000_000, 1_000_000_000_000_000},
		{0, 0.5, 1, 2_000_000_000},
		{0, 2.5, 5, 2_000_000_000},
		{0, 1e9, 7, 7},
		{0, 1e-6, 1, 1e15},
		{5, 1000, -3, 5},
		{math.MaxInt64 - 10, 1, 1, math.MaxInt64},
		{0, 1e-6, math.MaxInt, math.MaxInt64},
	}
	for _, tt := range tests {
		c, err := NewConstant(tt.start, tt.rate)
		if err != nil {
			t.Fatalf("NewConstant(%d, %v): %v", tt.start, tt.rate, err)
		}
		if got := c.Deadline(tt.k); got != tt.want {
			t.Errorf("NewConstant(%d, %v).Deadline(%d) = %d, want %d", tt.start, tt.rate, tt.k, got, tt.want)
		}
	}
}

// TestConstantDoesNotDrift: at 3 requests/s the period is not a whole
// number of nanoseconds, yet every third arrival falls exactly on a whole
// second and every gap is the period rounded down or up: deadlines come
// from k, not from adding rounded periods.
func TestConstantDoesNotDrift(t *testing.T) {
	const start = 1_700_000_000_000_000_000
	c, err := NewConstant(start, 3)
	if err != nil {
		t.Fatal(err)
	}
	prev := c.Next()
	if prev != start {
		t.Fatalf("first arrival at %d, want the start %d", prev, start)
	}
	for k := 1; k <= 3_000_000; k++ {
		d := c.Next()
		if gap := d - prev; gap != 333_333_333 && gap != 333_333_334 {
			t.Fatalf("gap before arrival %d = %d ns, want 333333333 or 333333334", k, gap)
		}
		if k%3 == 0 && d != start+int64(k/3)*1e9 {
			t.Fatalf("arrival %d at start%+d ns, want exactly %d s after the start", k, d-start, k/3)
		}
		prev = d
	}
}

func TestNewArrivals(t *testing.T) {
	tests := []struct {
		kind string
		rate float64
		err  error
	}{
		{"", 10, nil},
		{ArrivalConstant, 10, nil},
		{ArrivalPoisson, 10, nil},
		{"uniform", 10, ErrArrival},
		{"Poisson", 10, ErrArrival},
		{ArrivalConstant, 0, ErrRate},
		{ArrivalPoisson, -1, ErrRate},
		{ArrivalConstant, math.NaN(), ErrRate},
		{ArrivalPoisson, math.Inf(1), ErrRate},
		{ArrivalConstant, 1e-7, ErrRate},
	}
	for _, tt := range tests {
		a, err := NewArrivals(tt.kind, 100, tt.rate, 1)
		if !errors.Is(err, tt.err) {
			t.Errorf("NewArrivals(%q, 100, %v, 1) error = %v, want %v", tt.kind, tt.rate, err, tt.err)
			continue
		}
		if err == nil {
			if d := a.Next(); d != 100 {
				t.Errorf("NewArrivals(%q, 100, %v, 1): first arrival at %d, want the start 100", tt.kind, tt.rate, d)
			}
		}
	}
}

// TestPoissonStatistics checks, with a fixed seed and no clock, that the
// gaps of a Poisson schedule are exponential with mean 1/rate. For n
// exponential gaps the sample mean and the sample coefficient of variation
// (stddev/mean, 1 for an exponential) both have a relative standard
// deviation of 1/√n (delta method: Var(log CV) = 2/n + 1/n − 2·1/n), and
// the fraction of gaps below the mean is binomial around 1−1/e. Each is
// asserted within four standard deviations.
func TestPoissonStatistics(t *testing.T) {
	const (
		start = 12345
		rate  = 1000.0 // mean gap 1 ms
		n     = 100_000
	)
	p, err := NewPoisson(start, rate, 42)
	if err != nil {
		t.Fatal(err)
	}
	mean := 1e9 / rate
	prev := p.Next()
	if prev != start {
		t.Fatalf("first arrival at %d, want the start %d", prev, start)
	}
	var sum, sumSq float64
	below := 0
	for k := 1; k <= n; k++ {
		d := p.Next()
		if d < prev {
			t.Fatalf("arrival %d at %d is before arrival %d at %d", k, d, k-1, prev)
		}
		g := float64(d - prev)
		sum += g
		sumSq += g * g
		if g < mean {
			below++
		}
		prev = d
	}
	bound := 4 / math.Sqrt(n)

	gotMean := sum / n
	if rel := math.Abs(gotMean/mean - 1); rel > bound {
		t.Errorf("mean gap %.0f ns over %d arrivals, want %.0f ns within %.2f%% (off by %.2f%%)", gotMean, n, mean, 100*bound, 100*rel)
	}
	// The whole span too: n arrivals at rate take n/rate seconds.
	if rel := math.Abs(float64(prev-start)/(n*mean) - 1); rel > bound {
		t.Errorf("%d arrivals span %d ns, want %.0f within %.2f%%", n, prev-start, n*mean, 100*bound)
	}

	sd := math.Sqrt((sumSq - sum*sum/n) / (n - 1))
	if cv := sd / gotMean; math.Abs(cv-1) > bound {
		t.Errorf("coefficient of variation of the gaps %.4f, want 1 within %.4f", cv, bound)
	}

	pBelow := 1 - math.Exp(-1)
	if f := float64(below) / n; math.Abs(f-pBelow) > 4*math.Sqrt(pBelow*(1-pBelow)/n) {
		t.Errorf("%.4f of the gaps are shorter than the mean, want %.4f (exponential)", f, pBelow)
	}
}

func TestPoissonSeed(t *testing.T) {
	a, _ := NewPoisson(0, 100, 7)
	b, _ := NewPoisson(0, 100, 7)
	c, _ := NewPoisson(0, 100, 8)
	differ := false
	for k := 0; k < 1000; k++ {
		da, db, dc := a.Next(), b.Next(), c.Next()
		if da != db {
			t.Fatalf("seed 7 twice: arrival %d at %d and %d, want the same schedule", k, da, db)
		}
		differ = differ || da != dc
	}
	if !differ {
		t.Error("seeds 7 and 8 gave the same 1000 arrivals, want different schedules")
	}
}

func TestPoissonSaturates(t *testing.T) {
	p, _ := NewPoisson(math.MaxInt64-1000, 1e-6, 1)
	p.Next()
	if d := p.Next(); d != math.MaxInt64 {
		t.Errorf("arrival past the int64 range at %d, want saturation at MaxInt64", d)
	}
}

func TestOffsets(t *testing.T) {
	offsets := []int64{0, 100_500_000, 100_500_000, 250_000_000}
	for _, tc := range []struct {
		speed float64
		want  []int64
	}{
		{1, []int64{1000, 100_501_000, 100_501_000, 250_001_000, math.MaxInt64}},
		{2, []int64{1000, 50_251_000, 50_251_000, 125_001_000, math.MaxInt64}},
		{0.5, []int64{1000, 201_001_000, 201_001_000, 500_001_000, math.MaxInt64}},
	} {
		o, err := NewOffsets(1000, offsets, tc.speed)
		if err != nil {
			t.Fatal(err)
		}
		for k, w := range tc.want {
			if got := o.Next(); got != w {
				t.Errorf("speed %v: arrival %d due at %d, want %d", tc.speed, k, got, w)
			}
		}
	}
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := NewOffsets(0, offsets, bad); err == nil {
			t.Errorf("NewOffsets(speed %v): no error", bad)
		}
	}
	var _ Arrivals = (*Offsets)(nil)
}
