package schedule

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
)

// Arrival processes of an open-loop batch, by the names the --arrival flag
// takes.
const (
	ArrivalConstant = "constant" // one request every 1/rate seconds exactly
	ArrivalPoisson  = "poisson"  // exponential gaps of mean 1/rate: a Poisson process
)

// RateResolution is the finest rate a constant schedule represents, in
// requests per second: a rate is rounded to a whole number of
// micro-requests per second, so that every deadline is exact integer maths.
const RateResolution = 1e-6

// Errors returned by NewArrivals and CheckArrival.
var (
	ErrArrival = errors.New("unknown arrival process (want constant or poisson)")
	ErrRate    = errors.New("rate must be a finite number of requests per second >= 1e-6")
)

// Arrivals yields the start deadlines of an open-loop batch in order:
// absolute process-clock nanoseconds, non-decreasing, the first at the
// schedule's start. Next never sleeps; the caller waits for each deadline.
type Arrivals interface {
	Next() int64
}

// The arrival processes.
var (
	_ Arrivals = (*Constant)(nil)
	_ Arrivals = (*Poisson)(nil)
	_ Arrivals = (*Offsets)(nil)
)

// CheckArrival reports whether kind names an arrival process; "" is
// ArrivalConstant.
func CheckArrival(kind string) error {
	switch kind {
	case "", ArrivalConstant, ArrivalPoisson:
		return nil
	}
	return fmt.Errorf("%w: %q", ErrArrival, kind)
}

// NewArrivals returns the schedule of kind ("" is ArrivalConstant) starting
// at start, rate requests per second; seed fixes the Poisson gaps (one seed,
// one schedule) and is ignored by a constant schedule.
func NewArrivals(kind string, start int64, rate float64, seed uint64) (Arrivals, error) {
	if err := CheckArrival(kind); err != nil {
		return nil, err
	}
	if kind == ArrivalPoisson {
		return NewPoisson(start, rate, seed)
	}
	return NewConstant(start, rate)
}

func checkRate(rate float64) error {
	if !(rate >= RateResolution) || math.IsInf(rate, 1) {
		return fmt.Errorf("%w: %v", ErrRate, rate)
	}
	return nil
}

// nsPerSecScaled is one second in nanoseconds times 1/RateResolution: the
// numerator of k/rate when the rate is in micro-requests per second.
const nsPerSecScaled = 1e9 * 1e6

// Constant is a constant-rate schedule: arrival k (from 0) is due at
// Start + floor(k·1e9/rate) ns, computed from k in 128-bit integer maths,
// never by adding up rounded periods, so that it does not drift: arrival
// k·rate is exactly k seconds after the start whatever the rate's period
// rounds to.
type Constant struct {
	start int64
	micro uint64 // the rate in micro-requests per second
	k     uint64 // index of the next arrival
}

// NewConstant returns the constant schedule of rate requests per second
// (rounded to RateResolution) starting at start.
func NewConstant(start int64, rate float64) (*Constant, error) {
	if err := checkRate(rate); err != nil {
		return nil, err
	}
	m := math.Round(rate / RateResolution)
	micro := uint64(math.MaxUint64)
	if m < math.MaxUint64 {
		micro = uint64(m)
	}
	return &Constant{start: start, micro: micro}, nil
}

// Deadline returns when arrival k (from 0) is due, saturating at
// math.MaxInt64 instead of overflowing.
func (c *Constant) Deadline(k int) int64 {
	if k <= 0 {
		return c.start
	}
	hi, lo := bits.Mul64(uint64(k), nsPerSecScaled)
	if hi >= c.micro { // quotient beyond 64 bits
		return math.MaxInt64
	}
	off, _ := bits.Div64(hi, lo, c.micro)
	return addSat(c.start, off)
}

// Next returns the deadline of the next arrival.
func (c *Constant) Next() int64 {
	d := c.Deadline(int(min(c.k, math.MaxInt)))
	c.k++
	return d
}

// Poisson is a Poisson arrival schedule: the first arrival is due at the
// start, then the gaps are independent exponential variates of mean 1/rate,
// drawn from a PCG generator seeded with the schedule's seed. The gaps are
// summed in float64 nanoseconds (0.125 ns resolution for eleven days) and
// each deadline is start plus the rounded sum, so rounding does not
// accumulate either.
type Poisson struct {
	start int64
	mean  float64 // mean gap in ns
	off   float64 // offset of the next arrival from start, ns
	rng   *rand.Rand
}

// pcgStream is the PCG stream constant paired with the seed.
const pcgStream = 0x9e3779b97f4a7c15

// NewPoisson returns the Poisson schedule of rate requests per second
// starting at start, its gaps fixed by seed.
func NewPoisson(start int64, rate float64, seed uint64) (*Poisson, error) {
	if err := checkRate(rate); err != nil {
		return nil, err
	}
	return &Poisson{start: start, mean: 1e9 / rate, rng: rand.New(rand.NewPCG(seed, pcgStream))}, nil
}

// Next returns the deadline of the next arrival.
func (p *Poisson) Next() int64 {
	var d int64 = math.MaxInt64
	if r := math.Round(p.off); r < math.MaxInt64 {
		d = addSat(p.start, uint64(r))
	}
	p.off += p.rng.ExpFloat64() * p.mean
	return d
}

// addSat returns start+off, saturating at math.MaxInt64.
func addSat(start int64, off uint64) int64 {
	if off > math.MaxInt64 || (start > 0 && int64(off) > math.MaxInt64-start) {
		return math.MaxInt64
	}
	return start + int64(off)
}

// Offsets is the schedule of a replayed trace: arrival k is due at the
// start plus its offset (ns from the trace's first request) divided by
// the speed, rounded — computed from the offset, never by adding up
// gaps, so that lateness does not accumulate. Past the last offset every
// deadline is math.MaxInt64 (never due).
type Offsets struct {
	start   int64
	offsets []int64
	speed   float64
	k       int
}

// NewOffsets returns the schedule of offsets (non-decreasing ns) replayed
// at speed (> 0: 2 replays twice as fast) from start.
func NewOffsets(start int64, offsets []int64, speed float64) (*Offsets, error) {
	if !(speed > 0) || math.IsInf(speed, 1) {
		return nil, fmt.Errorf("schedule: trace speed %v: want a positive finite number", speed)
	}
	return &Offsets{start: start, offsets: offsets, speed: speed}, nil
}

// Deadline returns when arrival k (from 0) is due; math.MaxInt64 past the
// last.
func (o *Offsets) Deadline(k int) int64 {
	if k < 0 || k >= len(o.offsets) {
		return math.MaxInt64
	}
	v := math.Round(float64(o.offsets[k]) / o.speed)
	if v >= math.MaxInt64 {
		return math.MaxInt64
	}
	return addSat(o.start, uint64(max(v, 0)))
}

// Next returns the deadline of the next arrival.
func (o *Offsets) Next() int64 {
	d := o.Deadline(o.k)
	o.k++
	return d
}
