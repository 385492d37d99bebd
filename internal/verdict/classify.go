package verdict

import (
	"fmt"
	"math"
	"slices"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
)

// The thresholds of the classifier (see the package comment for the list).
const (
	// MinTokens is the number of analysable gateway tokens below which the
	// verdict is Unknown: with fewer, one late packet decides the share.
	MinTokens = 20

	// MinEmitGapNs is the typical emission gap (ns) below which the verdict
	// is Unknown: the server coalesces its wake-ups into windows of up to
	// 100 µs, so tokens due closer than that (-d 0 above all) leave it back
	// to back and arrive together through any gateway.
	MinEmitGapNs = 100_000

	// JoinFraction is the ratio of arrival gap to emission gap below which
	// two consecutive tokens belong to one burst. Flushed tokens arrive at
	// about their emission gap (loopback jitter is ~0.4 ms at p99, against
	// 1.25 ms of margin at -d 5); released tokens arrive microseconds apart.
	// There is no absolute floor: a floor would call a flushing gateway's
	// natural spacing a burst for -d below 4 floors, while the calibration
	// batch already measures the tool's own jitter.
	JoinFraction = 0.25

	// BufferedFraction is the share of tokens in bursts from which a gateway
	// buffers (with BufferedMargin): a gateway that holds events holds most
	// of them (haproxy without http-no-delay: nearly all), one that flushes
	// coalesces a few percent at most.
	BufferedFraction = 0.5

	// BufferedMargin is how far (in share of tokens) the gateway's
	// coalescing must exceed the calibration batch's for BufferedFraction to
	// count: when the tool is overloaded even loopback tokens share Reads,
	// and that is not the gateway's doing.
	BufferedMargin = 0.3

	// DelayGaps: a gateway also buffers when its added mean emit->recv
	// exceeds this many emission gaps while bursts are present
	// (BurstsPresentMargin): a token held that long has had later tokens
	// catch up with it. A 5 ms stream held to 85 ms releases adds ~42 ms,
	// 8 gaps.
	DelayGaps = 2

	// BurstsPresentMargin is how far the gateway's coalescing must exceed the
	// calibration batch's for the DelayGaps rule: a gateway that delays every
	// event by the same amount but forwards them one by one flushes, late.
	BurstsPresentMargin = 0.1

	// NoisyLoopFraction is the calibration batch's share of tokens in bursts
	// from which the tool itself was overloaded: tokens 5 ms apart straight
	// from the server should never share a Read.
	NoisyLoopFraction = 0.1

	// HoldWarnNs is the typical first-token hold (ns, beyond the
	// calibration batch's) from which the first token counts as held:
	// AI gateways that inspect the first event hold it for tens of
	// milliseconds, while loopback noise is below 1 ms. From HoldFailNs
	// the hold is a failure: a gateway that holds the first event to
	// inspect, route or moderate it holds it for hundreds of
	// milliseconds, while a busy machine wakes a gateway's worker tens of
	// milliseconds late. Between the two the hold is a warning
	// (HoldWarn): `sse-latency check` says WARN, the run names the
	// finding. The run and the check judge with Hold, these thresholds
	// and HoldFactor alike.
	HoldWarnNs = 10_000_000
	HoldFailNs = 50_000_000

	// HoldFactor is how many times the typical emit->recv of the following
	// tokens the hold must also exceed: a buffering gateway delays the first
	// token by up to a burst period, about twice its typical delay, and that
	// is buffering, not a hold.
	HoldFactor = 5

	// NagleTolerance is the relative distance of the burst period from one of
	// NagleTimingsMs within which Nagle/delayed-ACK timers are named first.
	NagleTolerance = 0.25
)

// NagleTimingsMs are the periods (ms) at which a socket corked by Nagle's
// algorithm releases data when the peer delays its ACKs: Linux's delayed-ACK
// timer (~40 ms) and the classic 200 ms one.
var NagleTimingsMs = [...]float64{40, 200}

const nsPerMs = 1e6

// accumulator is the bounded state behind Accumulator.
type accumulator struct {
	tokens    int64 // analysable tokens: stamped, with a stamped neighbour
	coalesced int64 // of which in bursts of 2 or more
	bursts    int64 // bursts of 2 or more

	burstSize *stats.Metric // tokens per burst of 2 or more
	period    *stats.Metric // ns between the starts of consecutive bursts of a request
	emitGap   *stats.Metric // ns between the emissions of consecutive stamped tokens
	hold      *stats.Metric // per request: first token's emit->recv − median of the others'
	following *stats.Metric // per request: median emit->recv of the tokens after the first
	// emitRecv is the emit->recv of the stamped tokens after the first
	// (stats.Batch.EmitRecv's samples) of the requests added, when they
	// are kept apart from the batch's (Accumulator.SplitFrom); nil: not
	// kept, the batch's are theirs.
	emitRecv *stats.Metric

	scratch []int64        // the others' emit->recv of one request, reused
	text    []result.Token // the visible tokens of a request with other phases, reused

	sig sigAccumulator // what the signature needs (signature.go)
}

