// Package procstat reads the CPU accounting Linux keeps under /proc: the
// host's time per CPU (/proc/stat), and for a process and its descendants
// their CPU time, context switches, write system calls, resident memory
// and threads (/proc/PID/stat, status, io, schedstat). It holds raw
// counters and their differences between two samples; what they mean for a
// measurement (a share of the host, a cost per token) is package summary's.
//
// The parsers take the files' bytes and return named errors; the readers
// take the root of the proc file system ("/proc", or a directory of
// recorded files in tests). Nothing here runs per token: a sample reads a
// few files per process of the tree (a Scanner remembers the parents of
// the host's other processes, so that a sample reads only the stat files
// of those that are new), and a measurement takes one before and one
// after each batch.
package procstat

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// TicksPerSecond is the unit of the times in /proc/stat and
// /proc/PID/stat: USER_HZ, which the kernel fixes at 100 for user space
// on every architecture Linux runs Go on (sysconf(_SC_CLK_TCK)).
const TicksPerSecond = 100

// ErrFormat is wrapped by every parser's error: the bytes are not the
// file's format.
var ErrFormat = errors.New("procstat: unexpected format")

// CPUTimes are the times of one line of /proc/stat, in ticks
// (TicksPerSecond). Guest time is counted in User and Nice already, as the
// kernel does.
type CPUTimes struct {
	User, Nice, System, Idle, IOWait, IRQ, SoftIRQ, Steal uint64
}

// Total is every tick of the line: busy, idle and stolen.
func (c CPUTimes) Total() uint64 {
	return c.User + c.Nice + c.System + c.Idle + c.IOWait + c.IRQ + c.SoftIRQ + c.Steal
}

// Busy is the ticks the CPU ran something: user, nice, system and
// interrupts; not idle, not waiting for I/O, not stolen by the hypervisor.
func (c CPUTimes) Busy() uint64 { return c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ }

// Sub returns c minus o, field by field (0 where a counter went back,
// which a CPU taken offline and back can do).
func (c CPUTimes) Sub(o CPUTimes) CPUTimes {
	d := func(a, b uint64) uint64 {
		if a < b {
			return 0
		}
		return a - b
	}
	return CPUTimes{d(c.User, o.User), d(c.Nice, o.Nice), d(c.System, o.System), d(c.Idle, o.Idle),
		d(c.IOWait, o.IOWait), d(c.IRQ, o.IRQ), d(c.SoftIRQ, o.SoftIRQ), d(c.Steal, o.Steal)}
}

// Host is one sample of /proc/stat: the line of all CPUs, and one line
// per online CPU with its number.
type Host struct {
	All  CPUTimes
	CPUs []CPU
}

// CPU is the line of one CPU ("cpu3").
type CPU struct {
	ID int
	CPUTimes
}

// Sub returns h minus o: the all-CPUs line, and each CPU present in both
// (a CPU that went offline between them is left out).
func (h Host) Sub(o Host) Host {
	out := Host{All: h.All.Sub(o.All), CPUs: make([]CPU, 0, len(h.CPUs))}
	for _, c := range h.CPUs {
		for _, p := range o.CPUs {
			if p.ID == c.ID {
				out.CPUs = append(out.CPUs, CPU{ID: c.ID, CPUTimes: c.CPUTimes.Sub(p.CPUTimes)})
				break
			}
		}
	}
	return out
}

// ParseHost reads /proc/stat: its "cpu" line and its "cpuN" lines; the
// other lines are ignored. Kernels before 2.6.11 have fewer columns: the
// missing ones read as 0.
func ParseHost(b []byte) (Host, error) {
	var h Host
	seen := false
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if !bytes.HasPrefix(line, []byte("cpu")) {
			continue
		}
		fields := bytes.Fields(line)
		if len(fields) < 5 {
			return h, fmt.Errorf("%w: /proc/stat line %.40q: want at least 4 times", ErrFormat, line)
		}
		var v [8]uint64
		for i := range min(len(fields)-1, len(v)) {
			n, err := strconv.ParseUint(string(fields[i+1]), 10, 64)
			if err != nil {
				return h, fmt.Errorf("%w: /proc/stat line %.40q: %q is not a count", ErrFormat, line, fields[i+1])
			}
			v[i] = n
		}
		t := CPUTimes{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]}
		name := string(fields[0])
		if name == "cpu" {
			h.All, seen = t, true
			continue
		}
		id, err := strconv.Atoi(name[3:])
		if err != nil || id < 0 {
			return h, fmt.Errorf("%w: /proc/stat line %.40q: %q is not cpuN", ErrFormat, line, name)
		}
		h.CPUs = append(h.CPUs, CPU{ID: id, CPUTimes: t})
	}
	if !seen {
		return h, fmt.Errorf("%w: /proc/stat has no cpu line", ErrFormat)
	}
	return h, nil
}

