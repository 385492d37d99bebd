// Package probe is the Prometheus side of `sse-latency probe`, which
// measures a gateway in rounds, every interval, until it is stopped: the
// metric families a round feeds, and their HTTP handler.
//
// A round's records are held until the round ends (Round.Add), then
// committed at once with its summary's gauges (Metrics.Commit), under a
// lock that scrapes take too: a scrape sees whole rounds only, so that
// every histogram's count is a multiple of what one round contributes.
//
// The families, in seconds (Prometheus's base unit), with the batch label
// "gateway" or "loopback" (the calibration each round makes first):
//
//	sse_latency_ttft_seconds             histogram  request sent -> first token, per request
//	sse_latency_ttfo_seconds             histogram  request sent -> first visible text (TTFO), per request that had text
//	sse_latency_emit_recv_seconds        histogram  token emitted -> received, tokens after the first with an emission time
//	sse_latency_inter_token_seconds      histogram  gap between consecutive token arrivals
//	sse_latency_request_leg_seconds      histogram  request sent -> the server had it (the gateway's request path)
//	sse_latency_requests_total           counter    requests, ok or not
//	sse_latency_failures_total           counter    failed requests, by kind (result.Kind: timeout, integrity, …)
//	sse_latency_added_emit_recv_seconds  gauge      the last round's added emit->recv, stat mean, p50 or p99
//	                                                (gateway minus loopback; the gateway's own without calibration);
//	                                                kept from the last round whose gateway tokens had emission times
//	sse_latency_verdict                  gauge      1 for the last round's class (flushes, buffers, unknown), 0 for the others
//	sse_latency_probe_rounds_total       counter    rounds committed
//	sse_latency_probe_last_round_timestamp_seconds  gauge  when the last round ended (Unix time)
//	sse_latency_clock_offset_seconds, sse_latency_clock_bound_seconds
//	                                     gauges     across hosts: the server's clock offset and its bound
package probe

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// LatencyBuckets are the upper bounds (seconds) of the histograms: from
// 50 µs, where a flushing gateway's emit->recv lies, to a minute, where a
// long answer's TTFT may.
var LatencyBuckets = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Batch label values, by the records' batch tags.
var batchLabel = map[string]string{"loop": summary.LoopbackBatch, "gw": summary.GatewayBatch}

// classes are the verdict label values.
var classes = []verdict.Class{verdict.Flushes, verdict.Buffers, verdict.Unknown}

// Metrics are the families of a probe, in a registry of their own.
type Metrics struct {
	mu  sync.RWMutex // Commit holds it to write; a scrape to read
	reg *prometheus.Registry

	ttft, ttfo, emitRecv, interToken, leg *prometheus.HistogramVec
	requests, failures                    *prometheus.CounterVec
	added, verdict                        *prometheus.GaugeVec
	rounds                                prometheus.Counter
	lastRound, clockOffset, clockBound    prometheus.Gauge
}

// New returns the families, registered, without samples.
func New() *Metrics {
	hist := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: LatencyBuckets}, []string{"batch"})
	}
	m := &Metrics{
		reg:        prometheus.NewRegistry(),
		ttft:       hist("sse_latency_ttft_seconds", "Time to first token: request sent to first token received, per request."),
		ttfo:       hist("sse_latency_ttfo_seconds", "Time to first output: request sent to first visible text received, per request that had text."),
		emitRecv:   hist("sse_latency_emit_recv_seconds", "One-way delay of each token after the first: emitted by the server to received by the client."),
		interToken: hist("sse_latency_inter_token_seconds", "Gap between the arrivals of consecutive tokens."),
		leg:        hist("sse_latency_request_leg_seconds", "Request leg: request sent by the client to read whole by the server (the gateway's request path)."),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sse_latency_requests_total",
			Help: "Requests made, ok or failed."}, []string{"batch"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sse_latency_failures_total",
			Help: "Failed requests, by kind of failure."}, []string{"batch", "kind"}),
		added: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sse_latency_added_emit_recv_seconds",
			Help: "The last round's emit->recv added by the gateway (gateway minus loopback; the gateway's own without calibration)."}, []string{"stat"}),
		verdict: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sse_latency_verdict",
			Help: "1 for the buffering verdict of the last round (flushes, buffers, unknown), 0 for the others."}, []string{"class"}),
		rounds: prometheus.NewCounter(prometheus.CounterOpts{Name: "sse_latency_probe_rounds_total", Help: "Rounds of measurement committed."}),
		lastRound: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sse_latency_probe_last_round_timestamp_seconds",
			Help: "When the last round ended, Unix time."}),
		clockOffset: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sse_latency_clock_offset_seconds",
			Help: "Across hosts: the server's clock minus the probe's (0 in one process)."}),
		clockBound: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sse_latency_clock_bound_seconds",
			Help: "Across hosts: the error bound of every server time converted to the probe's clock (0 in one process)."}),
	}
	m.reg.MustRegister(m.ttft, m.ttfo, m.emitRecv, m.interToken, m.leg, m.requests, m.failures,
		m.added, m.verdict, m.rounds, m.lastRound, m.clockOffset, m.clockBound)
	return m
}

