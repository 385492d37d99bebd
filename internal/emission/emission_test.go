package emission

import (
	"strconv"
	"testing"
	"time"
)

func TestStartSetTake(t *testing.T) {
	r := New()
	tm := r.Start("a", 3)
	tm.Set(0, 10)
	tm.Set(2, 30)
	tm.Set(5, 99) // out of range: ignored
	tm.Finish()
	got := r.Take("a")
	if got == nil || got.Len() != 3 || got.At(0) != 10 || got.At(1) != 0 || got.At(2) != 30 || got.At(5) != 0 {
		t.Fatalf("Take(a) = %+v, want times 10, 0, 30", got)
	}
	if r.Take("a") != nil || r.Len() != 0 {
		t.Error("an entry survived Take")
	}
	var nilReg *Registry
	if nilReg.Start("x", 1) != nil || nilReg.Take("x") != nil {
		t.Error("a nil Registry recorded something")
	}
	if r.Start("", 5) != nil {
		t.Error("an empty id got an entry")
	}
}

func TestBounded(t *testing.T) {
	r := &Registry{TTL: time.Nanosecond, MaxEntries: 10}
	for i := 0; i < 1000; i++ {
		tm := r.Start("id"+strconv.Itoa(i), 1)
		if i%2 == 0 {
			tm.Finish()
		}
	}
	if n := r.Len(); n > 10 {
		t.Errorf("%d entries held, want at most MaxEntries=10", n)
	}
	if r.Take("id999") == nil {
		t.Error("the newest entry was evicted")
	}
}

// TestStartAt: an entry that knows its deadlines gives back every time as
// set — on time, late, early, a token never written, and lateness beyond
// what 4 bytes hold, either way.
func TestStartAt(t *testing.T) {
	const base = int64(1_800_000_000_000_000_000) // a process-clock reading of these years
	deadline := func(k int) int64 { return base + int64(k)*5_000_000 }
	r := New()
	tm := r.StartAt("a", 8, deadline)
	times := map[int]int64{
		0: deadline(0),                 // on time
		1: deadline(1) + 1,             // 1 ns late
		2: deadline(2) + 123_456,       // late
		3: deadline(3) - 10_000,        // early
		5: deadline(5) + 3_000_000_000, // 3 s late: beyond an int32
		6: deadline(6) - 3_000_000_000, // 3 s early
		7: deadline(7) + (1<<31 - 2),   // the largest lateness an int32 holds
	}
	for k, ts := range times {
		tm.Set(k, ts)
	}
	tm.Set(8, base) // out of range: ignored
	got := r.Take("a")
	if got == nil || got.Len() != 8 {
		t.Fatalf("Take(a) = %v, want 8 tokens", got)
	}
	for k := range 9 {
		if got.At(k) != times[k] {
			t.Errorf("At(%d) = %d, want %d", k, got.At(k), times[k])
		}
	}
	if r.StartAt("", 3, deadline) != nil || (*Registry)(nil).StartAt("x", 1, deadline) != nil {
		t.Error("an empty id or a nil registry got an entry")
	}
}

func TestArrivedGoneLookup(t *testing.T) {
	r := New()
	tm := r.Start("a", 2)
	if tm.Arrived() != 0 || tm.GoneAt() != 0 || tm.Finished() {
		t.Fatalf("a new entry: arrived %d, gone %d, finished %v; want 0, 0, false", tm.Arrived(), tm.GoneAt(), tm.Finished())
	}
	tm.SetArrived(5)
	tm.Set(0, 7)
	tm.Gone(9)
	got := r.Lookup("a")
	if got != tm || got.Arrived() != 5 || got.GoneAt() != 9 || !got.Finished() || got.At(0) != 7 {
		t.Errorf("Lookup(a) after SetArrived(5), Set(0, 7), Gone(9): %p arrived %d gone %d finished %v token 0 at %d",
			got, got.Arrived(), got.GoneAt(), got.Finished(), got.At(0))
	}
	if r.Lookup("a") == nil || r.Len() != 1 {
		t.Error("Lookup forgot the entry")
	}
	if r.Lookup("b") != nil || r.Lookup("") != nil {
		t.Error("Lookup of an unknown or empty id found an entry")
	}
	var nilTimes *Times
	nilTimes.SetArrived(1)
	nilTimes.Gone(1)
	if nilTimes.Arrived() != 0 || nilTimes.GoneAt() != 0 || nilTimes.Finished() || nilTimes.Len() != 0 {
		t.Error("a nil *Times recorded something")
	}
	var nilReg *Registry
	if nilReg.Lookup("a") != nil {
		t.Error("a nil Registry found an entry")
	}
}

func TestHeartbeatsAndStart(t *testing.T) {
	r := New()
	tm := r.StartAt("a", 2, func(k int) int64 { return int64(k) })
	tm.AddHeartbeats(1)
	tm.AddHeartbeats(2)
	tm.Begin(42, 50)
	if got := r.Take("a"); got.Heartbeats() != 3 || got.StreamStart() != 42 || got.ThinkEnd() != 50 {
		t.Errorf("Heartbeats() = %d after adding 1 and 2, StreamStart(), ThinkEnd() = %d, %d after Begin(42, 50); want 3, 42, 50",
			got.Heartbeats(), got.StreamStart(), got.ThinkEnd())
	}
	var none *Times
	none.AddHeartbeats(5) // a stream without an id records nothing
	none.Begin(1, 2)
	if none.Heartbeats() != 0 || none.StreamStart() != 0 || none.ThinkEnd() != 0 {
		t.Error("a nil Times recorded something")
	}
}
