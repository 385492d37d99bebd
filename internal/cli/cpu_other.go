//go:build !unix

package cli

// cpuTimes is not measured on this platform.
func cpuTimes() (user, system float64) { return 0, 0 }