// Handler serves the families in Prometheus's text format (or what the
// scraper negotiates), never during a Commit.
func (m *Metrics) Handler() http.Handler {
	h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.RLock()
		defer m.mu.RUnlock()
		h.ServeHTTP(w, r)
	})
}

// Round holds what one round's records contribute, until Commit. Add is
// called once per finished record, one call at a time.
type Round struct {
	obs      []observation
	requests map[string]int
	failures map[[2]string]int
}

// observation is one sample of one histogram and batch.
type observation struct {
	h     *prometheus.HistogramVec
	batch string
	v     float64 // seconds
}

// NewRound returns an empty round.
func NewRound() *Round {
	return &Round{requests: make(map[string]int), failures: make(map[[2]string]int)}
}

// Add keeps what rec contributes: a warm-up request nothing.
func (m *Metrics) Add(rd *Round, rec *result.Request) {
	if rec.Warmup {
		return
	}
	b, ok := batchLabel[rec.Batch]
	if !ok {
		b = rec.Batch
	}
	rd.requests[b]++
	if !rec.OK() {
		rd.failures[[2]string{b, rec.Failure.Kind.String()}]++
	}
	obs := func(h *prometheus.HistogramVec, ns int64) {
		rd.obs = append(rd.obs, observation{h, b, float64(ns) / 1e9})
	}
	if rec.Sent > 0 && rec.ServerArrived > 0 {
		obs(m.leg, rec.ServerArrived-rec.Sent)
	}
	if rec.Sent > 0 && rec.FirstTextAt > 0 {
		obs(m.ttfo, rec.FirstTextAt-rec.Sent)
	}
	toks := rec.Tokens
	if len(toks) == 0 {
		return
	}
	if rec.Sent > 0 {
		obs(m.ttft, toks[0].Arrived-rec.Sent)
	}
	for i := 1; i < len(toks); i++ {
		obs(m.interToken, toks[i].Arrived-toks[i-1].Arrived)
		if toks[i].Emitted != 0 {
			obs(m.emitRecv, toks[i].Arrived-toks[i].Emitted)
		}
	}
}

// Commit adds the round's samples and counts to the families and sets the
// gauges from its summary s (the verdict and its added delay, the clock),
// at once for a scrape; end is when the round ended.
func (m *Metrics) Commit(rd *Round, s *summary.Run, end time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, o := range rd.obs {
		o.h.WithLabelValues(o.batch).Observe(o.v)
	}
	for b, n := range rd.requests {
		m.requests.WithLabelValues(b).Add(float64(n))
	}
	for k, n := range rd.failures {
		m.failures.WithLabelValues(k[0], k[1]).Add(float64(n))
	}
	if v := s.Verdict; v != nil {
		for _, c := range classes {
			on := 0.0
			if c == v.Class {
				on = 1
			}
			m.verdict.WithLabelValues(c.String()).Set(on)
		}
		// The added delay is known whenever the gateway's tokens had
		// emission times, whatever the class (too few tokens to judge
		// bursts still have their delay).
		if g := s.Gateway(); g != nil && g.Metrics.EmitRecv.N > 0 {
			m.added.WithLabelValues("mean").Set(v.AddedMeanMs / 1e3)
			m.added.WithLabelValues("p50").Set(v.AddedP50Ms / 1e3)
			m.added.WithLabelValues("p99").Set(v.AddedP99Ms / 1e3)
		}
	}
	if c := s.Clock; c != nil {
		m.clockOffset.Set(c.OffsetMs / 1e3)
		m.clockBound.Set(c.BoundMs / 1e3)
	}
	m.rounds.Inc()
	m.lastRound.Set(float64(end.UnixNano()) / 1e9)
}
