package procstat

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// recordedStat is a /proc/stat of a 2-CPU machine (Linux 6.x).
const recordedStat = `cpu  162939 35 61516 111900 1149 0 1823 7 0 0
cpu0 81066 22 30102 57558 105 0 814 3 0 0
cpu1 81872 13 31414 54342 1044 0 1009 4 0 0
intr 3929101 0 0 0
ctxt 9448642
btime 1796150000
processes 80000
procs_running 3
`

func TestParseHost(t *testing.T) {
	h, err := ParseHost([]byte(recordedStat))
	if err != nil {
		t.Fatal(err)
	}
	want := CPUTimes{162939, 35, 61516, 111900, 1149, 0, 1823, 7}
	if h.All != want {
		t.Errorf("ParseHost: all = %+v, want %+v", h.All, want)
	}
	if len(h.CPUs) != 2 || h.CPUs[1].ID != 1 || h.CPUs[1].User != 81872 || h.CPUs[1].Steal != 4 {
		t.Errorf("ParseHost: cpus = %+v", h.CPUs)
	}
	if got := want.Busy(); got != 162939+35+61516+1823 {
		t.Errorf("Busy = %d", got)
	}
	if got := want.Total(); got != 162939+35+61516+111900+1149+1823+7 {
		t.Errorf("Total = %d", got)
	}
	// An old kernel's four columns.
	old, err := ParseHost([]byte("cpu 1 2 3 4\ncpu0 1 2 3 4\n"))
	if err != nil || old.All != (CPUTimes{User: 1, Nice: 2, System: 3, Idle: 4}) {
		t.Errorf("ParseHost(4 columns) = %+v, %v", old, err)
	}
	for _, bad := range []string{"", "intr 1\n", "cpu 1 2\n", "cpu 1 2 x 4\n", "cpu 1 2 3 4\ncpuX 1 2 3 4\n"} {
		if _, err := ParseHost([]byte(bad)); !errors.Is(err, ErrFormat) {
			t.Errorf("ParseHost(%q) = %v, want ErrFormat", bad, err)
		}
	}
}

func TestHostSub(t *testing.T) {
	a := Host{All: CPUTimes{User: 10, Idle: 10}, CPUs: []CPU{{0, CPUTimes{User: 5, Idle: 5}}, {1, CPUTimes{User: 5, Idle: 5}}}}
	b := Host{All: CPUTimes{User: 30, Idle: 12}, CPUs: []CPU{{0, CPUTimes{User: 25, Idle: 5}}, {2, CPUTimes{User: 1}}}}
	d := b.Sub(a)
	if d.All != (CPUTimes{User: 20, Idle: 2}) || len(d.CPUs) != 1 || d.CPUs[0].ID != 0 || d.CPUs[0].User != 20 {
		t.Errorf("Sub = %+v", d)
	}
	if back := a.All.Sub(b.All); back.User != 0 {
		t.Errorf("a counter that went back: %+v, want 0", back)
	}
}

// statLine is a /proc/PID/stat line with the fields the accounting reads
// set (the others as a real one has them).
func statLine(pid, ppid int, comm string, utime, stime, cutime, cstime uint64, threads int, start uint64, rss int64) string {
	return fmt.Sprintf("%d (%s) S %d %d %d 0 -1 4194560 100 0 0 0 %d %d %d %d 20 0 %d 0 %d 10000000 %d 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0",
		pid, comm, ppid, pid, pid, utime, stime, cutime, cstime, threads, start, rss)
}

