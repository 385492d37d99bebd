package report

import (
	"cmp"
	"fmt"
	"io"

	"github.com/sse-latency/sse-latency/internal/verdict"
)

// verdictText is the wording of a verdict, produced once (verdictWords)
// for the text block and the HTML box alike.
type verdictText struct {
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
func verdictWords(v verdict.Verdict) verdictText {
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
		t.Lines = append(t.Lines, addedLine(v))
	case verdict.Flushes:
		t.Headline = fmt.Sprintf("gateway flushes every event: %.1f%% of %d tokens in bursts%s, emitted every %.2f ms",
			100*v.CoalescedFraction, v.Tokens, loop, v.EmitGapMs)
		t.Lines = append(t.Lines, addedLine(v))
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

// addedLine is the added-delay line of a verdict.
func addedLine(v verdict.Verdict) verdictLine {
	name, what := "emit->recv (gateway)", "no calibration to subtract"
	if v.Relative {
		name, what = "added emit->recv", "gateway minus loopback"
	}
	return verdictLine{name, fmt.Sprintf("mean %+.3fms  p50 %+.3fms  p99 %+.3fms  (%s)", v.AddedMeanMs, v.AddedP50Ms, v.AddedP99Ms, what)}
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
func WriteVerdict(w io.Writer, v verdict.Verdict) error {
	t := verdictWords(v)
	p := printer{w: w}
	p.printf("=== verdict ===\n")
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
