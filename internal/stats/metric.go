package stats

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// The histogram geometry of every Metric: nanosecond resolution from 1 ns to
// 1 hour, 3 significant decimal digits.
const (
	HistogramLowestNs           = 1
	HistogramHighestNs          = 3_600_000_000_000
	HistogramSignificantFigures = 3
)

// subBucketBits is log2 of HdrHistogram's sub-bucket count for 3 significant
// digits: the smallest power of two at least 2·10³, 2048. Values below 2048
// have buckets of width 1; above, a value of bit length L sits in a bucket of
// width 2^(L−11). TestBucketBounds pins this against the library.
const subBucketBits = 11

// bucketBounds returns the lowest and highest values equivalent to v (v >= 0)
// in the histogram, i.e. the bounds of the bucket v is counted in.
func bucketBounds(v int64) (lo, hi int64) {
	shift := bits.Len64(uint64(v)) - subBucketBits
	if shift <= 0 {
		return v, v
	}
	lo = v >> shift << shift
	return lo, lo + 1<<shift - 1
}

// bucketMiddle returns HdrHistogram's median equivalent value of v: the lowest
// value of its bucket plus half the bucket's width.
func bucketMiddle(v int64) int64 {
	lo, hi := bucketBounds(v)
	return lo + (hi-lo+1)>>1
}

// histogramValue maps a sample to the value the histogram counts it as:
// negative samples as 0, samples above HistogramHighestNs as that.
func histogramValue(ns int64) int64 {
	return min(max(ns, 0), HistogramHighestNs)
}

// Metric accumulates one kind of sample (nanoseconds) in bounded memory: the
// exact count, sum, sum of squares, minimum and maximum, beside an
// HdrHistogram for percentiles (see the package comment for the rule and its
// error bound). Create it with NewMetric. A Metric is not safe for concurrent
// use.
type Metric struct {
	n        int64
	sum      int64   // exact, saturating at the int64 bounds (±292 years)
	sumSq    float64 // sum of squares, for Stddev
	min, max int64
	negative int64
	h        *histogram // made with the first sample
}

// NewMetric returns an empty Metric. Its histogram, made with its first
// sample, takes 0.5 KiB and 8 KiB per range of values its samples fall in
// (a range is a run of 1024 buckets: 2^k to 2^(k+1) ns above 2048 ns): a
// metric that gets none (TLS over plain TCP, start lateness in closed
// loop, ...) costs nothing.
func NewMetric() *Metric { return &Metric{} }

// hist returns m's histogram, making it on first use.
func (m *Metric) hist() *histogram {
	if m.h == nil {
		m.h = new(histogram)
	}
	return m.h
}

// Record adds one sample, in nanoseconds. It does not allocate.
func (m *Metric) Record(ns int64) {
	if m.n == 0 || ns < m.min {
		m.min = ns
	}
	if m.n == 0 || ns > m.max {
		m.max = ns
	}
	m.n++
	m.sum = addSaturating(m.sum, ns)
	f := float64(ns)
	m.sumSq += f * f
	if ns < 0 {
		m.negative++
	}
	m.hist().record(histogramValue(ns), 1)
}

// addSaturating returns a+b, or the int64 bound it would cross.
func addSaturating(a, b int64) int64 {
	s := a + b
	switch {
	case b > 0 && s < a:
		return math.MaxInt64
	case b < 0 && s > a:
		return math.MinInt64
	}
	return s
}

// Merge adds every sample of o to m. o is left unchanged.
func (m *Metric) Merge(o *Metric) {
	if o == nil || o.n == 0 {
		return
	}
	if m.n == 0 || o.min < m.min {
		m.min = o.min
	}
	if m.n == 0 || o.max > m.max {
		m.max = o.max
	}
	m.n += o.n
	m.sum = addSaturating(m.sum, o.sum)
	m.sumSq += o.sumSq
	m.negative += o.negative
	m.hist().add(o.h)
}

// N returns the number of samples.
func (m *Metric) N() int64 { return m.n }

// Sum returns the exact sum of the samples in nanoseconds (saturated at the
// int64 bounds, which only samples from unrelated clocks could reach).
func (m *Metric) Sum() int64 { return m.sum }

