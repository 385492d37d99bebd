// Package clocksync estimates the offset between this process's clock and
// another process's — the dummy server's, on another host — from NTP-style
// exchanges, with a bound on its error. It is pure arithmetic on
// nanosecond readings: the exchanges themselves are made elsewhere
// (package control).
//
// An exchange is the client's clock when it sent a request (Sent), the
// server's clock read while answering it (Server), and the client's clock
// when the answer arrived (Received). Since the server read its clock at
// some instant between the send and the arrival, the true offset
// (server − client) lies in [Server − Received, Server − Sent]: an interval
// as wide as the round trip, whatever the asymmetry of the two directions.
// This bound is exact, not statistical: it holds as long as neither clock
// steps and their rates do not differ during the exchanges.
//
// FromSamples intersects the intervals of a burst of exchanges, taking the
// shortest round trips first (as NTP keeps its lowest-delay samples) and
// leaving out a sample that contradicts those already taken; the offset is
// the middle of the intersection, the bound its half-width. Between bursts
// the clocks may drift apart: a Tracker keeps the run's estimates and
// widens the bound by the largest change between consecutive estimates
// that their own bounds do not explain.
package clocksync

import (
	"errors"
	"slices"
)

// Sample is one exchange: client-clock readings before the request left
// and after the answer arrived, and the server's reading in between, all in
// nanoseconds.
type Sample struct {
	Sent     int64 // client clock, the request about to leave
	Server   int64 // server clock, read while answering
	Received int64 // client clock, the answer arrived
}

// RTT is the round trip of the exchange (ns).
func (s Sample) RTT() int64 { return s.Received - s.Sent }

// Interval returns the offsets (server − client, ns) consistent with the
// exchange.
func (s Sample) Interval() (lo, hi int64) { return s.Server - s.Received, s.Server - s.Sent }

// Estimate is an offset and the bound of its error.
type Estimate struct {
	Offset  int64 // server clock − client clock, ns
	Bound   int64 // the true offset lies within Offset ± Bound, ns
	At      int64 // client clock when the estimate was made (its last answer), ns
	Samples int   // exchanges that agree with it (intersected)
	Dropped int   // exchanges left out: contradicting the others, or invalid
	MinRTT  int64 // the shortest round trip among them, ns
}

// ToClient converts a server-clock reading to the client's clock.
func (e Estimate) ToClient(serverNs int64) int64 { return serverNs - e.Offset }

// ErrNoSample is FromSamples' error when no exchange is usable.
var ErrNoSample = errors.New("clocksync: no usable exchange")

// FromSamples estimates the offset from a burst of exchanges (see the
// package comment). An exchange whose answer arrived before its request
// left (a clock that went back) is unusable; so is one with a zero
// reading. The bound is rounded up to whole nanoseconds.
func FromSamples(samples []Sample) (Estimate, error) {
	var ok []Sample
	dropped := 0
	for _, s := range samples {
		if s.Sent <= 0 || s.Received <= 0 || s.Server <= 0 || s.RTT() < 0 {
			dropped++
			continue
		}
		ok = append(ok, s)
	}
	if len(ok) == 0 {
		return Estimate{}, ErrNoSample
	}
	slices.SortStableFunc(ok, func(a, b Sample) int {
		switch {
		case a.RTT() < b.RTT():
			return -1
		case a.RTT() > b.RTT():
			return 1
		}
		return 0
	})
	lo, hi := ok[0].Interval()
	e := Estimate{Samples: 1, Dropped: dropped, MinRTT: ok[0].RTT(), At: ok[0].Received}
	for _, s := range ok[1:] {
		slo, shi := s.Interval()
		nlo, nhi := max(lo, slo), min(hi, shi)
		if nlo > nhi {
			e.Dropped++
			continue
		}
		lo, hi = nlo, nhi
		e.Samples++
		e.At = max(e.At, s.Received)
	}
	e.Offset = lo + (hi-lo)/2
	e.Bound = hi - e.Offset
	return e, nil
}

// Tracker keeps the estimates of a run: the current one, and what covers
// all of them. The zero Tracker has no estimate. It is not safe for
// concurrent use.
type Tracker struct {
	last     Estimate
	n        int
	maxBound int64 // the largest bound of an estimate
	drift    int64 // the largest unexplained change between consecutive estimates
	minRTT   int64
}

// Add records a new estimate, made after the earlier ones. When its offset
// differs from the previous one by more than their two bounds together,
// the clocks drifted apart (or one stepped) by at least the difference in
// between: every later bound is widened by it, as a reading corrected with
// an estimate may have drifted as much by the time of the next.
func (t *Tracker) Add(e Estimate) {
	if t.n > 0 {
		diff := e.Offset - t.last.Offset
		if diff < 0 {
			diff = -diff
		}
		t.drift = max(t.drift, diff-e.Bound-t.last.Bound)
		t.minRTT = min(t.minRTT, e.MinRTT)
	} else {
		t.minRTT = e.MinRTT
	}
	t.last = e
	t.n++
	t.maxBound = max(t.maxBound, e.Bound)
}

// Len is the number of estimates added.
func (t *Tracker) Len() int { return t.n }

// Current is the latest estimate, its bound widened by the drift seen so
// far: what a reading corrected now carries. ok is false before the first
// estimate.
func (t *Tracker) Current() (e Estimate, ok bool) {
	if t.n == 0 {
		return Estimate{}, false
	}
	e = t.last
	e.Bound += t.drift
	return e, true
}

// Summary is what a run reports of its clock offset.
type Summary struct {
	Offset    int64 // the latest estimate's offset (server − client), ns
	Bound     int64 // covers every reading corrected during the run: the largest bound plus the drift, ns
	Drift     int64 // the largest change between consecutive estimates beyond their bounds, ns
	Estimates int   // estimates made (bursts of exchanges)
	MinRTT    int64 // the shortest round trip of any exchange, ns
}

// Summary returns the run's figures; ok is false before the first
// estimate.
func (t *Tracker) Summary() (s Summary, ok bool) {
	if t.n == 0 {
		return Summary{}, false
	}
	return Summary{Offset: t.last.Offset, Bound: t.maxBound + t.drift, Drift: t.drift, Estimates: t.n, MinRTT: t.minRTT}, true
}
