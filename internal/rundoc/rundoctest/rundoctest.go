// Package rundoctest holds the fixtures of the documents' tests (rundoc,
// report) that need the packages above summary — slo for the objectives
// checked, sweep for a sweep — and so cannot live in summarytest, which
// slo's and sweep's own tests import.
package rundoctest

import (
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/slo"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/summary/summarytest"
	"github.com/sse-latency/sse-latency/internal/sweep"
)

// GatesRun is the summary of an interleaved run of the "full" scenario's
// streams, two pairs of rounds (L G G L), whose gateway declared timings
// (x-litellm-overhead-duration-ms and two Server-Timing metrics) on every
// other head, with objectives checked (none: no check; they must parse).
func GatesRun(objectives ...string) *summary.Run {
	sc := summarytest.Scenarios["full"]
	var os []slo.SLO
	for _, s := range objectives {
		o, err := slo.Parse(s)
		if err != nil {
			panic(err)
		}
		os = append(os, o)
	}
	good := slo.NewGoodput(os)
	loop, gw := summary.NewCollector(), summary.NewCollector()
	var rounds []summary.Round
	for pair, order := range []string{"LG", "GL"} {
		for _, side := range order {
			b := stats.NewBatch()
			if side == 'L' {
				for _, r := range summarytest.Requests(sc.Loop...) {
					loop.Add(r)
					b.Add(r)
				}
				rounds = append(rounds, summary.NewRound(summary.LoopbackBatch, pair, b))
				continue
			}
			for i, r := range summarytest.Requests(sc.Gw...) {
				if r.Sent != 0 {
					r.HeadAt = r.Sent + 50_000
				}
				if i%2 == 0 {
					r.Timing = result.TimingHeaders{LiteLLMOverhead: "0.25", ServerTiming: "gw;dur=0.1, upstream;dur=30"}
				}
				gw.Add(r)
				b.Add(r)
				if good != nil {
					good.Add(r)
				}
			}
			rounds = append(rounds, summary.NewRound(summary.GatewayBatch, pair, b))
		}
	}
	late := stats.NewMetric()
	late.Record(40_000)
	var gate func(*summary.Run) *summary.SLOs
	if len(os) > 0 {
		gate = slo.Gate(os, good)
	}
	return summary.New(summary.Inputs{Loop: loop, Gateway: gw, LoopTarget: "127.0.0.1:8090", GatewayTarget: "127.0.0.1:8080",
		Lateness: late, UserS: 1, SystemS: 0.5, Rounds: rounds, SLO: gate})
}

// Sweep is a sweep of concurrency 1, 10 and 50 of which two steps ran,
// each GatesRun without samples, the second marked saturated; its knee
// (the buffering gateway's) is at the first.
func Sweep() *sweep.Sweep {
	sw := &sweep.Sweep{Axis: sweep.AxisConcurrency, Values: []float64{1, 10, 50}, Rounds: 2, KneeThresholdMs: 1}
	for _, v := range []float64{1, 10} {
		r := GatesRun()
		for i := range r.Batches {
			r.Batches[i].Samples = summary.NormSamples(summary.Samples{})
		}
		sw.Steps = append(sw.Steps, sweep.Step{Value: v, Requests: 4, Run: *r})
	}
	sw.Steps[1].ToolSaturated, sw.Steps[1].ToolReason = true, "emission lateness p99 2.000ms > 1ms"
	sw.Knee = sweep.FindKnee(sw.Axis, sw.Steps, sw.KneeThresholdMs)
	return sw
}
