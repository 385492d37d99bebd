//go:build linux

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/cli"
	"github.com/sse-latency/sse-latency/internal/evloop"
	"github.com/sse-latency/sse-latency/internal/gateway"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/testutil"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// The e2e measurement: calibration of 3 requests of 200 tokens, then 4
// gateway requests of 200 tokens, 2 at a time, a token every 2 ms: each
// stream lasts ~0.4 s, a whole run ~2 s.
const (
	e2eRequests = 4
	e2eTokens   = 200
	e2eLimit    = 60 * time.Second // a whole gateway test, start to stop
)

// e2eArgs are the sse-latency arguments besides -L and -t. -w bounds each
// request well below e2eLimit.
// --include-usage: the usage and its cache figures must pass unchanged.
var e2eArgs = []string{"-r", "4", "-c", "2", "-n", "200", "-d", "2", "-w", "20000", "-q", "--include-usage"}

// wantClass is the verdict each example must get; an example absent here
// would only be observed (its figures logged).
var wantClass = map[string]verdict.Class{
	"haproxy":          verdict.Buffers, // MSG_MORE without http-no-delay: bursts tens of ms late
	"haproxy-no-delay": verdict.Flushes,
	"nginx":            verdict.Flushes, // X-Accel-Buffering: no from the backend
	"nginx-unbuffered": verdict.Flushes,
	// With X-Accel-Buffering: no nginx passes each upstream read on with a
	// flush, and its gzip filter then ends each event with a sync flush:
	// compressed, but not held. (Were nginx to buffer the upstream, gzip
	// would hold the whole stream.)
	"nginx-gzip": verdict.Flushes,
	// Ignoring that header, nginx's gzip filter holds the compressed
	// stream until its buffers fill or the response ends.
	"nginx-gzip-buffered": verdict.Buffers,
	"caddy":               verdict.Flushes, // flushes text/event-stream at once
	// lighttpd's server.stream-response-body defaults to 0: the backend's
	// whole response, then the client's; 2 streams it.
	"lighttpd":           verdict.Buffers,
	"lighttpd-streaming": verdict.Flushes,
	// mod_proxy_http flushes each backend read; mod_deflate flushes its
	// compressor with it.
	"apache":         verdict.Flushes,
	"apache-deflate": verdict.Flushes,
}

// wantAdvice is the setting each buffering example's advice must name:
// its gateway's own.
var wantAdvice = map[string]string{
	"haproxy":             "option http-no-delay",
	"nginx-gzip-buffered": "gzip_types",
	"lighttpd":            "server.stream-response-body = 2",
}

// checkIdentity checks that the gateway was named as what it is, and
// that every piece of advice is its own (or the generic one), naming the
// setting wantAdvice gives.
func checkIdentity(t *testing.T, ex Example, id *gateway.Identity, advice []gateway.Advice, what string) {
	t.Helper()
	if id == nil || string(id.Name) != ex.Gateway.Name {
		t.Errorf("%s: the gateway is named %v, want %s", what, id, ex.Gateway.Name)
		return
	}
	for _, a := range advice {
		if a.Gateway != id.Name && a.Gateway != gateway.Unknown || len(a.Others) > 0 {
			t.Errorf("%s: advice %+v: not %s's own", what, a, id.Name)
		}
	}
	if want, ok := wantAdvice[ex.Name]; ok && !slices.ContainsFunc(advice, func(a gateway.Advice) bool {
		return a.Gateway == id.Name && (strings.Contains(a.Setting, want) || strings.Contains(a.Snippet, want))
	}) {
		t.Errorf("%s: the advice %+v does not name %s's %q", what, advice, id.Name, want)
	}
}

// Bounds of the behaviour assertions: far from what the gateways show
// (haproxy's bursts add 40-100 ms on average, the flushing gateways
// 0.05-0.2 ms at p50), so they describe the behaviour rather than a timing.
const (
	buffersMinAddedMeanMs = 10.0
	buffersMinBurstP50    = 2.0
	flushesMaxAddedP50Ms  = 1.0
)

