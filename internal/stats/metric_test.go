package stats

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// TestBucketBounds pins bucketBounds and bucketMiddle, our copy of the
// histogram geometry, against the library.
func TestBucketBounds(t *testing.T) {
	h := hdrhistogram.New(HistogramLowestNs, HistogramHighestNs, HistogramSignificantFigures)
	// The Reset-based check of bucketMiddle costs two passes over the counts:
	// it runs on every third boundary value only.
	values := []int64{0, 1, 2, 1023, 1024, 1025, 2046, HistogramHighestNs, HistogramHighestNs - 1}
	for k := 11; k < 42; k++ {
		p := int64(1) << k
		values = append(values, p-2, p-1, p, p+1, p+2, p+p/2)
	}
	boundaries := len(values)
	for v := int64(0); v < 5000; v++ {
		values = append(values, v)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for range 10000 {
		values = append(values, rng.Int64N(HistogramHighestNs))
	}
	for i, v := range values {
		lo, hi := bucketBounds(v)
		if lo > v || v > hi || !h.ValuesAreEquivalent(v, lo) || !h.ValuesAreEquivalent(v, hi) ||
			(lo > 0 && h.ValuesAreEquivalent(v, lo-1)) || h.ValuesAreEquivalent(v, hi+1) {
			t.Fatalf("bucketBounds(%d) = %d, %d: not the bucket of the histogram", v, lo, hi)
		}
		if i >= boundaries || i%3 != 0 {
			continue
		}
		// The histogram's Mean of a single value is its median equivalent value.
		h.Reset()
		if err := h.RecordValue(v); err != nil {
			t.Fatalf("RecordValue(%d): %v", v, err)
		}
		if got, want := bucketMiddle(v), int64(h.Mean()); got != want {
			t.Fatalf("bucketMiddle(%d) = %d, histogram's median equivalent value %d", v, got, want)
		}
	}
}

// percentilesUnderTest are the percentiles checked against the exact rule.
var percentilesUnderTest = []float64{0, 0.01, 0.5, 0.9, 0.95, 0.99, 0.999, 1}

// maxRelErr is the bound the package comment promises: half a bucket over
// the bucket's lowest value, 1/2048.
const maxRelErr = 1.0 / 2048

func TestPercentileAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gen := func(n int, f func() float64) []int64 {
		s := make([]int64, n)
		for i := range s {
			s[i] = min(max(int64(f()), 0), HistogramHighestNs)
		}
		return s
	}
	datasets := map[string][]int64{
		"uniform 0..1s":     gen(100_000, func() float64 { return rng.Float64() * 1e9 }),
		"uniform 0..5000ns": gen(100_000, func() float64 { return rng.Float64() * 5000 }),
		"exponential 10ms":  gen(100_000, func() float64 { return rng.ExpFloat64() * 1e7 }),
		// exp(N(ln 100µs, 3²)): from single nanoseconds to tens of seconds.
		"lognormal ns..s": gen(100_000, func() float64 { return math.Exp(math.Log(1e5) + 3*rng.NormFloat64()) }),
		"bimodal 20µs/200ms": gen(100_000, func() float64 {
			if rng.IntN(2) == 0 {
				return 20_000 + rng.NormFloat64()*2_000
			}
			return 200e6 + rng.NormFloat64()*5e6
		}),
		"bimodal 99% 20µs, 1% 200ms": gen(100_000, func() float64 {
			if rng.IntN(100) != 0 {
				return 20_000 + rng.NormFloat64()*2_000
			}
			return 200e6 + rng.NormFloat64()*5e6
		}),
		"all equal": gen(1000, func() float64 { return 123_456_789 }),
		"near 1h": gen(10_000, func() float64 {
			return HistogramHighestNs - rng.Float64()*1e9
		}),
	}
	var boundaries []int64
	for k := range 42 {
		p := int64(1) << k
		boundaries = append(boundaries, p-1, p, p+1)
	}
	boundaries = append(boundaries, 2047, 2048, 2049, 4095, 4096, 4097, HistogramHighestNs-1, HistogramHighestNs)
	datasets["bucket boundaries"] = boundaries
	datasets["one sample per boundary"] = []int64{2047, 2048, 2049}
	for n := 1; n <= 5; n++ {
		datasets["small n="+string(rune('0'+n))] = gen(n, func() float64 { return math.Exp(rng.Float64() * 25) })
	}

	var worst float64
	for name, data := range datasets {
		m := NewMetric()
		for _, v := range data {
			m.Record(v)
		}
		sorted := slices.Sorted(slices.Values(data))
		for _, p := range percentilesUnderTest {
			got, want := m.Percentile(p), ExactPercentile(sorted, p)
			rel := math.Abs(float64(got-want)) / float64(want)
			if got == want {
				rel = 0
			}
			worst = max(worst, rel)
			if want < 1<<subBucketBits && got != want {
				t.Errorf("%s: Percentile(%v) = %d, want exactly %d (buckets below 2048 ns have width 1)", name, p, got, want)
			}
			if rel > maxRelErr {
				t.Errorf("%s: Percentile(%v) = %d, exact %d: relative error %.3g > %.3g", name, p, got, want, rel, maxRelErr)
			}
		}
		if m.N() != int64(len(data)) || m.Min() != sorted[0] || m.Max() != sorted[len(sorted)-1] {
			t.Errorf("%s: N, Min, Max = %d, %d, %d; want %d, %d, %d", name, m.N(), m.Min(), m.Max(), len(data), sorted[0], sorted[len(sorted)-1])
		}
		var sum int64
		for _, v := range data {
			sum += v
		}
		if m.Sum() != sum {
			t.Errorf("%s: Sum() = %d, want %d", name, m.Sum(), sum)
		}
	}
	t.Logf("worst relative percentile error: %.4g (bound %.4g)", worst, maxRelErr)
}

