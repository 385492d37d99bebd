//go:build !sselatency_testclock

package clock

// TestOffset returns the shift of this process's clock, in nanoseconds:
// always 0 in a binary built without the sselatency_testclock build tag
// (see testoffset.go), as every release is.
func TestOffset() int64 { return 0 }
