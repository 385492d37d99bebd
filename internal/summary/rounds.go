package summary

import (
	"slices"
	"strings"

	"github.com/sse-latency/sse-latency/internal/stats"
)

// Rounds are the rounds of an interleaved measurement (--rounds, and each
// step of a sweep): loopback and gateway rounds of the same requests,
// alternated, so that a drift of the machine or the upstream during the run
// weighs on both sides alike. Each side's figure is the median of its
// rounds' figures, and the overhead (Run.Overhead) the difference of those
// medians.
//
// The spread of a figure is the range of the rounds' values, from the
// lowest to the highest: with the few rounds a run has (3 to 10), an
// interquartile range or a median absolute deviation rests on one or two
// values and is 0 as often as not, while the range says plainly where
// every round fell. That makes it the conservative measure a gate needs:
// a change beyond it is one no round explained (see slo.FailIf).
type Rounds struct {
	// Order is the batches in the order they ran, one letter per round:
	// L for loopback, G for gateway ("LGGLLGGL").
	Order  string  `json:"order"`
	Rounds []Round `json:"rounds"` // in the order they ran
	// Loopback and Gateway are the medians of their rounds' figures and
	// the range of those.
	Loopback RoundFigures `json:"loopback"`
	Gateway  RoundFigures `json:"gateway"`
	// Added is gateway minus loopback: the median is the difference of
	// the two sides' medians (Run.Overhead), the range that of the
	// differences within each pair of rounds (a loopback round and the
	// gateway round next to it). When every pair has both rounds the range
	// contains the median (a gateway worse than its loopback by at least d
	// in every pair has a median worse by at least d); it is widened to
	// contain it otherwise.
	Added RoundFigures `json:"added"`
}

// Round is one round: a batch of requests to the loopback or through the
// gateway.
type Round struct {
	Batch    string  `json:"batch"` // LoopbackBatch or GatewayBatch
	Pair     int     `json:"pair"`  // the pair of rounds it belongs to, from 0: pair k is one loopback and one gateway round
	Requests int     `json:"requests"`
	OK       int     `json:"ok"`
	Failed   int     `json:"failed"`
	Tokens   int64   `json:"tokens"` // tokens of ok requests
	Metrics  Metrics `json:"metrics"`
	Cost     *Cost   `json:"cost,omitempty"` // what the round cost in CPU; absent when not sampled
}

// RoundFigures are, for each metric, its mean and percentiles over rounds.
type RoundFigures struct {
	TTFT          RoundMetric `json:"ttft"`
	FirstEmitRecv RoundMetric `json:"first_emit_recv"`
	InterToken    RoundMetric `json:"inter_token"`
	EmitRecv      RoundMetric `json:"emit_recv"`
}

// Named returns the metrics in the order and with the names of the text
// report's batch block.
func (f *RoundFigures) Named() []NamedRoundMetric {
	return []NamedRoundMetric{
		{"TTFT (client)", &f.TTFT},
		{"TTFT emit->recv(1st)", &f.FirstEmitRecv},
		{"inter-token (client)", &f.InterToken},
		{"emit->recv (tokens)", &f.EmitRecv},
	}
}

// NamedRoundMetric is a RoundMetric with the name the reports give it.
type NamedRoundMetric struct {
	Name   string
	Metric *RoundMetric
}

// RoundMetric is one metric's statistics over rounds.
type RoundMetric struct {
	Mean RoundStat `json:"mean"`
	P50  RoundStat `json:"p50"`
	P95  RoundStat `json:"p95"`
	P99  RoundStat `json:"p99"`
}

// Stat returns the statistic named stat ("mean", "p50", "p95", "p99"), nil
// for another name.
func (m *RoundMetric) Stat(stat string) *RoundStat {
	switch stat {
	case "mean":
		return &m.Mean
	case "p50":
		return &m.P50
	case "p95":
		return &m.P95
	case "p99":
		return &m.P99
	}
	return nil
}

// RoundStat is one statistic over rounds, in milliseconds: the median of
// the rounds' values (of an even number of rounds, the mean of the two
// middle ones) and their range. N counts the rounds that had samples;
// without any, the other fields are 0 and mean nothing.
type RoundStat struct {
	N        int     `json:"n"`
	MedianMs float64 `json:"median_ms"`
	MinMs    float64 `json:"min_ms"`
	MaxMs    float64 `json:"max_ms"`
}

// NewRound summarises one round's statistics.
func NewRound(batch string, pair int, b *stats.Batch) Round {
	s := NewBatch(batch, "", b, Samples{})
	return Round{Batch: batch, Pair: pair, Requests: s.Requests, OK: s.OK, Failed: s.Failed, Tokens: s.Tokens, Metrics: s.Metrics}
}

