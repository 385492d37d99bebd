package summary

import (
	"fmt"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
)

// Stats rebuilds the statistics b was made from, as far as a summary keeps
// them: every count, the failure tallies with their texts, and every metric
// from its histogram. NewBatch of the result gives b back (but its samples
// and target); stats.Batch.Merge of the results of several runs is how
// their batches merge exactly. The batch should be valid (rundoc checks
// documents as it reads them); Stats returns an error, naming the field,
// for a failure kind it does not know or a histogram MetricFromSnapshot
// refuses.
func (b *Batch) Stats() (*stats.Batch, error) {
	sb := stats.NewBatch()
	sb.Requests, sb.OK, sb.Failed, sb.Tokens = b.Requests, b.OK, b.Failed, b.Tokens
	s := &b.Stream
	sb.Unstamped = s.Unstamped
	sb.ByPiTs, sb.ByContent, sb.Unmeasured = s.ByPiTs, s.ByContent, s.Unmeasured
	sb.FailedTokens = s.FailedTokens
	sb.Reads, sb.Events, sb.Bytes = s.Reads, s.Events, s.Bytes
	sb.MaxTokensPerRead, sb.IntegrityErrors = s.MaxTokensPerRead, s.IntegrityErrors
	sb.Framing, sb.RetryMaxMs = s.Framing.Counts()
	sb.Warmup = b.Warmup
	for i, f := range b.Failures {
		k, ok := result.ParseKind(f.Kind)
		if !ok || k == result.OK {
			return nil, fmt.Errorf("failures[%d]: unknown failure kind %q", i, f.Kind)
		}
		t := stats.FailureTally{Kind: k, Count: f.Count, Other: f.Other, Texts: make([]stats.TextCount, len(f.Texts))}
		for j, tc := range f.Texts {
			t.Texts[j] = stats.TextCount{Text: tc.Text, Count: tc.Count}
		}
		sb.AddFailureTally(t)
	}
	if c := b.Connections; c != nil {
		sb.Opened, sb.WarmConnections, sb.ConnRequests = c.Opened, c.OpenedByWarmup, c.Requests
		sb.ReuseFailures, sb.Poisoned, sb.StreamsAtOnce = c.ReuseFailures, c.Poisoned, c.StreamsAtOnce
		for p, n := range c.Protocols {
			sb.Protocols[p] = n
		}
	}
	metrics := []statField{
		{"metrics.ttft", &b.Metrics.TTFT, &sb.TTFT},
		{"metrics.first_emit_recv", &b.Metrics.FirstEmitRecv, &sb.FirstEmitRecv},
		{"metrics.inter_token", &b.Metrics.InterToken, &sb.InterToken},
		{"metrics.emit_recv", &b.Metrics.EmitRecv, &sb.EmitRecv},
	}
	if p := b.Phases; p != nil {
		metrics = append(metrics,
			statField{"phases.connect", &p.Connect, &sb.Connect}, statField{"phases.tls", &p.TLS, &sb.TLS},
			statField{"phases.written", &p.Written, &sb.Written}, statField{"phases.head", &p.Head, &sb.Head},
			statField{"phases.first_token", &p.FirstToken, &sb.FirstToken})
	}
	if b.StartLateness != nil {
		metrics = append(metrics, statField{"start_lateness", b.StartLateness, &sb.StartLateness})
	}
	if b.RequestLeg != nil {
		metrics = append(metrics, statField{"request_leg", b.RequestLeg, &sb.RequestLeg})
	}
	for _, m := range metrics {
		sm, err := m.m.Stats()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.name, err)
		}
		*m.dst = sm
	}
	return sb, nil
}

// statField pairs a metric of the summary, by its field path, with the
// stats.Batch field it rebuilds.
type statField struct {
	name string
	m    *Metric
	dst  **stats.Metric
}

// Stats rebuilds the metric m summarises from its histogram, after checking
// that its n is the histogram's.
func (m *Metric) Stats() (*stats.Metric, error) {
	if m.N != m.Histogram.N {
		return nil, fmt.Errorf("n is %d but histogram.n is %d", m.N, m.Histogram.N)
	}
	sm, err := stats.MetricFromSnapshot(m.Histogram)
	if err != nil {
		return nil, fmt.Errorf("histogram: %w", err)
	}
	return sm, nil
}
