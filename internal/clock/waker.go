package clock

// Waker blocks a goroutine until an absolute process-clock deadline, with
// finer resolution than Go's timers where the platform allows it.
//
// Go's timers are driven by the runtime netpoller, whose epoll timeout on
// Linux is expressed in whole milliseconds, so a time.Sleep or time.Timer
// can wake up to ~1 ms late. On Linux a Waker instead arms a timerfd
// (CLOCK_MONOTONIC, TFD_TIMER_ABSTIME) that the netpoller watches like a
// socket: the goroutine wakes within microseconds of the deadline. Elsewhere
// it falls back to a time.Timer.
//
// A Waker may be re-armed from any goroutine (Arm) while one goroutine waits
// in Wait; Wait returns when the currently armed deadline passes.
type Waker interface {
	// Arm sets the absolute deadline (process-clock ns) at which the waiting
	// goroutine wakes, replacing any earlier setting. A deadline in the past
	// wakes it at once.
	Arm(deadline int64) error
	// Wait blocks until the armed deadline passes or the Waker is closed.
	Wait() error
	// Close releases the Waker; a blocked Wait returns an error.
	Close() error
}