// TestPercentileMatchesLibrary pins Percentile against what the library
// gives for the same samples: the middle of the bucket that its
// ValueAtPercentile finds for the 1-based rank Rank+1, clamped into
// [Min, Max] (the rule before our histogram replaced the library's).
func TestPercentileMatchesLibrary(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 3, 10, 101, 5000} {
		m := NewMetric()
		h := hdrhistogram.New(HistogramLowestNs, HistogramHighestNs, HistogramSignificantFigures)
		for range n {
			v := rng.Int64N(1 << rng.IntN(43))
			m.Record(v)
			if err := h.RecordValue(histogramValue(v)); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range []float64{0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999} {
			r := Rank(m.N(), p)
			if r == 0 || r == m.N()-1 {
				continue // the exact Min and Max
			}
			v := h.ValueAtPercentile(100 * float64(r+1) / float64(m.N()))
			want := min(max(bucketMiddle(v), m.Min()), m.Max())
			if got := m.Percentile(p); got != want {
				t.Errorf("n=%d: Percentile(%v) = %d, the library's bucket gives %d", n, p, got, want)
			}
		}
	}
}

func TestPercentileEmpty(t *testing.T) {
	m := NewMetric()
	for _, p := range percentilesUnderTest {
		if got := m.Percentile(p); got != 0 {
			t.Errorf("empty Metric: Percentile(%v) = %d, want 0", p, got)
		}
	}
	if m.Mean() != 0 || m.Stddev() != 0 || m.Min() != 0 || m.Max() != 0 || m.N() != 0 {
		t.Errorf("empty Metric: N, Mean, Stddev, Min, Max = %d, %v, %v, %d, %d; want zeros", m.N(), m.Mean(), m.Stddev(), m.Min(), m.Max())
	}
}

func TestMeanStddev(t *testing.T) {
	m := NewMetric()
	for _, v := range []int64{2, 4, 4, 4, 5, 5, 7, 9} {
		m.Record(v * 1_000_000)
	}
	if m.Mean() != 5e6 {
		t.Errorf("Mean() = %v, want 5e6", m.Mean())
	}
	if math.Abs(m.Stddev()-2e6) > 1e-3 {
		t.Errorf("Stddev() = %v, want 2e6", m.Stddev())
	}
	one := NewMetric()
	one.Record(42)
	if one.Stddev() != 0 {
		t.Errorf("Stddev() of one sample = %v, want 0", one.Stddev())
	}
}

