package report

import (
	"io"

	"github.com/sse-latency/sse-latency/internal/summary"
)

// WriteLegs writes the request-leg block (Go tool only; the CLI omits it
// under --compat), after the stream block, when a batch of s has request
// legs: per batch, how long requests took to reach the dummy server after
// the client had written them (the server's arrival minus the send), beside
// the batch's TTFT, which includes it. A gateway that takes time to
// forward a request (authentication, routing, a large body it reads whole
// before forwarding) shows here, rather than hidden in TTFT.
//
//	=== request leg (client sent -> server received) ===
//	loopback   n=3  mean=0.052ms  min=0.048ms  p50=0.051ms  p99=0.060ms  max=0.060ms;  TTFT p50 0.350ms
//	gateway    n=5  mean=20.310ms  min=20.120ms  p50=20.302ms  p99=20.450ms  max=20.450ms;  TTFT p50 21.020ms
//
// Across hosts the figures within the clock's bound are marked with a *.
func WriteLegs(w io.Writer, s *summary.Run) error {
	p := printer{w: w}
	title := false
	for i := range s.Batches {
		b := &s.Batches[i]
		m := b.RequestLeg
		if m == nil || m.N == 0 {
			continue
		}
		if !title {
			p.printf("=== request leg (client sent -> server received) ===\n")
			title = true
		}
		f := func(v float64) string { return markMs(s.Clock, "%.3fms", v) }
		p.printf("%-10s n=%d  mean=%s  min=%s  p50=%s  p99=%s  max=%s;  TTFT p50 %.3fms\n",
			b.Name, m.N, f(m.MeanMs), f(m.MinMs), f(m.P50Ms), f(m.P99Ms), f(m.MaxMs), b.Metrics.TTFT.P50Ms)
	}
	return p.err
}

// WriteClock writes the clock block of a run across hosts (c not nil; the
// CLI omits it under --compat): the offset of the server's clock to the
// client's and its error bound, how it was estimated, and, when figures
// are below the bound (summary.Clock.BelowBound), what their mark means.
//
//	=== clock (server on another host) ===
//	offset         server - client = +1234.567ms ± 0.085ms (3 estimates, best round trip 0.170ms, drift 0.000ms)
//	not exact      figures marked * are within ±0.085ms of zero, the offset's error bound
func WriteClock(w io.Writer, c *summary.Clock) error {
	if c == nil {
		return nil
	}
	p := printer{w: w}
	p.printf("=== clock (server on another host) ===\n")
	p.printf("%-14s server - client = %+.3fms ± %.3fms (%d %s, best round trip %.3fms, drift %.3fms)\n",
		"offset", c.OffsetMs, c.BoundMs, c.Estimates, plural(int64(c.Estimates), "estimate"), c.MinRTTMs, c.DriftMs)
	if len(c.BelowBound) > 0 {
		p.printf("%-14s figures marked * are within ±%.3fms of zero, the offset's error bound\n", "not exact", c.BoundMs)
	}
	return p.err
}

// WriteReplicas writes the replica block of a run across hosts whose
// gateway batch has replicas (the CLI omits it under --compat): per server
// replica, the requests and tokens it served, how many of its tokens are
// unmeasured, its request leg and emit->recv p50, its clock offset and
// bound; then why its tokens are unmeasured, when they are.
//
//	=== replicas (by the server instance that served each request) ===
//	srv-a  http://10.0.0.1:8091  requests 15 (15 ok)  tokens 3000 (0 unmeasured)  request leg p50 0.120ms  emit->recv p50 0.410ms  offset +1234.568ms ± 0.040ms
//	(none)  -                    requests 2 (2 ok)  tokens 400 (400 unmeasured)  …
//	        requests no replica could be found for: …
func WriteReplicas(w io.Writer, s *summary.Run) error {
	b := s.Gateway()
	if b == nil || len(b.Replicas) == 0 {
		return nil
	}
	p := printer{w: w}
	p.printf("=== replicas (by the server instance that served each request) ===\n")
	name := func(r *summary.Replica) (instance, ctl string) {
		instance, ctl = r.Instance, r.Control
		if instance == "" {
			instance = "(none)"
		}
		if ctl == "" {
			ctl = "-"
		}
		return instance, ctl
	}
	iw, cw := 0, 0
	for i := range b.Replicas {
		instance, ctl := name(&b.Replicas[i])
		iw, cw = max(iw, len(instance)), max(cw, len(ctl))
	}
	for _, r := range b.Replicas {
		instance, ctl := name(&r)
		f := func(m *summary.Metric) string {
			if m.N == 0 {
				return "-"
			}
			return markMs(s.Clock, "%.3fms", m.P50Ms)
		}
		p.printf("%-*s  %-*s  requests %d (%d ok)  tokens %d (%d unmeasured)  request leg p50 %s  emit->recv p50 %s",
			iw, instance, cw, ctl, r.Requests, r.OK, r.Tokens, r.Unmeasured, f(&r.RequestLeg), f(&r.EmitRecv))
		if r.Estimates > 0 {
			p.printf("  offset %+.3fms ± %.3fms", r.OffsetMs, r.BoundMs)
		}
		p.printf("\n")
		if r.Error != "" {
			p.printf("%-*s  %s\n", iw, "", r.Error)
		}
	}
	return p.err
}
