package check

// The timing scenarios — flush, first-token, compression — judge how the
// gateway passes events on, from the arrival of signature streams (see
// verdict.Signature). The tool's own noise is measured as the main
// measurement measures it: beside the streams through the gateway, as many
// run at the same time straight to the server (the calibration), and each
// gateway stream is classified against them (verdict.Classify's noise
// floor). A machine so busy that the client reads tokens together makes
// the calibration coalesce too, and the gateway is only said to buffer by
// the verdict's margin over it.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// Fixes the scenarios name.
const (
	fixBuffering = "pass each event on at once: see the signature's fix"
	fixRelay     = "relay the upstream's bytes as they come: do not parse and rebuild the stream, or parse it per the SSE specification"
)

// Overloaded begins the evidence of a timing row that cannot judge: the
// tool itself fell behind (it wrote or read its tokens together).
const Overloaded = "sse-latency fell behind its own schedule"

// streams are signature streams through the gateway and their calibration.
type streams struct {
	gw, loop []*result.Request
}

// signatureSpec is the signature stream: SignatureTokens tokens with a
// pause after SignaturePauseAt.
func (c *checker) signatureSpec() spec {
	after, pause := int64(SignaturePauseAt), float64(SignaturePause/time.Millisecond)
	return spec{tokens: SignatureTokens, faults: api.Faults{StallAfter: &after, StallMs: &pause}}
}

// runStreams runs SignatureStreams streams of sp through the gateway and
// as many straight to the server, all at once.
func (c *checker) runStreams(ctx context.Context, sp spec, tag string) streams {
	var s streams
	var wg sync.WaitGroup
	wg.Go(func() { s.gw = c.doAll(ctx, sp, tag, SignatureStreams) })
	loop := sp
	loop.direct, loop.headers = true, nil
	wg.Go(func() { s.loop = c.doAll(ctx, loop, tag+"l", SignatureStreams) })
	wg.Wait()
	return s
}

// signatureStreams runs the signature streams, once, for the flush and
// first-token scenarios.
func (c *checker) signatureStreams(ctx context.Context) streams {
	if c.flushStreams.gw == nil {
		c.flushStreams = c.runStreams(ctx, c.signatureSpec(), "sig")
	}
	return c.flushStreams
}

// collect gathers recs as the run does.
func collect(recs []*result.Request) *summary.Collector {
	c := summary.NewCollector()
	for _, r := range recs {
		c.Add(r)
	}
	return c
}

// judge classifies gw against the calibration loop (nil: none).
func judge(loop *summary.Collector, gw []*result.Request) verdict.Verdict {
	g := collect(gw)
	if loop == nil {
		return verdict.Classify(nil, g.Bursts, nil, g.Stats)
	}
	return verdict.Classify(loop.Bursts, g.Bursts, loop.Stats, g.Stats)
}

// calibration returns the collector of the calibration streams, nil when
// any failed (the gateway's streams are then judged without a noise
// floor).
func (s streams) calibration() *summary.Collector {
	if len(failureTexts(s.loop...)) > 0 {
		return nil
	}
	return collect(s.loop)
}

func (c *checker) flush(ctx context.Context) Row {
	s := c.signatureStreams(ctx)
	if f := failureTexts(s.gw...); len(f) > 0 {
		return failed(s.gw, "the streams failed", fixRelay)
	}
	return judgeStreams(s)
}

