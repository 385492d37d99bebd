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
	"sync"
	"time"

	"github.com/sse-latency/sse-latency/internal/advice"
	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/verdict"
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
		return withKinds(failedRow(len(s.gw), "the streams failed", f, advice.StreamBroken), s.gw...)
	}
	return flushRow(judge(s.calibration(), s.gw), len(s.gw))
}

// flushAdvice are the advice keys of the flush row, once its streams ran
// (none when they did not, or did not buffer).
func (c *checker) flushAdvice() []advice.Key {
	s := c.flushStreams
	if s.gw == nil || len(failureTexts(s.gw...)) > 0 {
		return nil
	}
	if r := flushRow(judge(s.calibration(), s.gw), len(s.gw)); r.Status == Fail {
		return r.Advise
	}
	return nil
}

func (c *checker) firstToken(ctx context.Context) Row {
	s := c.signatureStreams(ctx)
	if f := failureTexts(s.gw...); len(f) > 0 && len(f) == len(s.gw) {
		return withKinds(failedRow(len(s.gw), "no stream brought its first tokens", f, advice.StreamBroken), s.gw...)
	}
	return firstTokenRow(judge(s.calibration(), s.gw), len(s.gw))
}

func (c *checker) compression(ctx context.Context) Row {
	sp := c.signatureSpec()
	sp.headers = []string{"Accept-Encoding: gzip"}
	s := c.runStreams(ctx, sp, "gzip")
	if f := failureTexts(s.gw...); len(f) > 0 {
		return withKinds(failedRow(len(s.gw), "the streams asking for gzip failed", f, advice.StreamBroken), s.gw...)
	}
	enc := s.gw[0].Encoding
	if enc == "" {
		return compressionRow("", verdict.Verdict{}, len(s.gw))
	}
	return compressionRow(enc, judge(s.calibration(), s.gw), len(s.gw))
}
