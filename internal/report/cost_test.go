package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/procstat"
	"github.com/sse-latency/sse-latency/internal/rundoc"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/sweep"
)

// costRun is a run whose batches were sampled: 10 streams of 1000 tokens
// each side, the gateway's processes as given, the host 2 CPUs.
func costRun(g *summary.GatewaySample) *summary.Run {
	host := func(user, idle uint64) *procstat.Host {
		return &procstat.Host{All: procstat.CPUTimes{User: 2 * user, Idle: 2 * idle},
			CPUs: []procstat.CPU{{ID: 0, CPUTimes: procstat.CPUTimes{User: user + 10, Idle: idle - 10}},
				{ID: 1, CPUTimes: procstat.CPUTimes{User: user - 10, Idle: idle + 10}}}}
	}
	loop := summary.CostSample{WallNs: 1e9, Tokens: 10000, Streams: 10, ToolUserS: 0.5, ToolSystemS: 0.2, Host: host(40, 60)}
	gw := summary.CostSample{WallNs: 2e9, Tokens: 10000, Streams: 10, ToolUserS: 0.6, ToolSystemS: 0.3, Host: host(160, 40), Gateway: g}
	r := &summary.Run{Batches: []summary.Batch{
		{Name: summary.LoopbackBatch, Cost: summary.NewCost(loop, 4096)},
		{Name: summary.GatewayBatch, Cost: summary.NewCost(gw, 4096)},
	}}
	return r
}

func haproxy(u procstat.Usage) *summary.GatewaySample {
	return &summary.GatewaySample{PIDs: []int{1234}, Name: "haproxy", Exe: "/usr/sbin/haproxy", Found: "listener", Usage: u}
}

// TestWriteCostGolden pins the cost block of a gateway accounted in full.
func TestWriteCostGolden(t *testing.T) {
	r := costRun(haproxy(procstat.Usage{CPUNs: 1_900_000_000, UserTicks: 60, SystemTicks: 130,
		Switches: 10220, Writes: 10020, WriteBytes: 2_500_000, WritesKnown: true,
		RSSGrowthPages: 300, Processes: 1, Threads: 2}))
	r.Self.Pin = &summary.Pin{ToolCPUs: "0", Gateway: "taskset -a -cp 1 1234"}
	var b bytes.Buffer
	if err := WriteCost(&b, r); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "WriteCost", "cost.golden", b.Bytes())
	// The HTML block has the same lines, label apart.
	rows := newHTMLCost(r)
	if len(rows) != strings.Count(b.String(), "\n")-1 || rows[0].Label != "gateway" || !strings.HasPrefix(rows[1].Text, "190.000us/token") {
		t.Errorf("HTML cost rows %+v", rows)
	}
}

// TestWriteCostCases: a gateway not seen, one that exited, writes that
// cannot be read or that syscw does not count, and no cost at all.
func TestWriteCostCases(t *testing.T) {
	seen := procstat.Usage{CPUNs: 400_000_000, UserTicks: 10, SystemTicks: 30, WritesKnown: true, Processes: 1, Threads: 1}
	exited := seen
	exited.Exited = []procstat.Exited{{PID: 1234, Comm: "haproxy"}}
	unknown := seen
	unknown.WritesKnown = false
	counted := seen
	counted.Writes = 20000
	cases := []struct {
		name      string
		g         *summary.GatewaySample
		want, not []string
	}{
		{"unseen", &summary.GatewaySample{Found: "listener", Unseen: "the target 10.0.0.5:8080 is not on this host"},
			[]string{"gateway    not seen: the target 10.0.0.5:8080 is not on this host", "tool cpu "}, []string{"gw cpu"}},
		{"exited", haproxy(exited), []string{"gw exited  haproxy (pid 1234) exited during the batch"}, nil},
		{"writes unreadable", haproxy(unknown), []string{"gw writes  unknown: /proc/PID/io"}, nil},
		{"send", haproxy(seen), []string{"fewer than its streams, so it writes with send"}, nil},
		{"counted", haproxy(counted), []string{"gw writes  2.00/token, 2000.0/stream"}, []string{"fewer than"}},
		{"processes", haproxy(procstat.Usage{CPUNs: 1, WritesKnown: true, Processes: 3, Threads: 3}), []string{"3 processes, 3 threads"}, nil},
		{"saturated", haproxy(procstat.Usage{CPUNs: 1_900_000_000, WritesKnown: true}), []string{"0.95 cores (saturates a core)"}, nil},
	}
	for _, c := range cases {
		var b bytes.Buffer
		if err := WriteCost(&b, costRun(c.g)); err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: cost block\n%s\nhas no %q", c.name, b.String(), w)
			}
		}
		for _, w := range c.not {
			if strings.Contains(b.String(), w) {
				t.Errorf("%s: cost block\n%s\nhas %q", c.name, b.String(), w)
			}
		}
	}
	var b bytes.Buffer
	if err := WriteCost(&b, &summary.Run{Batches: []summary.Batch{{Name: summary.GatewayBatch}}}); err != nil || b.Len() != 0 {
		t.Errorf("no cost: %q, %v; want nothing", b.String(), err)
	}
}

// TestSweepCost: a sweep whose steps accounted the gateway has a column of
// its CPU, and names the step where it saturated a core.
func TestSweepCost(t *testing.T) {
	step := func(v float64, cpuNs uint64) sweep.Step {
		r := costRun(haproxy(procstat.Usage{CPUNs: cpuNs, WritesKnown: true, Processes: 1, Threads: 1}))
		return sweep.Step{Value: v, Requests: 10, Run: *r}
	}
	sw := &sweep.Sweep{Axis: sweep.AxisConcurrency, Values: []float64{1, 10}, Rounds: 1, KneeThresholdMs: 1,
		Steps: []sweep.Step{step(1, 200_000_000), step(10, 1_900_000_000)}}
	sw.GatewaySaturated = sweep.GatewaySaturation(sw.Steps)
	if g := sw.GatewaySaturated; g == nil || g.Step != 1 || g.Cores != 0.95 {
		t.Fatalf("GatewaySaturation = %+v, want step 1 at 0.95 cores", g)
	}
	var b bytes.Buffer
	if err := WriteSweep(&b, &rundoc.Document{Sweep: sw}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tool        gateway cpu", "ok          20.000us/token 0.10 cores",
		"190.000us/token 0.95 cores SATURATED", "gateway saturated a core at concurrency 10: 0.95 cores, 190.000us/token"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("sweep report\n%s\nhas no %q", b.String(), want)
		}
	}
}

// TestHTMLCost: the HTML report has the cost block's lines, each label in
// its own cell.
func TestHTMLCost(t *testing.T) {
	r := costRun(haproxy(procstat.Usage{CPUNs: 400_000_000, WritesKnown: true, Processes: 1, Threads: 2}))
	d := &rundoc.Document{SchemaVersion: rundoc.SchemaVersion, Run: *r}
	var b bytes.Buffer
	if err := WriteHTML(&b, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<h2>Cost (per token received; from /proc, sampled around each batch)</h2>",
		`<tr><th class="text">gw cpu</th><td class="text">40.000us/token`, `<th class="text">host</th><td class="text">gateway: 2 CPUs`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the HTML report has no %q", want)
		}
	}
}
