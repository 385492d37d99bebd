//go:build sselatency_testclock

package cli

import (
	"fmt"
	"os"
	"strconv"

	"github.com/sse-latency/sse-latency/internal/clock"
)

// testClockEnv names the environment variable that, in a binary built
// with the sselatency_testclock build tag and in no other, shifts this
// process's clock by that many nanoseconds: the tests of a run across hosts
// give the server a clock that differs from the client's by a known amount
// (cmd/sse-latency's TestCrossHostNetns). A build tag rather than an
// environment variable alone, so that no binary built the normal way can
// have its clock shifted, whatever its environment. The shift is a
// clock.Offset that the run injects into its server, client and control
// endpoints; the clock package itself has no shift.
const testClockEnv = "SSE_LATENCY_TEST_CLOCK_OFFSET_NS"

// processClock returns the clock of this process's runs: clock.Real
// shifted by testClockEnv's nanoseconds, and the shift (0: none).
func processClock() (clock.Clock, int64, error) {
	v := os.Getenv(testClockEnv)
	if v == "" {
		return clock.Real, 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("%s=%q: %v", testClockEnv, v, err)
	}
	return clock.Offset{Ns: n}, n, nil
}
