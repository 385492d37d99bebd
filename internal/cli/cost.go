package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sse-latency/sse-latency/internal/procnet"
	"github.com/sse-latency/sse-latency/internal/procstat"
	"github.com/sse-latency/sse-latency/internal/summary"
)

// costMeter samples, before and after each batch, what the batch cost in
// CPU: the tool's own (getrusage), the host's CPUs (/proc/stat) and the
// gateway's processes with their children (/proc/PID/…). A sample reads a
// few files; nothing is read per token.
type costMeter struct {
	fs      procstat.FS
	scanner *procstat.Scanner // the gateway's tree, sample after sample
	hostOK  bool              // /proc/stat is readable
	// gateway names the gateway's processes; nil when none is accounted,
	// unseen then says why (the target is on another host, …).
	gateway *summary.GatewaySample
}

// costPoint is one sample.
type costPoint struct {
	ns           int64 // monotonic
	user, system float64
	host         procstat.Host
	hostOK       bool
	tree         procstat.Tree
	treeOK       bool
}

// checkGatewayPIDs checks the --gateway-pid processes before the run
// starts: each must exist, be readable and not be this process. A process
// whose io file cannot be read (another user's, without root) is
// accounted without its writes, which it notes.
func checkGatewayPIDs(f procstat.FS, pids []int, note func(format string, a ...any)) error {
	for _, pid := range pids {
		if pid == os.Getpid() {
			return fmt.Errorf("--gateway-pid %d: that is sse-latency itself", pid)
		}
		if _, err := f.Stat(pid); err != nil {
			switch {
			case errors.Is(err, procstat.ErrNoProcess):
				return fmt.Errorf("--gateway-pid %d: no such process", pid)
			case errors.Is(err, fs.ErrNotExist):
				return fmt.Errorf("--gateway-pid %d: no %s/%d/stat to read its CPU from (the accounting needs Linux's /proc)", pid, f, pid)
			}
			return fmt.Errorf("--gateway-pid %d: cannot read it: %v", pid, err)
		}
		if _, err := f.IO(pid); err != nil {
			note("note: --gateway-pid %d: %s/%d/io cannot be read (%v): its writes are not counted (run as its user, or root)\n",
				pid, f, pid, unwrapPath(err))
		}
	}
	return nil
}

// unwrapPath is err without the path a *fs.PathError repeats.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// newCostMeter returns the meter of a run whose gateway batch goes to
// gwAddr: its gateway is the --gateway-pid processes, or else the process
// that owns gwAddr's listening socket when gwAddr is on this host (find
// looks it up; nil: not looked for). It returns nil where nothing can be
// sampled (no /proc).
func newCostMeter(f procstat.FS, pids []int, gwAddr string, find listenerFinder) *costMeter {
	m := &costMeter{fs: f, scanner: procstat.NewScanner(f)}
	_, err := f.Host()
	m.hostOK = err == nil
	switch {
	case len(pids) > 0:
		m.gateway = &summary.GatewaySample{PIDs: pids, Found: "--gateway-pid"}
	case gwAddr == "":
	case !onThisHost(gwAddr):
		m.gateway = &summary.GatewaySample{Found: "listener",
			Unseen: "the target " + gwAddr + " is not on this host: its processes cannot be seen from here (--gateway-pid names local ones)"}
	case find == nil:
		m.gateway = &summary.GatewaySample{Found: "listener",
			Unseen: "the process that listens on " + gwAddr + " was not looked for: --gateway-pid names it"}
	default:
		pid, err := find(gwAddr)
		switch {
		case err != nil:
			m.gateway = &summary.GatewaySample{Found: "listener", Unseen: "no process of this host found listening on " + gwAddr + ": " + err.Error()}
		case pid == os.Getpid():
			// -t is the dummy server itself: there is no gateway.
		default:
			m.gateway = &summary.GatewaySample{PIDs: []int{pid}, Found: "listener"}
		}
	}
	if g := m.gateway; g != nil && len(g.PIDs) > 0 {
		if s, err := f.Stat(g.PIDs[0]); err == nil {
			g.Name = s.Comm
		}
		g.Exe = f.Exe(g.PIDs[0])
	}
	if !m.hostOK && (m.gateway == nil || len(m.gateway.PIDs) == 0) {
		return nil
	}
	return m
}

// listenerFinder returns the pid of the process that owns the listening
// socket of addr (ip:port) on this host.
type listenerFinder func(addr string) (int, error)