func newAccumulator() accumulator {
	return accumulator{
		burstSize: stats.NewMetric(),
		period:    stats.NewMetric(),
		emitGap:   stats.NewMetric(),
		hold:      stats.NewMetric(),
		following: stats.NewMetric(),
		sig:       newSigAccumulator(),
	}
}

// joined reports whether a token that arrived arrive ns after the previous
// one, emitted emit ns after it, travelled in the same burst.
func joined(arrive, emit int64) bool {
	return float64(arrive) < JoinFraction*float64(emit)
}

// burst tracks the current run of joined tokens of one request.
type burst struct {
	size      int64
	start     int64 // arrival of its first token
	prevStart int64 // start of the request's previous burst of 2 or more
	seen      bool  // whether there was one
}

// close ends the current run and accounts for it if it is a burst.
func (a *accumulator) close(b *burst) {
	if b.size >= 2 {
		a.coalesced += b.size
		a.bursts++
		a.burstSize.Record(b.size)
		if b.seen {
			a.period.Record(b.start - b.prevStart)
		}
		b.prevStart, b.seen = b.start, true
	}
	b.size = 0
}

// add folds one request in: one pass over its tokens for the bursts, then
// one sort of a scratch copy of its delays for the first-token hold. It
// allocates only to grow the scratch slice to a longer request than before.
func (a *accumulator) add(r *result.Request) {
	toks := a.visible(r)
	var b burst
	chain := 0 // consecutive stamped tokens up to the current one
	for i, t := range toks {
		if t.Emitted == 0 {
			a.close(&b)
			chain = 0
			continue
		}
		if i > 0 && a.emitRecv != nil {
			a.emitRecv.Record(t.Arrived - t.Emitted)
		}
		chain++
		if chain >= 2 { // the previous token is stamped: judge the pair
			p := toks[i-1]
			emit := t.Emitted - p.Emitted
			a.emitGap.Record(emit)
			a.tokens++
			if chain == 2 { // the previous token has a stamped neighbour too
				a.tokens++
			}
			if joined(t.Arrived-p.Arrived, emit) {
				b.size++
				continue
			}
			a.close(&b)
		}
		b.size, b.start = 1, t.Arrived
	}
	a.close(&b)
	a.addHold(toks)
	a.sig.add(r)
}

// visible returns the visible text tokens of r (result.Request.Visible):
// its tokens when it has no other phase, else a copy in a.text.
func (a *accumulator) visible(r *result.Request) []result.Token {
	if r.TextBase() == 0 {
		return r.Tokens
	}
	v := a.text[:0]
	for _, t := range r.Visible() {
		v = append(v, t)
	}
	a.text = v
	return v
}

// addHold records the first-token hold of one request: the first token's
// emit->recv minus the median (the SPEC's p50 rule) of the others'.
func (a *accumulator) addHold(toks []result.Token) {
	if len(toks) < 2 || toks[0].Emitted == 0 {
		return
	}
	s := a.scratch[:0]
	for _, t := range toks[1:] {
		if t.Emitted != 0 {
			s = append(s, t.Arrived-t.Emitted)
		}
	}
	a.scratch = s
	if len(s) == 0 {
		return
	}
	slices.Sort(s)
	median := stats.ExactPercentile(s, 0.5)
	a.hold.Record(toks[0].Arrived - toks[0].Emitted - median)
	a.following.Record(median)
}

// fraction returns the share of analysable tokens in bursts, 0 without any.
func (a *accumulator) fraction() float64 {
	if a.tokens == 0 {
		return 0
	}
	return float64(a.coalesced) / float64(a.tokens)
}

// The levels of a first-token hold (Hold).
const (
	HoldNone = ""     // not held
	HoldWarn = "warn" // held between HoldWarnNs and HoldFailNs
	HoldFail = "fail" // held HoldFailNs or more
)

// Hold judges a first-token hold: the first token's emit->recv beyond the
// calibration's, holdNs, against the typical emit->recv of the tokens
// after it, followingNs. The first token is held when holdNs exceeds
// HoldWarnNs and HoldFactor times followingNs (a gateway that buffers
// delays every token alike: that is its buffering, not a hold); HoldFail
// from HoldFailNs, else HoldWarn. The run's verdict and the check's
// first-token row both judge with it.
func Hold(holdNs, followingNs int64) string {
	switch {
	case holdNs <= HoldWarnNs || float64(holdNs) <= HoldFactor*float64(followingNs):
		return HoldNone
	case holdNs >= HoldFailNs:
		return HoldFail
	}
	return HoldWarn
}

