package server

import "math"

// wakeLateness learns how late a shard gets to run after the instant its
// timer was armed for — the wake-up latency of this host under its
// current load, which on virtual machines is tens to hundreds of
// microseconds (an idle vCPU is a halted one) and changes with what else
// runs — and from it how far ahead of a deadline the timer must fire for
// the token to be written on time: the spin the shard then does is the
// difference, so it spins only as long as this host's wake-ups need, not a
// fixed worst case (docs/PERF.md, "Spin").
//
// It keeps a histogram of the recent samples, halved every lateWindow
// samples so that it follows a change of load within a few hundred
// wake-ups, and arms the timer ahead by its 99th percentile: a token is
// late only when its wake-up is later than that, one in a hundred. When
// that is beyond the bound (Config.SpinAhead), by the highest of
// lateQuantiles within it; when even the median is beyond it, the host is
// too busy for a spin to keep the schedule (its wake-ups are later than
// the spin is long), and the timer fires at the deadline: no spin.
type wakeLateness struct {
	bins  [lateBins]uint32 // samples by lateness, lateBinNs wide; the last bin holds the rest
	n     uint32           // samples in bins
	ahead int64            // how early to arm the timer, ns
	max   int64            // ahead's bound
}

const (
	lateBinNs  = 4_000 // ns
	lateBins   = 128   // up to 512 µs
	lateWindow = 512   // samples between two halvings
	// lateEvery is how often (in samples) ahead follows the histogram, and
	// lateFirst how many samples it waits for before the first time.
	lateEvery = 16
	lateFirst = 64
)

// lateQuantiles are the quantiles of the wake-up latency the timer's lead
// may be, the first one within the bound.
var lateQuantiles = [...]float64{0.99, 0.95, 0.9, 0.75, 0.5}

// newWakeLateness returns an estimate that arms the timer max ns ahead of
// a deadline until it has learnt better, and never more.
func newWakeLateness(max int64) wakeLateness {
	return wakeLateness{ahead: max, max: max}
}

// observe records that a shard ran late ns after the instant its timer was
// armed for.
func (w *wakeLateness) observe(late int64) {
	if w.max <= 0 {
		return
	}
	b := min(max(late, 0)/lateBinNs, lateBins-1)
	w.bins[b]++
	w.n++
	if w.n >= lateWindow {
		w.n = 0
		for i := range w.bins {
			w.bins[i] /= 2
			w.n += w.bins[i]
		}
	}
	if w.n >= lateFirst && w.n%lateEvery == 0 {
		w.ahead = 0
		for _, q := range lateQuantiles {
			if v := w.quantile(q); v <= w.max {
				w.ahead = v
				break
			}
		}
	}
}

// quantile returns the upper bound of the bin that holds quantile q of
// the samples; MaxInt64 when that is the last bin, which has none.
func (w *wakeLateness) quantile(q float64) int64 {
	want := uint32(q * float64(w.n))
	var seen uint32
	for i, c := range w.bins[:lateBins-1] {
		if seen += c; seen > want {
			return int64(i+1) * lateBinNs
		}
	}
	return math.MaxInt64
}
