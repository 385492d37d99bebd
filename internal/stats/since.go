package stats

// Since returns the samples after holds that before did not, for a metric
// that only grew since before was taken from it (a copy, or a Snapshot
// rebuilt): the sweep's per-step emission lateness from the server's
// running one. Counts, sums and every histogram bucket are exact
// differences. The minimum and maximum are after's when they fall in the
// lowest and highest buckets of the difference (exact when the extreme
// sample is new); otherwise the bounds of those buckets, within the
// histogram's resolution of the true extremes. A before that is not a
// part of after gives a metric of whatever the differences leave (never
// negative counts). A nil before is empty.
func Since(after, before *Metric) *Metric {
	out := NewMetric()
	if after == nil || after.n == 0 {
		return out
	}
	var prev *histogram // before's counts
	if before != nil && before.n > 0 {
		prev = before.h
		out.n, out.sum, out.sumSq, out.negative = after.n-before.n, after.sum-before.sum, after.sumSq-before.sumSq, after.negative-before.negative
	} else {
		out.n, out.sum, out.sumSq, out.negative = after.n, after.sum, after.sumSq, after.negative
	}
	var total int64
	lo, hi := int64(-1), int64(-1)
	after.h.each(func(i int, n int64) {
		c := n
		if prev != nil {
			c -= prev.count(i)
		}
		if c <= 0 {
			return
		}
		from := bucketAt(i)
		out.hist().record(from, c)
		total += c
		if lo < 0 {
			lo = from
		}
		hi = from
	})
	if total == 0 {
		return NewMetric()
	}
	// The exact fields follow the histogram, which is the authority here.
	out.n, out.negative = total, min(max(out.negative, 0), total)
	out.sumSq = max(out.sumSq, 0)
	loFrom, _ := bucketBounds(lo)
	_, hiTo := bucketBounds(hi)
	out.min, out.max = loFrom, hiTo
	if m := histogramValue(after.min); m >= loFrom && bucketOf(m) == loFrom {
		out.min = after.min
	}
	if out.negative > 0 {
		out.min = min(after.min, 0)
	}
	if m := histogramValue(after.max); bucketOf(m) == hi {
		out.max = after.max
	}
	return out
}

// bucketOf is the lower bound of the bucket v is counted in.
func bucketOf(v int64) int64 {
	lo, _ := bucketBounds(v)
	return lo
}