func classify(loop, gw *Accumulator, loopStats, gwStats *stats.Batch) Verdict {
	v := Verdict{LoopCoalesced: -1}
	if gw == nil {
		v.Reason = "no gateway batch"
		return v
	}
	g := &gw.impl
	v.Basis, v.BasisRequests = BasisCompleted, gw.completed
	if p := gw.partial; p != nil && (gw.completed == 0 || g.tokens < MinTokens && p.tokens >= MinTokens) {
		g = p
		v.Basis, v.BasisRequests = BasisPartial, gw.partials
	}
	v.Tokens = g.tokens
	v.CoalescedFraction = g.fraction()
	v.Bursts = g.bursts
	v.BurstSizeP50 = float64(g.burstSize.Percentile(0.5))
	v.BurstSizeMax = g.burstSize.Max()
	v.BurstPeriodMs = stats.Ms(g.period.Percentile(0.5))
	v.EmitGapMs = stats.Ms(g.emitGap.Percentile(0.5))

	loopFraction, loopHoldNs := 0.0, int64(0)
	if loop != nil && loop.impl.tokens >= MinTokens {
		loopFraction = loop.impl.fraction()
		v.LoopCoalesced = loopFraction
		v.Noisy = loopFraction >= NoisyLoopFraction
		if loop.impl.hold.N() > 0 {
			loopHoldNs = max(loop.impl.hold.Percentile(0.5), 0)
		}
	}
	if g.emitRecv != nil && gw.failedSamples { // the judged requests' own; else the batch's are theirs
		var loopEmitRecv *stats.Metric
		if loopStats != nil {
			loopEmitRecv = loopStats.EmitRecv
		}
		v.setAddedDelay(loopEmitRecv, g.emitRecv)
	} else {
		v.SetAddedDelay(loopStats, gwStats)
	}

	switch {
	case v.BasisRequests == 0 && gw.completed+gw.partials == 0 && gw.failed > 0:
		v.Reason = "no request completed, nor received a token: nothing to judge"
		return v
	case g.tokens < MinTokens:
		v.Reason = fmt.Sprintf("too few tokens to judge (%d analysable, need %d)", g.tokens, MinTokens)
		return v
	}

	if n := g.hold.N(); n > 0 {
		holdNs, followingNs := g.hold.Percentile(0.5), g.following.Percentile(0.5)
		v.HoldRequests = n
		v.FirstTokenHoldMs = stats.Ms(holdNs)
		v.FollowingMs = stats.Ms(followingNs)
		v.FirstTokenHoldLevel = Hold(holdNs-loopHoldNs, followingNs)
		v.FirstTokenHold = v.FirstTokenHoldLevel != HoldNone
	}

	switch gap := g.emitGap.Percentile(0.5); {
	case gap < MinEmitGapNs:
		v.Reason = fmt.Sprintf("tokens were emitted back to back (typical gap %.3f ms, under %.3f ms; -d 0?): "+
			"bursts cannot be told from the stream itself", stats.Ms(gap), stats.Ms(MinEmitGapNs))
	case v.CoalescedFraction >= BufferedFraction && v.CoalescedFraction >= loopFraction+BufferedMargin,
		v.AddedMeanMs > DelayGaps*v.EmitGapMs && v.CoalescedFraction >= loopFraction+BurstsPresentMargin:
		v.Class = Buffers
	default:
		v.Class = Flushes
	}
	v.Signature = g.sig.signature(&v)
	v.Causes = []string{} // the advice on the gateway's settings: package advice, once the gateway is named
	return v
}

// SetAddedDelay sets the Added* fields and Relative from the batches'
// emit->recv (tokens): the gateway's minus the calibration's when loopStats
// has samples, the gateway's own otherwise; all zero when gwStats has none.
// Classify calls it; a merge of runs calls it again on the merged batches.
func (v *Verdict) SetAddedDelay(loopStats, gwStats *stats.Batch) {
	var loop, gw *stats.Metric
	if loopStats != nil {
		loop = loopStats.EmitRecv
	}
	if gwStats != nil {
		gw = gwStats.EmitRecv
	}
	v.setAddedDelay(loop, gw)
}

// setAddedDelay is SetAddedDelay from the emit->recv samples themselves
// (nil: none).
func (v *Verdict) setAddedDelay(loop, g *stats.Metric) {
	v.AddedMeanMs, v.AddedP50Ms, v.AddedP99Ms, v.Relative = 0, 0, 0, false
	if g == nil || g.N() == 0 {
		return
	}
	v.AddedMeanMs = g.Mean() / nsPerMs
	v.AddedP50Ms = stats.Ms(g.Percentile(0.5))
	v.AddedP99Ms = stats.Ms(g.Percentile(0.99))
	if loop == nil || loop.N() == 0 {
		return
	}
	v.Relative = true
	v.AddedMeanMs -= loop.Mean() / nsPerMs
	v.AddedP50Ms -= stats.Ms(loop.Percentile(0.5))
	v.AddedP99Ms -= stats.Ms(loop.Percentile(0.99))
}

// NagleLike reports whether a burst period (ms) is within NagleTolerance
// of one of NagleTimingsMs: Nagle's algorithm and delayed ACKs, rather
// than the gateway's own timer, release the bursts.
func NagleLike(periodMs float64) bool {
	for _, t := range NagleTimingsMs {
		if math.Abs(periodMs-t) <= NagleTolerance*t {
			return true
		}
	}
	return false
}