func TestOutOfRange(t *testing.T) {
	m := NewMetric()
	for _, v := range []int64{-5, -3, 10} {
		m.Record(v)
	}
	if m.Negative() != 2 || m.Min() != -5 || m.Max() != 10 || m.Sum() != 2 {
		t.Errorf("after -5, -3, 10: Negative, Min, Max, Sum = %d, %d, %d, %d; want 2, -5, 10, 2", m.Negative(), m.Min(), m.Max(), m.Sum())
	}
	if got := m.Percentile(0); got != -5 {
		t.Errorf("Percentile(0) = %d, want exact min -5", got)
	}
	if got := m.Percentile(0.5); got != 0 {
		t.Errorf("Percentile(0.5) of -5, -3, 10 = %d, want 0 (negative samples count as 0 in the histogram)", got)
	}

	big := NewMetric()
	for _, v := range []int64{1, 5e12, 6e12} {
		big.Record(v)
	}
	if got := big.Percentile(1); got != 6e12 {
		t.Errorf("Percentile(1) = %d, want exact max 6e12", got)
	}
	if got, want := big.Percentile(0.5), bucketMiddle(HistogramHighestNs); got != want {
		t.Errorf("Percentile(0.5) of 1, 5e12, 6e12 = %d, want %d (the top bucket's middle)", got, want)
	}
	if big.Negative() != 0 {
		t.Errorf("Negative() = %d, want 0", big.Negative())
	}
}

func TestSumSaturates(t *testing.T) {
	m := NewMetric()
	for range 3 {
		m.Record(math.MaxInt64 / 2)
	}
	if m.Sum() != math.MaxInt64 {
		t.Errorf("Sum() = %d, want saturation at MaxInt64", m.Sum())
	}
	m = NewMetric()
	for range 3 {
		m.Record(math.MinInt64 / 2)
	}
	if m.Sum() != math.MinInt64 {
		t.Errorf("Sum() = %d, want saturation at MinInt64", m.Sum())
	}
	if got := addSaturating(5, -7); got != -2 {
		t.Errorf("addSaturating(5, -7) = %d, want -2", got)
	}
}

func metricOf(values ...int64) *Metric {
	m := NewMetric()
	for _, v := range values {
		m.Record(v)
	}
	return m
}

// sameMetric fails t unless a and b hold the same state; the float64 sums of
// squares may differ in their last bits with the order of additions.
func sameMetric(t *testing.T, what string, a, b *Metric) {
	t.Helper()
	sa, sb := a.Snapshot(), b.Snapshot()
	if math.Abs(sa.SumSqNs2-sb.SumSqNs2) > 1e-12*math.Abs(sb.SumSqNs2) {
		t.Errorf("%s: sums of squares %v and %v", what, sa.SumSqNs2, sb.SumSqNs2)
	}
	sa.SumSqNs2, sb.SumSqNs2 = 0, 0
	ha, hb := sa.Histogram, sb.Histogram
	sa.Histogram, sb.Histogram = HistogramSnapshot{}, HistogramSnapshot{}
	if !reflect.DeepEqual(sa, sb) {
		t.Errorf("%s: exact fields differ:\n%+v\n%+v", what, sa, sb)
	}
	if !reflect.DeepEqual(ha, hb) {
		t.Errorf("%s: histograms differ (%d and %d buckets)", what, len(ha.Buckets), len(hb.Buckets))
	}
	for _, p := range percentilesUnderTest {
		if a.Percentile(p) != b.Percentile(p) {
			t.Errorf("%s: Percentile(%v) = %d and %d", what, p, a.Percentile(p), b.Percentile(p))
		}
	}
}

func TestMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	all, x, y := NewMetric(), NewMetric(), NewMetric()
	for i := range 10_000 {
		v := rng.Int64N(1e9) - 1000
		all.Record(v)
		if i%3 == 0 {
			x.Record(v)
		} else {
			y.Record(v)
		}
	}
	x.Merge(y)
	sameMetric(t, "x.Merge(y)", x, all)

	empty := NewMetric()
	empty.Merge(all)
	sameMetric(t, "empty.Merge(all)", empty, all)

	before := all.Snapshot()
	all.Merge(NewMetric())
	all.Merge(nil)
	if !reflect.DeepEqual(all.Snapshot(), before) {
		t.Errorf("merging an empty or nil Metric changed the Metric")
	}

	self := metricOf(1, 5, 3000, -2)
	self.Merge(self)
	sameMetric(t, "self.Merge(self)", self, metricOf(1, 5, 3000, -2, 1, 5, 3000, -2))
}

