package testutil

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// AwaitNoGoroutine waits until no goroutine's stack holds frame (for
// example a loop's run method with its receiver, "evloop.(*Loop).run(0x…"),
// and fails t when one still does after 10 s. A goroutine that has
// returned takes the runtime an instant to reap, so a test that stopped
// something awaits its goroutines' end with this instead of reading the
// stacks once.
func AwaitNoGoroutine(t testing.TB, frame string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if !strings.Contains(string(buf[:n]), frame) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a goroutine still runs %s 10 s after it was stopped:\n%s", frame, buf[:n])
		}
		runtime.Gosched()
	}
}
