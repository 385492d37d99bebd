package verdict

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"weak"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
)

// base is an arbitrary process-clock reading (2026-01-01T00:00:00Z).
const base = int64(1_767_225_600_000_000_000)

const (
	us = int64(1_000)
	ms = int64(1_000_000)
)

// arrival gives the arrival of token k emitted at emit (ns since the
// request's first emission).
type arrival func(k int, emit int64) int64

// synth builds a request of n tokens emitted gap ns apart, the first 1 ms
// after base, arriving as arrive says. As over TCP, a token cannot arrive
// before its emission nor before the token ahead of it; tokens arriving at
// the same instant share a Read.
func synth(n int, gap int64, arrive arrival) *result.Request {
	r := &result.Request{Batch: "gw", Start: base, Sent: base + 100*us}
	first := base + ms
	read := int32(-1)
	var prev int64
	for k := range n {
		e := int64(k) * gap
		a := max(arrive(k, e), e)
		if k > 0 {
			a = max(a, prev)
		}
		if k == 0 || a != prev {
			read++
		}
		r.AppendTokens(1, int32(k), read, first+a)
		r.Tokens[len(r.Tokens)-1].Emitted = first + e
		prev = a
	}
	r.End = first + prev + 100*us
	return r
}

// flushing: every token arrives lat ns after its emission, plus a random
// jitter in [0, jitter).
func flushing(lat, jitter int64, seed uint64) arrival {
	rng := rand.New(rand.NewPCG(seed, 1))
	return func(_ int, e int64) int64 {
		if jitter <= 0 {
			return e + lat
		}
		return e + lat + rng.Int64N(jitter)
	}
}

// released: the gateway releases what it holds every period ns, first at
// phase ns; tokens arrive lat ns after the release.
func released(period, phase, lat int64) arrival {
	return func(_ int, e int64) int64 {
		m := (e - phase + period - 1) / period // first release at or after e
		return phase + m*period + lat
	}
}

// held: the first token arrives hold ns after its emission, the others lat
// ns after theirs (those emitted during the hold queue behind the first).
func held(hold, lat int64) arrival {
	return func(k int, e int64) int64 {
		if k == 0 {
			return e + hold
		}
		return e + lat
	}
}

// groups: tokens arrive in groups of the given sizes (cyclically), each
// group lat ns after the emission of its last token: a group of one is a
// flushed token, a larger one a burst.
func groups(lat int64, gap int64, sizes ...int) arrival {
	var ends []int // index of the last token of each group in one cycle
	cycle := 0
	for _, s := range sizes {
		cycle += s
		ends = append(ends, cycle-1)
	}
	return func(k int, _ int64) int64 {
		c, i := k/cycle, k%cycle
		for _, end := range ends {
			if i <= end {
				return int64(c*cycle+end)*gap + lat
			}
		}
		panic("unreachable")
	}
}

// batch is a set of synthetic requests folded into an Accumulator and a
// stats.Batch, as the CLI does.
type batch struct {
	acc *Accumulator
	st  *stats.Batch
}

func newBatch(requests, tokens int, gap int64, arrive func(req int) arrival) batch {
	b := batch{NewAccumulator(), stats.NewBatch()}
	for i := range requests {
		r := synth(tokens, gap, arrive(i))
		b.acc.Add(r)
		b.st.Add(r)
	}
	return b
}

// loopback: a calibration batch of 3 requests of 200 tokens, 5 ms apart,
// arriving 20–30 µs after emission.
func loopback() batch {
	return newBatch(3, 200, 5*ms, func(i int) arrival { return flushing(20*us, 10*us, uint64(i)) })
}

// pairs returns group sizes for groups: p pairs, then s single tokens.
func pairs(p, s int) []int {
	return append(slices.Repeat([]int{2}, p), slices.Repeat([]int{1}, s)...)
}

func each(a arrival) func(int) arrival { return func(int) arrival { return a } }

// within reports whether got is within frac of want.
func within(got, want, frac float64) bool { return math.Abs(got-want) <= frac*math.Abs(want) }

