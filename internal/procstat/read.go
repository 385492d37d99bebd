package procstat

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// bufSize is the buffer of a Scanner's reads: /proc/PID/stat and a
// thread's schedstat fit in a few hundred bytes.
const bufSize = 4096

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
	b, err := readFile(f.path("stat"), nil)
	if err != nil {
		return Host{}, err
	}
	return ParseHost(b)
}

// Stat reads /proc/PID/stat. A process that does not exist is an error
// wrapping ErrNoProcess.
func (f FS) Stat(pid int) (Stat, error) { return f.stat(pid, nil) }

// stat is Stat reading into buf.
func (f FS) stat(pid int, buf []byte) (Stat, error) {
	b, err := readFile(f.path(strconv.Itoa(pid), "stat"), buf)
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
	b, err := readFile(f.path(strconv.Itoa(pid), "io"), nil)
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

// Tasks are the summed schedstat of a process's threads alive at a
// sample: the nanoseconds they ran and the times they were switched onto
// a CPU.
type Tasks struct {
	Schedstat
	Count int // threads read
}

// Tasks reads the schedstat of every thread of pid. A thread that ends
// while they are read is skipped.
func (f FS) Tasks(pid int) (Tasks, error) { return f.tasks(pid, nil) }

// tasks is Tasks reading into buf.
func (f FS) tasks(pid int, buf []byte) (Tasks, error) {
	var t Tasks
	dir := f.path(strconv.Itoa(pid), "task")
	names, err := readDirNames(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return t, fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
	}
	if err != nil {
		return t, err
	}
	for _, name := range names {
		if _, err := strconv.Atoi(name); err != nil {
			continue
		}
		b, err := readFile(filepath.Join(dir, name, "schedstat"), buf)
		if err != nil {
			continue // the thread ended
		}
		st, err := ParseSchedstat(b)
		if err != nil {
			return t, fmt.Errorf("pid %d thread %s: %w", pid, name, err)
		}
		t.RunNs += st.RunNs
		t.Switches += st.Switches
		t.Count++
	}
	return t, nil
}

// PIDs lists the processes of the file system.
func (f FS) PIDs() ([]int, error) {
	names, err := readDirNames(string(f))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, name := range names {
		if pid, err := strconv.Atoi(name); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	return out, nil
}

// readDirNames lists a directory's names, unsorted (os.ReadDir sorts,
// and stats nothing either way).
func readDirNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}
