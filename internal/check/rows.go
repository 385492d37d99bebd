package check

// The rows of the scenarios, from what each measured: one function per
// scenario, with no I/O, so that a test renders every outcome each can
// have (TestRowOutcomes) and checks that its evidence is there and says
// what the figures say. A row that does not pass names the advice keys it
// calls for (Row.Advise); Run turns them into the identified gateway's
// advice (package advice).

import (
	"fmt"
	"strings"
	"time"

	"github.com/sse-latency/sse-latency/internal/advice"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// fixOverloaded is the fix of a timing row the tool could not judge: not
// a gateway's setting.
const fixOverloaded = "rerun on a quieter machine: the tool needs its tokens to leave, and be read, on time"

// failedRow is the row of a scenario whose requests failed where they
// should not have: what was tried, and how each distinct failure read
// (or that they ended without one, for a scenario that wanted more).
func failedRow(requests int, what string, failures []string, keys ...advice.Key) Row {
	why := strings.Join(failures, "; ")
	if why == "" {
		why = "no failure recorded"
	}
	return Row{Status: Fail, Evidence: what + ": " + why, Requests: requests, Failures: failures, Advise: keys}
}

// flushRow is the flush row: the signature streams through the gateway,
// judged together against the calibration (verdict v of n streams); the
// row fails when they buffered, with the signature and the advice on it
// (Nagle's first when the releases keep its timing).
func flushRow(v verdict.Verdict, n int) Row {
	row := Row{Requests: n, Signature: v.Signature}
	switch v.Class {
	case verdict.Buffers:
		row.Status = Fail
		row.Evidence = fmt.Sprintf("buffered: %.0f%% of %d tokens in bursts", 100*v.CoalescedFraction, v.Tokens)
		if verdict.NagleLike(v.BurstPeriodMs) {
			row.Advise = append(row.Advise, advice.Nagle)
		}
		if sig := v.Signature; sig != nil {
			row.Evidence = fmt.Sprintf("buffered, %s: %s", sig.Title(), sig.Evidence)
			row.Advise = append(row.Advise, advice.Key(sig.Kind))
		}
		if len(row.Advise) == 0 {
			row.Advise = []advice.Key{advice.ByteThreshold}
		}
	case verdict.Unknown:
		row.Status, row.Fix = Warn, fixOverloaded
		row.Evidence = fmt.Sprintf("%s: no verdict for the %d streams: %s", Overloaded, n, v.Reason)
	default:
		row.Status = Pass
		row.Evidence = fmt.Sprintf("each token arrived on its own, %.3f ms after its emission (p50)", v.AddedP50Ms)
		if v.Signature != nil {
			row.Evidence = v.Signature.Evidence
		}
		if v.Noisy {
			row.Evidence += fmt.Sprintf(" (the calibration had %.0f%% of its tokens in bursts: the machine is busy)", 100*v.LoopCoalesced)
		}
	}
	return row
}

// firstTokenRow is the first-token row, judged as the run judges it
// (verdict.Hold, from the verdict v of the n signature streams): FAIL
// from verdict.HoldFailNs, WARN from verdict.HoldWarnNs. A first event as
// late as the following ones is the gateway's buffering — the flush
// row's finding —, which this row names as a warning with the same
// advice.
func firstTokenRow(v verdict.Verdict, n int) Row {
	row := Row{Requests: n}
	first := v.FirstTokenHoldMs + v.FollowingMs
	of := fmt.Sprintf("p50 of %d streams", v.HoldRequests)
	switch {
	case v.HoldRequests == 0:
		return failedRow(n, "no stream brought its first tokens", nil, advice.StreamBroken)
	case v.FirstTokenHoldLevel == verdict.HoldFail:
		row.Status, row.Advise = Fail, []advice.Key{advice.FirstTokenHold}
		row.Evidence = fmt.Sprintf("the first event arrived %.1f ms later than the following ones, which came %.3f ms after their emission (%s): held %.0f ms or more",
			v.FirstTokenHoldMs, v.FollowingMs, of, stats.Ms(verdict.HoldFailNs))
	case v.FirstTokenHoldLevel == verdict.HoldWarn:
		row.Status, row.Advise = Warn, []advice.Key{advice.FirstTokenHold}
		row.Evidence = fmt.Sprintf("the first event arrived %.1f ms later than the following ones, which came %.3f ms after their emission (%s): held %.0f to %.0f ms",
			v.FirstTokenHoldMs, v.FollowingMs, of, stats.Ms(verdict.HoldWarnNs), stats.Ms(verdict.HoldFailNs))
	case v.Class == verdict.Buffers && first > stats.Ms(verdict.HoldWarnNs):
		row.Status = Warn
		row.Advise = flushRow(v, n).Advise
		row.Evidence = fmt.Sprintf("the first event arrived %.1f ms after its emission, the following ones %.1f ms (%s): "+
			"not held beyond them, the gateway buffers every event (the flush row)", first, v.FollowingMs, of)
	default:
		row.Status = Pass
		row.Evidence = fmt.Sprintf("the first event arrived %.3f ms after its emission, %.3f ms beyond the following ones (%s)",
			first, v.FirstTokenHoldMs, of)
	}
	return row
}

// compressionRow is the compression row: the streams asking for gzip were
// not compressed (encoding ""), or were, and are judged as the flush row
// judges its streams.
func compressionRow(encoding string, v verdict.Verdict, n int) Row {
	if encoding == "" {
		return Row{Status: Pass, Requests: n, Evidence: "not compressed (Accept-Encoding: gzip was offered)"}
	}
	row := flushRow(v, n)
	if row.Status == Fail {
		row.Advise = []advice.Key{advice.Compression}
	}
	return row
}

// largeEventRow: the stream with a 64 KB event, ok or failed, and its
// size.
func largeEventRow(ok bool, bytes int64, failures []string) Row {
	switch {
	case !ok:
		return failedRow(1, "the stream with a 64 KB event failed", failures, advice.LargeEvent)
	case bytes < LargeEventBytes:
		return Row{Status: Warn, Requests: 1, Advise: []advice.Key{advice.EventRebuilt},
			Evidence: fmt.Sprintf("the tokens arrived, but the stream was %d bytes, under the %d of its 64 KB event: the gateway rebuilt it", bytes, LargeEventBytes)}
	}
	return Row{Status: Pass, Requests: 1, Evidence: fmt.Sprintf("all tokens, %d bytes: the 64 KB event arrived whole", bytes)}
}

// utf8Row: the stream of split characters, ok or failed (integrity: the
// characters broke).
func utf8Row(ok, integrity bool, failures []string) Row {
	if ok {
		return Row{Status: Pass, Requests: 1, Evidence: "8 tokens of 2-byte characters, each event split inside one, arrived intact"}
	}
	key := advice.StreamBroken
	if integrity {
		key = advice.UTF8Split
	}
	return failedRow(1, "each token's event split inside its first character, 2 ms apart", failures, key)
}

// lineEndingsRow: the CRLF and CR streams, and whether their comments
// passed.
func lineEndingsRow(crlfOK, crOK, comments bool, failures []string) Row {
	if !crlfOK || !crOK {
		var what []string
		if !crlfOK {
			what = append(what, "CRLF")
		}
		if !crOK {
			what = append(what, "CR")
		}
		return failedRow(2, "the stream with "+strings.Join(what, " and ")+" line endings failed", failures, advice.LineEndings)
	}
	c := "the comments were dropped"
	if comments {
		c = "the comments passed"
	}
	return Row{Status: Pass, Requests: 2, Evidence: "CRLF and CR line endings, a comment before every event: all tokens; " + c}
}

// sseFramingRow: the same answer framed each spec-valid way (n requests
// with the plain one); broken are the framings that failed or made other
// events than the plain stream's, reframed those that arrived whole but
// framed otherwise (spec-valid, a PASS).
func sseFramingRow(n int, broken, reframed, failures []string) Row {
	if len(broken) > 0 {
		return Row{Status: Fail, Requests: n, Failures: failures, Advise: []advice.Key{advice.SSEFraming},
			Evidence: "spec-valid streams broken: " + strings.Join(broken, "; ")}
	}
	evidence := "all tokens and events with each framing, as sent"
	if len(reframed) > 0 {
		evidence = "all tokens and events with each framing; the gateway re-framed " + strings.Join(reframed, " and ") + " (spec-valid)"
	}
	return Row{Status: Pass, Requests: n, Evidence: evidence}
}

// usageRow, terminalRow: a stream that asked for usage, a plain one.
func usageRow(ok bool, failures []string) Row {
	if !ok {
		return failedRow(1, "a stream asking for usage", failures, advice.UsageDropped)
	}
	return Row{Status: Pass, Requests: 1, Evidence: "the usage arrived with the stream that asked for it"}
}

// usageFidelityRow: the two streams with usage (a cache figure, a null)
// ended ok, their usage was compared with the server's record, and what
// differed.
func usageFidelityRow(ok, compared bool, found, failures []string) Row {
	switch {
	case !ok:
		return failedRow(2, "a stream asking for usage", failures, advice.UsageRewritten)
	case !compared:
		return Row{Status: Warn, Requests: 2, Fix: "rerun: the server's record of each stream is kept for a while only",
			Evidence: "the server's record of the usage it sent was not found: nothing to compare"}
	case len(found) > 0:
		return Row{Status: Fail, Requests: 2, Evidence: "the usage was rewritten: " + strings.Join(found, "; "), Advise: []advice.Key{advice.UsageRewritten}}
	}
	return Row{Status: Pass, Requests: 2, Evidence: fmt.Sprintf("every usage field arrived as sent, a cache figure (%d) and a null alike", FieldReportCached)}
}

func terminalRow(ok bool, failures []string) Row {
	if !ok {
		return failedRow(1, "a plain stream", failures, advice.TerminalDropped)
	}
	return Row{Status: Pass, Requests: 1, Evidence: "the stream ended with its terminal event, every token intact"}
}

// cutOutcome is how the stream cut upstream after cutAfter tokens of
// cutTokens ended.
type cutOutcome int

const (
	cutErrorEvent cutOutcome = iota // an error event: signalled
	cutAborted                      // the response cut without its end: signalled
	cutCleanEnd                     // the response ended at its framing, without a terminal event
	cutTerminal                     // a terminal event after the cut: hidden
	cutOther                        // another failure
)

// The stream the upstream-cut scenario cuts: cutAfter of cutTokens.
const (
	cutTokens = 10
	cutAfter  = 3
)

// upstreamCutRow: how the cut stream ended, after tokens tokens, with
// its failure's text (detail: an error event's).
func upstreamCutRow(o cutOutcome, tokens int, failure, detail string) Row {
	row := Row{Requests: 1}
	if failure != "" {
		row.Failures = []string{failure}
	}
	switch o {
	case cutErrorEvent:
		row.Status, row.Evidence = Pass, fmt.Sprintf("an error event after %d tokens: %s", tokens, detail)
	case cutAborted:
		row.Status, row.Evidence = Pass, fmt.Sprintf("the response was cut after %d tokens, without a terminal event", tokens)
	case cutCleanEnd:
		row.Status, row.Advise = Fail, []advice.Key{advice.UpstreamCutHidden}
		row.Evidence = fmt.Sprintf("the gateway ended its response cleanly after %d of %d tokens — no error event, no terminal event: "+
			"a client cannot tell the answer was cut", tokens, cutTokens)
	case cutTerminal:
		row.Status, row.Advise = Fail, []advice.Key{advice.UpstreamCutHidden}
		row.Evidence = fmt.Sprintf("the gateway ended the stream with a terminal event after %d of %d tokens: it hides the cut (%s)",
			tokens, cutTokens, failure)
	default:
		row.Status, row.Advise = Warn, []advice.Key{advice.UpstreamCutHidden}
		row.Evidence = fmt.Sprintf("the stream cut upstream after %d tokens ended after %d as: %s", cutAfter, tokens, failure)
	}
	return row
}

// errorStatusRow: the statuses that passed through with their body, and
// how the others came.
func errorStatusRow(good, bad, failures []string) Row {
	n := len(good) + len(bad)
	if len(bad) > 0 {
		return Row{Status: Fail, Requests: n, Failures: failures, Evidence: strings.Join(bad, "; "), Advise: []advice.Key{advice.ErrorStatus}}
	}
	return Row{Status: Pass, Requests: n, Evidence: strings.Join(good, ", ") + " passed through with the upstream's error body"}
}

// cancelOutcome is how the cancel scenario went.
type cancelOutcome int

const (
	cancelSeen       cancelOutcome = iota // the upstream saw its client go within CancelWithin
	cancelStreaming                       // the upstream still streamed CancelWithin after the cancel
	cancelReadWhole                       // the gateway read the upstream's whole stream after the cancel
	cancelUntestable                      // the gateway released too little before the stream ended: nothing to cancel
	cancelEnded                           // the stream ended (failed) before it could be cancelled
)

// cancelFacts are the figures of the cancel scenario.
type cancelFacts struct {
	outcome  cancelOutcome
	received int64         // tokens the client had when it cancelled; untestable: those that arrived before the upstream's last emission
	emitted  int           // tokens the upstream had emitted when the client cancelled (or by the end)
	after    int           // tokens the upstream emitted after the cancel
	goneIn   time.Duration // from the cancel to the upstream seeing its client go
	failures []string      // the stream's failures (cancelEnded)
}

// cancelRow words the cancel scenario's outcome: PASS when the upstream
// saw its client go within CancelWithin; FAIL when it kept streaming, or
// the gateway read the stream to its end; WARN when the gateway released
// nothing worth cancelling before the stream ended (its hold is the
// flush row's finding), with the flush row's advice (keys).
func cancelRow(f cancelFacts, flushKeys []advice.Key) Row {
	switch f.outcome {
	case cancelSeen:
		return Row{Status: Pass, Requests: 1, Evidence: fmt.Sprintf("the upstream saw its client go %.1f ms after the cancel (%d of %d tokens emitted by then, %d after)",
			stats.Ms(int64(f.goneIn)), f.emitted, CancelTokens, f.after)}
	case cancelStreaming:
		return Row{Status: Fail, Requests: 1, Advise: []advice.Key{advice.CancelIgnored},
			Evidence: fmt.Sprintf("the upstream still streamed %v after the client cancelled: %d tokens emitted after the cancel", CancelWithin, f.after)}
	case cancelReadWhole:
		return Row{Status: Fail, Requests: 1, Advise: []advice.Key{advice.CancelIgnored},
			Evidence: fmt.Sprintf("the gateway read the upstream's whole stream after the client cancelled: the last %d of %d tokens were emitted after the cancel",
				f.after, CancelTokens)}
	case cancelUntestable:
		keys := flushKeys
		if len(keys) == 0 {
			keys = []advice.Key{advice.WholeResponse}
		}
		what := "the gateway released nothing before the stream ended"
		if f.received > 0 {
			what = fmt.Sprintf("the gateway released only %d of %d tokens before the stream ended", f.received, CancelTokens)
		}
		return Row{Status: Warn, Requests: 1, Advise: keys,
			Evidence: fmt.Sprintf("cancel could not be tested: %s (the upstream had emitted %d): its hold is the flush row's finding", what, f.emitted)}
	}
	return failedRow(1, fmt.Sprintf("the stream to cancel ended before the cancel, after %d tokens", f.received), f.failures, advice.StreamBroken)
}

// largeBodyRow: the time to first token of a 1 MB prompt through the
// gateway (g) and straight to the server (d, refOK when that worked).
func largeBodyRow(ok bool, g, d time.Duration, refOK bool, failures []string) Row {
	if !ok {
		return failedRow(1, "a 1 MB prompt", failures, advice.LargeBody)
	}
	ev := fmt.Sprintf("first token %.1f ms after the request began (%.1f ms straight to the server)", stats.Ms(int64(g)), stats.Ms(int64(d)))
	if refOK && g-d > LargeBodyWarn && g > LargeBodyFactor*d {
		return Row{Status: Warn, Requests: 2, Evidence: ev + fmt.Sprintf(": %.1f s more, over %d times as long", (g-d).Seconds(), LargeBodyFactor),
			Advise: []advice.Key{advice.LargeBodySlow}}
	}
	return Row{Status: Pass, Requests: 2, Evidence: ev}
}

// keepaliveFacts are the figures of the keep-alive scenario: 3 streams
// on one session.
type keepaliveFacts struct {
	failures    []string
	reused      int  // of the 2 after the first, those on the kept connection
	reuseFailed bool // the gateway closed a kept connection under a request
	poisoned    bool // a response did not end at its framing
}

func keepaliveRow(f keepaliveFacts) Row {
	switch {
	case len(f.failures) > 0:
		return failedRow(3, "three requests on one connection", f.failures, advice.StreamBroken)
	case f.poisoned:
		return Row{Status: Fail, Requests: 3, Advise: []advice.Key{advice.KeepaliveBroken},
			Evidence: "a response did not end at its framing (bytes after it, or no end): the connection could not be reused"}
	case f.reuseFailed:
		return Row{Status: Fail, Requests: 3, Advise: []advice.Key{advice.KeepaliveBroken},
			Evidence: "the gateway closed a kept connection under the next request"}
	case f.reused < 2:
		return Row{Status: Warn, Requests: 3, Advise: []advice.Key{advice.KeepaliveClosed},
			Evidence: fmt.Sprintf("%d of 2 requests reused the connection: the gateway closes it after a stream", f.reused)}
	}
	return Row{Status: Pass, Requests: 3, Evidence: "3 streams on one connection, each drained to its end"}
}

// silenceRow: a stream with a silence of LongSilence where (mid-answer,
// before the first token), ok or ended after took.
func silenceRow(where string, ok bool, took time.Duration, failures []string) Row {
	if !ok {
		return failedRow(1, fmt.Sprintf("a silence of %v %s ended the stream after %.1f s", LongSilence, where, took.Seconds()), failures, advice.IdleCut)
	}
	return Row{Status: Pass, Requests: 1, Evidence: fmt.Sprintf("the stream survived %v of silence %s", LongSilence, where)}
}
