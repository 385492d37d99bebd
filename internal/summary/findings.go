package summary

import (
	"github.com/sse-latency/sse-latency/internal/failures"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// The thresholds of the findings (Findings, and the per-request judgments
// of TimelineStats.Add).
const (
	// HeldMinThinkNs is the shortest think — from the request's write to
	// the server's first token after its think phase — for which a held
	// start is judged: below it, a gateway's ordinary delays (a TLS
	// handshake upstream, a slow first byte) cannot be told from a hold.
	HeldMinThinkNs = 50_000_000

	// HeldFraction: a head or first event that arrives no earlier than
	// this share of the think, after the request's write, was held: the
	// server writes both at once, so a flushing gateway delivers them
	// within its own delay, a tiny share of a think of 50 ms or more.
	// The same share of the time to the first visible token tells a
	// start released with that token.
	HeldFraction = 0.9

	// ArgsMinSpreadNs is the shortest emission spread of a tool call's
	// argument deltas (last minus first) for which their arrival is
	// judged: tokens emitted closer than that arrive together through any
	// gateway.
	ArgsMinSpreadNs = 10_000_000

	// ArgsHeldFraction: argument deltas whose arrivals spread less than
	// this share of their emissions' spread were held and released
	// together (the share verdict.JoinFraction gives one burst).
	ArgsHeldFraction = 0.25

	// IdleCutMinNs is the silence before a failed stream's end from which
	// the end counts as an idle cut (failures.IdleCutMinNs, which the
	// failure summary's idle_cut kind uses too).
	IdleCutMinNs = failures.IdleCutMinNs

	// FindingShare is the share of the judged requests that must show a
	// held start, held arguments or dropped reasoning for the finding: a
	// gateway that does it does it to most requests, while one late
	// packet should not make a finding. Idle cuts, converted reasoning and
	// heartbeats injected or swallowed are findings from one request on.
	FindingShare = 0.5
)

// share reports whether n is at least FindingShare of of (> 0).
func share(n, of int64) bool { return of > 0 && float64(n) >= FindingShare*float64(of) }

// Findings returns what a gateway batch's timeline shows about the
// gateway, in the order of verdict.FindingNames, each with its evidence;
// nil for a nil timeline or nothing found.
func Findings(t *Timeline) []verdict.Finding {
	if t == nil {
		return nil
	}
	var out []verdict.Finding
	if share(t.StartHeld, t.StartJudged) {
		f := verdict.Finding{Name: verdict.FindingHeldStart, Requests: t.StartHeld, Of: t.StartJudged, Held: "first_event",
			ReleasedMs: t.Released.P50Ms, ThinkMs: t.Think.P50Ms, WithText: share(t.HeldWithText, t.StartHeld)}
		if share(t.HeadHeld, t.StartHeld) {
			f.Held = "head"
		}
		out = append(out, f)
	}
	if share(t.ReasoningDropped, t.ReasoningAsked) {
		out = append(out, verdict.Finding{Name: verdict.FindingReasoningDropped, Requests: t.ReasoningDropped, Of: t.ReasoningAsked})
	}
	if t.ReasoningConverted > 0 {
		out = append(out, verdict.Finding{Name: verdict.FindingReasoningConverted, Requests: t.ReasoningConverted, Of: t.ReasoningAsked})
	}
	// A start released with the first visible token brought the tool
	// call's arguments with it: no finding of their own.
	heldWithText := len(out) > 0 && out[0].Name == verdict.FindingHeldStart && out[0].WithText
	if share(t.ArgsHeld, t.ArgsJudged) && !heldWithText {
		out = append(out, verdict.Finding{Name: verdict.FindingArgumentsHeld, Requests: t.ArgsHeld, Of: t.ArgsJudged,
			ArrivalSpreadMs: t.ArgsArrivalSpread.P50Ms, EmissionSpreadMs: t.ArgsEmissionSpread.P50Ms})
	}
	if t.Cut > 0 {
		c := &t.CutSilence
		out = append(out, verdict.Finding{Name: verdict.FindingIdleCut, Requests: t.Cut, Of: t.Requests,
			SilenceMs: c.P50Ms, SilenceMinMs: c.MinMs, SilenceMaxMs: c.MaxMs,
			Heads: t.CutHeads, Events: t.CutEvents, Tokens: t.CutTokens, Failure: t.CutFailure})
	}
	h := &t.Heartbeats
	if h.Injected > 0 {
		out = append(out, verdict.Finding{Name: verdict.FindingHeartbeatsInjected, Requests: h.RequestsInjected, Of: h.Known,
			Sent: h.Sent, Seen: h.SeenKnown, Heartbeats: h.Injected})
	}
	if h.Swallowed > 0 {
		out = append(out, verdict.Finding{Name: verdict.FindingHeartbeatsSwallowed, Requests: h.RequestsSwallowed, Of: h.Known,
			Sent: h.Sent, Seen: h.SeenKnown, Heartbeats: h.Swallowed})
	}
	return out
}
