package summary

import (
	"fmt"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/failures"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
)

// Timeline is how a batch's answers unfolded, phase by phase: when the
// first event, reasoning, tool-call delta and visible token arrived, each
// phase's one-way delay, the heartbeats, the silences — and, per request,
// what the findings about the gateway are judged from (Findings): held
// starts, dropped or converted reasoning, held tool-call arguments, idle
// cuts. The batch's metrics (Metrics) describe the visible text only, as
// the reference's; the time to the response head is in Phases.
//
// Times are from the request's write (result.Request.Sent), one sample per
// request that had the event. Like every summary figure it is computed
// once from the records (TimelineStats) and rebuilt from its histograms
// and counts for a merge (Stats).
type Timeline struct {
	Requests int64 `json:"requests"` // requests counted (warm-ups left out)

	// When the first event (a ping event aside), the first reasoning
	// delta, tool-call delta and visible text (TTFO) arrived, and the last
	// token of any phase.
	FirstEvent     Metric `json:"first_event"`
	FirstReasoning Metric `json:"first_reasoning"`
	FirstToolCall  Metric `json:"first_tool_call"`
	FirstText      Metric `json:"first_text"`
	LastToken      Metric `json:"last_token"`

	// Each phase's emit->recv, every stamped token of it (the first one
	// too).
	EmitRecv PhaseMetrics `json:"emit_recv"`

	// LongestSilence is, per request, the longest time without a byte:
	// from the write to the first Read, between Reads, and from the last
	// Read to the request's end.
	LongestSilence Metric `json:"longest_silence"`

	Heartbeats Heartbeats `json:"heartbeats"`

	// Reasoning: requests that asked for reasoning, of which those whose
	// answer came without any (the gateway dropped it) and those whose
	// visible text carried it (result.Request.ReasoningAsText).
	ReasoningAsked     int64 `json:"reasoning_asked"`
	ReasoningDropped   int64 `json:"reasoning_dropped"`
	ReasoningConverted int64 `json:"reasoning_converted"`

	// Tool calls: requests that asked for one; of them, those whose
	// argument deltas were emitted over at least ArgsMinSpreadNs (judged),
	// the spreads of their emissions and of their arrivals, and those
	// whose arrivals spread less than ArgsHeldFraction of their emissions.
	ToolCallAsked      int64  `json:"tool_call_asked"`
	ArgsJudged         int64  `json:"args_judged"`
	ArgsHeld           int64  `json:"args_held"`
	ArgsEmissionSpread Metric `json:"args_emission_spread"`
	ArgsArrivalSpread  Metric `json:"args_arrival_spread"`

	// Held starts: requests whose server thought at least HeldMinThinkNs
	// (to its first token after the think phase: Think), and of them
	// those whose head (HeadHeld) or first event (StartHeld, the head's
	// included) arrived no earlier than HeldFraction of it — when
	// (Released) — and those released with the first visible token
	// (HeldWithText). With the server's record the think is the one it
	// planned, these times from when it began the stream
	// (result.Request.ServerStart, ServerThinkEnd); without, from the
	// request's write to the first token's emission.
	StartJudged  int64  `json:"start_judged"`
	StartHeld    int64  `json:"start_held"`
	HeadHeld     int64  `json:"head_held"`
	HeldWithText int64  `json:"held_with_text"`
	Think        Metric `json:"think"`
	Released     Metric `json:"released"`

	// Idle cuts: requests that failed (closed, reset, errored, bad status)
	// after at least IdleCutMinNs of silence, that silence, and what they
	// had received: the head (requests), events, tokens; CutFailure is the
	// failure text of the first one.
	Cut        int64  `json:"cut"`
	CutSilence Metric `json:"cut_silence"`
	CutHeads   int64  `json:"cut_heads"`
	CutEvents  int64  `json:"cut_events"`
	CutTokens  int64  `json:"cut_tokens"`
	CutFailure string `json:"cut_failure,omitempty"`
}

// PhaseMetrics is one metric per phase of an answer.
type PhaseMetrics struct {
	Reasoning Metric `json:"reasoning"`
	ToolCall  Metric `json:"tool_call"`
	Text      Metric `json:"text"`
}

// Heartbeats are the heartbeats (SSE comments, Anthropic ping events) of a
// batch: seen by the client, and written by the in-process server for the
// requests whose emission record the client found (Known, ok requests
// only, whose streams were wholly forwarded); per request the difference
// is what a gateway injected or swallowed.
type Heartbeats struct {
	Seen              int64 `json:"seen"`               // by the client, all requests
	Known             int64 `json:"known"`              // ok requests with the server's count
	Sent              int64 `json:"sent"`               // by the server, to those
	SeenKnown         int64 `json:"seen_known"`         // by the client, of those
	Injected          int64 `json:"injected"`           // seen beyond those sent, summed over the requests
	Swallowed         int64 `json:"swallowed"`          // sent beyond those seen, summed over the requests
	RequestsInjected  int64 `json:"requests_injected"`  // requests with heartbeats injected
	RequestsSwallowed int64 `json:"requests_swallowed"` // requests with heartbeats swallowed
}

