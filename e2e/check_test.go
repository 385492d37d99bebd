//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/check"
	"github.com/sse-latency/sse-latency/internal/cli"
	"github.com/sse-latency/sse-latency/internal/gateway"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// checkLimit bounds a whole check test: the gateway's start, a check of a
// few seconds, a couple of repeats on a busy machine.
const checkLimit = 90 * time.Second

// wantCheck is each example's row that does not pass, with the status it
// has; every other row of the default battery passes. Through haproxy
// without http-no-delay the streams come in bursts (the first event with
// them); nginx ignoring X-Accel-Buffering holds a gzip-compressed stream
// until its end (without gzip it flushes).
var wantCheck = map[string]map[string]check.Status{
	"haproxy":             {"flush": check.Fail, "first-token": check.Warn},
	"haproxy-no-delay":    {},
	"nginx":               {},
	"nginx-unbuffered":    {},
	"nginx-gzip":          {},
	"nginx-gzip-buffered": {"compression": check.Fail},
	// Caddy 2.6 ends its response cleanly when its upstream is cut.
	"caddy": {"upstream-cut": check.Fail},
	// lighttpd by default holds the whole response (the flush row; the
	// first token is as late as the rest, and nothing can be cancelled
	// before the end), and then frames it whole: a cut upstream ends as a
	// complete response.
	"lighttpd":           {"flush": check.Fail, "first-token": check.Warn, "cancel": check.Warn, "upstream-cut": check.Fail},
	"lighttpd-streaming": {},
	"apache":             {},
	"apache-deflate":     {},
}

// intermittent is each example's row that the gateway itself fails now
// and then, with the words of that failure's evidence: such a failure is
// logged and the check run again (up to checkAttempts times), and only a
// gateway that fails it every time fails the test. Caddy (2.6, built with
// an older Go) now and then closes a kept upstream connection under the
// next request after a cancelled one: its log says "reading from backend:
// use of closed network connection" — its own close — and it cuts the
// client's stream; a quarter of the runs of the race-built test binary
// show it here, almost none of a plain build.
//
// The timing rows are intermittent alike for every gateway (timingRows).
var intermittent = map[string]map[string]string{
	"caddy": {"keepalive": "connection closed before"},
}

// timingRows are the rows judged on how soon tokens arrive. A gateway
// process that a busy machine leaves off the CPU for tens of milliseconds
// passes on at once what piled up meanwhile, and these rows read it as the
// gateway's: at a load of 10 to 14 on 2 CPUs, Apache's worker as dispatch
// bursts or a short time period in the flush row and, through mod_deflate,
// in the compression row (1 check of 3, and 1 of 7); nginx's as bursts;
// Caddy's first token held 53.8 ms; a first token 1.8 s after a 1 MB body
// through haproxy-no-delay.cfg and lighttpd-streaming.conf (0.34 s
// straight to the server). Where such a row should PASS and does not, the
// check runs again (up to checkAttempts times): a gateway that buffers
// fails it every time.
var timingRows = map[string]bool{"flush": true, "first-token": true, "large-body": true, "compression": true}

// checkAttempts bounds the checks of one gateway that say the tool itself
// fell behind (check.Overloaded): on a machine too busy for the timing
// rows, the test skips rather than blame the gateway.
const checkAttempts = 3

// TestCheckGateways runs `sse-latency check` through each example
// configuration and asserts every row: the status wantCheck gives it, or
// PASS (SKIP for multiplex: plain http without --h2c); a failing flush or compression row names a signature other than
// flushing (compression for the gzip one); the JSON document says the
// same as the text.
func TestCheckGateways(t *testing.T) {
	for _, ex := range Examples {
		t.Run(ex.Name, func(t *testing.T) {
			checkGoroutines(t)
			bin := requireProgram(t, ex.Gateway)
			want, ok := wantCheck[ex.Name]
			if !ok {
				t.Fatalf("no expected rows for %s", ex.Name)
			}
			ctx, cancel := context.WithTimeout(t.Context(), checkLimit)
			defer cancel()
			rep, out := runCheckThrough(t, ctx, ex, bin)
			t.Logf("%s:\n%s", ex.File, out)
			if len(rep.Rows) != len(check.Names())-2 {
				t.Fatalf("%d rows, want the %d default checks\n%s", len(rep.Rows), len(check.Names())-2, out)
			}
			for _, r := range rep.Rows {
				status, listed := want[r.Name]
				switch {
				case !listed && r.Name == "multiplex":
					// The examples are plain http and the check runs without
					// --h2c: no HTTP/2 to multiplex (the row says so).
					status = check.Skip
					if !strings.Contains(r.Evidence, "--h2c") || r.Requests != 0 {
						t.Errorf("multiplex: SKIP without the reason, or with requests: %+v", r)
					}
				case !listed:
					status = check.Pass
				}
				if r.Name == "first-token" && status == check.Pass && r.Status == check.Warn && strings.Contains(r.Evidence, "held 10 to 50 ms") {
					// The WARN band is tens of milliseconds: a busy machine
					// wakes a gateway's worker that late now and then.
					t.Logf("first-token: %s (a WARN, not a FAIL: the machine or the gateway)", r.Evidence)
					continue
				}
				if r.Status != status {
					t.Errorf("%s: %s (%s), want %s", r.Name, r.Status, r.Evidence, status)
				}
				if r.Status == check.Fail && r.Fix == "" {
					t.Errorf("%s fails without a fix", r.Name)
				}
			}
			var advice []gateway.Advice
			for _, r := range rep.Rows {
				advice = append(advice, r.Advice...)
			}
			checkIdentity(t, ex, rep.Gateway, advice, "check")
			if !strings.Contains(out, "gateway: "+rep.Gateway.String()) {
				t.Errorf("the card does not name the gateway (%s)\n%s", rep.Gateway, out)
			}
			for _, r := range rep.Rows {
				if (r.Name == "flush" || r.Name == "compression") && r.Status == check.Fail {
					s := r.Signature
					if s == nil || s.Kind == verdict.FlushPerEvent || !strings.Contains(r.Evidence, s.Title()) {
						t.Errorf("%s fails without naming a buffering signature: %+v", r.Name, r)
					}
					if r.Name == "compression" && s != nil && (s.Kind != verdict.Compression || s.Encoding != "gzip") {
						t.Errorf("compression fails with the signature %s (%s), want gzip compression", s.Kind, s.Encoding)
					}
				}
			}
		})
	}
}