// repoPath returns the path of a file given from the repository root (the
// tests run in e2e/).
func repoPath(rel string) string { return filepath.Join("..", filepath.FromSlash(rel)) }

// requireProgram returns the path of g's program. A missing program fails
// the test under CI=true (CI installs it) and skips it elsewhere.
func requireProgram(t *testing.T, g *Gateway) string {
	t.Helper()
	bin, err := LookPath(g.Program)
	if err == nil {
		return bin
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%v: CI=true requires it (.ci/run installs it: apt-get install %s)", err, g.Package)
	}
	t.Skipf("%v: install it to run this test (apt-get install %s)", err, g.Package)
	return ""
}

// checkGoroutines fails the test if, once its cleanups (registered after
// this call) have run, more goroutines are left than when it started. Call
// it first. The event loops of the epoll engine are the process's, started
// at their first use and never stopped: they are started before counting.
func checkGoroutines(t *testing.T) {
	t.Helper()
	evloop.Available()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		if testutil.Poll(func() bool { return runtime.NumGoroutine() <= before }, testutil.AwaitBound) {
			return
		}
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("goroutine leak: %d goroutines %v after the test, %d before it:\n%s", runtime.NumGoroutine(), testutil.AwaitBound, before, buf)
	})
}

// supportsFlag reports whether sse-latency knows flag, and what it said.
func supportsFlag(flag string) (bool, string) {
	var stderr bytes.Buffer
	cli.Measure(context.Background(), []string{flag, "--help"}, io.Discard, &stderr)
	first, _, _ := strings.Cut(stderr.String(), "\n")
	return !strings.Contains(stderr.String(), "unknown flag: "+flag), first
}

// launch starts ex's gateway and stops it when the test ends.
func launch(t *testing.T, ctx context.Context, ex Example, bin string) *Launched {
	t.Helper()
	dir := t.TempDir()
	example := exampleConfig(t, ex, dir)
	start := time.Now()
	l, err := Launch(ctx, ex.Gateway, bin, example, dir, testutil.Listen(t))
	if err != nil {
		t.Fatalf("starting %s with %s: %v", ex.Gateway.Name, ex.File, err)
	}
	t.Cleanup(func() {
		if err := l.Stop(StopGrace); err != nil {
			t.Errorf("stopping the gateway: %v\n--- gateway log ---\n%s", err, l.Log())
		}
	})
	t.Logf("%s listening on %s after %v, forwarding to %s: %s", ex.Gateway.Name, l.Addr, time.Since(start).Round(time.Millisecond), l.BackendAddr, l.Cmdline)
	return l
}

// measurement is one cli.Measure run through a gateway and what it printed.
type measurement struct {
	ex             Example
	gw             *Launched
	args           []string
	code           int
	sum            *cli.Summary
	stdout, stderr string
	elapsed        time.Duration
}

// measure runs sse-latency through gw with args (besides -L and -t).
func measure(ctx context.Context, ex Example, gw *Launched, args ...string) *measurement {
	return measureTo(ctx, ex, gw, gw.Addr, args...)
}

// measureTo is measure with target as -t (a URL, say, for gw.Addr).
func measureTo(ctx context.Context, ex Example, gw *Launched, target string, args ...string) *measurement {
	m := &measurement{ex: ex, gw: gw, args: append([]string{"-L", gw.BackendAddr, "-t", target}, args...)}
	if ex.Compressed {
		m.args = append(m.args, "--compressed")
	}
	var stdout, stderr bytes.Buffer
	start := time.Now()
	m.code, m.sum = cli.MeasureOn(ctx, gw.Backend, m.args, &stdout, &stderr)
	m.elapsed = time.Since(start)
	m.stdout, m.stderr = stdout.String(), stderr.String()
	return m
}

// String restates the run for failure messages: the command, the gateway,
// the exit status, everything sse-latency printed and the gateway's log.
func (m *measurement) String() string {
	return fmt.Sprintf("run: sse-latency %s\nthrough %s (%s rendered as %s): %s\nexit status %d after %v\n--- stdout ---\n%s--- stderr ---\n%s--- gateway log (%s) ---\n%s",
		strings.Join(m.args, " "), m.ex.Gateway.Name, m.ex.File, m.gw.ConfPath, m.gw.Cmdline,
		m.code, m.elapsed.Round(time.Millisecond), m.stdout, m.stderr, m.gw.LogPath, m.gw.Log())
}

