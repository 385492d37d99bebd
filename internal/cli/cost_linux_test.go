package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/procstat"
	"github.com/sse-latency/sse-latency/internal/rundoc"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// childBound bounds how long a child process may take to say it is ready,
// and to end once told to.
const childBound = 20 * time.Second

// childProc is a child process of a test (child).
type childProc struct {
	cmd            *exec.Cmd
	stdout, stderr *lines
	done           chan struct{} // closed once it has ended and been waited for
}

// child starts the test binary again with env set (mainEnv, relayEnv or
// spinEnv, see TestMain) and extra files from fd 3; it is ended (SIGTERM,
// then SIGKILL) when the test ends. stdout and stderr go to lines, line
// by line as they come.
func child(t *testing.T, env []string, files ...*os.File) *childProc {
	t.Helper()
	c := &childProc{cmd: exec.Command(os.Args[0], "-test.run=^$"), stdout: newLines(), stderr: newLines(), done: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.ExtraFiles = files
	c.cmd.Stdout, c.cmd.Stderr = c.stdout, c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(childBound):
			c.cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

// lines collects what a child writes, and lets a test await a line.
type lines struct {
	w    *io.PipeWriter
	ch   chan string
	all  bytes.Buffer
	done chan struct{}
}

func newLines() *lines {
	r, w := io.Pipe()
	l := &lines{w: w, ch: make(chan string, 1024), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			select {
			case l.ch <- sc.Text():
			default:
			}
		}
		close(l.done)
	}()
	return l
}

func (l *lines) Write(p []byte) (int, error) {
	l.all.Write(p) // only the child's copy goroutine writes
	return l.w.Write(p)
}

// await returns the first line (from now on) that contains s.
func (l *lines) await(t *testing.T, s string) string {
	t.Helper()
	deadline := time.After(childBound)
	for {
		select {
		case line := <-l.ch:
			if strings.Contains(line, s) {
				return line
			}
		case <-deadline:
			t.Fatalf("gave up after %v waiting for a line with %q", childBound, s)
		}
	}
}

// startRelay starts the stand-in gateway, a relay process (package
// sserelay) to upstream with the extra arguments, and returns its address
// and pid.
func startRelay(t *testing.T, upstream string, extra ...string) (addr string, pid int) {
	t.Helper()
	args, _ := json.Marshal(append([]string{"-upstream", upstream}, extra...))
	c := child(t, []string{relayEnv + "=" + string(args)})
	addr = strings.TrimPrefix(c.stdout.await(t, "listening on "), "listening on ")
	return addr, c.cmd.Process.Pid
}

// TestCostOfStandInGateway: a gateway that is a process of its own and
// burns 500 µs of CPU per event it relays is found to cost that per token,
// within wide bounds (it also parses and writes every event); its writes
// are one per event (a flush each); the cost block names it; the document
// holds the same figures and validates; --compat leaves the block out.
func TestCostOfStandInGateway(t *testing.T) {
	ln := testutil.Listen(t)
	up := ln.Addr().String()
	addr, pid := startRelay(t, up, "-mode", "naive", "-burn", "500us")
	path := filepath.Join(t.TempDir(), "run.json")
	var o, e bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"-L", up, "-t", addr, "-r", "4", "-c", "2", "-n", "200", "-d", "1", "-q", "--gateway-pid", strconv.Itoa(pid), "--json", path}
	code, sum := MeasureOn(ctx, ln, args, &o, &e)
	if code != ExitOK {
		t.Fatalf("run through the stand-in = %d\nstdout:\n%s\nstderr:\n%s", code, o.String(), e.String())
	}
	c := sum.Run.Gateway().Cost
	if c == nil || c.Gateway == nil {
		t.Fatalf("no gateway cost in the gateway batch: %+v", c)
	}
	g := c.Gateway
	if len(g.PIDs) != 1 || g.PIDs[0] != pid || g.Found != "--gateway-pid" || g.Name == "" || g.Unseen != "" {
		t.Errorf("gateway %+v, want pid %d named by --gateway-pid", g, pid)
	}
	t.Logf("stand-in: cpu/token %.1fus, writes/token %.2f, %d tokens", g.CPUPerTokenUs, g.WritesPerToken, c.Tokens)
	// The relay's own work (parsing, JSON, a write per event) adds 100 to
	// 250 µs per token to the burn (more under -race, whose build it is).
	if g.CPUPerTokenUs < 400 || g.CPUPerTokenUs > 2500 {
		t.Errorf("gateway cpu/token %.1fus, want the 500us it burns per event and its own work (400 to 2500)", g.CPUPerTokenUs)
	}
	if !g.WritesKnown || g.WritesPerToken < 0.9 || g.WritesPerToken > 2 {
		t.Errorf("gateway writes/token %.2f (known %v), want about one per event", g.WritesPerToken, g.WritesKnown)
	}
	if c.Tokens < 800 || c.Streams != 4 || g.Processes != 1 || g.Threads < 1 {
		t.Errorf("cost %+v: want the 800 tokens of 4 streams, one process", c)
	}
	for _, want := range []string{"=== cost (per token received", fmt.Sprintf("gateway    %s pid %d", g.Name, pid), "gw cpu", "gw writes", "tool cpu"} {
		if !strings.Contains(o.String(), want) {
			t.Errorf("report has no %q:\n%s", want, o.String())
		}
	}
	if !strings.Contains(e.String(), fmt.Sprintf("gateway cost: %s (pid %d", g.Name, pid)) {
		t.Errorf("stderr does not say which process is accounted:\n%s", e.String())
	}
	js, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc rundoc.Document
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	if dg := doc.Gateway().Cost.Gateway; dg.CPUPerTokenUs != g.CPUPerTokenUs || dg.Writes != g.Writes {
		t.Errorf("document's gateway cost %+v, want the run's %+v", dg, g)
	}

	// --compat: the reference's report, without the block.
	ln2 := testutil.Listen(t)
	addr2, pid2 := startRelay(t, ln2.Addr().String(), "-mode", "chunk")
	var o2, e2 bytes.Buffer
	code, _ = MeasureOn(ctx, ln2, []string{"-L", ln2.Addr().String(), "-t", addr2, "-r", "1", "-n", "20", "-d", "0.5", "-q",
		"--compat", "--gateway-pid", strconv.Itoa(pid2)}, &o2, &e2)
	if code != ExitOK || strings.Contains(o2.String(), "=== cost") {
		t.Errorf("--compat run = %d, want 0 and no cost block:\n%s", code, o2.String())
	}
}