func TestParseStat(t *testing.T) {
	s, err := ParseStat([]byte(statLine(42, 1, "my (odd) gw", 120, 30, 5, 2, 4, 9999, 2500)))
	if err != nil {
		t.Fatal(err)
	}
	want := Stat{PID: 42, PPID: 1, Comm: "my (odd) gw", State: 'S', UserTicks: 120, SystemTicks: 30, ChildUserTicks: 5,
		ChildSystemTicks: 2, Threads: 4, StartTicks: 9999, RSSPages: 2500}
	if s != want {
		t.Errorf("ParseStat = %+v, want %+v", s, want)
	}
	for _, bad := range []string{"", "42 gw S 1", "x (gw) S 1 2", "42 (gw) S 1 2 3", statLine(42, 1, "gw", 1, 1, 1, 1, 1, 1, 1)[:60]} {
		if _, err := ParseStat([]byte(bad)); !errors.Is(err, ErrFormat) {
			t.Errorf("ParseStat(%q) = %v, want ErrFormat", bad, err)
		}
	}
}

func TestParseIO(t *testing.T) {
	io, err := ParseIO([]byte("rchar: 6976\nwchar: 120\nsyscr: 10\nsyscw: 3\nread_bytes: 0\nwrite_bytes: 0\ncancelled_write_bytes: 0\n"))
	if err != nil || io != (IO{RChar: 6976, WChar: 120, SysCR: 10, SysCW: 3}) {
		t.Errorf("ParseIO = %+v, %v", io, err)
	}
	for _, bad := range []string{"", "rchar: 1\n", "rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: -4\n"} {
		if _, err := ParseIO([]byte(bad)); !errors.Is(err, ErrFormat) {
			t.Errorf("ParseIO(%q) = %v, want ErrFormat", bad, err)
		}
	}
}

func TestParseSchedstat(t *testing.T) {
	st, err := ParseSchedstat([]byte("5326524 38469404 22\n"))
	if err != nil || st != (Schedstat{RunNs: 5326524, Switches: 22}) {
		t.Errorf("ParseSchedstat = %+v, %v", st, err)
	}
	for _, bad := range []string{"", "1 2", "x 2 3", "1 2 y"} {
		if _, err := ParseSchedstat([]byte(bad)); !errors.Is(err, ErrFormat) {
			t.Errorf("ParseSchedstat(%q) = %v, want ErrFormat", bad, err)
		}
	}
}

// fakeProc is a recorded process for writeProc.
type fakeProc struct {
	pid, ppid      int
	comm           string
	utime, stime   uint64
	cutime, cstime uint64
	start          uint64
	rss            int64
	threads        []fakeThread
	syscw, wchar   uint64
	noIO           bool // its io file is not readable
}

type fakeThread struct{ runNs, switches uint64 }

// writeProc lays out procs as /proc does under a new directory.
func writeProc(t *testing.T, procs ...fakeProc) FS {
	t.Helper()
	root := t.TempDir()
	write := func(path, s string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "stat"), recordedStat)
	for _, p := range procs {
		dir := filepath.Join(root, strconv.Itoa(p.pid))
		write(filepath.Join(dir, "stat"), statLine(p.pid, p.ppid, p.comm, p.utime, p.stime, p.cutime, p.cstime, len(p.threads), p.start, p.rss))
		if !p.noIO {
			write(filepath.Join(dir, "io"), fmt.Sprintf("rchar: 0\nwchar: %d\nsyscr: 0\nsyscw: %d\n", p.wchar, p.syscw))
		}
		for i, th := range p.threads {
			td := filepath.Join(dir, "task", strconv.Itoa(p.pid+i))
			write(filepath.Join(td, "schedstat"), fmt.Sprintf("%d 0 %d\n", th.runNs, th.switches))
		}
	}
	return FS(root)
}

