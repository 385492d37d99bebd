//go:build linux

package clock

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestMonoMatchesTheKernelClock: Mono of a process-clock reading lies
// between the CLOCK_MONOTONIC readings taken around it, give or take the
// error monoBase bounds itself to — not off by a preemption between its
// readings, as it could be.
func TestMonoMatchesTheKernelClock(t *testing.T) {
	for range 100 {
		var before, after unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &before); err != nil {
			t.Fatal(err)
		}
		m := Real.Mono(Real.Now())
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &after); err != nil {
			t.Fatal(err)
		}
		if m < before.Nano()-monoBaseErrNs || m > after.Nano()+monoBaseErrNs {
			t.Fatalf("Real.Mono(Real.Now()) = %d, outside [%d, %d] widened by the base's error %d ns",
				m, before.Nano(), after.Nano(), monoBaseErrNs)
		}
	}
}
