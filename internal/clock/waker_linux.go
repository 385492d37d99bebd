//go:build linux

package clock

import (
	"errors"
	"math"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// monoBaseNs is CLOCK_MONOTONIC at the instant of base, so that
// process-clock deadlines convert to timerfd absolute times; it is off by
// at most monoBaseErrNs.
var monoBaseNs, monoBaseErrNs = monoBase()

// monoBase reads CLOCK_MONOTONIC between two readings of the process
// clock, a few times, and keeps the pair closest together: a thread
// preempted between two readings (milliseconds on a busy machine) would
// otherwise shift every timerfd deadline by that much — early timers that
// a shard then spins through, or re-arms until its deadline is reached.
func monoBase() (ns, errNs int64) {
	best, bestGap := int64(0), int64(-1)
	for range 8 {
		var ts unix.Timespec
		before := int64(time.Since(base))
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			return 0, math.MaxInt64
		}
		after := int64(time.Since(base))
		if gap := after - before; bestGap < 0 || gap < bestGap {
			best, bestGap = ts.Nano()-(before+gap/2), gap
		}
	}
	return best, bestGap/2 + 1
}

// Mono converts a reading of the process clock (Real) to CLOCK_MONOTONIC
// nanoseconds, the time base of timerfd's absolute deadlines.
func (RealClock) Mono(ns int64) int64 { return monoBaseNs + (ns - baseEpochNs) }

type timerfdWaker struct {
	f   *os.File
	rc  syscall.RawConn
	buf [8]byte

	// The settime callback and its argument and result live here, under
	// armMu, so that Arm does not allocate a closure on every call.
	armMu   sync.Mutex
	spec    unix.ItimerSpec
	setErr  error
	setTime func(fd uintptr)
}

var _ Waker = (*timerfdWaker)(nil)

// newWaker returns a timerfd-backed Waker on Linux, or a timer-backed one if
// timerfd is unavailable.
func newWaker() Waker {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return newTimerWaker()
	}
	// A non-blocking fd wrapped by os.NewFile is registered with the
	// runtime netpoller, so Read parks the goroutine instead of a thread.
	w := &timerfdWaker{f: os.NewFile(uintptr(fd), "timerfd")}
	rc, err := w.f.SyscallConn()
	if err != nil {
		w.f.Close()
		return newTimerWaker()
	}
	w.rc = rc
	w.setTime = func(fd uintptr) {
		w.setErr = unix.TimerfdSettime(int(fd), unix.TFD_TIMER_ABSTIME, &w.spec, nil)
	}
	return w
}

func (w *timerfdWaker) Arm(deadline int64) error {
	mono := Real.Mono(deadline)
	if mono <= 0 {
		mono = 1 // zero would disarm the timer
	}
	w.armMu.Lock()
	defer w.armMu.Unlock()
	w.spec = unix.ItimerSpec{Value: unix.NsecToTimespec(mono)}
	if err := w.rc.Control(w.setTime); err != nil {
		return err
	}
	return w.setErr
}

func (w *timerfdWaker) Wait() error {
	_, err := w.f.Read(w.buf[:])
	if errors.Is(err, os.ErrClosed) {
		return ErrClosed
	}
	return err
}

func (w *timerfdWaker) Close() error { return w.f.Close() }
