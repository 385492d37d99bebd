//go:build !sselatency_testclock

package cli

import "github.com/sse-latency/sse-latency/internal/clock"

// processClock returns the clock of this process's runs: clock.Real in a
// binary built without the sselatency_testclock build tag (see
// testclock.go), as every release is.
func processClock() (clock.Clock, int64, error) { return clock.Real, 0, nil }