func TestClassify(t *testing.T) {
	loop := loopback()
	noisyLoop := newBatch(3, 200, 5*ms, each(groups(20*us, 5*ms, 3, 3, 1, 1, 1, 1)))
	tests := []struct {
		name     string
		loop     *batch // nil: no calibration
		gw       batch
		class    Class
		reason   string // substring of Reason
		check    func(v Verdict) string
		hold     bool
		nagle    bool
		relative bool
	}{
		{
			name: "flushing, 20 µs plus up to 10 µs jitter", loop: &loop,
			gw:    newBatch(4, 1000, 5*ms, func(i int) arrival { return flushing(40*us, 10*us, uint64(10+i)) }),
			class: Flushes, relative: true,
			check: func(v Verdict) string {
				if v.CoalescedFraction != 0 || v.Bursts != 0 || v.LoopCoalesced != 0 || v.Noisy ||
					!within(v.AddedMeanMs, 0.020, 0.1) || !within(v.EmitGapMs, 5, 0.001) || len(v.Causes) != 0 || v.Causes == nil {
					return "want no bursts, an empty list of causes, added mean ~0.020 ms, emission gap 5 ms"
				}
				return ""
			},
		},
		{
			name: "releases every 85 ms (haproxy 2.6 without http-no-delay)", loop: &loop,
			gw:    newBatch(4, 1000, 5*ms, each(released(85*ms, 300*us, 30*us))),
			class: Buffers, relative: true,
			check: func(v Verdict) string {
				// Emitted at 5k ms, released at 0.3 + 85m ms: held 80.3, 75.3 ... 0.3 ms.
				if v.CoalescedFraction < 0.99 || v.BurstSizeP50 != 17 || v.BurstSizeMax != 17 ||
					!within(v.BurstPeriodMs, 85, 0.01) || !within(v.AddedMeanMs, 40.3, 0.01) ||
					!within(v.AddedP99Ms, 80.3, 0.01) {
					return "want bursts of 17 every 85 ms, added mean ~40.3 ms, p99 ~80.3 ms"
				}
				return ""
			},
		},
		{
			name: "releases every 200 ms (Nagle, 200 ms)", loop: &loop,
			gw:    newBatch(4, 1000, 5*ms, each(released(200*ms, 300*us, 30*us))),
			class: Buffers, nagle: true, relative: true,
			check: func(v Verdict) string {
				if v.BurstSizeP50 != 40 || v.BurstSizeMax != 40 || !within(v.BurstPeriodMs, 200, 0.01) {
					return "want bursts of 40 every 200 ms"
				}
				return ""
			},
		},
		{
			name: "releases every 40 ms (Nagle, delayed ACK)", loop: &loop,
			gw:    newBatch(4, 1000, 5*ms, each(released(40*ms, 300*us, 30*us))),
			class: Buffers, nagle: true, relative: true,
			check: func(v Verdict) string {
				if v.BurstSizeP50 != 8 || !within(v.BurstPeriodMs, 40, 0.01) {
					return "want bursts of 8 every 40 ms"
				}
				return ""
			},
		},
		{
			name: "first token held 40 ms, the rest flushed", loop: &loop,
			gw:    newBatch(20, 200, 5*ms, each(held(40*ms, 20*us))),
			class: Flushes, hold: true, relative: true,
			check: func(v Verdict) string {
				if !within(v.FirstTokenHoldMs, 39.98, 0.001) || v.HoldRequests != 20 || !within(v.FollowingMs, 0.02, 0.01) ||
					v.FirstTokenHoldLevel != HoldWarn {
					return "want a hold of 39.98 ms over 20 requests, following tokens at 0.02 ms, a warning (below HoldFailNs)"
				}
				return ""
			},
		},
		{
			name: "first token held 60 ms, the rest flushed", loop: &loop,
			gw:    newBatch(20, 200, 5*ms, each(held(60*ms, 20*us))),
			class: Flushes, hold: true, relative: true,
			check: func(v Verdict) string {
				if !within(v.FirstTokenHoldMs, 59.98, 0.001) || v.FirstTokenHoldLevel != HoldFail {
					return "want a hold of 59.98 ms, a failure (from HoldFailNs)"
				}
				return ""
			},
		},
		{
			name: "first token held 9 ms: below HoldWarnNs", loop: &loop,
			gw:    newBatch(20, 200, 5*ms, each(held(9*ms, 20*us))),
			class: Flushes, relative: true,
		},
		{
			name: "first token held 15 ms, but the calibration's first tokens wait 10 ms", loop: &noisyLoop,
			gw:    newBatch(20, 200, 5*ms, each(held(15*ms, 20*us))),
			class: Flushes, relative: true,
			check: func(v Verdict) string {
				if !within(v.FirstTokenHoldMs, 14.98, 0.001) {
					return "want a hold of 14.98 ms, not flagged"
				}
				return ""
			},
		},
		{
			name: "buffering delays the first token too, but that is no hold", loop: &loop,
			gw:    newBatch(20, 1000, 5*ms, each(released(85*ms, 84*ms, 30*us))),
			class: Buffers, relative: true,
			check: func(v Verdict) string {
				// The first token waits 84 ms, the others 44 ms typically:
				// an excess of 40 ms, but less than HoldFactor times 44 ms.
				if !within(v.FirstTokenHoldMs, 40, 0.01) || !within(v.FollowingMs, 44.03, 0.01) {
					return "want a first-token excess of ~40 ms over following tokens at ~44 ms"
				}
				return ""
			},
		},
		{
			name: "random jitter up to 1 ms, no bursts", loop: &loop,
			gw:    newBatch(4, 1000, 5*ms, func(i int) arrival { return flushing(20*us, 1*ms, uint64(20+i)) }),
			class: Flushes, relative: true,
			check: func(v Verdict) string {
				if v.CoalescedFraction != 0 || !within(v.AddedMeanMs, 0.5, 0.1) {
					return "want no bursts and ~0.5 ms added"
				}
				return ""
			},
		},
		{
			name: "overloaded tool: loopback coalesces 60 %, gateway 65 %", loop: &noisyLoop,
			gw:    newBatch(4, 1000, 5*ms, each(groups(20*us, 5*ms, 3, 3, 3, 4, 1, 1, 1, 1, 1, 1, 1))),
			class: Flushes, relative: true,
			check: func(v Verdict) string {
				if !within(v.LoopCoalesced, 0.6, 0.01) || !v.Noisy || !within(v.CoalescedFraction, 0.65, 0.01) {
					return "want loopback 60 %, noisy, gateway 65 %"
				}
				return ""
			},
		},
		{
			name: "overloaded tool, but the gateway adds 13 ms in bursts of 9 (DelayGaps rule)", loop: &noisyLoop,
			gw:    newBatch(4, 1000, 5*ms, each(groups(20*us, 5*ms, 9, 1, 1))),
			class: Buffers, relative: true,
			check: func(v Verdict) string {
				// 82 % coalesced: under 60 % + BufferedMargin. Added: the
				// gateway's (91·180 − 40)/999 ms minus the loopback's
				// (20·30 − 10)/199 ms.
				if v.CoalescedFraction != 0.819 || !within(v.AddedMeanMs, 13.391, 0.001) || v.BurstPeriodMs != 55 {
					return "want 81.9 % coalesced, 13.391 ms added, a period of 55 ms"
				}
				return ""
			},
		},
		{
			name: "45 % in pairs: below BufferedFraction", loop: &loop,
			gw:    newBatch(4, 1000, 5*ms, each(groups(20*us, 5*ms, pairs(9, 22)...))),
			class: Flushes, relative: true,
		},
		{
			name: "55 % in pairs: at least BufferedFraction", loop: &loop,
			gw:    newBatch(4, 1000, 5*ms, each(groups(20*us, 5*ms, pairs(11, 18)...))),
			class: Buffers, relative: true,
		},
		{
			name: "a constant 50 ms added to every event: late, but flushed", loop: &loop,
			gw:    newBatch(4, 1000, 5*ms, each(flushing(50*ms, 0, 0))),
			class: Flushes, relative: true,
		},
		{
			name: "-d 0: tokens emitted back to back", loop: &loop,
			gw:    newBatch(4, 1000, 2*us, each(flushing(20*us, 0, 0))),
			class: Unknown, reason: "emitted back to back", relative: true,
		},
		{
			name: "too few tokens", loop: &loop,
			gw:    newBatch(1, 19, 5*ms, each(released(85*ms, 300*us, 30*us))),
			class: Unknown, reason: "too few tokens to judge (19 analysable, need 20)", relative: true,
		},
		{
			name:  "no calibration: absolute figures",
			gw:    newBatch(4, 1000, 5*ms, each(released(85*ms, 300*us, 30*us))),
			class: Buffers,
			check: func(v Verdict) string {
				if v.LoopCoalesced != -1 || v.Noisy || !within(v.AddedMeanMs, 40.46013, 0.000001) {
					return "want LoopCoalesced -1 and the gateway's own mean, 40.46013 ms"
				}
				return ""
			},
		},
	}
	for _, tt := range tests {
		var loopAcc *Accumulator
		var loopStats *stats.Batch
		if tt.loop != nil {
			loopAcc, loopStats = tt.loop.acc, tt.loop.st
		}
		v := Classify(loopAcc, tt.gw.acc, loopStats, tt.gw.st)
		if v.Class != tt.class || !strings.Contains(v.Reason, tt.reason) || (v.Reason == "") != (tt.class != Unknown) {
			t.Errorf("%s: Classify = %s (reason %q), want %s (reason containing %q)", tt.name, v.Class, v.Reason, tt.class, tt.reason)
		}
		if v.FirstTokenHold != tt.hold {
			t.Errorf("%s: FirstTokenHold = %t (%.3f ms over %d requests, following %.3f ms), want %t",
				tt.name, v.FirstTokenHold, v.FirstTokenHoldMs, v.HoldRequests, v.FollowingMs, tt.hold)
		}
		if NagleLike(v.BurstPeriodMs) != tt.nagle {
			t.Errorf("%s: NagleLike(period %.3f ms) = %t, want %t", tt.name, v.BurstPeriodMs, !tt.nagle, tt.nagle)
		}
		if (v.FirstTokenHoldLevel != HoldNone) != tt.hold {
			t.Errorf("%s: FirstTokenHoldLevel %q with FirstTokenHold %t", tt.name, v.FirstTokenHoldLevel, tt.hold)
		}
		if v.Relative != tt.relative {
			t.Errorf("%s: Relative = %t, want %t", tt.name, v.Relative, tt.relative)
		}
		if tt.check != nil {
			if msg := tt.check(v); msg != "" {
				t.Errorf("%s: %s; got %+v", tt.name, msg, v)
			}
		}
	}
}

