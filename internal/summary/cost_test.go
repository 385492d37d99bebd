package summary

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/procstat"
	"github.com/sse-latency/sse-latency/internal/stats"
)

// hostCase is one file of testdata/host: /proc/stat before and after a
// second, the tool's CPU and the gateway's over it.
type hostCase struct {
	host             procstat.Host // after minus before
	tool, gatewayCPU float64
}

func readHostCase(t *testing.T, name string) hostCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "host", name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	head, rest, _ := strings.Cut(string(b), "--- before\n")
	before, after, ok := strings.Cut(rest, "--- after\n")
	if !ok {
		t.Fatalf("%s: no --- after", name)
	}
	var c hostCase
	for line := range strings.SplitSeq(head, "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "tool_cpu_s":
			c.tool, _ = strconv.ParseFloat(v, 64)
		case "gateway_cpu_s":
			c.gatewayCPU, _ = strconv.ParseFloat(v, 64)
		}
	}
	hb, err := procstat.ParseHost([]byte(before))
	if err != nil {
		t.Fatal(err)
	}
	ha, err := procstat.ParseHost([]byte(after))
	if err != nil {
		t.Fatal(err)
	}
	c.host = ha.Sub(hb)
	return c
}

// sample is the CostSample of a case: one second, 1000 tokens of 10
// streams, the tool's CPU all user, the gateway's as the case says.
func (c hostCase) sample() CostSample {
	h := c.host
	return CostSample{WallNs: 1e9, Tokens: 1000, Streams: 10, ToolUserS: c.tool, Host: &h,
		Gateway: &GatewaySample{PIDs: []int{4242}, Name: "haproxy", Found: "listener",
			Usage: procstat.Usage{CPUNs: uint64(c.gatewayCPU * 1e9), UserTicks: 3, SystemTicks: 1, Writes: 2000, WritesKnown: true,
				Processes: 1, Threads: 2}}}
}

// TestAttribution: recorded /proc/stat samples of a tool-bound, a
// gateway-bound, an other-bound, a stolen and an idle second each name
// their culprit, in the cost and in the lateness warning with its advice.
func TestAttribution(t *testing.T) {
	late := stats.NewMetric()
	late.Record(5_000_000) // 5 ms late: the warning is due
	cases := []struct {
		file, culprit string
		says          []string
	}{
		{"tool", CulpritTool, []string{"the tool itself took the CPU", "lower -c or raise -d", "--server"}},
		{"gateway", CulpritGateway, []string{"the gateway took the CPU", "taskset -a -cp 1 4242", "--cpus"}},
		{"other", CulpritOther, []string{"other processes took the CPU", "not overloaded"}},
		{"steal", CulpritSteal, []string{"hypervisor", "steal"}},
		{"idle", CulpritIdle, []string{"no CPU was a fifth busy", "waking the tool late", "emit->recv is not affected"}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			hc := readHostCase(t, c.file)
			cost := NewCost(hc.sample(), 4096)
			h := cost.Host
			if h == nil || h.CPUs != 2 || len(h.PerCPU) != 2 {
				t.Fatalf("host cost %+v: want 2 CPUs, each with its share", h)
			}
			if h.Culprit != c.culprit {
				t.Errorf("culprit = %q, want %q (%+v)", h.Culprit, c.culprit, h)
			}
			if sum := h.ToolShare + h.GatewayShare + h.OtherShare; sum > h.BusyShare+1e-9 && h.OtherShare > 0 {
				t.Errorf("shares %+v: tool + gateway + other above busy", h)
			}
			w := OverloadWarning(late, h, cost.Gateway, &Pin{ToolCPUs: "0", Gateway: "taskset -a -cp 1 4242"})
			for _, s := range append(c.says, "fell behind its own emission schedule", "the host's 2 CPUs were") {
				if !strings.Contains(w, s) {
					t.Errorf("warning %q does not say %q", w, s)
				}
			}
			if c.culprit != CulpritTool && strings.Contains(w, "the tool itself") {
				t.Errorf("warning %q blames the tool, the culprit is %s", w, c.culprit)
			}
		})
	}
}