// judgeStreams is the row of signature streams: those through the
// gateway judged together against the calibration (a hiccup of a busy
// machine in one stream does not make the gateway buffer); the row fails
// when they buffered, with the signature.
func judgeStreams(s streams) Row {
	v := judge(s.calibration(), s.gw)
	n := len(s.gw)
	row := Row{Requests: n, Signature: v.Signature}
	switch v.Class {
	case verdict.Buffers:
		row.Status, row.Fix = Fail, fixBuffering
		row.Evidence = "buffered"
		if sig := v.Signature; sig != nil {
			row.Evidence = fmt.Sprintf("buffered, %s: %s", sig.Title(), sig.Evidence)
			if sig.Cause() != "" {
				row.Fix = sig.Cause()
			}
		}
		if len(v.Causes) > 0 && v.Causes[0] == verdict.CauseNagle {
			row.Fix = v.Causes[0] + "; or " + row.Fix
		}
	case verdict.Unknown:
		row.Status = Warn
		row.Evidence = fmt.Sprintf("%s: no verdict for the %d streams: %s", Overloaded, n, v.Reason)
		row.Fix = "rerun on a quieter machine: the tool needs its tokens to leave, and be read, on time"
	default:
		row.Status, row.Evidence = Pass, v.Signature.Evidence
		if v.Noisy {
			row.Evidence += fmt.Sprintf(" (the calibration had %.0f%% of its tokens in bursts: the machine is busy)", 100*v.LoopCoalesced)
		}
	}
	return row
}

// firstTokens returns, per stream of recs with a first token and others
// after it, the first token's emit->recv and the typical one of the
// others.
func firstTokens(recs []*result.Request) (first, following []int64) {
	for _, r := range recs {
		if len(r.Tokens) < 2 || r.Tokens[0].Emitted == 0 {
			continue
		}
		var rest []int64
		for _, t := range r.Tokens[1:] {
			if t.Emitted != 0 {
				rest = append(rest, t.Arrived-t.Emitted)
			}
		}
		if len(rest) == 0 {
			continue
		}
		slices.Sort(rest)
		first = append(first, r.Tokens[0].Arrived-r.Tokens[0].Emitted)
		following = append(following, stats.ExactPercentile(rest, 0.5))
	}
	return first, following
}

func (c *checker) firstToken(ctx context.Context) Row {
	s := c.signatureStreams(ctx)
	first, following := firstTokens(s.gw)
	if len(first) == 0 {
		return failed(s.gw, "no stream brought its first tokens", fixRelay)
	}
	// The typical stream decides (a hiccup of a busy machine in one does
	// not hold the gateway's first event); the calibration's typical first
	// token is the tool's own share.
	var floor int64
	if loop, _ := firstTokens(s.loop); len(loop) > 0 {
		floor = median(loop)
	}
	f, g := median(first), median(following)
	row := Row{Requests: len(s.gw)}
	switch {
	case f-floor > FirstTokenHoldNs && f-g > FirstTokenHoldNs && float64(f) > verdict.HoldFactor*float64(g):
		row.Status, row.Fix = Fail, verdict.CauseFirstTokenHold
		row.Evidence = fmt.Sprintf("the first event arrived %.1f ms after its emission (p50 of %d streams), %.1f ms more than the following ones",
			ms(f), len(first), ms(f-g))
	case f-floor > FirstTokenHoldNs:
		row.Status, row.Fix = Fail, fixBuffering
		row.Evidence = fmt.Sprintf("the first event arrived %.1f ms after its emission (p50 of %d streams), as late as the following ones (%.1f ms): the gateway buffers",
			ms(f), len(first), ms(g))
	default:
		row.Status = Pass
		row.Evidence = fmt.Sprintf("the first event arrived %.3f ms after its emission (p50 of %d streams)", ms(f), len(first))
	}
	return row
}

// median is the SPEC's p50 of xs, which it sorts.
func median(xs []int64) int64 {
	slices.Sort(xs)
	return stats.ExactPercentile(xs, 0.5)
}

func (c *checker) compression(ctx context.Context) Row {
	sp := c.signatureSpec()
	sp.headers = []string{"Accept-Encoding: gzip"}
	s := c.runStreams(ctx, sp, "gzip")
	if len(failureTexts(s.gw...)) > 0 {
		return failed(s.gw, "the streams asking for gzip failed", fixRelay)
	}
	enc := s.gw[0].Encoding
	if enc == "" {
		return Row{Status: Pass, Requests: len(s.gw), Evidence: "not compressed (Accept-Encoding: gzip was offered)"}
	}
	row := judgeStreams(s)
	if row.Status == Fail {
		row.Fix = "exclude text/event-stream from compression, or flush the compressor after every event " +
			"(nginx: honour X-Accel-Buffering: no)"
	}
	return row
}
