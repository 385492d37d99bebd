// Package summarytest builds the synthetic records, batches and verdicts
// the tests of the packages that render and store summaries share (report,
// rundoc): their golden files come from these, so that a change to a
// renderer or to the document shows up against the same data.
package summarytest

import (
	"errors"
	"slices"
	"strings"

	"github.com/sse-latency/sse-latency/internal/advice"
	"github.com/sse-latency/sse-latency/internal/clocksync"
	"github.com/sse-latency/sse-latency/internal/gateway"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// Batch aggregates the records as the run does.
func Batch(rs ...*result.Request) *stats.Batch {
	b := stats.NewBatch()
	for _, r := range rs {
		b.Add(r)
	}
	return b
}

// Summary summarises b as the batch named name, without samples or
// target.
func Summary(name string, b *stats.Batch) *summary.Batch {
	sb := summary.NewBatch(name, "", b, summary.Samples{})
	return &sb
}

// Run returns the summary of a run of these batches (loop nil: no
// calibration), without verdict, targets or lateness.
func Run(loop, gw *stats.Batch) *summary.Run {
	r := &summary.Run{Overhead: summary.NewOverhead(loop, gw), Self: summary.Self{Lateness: summary.NewMetric(nil)}}
	if loop != nil {
		r.Batches = append(r.Batches, *Summary(summary.LoopbackBatch, loop))
	}
	r.Batches = append(r.Batches, *Summary(summary.GatewayBatch, gw))
	return r
}

// Base is an arbitrary process-clock reading (2026-01-01T00:00:00Z).
const Base = int64(1_767_225_600_000_000_000)

// Stream describes a synthetic request: every token of it has the same
// inter-token gap and (but for the first) the same emission->arrival delay,
// so every sample it contributes is one of these numbers.
type Stream struct {
	Batch      string
	Index      int
	TTFT       int64 // first token arrival − sent
	FirstDelay int64 // first token arrival − its emission
	Tokens     int
	Gap        int64  // arrival gap between tokens
	Delay      int64  // arrival − emission of tokens 2..n
	Leg        int64  // the server's arrival of the request − sent (0: unknown)
	Instance   string // the server instance that served it ("" unknown)
	Failure    result.Failure

	// If set, token i (from 1) takes Gaps[(i−1) mod len] and
	// Delays[(i−1) mod len] instead of Gap and Delay.
	Gaps, Delays []int64

	// The SSE framing of the response (result.Request's fields).
	Framing result.Framing
	RetryMs int64
}

// Request builds the record: it starts at Base + Index s, is sent 0.1 ms
// later and ends 0.2 ms after its last token.
func (s Stream) Request() *result.Request {
	r := &result.Request{Batch: s.Batch, Index: s.Index, Failure: s.Failure, Framing: s.Framing, RetryMs: s.RetryMs, Instance: s.Instance}
	r.Start = Base + int64(s.Index)*1e9
	r.Sent = r.Start + 100_000
	if s.Leg != 0 {
		r.ServerArrived = r.Sent + s.Leg
	}
	arrived := r.Sent + s.TTFT
	r.End = r.Sent
	for i := range s.Tokens {
		delay, gap := s.Delay, s.Gap
		if i > 0 && len(s.Delays) > 0 {
			delay = s.Delays[(i-1)%len(s.Delays)]
		}
		if i > 0 && len(s.Gaps) > 0 {
			gap = s.Gaps[(i-1)%len(s.Gaps)]
		}
		if i == 0 {
			delay = s.FirstDelay
		} else {
			arrived += gap
		}
		r.AppendTokens(1, int32(i), int32(i), arrived)
		r.Tokens[i].Emitted = arrived - delay
		r.End = arrived + 200_000
	}
	return r
}

// Phased describes a synthetic request whose answer has phases, as a path
// delivered it: the server gets the request when it is written, sends the
// head and its first event at once, spreads the reasoning tokens over the
// think, then sends the tool call's argument tokens and the text every
// Delay; every byte arrives Lat later — unless the gateway held it, as the
// flags say. Every token is stamped with its emission.
type Phased struct {
	Batch                     string
	Index                     int
	Reasoning, ToolCall, Text int
	Think                     int64 // ns from the write to the first token after the reasoning
	Delay                     int64 // ns between the tokens after the think
	Lat                       int64 // ns from a byte's emission to its arrival

	HoldStart       bool // the head and every event are held until the first visible token
	DropReasoning   bool // the reasoning never arrives
	ReasoningAsText bool // the reasoning arrives as visible text: the request fails its integrity check
	HoldArgs        bool // the argument tokens arrive together, with the last
	// Heartbeats seen by the client, and sent by the server (-1: the
	// client found no record of it).
	Seen, Sent int
	// CutAfter > 0 ends the request, failed (connection closed), this
	// long after the head and first event, before any token: set it with
	// Reasoning 0 and a Think longer than it.
	CutAfter int64
}

// Request builds the record, sent 0.1 ms after its start at Base + Index s.
func (p Phased) Request() *result.Request {
	r := &result.Request{Batch: p.Batch, Index: p.Index, Reasoning: p.Reasoning, ToolCall: p.ToolCall,
		Comments: p.Seen, ServerHeartbeats: max(p.Sent, 0), ServerRecord: p.Sent >= 0, ReasoningAsText: p.ReasoningAsText}
	r.Start = Base + int64(p.Index)*1e9
	r.Sent = r.Start + 100_000
	t0 := r.Sent
	if r.ServerRecord {
		r.ServerStart = t0
	}
	defer func() {
		if r.ServerRecord && p.Text+p.ToolCall > 0 {
			r.ServerThinkEnd = t0 + p.Think
		}
	}()
	emit := func(k int) int64 { // token k of the stream, all phases
		if k < p.Reasoning {
			return t0 + int64(k)*p.Think/int64(p.Reasoning)
		}
		return t0 + p.Think + int64(k-p.Reasoning)*p.Delay
	}
	textBase := p.Reasoning + p.ToolCall
	firstText, lastArg := emit(textBase), emit(max(textBase-1, p.Reasoning))
	arrive := func(e int64) int64 {
		if p.HoldStart {
			e = max(e, firstText)
		}
		return e + p.Lat
	}
	r.HeadAt, r.FirstEventAt = arrive(t0), arrive(t0)
	reads := []int64{r.HeadAt}
	if p.CutAfter > 0 {
		r.End = r.HeadAt + p.CutAfter
		r.Failure = result.Failure{Kind: result.ClosedBeforeDone}
		r.LastReadAt, r.MaxSilence, r.Events = r.HeadAt, r.HeadAt-r.Sent, 1
		return r
	}
	for k := range textBase + p.Text {
		a := arrive(emit(k))
		switch {
		case k < p.Reasoning && (p.DropReasoning || p.ReasoningAsText):
			continue
		case k >= p.Reasoning && k < textBase && p.HoldArgs:
			a = arrive(lastArg)
		}
		if a != reads[len(reads)-1] {
			reads = append(reads, a)
		}
		r.AppendTokens(1, int32(k), int32(len(reads)-1), a)
		r.Tokens[len(r.Tokens)-1].Emitted = emit(k)
		first := &r.FirstTextAt
		switch {
		case k < p.Reasoning:
			first = &r.FirstReasoningAt
		case k < textBase:
			first = &r.FirstToolCallAt
		}
		if *first == 0 {
			*first = a
		}
		r.Events++
	}
	prev := r.Sent
	for _, a := range reads {
		r.MaxSilence = max(r.MaxSilence, a-prev)
		r.PrevReadAt, r.LastReadAt, prev = r.LastReadAt, a, a
	}
	r.Reads, r.ByPiTs = len(reads), len(r.Tokens)
	r.End = r.LastReadAt + 100_000
	if p.ReasoningAsText {
		r.Failure = result.Failure{Kind: result.Integrity, Detail: `corrupted content at token 0 ("ANAN")`}
	}
	return r
}

// Requests builds the records of ss.
func Requests(ss ...Stream) []*result.Request {
	var rs []*result.Request
	for _, s := range ss {
		rs = append(rs, s.Request())
	}
	return rs
}

// Mid returns the middle of the histogram bucket holding v: a sample value
// that a Metric's percentiles return exactly, so that the printed
// percentiles are those of the SPEC's exact rule (report's TestGoldenIsExact).
func Mid(v int64) int64 {
	m := stats.NewMetric()
	m.Record(0)
	m.Record(v)
	m.Record(1 << 41)
	return m.Percentile(0.5) // rank 1: v's bucket middle, not clamped
}

// Repeat returns n copies of v.
func Repeat(v int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// Nagle is the emit->recv delay of a gateway that flushes every 40 tokens
// (emitted 5 ms apart) 40 µs after the last: 195.04 ms down to 0.04 ms.
func Nagle() []int64 {
	var out []int64
	for j := range 40 {
		out = append(out, Mid(int64(39-j)*5_000_000+40_000))
	}
	return out
}

// Scenarios are rendered by report's TestGolden: per-request lines, then the report.
// The samples are bucket middles (see mid), so every printed number is the
// SPEC's exact statistic of the samples, which TestGoldenIsExact checks; rundoc's JSON goldens hold them too.
// Scenario is the streams of a run's batches.
type Scenario struct {
	Loop  []Stream // nil: no calibration batch
	Gw    []Stream
	Clock *clocksync.Summary // a run across hosts: its clock offset (nil: one process)
	// Replicas are the server replicas of a run across hosts (nil: one
	// process, or no split).
	Replicas []summary.ReplicaInfo
}

var Scenarios = map[string]Scenario{
	// Loopback: 3 requests of 200 tokens with scheduler-like jitter on the
	// gaps, as the reference's calibration for -c 3. Gateway: a buffering
	// gateway (bursts of 40 tokens, cf. seeds/001) with 4 requests, one of
	// which dies after 10 tokens and one of which times out without any.
	"full": {
		Loop: []Stream{
			{Batch: "loop", Index: 0, TTFT: 40_000, FirstDelay: 10_000, Tokens: 200, Gaps: LoopGaps, Delays: LoopDelays},
			{Batch: "loop", Index: 1, TTFT: 40_000, FirstDelay: 10_000, Tokens: 200, Gaps: LoopGaps, Delays: LoopDelays},
			{Batch: "loop", Index: 2, TTFT: 40_000, FirstDelay: 10_000, Tokens: 200, Gaps: LoopGaps, Delays: LoopDelays},
		},
		Gw: []Stream{
			{Batch: "gw", Index: 0, TTFT: 180_000, FirstDelay: 36_000, Tokens: 1000, Gaps: GwGaps, Delays: Nagle()},
			{Batch: "gw", Index: 1, TTFT: 207_170_000, FirstDelay: 206_860_000, Tokens: 1000, Gaps: GwGaps, Delays: Nagle()},
			{Batch: "gw", Index: 2, TTFT: 200_000, FirstDelay: 36_000, Tokens: 10, Gaps: GwGaps, Delays: Nagle(),
				Failure: result.Failure{Kind: result.ClosedBeforeDone}},
			{Batch: "gw", Index: 3, Failure: result.Failure{Kind: result.Timeout, Detail: "300000"}},
		},
	},
	// -l: no loopback block, no overhead block.
	"no_calibration": {
		Gw: []Stream{
			{Batch: "gw", Index: 0, TTFT: 207_170_000, FirstDelay: 206_860_000, Tokens: 1000, Gap: 5e6, Delay: 100_000_000},
		},
	},
	// Across hosts (-l implied): a gateway that holds each request 20 ms
	// before forwarding it, then flushes every token within 30 µs, measured
	// with a clock offset of +1234.567 ms known to ±50 µs: the emit->recv
	// figures are within the bound, the request leg is not. It balances
	// the requests over two server replicas; a third is down.
	"crosshost": {
		Gw: []Stream{
			{Batch: "gw", Index: 0, TTFT: Mid(21_000_000), FirstDelay: Mid(20_000), Tokens: 100, Gap: Mid(5_000_000), Delay: Mid(30_000), Leg: Mid(20_100_000), Instance: "srv-a"},
			{Batch: "gw", Index: 1, TTFT: Mid(21_500_000), FirstDelay: Mid(25_000), Tokens: 100, Gap: Mid(5_000_000), Delay: Mid(30_000), Leg: Mid(20_400_000), Instance: "srv-b"},
			{Batch: "gw", Index: 2, TTFT: Mid(21_200_000), FirstDelay: Mid(40_000), Tokens: 100, Gap: Mid(5_000_000), Delay: Mid(60_000), Leg: Mid(20_200_000), Instance: "srv-a"},
		},
		Clock: &clocksync.Summary{Offset: 1_234_567_000, Bound: 50_000, Drift: 0, Estimates: 3, MinRTT: 100_000},
		Replicas: []summary.ReplicaInfo{
			{Instance: "srv-a", Control: "http://10.0.0.5:8091", Clock: &clocksync.Summary{Offset: 1_234_567_000, Bound: 50_000, Estimates: 2, MinRTT: 100_000}},
			{Instance: "srv-b", Control: "http://10.0.0.6:8091", Clock: &clocksync.Summary{Offset: -20_000_000, Bound: 40_000, Estimates: 1, MinRTT: 80_000}},
			{Control: "http://10.0.0.7:8091", Error: "down: reading the server's clock: dial tcp 10.0.0.7:8091: connect: connection refused"},
		},
	},
	// A gateway that drops pi_ts: every request fails without tokens.
	"empty": {
		Loop: []Stream{
			{Batch: "loop", Index: 0, TTFT: 50_000, FirstDelay: 10_000, Tokens: 1, Delay: 1},
		},
		Gw: []Stream{
			{Batch: "gw", Index: 0, Failure: result.Failure{Kind: result.NoTokens}},
			{Batch: "gw", Index: 1, Failure: result.Failure{Kind: result.NoTokens}},
		},
	},
}

// The jitter of the scenarios' batches.
var (
	// 20 gaps: 12 of 5.1 ms, 3 of 4.1 ms, 4 of 5.3 ms, 1 of 5.4 ms.
	LoopGaps = slices.Concat(Repeat(Mid(5_100_000), 12), Repeat(Mid(4_100_000), 3),
		Repeat(Mid(5_300_000), 4), Repeat(Mid(5_400_000), 1))
	// 20 delays: 15 of 30 µs, 4 of 70 µs, 1 of 180 µs.
	LoopDelays = slices.Concat(Repeat(Mid(30_000), 15), Repeat(Mid(70_000), 4), Repeat(Mid(180_000), 1))
	// 40 gaps: 39 of 0 ms and one of 200 ms.
	GwGaps = append(Repeat(0, 39), Mid(200_000_000))
)

// The gateways the verdicts' advice is for.
var (
	haproxy = &gateway.Identity{Name: gateway.HAProxy, Product: "haproxy", Sources: []string{"local process 4242 haproxy"}}
	nginx   = &gateway.Identity{Name: gateway.Nginx, Product: "nginx/1.22.1", Sources: []string{"Server header", "local process 77 nginx"}}
)

// Identities are the gateways of the Verdicts, by name: those whose
// advice is a gateway's own (the others were not identified).
var Identities = map[string]*gateway.Identity{"buffers_no_calibration": haproxy, "buffers_signature": nginx}

// Verdicts are rendered by report's TestVerdictGolden into testdata/verdict_<name>.golden
// (go test -update rewrites them). They are literal, so that the goldens pin
// the layout, not the classifier's thresholds.
var Verdicts = map[string]verdict.Verdict{
	// haproxy without http-no-delay, older: 40-token bursts every 200 ms.
	"buffers": {
		Class: verdict.Buffers, Tokens: 3996, CoalescedFraction: 0.99925, LoopCoalesced: 0.002,
		BurstSizeP50: 40, BurstSizeMax: 41, Bursts: 100, BurstPeriodMs: 200.0448, EmitGapMs: 5.0001,
		AddedMeanMs: 97.52061, AddedP50Ms: 97.5, AddedP99Ms: 195.0123, Relative: true,
		Causes: advice.Causes(advice.ForAll(nil, advice.Nagle)), Advice: advice.ForAll(nil, advice.Nagle),
	},
	// -l and a gateway that holds the whole response: one burst per request
	// (the first token waits 995 ms, 497.5 ms longer than the typical one:
	// buffering, not a hold).
	"buffers_no_calibration": {
		Class: verdict.Buffers, Tokens: 1000, CoalescedFraction: 1, LoopCoalesced: -1,
		BurstSizeP50: 200, BurstSizeMax: 200, Bursts: 5, EmitGapMs: 5,
		AddedMeanMs: 497.5, AddedP50Ms: 497.5, AddedP99Ms: 990.1,
		FirstTokenHoldMs: 497.5, FollowingMs: 497.5, HoldRequests: 5,
		Causes: advice.Causes(advice.ForAll(haproxy, advice.ByteThreshold)), Advice: advice.ForAll(haproxy, advice.ByteThreshold),
	},
	// nginx honouring X-Accel-Buffering: no.
	"flushes": {
		Class: verdict.Flushes, Tokens: 20000, CoalescedFraction: 0.004, LoopCoalesced: 0.002,
		EmitGapMs: 5, AddedMeanMs: 0.034, AddedP50Ms: 0.036, AddedP99Ms: -0.0004, Relative: true,
		FirstTokenHoldMs: 0.01, FollowingMs: 0.05, HoldRequests: 20,
	},
	// An AI gateway holding the first event, measured by an overloaded tool.
	"flushes_hold": {
		Class: verdict.Flushes, Tokens: 4000, CoalescedFraction: 0.65, LoopCoalesced: 0.6, Noisy: true,
		BurstSizeP50: 3, BurstSizeMax: 9, Bursts: 800, BurstPeriodMs: 25, EmitGapMs: 5,
		AddedMeanMs: 0.7, AddedP50Ms: 0.02, AddedP99Ms: 30.5, Relative: true,
		FirstTokenHold: true, FirstTokenHoldLevel: verdict.HoldWarn, FirstTokenHoldMs: 39.98, FollowingMs: 0.02, HoldRequests: 20,
		Causes: advice.Causes(advice.ForAll(nil, advice.FirstTokenHold)), Advice: advice.ForAll(nil, advice.FirstTokenHold),
	},
	"unknown": {
		Class: verdict.Unknown, Reason: "too few tokens to judge (19 analysable, need 20)", Tokens: 19, LoopCoalesced: 0,
	},
	// nginx gzip-compressing the stream without flushing it: the whole
	// response at its end, named by its signature.
	"buffers_signature": {
		Class: verdict.Buffers, Tokens: 398, CoalescedFraction: 1, LoopCoalesced: 0,
		BurstSizeP50: 200, BurstSizeMax: 200, Bursts: 2, EmitGapMs: 5,
		AddedMeanMs: 497.5, AddedP50Ms: 497.5, AddedP99Ms: 990.1, Relative: true,
		Causes: advice.Causes(advice.ForAll(nginx, advice.Compression)), Advice: advice.ForAll(nginx, advice.Compression),
		Signature: &verdict.Signature{Kind: verdict.Compression, Shape: verdict.WholeResponse, Encoding: "gzip",
			Evidence:      "100% of the tokens arrived after their response's last token was emitted",
			WholeFraction: 1},
	},
	// Every finding, beside a verdict that cannot be judged: the streams
	// were cut before their text (an nginx proxy_read_timeout of 2 s
	// during a 3 s silent think), and the rest of the findings of issue 12.
	"findings": {
		Class: verdict.Unknown, Reason: "too few tokens to judge (0 analysable, need 20)", LoopCoalesced: 0,
		Findings: []verdict.Finding{
			{Name: verdict.FindingHeldStart, Requests: 5, Of: 5, Held: "head", ReleasedMs: 3001.234, ThinkMs: 3000.1, WithText: true},
			{Name: verdict.FindingReasoningDropped, Requests: 4, Of: 5},
			{Name: verdict.FindingReasoningConverted, Requests: 1, Of: 5},
			{Name: verdict.FindingArgumentsHeld, Requests: 5, Of: 5, ArrivalSpreadMs: 0.012, EmissionSpreadMs: 45.01},
			{Name: verdict.FindingIdleCut, Requests: 5, Of: 5, SilenceMs: 2001.3, SilenceMinMs: 2000.9, SilenceMaxMs: 2003,
				Heads: 5, Events: 5, Failure: "connection closed before [DONE]"},
			{Name: verdict.FindingHeartbeatsInjected, Requests: 5, Of: 5, Sent: 0, Seen: 12, Heartbeats: 12},
			{Name: verdict.FindingHeartbeatsSwallowed, Requests: 1, Of: 5, Sent: 30, Seen: 29, Heartbeats: 1},
		},
	},
}

// PhasedRun is the summary of a run whose answers have reasoning, a tool
// call and heartbeats: a loopback batch of 3 flushed answers, and a
// gateway batch of 5 whose gateway held the stream's start until the
// first visible token, dropped the reasoning and injected heartbeats; one
// of them, during a longer silent think, was cut after 1.5 s of silence.
func PhasedRun() *summary.Run {
	const ms = 1_000_000
	base := Phased{Reasoning: 20, ToolCall: 10, Text: 30, Think: 1000 * ms, Delay: 5 * ms, Lat: ms / 10, Seen: 1, Sent: 1}
	loop, gw := summary.NewCollector(), summary.NewCollector()
	for i := range 3 {
		p := base
		p.Batch, p.Index = "loop", i
		loop.Add(p.Request())
	}
	for i := range 5 {
		p := base
		p.Batch, p.Index, p.Lat = "gw", i, ms/5
		p.HoldStart, p.DropReasoning, p.Seen = true, true, 3
		if i == 4 {
			p.Reasoning, p.Think, p.CutAfter, p.HoldStart = 0, 3000*ms, 1500*ms, false
		}
		gw.Add(p.Request())
	}
	return summary.New(summary.Inputs{Loop: loop, Gateway: gw, LoopTarget: "127.0.0.1:8090", GatewayTarget: "127.0.0.1:8080"})
}

// TransportRecords are the records of a keep-alive batch: 2 warm-up
// requests, then 8 counted ones on 3 connections — two reuse the warm-up
// connections, one reuse failure sends a request on a new TLS connection,
// one leaves its connection poisoned, one fails to connect — with open-loop
// schedules when open is set.
func TransportRecords(tag, proto string, open bool) []*result.Request {
	const ms = 1_000_000
	var rs []*result.Request
	start := int64(Base)
	add := func(r result.Request) {
		r.Batch, r.Index = tag, len(rs)
		r.Start = start + int64(len(rs))*100*ms
		if open {
			r.Scheduled = r.Start - int64(len(rs)%3)*20_000 // 0, 20 or 40 µs late
		}
		if r.ConnID > 0 && !r.Reused {
			r.Connected = r.Start + 52_000
			if r.TLSDone != 0 {
				r.TLSDone = r.Connected + 1_200_000
			}
		}
		if r.Failure.Kind != result.Connect {
			r.Sent = max(r.Start, r.Connected, r.TLSDone) + 11_000
			r.HeadAt = r.Sent + 201_000
			r.Tokens = []result.Token{{Emitted: r.HeadAt, Arrived: r.HeadAt + 30_000}, {Emitted: r.HeadAt + 5*ms, Arrived: r.HeadAt + 5*ms + 30_000}}
			r.End = r.Tokens[1].Arrived
		} else {
			r.End = r.Start + 52_000
		}
		rs = append(rs, &r)
	}
	add(result.Request{Warmup: true, ConnID: 1, Proto: proto})
	add(result.Request{Warmup: true, ConnID: 2, Proto: proto})
	add(result.Request{ConnID: 1, Reused: true, Proto: proto})
	add(result.Request{ConnID: 2, Reused: true, Proto: proto})
	add(result.Request{ConnID: 1, Reused: true, Proto: proto})
	add(result.Request{ConnID: 3, ReuseFailed: true, TLSDone: 1, Proto: proto})
	add(result.Request{ConnID: 3, Reused: true, Proto: proto, Poisoned: true})
	add(result.Request{ConnID: 4, Proto: proto})
	add(result.Request{Failure: result.Failure{Kind: result.Connect, Detail: "Connection refused"}})
	add(result.Request{ConnID: 4, Reused: true, Proto: proto})
	return rs
}

// ContainsLine reports whether out has line as one of its lines.
func ContainsLine(out, line string) bool {
	for l := range strings.Lines(out) {
		if l == line+"\n" {
			return true
		}
	}
	return false
}

// ErrWrite is the error of a FailAfter's failing writes.
var ErrWrite = errors.New("write failed")

// FailAfter is a writer whose writes fail with ErrWrite after the first N,
// to check that a renderer returns the first failing write, whichever it
// is.
type FailAfter struct{ N int }

func (f *FailAfter) Write(p []byte) (int, error) {
	if f.N == 0 {
		return 0, ErrWrite
	}
	f.N--
	return len(p), nil
}
