package probe

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/sse-latency/sse-latency/internal/probe/probetest"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// scrape serves m's handler once and parses the answer with Prometheus's
// text parser.
func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	fams, err := probetest.Parse(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, body)
	}
	return fams
}

// metric is probetest.Find.
var metric = probetest.Find

// request is an ok record of n tokens 1 ms apart, each 40 µs after its
// emission, sent 1 ms before the first and arrived at the server 0.3 ms
// after the send, its first text 2 ms after the send.
func request(batch string, n int) *result.Request {
	r := &result.Request{Batch: batch, Sent: 1_000_000, ServerArrived: 1_300_000, FirstTextAt: 3_000_000}
	for i := range n {
		at := int64(2_000_000 + i*1_000_000)
		r.Tokens = append(r.Tokens, result.Token{Arrived: at, Emitted: at - 40_000})
	}
	return r
}

func TestRoundsCommitted(t *testing.T) {
	m := New()
	fams := scrape(t, m)
	if c := metric(fams, "sse_latency_probe_rounds_total"); c == nil || c.GetCounter().GetValue() != 0 {
		t.Fatalf("a new probe's rounds: %v, want 0", c)
	}
	s := &summary.Run{Verdict: &verdict.Verdict{Class: verdict.Buffers, Tokens: 10, AddedMeanMs: 42, AddedP50Ms: 40, AddedP99Ms: 85},
		Clock:   &summary.Clock{OffsetMs: 1500, BoundMs: 0.25},
		Batches: []summary.Batch{{Name: summary.GatewayBatch, Metrics: summary.Metrics{EmitRecv: summary.Metric{N: 19}}}}}
	for round := 1; round <= 3; round++ {
		rd := NewRound()
		m.Add(rd, request("gw", 10))
		m.Add(rd, request("gw", 10))
		m.Add(rd, request("loop", 4))
		failed := request("gw", 2)
		failed.Failure = result.Failure{Kind: result.Timeout, Detail: "1"}
		m.Add(rd, failed)
		warm := request("gw", 50)
		warm.Warmup = true
		m.Add(rd, warm)
		m.Add(rd, &result.Request{Batch: "gw", Failure: result.Failure{Kind: result.Connect, Detail: "Connection refused", Errno: syscall.ECONNREFUSED}})
		// Nothing shows before the round is committed.
		if c := metric(scrape(t, m), "sse_latency_requests_total", "batch=gateway"); round == 1 && c != nil {
			t.Fatalf("round 1 shows before its commit: %v", c)
		}
		m.Commit(rd, s, time.Unix(1_800_000_000, 0))

		fams := scrape(t, m)
		r := uint64(round)
		for _, tt := range []struct {
			name, batch string
			count       uint64
			sum         float64
		}{
			{"sse_latency_ttft_seconds", "gateway", 3 * r, float64(3*r) * 0.001},
			{"sse_latency_ttfo_seconds", "gateway", 3 * r, float64(3*r) * 0.002}, // not the connect failure: no text
			{"sse_latency_emit_recv_seconds", "gateway", (9 + 9 + 1) * r, float64(19*r) * 0.00004},
			{"sse_latency_inter_token_seconds", "gateway", 19 * r, float64(19*r) * 0.001},
			{"sse_latency_request_leg_seconds", "gateway", 3 * r, float64(3*r) * 0.0003},
			{"sse_latency_ttft_seconds", "loopback", r, float64(r) * 0.001},
		} {
			got := metric(fams, tt.name, "batch="+tt.batch)
			if got == nil || got.GetHistogram().GetSampleCount() != tt.count || !near(got.GetHistogram().GetSampleSum(), tt.sum) {
				t.Errorf("round %d: %s{batch=%s} = %v, want count %d, sum %g", round, tt.name, tt.batch, got, tt.count, tt.sum)
			}
		}
		for _, c := range []struct {
			name   string
			labels []string
			want   float64
		}{
			{"sse_latency_requests_total", []string{"batch=gateway"}, float64(4 * r)},
			{"sse_latency_requests_total", []string{"batch=loopback"}, float64(r)},
			// The kinds of the failure summary: a -w after the request was sent, a refused connect.
			{"sse_latency_failures_total", []string{"batch=gateway", "kind=request_timeout"}, float64(r)},
			{"sse_latency_failures_total", []string{"batch=gateway", "kind=connection_refused"}, float64(r)},
			{"sse_latency_probe_rounds_total", nil, float64(r)},
		} {
			if got := metric(fams, c.name, c.labels...); got == nil || got.GetCounter().GetValue() != c.want {
				t.Errorf("round %d: %s%v = %v, want %g", round, c.name, c.labels, got, c.want)
			}
		}
		for _, g := range []struct {
			name   string
			labels []string
			want   float64
		}{
			{"sse_latency_verdict", []string{"class=buffers"}, 1},
			{"sse_latency_verdict", []string{"class=flushes"}, 0},
			{"sse_latency_verdict", []string{"class=unknown"}, 0},
			{"sse_latency_added_emit_recv_seconds", []string{"stat=mean"}, 0.042},
			{"sse_latency_added_emit_recv_seconds", []string{"stat=p99"}, 0.085},
			{"sse_latency_clock_offset_seconds", nil, 1.5},
			{"sse_latency_clock_bound_seconds", nil, 0.00025},
			{"sse_latency_probe_last_round_timestamp_seconds", nil, 1_800_000_000},
		} {
			if got := metric(fams, g.name, g.labels...); got == nil || !near(got.GetGauge().GetValue(), g.want) {
				t.Errorf("round %d: %s%v = %v, want %g", round, g.name, g.labels, got, g.want)
			}
		}
	}
	// A round without emission times (no gateway tokens) keeps the last
	// added delay, and moves the verdict.
	m.Commit(NewRound(), &summary.Run{Verdict: &verdict.Verdict{Class: verdict.Unknown}}, time.Now())
	fams = scrape(t, m)
	if v := metric(fams, "sse_latency_verdict", "class=unknown"); v == nil || v.GetGauge().GetValue() != 1 {
		t.Errorf("verdict unknown after an unknown round: %v", v)
	}
	if a := metric(fams, "sse_latency_added_emit_recv_seconds", "stat=mean"); a == nil || !near(a.GetGauge().GetValue(), 0.042) {
		t.Errorf("added delay after an unknown round: %v, want the last known 0.042", a)
	}
}