func TestSnapshotRoundTrip(t *testing.T) {
	for _, m := range []*Metric{
		NewMetric(),
		metricOf(7),
		metricOf(-4, 0, 1, 2047, 2048, 2049, 5_000_000, 4e12),
	} {
		js, err := json.Marshal(m.Snapshot())
		if err != nil {
			t.Fatalf("json.Marshal(Snapshot()): %v", err)
		}
		var s Snapshot
		if err := json.Unmarshal(js, &s); err != nil {
			t.Fatalf("json.Unmarshal(%s): %v", js, err)
		}
		back, err := MetricFromSnapshot(s)
		if err != nil {
			t.Fatalf("MetricFromSnapshot(%s): %v", js, err)
		}
		sameMetric(t, "round trip of "+string(js), back, m)
	}
}

// TestSnapshotBuckets pins the buckets of Snapshot, read from the
// histogram's counts by index (bucketAt), against the library's own
// naming of its buckets (Distribution), over the whole range.
func TestSnapshotBuckets(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m := NewMetric()
	h := hdrhistogram.New(HistogramLowestNs, HistogramHighestNs, HistogramSignificantFigures)
	record := func(v int64) {
		m.Record(v)
		if err := h.RecordValue(v); err != nil {
			t.Fatalf("RecordValue(%d): %v", v, err)
		}
	}
	for _, v := range []int64{0, 1, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, HistogramHighestNs - 1, HistogramHighestNs} {
		record(v)
	}
	for range 20_000 {
		record(rng.Int64N(1 << rng.IntN(42)))
	}
	var want []Bucket
	for _, b := range h.Distribution() {
		if b.Count != 0 {
			want = append(want, Bucket{FromNs: b.From, ToNs: b.To, Count: b.Count})
		}
	}
	got := m.Snapshot().Histogram.Buckets
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Snapshot() has %d buckets, Distribution() %d non-empty bars; first differences:\n%v\n%v",
			len(got), len(want), got[:min(len(got), 5)], want[:min(len(want), 5)])
	}
}

// TestBucketAt records bucketAt(i) for every index i of the library's
// counts: each index must then count exactly one sample; countsIndex must
// be its inverse, and the chunks of our histogram must cover the counts.
func TestBucketAt(t *testing.T) {
	h := hdrhistogram.New(HistogramLowestNs, HistogramHighestNs, HistogramSignificantFigures)
	n := len(h.Export().Counts)
	if n != histogramChunks*chunkLen {
		t.Fatalf("the library has %d counts, our histogram %d chunks of %d", n, histogramChunks, chunkLen)
	}
	if i := countsIndex(HistogramHighestNs); i >= n {
		t.Fatalf("countsIndex(HistogramHighestNs) = %d, beyond the %d counts", i, n)
	}
	for i := range n {
		if j := countsIndex(bucketAt(i)); j != i {
			t.Fatalf("countsIndex(bucketAt(%d) = %d) = %d", i, bucketAt(i), j)
		}
		if lo, hi := bucketBounds(bucketAt(i)); countsIndex(lo) != i || countsIndex(hi) != i {
			t.Fatalf("bucket %d..%d of index %d: countsIndex gives %d..%d", lo, hi, i, countsIndex(lo), countsIndex(hi))
		}
	}
	for i := range n {
		if err := h.RecordValue(bucketAt(i)); err != nil {
			t.Fatalf("bucketAt(%d) = %d: RecordValue: %v", i, bucketAt(i), err)
		}
	}
	for i, c := range h.Export().Counts {
		if c != 1 {
			t.Fatalf("index %d of the counts holds %d of the values bucketAt(0..%d), want 1 (bucketAt(%d) = %d)", i, c, n-1, i, bucketAt(i))
		}
	}
}