// complete checks that the run succeeded and accounted for every request
// and token: requests ok and requests × tokens tokens through the gateway,
// and a calibration batch (none with -l). It reports false (the test
// failed) otherwise.
func (m *measurement) complete(t *testing.T, requests, tokens int) bool {
	t.Helper()
	s := m.sum
	switch {
	case m.code != cli.ExitOK:
		t.Errorf("exit status %d, want %d (every request ok)\n%s", m.code, cli.ExitOK, m)
		return false
	case s == nil || s.Gateway == nil || (s.Loop == nil) != s.Config.NoLoopback || s.Verdict == nil:
		t.Errorf("incomplete summary %+v: want calibration, gateway batch and verdict\n%s", s, m)
		return false
	case s.Gateway.Requests != requests || s.Gateway.OK != requests || s.Gateway.Tokens != int64(requests*tokens):
		t.Errorf("gateway batch: %d requests, %d ok, %d tokens; want %d, %d, %d (every request ok, every token accounted for)\n%s",
			s.Gateway.Requests, s.Gateway.OK, s.Gateway.Tokens, requests, requests, requests*tokens, m)
		return false
	case s.Loop != nil && (s.Loop.Failed != 0 || s.Loop.OK == 0):
		t.Errorf("calibration batch: %d ok, %d failed; want all ok\n%s", s.Loop.OK, s.Loop.Failed, m)
		return false
	}
	return true
}

// overhead is a statistic of a gateway metric minus the same of the
// calibration, in ms.
func overhead(loop, gw *stats.Metric, stat func(*stats.Metric) float64) float64 {
	return (stat(gw) - stat(loop)) / 1e6
}

func mean(m *stats.Metric) float64 { return m.Mean() }

func pct(p float64) func(*stats.Metric) float64 {
	return func(m *stats.Metric) float64 { return float64(m.Percentile(p)) }
}

// figures summarises a run on one line.
func (m *measurement) figures() string {
	s, v := m.sum, m.sum.Verdict
	l, g := s.Loop.EmitRecv, s.Gateway.EmitRecv
	return fmt.Sprintf("verdict %s%s (added mean %.3f p50 %.3f p99 %.3f ms; coalesced %.2f, burst p50 %.1f max %d every %.1f ms; first-token hold %v %.1f ms); "+
		"emit->recv overhead mean %+.3f p50 %+.3f p95 %+.3f p99 %+.3f ms, TTFT p50 %+.3f ms; measured in %v",
		v.Class, reasonOf(v), v.AddedMeanMs, v.AddedP50Ms, v.AddedP99Ms, v.CoalescedFraction, v.BurstSizeP50, v.BurstSizeMax, v.BurstPeriodMs,
		v.FirstTokenHold, v.FirstTokenHoldMs,
		overhead(l, g, mean), overhead(l, g, pct(0.5)), overhead(l, g, pct(0.95)), overhead(l, g, pct(0.99)),
		overhead(s.Loop.TTFT, s.Gateway.TTFT, pct(0.5)), m.elapsed.Round(time.Millisecond)) + busy(m.warned())
}

func busy(warned bool) string {
	if warned {
		return "; sse-latency warned it fell behind its emission schedule"
	}
	return ""
}

// requestBytesRE matches the -v line of a finished request.
var requestBytesRE = regexp.MustCompile(`(?m)^(loop|gw) +\d+: \d+ tokens in \d+ reads, (\d+) bytes$`)

// bytesPerRequest returns the mean response bytes (head included, as
// received) of the requests of batch ("gw" or "loop") from the -v lines; 0
// when there is none.
func (m *measurement) bytesPerRequest(batch string) float64 {
	var sum, n float64
	for _, g := range requestBytesRE.FindAllStringSubmatch(m.stderr, -1) {
		if g[1] == batch {
			b, _ := strconv.ParseFloat(g[2], 64)
			sum, n = sum+b, n+1
		}
	}
	if n == 0 {
		return 0
	}
	return sum / n
}

