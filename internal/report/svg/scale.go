package svg

import (
	"math"
	"strconv"
)

// Scale maps data values in [Lo, Hi] to pixels in [From, To]: linearly, or
// linearly in log10 when Log is set (then Lo must be positive). Values
// outside [Lo, Hi] are clamped to the nearer end, and on a log scale values
// at or below zero map to Lo, so nothing is ever drawn outside the plot
// area.
type Scale struct {
	Lo, Hi   float64
	Log      bool
	From, To float64
}

// Map returns the pixel coordinate of v.
func (s Scale) Map(v float64) float64 {
	lo, hi := s.Lo, s.Hi
	if s.Log {
		if v <= 0 {
			v = lo
		}
		v, lo, hi = math.Log10(v), math.Log10(lo), math.Log10(hi)
	}
	if !(hi > lo) {
		return (s.From + s.To) / 2
	}
	t := min(max((v-lo)/(hi-lo), 0), 1)
	return s.From + t*(s.To-s.From)
}

// LinearTicks widens [lo, hi] to whole multiples of a "nice" step — 1, 2,
// 2.5 or 5 times a power of ten — that cuts it into about n intervals (at
// most n, and more than n/2.5), and returns
// the widened range and the ticks at every multiple of the step in it. An
// empty range (hi <= lo) is first widened around its value (to [0, 1] at
// zero, by 10 % of the value otherwise).
func LinearTicks(lo, hi float64, n int) (nlo, nhi float64, ticks []float64) {
	if !(hi > lo) {
		if lo == 0 {
			lo, hi = 0, 1
		} else {
			d := math.Abs(lo) / 10
			lo, hi = lo-d, lo+d
		}
	}
	step := niceStep((hi - lo) / float64(max(n, 1)))
	first, last := math.Floor(lo/step), math.Ceil(hi/step)
	for k := first; k <= last; k++ {
		ticks = append(ticks, k*step)
	}
	return first * step, last * step, ticks
}

// niceStep returns the smallest of 1, 2, 2.5, 5 or 10 times a power of ten
// that is at least raw (raw > 0).
func niceStep(raw float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, f := range []float64{1, 2, 2.5, 5} {
		if raw <= f*p*(1+1e-9) {
			return f * p
		}
	}
	return 10 * p
}

// maxLogLabels is the number of decade ticks above which LogTicks keeps
// every other decade only.
const maxLogLabels = 8

// LogTicks widens [lo, hi] (lo > 0; a non-positive lo is read as hi/10) to
// whole decades, at least one, and returns the widened range and its ticks:
// every decade (every other one past maxLogLabels decades), plus 2× and 5×
// each decade when the range spans at most two.
func LogTicks(lo, hi float64) (nlo, nhi float64, ticks []float64) {
	if !(hi > 0) {
		hi = 1
	}
	if !(lo > 0) || lo > hi {
		lo = hi / 10
	}
	klo, khi := int(math.Floor(math.Log10(lo))), int(math.Ceil(math.Log10(hi)))
	if khi == klo {
		khi++
	}
	every := 1
	if khi-klo+1 > maxLogLabels {
		every = 2
	}
	for k := klo; k <= khi; k++ {
		if (k-klo)%every != 0 {
			continue
		}
		d := math.Pow10(k)
		ticks = append(ticks, d)
		if khi-klo <= 2 && k < khi {
			ticks = append(ticks, 2*d, 5*d)
		}
	}
	return math.Pow10(klo), math.Pow10(khi), ticks
}

// FormatTick prints a tick value briefly and without float noise: rounded
// to 6 significant digits, in plain decimals from 0.0001 to below 10⁶
// ("0.001", "2.5", "100000"), in exponent form beyond ("1e-05", "1e+06").
func FormatTick(v float64) string {
	if v == 0 {
		return "0"
	}
	v, _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	if a := math.Abs(v); a < 1e-4 || a >= 1e6 {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