// TestCostGatewayExits: a gateway process that ends during the gateway
// batch is reported in the cost block; the measurement goes on (the
// requests after it fail) and is reported. The gateway is a master and a
// worker that ends after 2 responses; the master closes the listener
// only once it has reaped the worker, so that the requests after fail
// only once the worker is gone.
func TestCostGatewayExits(t *testing.T) {
	ln := testutil.Listen(t)
	up := ln.Addr().String()
	args, _ := json.Marshal([]string{"-upstream", up, "-mode", "chunk", "-exit-after", "2"})
	master := child(t, []string{masterEnv + "=" + string(args)})
	addr := strings.TrimPrefix(master.stdout.await(t, "listening on "), "listening on ")
	pid, err := strconv.Atoi(strings.TrimPrefix(master.stdout.await(t, "worker "), "worker "))
	if err != nil {
		t.Fatal(err)
	}
	var o, e bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code, sum := MeasureOn(ctx, ln, []string{"-L", up, "-t", addr, "-r", "6", "-c", "1", "-n", "20", "-d", "0.5", "-q",
		"--gateway-pid", strconv.Itoa(pid)}, &o, &e)
	if code != ExitOK && code != ExitFailure {
		t.Fatalf("run = %d\n%s\n%s", code, o.String(), e.String())
	}
	if g := sum.Run.Gateway(); g == nil || g.Requests != 6 || g.OK < 2 {
		t.Errorf("gateway batch %+v: want all 6 requests reported, the first 2 ok", g)
	}
	want := "exited during the batch: its CPU until then is counted, not after"
	if !strings.Contains(o.String(), "gw exited") || !strings.Contains(o.String(), fmt.Sprintf("(pid %d) %s", pid, want)) {
		t.Errorf("cost block does not report the exit:\n%s", o.String())
	}
}

// TestGatewayPIDErrors: a --gateway-pid that cannot be accounted is an
// error at start, naming it.
func TestGatewayPIDErrors(t *testing.T) {
	max, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Skip("no pid_max:", err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(max)))
	none := strconv.Itoa(n + 1) // above the largest pid: no such process
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--gateway-pid", none}, "--gateway-pid " + none + ": no such process"},
		{[]string{"--gateway-pid", strconv.Itoa(os.Getpid())}, "that is sse-latency itself"},
		{[]string{"--gateway-pid", "0"}, "--gateway-pid 0: want a process id"},
		{[]string{"--gateway-pid", "x"}, "--gateway-pid"},
		{[]string{"--cpus", "1-0"}, `--cpus "1-0": range "1-0" goes down`},
		{[]string{"--cpus", "9999"}, "CPU 9999 is above 1023"},
		{[]string{"--cpus", "1000"}, "--cpus 1000: CPU 1000 is not one this process may run on"},
		{[]string{"--corpus", "nope"}, `--corpus "nope": unknown (want responses)`},
		{[]string{"--corpus", "responses", "-n", "5"}, "--corpus responses sets --api, -n, --reasoning and --tool-call: not with --tokens"},
	} {
		ln := testutil.Listen(t)
		args := append([]string{"-L", ln.Addr().String(), "-t", "127.0.0.1:1", "-q"}, c.args...)
		code, _, stderr := runOn(t, nil, ln, args...)
		if code != ExitFailure || !strings.Contains(stderr, c.want) {
			t.Errorf("%q = %d, %q; want exit 1 and %q", c.args, code, stderr, c.want)
		}
	}
	if code, _, stderr := runMain(t, nil, "-L", "127.0.0.1:0", "--gateway-pid", "1"); code != ExitFailure || !strings.Contains(stderr, "--gateway-pid needs -t") {
		t.Errorf("--gateway-pid without -t = %d, %q", code, stderr)
	}
}