func mustTree(t *testing.T, f FS, roots ...int) Tree {
	t.Helper()
	tr, err := f.Tree(roots)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestTreeFindsDescendants(t *testing.T) {
	f := writeProc(t,
		fakeProc{pid: 10, ppid: 1, comm: "nginx", start: 5, threads: []fakeThread{{}}},
		fakeProc{pid: 11, ppid: 10, comm: "nginx", start: 6, threads: []fakeThread{{}, {}}},
		fakeProc{pid: 12, ppid: 11, comm: "helper", start: 7, threads: []fakeThread{{}}},
		fakeProc{pid: 20, ppid: 1, comm: "other", start: 8, threads: []fakeThread{{}}},
	)
	tr := mustTree(t, f, 10, 99)
	if len(tr.Procs) != 3 || tr.Procs[12].Comm != "helper" || tr.Procs[11].Tasks.Count != 2 {
		t.Errorf("Tree(10) = %+v, want 10, 11, 12 with their threads", tr.Procs)
	}
	if _, ok := tr.Procs[20]; ok {
		t.Error("Tree(10) holds 20, not its descendant")
	}
	if len(tr.Missing) != 1 || tr.Missing[0] != 99 {
		t.Errorf("Tree: missing = %v, want [99]", tr.Missing)
	}
}

func TestSince(t *testing.T) {
	ms := uint64(1e6)
	gw := func(utime, stime uint64, runMs uint64, syscw uint64, rss int64) fakeProc {
		return fakeProc{pid: 10, ppid: 1, comm: "gw", start: 5, utime: utime, stime: stime, rss: rss, syscw: syscw, wchar: syscw * 100,
			threads: []fakeThread{{runNs: runMs * ms / 2, switches: syscw}, {runNs: runMs * ms / 2, switches: 2}}}
	}
	cases := []struct {
		name          string
		before, after []fakeProc
		want          Usage
	}{
		{
			name:   "steady: schedstat's run time, the ticks' split",
			before: []fakeProc{gw(100, 50, 1500, 10, 1000)},
			after:  []fakeProc{gw(130, 60, 1903, 510, 1256)},
			want: Usage{CPUNs: 403 * ms, UserTicks: 30, SystemTicks: 10, Switches: 500, Writes: 500, WriteBytes: 50000,
				WritesKnown: true, RSSGrowthPages: 256, Processes: 1, Threads: 2},
		},
		{
			name:   "a thread ended: the ticks, beyond schedstat's",
			before: []fakeProc{gw(100, 50, 1500, 10, 1000)},
			after:  []fakeProc{gw(200, 50, 1600, 10, 1000)},
			want:   Usage{CPUNs: 1000 * ms, UserTicks: 100, WritesKnown: true, Processes: 1, Threads: 2},
		},
		{
			name:   "a child started, and one reaped by the root",
			before: []fakeProc{gw(100, 50, 1500, 0, 0), {pid: 11, ppid: 10, comm: "w", start: 6, utime: 20, threads: []fakeThread{{runNs: 200 * ms}}}},
			after: []fakeProc{func() fakeProc { p := gw(100, 50, 1500, 0, 0); p.cutime = 50; return p }(),
				{pid: 12, ppid: 10, comm: "w2", start: 9, utime: 7, stime: 1, threads: []fakeThread{{runNs: 80 * ms}}}},
			// 12 ran 80 ms, all of it new; 11 had 20 ticks at the start
			// and 50 when reaped: 30 ticks (300 ms) since.
			want: Usage{CPUNs: 380 * ms, UserTicks: 37, SystemTicks: 1, WritesKnown: true, Processes: 2, Threads: 3, Started: 1, Ended: 1},
		},
		{
			name:   "the root exited; a pid reused is another process",
			before: []fakeProc{gw(100, 50, 1500, 10, 0)},
			after:  []fakeProc{{pid: 10, ppid: 1, comm: "new", start: 77, utime: 1, threads: []fakeThread{{runNs: 10 * ms}}}},
			want: Usage{CPUNs: 10 * ms, UserTicks: 1, WritesKnown: true, Processes: 1, Threads: 1, Started: 1, Ended: 1,
				Exited: []Exited{{PID: 10, Comm: "gw"}}},
		},
		{
			name:   "an io file not readable: writes unknown",
			before: []fakeProc{gw(100, 50, 1500, 10, 0)},
			after:  []fakeProc{func() fakeProc { p := gw(100, 50, 1500, 10, 0); p.noIO = true; return p }()},
			want:   Usage{Processes: 1, Threads: 2},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := mustTree(t, writeProc(t, c.before...), 10)
			after := mustTree(t, writeProc(t, c.after...), 10)
			got := after.Since(before)
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("Since:\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// TestSelf reads this process on the host's /proc: its CPU grows as it
// works, and its io file is readable.
func TestSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc on this system")
	}
	before := mustTree(t, Proc, os.Getpid())
	x := 0
	for i := range 50_000_000 {
		x += i ^ (x >> 3)
	}
	after := mustTree(t, Proc, os.Getpid())
	u := after.Since(before)
	if u.CPUNs == 0 || u.Processes != 1 || u.Threads < 1 || !u.WritesKnown {
		t.Errorf("Since on self after %d: %+v, want CPU, one process, its threads and writes known", x, u)
	}
	if _, err := Proc.Stat(1 << 30); !errors.Is(err, ErrNoProcess) {
		t.Errorf("Stat of a pid that does not exist = %v, want ErrNoProcess", err)
	}
	if _, err := Proc.Host(); err != nil {
		t.Errorf("Host: %v", err)
	}
}

// TestScannerRemembers: a Scanner reads the stat files of new processes
// only — one reparented into the tree keeps its old parent (what it
// remembered) while a fresh FS.Tree sees the move — finds a new child of
// the tree, forgets what left the listing, and does not take a reused
// pid whose stat names another parent for the child it remembered.
func TestScannerRemembers(t *testing.T) {
	root := writeProc(t,
		fakeProc{pid: 10, ppid: 1, comm: "gw", start: 5, threads: []fakeThread{{}}},
		fakeProc{pid: 11, ppid: 10, comm: "worker", start: 6, threads: []fakeThread{{}}},
		fakeProc{pid: 20, ppid: 1, comm: "other", start: 8, threads: []fakeThread{{}}},
	)
	sc := NewScanner(root)
	if tr, err := sc.Tree([]int{10}); err != nil || len(tr.Procs) != 2 {
		t.Fatalf("first sample: %v, %v; want 10 and 11", tr.Procs, err)
	}
	rewrite := func(p fakeProc) {
		dir := filepath.Join(string(root), strconv.Itoa(p.pid))
		os.RemoveAll(dir)
		fresh := writeProc(t, p)
		if err := os.Rename(filepath.Join(string(fresh), strconv.Itoa(p.pid)), dir); err != nil {
			t.Fatal(err)
		}
	}
	rewrite(fakeProc{pid: 20, ppid: 10, comm: "other", start: 8, threads: []fakeThread{{}}})        // reparented into the tree
	rewrite(fakeProc{pid: 11, ppid: 1, comm: "reused", start: 99, threads: []fakeThread{{}}})       // 11 ended, its pid reused
	rewrite(fakeProc{pid: 12, ppid: 10, comm: "new worker", start: 100, threads: []fakeThread{{}}}) // a new child
	tr, err := sc.Tree([]int{10})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.Procs[12]; !ok || len(tr.Procs) != 2 {
		t.Errorf("second sample: %v; want 10 and the new 12 (not 20, remembered elsewhere; not the reused 11)", tr.Procs)
	}
	if fresh := mustTree(t, root, 10); len(fresh.Procs) != 3 {
		t.Errorf("a fresh tree: %v; want 10, 12 and the reparented 20", fresh.Procs)
	}
	os.RemoveAll(filepath.Join(string(root), "12"))
	if tr, _ := sc.Tree([]int{10}); len(tr.Procs) != 1 || len(sc.parents) != 3 {
		t.Errorf("12 gone: %v, remembered %v; want 10 alone, and 12 forgotten", tr.Procs, sc.parents)
	}
}
