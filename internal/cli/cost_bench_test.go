//go:build linux

package cli

import (
	"os"
	"strconv"
	"testing"

	"github.com/sse-latency/sse-latency/internal/procstat"
)

// BenchmarkCostSample is what the cost accounting adds to one batch: the
// sample before it and the sample after. "host" reads the tool's CPU and
// /proc/stat (a run whose -t is its own server, or whose gateway is on
// another host); "gateway" a gateway's tree too: SSE_LATENCY_BENCH_GATEWAY_PID's
// (a haproxy, say), else this test's parent, the go command, and its
// descendants (this test among them). Each reports the CPU per batch
// (cpu-ns/op) beside the wall time, and the tree's size; docs/PERF.md
// divides the CPU by a batch's tokens.
func BenchmarkCostSample(b *testing.B) {
	pid := os.Getppid()
	if v := os.Getenv("SSE_LATENCY_BENCH_GATEWAY_PID"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("SSE_LATENCY_BENCH_GATEWAY_PID=%q: %v", v, err)
		}
		pid = n
	}
	for _, c := range []struct {
		name string
		pids []int
	}{{"host", nil}, {"gateway", []int{pid}}} {
		b.Run(c.name, func(b *testing.B) {
			m := newCostMeter(procstat.Proc, c.pids, "", nil)
			if m == nil || !m.hostOK {
				b.Skip("no /proc")
			}
			b.ReportAllocs()
			u0, s0 := cpuTimes()
			for b.Loop() {
				p := m.sample()
				m.since(p, 1000, 10)
			}
			u1, s1 := cpuTimes()
			b.ReportMetric((u1-u0+s1-s0)*1e9/float64(b.N), "cpu-ns/op")
			if c.pids == nil {
				return
			}
			if t, err := procstat.Proc.Tree(c.pids); err == nil {
				threads := 0
				for _, p := range t.Procs {
					threads += p.Threads
				}
				b.ReportMetric(float64(len(t.Procs)), "processes")
				b.ReportMetric(float64(threads), "threads")
			}
		})
	}
}
