//go:build !linux

package clock

// newWaker returns the portable timer-based Waker on platforms without
// timerfd.
func newWaker() Waker { return newTimerWaker() }
