package clock

import (
	"sync"
	"testing"
	"time"
)

// TestWakerWakes checks the behaviour, not the precision: Wait returns after
// an armed deadline, re-arming earlier from another goroutine wakes the
// waiter, and Close releases it. Precision lives in BenchmarkWakeLateness.
func TestWakerWakes(t *testing.T) {
	for name, w := range map[string]Waker{"default": Real.NewWaker(), "timer": NewTimerWaker()} {
		t.Run(name, func(t *testing.T) {
			deadline := Real.Now() + int64(2*time.Millisecond)
			if err := w.Arm(deadline); err != nil {
				t.Fatal(err)
			}
			if err := w.Wait(); err != nil {
				t.Fatal(err)
			}
			if now := Real.Now(); now < deadline {
				t.Errorf("Wait returned %d ns before the deadline", deadline-now)
			}
			// Armed far away, then re-armed to now from another goroutine.
			// The pause lets the waiter block first, most likely; the
			// other order (a deadline already past when Wait begins) must
			// wake it too, so no outcome depends on it.
			w.Arm(Real.Now() + int64(time.Hour))
			go func() { time.Sleep(10 * time.Millisecond); w.Arm(Real.Now()) }()
			done := make(chan error)
			go func() { done <- w.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("re-arming to an earlier deadline did not wake the waiter")
			}
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.Arm(Real.Now() + int64(time.Hour))
				if err := w.Wait(); err == nil {
					t.Error("Wait returned nil after Close")
				}
			}()
			time.Sleep(20 * time.Millisecond) // most likely inside Wait; a Wait after Close must fail too
			w.Close()
			wg.Wait()
		})
	}
}

// BenchmarkWakeLateness reports how late Wait returns after a 1 ms deadline
// (ns/op is dominated by the 1 ms; see the late-ns metric).
func BenchmarkWakeLateness(b *testing.B) {
	for name, mk := range map[string]func() Waker{"timerfd": Real.NewWaker, "timer": NewTimerWaker} {
		b.Run(name, func(b *testing.B) {
			w := mk()
			defer w.Close()
			var late, worst int64
			n := 0
			for b.Loop() {
				d := Real.Now() + int64(time.Millisecond)
				w.Arm(d)
				w.Wait()
				l := Real.Now() - d
				late += l
				worst = max(worst, l)
				n++
			}
			b.ReportMetric(float64(late)/float64(n), "late-ns")
			b.ReportMetric(float64(worst), "worst-late-ns")
		})
	}
}

// BenchmarkNow is a reading of the process clock: called on Real, and
// through a Clock interface holding Real, as the sessions and shards that
// store their clock once make it per token.
func BenchmarkNow(b *testing.B) {
	b.Run("direct", func(b *testing.B) {
		var s int64
		for b.Loop() {
			s += Real.Now()
		}
		sink = s
	})
	b.Run("interface", func(b *testing.B) {
		var c Clock = Real
		var s int64
		for b.Loop() {
			s += c.Now()
		}
		sink = s
	})
}

var sink int64