func TestClassifyEmpty(t *testing.T) {
	if v := Classify(nil, nil, nil, nil); v.Class != Unknown || v.Reason == "" || v.LoopCoalesced != -1 {
		t.Errorf("Classify(nil, nil, nil, nil) = %+v, want Unknown with a reason", v)
	}
	if v := Classify(NewAccumulator(), NewAccumulator(), stats.NewBatch(), stats.NewBatch()); v.Class != Unknown ||
		v.Reason != "too few tokens to judge (0 analysable, need 20)" || v.Relative || v.LoopCoalesced != -1 {
		t.Errorf("Classify of empty batches = %+v, want Unknown for too few tokens, not relative, no loopback share", v)
	}
}

// TestAddCounts checks every counter and distribution of the accumulator on
// one hand-made request.
func TestAddCounts(t *testing.T) {
	// Emitted 5 ms apart. Arrivals: 0 alone, 3 ms after its emission; 1–3
	// one burst (3 shares the Read of 2, 1 is 0.1 ms earlier); 4 alone; 5
	// unstamped; 6 alone (both its neighbours are unstamped, so it is not
	// analysable); 7 unstamped; 8–9 a burst; 10 alone.
	e := func(k int64) int64 { return base + k*5*ms }
	r := &result.Request{Tokens: []result.Token{
		{Emitted: e(0), Arrived: e(0) + 3*ms},
		{Emitted: e(1), Arrived: e(3) + 10*us},
		{Emitted: e(2), Arrived: e(3) + 110*us},
		{Emitted: e(3), Arrived: e(3) + 110*us},
		{Emitted: e(4), Arrived: e(4) + 20*us},
		{Emitted: 0, Arrived: e(5) + 20*us},
		{Emitted: e(6), Arrived: e(6) + 20*us},
		{Emitted: 0, Arrived: e(7) + 20*us},
		{Emitted: e(8), Arrived: e(9) + 20*us},
		{Emitted: e(9), Arrived: e(9) + 20*us},
		{Emitted: e(10), Arrived: e(10) + 20*us},
	}}
	a := NewAccumulator()
	a.Add(r)
	im := &a.impl
	// Analysable: 0–4 and 8–10 (6 has no stamped neighbour).
	if im.tokens != 8 || im.coalesced != 5 || im.bursts != 2 {
		t.Errorf("tokens, coalesced, bursts = %d, %d, %d; want 8, 5, 2", im.tokens, im.coalesced, im.bursts)
	}
	if n, lo, hi := im.burstSize.N(), im.burstSize.Min(), im.burstSize.Max(); n != 2 || lo != 2 || hi != 3 {
		t.Errorf("burst sizes: n=%d min=%d max=%d; want 2 samples, 2 and 3", n, lo, hi)
	}
	// The bursts start at e(3)+10µs and e(9)+20µs: one period of 30.01 ms
	// (unstamped tokens end a burst, not the request).
	if n, p := im.period.N(), im.period.Min(); n != 1 || p != 30*ms+10*us {
		t.Errorf("periods: n=%d min=%d; want one of %d ns", n, p, 30*ms+10*us)
	}
	// Pairs judged: 0-1, 1-2, 2-3, 3-4, 8-9, 9-10.
	if n, lo, hi := im.emitGap.N(), im.emitGap.Min(), im.emitGap.Max(); n != 6 || lo != 5*ms || hi != 5*ms {
		t.Errorf("emission gaps: n=%d min=%d max=%d; want 6 of 5 ms", n, lo, hi)
	}
	// The others' emit->recv (tokens 1, 2, 3, 4, 6, 8, 9, 10): 10.01, 5.11,
	// 0.11, 0.02, 0.02, 5.02, 0.02, 0.02 ms; sorted, index floor(7/2) = 3 is
	// 0.02 ms. The hold is 3 ms − 0.02 ms.
	if n, h, f := im.hold.N(), im.hold.Min(), im.following.Min(); n != 1 || h != 3*ms-20*us || f != 20*us {
		t.Errorf("hold: n=%d hold=%d following=%d; want one request, %d and %d", n, h, f, 3*ms-20*us, 20*us)
	}
}

