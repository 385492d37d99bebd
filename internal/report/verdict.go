package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/sse-latency/sse-latency/internal/failures"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// verdictText is the wording of a verdict, produced once (verdictWords)
// for the text block and the HTML box alike.
type verdictText struct {
	// Failure is the line that leads when requests of the batch failed
	// (failures.Headline), FailureAdvice what to look at for them, and
	// FailureNote says when the buffering advice was left out for them;
	// all empty when none failed (withFailures).
	Failure       string
	FailureAdvice []string
	FailureNote   string

	Headline string        // "gateway buffers: …", "gateway flushes every event: …" or "verdict: unknown — <reason>"
	Lines    []verdictLine // the figures: bursts, added delay, first-token hold, in this order
	Causes   []string      // the likely causes, most likely first
	Note     string        // the calibration was noisy; "" otherwise
	Class    verdict.Class // what the HTML box is coloured by
}

// verdictLine is one labelled figure of the verdict: the text block pads
// the label to 24 columns, the HTML box follows it with a colon.
type verdictLine struct {
	Label, Text string
}

// verdictWords words v. A buffering verdict has the bursts line when it
// counted bursts (Bursts > 0; the largest burst is 2 or more exactly
// then), and the added-delay line; a flushing one the added-delay line; an
// unknown one only its reason ("no reason given" for a verdict without
// one, which the classifier never gives). The signature's lines follow
// (signatureLines). The first-token line appears when a hold was flagged,
// then a line per finding (findingLines), the note when the calibration
// was noisy (Noisy, which the classifier and a merge both set from the
// loopback share).
//
// Across hosts (c not nil), an added-delay figure within the clock's bound
// is marked with a * (markMs).
func verdictWords(v verdict.Verdict, c *summary.Clock) verdictText {
	t := verdictText{Class: v.Class, Causes: v.Causes}
	loop := ""
	if v.LoopCoalesced >= 0 {
		loop = fmt.Sprintf(" (loopback %.1f%%)", 100*v.LoopCoalesced)
	}
	switch v.Class {
	case verdict.Buffers:
		t.Headline = fmt.Sprintf("gateway buffers: %.1f%% of %d tokens in bursts%s", 100*v.CoalescedFraction, v.Tokens, loop)
		if v.Bursts > 0 {
			every := "at most one per response"
			if v.BurstPeriodMs > 0 {
				every = fmt.Sprintf("one every ~%.2f ms", v.BurstPeriodMs)
			}
			t.Lines = append(t.Lines, verdictLine{"bursts", fmt.Sprintf("typical %.0f tokens, max %d, %s; tokens emitted every %.2f ms",
				v.BurstSizeP50, v.BurstSizeMax, every, v.EmitGapMs)})
		}
		t.Lines = append(t.Lines, addedLine(v, c))
	case verdict.Flushes:
		t.Headline = fmt.Sprintf("gateway flushes every event: %.1f%% of %d tokens in bursts%s, emitted every %.2f ms",
			100*v.CoalescedFraction, v.Tokens, loop, v.EmitGapMs)
		t.Lines = append(t.Lines, addedLine(v, c))
	default:
		t.Headline = "verdict: unknown — " + cmp.Or(v.Reason, "no reason given")
	}
	t.Lines = append(t.Lines, signatureLines(v.Signature)...)
	if v.FirstTokenHold {
		t.Lines = append(t.Lines, verdictLine{"first token held", fmt.Sprintf("%+.2fms beyond the following tokens' %.2fms (p50 over %d requests)",
			v.FirstTokenHoldMs, v.FollowingMs, v.HoldRequests)})
	}
	t.Lines = append(t.Lines, findingLines(v)...)
	if v.Noisy {
		t.Note = fmt.Sprintf("note: the calibration itself had %.1f%% of its tokens in bursts: the tool was overloaded; "+
			"lower -c or raise -d for a sharper verdict", 100*v.LoopCoalesced)
	}
	return t
}

// addedLine is the added-delay line of a verdict, its figures marked
// across hosts when within the clock's bound.
func addedLine(v verdict.Verdict, c *summary.Clock) verdictLine {
	name, what := "emit->recv (gateway)", "no calibration to subtract"
	if v.Relative {
		name, what = "added emit->recv", "gateway minus loopback"
	}
	return verdictLine{name, fmt.Sprintf("mean %s  p50 %s  p99 %s  (%s)",
		markMs(c, "%+.3fms", v.AddedMeanMs), markMs(c, "%+.3fms", v.AddedP50Ms), markMs(c, "%+.3fms", v.AddedP99Ms), what)}
}

