package clock

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestFakeWakesAtItsDeadline: a Fake's Waker wakes when the clock is set
// to its deadline and not before; Next reports the deadline of a goroutine
// waiting, and only once it waits; Close releases a waiter with ErrClosed.
func TestFakeWakesAtItsDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := NewFake(1000)
	w := f.NewWaker()
	if err := w.Arm(1500); err != nil {
		t.Fatal(err)
	}
	if n := f.Waiters(); n != 0 {
		t.Fatalf("Waiters() = %d before any Wait, want 0", n)
	}
	done := make(chan error, 1)
	go func() { done <- w.Wait() }()
	next, err := f.Next(ctx)
	if err != nil || next != 1500 {
		t.Fatalf("Next() = %d, %v; want 1500, nil", next, err)
	}
	f.Set(1499)
	select {
	case err := <-done:
		t.Fatalf("Wait returned (%v) at 1499, before the deadline 1500", err)
	default:
	}
	// Still waiting, for the same deadline: Next says so again.
	if next, err := f.Next(ctx); err != nil || next != 1500 {
		t.Fatalf("Next() after Set(1499) = %d, %v; want 1500, nil", next, err)
	}
	f.Advance(1)
	if err := <-done; err != nil {
		t.Fatalf("Wait at the deadline: %v", err)
	}
	if got := f.Now(); got != 1500 {
		t.Errorf("Now() = %d after Set(1499) and Advance(1), want 1500", got)
	}

	// A deadline already passed wakes the next Wait at once.
	if err := w.Arm(1400); err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(); err != nil {
		t.Fatalf("Wait for a past deadline: %v", err)
	}

	w.Arm(1 << 62)
	go func() { done <- w.Wait() }()
	if _, err := f.Next(ctx); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Errorf("Wait after Close = %v, want ErrClosed", err)
	}
	if err := w.Arm(2000); !errors.Is(err, ErrClosed) {
		t.Errorf("Arm after Close = %v, want ErrClosed", err)
	}
	short, stop := context.WithCancel(ctx)
	stop()
	if _, err := f.Next(short); err == nil {
		t.Error("Next with no waiter and a cancelled context returned no error")
	}
}

// TestOffsetShiftsEveryReading: an Offset clock reads Real plus its shift,
// converts to and from time.Time and the real frame consistently, and its
// Waker wakes at shifted deadlines.
func TestOffsetShiftsEveryReading(t *testing.T) {
	const shift = int64(2 * time.Second)
	o := Offset{Ns: shift}
	before := Real.Now()
	got := o.Now()
	after := Real.Now()
	if got < before+shift || got > after+shift {
		t.Errorf("Offset.Now() = %d, want within [%d, %d]", got, before+shift, after+shift)
	}
	ns := Real.Now()
	if back := o.FromTime(o.ToTime(ns)); back != ns {
		t.Errorf("FromTime(ToTime(%d)) = %d", ns, back)
	}
	if r := ToReal(o, ns); r != ns-shift {
		t.Errorf("ToReal(offset, %d) = %d, want %d", ns, r, ns-shift)
	}
	if r := FromReal(o, ns); r != ns+shift {
		t.Errorf("FromReal(offset, %d) = %d, want %d", ns, r, ns+shift)
	}
	if r := ToReal(Real, ns); r != ns {
		t.Errorf("ToReal(Real, %d) = %d", ns, r)
	}
	w := o.NewWaker()
	defer w.Close()
	deadline := o.Now() + int64(time.Millisecond)
	if err := w.Arm(deadline); err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(); err != nil {
		t.Fatal(err)
	}
	if now := o.Now(); now < deadline {
		t.Errorf("the Offset's Waker woke %d ns before its deadline", deadline-now)
	}
}
