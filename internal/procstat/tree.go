package procstat

import (
	"errors"
	"slices"
)

// Process is one process at a sample.
type Process struct {
	Stat
	Tasks Tasks
	IO    IO
	IOOK  bool // IO was read (the process's user's, or root)
}

// Tree is a sample of some processes (its roots) and their descendants,
// by pid.
type Tree struct {
	Roots []int
	Procs map[int]Process
	// Missing are the roots that did not exist at the sample.
	Missing []int
}

// Tree samples the processes roots and their descendants with a new
// Scanner (which reads the stat file of every process of f).
func (f FS) Tree(roots []int) (Tree, error) { return NewScanner(f).Tree(roots) }

// Scanner samples process trees of one file system again and again. It
// remembers the parent of every process it has seen, so that a sample
// reads the stat file of the processes that appeared since the last one
// only, beside those of the tree (which it reads anyway, and which
// correct what it remembered). A process reparented into the tree
// between two samples, or a pid ended and reused between them, is seen
// with its old parent until it leaves the listing. Not safe for
// concurrent use.
type Scanner struct {
	fs      FS
	parents map[int]int // pid -> parent pid, of every process listed last time
	buf     []byte
	// listed and children are a sample's, kept to be cleared and filled
	// again by the next.
	listed   map[int]bool
	children map[int][]int
}

// NewScanner returns a Scanner of f.
func NewScanner(f FS) *Scanner {
	return &Scanner{fs: f, parents: map[int]int{}, buf: make([]byte, 0, bufSize), listed: map[int]bool{}, children: map[int][]int{}}
}

// Tree samples the processes roots and their descendants. A root that
// does not exist, or has ended (a zombie its parent has not reaped), is
// listed in Missing; a process that ends while it is read is left out.
func (sc *Scanner) Tree(roots []int) (Tree, error) {
	t := Tree{Roots: slices.Clone(roots), Procs: map[int]Process{}}
	pids, err := sc.fs.PIDs()
	if err != nil {
		return t, err
	}
	listed := sc.listed
	clear(listed)
	for _, pid := range pids {
		listed[pid] = true
		if _, known := sc.parents[pid]; known {
			continue
		}
		if s, err := sc.fs.stat(pid, sc.buf); err == nil {
			sc.parents[pid] = s.PPID
		}
	}
	children := sc.children
	for k, v := range children {
		if len(v) == 0 {
			delete(children, k) // a parent with no child listed last time either
		} else {
			children[k] = v[:0]
		}
	}
	for pid, ppid := range sc.parents {
		if !listed[pid] {
			delete(sc.parents, pid)
			continue
		}
		children[ppid] = append(children[ppid], pid)
	}
	var walk func(pid, parent int)
	walk = func(pid, parent int) {
		if _, done := t.Procs[pid]; done {
			return
		}
		s, err := sc.fs.stat(pid, sc.buf)
		if err != nil {
			return // ended
		}
		sc.parents[pid] = s.PPID
		if parent != 0 && s.PPID != parent {
			return // not the child remembered: a pid reused
		}
		if s.State == 'Z' || s.State == 'X' {
			return // ended, not yet reaped: gone but for its exit status
		}
		p := Process{Stat: s}
		tasks, err := sc.fs.tasks(pid, sc.buf)
		if errors.Is(err, ErrNoProcess) {
			return
		}
		p.Tasks = tasks
		if io, err := sc.fs.IO(pid); err == nil {
			p.IO, p.IOOK = io, true
		}
		t.Procs[pid] = p
		for _, c := range children[pid] {
			walk(c, pid)
		}
	}
	for _, r := range roots {
		if !listed[r] {
			t.Missing = append(t.Missing, r)
			continue
		}
		before := len(t.Procs)
		walk(r, 0)
		if _, ok := t.Procs[r]; !ok && len(t.Procs) == before {
			t.Missing = append(t.Missing, r) // ended while it was read
		}
	}
	return t, nil
}