// withFailures completes t, the words of verdict v, with the failures of
// its batch (fs; nil or none failed: t as it is): the failure headline
// leads, with its advice, and the timing headline says which requests it
// was judged on (the completed ones, or the partial streams of the failed
// ones when none completed). Judged on partial streams, the verdict keeps
// its figures but not the buffering advice (its likely causes, the
// signature's fix): the story is the failure, and a note says so.
func withFailures(t verdictText, v verdict.Verdict, fs *failures.Summary) verdictText {
	if fs == nil || fs.Failed == 0 {
		return t
	}
	t.Failure = failures.Headline(fs)
	t.FailureAdvice = failureAdvice(fs)
	t.Headline = headlineWith(t.Headline, basisNote(v.Basis, v.BasisRequests))
	if v.Basis == verdict.BasisPartial {
		if len(t.Causes) > 0 || slices.ContainsFunc(t.Lines, func(l verdictLine) bool { return l.Label == "signature fix" }) {
			t.FailureNote = "note: the buffering advice is left out: the streams judged were cut; fix the failures, then measure again"
		}
		t.Causes = nil
		t.Lines = slices.DeleteFunc(slices.Clone(t.Lines), func(l verdictLine) bool { return l.Label == "signature fix" })
	}
	return t
}

// WriteVerdict writes the buffering verdict block that follows the overhead
// block (Go tool only; omitted under --compat). Its lines, in this order:
//
//	=== verdict ===
//	gateway buffers: 99.9% of 4000 tokens in bursts (loopback 0.2%)
//	bursts                   typical 17 tokens, max 21, one every ~85.20 ms; tokens emitted every 5.00 ms
//	added emit->recv         mean +42.118ms  p50 +41.900ms  p99 +85.310ms  (gateway minus loopback)
//	signature                time period: released every ~85 ms (period varying 1%), in bursts of ~17 tokens
//	signature fix            a periodic flush: set the gateway's flush interval to immediate (…)
//	first token held         +35.20ms beyond the following tokens' 0.02ms (p50 over 20 requests)
//	idle cut                 5 of 5 streams ended after 2001.30 ms of silence (p50; ...): ...
//	likely causes, most likely first:
//	  - haproxy: option http-no-delay (...)
//	note: the calibration itself had 60.0% of its tokens in bursts: ...
//
// A flushing gateway gets "gateway flushes every event: ..., emitted every
// 5.00 ms" and no bursts line; an unknown verdict "verdict: unknown —
// <reason>" and no figures. The first-token, findings, causes and note lines appear
// only when they have something to say (see verdictWords, which the HTML
// report words its verdict with too). Without a calibration batch the
// loopback share is left out and the delay line, named "emit->recv
// (gateway)", gives the gateway's own figures.
//
// When requests of the gateway batch failed (WriteText), the block leads
// with them, then the advice about them, and the timing headline says
// which requests it was judged on (withFailures):
//
//	=== verdict ===
//	gateway failed 400 of 400 requests: connection closed mid-stream after 1.9 s p50 (181 tokens p50) (200), connection refused (200)
//	failure advice:
//	  - connection closed mid-stream: every stream in flight was cut at once: the gateway went away — …
//	  - connection refused: nothing accepted the connection: is the gateway running, …
//	gateway buffers (judged on the partial streams of 200 failed requests: none completed): 99.2% of 36397 tokens in bursts (loopback 0.4%)
//	…
func WriteVerdict(w io.Writer, v verdict.Verdict) error { return writeVerdict(w, v, nil, nil) }

// writeVerdict is WriteVerdict with the figures within clock c's bound
// marked (nil: one clock, nothing marked), led by the failures of the
// gateway batch fs (nil: none).
func writeVerdict(w io.Writer, v verdict.Verdict, c *summary.Clock, fs *failures.Summary) error {
	t := withFailures(verdictWords(v, c), v, fs)
	p := printer{w: w}
	p.printf("=== verdict ===\n")
	if t.Failure != "" {
		p.printf("%s\n", t.Failure)
	}
	if len(t.FailureAdvice) > 0 {
		p.printf("failure advice:\n")
		for _, a := range t.FailureAdvice {
			p.printf("  - %s\n", a)
		}
	}
	p.printf("%s\n", t.Headline)
	for _, l := range t.Lines {
		p.printf("%-24s %s\n", l.Label, l.Text)
	}
	if len(t.Causes) > 0 {
		p.printf("likely causes, most likely first:\n")
		for _, c := range t.Causes {
			p.printf("  - %s\n", c)
		}
	}
	if t.Note != "" {
		p.printf("%s\n", t.Note)
	}
	if t.FailureNote != "" {
		p.printf("%s\n", t.FailureNote)
	}
	return p.err
}

// printer writes formatted lines until the first error, which it keeps.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}