func TestSnapshotJSON(t *testing.T) {
	js, err := json.Marshal(metricOf(3, 3, 2049).Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"n":3,"sum_ns":2055,"sum_sq_ns2":4198419,"min_ns":3,"max_ns":2049,"negative":0,` +
		`"histogram":{"lowest_ns":1,"highest_ns":3600000000000,"significant_figures":3,` +
		`"buckets":[{"from_ns":3,"to_ns":3,"count":2},{"from_ns":2048,"to_ns":2049,"count":1}]}}`
	if string(js) != want {
		t.Errorf("json.Marshal(Snapshot()) =\n%s\nwant\n%s", js, want)
	}
}

func TestMetricFromSnapshotRejects(t *testing.T) {
	good := func() Snapshot { return metricOf(3, 3, 2049).Snapshot() }
	tests := []struct {
		name   string
		modify func(*Snapshot)
	}{
		{"other significant figures", func(s *Snapshot) { s.Histogram.SignificantFigures = 2 }},
		{"other highest value", func(s *Snapshot) { s.Histogram.HighestNs = 1e9 }},
		{"negative n", func(s *Snapshot) { s.N = -1 }},
		{"counts below n", func(s *Snapshot) { s.N = 4 }},
		{"zero count", func(s *Snapshot) { s.Histogram.Buckets[0].Count = 0; s.N = 1 }},
		{"bucket not a bucket", func(s *Snapshot) { s.Histogram.Buckets[1].FromNs = 2049 }},
		{"bucket upper bound wrong", func(s *Snapshot) { s.Histogram.Buckets[1].ToNs = 2050 }},
		{"buckets out of order", func(s *Snapshot) {
			b := s.Histogram.Buckets
			b[0], b[1] = b[1], b[0]
		}},
		{"bucket beyond range", func(s *Snapshot) {
			lo, hi := bucketBounds(5e12)
			s.Histogram.Buckets[1] = Bucket{FromNs: lo, ToNs: hi, Count: 1}
		}},
		{"min above max", func(s *Snapshot) { s.MinNs = 3000 }},
		{"min not in first bucket", func(s *Snapshot) { s.MinNs = 2 }},
		{"max not in last bucket", func(s *Snapshot) { s.MaxNs = 2051 }},
		{"negative without negative min", func(s *Snapshot) { s.Negative = 1 }},
		{"empty with fields", func(s *Snapshot) {
			*s = NewMetric().Snapshot()
			s.SumNs = 1
		}},
		{"NaN sum of squares", func(s *Snapshot) { s.SumSqNs2 = math.NaN() }},
	}
	for _, tt := range tests {
		s := good()
		tt.modify(&s)
		if _, err := MetricFromSnapshot(s); !errors.Is(err, ErrSnapshot) {
			t.Errorf("MetricFromSnapshot(snapshot with %s) error = %v, want ErrSnapshot", tt.name, err)
		}
		if err := s.Validate(); !errors.Is(err, ErrSnapshot) {
			t.Errorf("Validate(snapshot with %s) = %v, want ErrSnapshot", tt.name, err)
		}
	}
	if _, err := MetricFromSnapshot(good()); err != nil {
		t.Errorf("MetricFromSnapshot(good snapshot) = %v", err)
	}
	if s := good(); s.Validate() != nil {
		t.Errorf("Validate(good snapshot) = %v", s.Validate())
	}
}

func TestRecordPercentileDoNotAllocate(t *testing.T) {
	m := NewMetric()
	var v int64
	for w := int64(0); w < 2e6; w += 500 { // the ranges of values recorded below
		m.Record(w)
	}
	if a := testing.AllocsPerRun(1000, func() { v += 997; m.Record(v) }); a != 0 {
		t.Errorf("Record allocates %v times per call, want 0", a)
	}
	if a := testing.AllocsPerRun(100, func() { _ = m.Percentile(0.99) }); a != 0 {
		t.Errorf("Percentile allocates %v times per call, want 0", a)
	}
}

func BenchmarkRecord(b *testing.B) {
	m := NewMetric()
	b.ReportAllocs()
	var v int64
	for b.Loop() {
		v = (v + 104_729) % 1e10
		m.Record(v)
	}
}

func BenchmarkPercentile(b *testing.B) {
	m := NewMetric()
	rng := rand.New(rand.NewPCG(5, 6))
	for range 100_000 {
		m.Record(int64(rng.ExpFloat64() * 5e6))
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = m.Percentile(0.99)
	}
}