// Stat is what the accounting takes from /proc/PID/stat (proc(5)).
type Stat struct {
	PID, PPID int
	Comm      string
	State     byte
	// UserTicks and SystemTicks are the process's CPU time, all its
	// threads and those that ended; ChildUserTicks and ChildSystemTicks
	// that of the children it waited for.
	UserTicks, SystemTicks, ChildUserTicks, ChildSystemTicks uint64
	Threads                                                  int
	StartTicks                                               uint64 // when it started, ticks after boot: a pid reused has another
	RSSPages                                                 int64  // resident set, in pages
}

// ParseStat reads /proc/PID/stat. The command name is between the first
// "(" and the last ")": it may hold spaces and parentheses of its own.
func ParseStat(b []byte) (Stat, error) {
	var s Stat
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 1 || end < open {
		return s, fmt.Errorf("%w: /proc/PID/stat %.40q: no (comm)", ErrFormat, b)
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil || pid <= 0 {
		return s, fmt.Errorf("%w: /proc/PID/stat %.40q: no pid", ErrFormat, b)
	}
	s.PID, s.Comm = pid, string(b[open+1:end])
	f := bytes.Fields(b[end+1:])
	// f[0] is field 3 of proc(5) (state); field n is f[n-3].
	if len(f) < 22 || len(f[0]) != 1 {
		return s, fmt.Errorf("%w: /proc/PID/stat of %d: %d fields after the name, want at least 22", ErrFormat, pid, len(f))
	}
	s.State = f[0][0]
	nums := make([]int64, len(f))
	for _, i := range []int{1, 11, 12, 13, 14, 17, 19, 21} {
		n, err := strconv.ParseInt(string(f[i]), 10, 64)
		if err != nil {
			return s, fmt.Errorf("%w: /proc/PID/stat of %d: field %d %q is not a number", ErrFormat, pid, i+3, f[i])
		}
		nums[i] = n
	}
	u := func(n int64) uint64 { return uint64(max(n, 0)) }
	s.PPID = int(nums[1])
	s.UserTicks, s.SystemTicks, s.ChildUserTicks, s.ChildSystemTicks = u(nums[11]), u(nums[12]), u(nums[13]), u(nums[14])
	s.Threads, s.StartTicks, s.RSSPages = int(nums[17]), u(nums[19]), nums[21]
	return s, nil
}

// IO is what the accounting takes from /proc/PID/io: the read and write
// system calls of the process (all its threads, those that ended too) and
// the bytes they moved. SysCW counts write(2), writev(2), pwrite(2) and
// sendfile(2) — on a socket too — but not send(2), sendto(2) or
// sendmsg(2), which do not go through the VFS.
type IO struct {
	RChar, WChar, SysCR, SysCW uint64
}

// ParseIO reads /proc/PID/io ("key: value" lines; unknown keys ignored).
func ParseIO(b []byte) (IO, error) {
	var io IO
	found := 0
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		var dst *uint64
		switch string(k) {
		case "rchar":
			dst = &io.RChar
		case "wchar":
			dst = &io.WChar
		case "syscr":
			dst = &io.SysCR
		case "syscw":
			dst = &io.SysCW
		default:
			continue
		}
		n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
		if err != nil {
			return io, fmt.Errorf("%w: /proc/PID/io %s: %.20q is not a count", ErrFormat, k, v)
		}
		*dst = n
		found++
	}
	if found < 4 {
		return io, fmt.Errorf("%w: /proc/PID/io: rchar, wchar, syscr and syscw not all there", ErrFormat)
	}
	return io, nil
}

// Schedstat is /proc/PID/task/TID/schedstat: how long the task ran on a
// CPU, and how many times it was switched onto one (each a context switch
// into it, voluntary — after a wait — or not).
type Schedstat struct {
	RunNs, Switches uint64
}

// ParseSchedstat reads a schedstat file: run time (ns), time waiting to
// run (ns), and the times the task ran ("timeslices").
func ParseSchedstat(b []byte) (Schedstat, error) {
	f := bytes.Fields(b)
	if len(f) != 3 {
		return Schedstat{}, fmt.Errorf("%w: schedstat %.40q: want 3 numbers", ErrFormat, b)
	}
	var v [3]uint64
	for i := range v {
		n, err := strconv.ParseUint(string(f[i]), 10, 64)
		if err != nil {
			return Schedstat{}, fmt.Errorf("%w: schedstat %.40q: %q is not a count", ErrFormat, b, f[i])
		}
		v[i] = n
	}
	return Schedstat{RunNs: v[0], Switches: v[2]}, nil
}