// warned reports whether sse-latency warned that it fell behind its own
// emission schedule (the machine was too busy for the figures).
func (m *measurement) warned() bool {
	return strings.Contains(m.stderr, "fell behind its own emission schedule")
}

func reasonOf(v *verdict.Verdict) string {
	if v.Reason == "" {
		return ""
	}
	return fmt.Sprintf(" (%s)", v.Reason)
}

// TestExamplesUseConventionalAddresses needs no gateway: every example
// listens on 127.0.0.1:8080 and forwards to 127.0.0.1:8090, the addresses
// the tests replace and the READMEs' commands use.
func TestExamplesUseConventionalAddresses(t *testing.T) {
	for _, ex := range allExamples() {
		b, err := os.ReadFile(repoPath(ex.File))
		if err != nil {
			t.Errorf("%s: %v", ex.File, err)
			continue
		}
		if _, err := ex.Gateway.render(b, "127.0.0.1:1", "127.0.0.1:2"); err != nil {
			t.Errorf("%s: %v", ex.File, err)
		}
		if _, err := RenderPEM(b, "/x.pem"); (err == nil) != ex.PEM {
			t.Errorf("%s: PEM %v, but RenderPEM says %v: the TLS examples, and only they, name %s", ex.File, ex.PEM, err, ExamplePEMPath)
		}
	}
}

// allExamples are Examples, TransportExamples and PhaseExamples.
func allExamples() []Example { return slices.Concat(Examples, TransportExamples, PhaseExamples) }

// TestExampleReadmes needs no gateway: each examples/ directory explains
// how to run sse-latency behind its configurations, with the command the
// tests' addresses correspond to and the placeholder for the figures.
func TestExampleReadmes(t *testing.T) {
	const command = "sse-latency -L 127.0.0.1:8090 -t 127.0.0.1:8080 -r 20 -c 5"
	const placeholder = "<!-- figures: filled from docs/gateways.md -->"
	files := map[string][]string{}
	for _, ex := range allExamples() {
		dir := filepath.Dir(ex.File)
		files[dir] = append(files[dir], filepath.Base(ex.File))
	}
	for dir, names := range files {
		path := filepath.Join(dir, "README.md")
		b, err := os.ReadFile(repoPath(path))
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		for _, want := range append([]string{command, placeholder}, names...) {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s does not mention %q", path, want)
			}
		}
	}
}

// TestExamplesValid checks that every example parses as shipped, with the
// gateway's own checker (haproxy -c, nginx -t, caddy validate). A TLS
// example is checked with a generated certificate in place of
// ExamplePEMPath (haproxy -c loads it).
func TestExamplesValid(t *testing.T) {
	for _, ex := range allExamples() {
		t.Run(ex.Name, func(t *testing.T) {
			checkGoroutines(t)
			bin := requireProgram(t, ex.Gateway)
			conf, err := filepath.Abs(repoPath(ex.File))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), CommandLimit)
			defer cancel()
			dir := t.TempDir()
			if ex.PEM {
				conf = filepath.Join(dir, ex.Gateway.ConfName)
				if err := os.WriteFile(conf, exampleConfig(t, ex, dir), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args := ex.Gateway.CheckArgs(conf, dir)
			out, err := RunCommand(ctx, bin, args, envOf(ex.Gateway, dir), dir)
			if err != nil {
				t.Errorf("%s: %v\n%s", shellQuote(append([]string{bin}, args...)), err, out)
			}
		})
	}
}

