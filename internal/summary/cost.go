package summary

import (
	"fmt"
	"strings"

	"github.com/sse-latency/sse-latency/internal/procstat"
)

// Cost is what a batch cost in CPU, and who else ran meanwhile: the
// tool's own CPU, the gateway's (its processes, found or named by
// --gateway-pid, with their children), and the host's CPUs split into the
// tool's share, the gateway's, everything else's and the hypervisor's
// (steal). Per-token figures divide by every token the batch received,
// per-stream ones by every request it started (warm-ups and failed
// requests included: the gateway worked for them too).
type Cost struct {
	WallS   float64      `json:"wall_s"`            // the batch's length, from its first sample to its last
	Tokens  int64        `json:"tokens"`            // tokens received, every request of the batch
	Streams int          `json:"streams"`           // requests started
	Tool    CPUCost      `json:"tool"`              // this process: client and dummy server
	Gateway *GatewayCost `json:"gateway,omitempty"` // absent when the run named no gateway process
	Host    *HostCost    `json:"host,omitempty"`    // absent where /proc/stat cannot be read
}

// CPUCost is the CPU time of a process (or a tree of them) during a
// batch, in total and per token, per stream and per second of the batch.
type CPUCost struct {
	CPUS           float64 `json:"cpu_s"`             // user + system
	UserS          float64 `json:"user_s"`            // the user time
	SystemS        float64 `json:"system_s"`          // the system (kernel) time
	CPUPerTokenUs  float64 `json:"cpu_per_token_us"`  // cpu_s / tokens, microseconds
	CPUPerStreamMs float64 `json:"cpu_per_stream_ms"` // cpu_s / streams, milliseconds
	Cores          float64 `json:"cores"`             // cpu_s / wall_s: 1 is one CPU busy the whole batch
}

// GatewayCost is the gateway's processes' cost during a batch. When they
// could not be seen (Unseen) only the names are there.
type GatewayCost struct {
	PIDs  []int  `json:"pids"`           // the processes accounted, children included
	Name  string `json:"name,omitempty"` // the first one's command name
	Exe   string `json:"exe,omitempty"`  // its executable, when readable
	Found string `json:"found"`          // how: "--gateway-pid", or "listener" (the process that owns the target's listening socket)
	// Unseen says why the gateway's processes are not accounted ("the
	// target 10.0.0.5:8080 is not on this host"); the figures are then 0.
	Unseen string `json:"unseen,omitempty"`

	CPUCost
	Processes int `json:"processes"` // at the end of the batch
	Threads   int `json:"threads"`   // at the end of the batch, all processes
	// Switches are the times its threads were switched onto a CPU (the
	// timeslices of their schedstat: each a context switch into them,
	// after a wait or a preemption).
	Switches         uint64  `json:"switches"`
	SwitchesPerToken float64 `json:"switches_per_token"`
	// Writes are its write system calls (syscw of /proc/PID/io: write,
	// writev, sendfile; not send, sendto or sendmsg), when WritesKnown.
	Writes          uint64  `json:"writes"`
	WriteBytes      uint64  `json:"write_bytes"`
	WritesPerToken  float64 `json:"writes_per_token"`
	WritesPerStream float64 `json:"writes_per_stream"`
	WritesKnown     bool    `json:"writes_known"`     // every process's /proc/PID/io was readable
	RSSGrowthBytes  int64   `json:"rss_growth_bytes"` // resident memory at the end minus at the start
	// Exited names the named processes that ended during the batch: their
	// CPU until then is counted, not what came after.
	Exited string `json:"exited,omitempty"`
}

// HostCost is the host's CPUs during a batch: how busy, and whose the
// busy time was, each as a share of all the CPUs' time (1 = every CPU
// busy the whole batch).
type HostCost struct {
	CPUs         int        `json:"cpus"`          // CPUs online
	BusyShare    float64    `json:"busy_share"`    // not idle, not waiting for I/O, not stolen
	ToolShare    float64    `json:"tool_share"`    // this process
	GatewayShare float64    `json:"gateway_share"` // the gateway's processes (0 when unseen)
	OtherShare   float64    `json:"other_share"`   // busy time that was neither's: other processes, interrupts
	StealShare   float64    `json:"steal_share"`   // time the hypervisor gave another guest (0 on bare metal)
	PerCPU       []CPUShare `json:"per_cpu"`       // each CPU's
	// Culprit is whose share was the largest: CulpritTool,
	// CulpritGateway, CulpritOther or CulpritSteal; CulpritIdle when no
	// CPU was busy (or stolen) for IdleBusyShare of the batch or more.
	Culprit string `json:"culprit"`
}

// CPUShare is one CPU's busy and stolen shares of a batch.
type CPUShare struct {
	CPU        int     `json:"cpu"`
	BusyShare  float64 `json:"busy_share"`
	StealShare float64 `json:"steal_share"`
}

