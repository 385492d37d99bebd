package cli

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/sse-latency/sse-latency/internal/batch"
	"github.com/sse-latency/sse-latency/internal/probe/probetest"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// watchProbe returns a stderr for a probe that routes g to the server it
// announces, and sends the metrics URL it announces to metrics.
func watchProbe(g *testutil.Gateway, metrics chan<- string) *watched {
	return &watched{on: func(p []byte) {
		g.UpstreamFrom(string(p))
		if m := metricsLine.FindSubmatch(p); m != nil {
			metrics <- "http://" + string(m[1]) + "/metrics"
		}
	}}
}

var metricsLine = regexp.MustCompile(`probe: metrics on http://(\S+)/metrics`)

// startProbe runs `sse-latency probe` with args through g until ctx is
// done; it returns the metrics URL, and a channel of the exit status.
func startProbe(t *testing.T, ctx context.Context, g *testutil.Gateway, args ...string) (metricsURL string, stderr *watched, done <-chan int) {
	t.Helper()
	urls := make(chan string, 1)
	stderr = watchProbe(g, urls)
	exit := make(chan int, 1)
	go func() {
		code, _ := Measure(ctx, append([]string{"probe", "-L", "127.0.0.1:0", "-t", g.Addr, "--metrics", "127.0.0.1:0"}, args...), &bytes.Buffer{}, stderr)
		exit <- code
	}()
	select {
	case metricsURL = <-urls:
	case code := <-exit:
		t.Fatalf("probe ended with %d before serving metrics:\n%s", code, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("no metrics line within 30 s:\n%s", stderr.String())
	}
	return metricsURL, stderr, exit
}

// scrapeMetrics fetches and parses /metrics with Prometheus's text parser.
func scrapeMetrics(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	fams, err := probetest.Parse(resp.Body)
	if err != nil {
		t.Fatalf("parsing %s: %v", url, err)
	}
	return fams
}

// TestProbeRounds runs a probe through an in-process gateway until it has
// committed three rounds, then checks /metrics as Prometheus parses it:
// every family there, each count that of whole rounds, the verdict and
// added delay of the last; /healthz answers; the probe ends cleanly when
// stopped.
func TestProbeRounds(t *testing.T) {
	const r, n = 2, 10
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := testutil.StartGateway(t, testutil.GatewayOptions{})
	url, stderr, done := startProbe(t, ctx, g, "--every", "20ms", "-r", fmt.Sprint(r), "-c", "2", "-n", fmt.Sprint(n), "-d", "1")

	var fams map[string]*dto.MetricFamily
	var rounds float64
	if !testutil.Poll(func() bool {
		fams = scrapeMetrics(t, url)
		rounds = probetest.Value(fams, "sse_latency_probe_rounds_total")
		return rounds >= 3
	}, time.Minute) {
		t.Fatalf("fewer than 3 rounds within a minute:\n%s", stderr.String())
	}
	calib := float64(batch.CalibrationFor(r, 2, n).Requests)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"sse_latency_requests_total", []string{"batch=gateway"}, rounds * r},
		{"sse_latency_requests_total", []string{"batch=loopback"}, rounds * calib},
		{"sse_latency_ttft_seconds", []string{"batch=gateway"}, rounds * r},
		{"sse_latency_ttfo_seconds", []string{"batch=gateway"}, rounds * r},
		{"sse_latency_request_leg_seconds", []string{"batch=gateway"}, rounds * r},
		{"sse_latency_emit_recv_seconds", []string{"batch=gateway"}, rounds * r * (n - 1)},
		{"sse_latency_inter_token_seconds", []string{"batch=gateway"}, rounds * r * (n - 1)},
		{"sse_latency_ttft_seconds", []string{"batch=loopback"}, rounds * calib},
	} {
		if got := probetest.Value(fams, c.name, c.labels...); got != c.want {
			t.Errorf("after %v rounds: %s%v = %v, want %v", rounds, c.name, c.labels, got, c.want)
		}
	}
	// The verdict is one-hot, whatever the class (too few tokens to judge
	// is a class too).
	if sum := probetest.Value(fams, "sse_latency_verdict", "class=flushes") + probetest.Value(fams, "sse_latency_verdict", "class=buffers") +
		probetest.Value(fams, "sse_latency_verdict", "class=unknown"); sum != 1 {
		t.Errorf("after %v rounds: the verdict gauges add up to %v, want 1", rounds, sum)
	}
	names := []string{"sse_latency_added_emit_recv_seconds", "sse_latency_probe_last_round_timestamp_seconds"}
	if _, err := os.Stat("/proc/stat"); err == nil {
		names = append(names, "sse_latency_host_cpu_share") // the round's host sample (the gateway is in-process: no gateway gauge)
	}
	for _, name := range names {
		if probetest.Find(fams, name) == nil { // a value may be negative (gateway minus loopback noise)
			t.Errorf("no %s after %v rounds", name, rounds)
		}
	}
	if _, ok := fams["sse_latency_failures_total"]; ok && probetest.Value(fams, "sse_latency_failures_total", "batch=gateway") > 0 {
		t.Errorf("failures through an SSE-friendly gateway: %v", fams["sse_latency_failures_total"])
	}
	resp, err := http.Get(strings.TrimSuffix(url, "/metrics") + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("/healthz: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	cancel()
	select {
	case code := <-done:
		if code != ExitOK || !strings.Contains(stderr.String(), "probe: stopped after ") {
			t.Errorf("probe stopped with %d:\n%s", code, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("the probe did not end within a minute of being stopped:\n%s", stderr.String())
	}
}

// TestProbeStopsAfterTheRoundInFlight stops the probe while round 2's
// requests are in the gateway: the round runs to its end, its requests ok
// (not interrupted), and no round 3 starts.
func TestProbeStopsAfterTheRoundInFlight(t *testing.T) {
	const r = 3
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := testutil.StartGateway(t, testutil.GatewayOptions{OnRequest: func(n int64) {
		if n == r+1 { // the first request of round 2
			cancel()
		}
	}})
	_, stderr, done := startProbe(t, ctx, g, "--every", "10ms", "-r", fmt.Sprint(r), "-c", "1", "-n", "20", "-d", "1")
	select {
	case code := <-done:
		out := stderr.String()
		if code != ExitOK {
			t.Errorf("exit %d, want 0:\n%s", code, out)
		}
		probetest.CheckStoppedAfter(t, out, 2, r)
	case <-time.After(time.Minute):
		t.Fatalf("the probe did not end within a minute of being stopped:\n%s", stderr.String())
	}
}

// TestProbeUsage: help, and what a probe refuses.
func TestProbeUsage(t *testing.T) {
	code, _, errOut := runMain(t, nil, "probe", "-h")
	if code != ExitOK || !strings.Contains(errOut, "usage: sse-latency probe") {
		t.Errorf("probe -h: %d\n%s", code, errOut)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"probe"}, "a probe measures a gateway: give -t"},
		{[]string{"probe", "-t", "127.0.0.1:1", "--json", "x.json"}, "a probe serves metrics, it writes no files"},
		{[]string{"probe", "-t", "127.0.0.1:1", "--duration", "1s"}, "--duration: a probe's round is -r requests"},
		{[]string{"probe", "-t", "127.0.0.1:1", "--rounds", "2"}, "--rounds: a probe's round is one calibration"},
		{[]string{"probe", "-t", "127.0.0.1:1", "--slo", "gateway ttft p99 < 1s"}, "--slo: a probe exports its figures"},
		{[]string{"probe", "-t", "127.0.0.1:1", "--every", "0s"}, "--every 0s: want a positive duration"},
		{[]string{"probe", "-t", "127.0.0.1:1", "--metrics", "x"}, "--metrics: bad port"},
		{[]string{"probe", "-t", "127.0.0.1:1", "--every", "soon"}, "invalid argument \"soon\""},
	} {
		code, out, errOut := runMain(t, nil, tt.args...)
		if code != ExitFailure || !strings.Contains(errOut, tt.want) || out != "" {
			t.Errorf("%q: exit %d, stderr\n%s\nwant 1 and %q", tt.args, code, errOut, tt.want)
		}
	}
}