func TestJoined(t *testing.T) {
	tests := []struct {
		arrive, emit int64
		want         bool
	}{
		{0, 5 * ms, true},
		{1250*us - 1, 5 * ms, true},
		{1250 * us, 5 * ms, false}, // JoinFraction of the emission gap: apart
		{5 * ms, 5 * ms, false},
		{0, 0, false}, // emitted together, arrived together: not the gateway's doing
		{10 * us, 2 * us, false},
	}
	for _, tt := range tests {
		if got := joined(tt.arrive, tt.emit); got != tt.want {
			t.Errorf("joined(%d, %d) = %t, want %t", tt.arrive, tt.emit, got, tt.want)
		}
	}
}

func TestNagleLike(t *testing.T) {
	tests := []struct {
		periodMs float64
		want     bool
	}{
		{29.9, false}, {30, true}, {40, true}, {50, true}, {50.1, false},
		{85, false}, {149.9, false}, {150, true}, {200, true}, {250, true}, {250.1, false}, {0, false},
	}
	for _, tt := range tests {
		if got := NagleLike(tt.periodMs); got != tt.want {
			t.Errorf("NagleLike(%.1f) = %t, want %t", tt.periodMs, got, tt.want)
		}
	}
}

func TestAddDoesNotAllocate(t *testing.T) {
	a := NewAccumulator()
	r := synth(1000, 5*ms, released(85*ms, 300*us, 30*us))
	a.Add(r) // grows the scratch slice once
	if n := testing.AllocsPerRun(100, func() { a.Add(r) }); n != 0 {
		t.Errorf("Add of a 1000-token request allocates %v times in steady state, want 0", n)
	}
}