// Min returns the exact smallest sample, 0 if there is none.
func (m *Metric) Min() int64 { return m.min }

// Max returns the exact largest sample, 0 if there is none.
func (m *Metric) Max() int64 { return m.max }

// Negative returns the number of negative samples (possible when the emission
// stamp comes from another clock); the histogram counts them as 0.
func (m *Metric) Negative() int64 { return m.negative }

// Mean returns the arithmetic mean in nanoseconds, 0 if there is no sample.
func (m *Metric) Mean() float64 {
	if m.n == 0 {
		return 0
	}
	return float64(m.sum) / float64(m.n)
}

// Stddev returns the population standard deviation in nanoseconds, from the
// exact sum and the float64 sum of squares; 0 if there is no sample.
func (m *Metric) Stddev() float64 {
	if m.n == 0 {
		return 0
	}
	mean := m.Mean()
	v := m.sumSq/float64(m.n) - mean*mean
	if v <= 0 {
		return 0
	}
	return math.Sqrt(v)
}

// Percentile returns percentile p (in [0, 1]) of the samples by the SPEC's
// rule (see Rank): p = 0 (rank 0) gives the exact Min, p = 1 (rank n−1) the
// exact Max, any other rank the middle of the histogram bucket holding the
// sample of that rank, clamped into [Min, Max]. It returns 0 if there is no
// sample. It does not allocate.
func (m *Metric) Percentile(p float64) int64 {
	if m.n == 0 {
		return 0
	}
	r := Rank(m.n, p)
	switch r {
	case 0:
		return m.min
	case m.n - 1:
		return m.max
	}
	v := m.h.valueAtRank(r)
	return min(max(bucketMiddle(v), m.min), m.max)
}

// Snapshot is the exported state of a Metric, for JSON reports: the exact
// fields and the non-empty histogram buckets. MetricFromSnapshot rebuilds the
// Metric.
type Snapshot struct {
	N         int64             `json:"n"`
	SumNs     int64             `json:"sum_ns"`
	SumSqNs2  float64           `json:"sum_sq_ns2"`
	MinNs     int64             `json:"min_ns"`
	MaxNs     int64             `json:"max_ns"`
	Negative  int64             `json:"negative"`
	Histogram HistogramSnapshot `json:"histogram"`
}

// HistogramSnapshot is the geometry and the non-empty buckets of a Metric's
// histogram, in ascending order.
type HistogramSnapshot struct {
	LowestNs           int64    `json:"lowest_ns"`
	HighestNs          int64    `json:"highest_ns"`
	SignificantFigures int      `json:"significant_figures"`
	Buckets            []Bucket `json:"buckets"`
}

// Bucket is one non-empty histogram bucket: Count samples counted in
// [FromNs, ToNs] (both inclusive).
type Bucket struct {
	FromNs int64 `json:"from_ns"`
	ToNs   int64 `json:"to_ns"`
	Count  int64 `json:"count"`
}

// Snapshot returns the state of m. It allocates, and is meant for report
// time.
func (m *Metric) Snapshot() Snapshot {
	s := Snapshot{
		N:        m.n,
		SumNs:    m.sum,
		SumSqNs2: m.sumSq,
		MinNs:    m.min,
		MaxNs:    m.max,
		Negative: m.negative,
		Histogram: HistogramSnapshot{
			LowestNs:           HistogramLowestNs,
			HighestNs:          HistogramHighestNs,
			SignificantFigures: HistogramSignificantFigures,
			Buckets:            []Bucket{},
		},
	}
	if m.h == nil {
		return s
	}
	used := 0
	m.h.each(func(int, int64) { used++ })
	s.Histogram.Buckets = make([]Bucket, 0, used)
	m.h.each(func(i int, n int64) {
		lo, hi := bucketBounds(bucketAt(i))
		s.Histogram.Buckets = append(s.Histogram.Buckets, Bucket{FromNs: lo, ToNs: hi, Count: n})
	})
	return s
}