// TestCostMeterFinds: the gateway is --gateway-pid's, else the owner of
// the target's listening socket when the target is on this host; on
// another host, or when -t is the dummy server itself, none is accounted,
// and the reason is said.
func TestCostMeterFinds(t *testing.T) {
	self := func(string) (int, error) { return os.Getpid(), nil }
	other := func(string) (int, error) { return 1, nil }
	fails := func(string) (int, error) { return 0, fmt.Errorf("nothing listens") }
	for _, c := range []struct {
		name   string
		pids   []int
		addr   string
		find   listenerFinder
		pid    int    // the accounted process; 0: none
		unseen string // or why
	}{
		{"named", []int{1}, "192.0.2.1:8080", nil, 1, ""},
		{"listener", nil, "127.0.0.1:8080", other, 1, ""},
		{"another host", nil, "192.0.2.1:8080", other, 0, "is not on this host"},
		{"not looked for", nil, "127.0.0.1:8080", nil, 0, "was not looked for: --gateway-pid names it"},
		{"not found", nil, "[::1]:8080", fails, 0, "no process of this host found listening on [::1]:8080: nothing listens"},
		{"the dummy server", nil, "127.0.0.1:8080", self, 0, ""},
	} {
		m := newCostMeter(procstat.Proc, c.pids, c.addr, c.find)
		var g *summary.GatewaySample
		if m != nil {
			g = m.gateway
		}
		switch {
		case c.pid == 0 && c.unseen == "" && g != nil:
			t.Errorf("%s: gateway %+v, want none", c.name, g)
		case c.pid != 0 && (g == nil || len(g.PIDs) != 1 || g.PIDs[0] != c.pid || g.Unseen != ""):
			t.Errorf("%s: gateway %+v, want pid %d", c.name, g, c.pid)
		case c.unseen != "" && (g == nil || !strings.Contains(g.Unseen, c.unseen)):
			t.Errorf("%s: gateway %+v, want unseen %q", c.name, g, c.unseen)
		}
	}
	if !onThisHost("127.0.0.2:80") || !onThisHost("[::1]:80") || onThisHost("192.0.2.1:80") || onThisHost("nonsense") {
		t.Error("onThisHost: loopback is this host's, TEST-NET-1 is not")
	}
}

// TestPinLine: the pin line gives each gateway process all the CPUs the
// tool does not run on; without --cpus it suggests the first half for the
// tool.
func TestPinLine(t *testing.T) {
	cpus, err := onlineCPUs()
	if err != nil || len(cpus) < 2 {
		t.Skipf("needs 2 CPUs (%v, %v)", cpus, err)
	}
	ln := testutil.Listen(t)
	_, pid := startRelay(t, ln.Addr().String())
	m := newCostMeter(procstat.Proc, []int{pid}, "", nil)
	rest := formatCPUList(cpus[1:])
	p := m.pin([]int{cpus[0]})
	if p == nil || !p.Applied || p.Gateway != fmt.Sprintf("taskset -a -cp %s %d", rest, pid) ||
		p.Text() != fmt.Sprintf("the tool runs on CPUs %d (--cpus %d); for the gateway: taskset -a -cp %s %d", cpus[0], cpus[0], rest, pid) {
		t.Errorf("pin(--cpus %d) = %+v", cpus[0], p)
	}
	if s := m.pin(nil); s == nil || s.Applied || s.ToolCPUs != formatCPUList(cpus[:len(cpus)/2]) {
		t.Errorf("pin without --cpus = %+v, want a suggestion of the first half", s)
	}
	if none := m.pin(cpus); none != nil {
		t.Errorf("pin(every CPU) = %+v, want none: nothing left for the gateway", none)
	}
}