// TestAddDoesNotRetain checks that Add neither reads the record later nor
// keeps it reachable.
func TestAddDoesNotRetain(t *testing.T) {
	r := synth(1000, 5*ms, released(85*ms, 300*us, 30*us))
	want := NewAccumulator()
	want.Add(synth(1000, 5*ms, released(85*ms, 300*us, 30*us)))

	a := NewAccumulator()
	a.Add(r)
	for i := range r.Tokens { // a record changed after Add must not matter
		r.Tokens[i] = result.Token{Emitted: 1, Arrived: 1}
	}
	got, exp := Classify(nil, a, nil, nil), Classify(nil, want, nil, nil)
	if !slices.Equal(got.Causes, exp.Causes) || got.CoalescedFraction != exp.CoalescedFraction ||
		got.BurstPeriodMs != exp.BurstPeriodMs || got.FirstTokenHoldMs != exp.FirstTokenHoldMs {
		t.Errorf("changing the record after Add changed the verdict: %+v, want %+v", got, exp)
	}

	toks := synth(1000, 5*ms, flushing(20*us, 0, 0)).Tokens
	wp := weak.Make(&toks[0])
	a.Add(&result.Request{Tokens: toks})
	toks = nil
	runtime.GC()
	runtime.GC()
	if wp.Value() != nil {
		t.Errorf("the tokens of a record are still reachable after Add")
	}
	runtime.KeepAlive(a)
	_ = toks
}

