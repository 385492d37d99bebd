package procstat

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// FS is the root of a proc file system: Proc, or a directory of recorded
// files laid out the same way (tests).
type FS string

// Proc is the host's proc file system.
const Proc FS = "/proc"

// ErrNoProcess is wrapped by the error of a process that does not exist
// (any more).
var ErrNoProcess = errors.New("no such process")

func (f FS) path(parts ...string) string {
	return filepath.Join(append([]string{string(f)}, parts...)...)
}

// Host reads the host's CPU times (/proc/stat).
func (f FS) Host() (Host, error) {
	b, err := os.ReadFile(f.path("stat"))
	if err != nil {
		return Host{}, err
	}
	return ParseHost(b)
}

// Stat reads /proc/PID/stat. A process that does not exist is an error
// wrapping ErrNoProcess.
func (f FS) Stat(pid int) (Stat, error) {
	b, err := os.ReadFile(f.path(strconv.Itoa(pid), "stat"))
	if errors.Is(err, fs.ErrNotExist) {
		return Stat{}, fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
	}
	if err != nil {
		return Stat{}, err
	}
	return ParseStat(b)
}

// IO reads /proc/PID/io, which only the process's user (or root) may
// read.
func (f FS) IO(pid int) (IO, error) {
	b, err := os.ReadFile(f.path(strconv.Itoa(pid), "io"))
	if err != nil {
		return IO{}, err
	}
	return ParseIO(b)
}

// Exe is the path of the process's executable ("" when it cannot be
// read: another user's process, a kernel thread).
func (f FS) Exe(pid int) string {
	p, err := os.Readlink(f.path(strconv.Itoa(pid), "exe"))
	if err != nil {
		return ""
	}
	return p
}

// Tasks are the summed figures of a process's threads alive at a sample:
// the nanoseconds they ran (schedstat) and their context switches.
type Tasks struct {
	RunNs    uint64
	Switches Switches
	Count    int // threads read
}

// Tasks reads the schedstat and status of every thread of pid. A thread
// that ends while they are read is skipped.
func (f FS) Tasks(pid int) (Tasks, error) {
	var t Tasks
	dir := f.path(strconv.Itoa(pid), "task")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return t, fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
	}
	if err != nil {
		return t, err
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		sb, err1 := os.ReadFile(filepath.Join(dir, e.Name(), "schedstat"))
		st, err2 := os.ReadFile(filepath.Join(dir, e.Name(), "status"))
		if err1 != nil || err2 != nil {
			continue // the thread ended
		}
		run, err := ParseSchedstat(sb)
		if err != nil {
			return t, fmt.Errorf("pid %d thread %s: %w", pid, e.Name(), err)
		}
		sw, err := ParseSwitches(st)
		if err != nil {
			return t, fmt.Errorf("pid %d thread %s: %w", pid, e.Name(), err)
		}
		t.RunNs += run
		t.Switches.Voluntary += sw.Voluntary
		t.Switches.Involuntary += sw.Involuntary
		t.Count++
	}
	return t, nil
}

// PIDs lists the processes of the file system.
func (f FS) PIDs() ([]int, error) {
	entries, err := os.ReadDir(string(f))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 0 && e.IsDir() {
			out = append(out, pid)
		}
	}
	return out, nil
}