// runCheckThrough starts ex's gateway in front of a listener bound for the
// dummy server and runs the check through it (again, up to checkAttempts
// times, while the tool says it fell behind, a row of intermittent fails
// in its known way, or one of timingRows does not pass where it should). It returns the report read
// back from --json and the text printed.
func runCheckThrough(t *testing.T, ctx context.Context, ex Example, bin string) (*check.Report, string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		backend, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		gw := launchFor(t, ctx, ex, bin, backend)
		jsonPath := filepath.Join(t.TempDir(), "check.json")
		args := []string{"-t", gw.Addr, "-L", backend.Addr().String(), "--json", jsonPath}
		var stdout, stderr bytes.Buffer
		code := cli.CheckOn(ctx, backend, args, &stdout, &stderr)
		out := stdout.String() + stderr.String()
		gw.Stop(StopGrace)
		b, err := os.ReadFile(jsonPath)
		var rep check.Report
		if err != nil || json.Unmarshal(b, &rep) != nil {
			t.Fatalf("sse-latency check %s: exit %d, no JSON document (%v)\n%s\n--- gateway log ---\n%s",
				strings.Join(args, " "), code, err, out, gw.Log())
		}
		if wantCode := map[bool]int{true: cli.ExitFailure, false: cli.ExitOK}[rep.Failed()]; code != wantCode {
			t.Errorf("exit %d, want %d for a check with %d FAIL\n%s", code, wantCode, rep.Count(check.Fail), out)
		}
		over, flaky := "", ""
		for _, r := range rep.Rows {
			if strings.Contains(r.Evidence, check.Overloaded) {
				over = r.Name + ": " + r.Evidence
			}
			if words, ok := intermittent[ex.Name][r.Name]; ok && r.Status == check.Fail && strings.Contains(r.Evidence, words) {
				flaky = r.Name + ": " + r.Evidence
			}
			if _, listed := wantCheck[ex.Name][r.Name]; !listed && timingRows[r.Name] && r.Status != check.Pass {
				flaky = r.Name + ": " + r.Evidence
			}
		}
		switch {
		case over == "" && (flaky == "" || attempt == checkAttempts):
			return &rep, out // a gateway that fails its intermittent row every time is judged on it
		case attempt == checkAttempts:
			t.Skipf("the machine is too busy for the timing rows, %d times: %s", attempt, over)
		case over != "":
			t.Logf("attempt %d: %s; again", attempt, over)
		default:
			t.Logf("attempt %d: %s fails now and then through %s (see intermittent and timingRows); again", attempt, flaky, ex.Name)
		}
	}
}

// launchFor starts ex's gateway, configured for a free port of its own and
// for backend's address — a listener the test has bound, so that nothing
// else can take it before the check serves on it — and stops it when the
// test ends. A gateway that exits before it accepts connections (its port
// taken meanwhile) is started once more on another.
func launchFor(t *testing.T, ctx context.Context, ex Example, bin string, backend net.Listener) *Launched {
	t.Helper()
	dir := t.TempDir()
	example := exampleConfig(t, ex, dir)
	var errs []string
	for attempt := 1; attempt <= 2; attempt++ {
		ports, err := FreePorts(1)
		if err != nil {
			t.Fatal(err)
		}
		conf, err := ex.Gateway.render(example, ports[0], backend.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		confPath := filepath.Join(dir, ex.Gateway.ConfName)
		if err := os.WriteFile(confPath, conf, 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := Start(bin, ex.Gateway.RunArgs(confPath, dir), envOf(ex.Gateway, dir), dir, filepath.Join(dir, fmt.Sprintf("gateway-%d.log", attempt)))
		if err != nil {
			t.Fatal(err)
		}
		l := &Launched{Process: p, Addr: ports[0], BackendAddr: backend.Addr().String(), ConfPath: confPath}
		t.Cleanup(func() { l.Stop(StopGrace) })
		wctx, cancel := context.WithTimeout(ctx, ListenTimeout)
		err = p.WaitListening(wctx, l.Addr)
		cancel()
		if err == nil {
			return l
		}
		l.Stop(StopGrace)
		errs = append(errs, fmt.Sprintf("attempt %d: %s: %v\n--- gateway log ---\n%s", attempt, l.Cmdline, err, l.Log()))
	}
	t.Fatalf("starting %s with %s:\n%s", ex.Gateway.Name, ex.File, strings.Join(errs, "\n"))
	return nil
}