// The culprits of HostCost.Culprit.
const (
	CulpritTool    = "tool"
	CulpritGateway = "gateway"
	CulpritOther   = "other"
	CulpritSteal   = "steal"
	// CulpritIdle: every CPU was mostly idle, so a lack of CPU over the
	// run is not why the tool was late (its wake-ups from idle were, or
	// bursts too short for the host's counters).
	CulpritIdle = "idle"
)

// IdleBusyShare is the busy (and stolen) share of its time below which
// every CPU must stay for the host to count as idle (CulpritIdle): a tool
// that lacked CPU would have kept at least one CPU busy most of the run.
const IdleBusyShare = 0.2

// SaturatedCores is the gateway's CPU, in cores, from which it is said to
// saturate a core (GatewayCost.SaturatesCore): a single-threaded
// gateway cannot go faster.
const SaturatedCores = 0.9

// SaturatesCore reports whether the gateway used at least SaturatedCores
// of CPU over the batch.
func (g *GatewayCost) SaturatesCore() bool {
	return g != nil && g.Unseen == "" && g.Cores >= SaturatedCores
}

// CostSample is what a batch's samples measured, the raw figures a Cost
// is derived from: the counters' differences between the batch's first
// and last samples. Samples of several batches (the rounds of one side)
// add up.
type CostSample struct {
	WallNs  int64
	Tokens  int64
	Streams int
	// The tool's own CPU (getrusage), seconds.
	ToolUserS, ToolSystemS float64
	// Host is /proc/stat's difference; nil when it could not be read.
	Host *procstat.Host
	// Gateway is its processes' usage; nil when the run named none.
	Gateway *GatewaySample
}

// GatewaySample is the gateway's part of a CostSample.
type GatewaySample struct {
	PIDs   []int
	Name   string
	Exe    string
	Found  string
	Unseen string // why it is not accounted; the usage is then zero
	Usage  procstat.Usage
}

// Add adds o's figures to s (the next round of the same side).
func (s *CostSample) Add(o CostSample) {
	s.WallNs += o.WallNs
	s.Tokens += o.Tokens
	s.Streams += o.Streams
	s.ToolUserS += o.ToolUserS
	s.ToolSystemS += o.ToolSystemS
	switch {
	case o.Host == nil:
	case s.Host == nil:
		h := *o.Host
		h.CPUs = append([]procstat.CPU(nil), o.Host.CPUs...)
		s.Host = &h
	default:
		s.Host = addHost(s.Host, o.Host)
	}
	switch {
	case o.Gateway == nil:
	case s.Gateway == nil:
		g := *o.Gateway
		s.Gateway = &g
	default:
		s.Gateway.Usage = addUsage(s.Gateway.Usage, o.Gateway.Usage)
		if s.Gateway.Unseen == "" {
			s.Gateway.Unseen = o.Gateway.Unseen
		}
	}
}

func addTimes(a, b procstat.CPUTimes) procstat.CPUTimes {
	return procstat.CPUTimes{User: a.User + b.User, Nice: a.Nice + b.Nice, System: a.System + b.System, Idle: a.Idle + b.Idle,
		IOWait: a.IOWait + b.IOWait, IRQ: a.IRQ + b.IRQ, SoftIRQ: a.SoftIRQ + b.SoftIRQ, Steal: a.Steal + b.Steal}
}

func addHost(a, b *procstat.Host) *procstat.Host {
	out := &procstat.Host{All: addTimes(a.All, b.All)}
	for _, c := range a.CPUs {
		for _, d := range b.CPUs {
			if c.ID == d.ID {
				out.CPUs = append(out.CPUs, procstat.CPU{ID: c.ID, CPUTimes: addTimes(c.CPUTimes, d.CPUTimes)})
			}
		}
	}
	return out
}

func addUsage(a, b procstat.Usage) procstat.Usage {
	a.CPUNs += b.CPUNs
	a.UserTicks += b.UserTicks
	a.SystemTicks += b.SystemTicks
	a.Switches += b.Switches
	a.Writes += b.Writes
	a.WriteBytes += b.WriteBytes
	a.WritesKnown = a.WritesKnown && b.WritesKnown
	a.RSSGrowthPages += b.RSSGrowthPages
	a.Processes, a.Threads = b.Processes, b.Threads // the last batch's end
	a.Exited = append(a.Exited, b.Exited...)
	a.Started += b.Started
	a.Ended += b.Ended
	return a
}