// near compares floats summed in another order.
func near(a, b float64) bool {
	d := a - b
	return d < 1e-9 && d > -1e-9
}

// testCost is a gateway batch's cost: 1000 tokens, haproxy's 20 ms of
// CPU (5 user, 15 system), 1000 writes, over 0.1 s of a 2-CPU host.
func testCost() *summary.Cost {
	return &summary.Cost{WallS: 0.1, Tokens: 1000, Streams: 10,
		Gateway: &summary.GatewayCost{PIDs: []int{7}, Name: "haproxy", Found: "listener", WritesKnown: true, WritesPerToken: 1,
			CPUCost: summary.CPUCost{CPUS: 0.02, UserS: 0.005, SystemS: 0.015, CPUPerTokenUs: 20, Cores: 0.2}},
		Host: &summary.HostCost{CPUs: 2, BusyShare: 0.5, ToolShare: 0.3, GatewayShare: 0.1, OtherShare: 0.1, Culprit: summary.CulpritTool}}
}

// TestCommitCost: a round's cost sets the gateway and host gauges, the
// gateway's labelled with its process name.
func TestCommitCost(t *testing.T) {
	m := New()
	m.Commit(NewRound(), &summary.Run{Batches: []summary.Batch{{Name: summary.GatewayBatch, Cost: testCost()}}}, time.Now())
	fams := scrape(t, m)
	value := func(name string, labels ...string) float64 {
		t.Helper()
		f := fams[name]
		if f == nil {
			t.Fatalf("no family %s", name)
		}
	metrics:
		for _, mt := range f.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range mt.GetLabel() {
					found = found || lp.GetName() == labels[i] && lp.GetValue() == labels[i+1]
				}
				if !found {
					continue metrics
				}
			}
			return mt.GetGauge().GetValue()
		}
		t.Fatalf("%s has no series %v", name, labels)
		return 0
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"sse_latency_gateway_cpu_seconds_per_token", []string{"process", "haproxy", "mode", "total"}, 20e-6},
		{"sse_latency_gateway_cpu_seconds_per_token", []string{"process", "haproxy", "mode", "system"}, 15e-6},
		{"sse_latency_gateway_writes_per_token", []string{"process", "haproxy"}, 1},
		{"sse_latency_gateway_cpu_cores", []string{"process", "haproxy"}, 0.2},
		{"sse_latency_host_cpu_share", []string{"who", "tool"}, 0.3},
		{"sse_latency_host_cpu_share", []string{"who", "busy"}, 0.5},
	} {
		if got := value(c.name, c.labels...); !near(got, c.want) {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

// TestDashboardNamesFamilies: every metric the Grafana dashboard of
// examples/ queries is a family of the probe (a histogram's by its
// _bucket, _sum or _count series), so that the dashboard cannot drift.
func TestDashboardNamesFamilies(t *testing.T) {
	m := New()
	rd := NewRound()
	for _, b := range []string{"gw", "loop"} {
		m.Add(rd, request(b, 3))
		failed := request(b, 1)
		failed.Failure = result.Failure{Kind: result.Timeout, Detail: "1"}
		m.Add(rd, failed)
	}
	m.Commit(rd, &summary.Run{Verdict: &verdict.Verdict{Class: verdict.Flushes, Tokens: 1}, Clock: &summary.Clock{},
		Batches: []summary.Batch{{Name: summary.GatewayBatch, Metrics: summary.Metrics{EmitRecv: summary.Metric{N: 2}}, Cost: testCost()}}}, time.Now())
	fams := scrape(t, m)
	js, err := os.ReadFile(filepath.Join("..", "..", "examples", "grafana", "sse-latency-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(js, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	seen := map[string]bool{}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, name := range regexp.MustCompile(`sse_latency_[a-z0-9_]+`).FindAllString(tg.Expr, -1) {
				family := name
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if f, ok := strings.CutSuffix(name, suffix); ok && fams[f] != nil && fams[f].GetType() == dto.MetricType_HISTOGRAM {
						family = f
					}
				}
				if fams[family] == nil {
					t.Errorf("panel %q queries %s, which the probe does not export", p.Title, name)
				}
				seen[family] = true
			}
		}
	}
	for name := range fams {
		if !seen[name] {
			t.Errorf("the dashboard shows nothing of %s", name)
		}
	}
}