// bucketAt returns a value counted at index i of the histogram's counts
// (the library's valueFromFlatIndex for this geometry, whose smallest unit
// is 1 ns): the first subBucketHalf indexes are the values 0..1023, then
// each run of subBucketHalf indexes covers the upper half of a bucket
// twice as wide as the previous one's. TestBucketAt pins it against the
// library.
func bucketAt(i int) int64 {
	const half = 1 << (subBucketBits - 1)
	b := i>>(subBucketBits-1) - 1
	sub := i&(half-1) + half
	if b < 0 {
		sub -= half
		b = 0
	}
	return int64(sub) << b
}

// ErrSnapshot is wrapped by every error of MetricFromSnapshot.
var ErrSnapshot = errors.New("invalid metric snapshot")

// MetricFromSnapshot rebuilds a Metric from a Snapshot, after checking that
// the snapshot is one Snapshot can produce: the same histogram geometry,
// buckets that are real buckets of it in ascending order with positive counts
// summing to N, and exact fields consistent with them.
func MetricFromSnapshot(s Snapshot) (*Metric, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	m := NewMetric()
	for _, b := range s.Histogram.Buckets {
		m.hist().record(b.FromNs, b.Count) // a bucket of the geometry: Validate checked it
	}
	m.n, m.sum, m.sumSq = s.N, s.SumNs, s.SumSqNs2
	m.min, m.max, m.negative = s.MinNs, s.MaxNs, s.Negative
	return m, nil
}

// Validate checks, without building the histogram, what MetricFromSnapshot
// checks: that s is a snapshot Snapshot can produce. Its errors wrap
// ErrSnapshot.
func (s *Snapshot) Validate() error {
	if err := s.check(); err != nil {
		return fmt.Errorf("%w: %w", ErrSnapshot, err)
	}
	return nil
}

func (s *Snapshot) check() error {
	h := &s.Histogram
	if h.LowestNs != HistogramLowestNs || h.HighestNs != HistogramHighestNs || h.SignificantFigures != HistogramSignificantFigures {
		return fmt.Errorf("histogram geometry %d..%d ns, %d digits; want %d..%d ns, %d digits",
			h.LowestNs, h.HighestNs, h.SignificantFigures,
			int64(HistogramLowestNs), int64(HistogramHighestNs), HistogramSignificantFigures)
	}
	if s.N < 0 || s.Negative < 0 || s.Negative > s.N {
		return fmt.Errorf("n=%d, negative=%d", s.N, s.Negative)
	}
	if s.N == 0 {
		if len(h.Buckets) != 0 || s.SumNs != 0 || s.SumSqNs2 != 0 || s.MinNs != 0 || s.MaxNs != 0 {
			return errors.New("no samples but non-zero fields")
		}
		return nil
	}
	if s.MinNs > s.MaxNs || (s.Negative > 0) != (s.MinNs < 0) || math.IsNaN(s.SumSqNs2) || s.SumSqNs2 < 0 {
		return fmt.Errorf("min=%d max=%d negative=%d sum_sq=%g", s.MinNs, s.MaxNs, s.Negative, s.SumSqNs2)
	}
	var total int64
	prev := int64(-1)
	for i, b := range h.Buckets {
		lo, hi := bucketBounds(max(b.FromNs, 0))
		if b.FromNs <= prev || b.FromNs != lo || b.ToNs != hi || b.FromNs > HistogramHighestNs || b.Count <= 0 {
			return fmt.Errorf("bucket %d (%d..%d: %d) is not a histogram bucket in order", i, b.FromNs, b.ToNs, b.Count)
		}
		if b.Count > math.MaxInt64-total {
			return fmt.Errorf("bucket counts overflow at bucket %d", i)
		}
		total += b.Count
		prev = b.FromNs
	}
	if total != s.N {
		return fmt.Errorf("bucket counts sum to %d, want n=%d", total, s.N)
	}
	first, last := h.Buckets[0], h.Buckets[len(h.Buckets)-1]
	if lo, _ := bucketBounds(histogramValue(s.MinNs)); lo != first.FromNs {
		return fmt.Errorf("min %d is not in the first bucket %d..%d", s.MinNs, first.FromNs, first.ToNs)
	}
	if lo, _ := bucketBounds(histogramValue(s.MaxNs)); lo != last.FromNs {
		return fmt.Errorf("max %d is not in the last bucket %d..%d", s.MaxNs, last.FromNs, last.ToNs)
	}
	return nil
}
