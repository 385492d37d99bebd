//go:build !linux

package clock

// NewWaker returns the portable timer-based Waker on platforms without
// timerfd.
func NewWaker() Waker { return newTimerWaker() }
