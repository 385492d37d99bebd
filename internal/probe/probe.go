// Package probe is the Prometheus side of `sse-latency probe`, which
// measures a gateway in rounds, every interval, until it is stopped: the
// metric families a round feeds, and their HTTP handler, which writes
// Prometheus's text exposition format itself (text.go): Prometheus's client
// library would link protobuf and more into every run of the tool, probe
// or not.
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
//	sse_latency_failures_total           counter    failed requests, by kind: what went wrong, as the failure summary of the
//	                                                reports groups it (failures.Kind: connection_refused, reset_mid_stream,
//	                                                http_status, request_timeout, …)
//	sse_latency_added_emit_recv_seconds  gauge      the last round's added emit->recv, stat mean, p50 or p99
//	                                                (gateway minus loopback; the gateway's own without calibration);
//	                                                kept from the last round whose gateway tokens had emission times
//	sse_latency_verdict                  gauge      1 for the last round's class (flushes, buffers, unknown), 0 for the others
//	sse_latency_probe_rounds_total       counter    rounds committed
//	sse_latency_probe_last_round_timestamp_seconds  gauge  when the last round ended (Unix time)
//	sse_latency_clock_offset_seconds, sse_latency_clock_bound_seconds
//	                                     gauges     across hosts: the server's clock offset and its bound
//	sse_latency_gateway_cpu_seconds_per_token  gauge  the last round's gateway CPU per token received, by process
//	                                                (its command name) and mode (user, system, total); children included
//	sse_latency_gateway_writes_per_token gauge      the last round's gateway write system calls per token (syscw)
//	sse_latency_gateway_cpu_cores        gauge      the last round's gateway CPU over its gateway batch, in cores
//	sse_latency_host_cpu_share           gauge      the host's CPUs during the last round's gateway batch, by
//	                                                whose (tool, gateway, other, steal) and busy (all of it)
//	                                     (the four gateway and host gauges: when the round sampled them)
package probe

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sse-latency/sse-latency/internal/failures"
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

// Metrics are the families of a probe.
type Metrics struct {
	mu   sync.Mutex // held by Commit, and by a scrape while it renders
	fams []*family  // all of the below

	ttft, ttfo, emitRecv, interToken, leg *family
	requests, failures                    *family
	added, verdict                        *family
	rounds                                *family
	lastRound, clockOffset, clockBound    *family
	gwCPU, gwWrites, gwCores, hostShare   *family
}

// New returns the families, without samples.
func New() *Metrics {
	hist := func(name, help string) *family {
		return newHistogram(name, help, LatencyBuckets, "batch")
	}
	m := &Metrics{
		ttft:       hist("sse_latency_ttft_seconds", "Time to first token: request sent to first token received, per request."),
		ttfo:       hist("sse_latency_ttfo_seconds", "Time to first output: request sent to first visible text received, per request that had text."),
		emitRecv:   hist("sse_latency_emit_recv_seconds", "One-way delay of each token after the first: emitted by the server to received by the client."),
		interToken: hist("sse_latency_inter_token_seconds", "Gap between the arrivals of consecutive tokens."),
		leg:        hist("sse_latency_request_leg_seconds", "Request leg: request sent by the client to read whole by the server (the gateway's request path)."),
		requests:   newFamily("sse_latency_requests_total", "Requests made, ok or failed.", counter, "batch"),
		failures: newFamily("sse_latency_failures_total", "Failed requests, by what went wrong (the kinds of the reports' failure summary).",
			counter, "batch", "kind"),
		added: newFamily("sse_latency_added_emit_recv_seconds",
			"The last round's emit->recv added by the gateway (gateway minus loopback; the gateway's own without calibration).", gauge, "stat"),
		verdict: newFamily("sse_latency_verdict",
			"1 for the buffering verdict of the last round (flushes, buffers, unknown), 0 for the others.", gauge, "class"),
		rounds:    newFamily("sse_latency_probe_rounds_total", "Rounds of measurement committed.", counter),
		lastRound: newFamily("sse_latency_probe_last_round_timestamp_seconds", "When the last round ended, Unix time.", gauge),
		clockOffset: newFamily("sse_latency_clock_offset_seconds",
			"Across hosts: the server's clock minus the probe's (0 in one process).", gauge),
		clockBound: newFamily("sse_latency_clock_bound_seconds",
			"Across hosts: the error bound of every server time converted to the probe's clock (0 in one process).", gauge),
	}
	m.gwCPU = newFamily("sse_latency_gateway_cpu_seconds_per_token",
		"The last round's CPU of the gateway's processes (children included) per token received, by mode.", gauge, "process", "mode")
	m.gwWrites = newFamily("sse_latency_gateway_writes_per_token",
		"The last round's write system calls of the gateway's processes (syscw: write, writev, sendfile) per token received.", gauge, "process")
	m.gwCores = newFamily("sse_latency_gateway_cpu_cores", "The last round's CPU of the gateway's processes over its gateway batch, in cores.", gauge, "process")
	m.hostShare = newFamily("sse_latency_host_cpu_share",
		"The host's CPUs during the last round's gateway batch: the share busy, and whose (tool, gateway, other, steal).", gauge, "who")
	m.fams = []*family{m.ttft, m.ttfo, m.emitRecv, m.interToken, m.leg, m.requests, m.failures,
		m.added, m.verdict, m.rounds, m.lastRound, m.clockOffset, m.clockBound, m.gwCPU, m.gwWrites, m.gwCores, m.hostShare}
	return m
}

