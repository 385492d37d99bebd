//go:build linux

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/cli"
	"github.com/sse-latency/sse-latency/internal/failures"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// The failure tests make gateways fail under a run: haproxy killed, or
// stopped, once tokens flow through it; nginx whose upstream is gone; a
// target where nothing listens. Each asserts the failure summary (the
// kinds, their counts and times) and what the report says of it.

// measureWhile runs measure on a goroutine with a counter of the gateway
// batch's tokens as they arrive (cli.Options.Received), so that the test
// can act on the gateway mid-stream; the measurement comes on the channel.
func measureWhile(ctx context.Context, ex Example, gw *Launched, received *atomic.Int64, args ...string) <-chan *measurement {
	done := make(chan *measurement, 1)
	go func() {
		m := &measurement{ex: ex, gw: gw, args: append([]string{"-L", gw.BackendAddr, "-t", gw.Addr}, args...)}
		var stdout, stderr bytes.Buffer
		start := time.Now()
		m.code, m.sum = cli.MeasureWith(ctx, cli.Options{Listener: gw.Backend, Received: received}, m.args, &stdout, &stderr)
		m.elapsed = time.Since(start)
		m.stdout, m.stderr = stdout.String(), stderr.String()
		done <- m
	}()
	return done
}

// awaitTokens waits until n tokens of the run went through the gateway;
// a run that ends first fails the test.
func awaitTokens(t *testing.T, received *atomic.Int64, n int64, done <-chan *measurement) {
	t.Helper()
	var early *measurement
	ok := testutil.Poll(func() bool {
		select {
		case early = <-done:
			return true
		default:
		}
		return received.Load() >= n
	}, testutil.AwaitBound)
	switch {
	case early != nil:
		t.Fatalf("the run ended after %d of the %d tokens awaited\n%s", received.Load(), n, early)
	case !ok:
		t.Fatalf("%d of %d tokens through the gateway after %v", received.Load(), n, testutil.AwaitBound)
	}
}

// signalMidStream runs requests requests of 2 ms tokens through haproxy
// (http-no-delay), args added, and sends sig to haproxy once 200 tokens
// have arrived (then SIGCONT, for a SIGSTOP); the run must exit 1 with
// every request failed.
func signalMidStream(t *testing.T, sig syscall.Signal, requests int, args ...string) *measurement {
	t.Helper()
	ex := phaseExample(t, "haproxy-no-delay")
	bin := requireProgram(t, ex.Gateway)
	ctx := t.Context()
	gw := launch(t, ctx, ex, bin)
	t.Cleanup(func() { gw.Signal(syscall.SIGCONT) }) // a stopped gateway, before the stop launch registered
	var received atomic.Int64
	args = append([]string{"-r", fmt.Sprint(requests), "-c", "4", "-d", "2", "-l", "-q"}, args...)
	done := measureWhile(ctx, ex, gw, &received, args...)
	awaitTokens(t, &received, 200, done)
	if err := gw.Signal(sig); err != nil {
		t.Fatalf("signal %v to haproxy: %v", sig, err)
	}
	m := <-done
	gw.Signal(syscall.SIGCONT)
	if m.code != cli.ExitFailure || m.sum == nil || m.sum.Gateway.Failed != requests {
		t.Fatalf("want exit 1 and all %d requests failed\n%s", requests, m)
	}
	return m
}

// group returns the failure summary's group of kind k (and status, for
// http_status), nil when there is none.
func group(fs *failures.Summary, k failures.Kind, status int) *failures.GroupSummary {
	if fs == nil {
		return nil
	}
	for i := range fs.Groups {
		if g := &fs.Groups[i]; g.Kind == k.String() && g.Status == status {
			return g
		}
	}
	return nil
}

// verdictLine returns the first line of the verdict block.
func verdictLine(stdout string) string {
	_, after, _ := strings.Cut(stdout, "=== verdict ===\n")
	line, _, _ := strings.Cut(after, "\n")
	return line
}

