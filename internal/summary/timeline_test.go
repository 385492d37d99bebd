package summary_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/summary/summarytest"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

const ms = int64(1_000_000)

// timelineOf summarises the records of ps.
func timelineOf(ps ...summarytest.Phased) *summary.Timeline {
	ts := summary.NewTimelineStats()
	for _, p := range ps {
		ts.Add(p.Request())
	}
	tl := ts.Summary()
	return &tl
}

// times returns n copies of p, indexed 0..n-1.
func times(n int, p summarytest.Phased) []summarytest.Phased {
	out := make([]summarytest.Phased, n)
	for i := range out {
		out[i] = p
		out[i].Index = i
	}
	return out
}

// names lists the findings' names.
func names(fs []verdict.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name)
	}
	return out
}

// An answer with every phase through a flushing path: 20 reasoning tokens
// over a 1 s think, a tool call of 10 argument tokens and 30 of text every
// 5 ms, each token 0.1 ms late; the server sent one heartbeat, seen.
var flushed = summarytest.Phased{Batch: "gw", Reasoning: 20, ToolCall: 10, Text: 30, Think: 1000 * ms, Delay: 5 * ms,
	Lat: ms / 10, Seen: 1, Sent: 1}

// TestFindings runs the gateways of issue 12 on synthetic records — each
// doing one thing to 4 requests of 5 — and checks the findings and their
// evidence; a flushing gateway (or one doing it to 2 of 5, below
// FindingShare, where a share is needed) has none.
func TestFindings(t *testing.T) {
	with := func(f func(p *summarytest.Phased)) []summarytest.Phased {
		ps := times(5, flushed)
		for i := range 4 {
			f(&ps[i])
		}
		return ps
	}
	twoOf := func(f func(p *summarytest.Phased)) []summarytest.Phased {
		ps := times(5, flushed)
		f(&ps[0])
		f(&ps[1])
		return ps
	}
	holdStart := func(p *summarytest.Phased) { p.HoldStart = true }
	holdStartSilent := func(p *summarytest.Phased) { p.HoldStart, p.Reasoning = true, 0 }
	holdArgs := func(p *summarytest.Phased) { p.HoldArgs = true }
	drop := func(p *summarytest.Phased) { p.DropReasoning = true }
	tests := []struct {
		name  string
		ps    []summarytest.Phased
		want  []string
		check func(t *testing.T, f verdict.Finding)
	}{
		{"flushing", times(5, flushed), nil, nil},
		{"holding the start", with(holdStart), []string{verdict.FindingHeldStart}, func(t *testing.T, f verdict.Finding) {
			// Released with the first visible token, 1050.1 ms after the
			// write; the think (to the first argument token) is 1000 ms.
			if f.Held != "head" || !f.WithText || !near(f.ReleasedMs, 1050.1) || !near(f.ThinkMs, 1000) {
				t.Errorf("held %q with text %v, released at %.3f ms, think %.3f ms; want head, true, 1050.1, 1000", f.Held, f.WithText, f.ReleasedMs, f.ThinkMs)
			}
		}},
		{"holding a silent think's start", with(holdStartSilent), []string{verdict.FindingHeldStart}, nil},
		{"holding 2 starts of 5", twoOf(holdStart), nil, nil},
		{"dropping reasoning", with(drop), []string{verdict.FindingReasoningDropped}, nil},
		{"dropping 2 reasonings of 5", twoOf(drop), nil, nil},
		{"turning reasoning into text", twoOf(func(p *summarytest.Phased) { p.ReasoningAsText = true }),
			[]string{verdict.FindingReasoningConverted}, nil},
		{"holding arguments", with(holdArgs), []string{verdict.FindingArgumentsHeld}, func(t *testing.T, f verdict.Finding) {
			if f.ArrivalSpreadMs != 0 || !near(f.EmissionSpreadMs, 45) {
				t.Errorf("arrival spread %.3f ms, emission spread %.3f ms; want 0 and 45", f.ArrivalSpreadMs, f.EmissionSpreadMs)
			}
		}},
		{"holding 2 tool calls of 5", twoOf(holdArgs), nil, nil},
		{"cutting idle streams", twoOf(func(p *summarytest.Phased) { p.Reasoning, p.CutAfter = 0, 2000*ms }),
			[]string{verdict.FindingIdleCut}, func(t *testing.T, f verdict.Finding) {
				if f.Requests != 2 || f.Of != 5 || !near(f.SilenceMs, 2000) || f.Heads != 2 || f.Events != 2 || f.Tokens != 0 ||
					f.Failure != "connection closed before [DONE]" {
					t.Errorf("%+v: want 2 of 5 cut after 2000 ms, with 2 heads, 2 events, no token, closed before [DONE]", f)
				}
			}},
		{"injecting heartbeats", twoOf(func(p *summarytest.Phased) { p.Seen = 4 }), []string{verdict.FindingHeartbeatsInjected},
			func(t *testing.T, f verdict.Finding) {
				if f.Requests != 2 || f.Of != 5 || f.Heartbeats != 6 || f.Sent != 5 || f.Seen != 11 {
					t.Errorf("%+v: want 6 injected in 2 of 5 requests, 5 sent, 11 seen", f)
				}
			}},
		{"swallowing heartbeats", with(func(p *summarytest.Phased) { p.Seen = 0 }), []string{verdict.FindingHeartbeatsSwallowed},
			func(t *testing.T, f verdict.Finding) {
				if f.Requests != 4 || f.Heartbeats != 4 || f.Sent != 5 || f.Seen != 1 {
					t.Errorf("%+v: want 4 swallowed in 4 requests, 5 sent, 1 seen", f)
				}
			}},
		{"heartbeats without a server record", with(func(p *summarytest.Phased) { p.Seen, p.Sent = 3, -1 }), nil, nil},
		// The arguments held with the start (released with the first
		// visible token) are no finding of their own.
		{"everything at once", with(func(p *summarytest.Phased) {
			p.HoldStart, p.DropReasoning, p.HoldArgs, p.Seen, p.Sent = true, true, true, 0, 2
		}), []string{verdict.FindingHeldStart, verdict.FindingReasoningDropped, verdict.FindingHeartbeatsSwallowed}, nil},
		{"holding arguments and dropping reasoning", with(func(p *summarytest.Phased) { p.HoldArgs, p.DropReasoning = true, true }),
			[]string{verdict.FindingReasoningDropped, verdict.FindingArgumentsHeld}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := summary.Findings(timelineOf(tt.ps...))
			if got := names(fs); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("findings %v, want %v", got, tt.want)
			}
			if tt.check != nil {
				tt.check(t, fs[0])
			}
		})
	}
	if summary.Findings(nil) != nil {
		t.Error("Findings(nil) found something")
	}
}

