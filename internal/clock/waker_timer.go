package clock

import (
	"errors"
	"sync"
	"time"
)

// ErrClosed is returned by Wait once the Waker is closed.
var ErrClosed = errors.New("clock: waker closed")

// timerWaker is the portable Waker, built on time.Timer (millisecond-grade
// on Linux, see Waker).
type timerWaker struct {
	mu     sync.Mutex
	timer  *time.Timer
	fired  chan struct{}
	closed chan struct{}
	once   sync.Once
}

var _ Waker = (*timerWaker)(nil)

func newTimerWaker() *timerWaker {
	return &timerWaker{fired: make(chan struct{}, 1), closed: make(chan struct{})}
}

// NewTimerWaker returns the portable, time.Timer-based Waker of the
// process clock (Real). It is what Real.NewWaker returns on platforms without timerfd; tests and benchmarks use it
// to compare both.
func NewTimerWaker() Waker { return newTimerWaker() }

func (w *timerWaker) Arm(deadline int64) error {
	d := time.Until(Real.ToTime(deadline))
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
	w.timer = time.AfterFunc(d, func() {
		select {
		case w.fired <- struct{}{}:
		default:
		}
	})
	return nil
}

func (w *timerWaker) Wait() error {
	select {
	case <-w.fired:
		return nil
	case <-w.closed:
		return ErrClosed
	}
}

func (w *timerWaker) Close() error {
	w.once.Do(func() {
		close(w.closed)
		w.mu.Lock()
		if w.timer != nil {
			w.timer.Stop()
		}
		w.mu.Unlock()
	})
	return nil
}
