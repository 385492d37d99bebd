package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/sse-latency/sse-latency/internal/summary"
)

// WriteCost writes the cost block (Go tool only; the CLI omits it under
// --compat) when the gateway batch of s was sampled: what the gateway's
// processes spent per token and per stream (CPU, write system calls,
// context switches, memory), what the tool spent, how busy the host's
// CPUs were in each batch and whose the time was, and how to pin the tool
// and the gateway apart.
//
//	=== cost (per token received; from /proc, sampled around each batch) ===
//	gateway    haproxy pid 1234 (/usr/sbin/haproxy; 1 process, 2 threads), the owner of the target's listening socket
//	gw cpu     4.210us/token (user 1.800us, system 2.410us), 4.210ms/stream, 0.42 cores
//	gw writes  1.00/token, 1000.0/stream, 152 bytes/write (syscw: write, writev, sendfile; not send, sendto, sendmsg)
//	gw other   1.02 context switches/token (10220 in all), resident memory +1.2MB
//	tool cpu   12.300us/token (user 8.100us, system 4.200us), 0.95 cores
//	host       loopback: 2 CPUs 40% busy (cpu0 45%, cpu1 35%): the tool 38%, the gateway 0%, other 2%, steal 0%
//	host       gateway: 2 CPUs 71% busy (cpu0 80%, cpu1 62%): the tool 48%, the gateway 21%, other 2%, steal 0%
//	pin apart  --cpus 0 for the tool, taskset -a -cp 1 1234 for the gateway
func WriteCost(w io.Writer, s *summary.Run) error {
	// Every line but the title is a label of costLabelWidth columns and
	// its text (the HTML report splits them there).
	gw := s.Gateway()
	if gw == nil || gw.Cost == nil {
		return nil
	}
	c := gw.Cost
	p := printer{w: w}
	p.printf("=== cost (per token received; from /proc, sampled around each batch) ===\n")
	if g := c.Gateway; g != nil {
		tps := 0.0
		if c.Streams > 0 {
			tps = float64(c.Tokens) / float64(c.Streams)
		}
		writeGatewayCost(&p, g, tps)
	}
	p.printf("%-10s %s\n", "tool cpu", cpuText(&c.Tool, false))
	for i := range s.Batches {
		b := &s.Batches[i]
		if b.Cost != nil && b.Cost.Host != nil {
			p.printf("%-10s %s: %s\n", "host", b.Name, hostText(b.Cost.Host))
		}
	}
	if s.Self.Pin != nil {
		p.printf("%-10s %s\n", "pin apart", s.Self.Pin.Text())
	}
	return p.err
}

// costLabelWidth is the width of the cost block's labels and the space
// after them.
const costLabelWidth = 11

// writeGatewayCost writes the gateway's lines of the cost block.
func writeGatewayCost(p *printer, g *summary.GatewayCost, tokensPerStream float64) {
	if g.Unseen != "" {
		p.printf("%-10s not seen: %s\n", "gateway", g.Unseen)
		return
	}
	how := "named by --gateway-pid"
	if g.Found == "listener" {
		how = "the owner of the target's listening socket"
	}
	exe := ""
	if g.Exe != "" {
		exe = g.Exe + "; "
	}
	p.printf("%-10s %s pid %s (%s%d %s, %d %s), %s\n", "gateway", g.Name, joinPIDs(g.PIDs), exe,
		g.Processes, plural(int64(g.Processes), "process"), g.Threads, plural(int64(g.Threads), "thread"), how)
	p.printf("%-10s %s\n", "gw cpu", cpuText(&g.CPUCost, true))
	switch {
	case g.WritesKnown && g.WritesPerStream < 1 && tokensPerStream > 1:
		// Fewer writes than streams that each had tokens to forward.
		p.printf("%-10s %.2f/token, %.1f/stream: fewer than its streams, so it writes with send, sendto or sendmsg, "+
			"which syscw does not count (haproxy does)\n", "gw writes", g.WritesPerToken, g.WritesPerStream)
	case g.WritesKnown:
		perWrite := ""
		if g.Writes > 0 {
			perWrite = fmt.Sprintf(", %.0f bytes/write", float64(g.WriteBytes)/float64(g.Writes))
		}
		p.printf("%-10s %.2f/token, %.1f/stream%s (syscw: write, writev, sendfile; not send, sendto, sendmsg)\n",
			"gw writes", g.WritesPerToken, g.WritesPerStream, perWrite)
	default:
		p.printf("%-10s unknown: /proc/PID/io of its processes could not be read (run as their user, or root)\n", "gw writes")
	}
	p.printf("%-10s %.2f context switches/token (%d in all), resident memory %s\n", "gw other",
		g.SwitchesPerToken, g.Switches, signedBytes(g.RSSGrowthBytes))
	if g.Exited != "" {
		p.printf("%-10s %s\n", "gw exited", g.Exited)
	}
}

// cpuText is a CPU cost: "4.210us/token (user 1.800us, system 2.410us),
// 4.210ms/stream, 0.42 cores", the stream figure with streams.
func cpuText(c *summary.CPUCost, streams bool) string {
	s := fmt.Sprintf("%.3fus/token (user %.3fus, system %.3fus)", c.CPUPerTokenUs,
		perToken(c.UserS, c.CPUS, c.CPUPerTokenUs), perToken(c.SystemS, c.CPUS, c.CPUPerTokenUs))
	if streams {
		s += fmt.Sprintf(", %.3fms/stream", c.CPUPerStreamMs)
	}
	s += fmt.Sprintf(", %.2f cores", c.Cores)
	if streams && c.Cores >= summary.SaturatedCores {
		s += " (saturates a core)"
	}
	return s
}

// perToken is part's share of the per-token figure of total.
func perToken(part, total, perTokenUs float64) float64 {
	if total == 0 {
		return 0
	}
	return perTokenUs * part / total
}

// hostText is a batch's host line: "2 CPUs 71% busy (cpu0 80%, cpu1
// 62%): the tool 48%, the gateway 21%, other 2%, steal 0%".
func hostText(h *summary.HostCost) string {
	per := make([]string, len(h.PerCPU))
	for i, c := range h.PerCPU {
		per[i] = fmt.Sprintf("cpu%d %.0f%%", c.CPU, 100*c.BusyShare)
	}
	return fmt.Sprintf("%d %s %.0f%% busy (%s): the tool %.0f%%, the gateway %.0f%%, other %.0f%%, steal %.0f%%",
		h.CPUs, plural(int64(h.CPUs), "CPU"), 100*h.BusyShare, strings.Join(per, ", "),
		100*h.ToolShare, 100*h.GatewayShare, 100*h.OtherShare, 100*h.StealShare)
}

// signedBytes is a memory growth: "+1.2MB", "-64.0kB", "+0B".
func signedBytes(n int64) string {
	sign := "+"
	if n < 0 {
		sign, n = "-", -n
	}
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%s%.1fMB", sign, float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%s%.1fkB", sign, float64(n)/(1<<10))
	}
	return fmt.Sprintf("%s%dB", sign, n)
}

func joinPIDs(pids []int) string {
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, ", ")
}
