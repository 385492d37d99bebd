//go:build linux

package clock

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// monoBaseNs is CLOCK_MONOTONIC at (about) the same instant as base, so that
// process-clock deadlines convert to timerfd absolute times.
var monoBaseNs = func() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	// Adjust for the time elapsed since base was taken.
	return ts.Nano() - int64(time.Since(base))
}()

type timerfdWaker struct {
	f   *os.File
	buf [8]byte
}

// NewWaker returns a timerfd-backed Waker on Linux, or a timer-backed one if
// timerfd is unavailable.
func NewWaker() Waker {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return newTimerWaker()
	}
	// A non-blocking fd wrapped by os.NewFile is registered with the
	// runtime netpoller, so Read parks the goroutine instead of a thread.
	return &timerfdWaker{f: os.NewFile(uintptr(fd), "timerfd")}
}

func (w *timerfdWaker) Arm(deadline int64) error {
	mono := monoBaseNs + (deadline - baseEpochNs)
	if mono <= 0 {
		mono = 1 // zero would disarm the timer
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(mono)}
	rc, err := w.f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.TimerfdSettime(int(fd), unix.TFD_TIMER_ABSTIME, &spec, nil)
	}); err != nil {
		return err
	}
	return serr
}

func (w *timerfdWaker) Wait() error {
	_, err := w.f.Read(w.buf[:])
	if errors.Is(err, os.ErrClosed) {
		return ErrClosed
	}
	return err
}

func (w *timerfdWaker) Close() error { return w.f.Close() }