// near reports whether got is want within 0.1 % (a histogram's bucket).
func near(got, want float64) bool { return got >= want*0.999 && got <= want*1.001 }

// TestTimeline checks the figures of the flushing answers: when each
// phase began, each phase's delay, the silences, the requests judged.
func TestTimeline(t *testing.T) {
	tl := timelineOf(times(3, flushed)...)
	for _, tt := range []struct {
		name string
		m    summary.Metric
		n    int64
		p50  float64
	}{
		{"first event", tl.FirstEvent, 3, 0.1},
		{"first reasoning", tl.FirstReasoning, 3, 0.1},
		{"first tool call", tl.FirstToolCall, 3, 1000.1},
		{"first text", tl.FirstText, 3, 1050.1},
		{"last token", tl.LastToken, 3, 1195.1},
		{"emit->recv reasoning", tl.EmitRecv.Reasoning, 60, 0.1},
		{"emit->recv tool call", tl.EmitRecv.ToolCall, 30, 0.1},
		{"emit->recv text", tl.EmitRecv.Text, 90, 0.1},
		{"longest silence", tl.LongestSilence, 3, 50},
		{"think", tl.Think, 3, 1000},
		{"arguments' emission spread", tl.ArgsEmissionSpread, 3, 45},
		{"arguments' arrival spread", tl.ArgsArrivalSpread, 3, 45},
	} {
		if tt.m.N != tt.n || !near(tt.m.P50Ms, tt.p50) {
			t.Errorf("%s: n=%d p50=%.4f ms, want n=%d p50=%.4f", tt.name, tt.m.N, tt.m.P50Ms, tt.n, tt.p50)
		}
	}
	if tl.Requests != 3 || tl.ReasoningAsked != 3 || tl.ToolCallAsked != 3 || tl.StartJudged != 3 || tl.ArgsJudged != 3 ||
		tl.StartHeld != 0 || tl.ArgsHeld != 0 || tl.Cut != 0 || !tl.Notable() {
		t.Errorf("%+v: want 3 requests asking both phases, all judged, none held, none cut, notable", tl)
	}
	if h := tl.Heartbeats; h != (summary.Heartbeats{Seen: 3, Known: 3, Sent: 3, SeenKnown: 3}) {
		t.Errorf("heartbeats %+v, want 3 seen and sent", h)
	}
	plain := timelineOf(summarytest.Phased{Text: 10, Delay: 5 * ms, Lat: ms / 10, Sent: 1, Seen: 1})
	if plain.Notable() {
		t.Errorf("a plain text stream (its start ping seen) is notable: %+v", plain)
	}
}