// Notable reports whether the timeline has more to tell than the batch's
// other figures: phases before the text, a judged think, an idle cut, or
// heartbeats injected or swallowed. The text report prints its lines only
// then (a plain stream would print them all alike).
func (t *Timeline) Notable() bool {
	h := &t.Heartbeats
	return t.ReasoningAsked > 0 || t.ToolCallAsked > 0 || t.StartJudged > 0 || t.Cut > 0 || h.Injected > 0 || h.Swallowed > 0
}

// TimelineStats gathers a batch's Timeline as its requests finish (Add),
// or from saved summaries (Timeline.Stats) to merge them (Merge). Create
// it with NewTimelineStats; it is not safe for concurrent use.
//
// Its fields are the Timeline's of the same names, in nanoseconds (Last is
// LastToken; Reasoning, ToolCall and Text are EmitRecv's).
type TimelineStats struct {
	// Requests counted; when the first event, reasoning, tool-call delta
	// and visible token, and the last token, arrived.
	Requests                                                   int64
	FirstEvent, FirstReasoning, FirstToolCall, FirstText, Last *stats.Metric
	// Each phase's emit->recv; the longest silences; the heartbeats.
	Reasoning, ToolCall, Text *stats.Metric
	LongestSilence            *stats.Metric
	Heartbeats                Heartbeats

	// The reasoning asked for, dropped, turned into text.
	ReasoningAsked, ReasoningDropped, ReasoningConverted int64

	// The tool calls asked for, judged and held, and their spreads.
	ToolCallAsked, ArgsJudged, ArgsHeld   int64
	ArgsEmissionSpread, ArgsArrivalSpread *stats.Metric

	// The starts judged and held, and the thinks and releases.
	StartJudged, StartHeld, HeadHeld, HeldWithText int64
	Think, Released                                *stats.Metric

	// The idle cuts and what they had received.
	Cut                            int64
	CutSilence                     *stats.Metric
	CutHeads, CutEvents, CutTokens int64
	CutFailure                     string
}

// NewTimelineStats returns an empty TimelineStats.
func NewTimelineStats() *TimelineStats {
	t := &TimelineStats{}
	for _, f := range t.fields(&Timeline{}) {
		*f.dst = stats.NewMetric()
	}
	return t
}

// fields pairs each metric of t with the Timeline field it summarises, by
// its path in the document.
func (t *TimelineStats) fields(tl *Timeline) []statField {
	return []statField{
		{"timeline.first_event", &tl.FirstEvent, &t.FirstEvent},
		{"timeline.first_reasoning", &tl.FirstReasoning, &t.FirstReasoning},
		{"timeline.first_tool_call", &tl.FirstToolCall, &t.FirstToolCall},
		{"timeline.first_text", &tl.FirstText, &t.FirstText},
		{"timeline.last_token", &tl.LastToken, &t.Last},
		{"timeline.emit_recv.reasoning", &tl.EmitRecv.Reasoning, &t.Reasoning},
		{"timeline.emit_recv.tool_call", &tl.EmitRecv.ToolCall, &t.ToolCall},
		{"timeline.emit_recv.text", &tl.EmitRecv.Text, &t.Text},
		{"timeline.longest_silence", &tl.LongestSilence, &t.LongestSilence},
		{"timeline.args_emission_spread", &tl.ArgsEmissionSpread, &t.ArgsEmissionSpread},
		{"timeline.args_arrival_spread", &tl.ArgsArrivalSpread, &t.ArgsArrivalSpread},
		{"timeline.think", &tl.Think, &t.Think},
		{"timeline.released", &tl.Released, &t.Released},
		{"timeline.cut_silence", &tl.CutSilence, &t.CutSilence},
	}
}

