// Package clock is the one process clock shared by the dummy server and the
// client. It reads as integer nanoseconds since the Unix epoch, so that pi_ts
// stays compatible with the reference tool on the wire, but every reading is
// derived from a single monotonic base taken when the process starts: a step
// of the wall clock during a run cannot make a delay negative or jump.
package clock

import "time"

// base is the process clock's origin: its wall reading gives the epoch
// offset, its monotonic reading gives every later value.
var (
	base        = time.Now()
	baseEpochNs = base.UnixNano()
)

// Now returns the current time in nanoseconds since the Unix epoch, derived
// from the monotonic base. It does not allocate and costs one vDSO clock read.
func Now() int64 { return baseEpochNs + int64(time.Since(base)) }

// FromTime converts t (which must carry a monotonic reading, as values from
// time.Now do) to the process clock.
func FromTime(t time.Time) int64 { return baseEpochNs + int64(t.Sub(base)) }

// ToTime converts a process-clock reading back to a time.Time with a
// monotonic reading, usable with time.Until and deadlines.
func ToTime(ns int64) time.Time { return base.Add(time.Duration(ns - baseEpochNs)) }
