package failures

import (
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"slices"

	"github.com/sse-latency/sse-latency/internal/stats"
)

// Dist is a distribution of non-negative integers — the tokens a failed
// request had received, how long it had run in nanoseconds — in bounded
// memory, that merges exactly: the exact count, minimum and maximum beside
// counts per bucket, whose geometry is the histograms' (package stats):
// every value below 2048 in a bucket of its own, 3 significant digits
// above. Its percentiles follow the SPEC's rank rule (stats.Rank), within a
// bucket's width of the exact sample, exact below 2048. The zero value is
// an empty Dist.
type Dist struct {
	n, min, max int64
	buckets     map[int64]int64 // the lowest value of a bucket -> its samples
}

// distSubBucketBits is the histograms' log2 of 2·10³ rounded up (see
// package stats): values below 2^11 have buckets of width 1.
const distSubBucketBits = 11

// bucketOf returns the lowest value of v's bucket and the bucket's width.
func bucketOf(v int64) (lo, width int64) {
	shift := bits.Len64(uint64(v)) - distSubBucketBits
	if shift <= 0 {
		return v, 1
	}
	return v >> shift << shift, 1 << shift
}

// Add records v; a negative v as 0.
func (d *Dist) Add(v int64) {
	v = max(v, 0)
	if d.n == 0 || v < d.min {
		d.min = v
	}
	if d.n == 0 || v > d.max {
		d.max = v
	}
	d.n++
	if d.buckets == nil {
		d.buckets = make(map[int64]int64)
	}
	lo, _ := bucketOf(v)
	d.buckets[lo]++
}

// Merge adds every sample of o to d.
func (d *Dist) Merge(o *Dist) {
	if o == nil || o.n == 0 {
		return
	}
	if d.n == 0 || o.min < d.min {
		d.min = o.min
	}
	if d.n == 0 || o.max > d.max {
		d.max = o.max
	}
	d.n += o.n
	if d.buckets == nil {
		d.buckets = make(map[int64]int64, len(o.buckets))
	}
	for lo, c := range o.buckets {
		d.buckets[lo] += c
	}
}

// N returns the number of samples.
func (d *Dist) N() int64 { return d.n }

// Max returns the exact largest sample, 0 without any.
func (d *Dist) Max() int64 { return d.max }

// Min returns the exact smallest sample, 0 without any.
func (d *Dist) Min() int64 { return d.min }

// Percentile returns percentile p (in [0, 1]) by the SPEC's rank rule:
// rank 0 the exact minimum, rank n−1 the exact maximum, any other the
// middle of the bucket holding the sample of that rank, clamped into
// [Min, Max]; 0 without samples.
func (d *Dist) Percentile(p float64) int64 {
	if d.n == 0 {
		return 0
	}
	r := stats.Rank(d.n, p)
	switch r {
	case 0:
		return d.min
	case d.n - 1:
		return d.max
	}
	var seen int64
	for _, lo := range slices.Sorted(maps.Keys(d.buckets)) {
		seen += d.buckets[lo]
		if seen > r {
			_, w := bucketOf(lo)
			return min(max(lo+w/2, d.min), d.max)
		}
	}
	return d.max
}

// DistSummary is a Dist as the run document saves it: the exact count,
// minimum and maximum, the median (Percentile(0.5), for readers; Validate
// checks it), and the buckets as [lowest value, count] pairs in ascending
// order.
type DistSummary struct {
	N       int64      `json:"n"`
	Min     int64      `json:"min"`
	P50     int64      `json:"p50"`
	Max     int64      `json:"max"`
	Buckets [][2]int64 `json:"buckets"`
}

// Summary returns d's saved form.
func (d *Dist) Summary() DistSummary {
	s := DistSummary{N: d.n, Min: d.min, P50: d.Percentile(0.5), Max: d.max, Buckets: [][2]int64{}}
	for _, lo := range slices.Sorted(maps.Keys(d.buckets)) {
		s.Buckets = append(s.Buckets, [2]int64{lo, d.buckets[lo]})
	}
	return s
}

// errDist is wrapped by every error of DistSummary.Dist.
var errDist = errors.New("invalid distribution")

// Dist rebuilds the distribution, after checking that its buckets are
// buckets of the geometry, ascending, counted, adding up to n, and that
// min, max and p50 agree with them.
func (s *DistSummary) Dist() (*Dist, error) {
	d := &Dist{}
	if s.N < 0 {
		return nil, fmt.Errorf("%w: n is %d", errDist, s.N)
	}
	var total int64
	prev := int64(-1)
	for i, b := range s.Buckets {
		lo, c := b[0], b[1]
		if bl, _ := bucketOf(lo); lo < 0 || bl != lo || lo <= prev || c <= 0 {
			return nil, fmt.Errorf("%w: buckets[%d] = [%d, %d]: want the lowest value of a bucket, ascending, with a count above 0", errDist, i, lo, c)
		}
		prev = lo
		total += c
		if total > s.N {
			break
		}
	}
	if total != s.N {
		return nil, fmt.Errorf("%w: bucket counts sum to %d, want n=%d", errDist, total, s.N)
	}
	if s.N == 0 {
		if s.Min != 0 || s.Max != 0 || s.P50 != 0 {
			return nil, fmt.Errorf("%w: min, p50 or max set without samples", errDist)
		}
		return d, nil
	}
	first, last := s.Buckets[0][0], s.Buckets[len(s.Buckets)-1][0]
	if lo, _ := bucketOf(s.Min); lo != first || s.Min > s.Max {
		return nil, fmt.Errorf("%w: min %d is not in the first bucket (%d)", errDist, s.Min, first)
	}
	if lo, _ := bucketOf(s.Max); lo != last {
		return nil, fmt.Errorf("%w: max %d is not in the last bucket (%d)", errDist, s.Max, last)
	}
	d.n, d.min, d.max = s.N, s.Min, s.Max
	d.buckets = make(map[int64]int64, len(s.Buckets))
	for _, b := range s.Buckets {
		d.buckets[b[0]] = b[1]
	}
	if p := d.Percentile(0.5); p != s.P50 {
		return nil, fmt.Errorf("%w: p50 is %d, the buckets give %d", errDist, s.P50, p)
	}
	return d, nil
}