// TestHeldStartFromTheServersPlan: a busy server, slow to take a request
// or late with its first token, delays its head or its token; judged
// against the think it planned, from when it began the stream, such a
// short think is not judged, where without its record (from the
// request's write to the token's emission) the late head looks held. A
// planned think of 100 ms is judged, and a head the gateway held until
// the token, held.
func TestHeldStartFromTheServersPlan(t *testing.T) {
	judge := func(r *result.Request) summary.Timeline {
		ts := summary.NewTimelineStats()
		ts.Add(r)
		return ts.Summary()
	}
	for _, tt := range []struct {
		name                         string
		start, thinkEnd, head, token int64 // ms from the request's write
	}{
		{"taken 90 ms late, a 10 ms think", 90, 100, 91, 100},
		{"a 20 ms think, the token written 60 ms late", 1, 21, 75, 80},
	} {
		r := &result.Request{Sent: 1, ServerStart: tt.start * ms, ServerThinkEnd: tt.thinkEnd * ms, HeadAt: tt.head * ms,
			FirstEventAt: tt.head * ms, ServerRecord: true}
		r.AppendTokens(1, 0, 1, tt.token*ms+ms)
		r.Tokens[0].Emitted = tt.token * ms
		if got := judge(r); got.StartJudged != 0 {
			t.Errorf("%s: %d starts judged, want none: the server meant to think %d ms", tt.name, got.StartJudged, tt.thinkEnd-tt.start)
		}
		r.ServerStart, r.ServerThinkEnd = 0, 0
		if got := judge(r); got.StartJudged != 1 || got.HeadHeld != 1 {
			t.Errorf("%s, without the server's record: %d judged, %d heads held; want the late head judged held", tt.name, got.StartJudged, got.HeadHeld)
		}
	}
	r := &result.Request{Sent: 1, ServerStart: 90 * ms, ServerThinkEnd: 190 * ms, HeadAt: 91 * ms, FirstEventAt: 91 * ms, ServerRecord: true}
	r.AppendTokens(1, 0, 1, 201*ms)
	r.Tokens[0].Emitted = 200 * ms
	if got := judge(r); got.StartJudged != 1 || got.HeadHeld != 0 || !near(got.Think.P50Ms, 100) {
		t.Errorf("a planned think of 100 ms: %d judged (think %.3f ms), %d held; want judged, not held", got.StartJudged, got.Think.P50Ms, got.HeadHeld)
	}
	r.HeadAt, r.FirstEventAt = 201*ms, 201*ms
	if got := judge(r); got.HeadHeld != 1 || got.HeldWithText != 1 || !near(got.Released.P50Ms, 111) {
		t.Errorf("a head held until the token: %d held (%d with the text, at %.3f ms); want held with the text, 111 ms into the stream",
			got.HeadHeld, got.HeldWithText, got.Released.P50Ms)
	}
}

// TestTimelineFailedHeartbeats: a failed request's heartbeats are counted
// as seen but not judged against the server's (it may have lost some in
// flight when it ended).
func TestTimelineFailedHeartbeats(t *testing.T) {
	r := summarytest.Phased{Text: 3, Delay: 5 * ms, Seen: 1, Sent: 4}.Request()
	r.Failure = result.Failure{Kind: result.ClosedBeforeDone}
	ts := summary.NewTimelineStats()
	ts.Add(r)
	if h := ts.Summary().Heartbeats; h != (summary.Heartbeats{Seen: 1}) {
		t.Errorf("heartbeats %+v, want 1 seen, nothing judged", h)
	}
}

// TestTimelineMergeAndRoundTrip: the summary of a timeline rebuilds the
// statistics it came from (Stats), through JSON too, and merging the
// statistics of two halves gives the timeline of the whole.
func TestTimelineMergeAndRoundTrip(t *testing.T) {
	all := append(times(3, flushed), times(2, summarytest.Phased{Batch: "gw", Text: 5, Think: 200 * ms, Delay: ms, Lat: ms,
		HoldStart: true, Seen: 2, Sent: 0})...)
	all[4].CutAfter, all[4].Think = 1500*ms, 3000*ms
	for i := range all {
		all[i].Index = i
	}
	whole := timelineOf(all...)
	a, b := summary.NewTimelineStats(), summary.NewTimelineStats()
	for i, p := range all {
		if i%2 == 0 {
			a.Add(p.Request())
		} else {
			b.Add(p.Request())
		}
	}
	var docA, docB summary.Timeline
	for _, x := range []struct {
		ts  *summary.TimelineStats
		doc *summary.Timeline
	}{{a, &docA}, {b, &docB}} {
		js, err := json.Marshal(x.ts.Summary())
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(js, x.doc); err != nil {
			t.Fatal(err)
		}
		if err := x.doc.Validate(); err != nil {
			t.Fatalf("Validate: %v", err)
		}
	}
	ra, err := docA.Stats()
	if err != nil {
		t.Fatal(err)
	}
	rb, err := docB.Stats()
	if err != nil {
		t.Fatal(err)
	}
	ra.Merge(rb)
	if got := ra.Summary(); !reflect.DeepEqual(&got, whole) {
		t.Errorf("merged halves:\n%+v\nwant the whole:\n%+v", got, *whole)
	}
	// The cut request held its head through the think it was cut in.
	if whole.Cut != 1 || whole.StartHeld != 2 || whole.Heartbeats.Injected != 2 {
		t.Errorf("cut %d, held %d, injected %d: want the scenario's 1, 2, 2", whole.Cut, whole.StartHeld, whole.Heartbeats.Injected)
	}
	bad := *whole
	bad.Think.N++
	if err := bad.Validate(); err == nil {
		t.Error("Validate accepts a metric whose n is not its histogram's")
	}
	bad = *whole
	bad.Cut = -1
	if err := bad.Validate(); err == nil {
		t.Error("Validate accepts a negative count")
	}
}