// counts pairs each count of t with the Timeline's.
func (t *TimelineStats) counts(tl *Timeline) [][2]*int64 {
	return [][2]*int64{
		{&tl.Requests, &t.Requests},
		{&tl.ReasoningAsked, &t.ReasoningAsked}, {&tl.ReasoningDropped, &t.ReasoningDropped},
		{&tl.ReasoningConverted, &t.ReasoningConverted},
		{&tl.ToolCallAsked, &t.ToolCallAsked}, {&tl.ArgsJudged, &t.ArgsJudged}, {&tl.ArgsHeld, &t.ArgsHeld},
		{&tl.StartJudged, &t.StartJudged}, {&tl.StartHeld, &t.StartHeld}, {&tl.HeadHeld, &t.HeadHeld},
		{&tl.HeldWithText, &t.HeldWithText},
		{&tl.Cut, &t.Cut}, {&tl.CutHeads, &t.CutHeads}, {&tl.CutEvents, &t.CutEvents}, {&tl.CutTokens, &t.CutTokens},
		{&tl.Heartbeats.Seen, &t.Heartbeats.Seen}, {&tl.Heartbeats.Known, &t.Heartbeats.Known},
		{&tl.Heartbeats.Sent, &t.Heartbeats.Sent}, {&tl.Heartbeats.SeenKnown, &t.Heartbeats.SeenKnown},
		{&tl.Heartbeats.Injected, &t.Heartbeats.Injected}, {&tl.Heartbeats.Swallowed, &t.Heartbeats.Swallowed},
		{&tl.Heartbeats.RequestsInjected, &t.Heartbeats.RequestsInjected},
		{&tl.Heartbeats.RequestsSwallowed, &t.Heartbeats.RequestsSwallowed},
	}
}

// Summary returns the Timeline of t.
func (t *TimelineStats) Summary() Timeline {
	var tl Timeline
	for _, f := range t.fields(&tl) {
		*f.m = NewMetric(*f.dst)
	}
	for _, c := range t.counts(&tl) {
		*c[0] = *c[1]
	}
	tl.CutFailure = t.CutFailure
	return tl
}

// Stats rebuilds the TimelineStats t was made from, every metric from its
// histogram; its error names the field of a metric that cannot be.
func (t *Timeline) Stats() (*TimelineStats, error) {
	ts := &TimelineStats{CutFailure: t.CutFailure}
	for _, f := range ts.fields(t) {
		m, err := f.m.Stats()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		*f.dst = m
	}
	for _, c := range ts.counts(t) {
		*c[1] = *c[0]
	}
	return ts, nil
}

// Validate checks that every metric of t is sound (as Stats needs) and no
// count is negative; its error names the field.
func (t *Timeline) Validate() error {
	if _, err := t.Stats(); err != nil {
		return err
	}
	for _, c := range (&TimelineStats{}).counts(t) {
		if *c[0] < 0 {
			return fmt.Errorf("timeline: a negative count (%d)", *c[0])
		}
	}
	return nil
}

// Merge adds everything o holds to t; the cut failure text stays t's when
// it has one. o is left unchanged.
func (t *TimelineStats) Merge(o *TimelineStats) {
	var a, b Timeline
	of := o.fields(&b)
	for i, f := range t.fields(&a) {
		(*f.dst).Merge(*of[i].dst)
	}
	oc := o.counts(&b)
	for i, c := range t.counts(&a) {
		*c[1] += *oc[i][1]
	}
	if t.CutFailure == "" {
		t.CutFailure = o.CutFailure
	}
}

// Add folds one finished request in (a warm-up request is the caller's to
// leave out).
func (t *TimelineStats) Add(r *result.Request) {
	t.Requests++
	since := func(m *stats.Metric, at int64) {
		if at > 0 && r.Sent > 0 {
			m.Record(at - r.Sent)
		}
	}
	since(t.FirstEvent, r.FirstEventAt)
	since(t.FirstReasoning, r.FirstReasoningAt)
	since(t.FirstToolCall, r.FirstToolCallAt)
	since(t.FirstText, r.FirstTextAt)
	if n := len(r.Tokens); n > 0 {
		since(t.Last, r.Tokens[n-1].Arrived)
	}
	phases := [api.NumPhases]*stats.Metric{t.Reasoning, t.ToolCall, t.Text}
	for i, tok := range r.Tokens {
		if tok.Emitted != 0 {
			p, _ := api.LocateToken(int(r.TokenIndex(i)), r.Reasoning, r.ToolCall)
			phases[p].Record(tok.Arrived - tok.Emitted)
		}
	}
	if r.Sent > 0 && (r.LastReadAt > 0 || r.End > 0) {
		t.LongestSilence.Record(LongestSilence(r))
	}
	t.addHeartbeats(r)
	t.addReasoning(r)
	t.addArguments(r)
	t.addStart(r)
	t.addCut(r)
}

// LongestSilence is the longest time r went without a byte: from its
// write to its first Read, between Reads, and from its last Read (or its
// write) to its end.
func LongestSilence(r *result.Request) int64 {
	last := r.LastReadAt
	if last == 0 {
		last = r.Sent
	}
	return max(r.MaxSilence, r.End-last)
}