// Handler serves the families in Prometheus's text format 0.0.4, whatever
// the request's method and Accept header (the caller routes GET /metrics
// to it; net/http sends a HEAD's headers only), gzip-compressed when the
// request's Accept-Encoding names gzip. A scrape renders under the lock
// Commit takes, so it sees whole rounds only, then writes without it: a
// slow scraper does not hold a round up. A query's name[] parameters,
// when there are any, keep only the families they name, as Prometheus's
// own handler does.
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fams := m.fams
		if names := r.URL.Query()["name[]"]; len(names) > 0 {
			fams = nil
			for _, f := range m.fams {
				if slices.Contains(names, f.name) {
					fams = append(fams, f)
				}
			}
		}
		var b bytes.Buffer
		m.mu.Lock()
		writeText(&b, fams)
		m.mu.Unlock()
		h := w.Header()
		h.Set("Content-Type", contentType)
		h.Add("Vary", "Accept-Encoding")
		if !acceptsGzip(strings.Join(r.Header.Values("Accept-Encoding"), ",")) {
			h.Set("Content-Length", strconv.Itoa(b.Len()))
			w.Write(b.Bytes())
			return
		}
		h.Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		zw.Write(b.Bytes())
		zw.Close()
	})
}

// acceptsGzip reports whether an Accept-Encoding header value (its lines
// joined by commas) accepts gzip: it names gzip (any case) with no
// q-value, or one above 0. A "*" is not taken for gzip: identity is
// always acceptable, and Prometheus's own handler chose it for "*" too.
func acceptsGzip(h string) bool {
	for c := range strings.SplitSeq(h, ",") {
		name, params, _ := strings.Cut(c, ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
			continue
		}
		q := 1.0
		for p := range strings.SplitSeq(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(k, "q") {
				var err error
				if q, err = strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
					q = 0 // malformed: not accepted
				}
			}
		}
		return q > 0
	}
	return false
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
	h     *family // a histogram
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
		rd.failures[[2]string{b, failures.Of(rec).String()}]++
	}
	obs := func(h *family, ns int64) {
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
		o.h.with(o.batch).observe(o.h.bounds, o.v)
	}
	for b, n := range rd.requests {
		m.requests.with(b).value += float64(n)
	}
	for k, n := range rd.failures {
		m.failures.with(k[0], k[1]).value += float64(n)
	}
	if v := s.Verdict; v != nil {
		for _, c := range classes {
			on := 0.0
			if c == v.Class {
				on = 1
			}
			m.verdict.with(c.String()).value = on
		}
		// The added delay is known whenever the gateway's tokens had
		// emission times, whatever the class (too few tokens to judge
		// bursts still have their delay).
		if g := s.Gateway(); g != nil && g.Metrics.EmitRecv.N > 0 {
			m.added.with("mean").value = v.AddedMeanMs / 1e3
			m.added.with("p50").value = v.AddedP50Ms / 1e3
			m.added.with("p99").value = v.AddedP99Ms / 1e3
		}
	}
	if c := s.Clock; c != nil {
		m.clockOffset.with().value = c.OffsetMs / 1e3
		m.clockBound.with().value = c.BoundMs / 1e3
	}
	if g := s.Gateway(); g != nil && g.Cost != nil {
		m.commitCost(g.Cost)
	}
	m.rounds.with().value++
	m.lastRound.with().value = float64(end.UnixNano()) / 1e9
}

// commitCost sets the cost gauges from a gateway batch's cost: the
// gateway's when its processes were seen, the host's when sampled.
func (m *Metrics) commitCost(c *summary.Cost) {
	if g := c.Gateway; g != nil && g.Unseen == "" && c.Tokens > 0 {
		perToken := func(s float64) float64 { return s / float64(c.Tokens) }
		m.gwCPU.with(g.Name, "user").value = perToken(g.UserS)
		m.gwCPU.with(g.Name, "system").value = perToken(g.SystemS)
		m.gwCPU.with(g.Name, "total").value = perToken(g.CPUS)
		if g.WritesKnown {
			m.gwWrites.with(g.Name).value = g.WritesPerToken
		}
		m.gwCores.with(g.Name).value = g.Cores
	}
	if h := c.Host; h != nil {
		m.hostShare.with("busy").value = h.BusyShare
		m.hostShare.with("tool").value = h.ToolShare
		m.hostShare.with("gateway").value = h.GatewayShare
		m.hostShare.with("other").value = h.OtherShare
		m.hostShare.with("steal").value = h.StealShare
	}
}
