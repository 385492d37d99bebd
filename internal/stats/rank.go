// Package stats turns raw request records (package result) into the
// statistics the reports print, in bounded memory.
//
// A Metric keeps the exact count, sum, minimum and maximum of its samples
// beside a histogram in HdrHistogram's geometry (nanosecond resolution, 1 ns
// to 1 h, 3 significant digits), so that its memory does not grow with the
// number of samples. The histogram is ours (histogram.go): the library's
// allocates and copies its whole counts array (264 KiB) per metric, ours
// only the ranges its samples fall in; TestPercentileMatchesLibrary and
// TestSnapshotBuckets pin it against the library.
//
// # The percentile rule
//
// The SPEC (§6) defines percentile p of n sorted samples as the sample at
// 0-based index floor((n−1)·p). That rule is Rank; ExactPercentile applies it
// to a sorted slice.
//
// HdrHistogram's own ValueAtPercentile uses another rule, nearest rank: it
// looks for the sample of 1-based rank round(p·n) and returns the highest
// value equivalent to that sample's bucket. The two rules often pick the same
// sample, but not always: for n = 10 and p = 0.95 HdrHistogram picks the 10th
// sample (the maximum) where the SPEC picks index floor(9·0.95) = 8, the 9th;
// for n = 3 and p = 0.95, the 3rd against the 2nd. And the highest equivalent
// value overstates the sample by up to a whole bucket width.
//
// Metric.Percentile therefore applies the SPEC's rule to the histogram: it
// computes the rank with Rank, finds the bucket that holds the sample of that
// rank (what the library's ValueAtPercentile finds for the 1-based rank
// Rank+1 exactly), and returns the middle of that bucket
// (HdrHistogram's "median equivalent value"), clamped into the exact
// [Min, Max]. Rank 0 and rank n−1 return the exact Min and Max.
//
// The sample of the SPEC's rank lies in the bucket found, and a bucket's half
// width is at most 1/2048 of its lowest value (values below 2048 ns have
// buckets of width 1, i.e. are exact), so a histogram percentile is within
// 1/2048 (0.049 %) of the exact one, for samples between 0 and 1 h. That is
// up to 2.4 µs at 5 ms and 98 µs at 200 ms: enough to change the last digit
// the text report prints (%.2f ms) for about one percentile in ten around
// 5 ms and for most above 10 ms, and the last digit of the overhead lines
// (%+.3f ms) most of the time above 1 ms. Count, Sum (so the mean), Min and
// Max are exact. Samples above 1 h are counted in the histogram's top bucket
// and negative samples in its bucket 0; their exact values still go into Sum,
// Min and Max.
package stats

import (
	"math"
	"math/bits"
)

// rankScale is the resolution at which Rank reads p: p is rounded to the
// nearest multiple of 1e-9 before the rank is computed in integer arithmetic,
// so that decimal percentiles such as 0.29 or 0.999 give the rank their
// decimal value gives, free of binary floating-point error.
const rankScale = 1_000_000_000

// Rank returns the 0-based index of percentile p (in [0, 1]) among n sorted
// samples: floor((n−1)·p), the SPEC's rule (§6). p is read to 9 decimal
// places, so Rank(101, 0.29) is 29 although float64(100)*0.29 is
// 28.999999999999996. p below 0 (or NaN) gives 0, p above 1 gives n−1, and
// n < 1 gives 0.
func Rank(n int64, p float64) int64 {
	if n < 1 || !(p > 0) {
		return 0
	}
	if p >= 1 {
		return n - 1
	}
	q := uint64(math.Round(p * rankScale)) // in [0, rankScale]
	hi, lo := bits.Mul64(uint64(n-1), q)
	r, _ := bits.Div64(hi, lo, rankScale) // hi < rankScale since q <= rankScale
	return int64(r)
}

// ExactPercentile returns the sample at index Rank(len(sorted), p) of sorted,
// which must be in ascending order; 0 for an empty slice.
func ExactPercentile(sorted []int64, p float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[Rank(int64(len(sorted)), p)]
}
