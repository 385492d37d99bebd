//go:build linux

package evloop

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/testutil"
)

// stopWithin runs stop (a set's Stop, deferred by a test) and fails the
// test, naming what and with every goroutine's stack, if it has not
// returned within testutil.AwaitBound: a loop that does not stop fails its
// own test, named, instead of hanging the package until the global
// timeout. The stop goroutine is left behind when it hangs.
func stopWithin(t testing.TB, what string, stop func()) {
	t.Helper()
	stopWithinBound(t, what, stop, testutil.AwaitBound)
}

// stopWithinBound is stopWithin with its bound.
func stopWithinBound(t testing.TB, what string, stop func(), bound time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		stop()
	}()
	select {
	case <-done:
	case <-time.After(bound):
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("%s did not return within %v; every goroutine:\n%s", what, bound, buf)
	}
}

// fatalTB is a testing.TB whose Fatalf records the message and ends the
// calling goroutine, as testing.T's does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestStopWithin: a stop that returns passes; one that has not returned
// within the bound fails the test with what it was, the bound, and the
// goroutines' stacks, the hanging stop's among them.
func TestStopWithin(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	hang := func() { <-release }
	for _, tt := range []struct {
		name  string
		stop  func()
		bound time.Duration
		want  []string // in the failure; none: no failure
	}{
		{"returns", func() {}, testutil.AwaitBound, nil},
		{"hangs", hang, 10 * time.Millisecond,
			[]string{"the set's Stop did not return within 10ms; every goroutine:\n", "goroutine ", "evloop.TestStopWithin"}},
	} {
		f := &fatalTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			stopWithinBound(f, "the set's Stop", tt.stop, tt.bound)
		}()
		select {
		case <-done:
		case <-time.After(testutil.AwaitBound):
			t.Fatalf("%s: stopWithinBound itself did not return within %v", tt.name, testutil.AwaitBound)
		}
		if tt.want == nil && f.msg != "" {
			t.Errorf("%s: stopWithinBound failed: %s", tt.name, f.msg)
		}
		for _, w := range tt.want {
			if !strings.Contains(f.msg, w) {
				t.Errorf("%s: the failure lacks %q:\n%s", tt.name, w, f.msg)
			}
		}
	}
}