func BenchmarkAdd(b *testing.B) {
	a := NewAccumulator()
	r := synth(1000, 5*ms, released(85*ms, 300*us, 30*us))
	b.ReportAllocs()
	for b.Loop() {
		a.Add(r)
	}
}

// TestClassifyVisibleTokens: the verdict judges the visible text tokens.
// Requests whose reasoning is emitted every 60 ms and released all at once
// at the end of the think, then whose text flushes every 5 ms, flush, with
// the text's cadence and token count.
func TestClassifyVisibleTokens(t *testing.T) {
	const reasoning, text = 50, 40
	gw := NewAccumulator()
	for i := range 3 {
		r := &result.Request{Batch: "gw", Index: i, Sent: base, Reasoning: reasoning}
		thinkEnd := base + reasoning*60*ms
		r.AppendTokens(reasoning, 0, 0, thinkEnd) // every reasoning token in one Read at the end
		for k := range reasoning {
			r.Tokens[k].Emitted = base + int64(k)*60*ms
		}
		for k := range text {
			e := thinkEnd + int64(k)*5*ms
			r.AppendTokens(1, int32(reasoning+k), int32(1+k), e+50*us)
			r.Tokens[len(r.Tokens)-1].Emitted = e
		}
		gw.Add(r)
	}
	v := Classify(nil, gw, nil, nil)
	if v.Class != Flushes || v.EmitGapMs != 5 || v.Tokens != 3*text || v.CoalescedFraction != 0 {
		t.Errorf("verdict %s, emitted every %.2f ms, %d tokens, %.2f in bursts; want flushes, 5.00, %d, 0 (the text's)",
			v.Class, v.EmitGapMs, v.Tokens, v.CoalescedFraction, 3*text)
	}
}