// TestGateways runs a whole measurement through each example configuration
// and checks that every request and token made it through and that the
// verdict describes how the gateway streams.
func TestGateways(t *testing.T) {
	for _, ex := range Examples {
		t.Run(ex.Name, func(t *testing.T) {
			checkGoroutines(t)
			if ex.Compressed {
				if ok, said := supportsFlag("--compressed"); !ok {
					t.Skipf("sse-latency has no --compressed flag yet (it says %q): cannot ask %s for gzip", said, ex.Gateway.Name)
				}
			}
			bin := requireProgram(t, ex.Gateway)
			ctx, cancel := context.WithTimeout(t.Context(), e2eLimit)
			defer cancel()
			gw := launch(t, ctx, ex, bin)
			args := e2eArgs
			if ex.Compressed {
				args = append(slices.Clip(args), "-v") // for the bytes each request received
			}
			m := measure(ctx, ex, gw, args...)
			if !m.complete(t, e2eRequests, e2eTokens) {
				return
			}
			t.Logf("%s: %s", ex.File, m.figures())
			checkCost(t, m)
			// The usage the server sent, cache figures and all, arrives as
			// it was sent: each object compared with the server's record.
			if u := m.sum.Run.Gateway().Usage; u == nil || u.Compared != e2eRequests || u.Intact != e2eRequests {
				t.Errorf("gateway usage %+v: want %d requests compared, all intact\n%s", u, e2eRequests, m)
			}
			if ex.Compressed {
				// The calibration requests ask for as many tokens (at most
				// 200) straight from the server, uncompressed.
				gwBytes, loopBytes := m.bytesPerRequest("gw"), m.bytesPerRequest("loop")
				t.Logf("%s: %.0f bytes per request through the gateway, %.0f straight", ex.File, gwBytes, loopBytes)
				if !(gwBytes > 0 && loopBytes > 0 && gwBytes < loopBytes/2) {
					t.Errorf("%.0f bytes per gateway request vs %.0f per calibration request: want the gateway's stream gzip-compressed to under half\n%s", gwBytes, loopBytes, m)
				}
			}
			checkIdentity(t, ex, m.sum.Run.Identity, m.sum.Verdict.Advice, "run")
			t.Logf("%s: gateway %s", ex.File, m.sum.Run.Identity)
			want, judged := wantClass[ex.Name]
			if !judged {
				return // observed only
			}
			if m.warned() {
				// The run measured the machine's overload as much as the
				// gateway (a token late by tens of ms looks like a burst):
				// its verdict says nothing about how the gateway streams.
				t.Skipf("%s: sse-latency fell behind its own emission schedule — the machine was too busy for this run to judge how %s streams; run it again on a quieter machine (%s)",
					ex.File, ex.Gateway.Name, m.figures())
			}
			v, s := m.sum.Verdict, m.sum
			if v.Class != want {
				t.Errorf("verdict %s%s, want %s\n%s\n%s", v.Class, reasonOf(v), want, m.figures(), m)
			}
			// The same behaviour read from the batches themselves, so that a
			// failure tells the gateway's behaviour from the classifier's.
			addedMean := overhead(s.Loop.EmitRecv, s.Gateway.EmitRecv, mean)
			addedP50 := overhead(s.Loop.EmitRecv, s.Gateway.EmitRecv, pct(0.5))
			switch want {
			case verdict.Buffers:
				if v.BurstSizeP50 < buffersMinBurstP50 || v.AddedMeanMs <= buffersMinAddedMeanMs {
					t.Errorf("verdict: burst size p50 %.1f, added mean %.3f ms; want bursts (p50 >= %.0f tokens) adding > %.0f ms on average\n%s",
						v.BurstSizeP50, v.AddedMeanMs, buffersMinBurstP50, buffersMinAddedMeanMs, m)
				}
				if addedMean <= buffersMinAddedMeanMs {
					t.Errorf("emit->recv mean is %+.3f ms above loopback, want > %.0f ms: the gateway did not hold tokens back\n%s", addedMean, buffersMinAddedMeanMs, m)
				}
			case verdict.Flushes:
				if v.AddedP50Ms >= flushesMaxAddedP50Ms {
					t.Errorf("verdict: added p50 %.3f ms, want < %.0f ms for a gateway that flushes\n%s", v.AddedP50Ms, flushesMaxAddedP50Ms, m)
				}
				if addedP50 >= flushesMaxAddedP50Ms {
					t.Errorf("emit->recv p50 is %+.3f ms above loopback, want < %.0f ms: the gateway did not pass tokens on at once\n%s", addedP50, flushesMaxAddedP50Ms, m)
				}
			}
		})
	}
}
