// Package lengths is the length distributions of -n (tokens per response)
// and --prompt-bytes (prompt size): a plain number, as the reference
// takes it, or a distribution each request draws its own length from —
// fixed:200, uniform:50-500, normal:300,50, lognormal:300,0.5 (median and
// sigma), file:lengths.txt (the lengths of a file, drawn at random).
//
// A draw is a pure function of the seed, the stream (which of the run's
// distributions) and the request's index, never of the order requests
// start or finish in: one seed, one list of lengths, whatever the
// concurrency, and a run repeats exactly.
package lengths

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Bounds of a distribution file: its size, and the lengths it lists.
const (
	MaxFileBytes  = 16 << 20
	MaxFileValues = 1 << 20
	maxLineBytes  = 64
)

// Kinds of distribution, as the spec names them.
const (
	Fixed     = "fixed"
	Uniform   = "uniform"
	Normal    = "normal"
	LogNormal = "lognormal"
	File      = "file"
)

// Syntax is the forms a spec takes, for error messages.
const Syntax = "N, fixed:N, uniform:MIN-MAX, normal:MEAN,STDDEV, lognormal:MEDIAN,SIGMA or file:PATH"

// ErrSpec is wrapped by every error of Parse.
var ErrSpec = errors.New("bad length distribution")

// Dist is a parsed distribution of lengths, each draw rounded to an integer
// and clamped to [Min, Max].
type Dist struct {
	Kind     string
	A, B     float64 // fixed: A; uniform: A..B; normal: mean A, stddev B; lognormal: median A, sigma B
	Values   []int   // file: the lengths listed
	Min, Max int     // the clamp
	spec     string
}

// Parse reads spec, its numbers in units (units parses one: a plain
// integer, or a size with k/m for bytes), each draw clamped to [lo, hi].
// A plain number is the fixed distribution of that number (Plain reports
// it). file:PATH reads the file with readFile: one length a line (blank
// lines and lines starting with # ignored), at most MaxFileValues of them
// in MaxFileBytes; a bad line is named by its number.
func Parse(spec string, lo, hi int, units func(string) (int, error), readFile func(string) ([]byte, error)) (Dist, error) {
	d := Dist{Min: lo, Max: hi, spec: spec}
	kind, args, ok := strings.Cut(spec, ":")
	if !ok {
		n, err := units(spec)
		if err != nil {
			return d, fmt.Errorf("%w: %q (want %s)", ErrSpec, spec, Syntax)
		}
		d.Kind, d.A = Fixed, float64(n)
		return d, d.check()
	}
	d.Kind = kind
	num := func(s string) (float64, error) {
		s = strings.TrimSpace(s)
		if n, err := units(s); err == nil {
			return float64(n), nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("%w: %q in %q is not a number", ErrSpec, s, spec)
		}
		return f, nil
	}
	pair := func(sep string) (float64, float64, error) {
		x, y, ok := strings.Cut(args, sep)
		if !ok {
			return 0, 0, fmt.Errorf("%w: %q wants two numbers separated by %q (%s)", ErrSpec, spec, sep, Syntax)
		}
		a, err := num(x)
		if err != nil {
			return 0, 0, err
		}
		b, err := num(y)
		return a, b, err
	}
	var err error
	switch kind {
	case Fixed:
		d.A, err = num(args)
	case Uniform:
		d.A, d.B, err = pair("-")
	case Normal, LogNormal:
		d.A, d.B, err = pair(",")
	case File:
		if readFile == nil || args == "" {
			return d, fmt.Errorf("%w: %q names no file", ErrSpec, spec)
		}
		var b []byte
		if b, err = readFile(args); err == nil {
			d.Values, err = ParseValues(b, units)
		}
		if err != nil {
			return d, fmt.Errorf("%s: %w", args, err)
		}
	default:
		return d, fmt.Errorf("%w: unknown kind %q (want %s)", ErrSpec, kind, Syntax)
	}
	if err != nil {
		return d, err
	}
	return d, d.check()
}