// TestClassifyBasis: the timing verdict is judged on the requests that
// completed; when none did, on the partial streams of the failed ones; the
// added delay is then the judged requests' own.
func TestClassifyBasis(t *testing.T) {
	cut := func(r *result.Request) *result.Request {
		r.Failure = result.Failure{Kind: result.ClosedBeforeDone}
		return r
	}
	flushed := func() *result.Request { return synth(100, 5*ms, flushing(100*us, 0, 1)) }
	bursts := func() *result.Request { return cut(synth(100, 5*ms, released(50*ms, 0, 100*us))) }
	classify := func(recs ...*result.Request) Verdict { // as summary.Collector does
		a, b := NewAccumulator(), stats.NewBatch()
		for _, r := range recs {
			if !r.OK() && len(r.Tokens) > 0 {
				a.SplitFrom(b.EmitRecv)
			}
			a.Add(r)
			b.Add(r)
		}
		return Classify(nil, a, nil, b)
	}

	// Two flushed streams completed, one buffered stream was cut: the
	// completed ones decide, and their delay alone is the added delay.
	v := classify(flushed(), flushed(), bursts())
	if v.Class != Flushes || v.Basis != BasisCompleted || v.BasisRequests != 2 || math.Abs(v.AddedP99Ms-0.1) > 0.001 {
		t.Errorf("2 flushed completed, 1 buffered cut: %s on %s (%d requests), added p99 %.3f ms; want flushes on the 2 completed, 0.100 ms",
			v.Class, v.Basis, v.BasisRequests, v.AddedP99Ms)
	}
	// Every stream cut: the partial streams, said so.
	v = classify(bursts(), bursts(), bursts())
	if v.Class != Buffers || v.Basis != BasisPartial || v.BasisRequests != 3 || v.Signature == nil {
		t.Errorf("3 buffered streams cut: %s on %s (%d requests), signature %v; want buffers on the 3 partial streams, with a signature",
			v.Class, v.Basis, v.BasisRequests, v.Signature)
	}
	// One stream completed, too short to judge; the cut ones are judged.
	v = classify(synth(3, 5*ms, flushing(100*us, 0, 1)), bursts(), bursts())
	if v.Class != Buffers || v.Basis != BasisPartial || v.BasisRequests != 2 {
		t.Errorf("1 short stream completed, 2 cut: %s on %s (%d requests); want buffers on the 2 partial streams", v.Class, v.Basis, v.BasisRequests)
	}
	// Nothing completed nor arrived.
	none := &result.Request{Batch: "gw", Start: base, End: base + ms, Failure: result.Failure{Kind: result.Connect, Detail: "Connection refused"}}
	v = classify(none, none)
	if v.Class != Unknown || v.BasisRequests != 0 || !strings.Contains(v.Reason, "no request completed, nor received a token") {
		t.Errorf("2 refused: %s (%q), %d requests; want unknown, saying nothing completed or arrived", v.Class, v.Reason, v.BasisRequests)
	}
	// No failure: the batch's own emit->recv, as before.
	v = classify(flushed(), flushed())
	if v.Basis != BasisCompleted || v.BasisRequests != 2 || math.Abs(v.AddedP99Ms-0.1) > 0.001 {
		t.Errorf("2 flushed: basis %s of %d, added p99 %.3f ms", v.Basis, v.BasisRequests, v.AddedP99Ms)
	}
	// The completed requests before the first failure count too: the
	// split starts from the batch's samples so far.
	v = classify(flushed(), bursts(), flushed())
	if v.Class != Flushes || v.BasisRequests != 2 || math.Abs(v.AddedP99Ms-0.1) > 0.001 {
		t.Errorf("flushed, cut, flushed: %s on %d requests, added p99 %.3f ms; want flushes on 2, 0.100 ms", v.Class, v.BasisRequests, v.AddedP99Ms)
	}
	// Without the split (an accumulator used alone), the batch's delay,
	// the failed requests' included.
	a, b := NewAccumulator(), stats.NewBatch()
	for _, r := range []*result.Request{flushed(), flushed(), bursts()} {
		a.Add(r)
		b.Add(r)
	}
	if v := Classify(nil, a, nil, b); math.Abs(v.AddedP99Ms-float64(b.EmitRecv.Percentile(0.99))/1e6) > 0.001 {
		t.Errorf("without SplitFrom: added p99 %.3f ms, want the batch's %.3f", v.AddedP99Ms, float64(b.EmitRecv.Percentile(0.99))/1e6)
	}
}
