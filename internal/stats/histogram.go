package stats

import "math/bits"

// histogram counts samples in HdrHistogram's geometry for 1 ns to 1 h at 3
// significant digits (the flat index of its counts array: bucketAt and
// countsIndex), with the counts in chunks of chunkLen made on first use.
// HdrHistogram's own Histogram allocates its whole counts array (264 KiB)
// at once and copies it to export it: at the end of a short run the dozen
// metrics of a batch made and copied ~7 MB of fresh memory, most of the
// CPU of a -c 1 run's start and end (docs/PERF.md); the samples of one
// metric usually fall in a few chunks of 8 KiB.
type histogram struct {
	chunks [histogramChunks]*[chunkLen]int64
	totals [histogramChunks]int64 // the sum of each chunk's counts
}

// The chunks: one per run of 1024 indexes, i.e. per half bucket of
// HdrHistogram (its subBucketHalfCount); 33 cover its 33792 counts.
const (
	chunkBits       = subBucketBits - 1
	chunkLen        = 1 << chunkBits
	histogramChunks = 33
)

// countsIndex is the index at which HdrHistogram counts v (0 <= v <=
// HistogramHighestNs), the inverse of bucketAt: below 2048 every value has
// its own index; above, a value of bit length L is counted with its top 11
// bits, in the run of 1024 indexes for length L.
func countsIndex(v int64) int {
	shift := bits.Len64(uint64(v)) - subBucketBits
	if shift <= 0 {
		return int(v)
	}
	return shift<<chunkBits + int(v>>shift)
}

// record counts n samples of value v (0 <= v <= HistogramHighestNs). It
// allocates only the first time a chunk is used.
func (h *histogram) record(v, n int64) {
	i := countsIndex(v)
	c := i >> chunkBits
	if h.chunks[c] == nil {
		h.chunks[c] = new([chunkLen]int64)
	}
	h.chunks[c][i&(chunkLen-1)] += n
	h.totals[c] += n
}

// valueAtRank returns the lowest value of the bucket that holds the sample
// of 0-based rank r (0 <= r < the total count) in ascending order.
func (h *histogram) valueAtRank(r int64) int64 {
	var below int64
	for c, total := range h.totals {
		if below+total <= r {
			below += total
			continue
		}
		for j, n := range h.chunks[c] {
			if below += n; below > r {
				return bucketAt(c<<chunkBits + j)
			}
		}
	}
	return HistogramHighestNs // not reached while r is below the total
}

// count returns the count at index i.
func (h *histogram) count(i int) int64 {
	if c := h.chunks[i>>chunkBits]; c != nil {
		return c[i&(chunkLen-1)]
	}
	return 0
}

// add adds o's counts to h's (o may be h).
func (h *histogram) add(o *histogram) {
	for c, oc := range o.chunks {
		if oc == nil {
			continue
		}
		if h.chunks[c] == nil {
			h.chunks[c] = new([chunkLen]int64)
		}
		hc := h.chunks[c]
		for j := range oc {
			hc[j] += oc[j]
		}
		h.totals[c] += o.totals[c]
	}
}

// each calls f with every index whose count is not zero, in ascending
// order, and that count.
func (h *histogram) each(f func(i int, n int64)) {
	for c, chunk := range h.chunks {
		if chunk == nil || h.totals[c] == 0 {
			continue
		}
		for j, n := range chunk {
			if n != 0 {
				f(c<<chunkBits+j, n)
			}
		}
	}
}
