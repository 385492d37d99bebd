// Package clock is the clock shared by the dummy server and the client,
// as a value passed in (Clock): the real process clock (Real), a shifted
// one (Offset, for tests of runs across hosts) and a manually advanced one
// (Fake, for tests that would otherwise wait for real time).
//
// Readings are integer nanoseconds since the Unix epoch, so that pi_ts
// stays compatible with the reference tool on the wire, but every reading
// of Real is derived from a single monotonic base taken when the process
// starts: a step of the wall clock during a run cannot make a delay
// negative or jump.
package clock

import "time"

// Clock is a source of process-clock readings (ns since the Unix epoch)
// and of Wakers that wait for them. Real is the clock of every run; a nil
// Clock in a config means Real (see Or).
type Clock interface {
	// Now returns the current reading.
	Now() int64
	// ToTime converts a reading to a time.Time usable with deadlines of
	// the network and time.Until (one with a monotonic reading).
	ToTime(ns int64) time.Time
	// FromTime converts t (a time.Time with a monotonic reading, as
	// time.Now returns) to a reading of this clock.
	FromTime(t time.Time) int64
	// NewWaker returns a Waker whose deadlines are readings of this clock.
	NewWaker() Waker
}

// base is the real clock's origin, taken once when the process starts and
// never changed: its wall reading gives the epoch offset, its monotonic
// reading gives every later value. It is the one origin that makes every
// RealClock in the process agree.
var (
	base        = time.Now()
	baseEpochNs = base.UnixNano()
)

// RealClock is the process clock (see the package comment). It has no
// state: every RealClock reads the same clock.
type RealClock struct{}

// Real is the process clock.
var Real = RealClock{}

var (
	_ Clock = RealClock{}
	_ Clock = Offset{}
	_ Clock = (*Fake)(nil)
)

// Or returns c, or Real when c is nil: what a config with no clock set
// means.
func Or(c Clock) Clock {
	if c == nil {
		return Real
	}
	return c
}

// Now returns the current time in nanoseconds since the Unix epoch, derived
// from the monotonic base. It does not allocate and costs one vDSO clock read.
func (RealClock) Now() int64 { return baseEpochNs + int64(time.Since(base)) }

// FromTime converts t (which must carry a monotonic reading, as values from
// time.Now do) to the process clock.
func (RealClock) FromTime(t time.Time) int64 { return baseEpochNs + int64(t.Sub(base)) }

// ToTime converts a process-clock reading back to a time.Time with a
// monotonic reading, usable with time.Until and deadlines.
func (RealClock) ToTime(ns int64) time.Time { return base.Add(time.Duration(ns - baseEpochNs)) }

// NewWaker returns a Waker of the process clock: a timerfd on Linux, a
// time.Timer elsewhere (see Waker).
func (RealClock) NewWaker() Waker { return newWaker() }

// ToReal converts a reading of c to a reading of Real: the frame of the
// event loops' timers and deadlines (internal/evloop), which know no other
// clock. It is the identity for Real.
func ToReal(c Clock, ns int64) int64 {
	if _, ok := c.(RealClock); ok || c == nil {
		return ns
	}
	return Real.FromTime(c.ToTime(ns))
}

// FromReal converts a reading of Real to a reading of c: the inverse of
// ToReal.
func FromReal(c Clock, ns int64) int64 {
	if _, ok := c.(RealClock); ok || c == nil {
		return ns
	}
	return c.FromTime(Real.ToTime(ns))
}

// Offset is Base (Real when nil) shifted by Ns nanoseconds: the clock of
// a process whose host clock differs from another's by a known amount, as
// the tests of runs across hosts build it (a binary built with the
// sselatency_testclock tag, see internal/cli).
type Offset struct {
	Base Clock
	Ns   int64
}

// Now returns Base's reading plus Ns.
func (o Offset) Now() int64 { return Or(o.Base).Now() + o.Ns }

// ToTime converts a shifted reading to a time.Time of Base.
func (o Offset) ToTime(ns int64) time.Time { return Or(o.Base).ToTime(ns - o.Ns) }

// FromTime converts t to a shifted reading.
func (o Offset) FromTime(t time.Time) int64 { return Or(o.Base).FromTime(t) + o.Ns }

// NewWaker returns a Waker of Base whose deadlines are shifted readings.
func (o Offset) NewWaker() Waker { return offsetWaker{Or(o.Base).NewWaker(), o.Ns} }

// offsetWaker is a Waker taking deadlines shifted by ns.
type offsetWaker struct {
	Waker
	ns int64
}

func (w offsetWaker) Arm(deadline int64) error { return w.Waker.Arm(deadline - w.ns) }