// Usage is what a tree of processes did between two samples.
type Usage struct {
	// CPUNs is the CPU time the processes ran, in nanoseconds: their
	// threads' run time (schedstat), or their ticks where threads or
	// children ended between the samples (the ticks keep what those ran;
	// schedstat forgets it).
	CPUNs uint64
	// UserTicks and SystemTicks split it (TicksPerSecond): the
	// processes' own and their reaped children's ticks. Their sum is
	// coarser than CPUNs (each counter is truncated to a tick).
	UserTicks, SystemTicks uint64
	// Switches are the times their threads were switched onto a CPU
	// (schedstat), of the threads alive at both samples.
	Switches uint64
	// Writes and WriteBytes are the write system calls and the bytes
	// they wrote (IO.SysCW, IO.WChar), when WritesKnown: every process's
	// io file was read at both samples.
	Writes, WriteBytes uint64
	WritesKnown        bool
	RSSGrowthPages     int64 // resident pages after minus before
	Processes, Threads int   // at the end
	// Exited are the roots there at the start and not at the end;
	// Started and Ended count the processes of the tree that appeared and
	// went between the samples.
	Exited         []Exited
	Started, Ended int
}

// Exited is a process that ended between two samples.
type Exited struct {
	PID  int
	Comm string
}

// tickNs is one tick in nanoseconds.
const tickNs = 1e9 / TicksPerSecond

// Since returns what the processes of t did since the sample before. A
// process is the same in both when its pid and start time are; one in t
// only started in between (all of its counters count), one in before only
// ended (its run time since before is lost, unless its parent reaped it:
// then its ticks come back in the parent's children's ticks, from which
// its ticks at before are taken away).
func (t Tree) Since(before Tree) Usage {
	u := Usage{WritesKnown: true}
	for _, r := range before.Roots {
		if p, ok := before.Procs[r]; ok && !t.alive(p) {
			u.Exited = append(u.Exited, Exited{PID: r, Comm: p.Comm})
		}
	}
	var runNs, tickTotal uint64
	var user, sys int64
	for _, pid := range sortedPIDs(t.Procs) {
		p := t.Procs[pid]
		u.Processes++
		u.Threads += p.Threads
		u.RSSGrowthPages += p.RSSPages
		b, same := before.Procs[pid]
		if !same || b.StartTicks != p.StartTicks {
			u.Started++
			b = Process{}
		}
		pu, ps := sub(p.UserTicks, b.UserTicks), sub(p.SystemTicks, b.SystemTicks)
		cu, cs := sub(p.ChildUserTicks, b.ChildUserTicks), sub(p.ChildSystemTicks, b.ChildSystemTicks)
		user += int64(pu + cu)
		sys += int64(ps + cs)
		// Threads that ended take their run time with them from
		// schedstat, not from the ticks: past two ticks of difference,
		// trust the ticks.
		run := sub(p.Tasks.RunNs, b.Tasks.RunNs)
		if own := (pu + ps) * tickNs; own > run+2*tickNs {
			run = own
		}
		runNs += run
		tickTotal += (cu + cs) * tickNs
		u.Switches += sub(p.Tasks.Switches, b.Tasks.Switches)
		if p.IOOK && (b.IOOK || b == (Process{})) {
			u.Writes += sub(p.IO.SysCW, b.IO.SysCW)
			u.WriteBytes += sub(p.IO.WChar, b.IO.WChar)
		} else {
			u.WritesKnown = false
		}
	}
	for pid, b := range before.Procs {
		u.RSSGrowthPages -= b.RSSPages
		if p, ok := t.Procs[pid]; ok && p.StartTicks == b.StartTicks {
			continue
		}
		u.Ended++
		// Reaped by a parent still in the tree: its whole life is in the
		// parent's children's ticks now; take away what it had at before.
		if parent, ok := t.Procs[b.PPID]; ok {
			if pb, ok := before.Procs[b.PPID]; ok && pb.StartTicks == parent.StartTicks {
				own := b.UserTicks + b.SystemTicks + b.ChildUserTicks + b.ChildSystemTicks
				tickTotal = sub(tickTotal, own*tickNs)
				user -= int64(b.UserTicks + b.ChildUserTicks)
				sys -= int64(b.SystemTicks + b.ChildSystemTicks)
			}
		}
	}
	u.UserTicks, u.SystemTicks = uint64(max(user, 0)), uint64(max(sys, 0))
	u.CPUNs = runNs + tickTotal
	return u
}

// alive reports whether process p of an earlier sample is in t still.
func (t Tree) alive(p Process) bool {
	q, ok := t.Procs[p.PID]
	return ok && q.StartTicks == p.StartTicks
}

func sub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

func sortedPIDs(m map[int]Process) []int {
	out := make([]int, 0, len(m))
	for pid := range m {
		out = append(out, pid)
	}
	slices.Sort(out)
	return out
}