// TestFailureKilledGateway kills haproxy with SIGKILL once 200 tokens of 4
// streams of 4 s have arrived: the streams are cut mid-stream (a reset or
// a close, the kernel decides), all at once, with the tokens they had —
// on a busy machine one of the 4 may not have had its head yet, and is cut
// before the response —, and the 4 requests after find nothing listening
// (or, as haproxy dies, a connection cut before the response, or a
// connect the dying listener reset: ECONNRESET, a connect error, seen
// once at a load of 13). The
// report, with -q, leads its verdict with the failure, names the kinds
// with their times in the failures block, and counts the tokens the
// failed requests received.
func TestFailureKilledGateway(t *testing.T) {
	checkGoroutines(t)
	m := signalMidStream(t, syscall.SIGKILL, 8, "-n", "2000", "-w", "20000")
	fs := m.sum.Run.Gateway().FailureSummary
	cut := group(fs, failures.ResetMidStream, 0)
	if cut == nil {
		cut = group(fs, failures.ClosedMidStream, 0)
	}
	if cut == nil || cut.Count > 4 || cut.Tokens.Max == 0 || cut.FirstNs == 0 || cut.LastNs-cut.FirstNs > failures.TogetherNs {
		t.Fatalf("failure summary %+v: want the streams in flight cut mid-stream together, after tokens\n%s", fs, m)
	}
	other := 0
	for _, k := range []failures.Kind{failures.Refused, failures.ConnectError, failures.ResetBeforeResponse, failures.ClosedBeforeResponse} {
		if g := group(fs, k, 0); g != nil {
			other += g.Count
		}
	}
	if cut.Count+other != 8 {
		t.Errorf("failure summary %+v: want the other requests refused (or cut before a response, as haproxy died)\n%s", fs, m)
	}
	title := regexp.QuoteMeta(cut.Title)
	for _, want := range []string{
		`(?m)^=== failures ===\ngateway +8 of 8 requests failed`,
		`(?m)^  ` + title + ` +\d +\d+\.\d%  first \+\d+\.\d{3} s  last \+\d+\.\d{3} s  after \d+ tokens p50 \(max \d+\), `,
		`(?m)^gateway failed 8 of 8 requests: .*` + title + ` after \S+ m?s p50 \(\d+ tokens p50\) \(\d\)`,
		`(?m)^gateway +\d+ tokens \(\d+ of them in failed requests\)`,
	} {
		if !regexp.MustCompile(want).MatchString(m.stdout) {
			t.Errorf("the report lacks %s\n%s", want, m)
		}
	}
	if line := verdictLine(m.stdout); !strings.HasPrefix(line, "gateway failed 8 of 8 requests: ") {
		t.Errorf("the verdict's first line is %q: want the failure", line)
	}
	if group(fs, failures.Refused, 0) != nil && !strings.Contains(m.stdout, "  - connection refused: nothing accepted the connection") {
		t.Errorf("the report lacks the advice for the refused requests\n%s", m)
	}
	if cut.Count >= 2 && !strings.Contains(m.stdout, "  - "+cut.Title+": every stream in flight was cut at once: the gateway went away") {
		t.Errorf("the report lacks the advice for streams cut together\n%s", m)
	}
	t.Logf("haproxy killed once 200 tokens had arrived: %s", verdictLine(m.stdout))
}

// TestFailureStalledGateway stops haproxy (SIGSTOP) once 200 tokens of 4
// streams of 2 s have arrived: each ends at the per-request timeout of 4 s
// (-w), mid-stream (on a busy machine one may have had no token yet).
func TestFailureStalledGateway(t *testing.T) {
	checkGoroutines(t)
	m := signalMidStream(t, syscall.SIGSTOP, 4, "-n", "1000", "-w", "4000")
	fs := m.sum.Run.Gateway().FailureSummary
	g := group(fs, failures.RequestTimeout, 0)
	if g == nil || g.Count != 4 || g.Tokens.Max == 0 || g.AgeNs.Min < 4_000_000_000 {
		t.Fatalf("failure summary %+v: want the 4 streams ended by the 4 s -w, after tokens\n%s", fs, m)
	}
	for _, want := range []string{"per-request timeout (-w)", "e.g. timeout after 4000ms", "requests outlived -w"} {
		if !strings.Contains(m.stdout, want) {
			t.Errorf("the report lacks %q\n%s", want, m)
		}
	}
	if line := verdictLine(m.stdout); !regexp.MustCompile(`^gateway failed 4 of 4 requests: per-request timeout \(-w\) after 4\.\d s p50 \(\d+ tokens p50\)$`).MatchString(line) {
		t.Errorf("the verdict's first line is %q: want the timeout, its age and tokens", line)
	}
}