// onThisHost reports whether addr's IP is one of this host's: loopback,
// or an address of one of its interfaces.
func onThisHost(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	if ip.IsLoopback() || ip.IsUnspecified() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Unmap() == ip {
			return true
		}
	}
	return false
}

// describe is the line that says which gateway process is accounted, or
// why none is; "" without a gateway.
func (m *costMeter) describe() string {
	if m == nil || m.gateway == nil {
		return ""
	}
	g := m.gateway
	if g.Unseen != "" {
		return "gateway cost: " + g.Unseen
	}
	how := "named by --gateway-pid"
	if g.Found == "listener" {
		how = "found as the owner of the target's listening socket"
	}
	exe := ""
	if g.Exe != "" {
		exe = ", " + g.Exe
	}
	return fmt.Sprintf("gateway cost: %s (pid %s%s), %s: its CPU, writes and memory, children included, are accounted per batch",
		g.Name, joinInts(g.PIDs, ", "), exe, how)
}

// sample takes a sample now. A nil meter samples only the tool's CPU.
func (m *costMeter) sample() costPoint {
	p := costPoint{ns: time.Now().UnixNano()}
	p.user, p.system = cpuTimes()
	if m == nil {
		return p
	}
	if m.hostOK {
		p.host, p.hostOK = hostSample(m.fs)
	}
	if g := m.gateway; g != nil && len(g.PIDs) > 0 {
		t, err := m.scanner.Tree(g.PIDs)
		p.tree, p.treeOK = t, err == nil
	}
	return p
}

func hostSample(f procstat.FS) (procstat.Host, bool) {
	h, err := f.Host()
	return h, err == nil
}

// since returns what the batch that began at p cost, tokens received and
// streams started in it.
func (m *costMeter) since(p costPoint, tokens int64, streams int) summary.CostSample {
	now := m.sample()
	s := summary.CostSample{WallNs: now.ns - p.ns, Tokens: tokens, Streams: streams,
		ToolUserS: now.user - p.user, ToolSystemS: now.system - p.system}
	if m == nil {
		return s
	}
	if p.hostOK && now.hostOK {
		h := now.host.Sub(p.host)
		s.Host = &h
	}
	if g := m.gateway; g != nil {
		gs := *g
		if p.treeOK && now.treeOK {
			gs.Usage = now.tree.Since(p.tree)
			if len(p.tree.Missing) == len(g.PIDs) {
				gs.Unseen = fmt.Sprintf("its processes (pid %s) had exited before the batch", joinInts(g.PIDs, ", "))
			}
		} else if len(g.PIDs) > 0 && gs.Unseen == "" {
			gs.Unseen = "its processes could not be read"
		}
		s.Gateway = &gs
	}
	return s
}

// pin returns how the tool and the gateway would run apart: the tool on
// tool (the --cpus list, applied; empty: a suggestion, the first half of
// the host's CPUs), each gateway process on the others. Nil without a
// gateway process, or when the CPUs cannot be split.
func (m *costMeter) pin(tool []int) *summary.Pin {
	if m == nil || m.gateway == nil || len(m.gateway.PIDs) == 0 {
		return nil
	}
	all, err := onlineCPUs()
	if err != nil || len(all) < 2 {
		return nil
	}
	applied := len(tool) > 0
	if !applied {
		tool = all[:len(all)/2]
	}
	var rest []int
	for _, c := range all {
		if !slices.Contains(tool, c) {
			rest = append(rest, c)
		}
	}
	if len(rest) == 0 {
		return nil
	}
	pids := m.gateway.PIDs
	if t, err := m.fs.Tree(pids); err == nil && len(t.Procs) > 0 {
		pids = slices.Sorted(maps.Keys(t.Procs))
	}
	cmds := make([]string, len(pids))
	for i, pid := range pids {
		cmds[i] = fmt.Sprintf("taskset -a -cp %s %d", formatCPUList(rest), pid)
	}
	return &summary.Pin{ToolCPUs: formatCPUList(tool), Applied: applied, Gateway: strings.Join(cmds, "; ")}
}

func joinInts(xs []int, sep string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, sep)
}

// findListener finds the gateway's process from the target's address: the
// process that owns its listening socket (package procnet).
func findListener(addr string) (int, error) {
	o, err := procnet.ListenerOwner(addr)
	return o.PID, err
}