// check reports a distribution whose parameters make no sense: a fixed
// length or a uniform bound outside [Min, Max], a reversed range, a
// negative spread, a lognormal median that is not positive.
func (d Dist) check() error {
	in := func(v float64) bool { return v >= float64(d.Min) && v <= float64(d.Max) }
	switch d.Kind {
	case Fixed:
		if !in(d.A) {
			return fmt.Errorf("%w: %q: %v is outside %d..%d", ErrSpec, d.spec, d.A, d.Min, d.Max)
		}
	case Uniform:
		if !in(d.A) || !in(d.B) || d.A > d.B {
			return fmt.Errorf("%w: %q: want MIN <= MAX within %d..%d", ErrSpec, d.spec, d.Min, d.Max)
		}
	case Normal:
		if !in(d.A) || d.B < 0 || d.B > float64(d.Max) {
			return fmt.Errorf("%w: %q: want a mean within %d..%d and a standard deviation from 0 to %d", ErrSpec, d.spec, d.Min, d.Max, d.Max)
		}
	case LogNormal:
		if d.A <= 0 || !in(d.A) || d.B < 0 || d.B > 10 {
			return fmt.Errorf("%w: %q: want a median within %d..%d above 0 and a sigma from 0 to 10", ErrSpec, d.spec, max(d.Min, 1), d.Max)
		}
	case File:
		for i, v := range d.Values {
			if v < d.Min || v > d.Max {
				return fmt.Errorf("%w: %q: length %d (the %d-th) is outside %d..%d", ErrSpec, d.spec, v, i+1, d.Min, d.Max)
			}
		}
	}
	return nil
}

// ParseValues reads the lengths of a distribution file: one a line, in
// units; blank lines and # comments ignored. Errors name the line.
func ParseValues(b []byte, units func(string) (int, error)) ([]int, error) {
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("%w: the file has %d bytes, more than %d", ErrSpec, len(b), MaxFileBytes)
	}
	var out []int
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, maxLineBytes), maxLineBytes)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || s[0] == '#' {
			continue
		}
		n, err := units(s)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %q is not a length", ErrSpec, line, clip(s))
		}
		if len(out) == MaxFileValues {
			return nil, fmt.Errorf("%w: more than %d lengths", ErrSpec, MaxFileValues)
		}
		out = append(out, n)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: line %d: longer than %d bytes", ErrSpec, line+1, maxLineBytes)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no lengths in the file", ErrSpec)
	}
	return out, nil
}

func clip(s string) string {
	if len(s) > 20 {
		return s[:20] + "…"
	}
	return s
}

// String is the spec the distribution was parsed from.
func (d Dist) String() string { return d.spec }

// Plain reports whether the spec was a plain number (the reference's
// form), which means exactly what it always did.
func (d Dist) Plain() bool { return d.Kind == Fixed && !strings.Contains(d.spec, ":") }

// Constant reports whether every draw is the same length, and which.
func (d Dist) Constant() (int, bool) {
	switch {
	case d.Kind == Fixed:
		return d.clamp(d.A), true
	case d.Kind == Uniform && d.A == d.B, (d.Kind == Normal || d.Kind == LogNormal) && d.B == 0:
		return d.clamp(d.A), true
	case d.Kind == File && len(d.Values) == 1:
		return d.Values[0], true
	}
	return 0, false
}

// Mean is the mean of the distribution before rounding and clamping (the
// file's mean), a length to announce.
func (d Dist) Mean() float64 {
	switch d.Kind {
	case Uniform:
		return (d.A + d.B) / 2
	case LogNormal:
		return d.A * math.Exp(d.B*d.B/2)
	case File:
		sum := 0.0
		for _, v := range d.Values {
			sum += float64(v)
		}
		return sum / float64(max(len(d.Values), 1))
	}
	return d.A
}

// Streams of the run's distributions: the seed's draws for -n and for
// --prompt-bytes are independent.
const (
	StreamTokens uint64 = 1
	StreamPrompt uint64 = 2
)

// Draw returns the length of request i (from 0) in stream stream of a run
// seeded with seed: a pure function of the four, clamped to [Min, Max].
func (d Dist) Draw(seed, stream uint64, i int) int {
	if v, ok := d.Constant(); ok {
		return v
	}
	r := rand.New(rand.NewPCG(seed, mix(stream, uint64(i))))
	switch d.Kind {
	case Uniform:
		lo, hi := math.Round(d.A), math.Round(d.B)
		return d.clamp(lo + float64(r.Int64N(int64(hi-lo)+1)))
	case Normal:
		return d.clamp(d.A + d.B*r.NormFloat64())
	case LogNormal:
		return d.clamp(d.A * math.Exp(d.B*r.NormFloat64()))
	case File:
		return d.Values[r.IntN(len(d.Values))]
	}
	return d.clamp(d.A)
}

// clamp rounds v and clamps it to [Min, Max].
func (d Dist) clamp(v float64) int {
	v = math.Round(v)
	switch {
	case math.IsNaN(v) || v < float64(d.Min):
		return d.Min
	case v > float64(d.Max):
		return d.Max
	}
	return int(v)
}

// mix makes the PCG stream of request i of stream s (splitmix64 of both).
func mix(s, i uint64) uint64 {
	x := s*0x9e3779b97f4a7c15 + i
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
