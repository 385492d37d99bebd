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

// Tree samples the processes roots and their descendants (found through
// the parent pid of every process of f, as the kernel's children lists
// are not always there). A root that does not exist is listed in Missing;
// a process that ends while it is read is left out.
func (f FS) Tree(roots []int) (Tree, error) {
	t := Tree{Roots: slices.Clone(roots), Procs: map[int]Process{}}
	pids, err := f.PIDs()
	if err != nil {
		return t, err
	}
	children := map[int][]int{}
	stats := map[int]Stat{}
	for _, pid := range pids {
		s, err := f.Stat(pid)
		if err != nil {
			continue // ended, or a kernel oddity: not ours to judge
		}
		stats[pid] = s
		children[s.PPID] = append(children[s.PPID], pid)
	}
	var walk func(pid int)
	walk = func(pid int) {
		if _, done := t.Procs[pid]; done {
			return
		}
		s, ok := stats[pid]
		if !ok {
			return
		}
		p := Process{Stat: s}
		tasks, err := f.Tasks(pid)
		if errors.Is(err, ErrNoProcess) {
			return
		}
		p.Tasks = tasks
		if io, err := f.IO(pid); err == nil {
			p.IO, p.IOOK = io, true
		}
		t.Procs[pid] = p
		for _, c := range children[pid] {
			walk(c)
		}
	}
	for _, r := range roots {
		if _, ok := stats[r]; !ok {
			t.Missing = append(t.Missing, r)
			continue
		}
		walk(r)
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
	Switches               Switches
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
		u.Switches.Voluntary += sub(p.Tasks.Switches.Voluntary, b.Tasks.Switches.Voluntary)
		u.Switches.Involuntary += sub(p.Tasks.Switches.Involuntary, b.Tasks.Switches.Involuntary)
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