// NewRounds computes the figures of rounds, given in the order they ran.
func NewRounds(rounds []Round) *Rounds {
	out := &Rounds{Rounds: slices.Clone(rounds)}
	if out.Rounds == nil {
		out.Rounds = []Round{}
	}
	var order strings.Builder
	var loop, gw []*Metrics
	loopByPair, gwByPair := map[int]*Metrics{}, map[int]*Metrics{}
	for i := range out.Rounds {
		r := &out.Rounds[i]
		if r.Batch == LoopbackBatch {
			order.WriteByte('L')
			loop = append(loop, &r.Metrics)
			loopByPair[r.Pair] = &r.Metrics
		} else {
			order.WriteByte('G')
			gw = append(gw, &r.Metrics)
			gwByPair[r.Pair] = &r.Metrics
		}
	}
	out.Order = order.String()
	out.Loopback, out.Gateway = roundFigures(loop), roundFigures(gw)
	out.Added = addedFigures(out.Loopback, out.Gateway, loopByPair, gwByPair)
	return out
}

// metricList is m's metrics in the order of RoundFigures.Named.
func metricList(m *Metrics) [4]*Metric {
	return [4]*Metric{&m.TTFT, &m.FirstEmitRecv, &m.InterToken, &m.EmitRecv}
}

// statList is m's mean and percentiles in the order of RoundMetric's
// fields.
func statList(m *Metric) [4]float64 { return [4]float64{m.MeanMs, m.P50Ms, m.P95Ms, m.P99Ms} }

// stats returns the statistics of m in the order of statList.
func (m *RoundMetric) stats() [4]*RoundStat { return [4]*RoundStat{&m.Mean, &m.P50, &m.P95, &m.P99} }

// roundValues returns, for metric i and statistic j, the values of the
// rounds whose metric had samples.
func roundValues(rounds []*Metrics, i, j int) []float64 {
	var xs []float64
	for _, r := range rounds {
		if m := metricList(r)[i]; m.N > 0 {
			xs = append(xs, statList(m)[j])
		}
	}
	return xs
}

// roundFigures computes the medians and ranges of the rounds' figures.
func roundFigures(rounds []*Metrics) RoundFigures {
	var f RoundFigures
	for i, nm := range f.Named() {
		for j, st := range nm.Metric.stats() {
			*st = newRoundStat(roundValues(rounds, i, j))
		}
	}
	return f
}

// addedFigures computes gateway minus loopback: each median the
// difference of the sides' medians, each range that of the differences
// within the pairs that have both rounds with samples.
func addedFigures(loop, gw RoundFigures, loopByPair, gwByPair map[int]*Metrics) RoundFigures {
	var f RoundFigures
	ln, gn := loop.Named(), gw.Named()
	pairs := make([]int, 0, len(gwByPair))
	for p := range gwByPair {
		if loopByPair[p] != nil {
			pairs = append(pairs, p)
		}
	}
	slices.Sort(pairs)
	for i, nm := range f.Named() {
		for j, st := range nm.Metric.stats() {
			l, g := ln[i].Metric.stats()[j], gn[i].Metric.stats()[j]
			if l.N == 0 || g.N == 0 {
				continue
			}
			var diffs []float64
			for _, p := range pairs {
				lm, gm := metricList(loopByPair[p])[i], metricList(gwByPair[p])[i]
				if lm.N > 0 && gm.N > 0 {
					diffs = append(diffs, statList(gm)[j]-statList(lm)[j])
				}
			}
			s := newRoundStat(diffs)
			s.MedianMs = g.MedianMs - l.MedianMs
			if s.N == 0 { // no pair has both: the range is the medians' difference alone
				s.N, s.MinMs, s.MaxMs = 1, s.MedianMs, s.MedianMs
			}
			// Complete pairs always contain it; pairs a metric without
			// samples left incomplete may not.
			s.MinMs, s.MaxMs = min(s.MinMs, s.MedianMs), max(s.MaxMs, s.MedianMs)
			*st = s
		}
	}
	return f
}

// NewRoundStat is the median and range of xs, the rounds' values of a
// figure (a RoundStat with N 0 for none).
func NewRoundStat(xs []float64) RoundStat { return newRoundStat(xs) }

// newRoundStat is NewRoundStat.
func newRoundStat(xs []float64) RoundStat {
	if len(xs) == 0 {
		return RoundStat{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return RoundStat{N: n, MedianMs: med, MinMs: s[0], MaxMs: s[n-1]}
}

// Overhead returns the overhead the rounds give: for each metric with
// samples on both sides, the differences of the medians (Added); nil
// without a loopback or a gateway round.
func (r *Rounds) Overhead() *Overhead {
	if !strings.Contains(r.Order, "L") || !strings.Contains(r.Order, "G") {
		return nil
	}
	delta := func(m *RoundMetric) *Delta {
		if m.Mean.N == 0 {
			return nil
		}
		return &Delta{MeanMs: m.Mean.MedianMs, P50Ms: m.P50.MedianMs, P95Ms: m.P95.MedianMs, P99Ms: m.P99.MedianMs}
	}
	a := &r.Added
	return &Overhead{FirstEmitRecv: delta(&a.FirstEmitRecv), EmitRecv: delta(&a.EmitRecv), TTFT: delta(&a.TTFT), InterToken: delta(&a.InterToken)}
}