// TestHandler: the whole families, or those name[] keeps, in the text
// format's media type, as Prometheus writes them; gzip-compressed when
// the scraper accepts it.
func TestHandler(t *testing.T) {
	m := New()
	m.Commit(NewRound(), &summary.Run{}, time.Unix(1_800_000_000, 0))
	for _, tt := range []struct {
		target, encoding string
		want             []string
	}{
		{"/metrics", "", []string{"sse_latency_clock_bound_seconds", "sse_latency_clock_offset_seconds",
			"sse_latency_probe_last_round_timestamp_seconds", "sse_latency_probe_rounds_total"}},
		{"/metrics", "gzip", []string{"sse_latency_clock_bound_seconds", "sse_latency_clock_offset_seconds",
			"sse_latency_probe_last_round_timestamp_seconds", "sse_latency_probe_rounds_total"}},
		{"/metrics?name[]=sse_latency_probe_rounds_total&name[]=sse_latency_ttft_seconds&name[]=other", "",
			[]string{"sse_latency_probe_rounds_total"}},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", tt.target, nil)
		if tt.encoding != "" {
			req.Header.Set("Accept-Encoding", tt.encoding)
		}
		m.Handler().ServeHTTP(rec, req)
		if ct := rec.Header().Get("Content-Type"); rec.Code != 200 || ct != "text/plain; version=0.0.4; charset=utf-8" {
			t.Errorf("GET %s: %d, Content-Type %q", tt.target, rec.Code, ct)
		}
		if ce := rec.Header().Get("Content-Encoding"); ce != tt.encoding {
			t.Errorf("GET %s, Accept-Encoding %q: Content-Encoding %q", tt.target, tt.encoding, ce)
		}
		var body io.Reader = rec.Body
		if tt.encoding == "gzip" {
			zr, err := gzip.NewReader(rec.Body)
			if err != nil {
				t.Fatalf("GET %s, Accept-Encoding gzip: %v", tt.target, err)
			}
			body = zr
		}
		text, err := io.ReadAll(body)
		if err != nil {
			t.Fatalf("GET %s, Accept-Encoding %q: %v", tt.target, tt.encoding, err)
		}
		checkExpfmt(t, "GET "+tt.target, string(text))
		fams, err := probetest.Parse(bytes.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		got := slices.Sorted(maps.Keys(fams))
		if !slices.Equal(got, tt.want) {
			t.Errorf("GET %s: families %v, want %v", tt.target, got, tt.want)
		}
	}
}

func TestAcceptsGzip(t *testing.T) {
	for _, tt := range []struct {
		header string
		want   bool
	}{
		{"", false},
		{"gzip", true},
		{"GZip", true},
		{"deflate, gzip", true},
		{" gzip ; q=0.5 ,br", true},
		{"gzip;Q=1", true},
		{"gzip;q=0", false},
		{"gzip; q=0.000", false},
		{"gzip;q=x", false},
		{"*", false},
		{"identity", false},
		{"x-gzip-ish", false},
		{"br;q=1, gzip;level=9", true},
	} {
		if got := acceptsGzip(tt.header); got != tt.want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

// FuzzAcceptsGzip: any header is judged without a panic, and gzip is
// accepted only by a header that names it.
func FuzzAcceptsGzip(f *testing.F) {
	for _, s := range []string{"gzip", "gzip;q=0", "deflate, gzip;q=0.5", "*;q=1", "gzip;q=", ";;,,;=", "gzip;q=1e400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		if acceptsGzip(h) && !strings.Contains(strings.ToLower(h), "gzip") {
			t.Errorf("acceptsGzip(%q) without gzip in it", h)
		}
	})
}

// TestScrapeSeesWholeRounds: scrapes during commits see whole rounds only
// (each round adds 3 requests, 3 TTFTs and 1 round), and the last scrape
// all of them.
func TestScrapeSeesWholeRounds(t *testing.T) {
	m := New()
	const rounds = 200
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range rounds {
			rd := NewRound()
			for range 3 {
				m.Add(rd, request("gw", 2))
			}
			m.Commit(rd, &summary.Run{}, time.Unix(1_800_000_000, 0))
		}
	}()
	for stop := false; !stop; {
		select {
		case <-done:
			stop = true
		default:
		}
		fams := scrape(t, m)
		n := probetest.Value(fams, "sse_latency_probe_rounds_total")
		req := probetest.Value(fams, "sse_latency_requests_total", "batch=gateway")
		ttft := probetest.Value(fams, "sse_latency_ttft_seconds", "batch=gateway")
		if n == 0 && req == -1 && ttft == -1 {
			continue // before the first commit
		}
		if req != 3*n || ttft != 3*n {
			t.Fatalf("a scrape saw %g rounds, %g requests, %g TTFTs: not whole rounds", n, req, ttft)
		}
		if stop && n != rounds {
			t.Fatalf("the last scrape saw %g rounds, want %d", n, rounds)
		}
	}
}
