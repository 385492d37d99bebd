package summary

import (
	"math"
	"testing"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
)

// roundOf is a round of one request whose tokens all arrive delayMs after
// their emission (its emit->recv p50 and p99 are delayMs).
func roundOf(t *testing.T, batch string, pair int, delayMs float64) Round {
	t.Helper()
	b := stats.NewBatch()
	r := &result.Request{Sent: 1}
	for k := range 20 {
		e := int64(1_000_000 + k*5_000_000)
		r.Tokens = append(r.Tokens, result.Token{Emitted: e, Arrived: e + int64(delayMs*1e6)})
	}
	b.Add(r)
	return NewRound(batch, pair, b)
}

func near(a, b float64) bool { return math.Abs(a-b) < 0.01 }

func TestNewRounds(t *testing.T) {
	// L G G L L G G L: loopback 0.1, 0.3, 0.2, 0.1; gateway 1, 2, 4, 3.
	rounds := []Round{
		roundOf(t, LoopbackBatch, 0, 0.1), roundOf(t, GatewayBatch, 0, 1),
		roundOf(t, GatewayBatch, 1, 2), roundOf(t, LoopbackBatch, 1, 0.3),
		roundOf(t, LoopbackBatch, 2, 0.2), roundOf(t, GatewayBatch, 2, 4),
		roundOf(t, GatewayBatch, 3, 3), roundOf(t, LoopbackBatch, 3, 0.1),
	}
	r := NewRounds(rounds)
	if r.Order != "LGGLLGGL" || len(r.Rounds) != 8 {
		t.Fatalf("order %q, %d rounds", r.Order, len(r.Rounds))
	}
	l, g, a := r.Loopback.EmitRecv.P99, r.Gateway.EmitRecv.P99, r.Added.EmitRecv.P99
	// Even counts: the median is the mean of the two middle values.
	if l.N != 4 || !near(l.MedianMs, 0.15) || !near(l.MinMs, 0.1) || !near(l.MaxMs, 0.3) {
		t.Errorf("loopback p99 %+v, want median 0.15 in 0.1..0.3 over 4 rounds", l)
	}
	if g.N != 4 || !near(g.MedianMs, 2.5) || !near(g.MinMs, 1) || !near(g.MaxMs, 4) {
		t.Errorf("gateway p99 %+v, want median 2.5 in 1..4", g)
	}
	// Added: the medians' difference; the range of the pairs' differences
	// (0.9, 1.7, 3.8, 2.9), which contains it.
	if a.N != 4 || !near(a.MedianMs, 2.35) || !near(a.MinMs, 0.9) || !near(a.MaxMs, 3.8) {
		t.Errorf("added p99 %+v, want 2.35 in 0.9..3.8", a)
	}
	o := r.Overhead()
	if o == nil || o.EmitRecv == nil || !near(o.EmitRecv.P99Ms, 2.35) || !near(o.EmitRecv.P50Ms, r.Added.EmitRecv.P50.MedianMs) {
		t.Errorf("Overhead() = %+v, want the added medians", o)
	}
	if o.TTFT == nil || o.FirstEmitRecv == nil || o.InterToken == nil {
		t.Errorf("Overhead() = %+v: a metric with samples on both sides is missing", o)
	}
	// Without loopback rounds there is no overhead.
	gwOnly := NewRounds([]Round{roundOf(t, GatewayBatch, 0, 1), roundOf(t, GatewayBatch, 1, 2)})
	if gwOnly.Order != "GG" || gwOnly.Overhead() != nil || gwOnly.Added.EmitRecv.P99.N != 0 || !near(gwOnly.Gateway.EmitRecv.P99.MedianMs, 1.5) {
		t.Errorf("gateway rounds only: %+v; want no overhead and the gateway's median", gwOnly)
	}
}

// TestRoundsInSummary: New takes the overhead from the rounds, not from
// the pooled batches.
func TestRoundsInSummary(t *testing.T) {
	loop, gw := NewCollector(), NewCollector()
	for _, d := range []float64{0.1, 0.1} {
		r := &result.Request{Sent: 1, Tokens: []result.Token{{Emitted: 1, Arrived: 1 + int64(d*1e6)}, {Emitted: 2, Arrived: 2 + int64(d*1e6)}}}
		loop.Add(r)
	}
	for _, d := range []float64{1, 9} {
		gw.Add(&result.Request{Sent: 1, Tokens: []result.Token{{Emitted: 1, Arrived: 1 + int64(d*1e6)}, {Emitted: 2, Arrived: 2 + int64(d*1e6)}}})
	}
	rounds := []Round{roundOf(t, LoopbackBatch, 0, 0.1), roundOf(t, GatewayBatch, 0, 1), roundOf(t, GatewayBatch, 1, 9), roundOf(t, LoopbackBatch, 1, 0.1)}
	s := New(Inputs{Loop: loop, Gateway: gw, Rounds: rounds})
	if s.Rounds == nil || s.Overhead == nil || !near(s.Overhead.EmitRecv.P99Ms, 4.9) {
		t.Errorf("summary overhead %+v, rounds %v; want the rounds' +4.9 (medians 5 - 0.1)", s.Overhead, s.Rounds != nil)
	}
	if plain := New(Inputs{Loop: loop, Gateway: gw}); plain.Rounds != nil || near(plain.Overhead.EmitRecv.P99Ms, 4.9) {
		t.Errorf("without rounds: %+v; want the pooled overhead", plain.Overhead)
	}
}