// addHeartbeats counts r's heartbeats, and against the server's count
// those of an ok request (a failed one may have lost heartbeats in flight
// when it ended).
func (t *TimelineStats) addHeartbeats(r *result.Request) {
	h := &t.Heartbeats
	seen := int64(r.Comments + r.Pings)
	h.Seen += seen
	if !r.ServerRecord || !r.OK() {
		return
	}
	sent := int64(r.ServerHeartbeats)
	h.Known++
	h.Sent += sent
	h.SeenKnown += seen
	switch d := seen - sent; {
	case d > 0:
		h.Injected += d
		h.RequestsInjected++
	case d < 0:
		h.Swallowed -= d
		h.RequestsSwallowed++
	}
}

// addReasoning counts a request that asked for reasoning, and whether its
// answer came without it (some other phase came, none of it as
// reasoning), or with it in the visible text.
func (t *TimelineStats) addReasoning(r *result.Request) {
	if r.Reasoning <= 0 {
		return
	}
	t.ReasoningAsked++
	switch {
	case r.ReasoningAsText:
		t.ReasoningConverted++
	case r.FirstReasoningAt == 0 && (r.FirstToolCallAt > 0 || r.FirstTextAt > 0):
		t.ReasoningDropped++
	}
}

// addArguments judges a request's tool call: the spread of its argument
// tokens' arrivals against the spread of their emissions.
func (t *TimelineStats) addArguments(r *result.Request) {
	if r.ToolCall <= 0 {
		return
	}
	t.ToolCallAsked++
	var n int
	var firstE, lastE, firstA, lastA int64
	for i, tok := range r.Tokens {
		if p, _ := api.LocateToken(int(r.TokenIndex(i)), r.Reasoning, r.ToolCall); p != api.PhaseToolCall || tok.Emitted == 0 {
			continue
		}
		if n == 0 {
			firstE, lastE, firstA, lastA = tok.Emitted, tok.Emitted, tok.Arrived, tok.Arrived
		}
		firstE, lastE = min(firstE, tok.Emitted), max(lastE, tok.Emitted)
		firstA, lastA = min(firstA, tok.Arrived), max(lastA, tok.Arrived)
		n++
	}
	emission := lastE - firstE
	if n < 2 || emission < ArgsMinSpreadNs {
		return
	}
	t.ArgsJudged++
	t.ArgsEmissionSpread.Record(emission)
	t.ArgsArrivalSpread.Record(lastA - firstA)
	if float64(lastA-firstA) < ArgsHeldFraction*float64(emission) {
		t.ArgsHeld++
	}
}

// addStart judges a request whose server thought long enough: whether its
// head or its first event was held until the think was over. With the
// server's record, the think is the one it planned, from when it began
// the stream (a server slow to take the request, or late with its
// tokens, delays the head or the first token, not the hold); without,
// from the request's write to the emission of the first token after the
// think.
func (t *TimelineStats) addStart(r *result.Request) {
	origin := r.Sent
	if r.ServerStart > 0 {
		origin = r.ServerStart
	}
	if origin == 0 {
		return
	}
	// The first token after the think phase (a tool-call or text token),
	// and the first visible one, by when the server emitted them.
	thinkEnd, text := r.ServerThinkEnd, int64(0)
	planned := r.ServerStart > 0 && thinkEnd > 0
	base := int32(max(r.Reasoning, 0))
	for i, tok := range r.Tokens {
		if tok.Emitted == 0 {
			continue
		}
		index := r.TokenIndex(i)
		if !planned && index >= base && (thinkEnd == 0 || tok.Emitted < thinkEnd) {
			thinkEnd = tok.Emitted
		}
		if index >= r.TextBase() && (text == 0 || tok.Emitted < text) {
			text = tok.Emitted
		}
	}
	think := thinkEnd - origin
	if thinkEnd == 0 || think < HeldMinThinkNs {
		return
	}
	t.StartJudged++
	t.Think.Record(think)
	held := func(at int64) bool { return at > 0 && float64(at-origin) >= HeldFraction*float64(think) }
	released := r.FirstEventAt
	switch {
	case held(r.HeadAt):
		t.HeadHeld++
		released = r.HeadAt
	case !held(r.FirstEventAt):
		return
	}
	t.StartHeld++
	t.Released.Record(released - origin)
	if text > 0 && float64(released-origin) >= HeldFraction*float64(text-origin) {
		t.HeldWithText++
	}
}

// addCut judges a failed request: cut by a gateway's idle timeout, after a
// silence of IdleCutMinNs or more (failures.IdleCutEnd)?
func (t *TimelineStats) addCut(r *result.Request) {
	cut, silence := failures.IdleCutEnd(r)
	if !cut {
		return
	}
	t.Cut++
	t.CutSilence.Record(silence)
	if r.HeadAt > 0 {
		t.CutHeads++
	}
	t.CutEvents += int64(r.Events)
	t.CutTokens += int64(len(r.Tokens))
	if t.CutFailure == "" {
		t.CutFailure = failures.Sanitize(r.Failure.Error())
	}
}