// TestCPUsPinsTheTool: with --cpus, every thread of the tool may run on
// those CPUs only (sched_getaffinity, as /proc/PID/task/TID/status shows
// it), and GOMAXPROCS is their number.
func TestCPUsPinsTheTool(t *testing.T) {
	cpus, err := onlineCPUs()
	if err != nil {
		t.Skip(err)
	}
	want := cpus[len(cpus)-1]
	args, _ := json.Marshal([]string{"-L", "127.0.0.1:0", "--cpus", strconv.Itoa(want)})
	tool := child(t, []string{mainEnv + "=" + string(args)})
	if line := tool.stderr.await(t, "--cpus:"); line != fmt.Sprintf("--cpus: the tool's threads run on CPUs %d (GOMAXPROCS 1)", want) {
		t.Errorf("the tool says %q", line)
	}
	tool.stderr.await(t, "running as server only") // its server's goroutines and threads are up
	pid := tool.cmd.Process.Pid
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) < 2 {
		t.Fatalf("the tool's threads: %v, %v", tasks, err)
	}
	for _, task := range tasks {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, task.Name()))
		if err != nil {
			continue // ended meanwhile
		}
		for line := range strings.SplitSeq(string(st), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok && strings.TrimSpace(v) != strconv.Itoa(want) {
				t.Errorf("thread %s may run on CPUs %s, want %d only", task.Name(), strings.TrimSpace(v), want)
			}
		}
	}
}

// TestNeighbourNamedInWarning: a CPU-bound neighbour — a busy process on
// every CPU — and the tool at a lower priority (nice 10: a tenth of a
// neighbour's share, and its wake-ups wait for the neighbours' time
// slices, milliseconds): the tool falls behind its schedule, and the
// warning names the other processes as who took the CPU, not the tool.
func TestNeighbourNamedInWarning(t *testing.T) {
	n := min(runtime.NumCPU(), 8)
	for range n {
		child(t, []string{spinEnv + "=1"})
	}
	ln := testutil.Listen(t)
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	path := filepath.Join(t.TempDir(), "run.json")
	args, _ := json.Marshal([]string{"-L", addr, "-t", addr, "-r", "2", "-c", "2", "-n", "50", "-d", "1", "-q", "--json", path})
	tool := child(t, []string{mainEnv + "=" + string(args), niceEnv + "=1", lnEnv + "=1"}, f)
	f.Close()
	select {
	case <-tool.done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the tool at nice 10 beside the neighbours did not finish in 2 minutes")
	}
	js, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no document: %v\nstderr:\n%s", err, tool.stderr.all.String())
	}
	var doc rundoc.Document
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	if h := doc.Self.Host; h == nil || h.Culprit != summary.CulpritOther {
		t.Errorf("host over the run %+v: want the other processes as culprit", h)
	}
	w := doc.Self.Warning
	if !strings.Contains(w, "fell behind its own emission schedule") || !strings.Contains(w, "other processes took the CPU") ||
		strings.Contains(w, "the tool itself") {
		t.Errorf("warning %q: want the tool behind its schedule and the other processes named", w)
	}
}

// TestCorpusResponses: --corpus responses streams the field reports'
// relay corpus — 1,024 text deltas, 256 reasoning events, a function call
// of 4 argument deltas — from an upstream that writes 16 KiB at a time
// (the server's tests check the writes), and records it; the user's
// --fault overrides its write shape.
func TestCorpusResponses(t *testing.T) {
	ln := testutil.Listen(t)
	addr := ln.Addr().String()
	path := filepath.Join(t.TempDir(), "run.json")
	var o, e bytes.Buffer
	code, sum := MeasureOn(context.Background(), ln, []string{"-L", addr, "-t", addr, "--corpus", "responses", "-d", "0", "-q", "--json", path}, &o, &e)
	if code != ExitOK {
		t.Fatalf("--corpus responses = %d\n%s\n%s", code, o.String(), e.String())
	}
	c := sum.Config
	if c.API != "responses" || c.Tokens != 1024 || c.Reasoning != 256 || c.ToolCall != 4 || c.Faults != "write_bytes=16384" || c.Corpus != "responses" {
		t.Errorf("config %+v: want the corpus's settings", c.Config)
	}
	g := sum.Gateway
	// Every phase's token received: text, reasoning and the arguments.
	if g.OK != 1 || g.Tokens != 1024 || g.ByPiTs+g.ByContent != 1024+256+4 {
		t.Errorf("batch: %d ok, %d text tokens, %d tokens in all; want 1, 1024, 1284", g.OK, g.Tokens, g.ByPiTs+g.ByContent)
	}
	cl, err := parseArgs([]string{"-t", "127.0.0.1:1", "--corpus", "responses", "--fault", "write_bytes=0"})
	if err != nil || cl.cfg.Faults != "write_bytes=0" {
		t.Errorf("--fault after the corpus: faults %q, %v; want the user's write_bytes=0", cl.cfg.Faults, err)
	}
}
