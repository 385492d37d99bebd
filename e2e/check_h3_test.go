//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/check"
	"github.com/sse-latency/sse-latency/internal/cli"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// TestCheckHTTP3Multiplex runs `sse-latency check --http3 --only
// multiplex` through Caddy serving HTTP/3 (examples/caddy/Caddyfile-h3,
// its certificate trusted by --cacert, HTTP/1.1 to the dummy server): the
// row does not SKIP — its streams are bidirectional streams of one QUIC
// connection. With the default 8 streams it PASSes: Caddy forwards them
// at once, each flushed. With 120 (--streams-per-conn) it WARNs naming
// the stream limit: Caddy 2.6 leaves quic-go's default of 100 incoming
// streams per connection (MAX_STREAMS), so the streams beyond it wait on
// the one connection until others end. Each check runs again (up to
// checkAttempts times) while the tool says it fell behind its own
// schedule, and skips if it always does; the PASS is checked again while
// the streams' flush verdict (a timing judgement) fails.
func TestCheckHTTP3Multiplex(t *testing.T) {
	ex := transportExample(t, "caddy-h3")
	bin := requireProgram(t, ex.Gateway)
	for _, tt := range []struct {
		streams int
		status  check.Status
		says    []string
	}{
		{check.MuxStreams, check.Pass, []string{"8 streams at once on one h3 connection, each flushed"}},
		{120, check.Warn, []string{"was sent only after stream", "the gateway allows fewer than 120 streams at once on one connection, at most ",
			"(its MAX_STREAMS: QUIC has no SETTINGS"}},
	} {
		t.Run(fmt.Sprint(tt.streams), func(t *testing.T) {
			checkGoroutines(t)
			ctx, cancel := context.WithTimeout(t.Context(), checkLimit)
			defer cancel()
			r, out := checkH3Multiplex(t, ctx, ex, bin, tt.streams, tt.status == check.Pass)
			checkMuxRow(t, fmt.Sprintf("multiplex over HTTP/3 through Caddy, %d streams", tt.streams), r, out, tt.status, tt.says)
			if r.Requests != tt.streams {
				t.Errorf("multiplex over HTTP/3: %d requests, want %d", r.Requests, tt.streams)
			}
		})
	}
}

// checkMuxRow checks the multiplex row r of a run (what names it, out is
// what it printed): its status, every text of says in its evidence, and a
// fix unless it passed.
func checkMuxRow(t *testing.T, what string, r check.Row, out string, status check.Status, says []string) {
	t.Helper()
	if r.Status != status {
		t.Errorf("%s: %s %q; want %s\n%s", what, r.Status, r.Evidence, status, out)
	}
	for _, s := range says {
		if !strings.Contains(r.Evidence, s) {
			t.Errorf("%s: the evidence %q does not say %q", what, r.Evidence, s)
		}
	}
	if r.Status != check.Pass && r.Fix == "" {
		t.Errorf("%s: a %s without a fix", what, r.Status)
	}
}

// checkH3Multiplex runs the multiplex row of n streams over HTTP/3
// through ex's gateway (checkMultiplex), its certificate trusted by
// --cacert.
func checkH3Multiplex(t *testing.T, ctx context.Context, ex Example, bin string, n int, pass bool) (check.Row, string) {
	t.Helper()
	return checkMultiplex(t, ctx, ex, bin, n, pass, func(gw *Launched) []string {
		return []string{"--http3", "--cacert", filepath.Join(filepath.Dir(gw.ConfPath), testCertName)}
	})
}

// checkMultiplex runs the multiplex row of n streams through ex's
// gateway at https://, with the arguments transport gives for the
// launched gateway, the gateway started in front of a listener bound for
// the dummy server (again, up to checkAttempts times, while the tool says it fell
// behind, or, when pass, while the streams' flush verdict — a timing
// row's, as timingRows — is a FAIL: a busy machine's stalls); it returns
// the row read back from --json and the text printed, the gateway's log
// after it.
func checkMultiplex(t *testing.T, ctx context.Context, ex Example, bin string, n int, pass bool, transport func(gw *Launched) []string) (check.Row, string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		backend := testutil.Listen(t)
		gw := launchFor(t, ctx, ex, bin, backend)
		jsonPath := filepath.Join(t.TempDir(), "check.json")
		args := append([]string{"-t", "https://" + gw.Addr, "-L", backend.Addr().String()}, transport(gw)...)
		args = append(args, "--only", "multiplex", "--streams-per-conn", fmt.Sprint(n), "--json", jsonPath)
		var stdout, stderr bytes.Buffer
		code := cli.CheckOn(ctx, backend, args, &stdout, &stderr)
		gw.Stop(StopGrace)
		out := fmt.Sprintf("sse-latency check %s: exit %d\n%s%s--- gateway log ---\n%s", strings.Join(args, " "), code, stdout.String(), stderr.String(), gw.Log())
		var rep check.Report
		b, err := os.ReadFile(jsonPath)
		if err != nil || json.Unmarshal(b, &rep) != nil || len(rep.Rows) != 1 || rep.Rows[0].Name != "multiplex" {
			t.Fatalf("no JSON document of the multiplex row (%v)\n%s", err, out)
		}
		r := rep.Rows[0]
		if wantCode := map[bool]int{true: cli.ExitFailure, false: cli.ExitOK}[rep.Failed()]; code != wantCode {
			t.Errorf("exit %d, want %d for a check with %d FAIL\n%s", code, wantCode, rep.Count(check.Fail), out)
		}
		t.Logf("%s: %s %s", ex.File, r.Status, r.Evidence)
		held := pass && r.Status == check.Fail && strings.HasPrefix(r.Evidence, "a stream's tokens held")
		if !strings.Contains(r.Evidence, check.Overloaded) && (!held || attempt == checkAttempts) {
			return r, out
		}
		if attempt == checkAttempts && !held {
			t.Skipf("the machine is too busy for the multiplex row, %d times: %s", attempt, r.Evidence)
		}
		t.Logf("attempt %d: %s; again", attempt, r.Evidence)
	}
}