// TestFailureUpstreamGone runs through nginx whose upstream refuses
// connections: nginx answers 502, and the summary groups the requests as
// HTTP 502 with nginx's own error page, its tags stripped, as the example.
func TestFailureUpstreamGone(t *testing.T) {
	checkGoroutines(t)
	ex := phaseExample(t, "nginx")
	bin := requireProgram(t, ex.Gateway)
	ctx := t.Context()
	dir := t.TempDir()
	gw, err := LaunchTo(ctx, ex.Gateway, bin, exampleConfig(t, ex, dir), dir, testutil.RefusedAddr(t))
	if err != nil {
		t.Fatalf("starting nginx: %v", err)
	}
	t.Cleanup(func() {
		if err := gw.Stop(StopGrace); err != nil {
			t.Errorf("stopping nginx: %v", err)
		}
	})
	ln := testutil.Listen(t)
	gw.BackendAddr, gw.Backend = ln.Addr().String(), ln // sse-latency's own server, which nginx does not reach
	m := measure(ctx, ex, gw, "-r", "3", "-c", "3", "-n", "10", "-l", "-w", "20000", "-q")
	if m.code != cli.ExitFailure || m.sum == nil || m.sum.Gateway.Failed != 3 {
		t.Fatalf("want exit 1 and all 3 requests failed\n%s", m)
	}
	g := group(m.sum.Run.Gateway().FailureSummary, failures.HTTPStatus, 502)
	if g == nil || g.Count != 3 || g.Title != "HTTP 502 Bad Gateway" || !strings.Contains(g.Example, "502 Bad Gateway") ||
		!strings.Contains(g.Example, "nginx") || strings.ContainsAny(g.Example, "<>") {
		t.Fatalf("failure summary %+v: want 3 HTTP 502 with nginx's page, without its tags, as the example\n%s", m.sum.Run.Gateway().FailureSummary, m)
	}
	if line := verdictLine(m.stdout); line != "gateway failed 3 of 3 requests: HTTP 502 Bad Gateway" {
		t.Errorf("the verdict's first line is %q", line)
	}
	if !strings.Contains(m.stdout, "  - HTTP 502 Bad Gateway: bad gateway: the gateway could not reach its upstream") {
		t.Errorf("the report lacks the advice for a 502\n%s", m)
	}
}

// TestFailureRefused runs against a port where nothing listens, with -q,
// --json and --html: every request is "connection refused", in the text
// (failures block and verdict), the document and the page; with --compat
// the output is the reference's, without the failures block.
func TestFailureRefused(t *testing.T) {
	checkGoroutines(t)
	target := testutil.RefusedAddr(t)
	dir := t.TempDir()
	jsonPath, htmlPath := filepath.Join(dir, "run.json"), filepath.Join(dir, "run.html")
	run := func(extra ...string) (int, string) {
		ln := testutil.Listen(t)
		args := append([]string{"-L", ln.Addr().String(), "-t", target, "-r", "4", "-c", "2", "-n", "10", "-l", "-q"}, extra...)
		var stdout, stderr bytes.Buffer
		code, _ := cli.MeasureOn(t.Context(), ln, args, &stdout, &stderr)
		return code, stdout.String()
	}
	code, out := run("--json", jsonPath, "--html", htmlPath)
	if code != cli.ExitFailure {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{
		"=== failures ===\ngateway    4 of 4 requests failed (times from the batch's start)\n  connection refused  4  100.0%  first +",
		"      e.g. connect(): Connection refused\n",
		"=== verdict ===\ngateway failed 4 of 4 requests: connection refused\nfailure advice:\n  - connection refused: nothing accepted the connection",
		"verdict: unknown — no request completed, nor received a token: nothing to judge\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q\n%s", want, out)
		}
	}
	js, err := os.ReadFile(jsonPath)
	if err != nil || !bytes.Contains(js, []byte(`"kind": "connection_refused"`)) || !bytes.Contains(js, []byte(`"example": "connect(): Connection refused"`)) {
		t.Errorf("the JSON document (%v) lacks the refused group:\n%s", err, js)
	}
	page, err := os.ReadFile(htmlPath)
	if err != nil || !bytes.Contains(page, []byte(`<p class="headline">gateway failed 4 of 4 requests: connection refused</p>`)) ||
		!bytes.Contains(page, []byte(`<td class="text">connection refused</td><td>4</td><td>100.0%</td>`)) {
		t.Errorf("the HTML page (%v) lacks the failure headline or the refused group", err)
	}

	code, compat := run("--compat")
	if code != cli.ExitFailure || strings.Contains(compat, "verdict") ||
		!strings.HasSuffix(compat, "=== gateway: 4 requests, 0 ok, 4 failed, 0 tokens ===\nTTFT (client)            n=0\nTTFT emit->recv(1st)     n=0\n"+
			"inter-token (client)     n=0\nemit->recv (tokens)      n=0\n") {
		t.Errorf("--compat printed more than the reference's blocks (exit %d):\n%s", code, compat)
	}
	if slices.Contains(strings.Split(compat, "\n"), "=== failures ===") {
		t.Errorf("--compat printed the failures block:\n%s", compat)
	}
}
