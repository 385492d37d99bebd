package report

import (
	"fmt"
	"io"

	"github.com/sse-latency/sse-latency/internal/verdict"
)

// WriteVerdict writes the buffering verdict block that follows the overhead
// block (Go tool only; omitted under --compat). Its lines, in this order:
//
//	=== verdict ===
//	gateway buffers: 99.9% of 4000 tokens in bursts (loopback 0.2%)
//	bursts                   typical 17 tokens, max 21, one every ~85.20 ms; tokens emitted every 5.00 ms
//	added emit->recv         mean +42.118ms  p50 +41.900ms  p99 +85.310ms  (gateway minus loopback)
//	first token held         +35.20ms beyond the following tokens' 0.02ms (p50 over 20 requests)
//	likely causes, most likely first:
//	  - haproxy: option http-no-delay (...)
//	note: the calibration itself had 60.0% of its tokens in bursts: ...
//
// A flushing gateway gets "gateway flushes every event: ..., emitted every
// 5.00 ms" and no bursts line; an unknown verdict "verdict: unknown —
// <reason>" and no figures. The first-token, causes and note lines appear
// only when they have something to say. Without a calibration batch the
// loopback share is left out and the delay line, named "emit->recv
// (gateway)", gives the gateway's own figures.
func WriteVerdict(w io.Writer, v verdict.Verdict) error {
	p := printer{w: w}
	p.printf("=== verdict ===\n")
	loop := ""
	if v.LoopCoalesced >= 0 {
		loop = fmt.Sprintf(" (loopback %.1f%%)", 100*v.LoopCoalesced)
	}
	switch v.Class {
	case verdict.Buffers:
		p.printf("gateway buffers: %.1f%% of %d tokens in bursts%s\n", 100*v.CoalescedFraction, v.Tokens, loop)
		if v.Bursts > 0 {
			every := "at most one per response"
			if v.BurstPeriodMs > 0 {
				every = fmt.Sprintf("one every ~%.2f ms", v.BurstPeriodMs)
			}
			p.printf("%-24s typical %.0f tokens, max %d, %s; tokens emitted every %.2f ms\n",
				"bursts", v.BurstSizeP50, v.BurstSizeMax, every, v.EmitGapMs)
		}
		p.added(v)
	case verdict.Flushes:
		p.printf("gateway flushes every event: %.1f%% of %d tokens in bursts%s, emitted every %.2f ms\n",
			100*v.CoalescedFraction, v.Tokens, loop, v.EmitGapMs)
		p.added(v)
	default:
		p.printf("verdict: unknown — %s\n", v.Reason)
	}
	if v.FirstTokenHold {
		p.printf("%-24s %+.2fms beyond the following tokens' %.2fms (p50 over %d requests)\n",
			"first token held", v.FirstTokenHoldMs, v.FollowingMs, v.HoldRequests)
	}
	if len(v.Causes) > 0 {
		p.printf("likely causes, most likely first:\n")
		for _, c := range v.Causes {
			p.printf("  - %s\n", c)
		}
	}
	if v.Noisy {
		p.printf("note: the calibration itself had %.1f%% of its tokens in bursts: the tool was overloaded; "+
			"lower -c or raise -d for a sharper verdict\n", 100*v.LoopCoalesced)
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

// added writes the added-delay line of the verdict block.
func (p *printer) added(v verdict.Verdict) {
	name, what := "emit->recv (gateway)", "no calibration to subtract"
	if v.Relative {
		name, what = "added emit->recv", "gateway minus loopback"
	}
	p.printf("%-24s mean %+.3fms  p50 %+.3fms  p99 %+.3fms  (%s)\n",
		name, v.AddedMeanMs, v.AddedP50Ms, v.AddedP99Ms, what)
}
