package summary

import (
	"fmt"
	"maps"
	"slices"

	"github.com/sse-latency/sse-latency/internal/clocksync"
	"github.com/sse-latency/sse-latency/internal/failures"
	"github.com/sse-latency/sse-latency/internal/gateway"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// LatenessWarnNs is the emission-lateness p99 above which the tool warns
// that it is measuring its own overload (LatenessWarning).
const LatenessWarnNs = 1_000_000

// nsPerMs converts the records' nanoseconds to the summary's milliseconds.
const nsPerMs = 1e6

// Collector gathers, as a batch's requests finish, what its summary needs:
// the statistics (stats.Batch), the bursts the verdict is judged from
// (verdict.Accumulator), the bounded samples the HTML report plots, the
// timeline of the answers' phases (TimelineStats) and the failures by kind
// (failures.Tally). Add is called once per finished request, one call at
// a time.
type Collector struct {
	Stats    *stats.Batch
	Bursts   *verdict.Accumulator
	Samples  *SampleCollector
	Declared *DeclaredCollector
	Timeline *TimelineStats
	Replicas *ReplicaCollector // the per-replica split, summarised across hosts only (Inputs.Replicas)
	Failures *failures.Tally
	Gateway  *GatewayHeaders
	// Sizes, when set, gathers the breakdown by request size (a run whose
	// sizes vary: a trace, a length distribution); nil leaves it out, as
	// for a run of one size, where it would repeat the batch's figures
	// at about 1 MB of histograms a batch.
	Sizes *SizeCollector
	Usage *UsageCollector
	// Cost is what the batch's samples measured of the CPU (AddCost, once
	// per batch or round); nil when nothing was sampled.
	Cost *CostSample
}

// AddCost adds what one batch (or round) of the collector cost.
func (c *Collector) AddCost(s CostSample) {
	if c.Cost == nil {
		c.Cost = &CostSample{}
	}
	c.Cost.Add(s)
}

// NewCollector returns an empty Collector.
func NewCollector() *Collector {
	return &Collector{Stats: stats.NewBatch(), Bursts: verdict.NewAccumulator(), Samples: NewSampleCollector(),
		Declared: NewDeclaredCollector(), Timeline: NewTimelineStats(), Failures: failures.NewTally(), Gateway: NewGatewayHeaders(),
		Usage: NewUsageCollector(), Replicas: NewReplicaCollector()}
}

// Add folds one finished request in. A warm-up request goes to Stats only,
// which counts it apart from the statistics. Before the first failed
// request with tokens joins Stats, the verdict's accumulator starts
// keeping the completed requests' emit->recv apart (verdict.Accumulator.
// SplitFrom): the timing verdict is theirs.
func (c *Collector) Add(r *result.Request) {
	if !r.Warmup && !r.OK() && len(r.Tokens) > 0 {
		c.Bursts.SplitFrom(c.Stats.EmitRecv)
	}
	c.Stats.Add(r)
	if r.Warmup {
		return
	}
	c.Bursts.Add(r)
	c.Samples.Add(r)
	c.Declared.Add(r)
	c.Timeline.Add(r)
	c.Replicas.Add(r)
	c.Failures.Add(r)
	c.Gateway.Add(r)
	if c.Sizes != nil {
		c.Sizes.Add(r)
	}
	c.Usage.Add(r)
}

// Inputs is what New summarises.
type Inputs struct {
	Loop, Gateway             *Collector // nil when the batch did not run
	LoopTarget, GatewayTarget string     // the addresses the batches' requests went to
	Lateness                  *stats.Metric
	UserS, SystemS            float64 // CPU time of the process, seconds
	// Clock is the clock offset of a run across hosts (nil in one
	// process): its estimates, and the bound that every server time
	// converted to the client's clock carries.
	Clock *clocksync.Summary
	// Replicas are the server replicas of a run across hosts, one per
	// control endpoint (nil in one process): the gateway batch is split
	// by them (Batch.Replicas).
	Replicas []ReplicaInfo
	// Rounds are the rounds of an interleaved run, in the order they ran
	// (their records are in Loop and Gateway too); nil for the
	// reference's single calibration.
	Rounds []Round
	// PageBytes is the size of a memory page (os.Getpagesize), for the
	// gateway's resident memory in the batches' costs (Collector.Cost).
	PageBytes int
	// Pin is how the tool and the gateway would run apart; nil when
	// there is nothing to pin (one CPU, no gateway process).
	Pin *Pin
	// Identify is what is known of the gateway besides its responses'
	// headers, which the gateway batch's collector gathers: --gateway,
	// the local owners of the target's socket. The run's gateway is
	// identified from both (gateway.Identify) when the gateway batch ran.
	Identify gateway.Evidence
	// SLO checks the run's objectives (--slo) on its summary once built,
	// as package slo does (slo.Gate: slo imports this package, so the
	// check comes in as a function); nil when the run has none.
	SLO func(*Run) *SLOs
}

// New computes the summary of a run: one Batch per batch that ran
// (loopback first) with its timeline, the overhead when both ran, the
// verdict when the gateway batch ran (verdict.Classify, the calibration as
// its noise floor) with the findings of the gateway batch's timeline
// (Findings), and the tool's own behaviour with the warning
// LatenessWarning gives. With rounds, the batches hold every round's
// requests and the overhead is the rounds' (Rounds.Overhead). Last, the
// objectives are checked on the summary (Inputs.SLO).
func New(in Inputs) *Run {
	r := &Run{Batches: []Batch{}, Self: Self{
		Lateness: NewMetric(in.Lateness),
		UserS:    in.UserS,
		SystemS:  in.SystemS,
		Pin:      in.Pin,
	}}
	var whole CostSample // the host over every batch, for the warning
	var gwName *GatewayCost
	for _, c := range []*Collector{in.Loop, in.Gateway} {
		if c != nil && c.Cost != nil {
			whole.Add(*c.Cost)
		}
	}
	if whole.Host != nil {
		r.Self.Host = NewCost(whole, in.PageBytes).Host
	}
	var loopStats *stats.Batch
	var loopBursts *verdict.Accumulator
	if l := in.Loop; l != nil {
		loopStats, loopBursts = l.Stats, l.Bursts
		r.Batches = append(r.Batches, l.batch(LoopbackBatch, in.LoopTarget, in.PageBytes))
	}
	if g := in.Gateway; g != nil {
		gw := g.batch(GatewayBatch, in.GatewayTarget, in.PageBytes)
		if in.Replicas != nil && g.Replicas != nil {
			gw.Replicas = g.Replicas.Replicas(in.Replicas)
		}
		if gw.Cost != nil {
			gwName = gw.Cost.Gateway
		}
		r.Batches = append(r.Batches, gw)
		r.Overhead = NewOverhead(loopStats, g.Stats)
		if in.Rounds != nil {
			r.Rounds = NewRounds(in.Rounds)
			if loopStats != nil {
				r.Overhead = r.Rounds.Overhead()
			}
		}
		ev := in.Identify
		if g.Gateway != nil {
			ev.Headers = g.Gateway.Headers()
		}
		id := gateway.Identify(ev)
		r.Identity = &id
		v := verdict.Classify(loopBursts, g.Bursts, loopStats, g.Stats)
		v.Findings = Findings(gw.Timeline)
		Advise(&v, r.Identity)
		r.Verdict = NormVerdict(&v)
	}
	r.Self.Warning = OverloadWarning(in.Lateness, r.Self.Host, gwName, in.Pin)
	if in.Clock != nil {
		r.Clock = NewClock(*in.Clock)
		r.MarkBelowBound()
	}
	if in.SLO != nil {
		r.SLO = in.SLO(r)
	}
	return r
}

// batch summarises what c collected as the batch named name (pageBytes
// for its cost, see Inputs).
func (c *Collector) batch(name, target string, pageBytes int) Batch {
	b := NewBatch(name, target, c.Stats, c.Samples.Samples())
	if c.Cost != nil {
		b.Cost = NewCost(*c.Cost, pageBytes)
	}
	if c.Timeline != nil {
		tl := c.Timeline.Summary()
		b.Timeline = &tl
	}
	if c.Declared != nil {
		b.Declared = c.Declared.Timings()
	}
	if c.Failures != nil {
		b.FailureSummary = c.Failures.Summary()
	}
	if c.Sizes != nil {
		b.Sizes = c.Sizes.Sizes()
	}
	if c.Usage != nil {
		b.Usage = c.Usage.Usage()
	}
	return b
}

// NormVerdict returns v with its causes an empty list rather than nil, as
// the document writes them; nil for nil.
func NormVerdict(v *verdict.Verdict) *verdict.Verdict {
	if v == nil {
		return nil
	}
	c := *v
	c.Causes = slices.Clone(v.Causes)
	if c.Causes == nil {
		c.Causes = []string{}
	}
	c.Findings = slices.Clone(v.Findings)
	c.Advice = slices.Clone(v.Advice)
	return &c
}

// LatenessWarning returns the warning the tool prints when it fell behind
// its own emission schedule (the lateness p99 above LatenessWarnNs) and
// nothing says who took the CPU: its figures then describe its overload,
// not the gateway. It returns "" when the lateness is lower, or unknown
// (nil or without samples). OverloadWarning says who.
func LatenessWarning(late *stats.Metric) string { return OverloadWarning(late, nil, nil, nil) }

// OverloadWarning is LatenessWarning that says, from the host's CPUs over
// the run (h; nil: unknown, LatenessWarning's text), who took the CPU the
// tool lacked — the tool itself, the gateway (gw names it), other
// processes, or the hypervisor — and what to do about it: lower the load,
// pin the tool and the gateway apart (pin is the command for the
// gateway's side), stop or avoid the others, or move.
func OverloadWarning(late *stats.Metric, h *HostCost, gw *GatewayCost, pin *Pin) string {
	if late == nil || late.N() == 0 {
		return ""
	}
	p99 := late.Percentile(0.99)
	if p99 <= LatenessWarnNs {
		return ""
	}
	head := fmt.Sprintf("sse-latency fell behind its own emission schedule (lateness p99=%.3fms > %.0fms): ", stats.Ms(p99), stats.Ms(LatenessWarnNs))
	if h == nil {
		return head + "these figures describe the tool's overload, not the gateway; lower -c or raise -d"
	}
	return head + HostShares(h, gw) + ": " + culpritAdvice(h.Culprit, gw, pin)
}

// HostShares says how busy the host's CPUs were and whose the time was:
// "the host's 2 CPUs were 97% busy: the tool 30%, the gateway (haproxy
// pid 1234) 7%, other processes 60%, steal 0%".
func HostShares(h *HostCost, gw *GatewayCost) string {
	return fmt.Sprintf("the host's %d %s were %.0f%% busy: the tool %.0f%%, %s %.0f%%, other processes %.0f%%, steal %.0f%%",
		h.CPUs, plural(h.CPUs, "CPU"), 100*h.BusyShare, 100*h.ToolShare, GatewayName(gw), 100*h.GatewayShare,
		100*h.OtherShare, 100*h.StealShare)
}

// GatewayName names the gateway's processes: "the gateway (haproxy pid
// 1234)", or "the gateway (not seen)" when they were not accounted.
func GatewayName(gw *GatewayCost) string {
	switch {
	case gw == nil || gw.Unseen != "":
		return "the gateway (not seen)"
	case len(gw.PIDs) == 0:
		return "the gateway"
	}
	return fmt.Sprintf("the gateway (%s pid %d)", gw.Name, gw.PIDs[0])
}

// culpritAdvice says who took the CPU and what to do.
func culpritAdvice(culprit string, gw *GatewayCost, pin *Pin) string {
	apart := "pin the tool and the gateway apart (--cpus for the tool, taskset for the gateway)"
	if pin != nil {
		apart = "pin the tool and the gateway apart (" + pin.Text() + ")"
	}
	const move = "or run the client and the server on another host (--server)"
	switch culprit {
	case CulpritGateway:
		return "the gateway took the CPU the tool needed, so these figures include that contention; " + apart + ", " + move
	case CulpritOther:
		return "other processes took the CPU the tool needed (it was starved, not overloaded); stop them, " +
			"give the tool CPUs of its own (--cpus), or measure on a quieter host"
	case CulpritSteal:
		return "the hypervisor took the CPU (steal): the tool's virtual CPUs did not run; measure on a dedicated host or a larger instance"
	case CulpritIdle:
		return "no CPU was a fifth busy, so no one took the CPU: the late tokens are the host waking the tool late from idle " +
			"(a halted virtual CPU, a deep C-state) or a burst too short for the CPU counters (the start, many streams due at once); " +
			"emit->recv is not affected (it starts at each token's own emission stamp), the inter-token gaps carry the lateness; " +
			"rerun to see whether it repeats, with more tokens (-n) to dilute the start"
	}
	return "the tool itself took the CPU: these figures describe its overload, not the gateway; lower -c or raise -d, " + apart + ", " + move
}

// plural is word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// NewBatch summarises b, with its samples (whose nil slices become empty
// ones, so that the document has arrays where its schema says so).
func NewBatch(name, target string, b *stats.Batch, s Samples) Batch {
	out := Batch{
		Name: name, Target: target,
		Requests: b.Requests, OK: b.OK, Failed: b.Failed, Tokens: b.Tokens,
		Failures: []FailureKind{},
		Metrics: Metrics{
			TTFT:          NewMetric(b.TTFT),
			FirstEmitRecv: NewMetric(b.FirstEmitRecv),
			InterToken:    NewMetric(b.InterToken),
			EmitRecv:      NewMetric(b.EmitRecv),
		},
		Stream: Stream{
			ByPiTs: b.ByPiTs, ByContent: b.ByContent, Unmeasured: b.Unmeasured,
			Reads: b.Reads, Events: b.Events, Bytes: b.Bytes,
			MaxTokensPerRead: b.MaxTokensPerRead, IntegrityErrors: b.IntegrityErrors,
			Unstamped: b.Unstamped, FailedTokens: b.FailedTokens, Framing: NewFraming(b.Framing, b.RetryMaxMs),
		},
		Samples: NormSamples(s),
		Warmup:  b.Warmup,
	}
	if b.Protocols[TransportWebSocket] > 0 {
		out.Transport = TransportWebSocket
	}
	if hasConnections(b) {
		out.Connections = &Connections{
			Opened: b.Opened, OpenedByWarmup: b.WarmConnections, Requests: b.ConnRequests,
			RequestsPerConnection: b.RequestsPerConnection(),
			ReuseFailures:         b.ReuseFailures, Poisoned: b.Poisoned,
			Protocols: maps.Clone(b.Protocols), StreamsAtOnce: b.StreamsAtOnce,
		}
	}
	if hasPhases(b) {
		out.Phases = &Phases{
			Connect: NewMetric(b.Connect), TLS: NewMetric(b.TLS), Written: NewMetric(b.Written),
			Head: NewMetric(b.Head), FirstToken: NewMetric(b.FirstToken),
		}
	}
	if b.StartLateness.N() > 0 {
		m := NewMetric(b.StartLateness)
		out.StartLateness = &m
	}
	if b.RequestLeg.N() > 0 {
		m := NewMetric(b.RequestLeg)
		out.RequestLeg = &m
	}
	for _, f := range b.Failures() {
		fk := FailureKind{Kind: f.Kind.String(), Count: f.Count, Texts: make([]TextCount, len(f.Texts)), Other: f.Other}
		for i, tc := range f.Texts {
			fk.Texts[i] = TextCount{Text: tc.Text, Count: tc.Count}
		}
		out.Failures = append(out.Failures, fk)
	}
	return out
}

// hasConnections reports whether b knows anything of its connections (a
// batch of records without connection facts does not).
func hasConnections(b *stats.Batch) bool {
	return b.ConnRequests > 0 || b.Connections() > 0 || b.ReuseFailures > 0 || b.Poisoned > 0 || len(b.Protocols) > 0
}

// hasPhases reports whether any phase of b has a sample.
func hasPhases(b *stats.Batch) bool {
	for _, p := range b.Phases() {
		if p.Metric.N() > 0 {
			return true
		}
	}
	return false
}

// NewMetric summarises m (nil: no samples) in milliseconds, with its
// histogram.
func NewMetric(m *stats.Metric) Metric {
	if m == nil {
		m = stats.NewMetric()
	}
	return Metric{
		N:         m.N(),
		MeanMs:    m.Mean() / nsPerMs,
		StddevMs:  m.Stddev() / nsPerMs,
		MinMs:     stats.Ms(m.Min()),
		P50Ms:     stats.Ms(m.Percentile(0.50)),
		P90Ms:     stats.Ms(m.Percentile(0.90)),
		P95Ms:     stats.Ms(m.Percentile(0.95)),
		P99Ms:     stats.Ms(m.Percentile(0.99)),
		P999Ms:    stats.Ms(m.Percentile(0.999)),
		MaxMs:     stats.Ms(m.Max()),
		Histogram: m.Snapshot(),
	}
}

// NewOverhead returns the overhead of gw over loop (SPEC §6): nil unless
// both batches ran; a Delta for each metric with samples on both sides,
// each percentile the difference of the two in nanoseconds (so that the
// text prints what the reference prints), then in milliseconds.
func NewOverhead(loop, gw *stats.Batch) *Overhead {
	if loop == nil || gw == nil {
		return nil
	}
	return &Overhead{
		FirstEmitRecv: newDelta(loop.FirstEmitRecv, gw.FirstEmitRecv),
		EmitRecv:      newDelta(loop.EmitRecv, gw.EmitRecv),
		TTFT:          newDelta(loop.TTFT, gw.TTFT),
		InterToken:    newDelta(loop.InterToken, gw.InterToken),
	}
}

// newDelta is gw minus loop; nil when a side has no samples.
func newDelta(loop, gw *stats.Metric) *Delta {
	if loop.N() == 0 || gw.N() == 0 {
		return nil
	}
	diff := func(p float64) float64 { return stats.Ms(gw.Percentile(p) - loop.Percentile(p)) }
	return &Delta{MeanMs: (gw.Mean() - loop.Mean()) / nsPerMs, P50Ms: diff(0.50), P95Ms: diff(0.95), P99Ms: diff(0.99)}
}
