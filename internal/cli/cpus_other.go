//go:build !linux

package cli

import "errors"

// pinCPUs is Linux's only (sched_setaffinity).
func pinCPUs(cpus []int) (restore func(), err error) {
	return nil, errors.New("--cpus: pinning threads to CPUs needs Linux")
}
