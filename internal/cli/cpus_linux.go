package cli

import (
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// pinCPUs pins every thread of the process to cpus, and GOMAXPROCS to
// their number: threads started later inherit the mask of the thread that
// starts them, so a pass over /proc/self/task that finds every thread
// pinned already leaves none unpinned. The CPUs must be among those the
// process may run on. restore gives back the mask the process had and the
// default GOMAXPROCS (Main is called in-process by tests).
func pinCPUs(cpus []int) (restore func(), err error) {
	var allowed, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return nil, fmt.Errorf("--cpus: sched_getaffinity: %v", err)
	}
	var ok []int
	for c := range maxCPU + 1 {
		if allowed.IsSet(c) {
			ok = append(ok, c)
		}
	}
	for _, c := range cpus {
		if !allowed.IsSet(c) {
			return nil, fmt.Errorf("--cpus %s: CPU %d is not one this process may run on (%s)", formatCPUList(cpus), c, formatCPUList(ok))
		}
		set.Set(c)
	}
	if err := setAllThreads(&set); err != nil {
		setAllThreads(&allowed)
		return nil, fmt.Errorf("--cpus %s: %v", formatCPUList(cpus), err)
	}
	runtime.GOMAXPROCS(len(cpus))
	return func() {
		setAllThreads(&allowed)
		runtime.SetDefaultGOMAXPROCS()
	}, nil
}

// setAllThreads sets the CPU mask of every thread of the process, pass
// after pass until one finds nothing to change (a thread started during
// a pass by a thread not yet set has the old mask).
func setAllThreads(set *unix.CPUSet) error {
	for range 10 {
		entries, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		changed := false
		for _, e := range entries {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			var cur unix.CPUSet
			if unix.SchedGetaffinity(tid, &cur) != nil {
				continue // the thread ended
			}
			if cur == *set {
				continue
			}
			if err := unix.SchedSetaffinity(tid, set); err != nil {
				if err == unix.ESRCH {
					continue
				}
				return fmt.Errorf("sched_setaffinity of thread %d: %v", tid, err)
			}
			changed = true
		}
		if !changed {
			return nil
		}
	}
	return nil
}