// NewCost derives the cost of a batch from its sample; pageBytes is the
// size of a memory page (os.Getpagesize).
func NewCost(s CostSample, pageBytes int) *Cost {
	c := &Cost{WallS: float64(s.WallNs) / 1e9, Tokens: s.Tokens, Streams: s.Streams}
	c.Tool = c.cpuCost(s.ToolUserS, s.ToolSystemS, s.ToolUserS+s.ToolSystemS)
	if g := s.Gateway; g != nil {
		gc := &GatewayCost{PIDs: append([]int{}, g.PIDs...), Name: g.Name, Exe: g.Exe, Found: g.Found, Unseen: g.Unseen}
		if g.Unseen == "" {
			u := g.Usage
			cpu := float64(u.CPUNs) / 1e9
			// The ticks split the precise total: user and system in
			// their proportion.
			user, sys := cpu, 0.0
			if t := u.UserTicks + u.SystemTicks; t > 0 {
				user = cpu * float64(u.UserTicks) / float64(t)
				sys = cpu - user
			}
			gc.CPUCost = c.cpuCost(user, sys, cpu)
			gc.Processes, gc.Threads = u.Processes, u.Threads
			gc.Switches = u.Switches
			gc.SwitchesPerToken = per(float64(u.Switches), float64(s.Tokens))
			gc.WritesKnown = u.WritesKnown
			if u.WritesKnown {
				gc.Writes, gc.WriteBytes = u.Writes, u.WriteBytes
				gc.WritesPerToken = per(float64(u.Writes), float64(s.Tokens))
				gc.WritesPerStream = per(float64(u.Writes), float64(s.Streams))
			}
			gc.RSSGrowthBytes = u.RSSGrowthPages * int64(pageBytes)
			gc.Exited = exitedText(u.Exited)
		}
		c.Gateway = gc
	}
	if s.Host != nil {
		c.Host = c.hostCost(*s.Host)
	}
	return c
}

// cpuCost is the CPUCost of a process that used cpu seconds, split into
// user and sys, during the batch of c.
func (c *Cost) cpuCost(user, sys, cpu float64) CPUCost {
	return CPUCost{CPUS: cpu, UserS: user, SystemS: sys,
		CPUPerTokenUs:  per(cpu*1e6, float64(c.Tokens)),
		CPUPerStreamMs: per(cpu*1e3, float64(c.Streams)),
		Cores:          per(cpu, c.WallS)}
}

// hostCost splits the host's time h among the tool, the gateway and the
// rest.
func (c *Cost) hostCost(h procstat.Host) *HostCost {
	total := float64(h.All.Total()) / procstat.TicksPerSecond // CPU-seconds
	out := &HostCost{CPUs: len(h.CPUs), PerCPU: []CPUShare{}}
	if total <= 0 {
		out.Culprit = CulpritTool
		return out
	}
	busy := float64(h.All.Busy()) / procstat.TicksPerSecond
	tool := c.Tool.CPUS
	gw := 0.0
	if c.Gateway != nil {
		gw = c.Gateway.CPUS
	}
	out.BusyShare = busy / total
	out.ToolShare = min(tool/total, 1)
	out.GatewayShare = min(gw/total, 1)
	out.OtherShare = max(busy-tool-gw, 0) / total
	out.StealShare = float64(h.All.Steal) / procstat.TicksPerSecond / total
	for _, p := range h.CPUs {
		if t := float64(p.Total()); t > 0 {
			out.PerCPU = append(out.PerCPU, CPUShare{CPU: p.ID, BusyShare: float64(p.Busy()) / t, StealShare: float64(p.Steal) / t})
		}
	}
	out.Culprit = Culprit(out.ToolShare, out.GatewayShare, out.OtherShare, out.StealShare)
	if idle(out.PerCPU) {
		out.Culprit = CulpritIdle
	}
	return out
}

// idle reports whether every CPU of cpus (at least one) was busy or
// stolen for less than IdleBusyShare of its time.
func idle(cpus []CPUShare) bool {
	for _, p := range cpus {
		if p.BusyShare+p.StealShare >= IdleBusyShare {
			return false
		}
	}
	return len(cpus) > 0
}

// Culprit names whose share of the host was the largest; the tool on a
// tie, as the one the user controls first.
func Culprit(tool, gateway, other, steal float64) string {
	best, who := tool, CulpritTool
	for _, c := range []struct {
		share float64
		who   string
	}{{gateway, CulpritGateway}, {other, CulpritOther}, {steal, CulpritSteal}} {
		if c.share > best {
			best, who = c.share, c.who
		}
	}
	return who
}

// per is a / b, 0 when b is 0.
func per(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// exitedText names the processes that exited, "" for none.
func exitedText(ex []procstat.Exited) string {
	if len(ex) == 0 {
		return ""
	}
	parts := make([]string, len(ex))
	for i, e := range ex {
		parts[i] = fmt.Sprintf("%s (pid %d)", e.Comm, e.PID)
	}
	return strings.Join(parts, ", ") + " exited during the batch: its CPU until then is counted, not after"
}
