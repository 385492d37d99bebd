//go:build sselatency_testclock

package clock

import (
	"fmt"
	"os"
	"strconv"
)

// TestOffsetEnv names the environment variable that, in a binary built
// with the sselatency_testclock build tag and in no other, shifts this
// process's clock by that many nanoseconds: the tests of a run across hosts
// give the server a clock that differs from the client's by a known amount
// (cmd/sse-latency's TestCrossHostNetns). A build tag rather than an
// environment variable alone, so that no binary built the normal way can
// have its clock shifted, whatever its environment.
const TestOffsetEnv = "SSE_LATENCY_TEST_CLOCK_OFFSET_NS"

// testOffset is the shift applied at start.
var testOffset int64

func init() {
	v := os.Getenv(TestOffsetEnv)
	if v == "" {
		return
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("clock: %s=%q: %v", TestOffsetEnv, v, err))
	}
	testOffset = n
	baseEpochNs += n
}

// TestOffset returns the shift of this process's clock, in nanoseconds:
// non-zero only in a binary built with the sselatency_testclock tag and
// run with TestOffsetEnv set.
func TestOffset() int64 { return testOffset }