// TestIdle: the host counts as idle only while every CPU stays below
// IdleBusyShare, steal included.
func TestIdle(t *testing.T) {
	cases := []struct {
		name string
		cpus []CPUShare
		want bool
	}{
		{"no CPUs", nil, false},
		{"both quiet", []CPUShare{{BusyShare: 0.02}, {BusyShare: 0.01}}, true},
		{"one just below", []CPUShare{{BusyShare: 0.19}, {BusyShare: 0.01}}, true},
		{"one at the share", []CPUShare{{BusyShare: 0.01}, {BusyShare: IdleBusyShare}}, false},
		{"stolen counts", []CPUShare{{BusyShare: 0.1, StealShare: 0.1}, {}}, false},
		{"one saturated", []CPUShare{{BusyShare: 1}, {BusyShare: 0}}, false},
	}
	for _, c := range cases {
		if got := idle(c.cpus); got != c.want {
			t.Errorf("%s: idle(%+v) = %v, want %v", c.name, c.cpus, got, c.want)
		}
	}
}

func TestOverloadWarningWithoutHost(t *testing.T) {
	late := stats.NewMetric()
	late.Record(2_000_000)
	if w := OverloadWarning(late, nil, nil, nil); !strings.HasSuffix(w, "these figures describe the tool's overload, not the gateway; lower -c or raise -d") {
		t.Errorf("without a host sample: %q, want the tool's overload", w)
	}
	ok := stats.NewMetric()
	ok.Record(10_000)
	if w := OverloadWarning(ok, &HostCost{Culprit: CulpritOther}, nil, nil); w != "" {
		t.Errorf("not late: %q, want none", w)
	}
}

// TestNewCost checks the derived figures of a sample.
func TestNewCost(t *testing.T) {
	s := CostSample{WallNs: 2e9, Tokens: 4000, Streams: 4, ToolUserS: 0.3, ToolSystemS: 0.1,
		Gateway: &GatewaySample{PIDs: []int{7}, Name: "nginx", Found: "--gateway-pid",
			Usage: procstat.Usage{CPUNs: 80e6, UserTicks: 6, SystemTicks: 2, Switches: 400,
				Writes: 4004, WriteBytes: 1 << 20, WritesKnown: true, RSSGrowthPages: 3, Processes: 2, Threads: 2,
				Exited: []procstat.Exited{{PID: 8, Comm: "nginx"}}}}}
	c := NewCost(s, 4096)
	g := c.Gateway
	near := func(what string, got, want float64) {
		t.Helper()
		if d := got - want; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	near("tool cpu/token", c.Tool.CPUPerTokenUs, 100)
	near("tool cores", c.Tool.Cores, 0.2)
	near("gateway cpu/token", g.CPUPerTokenUs, 20)
	near("gateway user", g.UserS, 0.06)
	near("gateway system", g.SystemS, 0.02)
	near("gateway cpu/stream", g.CPUPerStreamMs, 20)
	near("writes/token", g.WritesPerToken, 1.001)
	near("writes/stream", g.WritesPerStream, 1001)
	near("switches/token", g.SwitchesPerToken, 0.1)
	if g.RSSGrowthBytes != 3*4096 || g.Processes != 2 || !strings.Contains(g.Exited, "nginx (pid 8) exited") {
		t.Errorf("gateway cost %+v", g)
	}
	if c.Host != nil {
		t.Errorf("host cost without a host sample: %+v", c.Host)
	}
	// Rounds of one side add up.
	var sum CostSample
	sum.Add(s)
	sum.Add(s)
	if sum.Tokens != 8000 || sum.Gateway.Usage.CPUNs != 160e6 || sum.Gateway.Usage.Writes != 8008 {
		t.Errorf("two samples added: %+v", sum)
	}
	if sc := NewCost(sum, 4096); sc.Gateway.CPUPerTokenUs != 20 {
		t.Errorf("two samples: cpu/token %v, want 20", sc.Gateway.CPUPerTokenUs)
	}
	unseen := NewCost(CostSample{WallNs: 1e9, Tokens: 10, Gateway: &GatewaySample{Unseen: "not on this host"}}, 4096)
	if unseen.Gateway.Unseen == "" || unseen.Gateway.CPUS != 0 || unseen.Gateway.SaturatesCore() {
		t.Errorf("unseen gateway: %+v", unseen.Gateway)
	}
}
