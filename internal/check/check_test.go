package check

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/advice"
	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/client"
	"github.com/sse-latency/sse-latency/internal/server"
	"github.com/sse-latency/sse-latency/internal/testutil"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// listen binds the dummy server's listener on loopback.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// check runs the check against the gateway gw builds in front of a server
// on a fresh listener, and returns its report and error. When a timing row
// says the tool fell behind its own schedule (a machine too busy for it),
// it runs the check again, up to overloadAttempts times, then skips the
// test: the tool's own overload is no verdict on the gateway, and the
// rows say so.
func check(t *testing.T, gw gateway, d api.Dialect, only ...string) (*Report, error) {
	t.Helper()
	var tlsGW func(*testing.T, string) (string, *tls.Config)
	if gw != nil {
		tlsGW = func(t *testing.T, backend string) (string, *tls.Config) { return gw(t, backend), nil }
	}
	return checkWith(t, tlsGW, Options{Client: client.Options{Dialect: d}, Only: only})
}

// checkWith is check with the options o (its Client's address and TLS
// those of the gateway gw builds, nil for the server itself).
func checkWith(t *testing.T, gw func(t *testing.T, backend string) (string, *tls.Config), o Options) (*Report, error) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		ln := listen(t)
		target := ln.Addr().String()
		var tc *tls.Config
		if gw != nil {
			target, tc = gw(t, target)
		}
		ro := o
		ro.Client.Addr, ro.Target, ro.Listener = target, target, ln
		if tc != nil {
			ro.Client.TLS, ro.Client.Scheme = tc, "https"
		}
		rep, err := Run(context.Background(), ro)
		over := ""
		for _, r := range reportRows(rep) {
			if strings.Contains(r.Evidence, Overloaded) {
				over = r.Name + ": " + r.Evidence
			}
		}
		switch {
		case over == "":
			return rep, err
		case attempt == overloadAttempts:
			t.Skipf("the machine is too busy for the timing rows, %d times: %s", attempt, over)
		}
		t.Logf("attempt %d: %s; again", attempt, over)
	}
}

// overloadAttempts bounds the runs of a check whose timing rows say the
// tool was overloaded.
const overloadAttempts = 3

func reportRows(rep *Report) []Row {
	if rep == nil {
		return nil
	}
	return rep.Rows
}

// rows returns the report's rows by name, failing the test on an error.
func rows(t *testing.T, rep *Report, err error) map[string]Row {
	t.Helper()
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	out := map[string]Row{}
	for _, r := range rep.Rows {
		out[r.Name] = r
	}
	return out
}

// TestDirect: the dummy server itself, as the target, passes every
// default check (multiplex skips: plain http without H2C), in every dialect (Chat runs all of them, the others the
// ones their events change).
func TestDirect(t *testing.T) {
	for _, d := range api.Dialects {
		var only []string
		if d != api.Chat {
			only = []string{"utf8-split", "line-endings", "sse-framing", "usage", "usage-fidelity", "terminal", "upstream-cut", "error-status"}
		}
		rep, err := check(t, nil, d, only...)
		for name, r := range rows(t, rep, err) {
			if r.Status != Pass && (name != "multiplex" || r.Status != Skip) { // plain http without H2C: no HTTP/2
				t.Errorf("%s %s: %s, %s", d, name, r.Status, r.Evidence)
			}
		}
		if want := len(Names()) - 2; only == nil && len(rep.Rows) != want {
			t.Errorf("%s: %d rows, want the %d default scenarios", d, len(rep.Rows), want)
		}
	}
}

// gateway builds an in-process gateway forwarding to backend.
type gateway func(t *testing.T, backend string) string

func relay(f relayFunc) gateway {
	return func(t *testing.T, backend string) string { return relayGateway(t, backend, clientCtx, f) }
}

// signatureAttempts bounds the runs of one case of TestGatewaySignatures.
const signatureAttempts = 3

// TestGatewaySignatures runs the flush scenario through in-process
// gateways that release the stream each in its own way, and checks that
// the row says so: PASS for the one that flushes, FAIL with the signature
// for the others, with its estimate.
func TestGatewaySignatures(t *testing.T) {
	tests := []struct {
		name   string
		gw     gateway
		status Status
		kind   verdict.SignatureKind
		size   float64 // bytes per release ±25 %, 0: not checked
		period float64 // ms ±20 %, 0: not checked
	}{
		{"flushes every event", flushingProxy, Pass, verdict.FlushPerEvent, 0, 0},
		{"16 KB buffer", relay(byteThreshold(16 << 10)), Fail, verdict.ByteThreshold, 16 << 10, 0},
		{"250 ms flush period", relay(period(250 * time.Millisecond)), Fail, verdict.TimePeriod, 0, 250},
		{"one event behind", relay(oneBehind), Fail, verdict.OneEventBehind, 0, 0},
		{"whole response", relay(whole), Fail, verdict.WholeResponse, 0, 0},
		{"dispatch bursts", relay(dispatch()), Fail, verdict.DispatchBursts, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A gateway that releases on a timer or in bursts does so
			// when the machine lets its goroutine run: on a starved CPU a
			// release comes late now and then, and a 250 ms period reads
			// as irregular bursts. The signature is judged again then, up
			// to signatureAttempts times; a gateway that does not release
			// so never gives it.
			for attempt := 1; ; attempt++ {
				rep, err := check(t, tt.gw, api.Chat, "flush")
				problem := signatureProblem(rows(t, rep, err)["flush"], tt.status, tt.kind, tt.size, tt.period)
				if problem == "" {
					break
				}
				if attempt == signatureAttempts {
					t.Fatalf("%s, %d times", problem, attempt)
				}
				t.Logf("attempt %d: %s; again", attempt, problem)
			}
		})
	}
}

// signatureProblem says what is wrong with the flush row r of
// TestGatewaySignatures against the status, signature kind, bytes per
// release (±25 %, 0: not checked) and period (ms ±20 %, 0: not checked)
// wanted, or "" when nothing is. A starved CPU can move the estimates as
// well as the kind (a late timer release straddles a pause, and the period
// goes unmeasured), so each is judged again.
func signatureProblem(r Row, status Status, kind verdict.SignatureKind, size, period float64) string {
	s := r.Signature
	switch {
	case r.Status != status || s == nil || s.Kind != kind:
		return fmt.Sprintf("flush row %s (%s), signature %+v; want %s with signature %s", r.Status, r.Evidence, s, status, kind)
	case size > 0 && (s.SizeBytes < 0.75*size || s.SizeBytes > 1.25*size):
		return fmt.Sprintf("size %.0f B, want ~%.0f (%s)", s.SizeBytes, size, r.Evidence)
	case period > 0 && (s.PeriodMs < 0.8*period || s.PeriodMs > 1.2*period):
		return fmt.Sprintf("period %.1f ms, want ~%.0f (%s)", s.PeriodMs, period, r.Evidence)
	case status == Fail && (r.Fix == "" || !strings.Contains(r.Evidence, s.Title())):
		return fmt.Sprintf("a failing row without its fix, or an evidence without the signature's name: %+v", r)
	}
	return ""
}

// TestGatewayCompression: a gateway that gzips the stream for clients that
// ask, without flushing its compressor, passes the flush row (no gzip
// asked) and fails the compression row with the compression signature.
func TestGatewayCompression(t *testing.T) {
	rep, err := check(t, relay(gzipWhenAsked), api.Chat, "flush", "compression")
	got := rows(t, rep, err)
	if r := got["flush"]; r.Status != Pass {
		t.Errorf("flush row %s: %s", r.Status, r.Evidence)
	}
	r := got["compression"]
	if r.Status != Fail || r.Signature == nil || r.Signature.Kind != verdict.Compression || r.Signature.Encoding != "gzip" {
		t.Errorf("compression row %s (%s), signature %+v; want FAIL with the gzip compression signature", r.Status, r.Evidence, r.Signature)
	}
}

// TestGatewayMishandlings: a gateway that ends its response cleanly when
// the upstream is cut hides the cut; one that keeps reading the upstream
// after its client left does not pass the cancel on; httputil's
// ReverseProxy does both right.
func TestGatewayMishandlings(t *testing.T) {
	tests := []struct {
		name     string
		gw       gateway
		row      string
		status   Status
		evidence string
		kinds    []string // the failure kinds of the row, as the run's failure summary names them (nil: not checked)
	}{
		{"ReverseProxy signals a cut", flushingProxy, "upstream-cut", Pass, "cut after 3 tokens", nil},
		{"hides an upstream cut", relay(hideCut), "upstream-cut", Fail, "ended its response cleanly after 3 of 10 tokens", []string{"no_terminal_event"}},
		{"ReverseProxy passes the cancel", flushingProxy, "cancel", Pass, "the upstream saw its client go", nil},
		{"does not propagate cancel", func(t *testing.T, backend string) string {
			return relayGateway(t, backend, detached, keepReading)
		}, "cancel", Fail, "emitted after the cancel", nil},
		{"ReverseProxy passes the usage intact", flushingProxy, "usage-fidelity", Pass, "a cache figure (5987) and a null alike", nil},
		{"zeroes null cache figures", rewriting(func(b []byte) []byte {
			return bytes.ReplaceAll(b, []byte(`"cached_tokens":null`), []byte(`"cached_tokens":0`))
		}), "usage-fidelity", Fail, "zeroed_from_null usage chunk prompt_tokens_details.cached_tokens (null -> 0)", nil},
		{"drops prompt_tokens_details", rewriting(func(b []byte) []byte {
			return regexp.MustCompile(`,"prompt_tokens_details":\{[^}]*\}`).ReplaceAll(b, nil)
		}), "usage-fidelity", Fail, "dropped usage chunk prompt_tokens_details.cached_tokens (5987 -> absent)", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := check(t, tt.gw, api.Chat, tt.row)
			r := rows(t, rep, err)[tt.row]
			if r.Status != tt.status || !strings.Contains(r.Evidence, tt.evidence) || (r.Status == Fail) == (r.Fix == "") {
				t.Errorf("%s row: %s, %q, fix %q; want %s saying %q", tt.row, r.Status, r.Evidence, r.Fix, tt.status, tt.evidence)
			}
			if tt.kinds != nil && !slices.Equal(r.FailureKinds, tt.kinds) {
				t.Errorf("%s row: failure kinds %q, want %q", tt.row, r.FailureKinds, tt.kinds)
			}
		})
	}
}

// TestWholeResponseRows: through a gateway that holds the whole response,
// the flush row fails with its signature, while the first-token and
// cancel rows say, as warnings with the same advice, that the hold is
// the flush row's finding: the first event is not held beyond the others,
// and there was nothing to cancel before the stream ended.
func TestWholeResponseRows(t *testing.T) {
	rep, err := check(t, relay(whole), api.Chat, "flush", "first-token", "cancel")
	got := rows(t, rep, err)
	if r := got["flush"]; r.Status != Fail || r.Signature == nil || r.Signature.Kind != verdict.WholeResponse {
		t.Errorf("flush row %s (%s); want FAIL, whole response", r.Status, r.Evidence)
	}
	if r := got["first-token"]; r.Status != Warn || !strings.Contains(r.Evidence, "the flush row") {
		t.Errorf("first-token row %s (%s); want WARN naming the flush row", r.Status, r.Evidence)
	}
	r := got["cancel"]
	if r.Status != Warn || !strings.Contains(r.Evidence, "cancel could not be tested: the gateway released") ||
		len(r.Advice) != 1 || r.Advice[0].Key != string(advice.WholeResponse) {
		t.Errorf("cancel row %s (%s), advice %+v; want WARN, untestable, with the whole response's advice", r.Status, r.Evidence, r.Advice)
	}
}

// rewriting is an in-process gateway that rewrites every event's payload.
func rewriting(f func([]byte) []byte) gateway {
	return func(t *testing.T, backend string) string {
		g := testutil.StartGateway(t, testutil.GatewayOptions{RewriteEvent: f})
		g.SetUpstream(backend)
		return g.Addr
	}
}

// TestNotAGateway: a target that refuses connections, redirects, does not
// speak HTTP or does not forward to the server ends the check at once with
// one clear error.
func TestNotAGateway(t *testing.T) {
	refused := testutil.RefusedAddr(t)
	redirect := httptest.NewServer(http.RedirectHandler("https://example.invalid/v1/chat/completions", http.StatusMovedPermanently))
	defer redirect.Close()
	elsewhere := httptest.NewServer(http.NotFoundHandler())
	defer elsewhere.Close()
	// Another sse-latency server: a stream, but not this check's.
	other := listen(t)
	osrv := server.New(other, server.Config{Tokens: 3})
	octx, ostop := context.WithCancel(context.Background())
	odone := make(chan error, 1)
	go func() { odone <- osrv.Serve(octx) }()
	defer func() { ostop(); <-odone }()
	notHTTP := testutil.NotHTTP(t)
	for _, tt := range []struct{ name, target, want string }{
		{"refused", refused, "cannot connect to " + refused + ": connection refused (connect(): Connection refused)"},
		{"redirect", redirect.Listener.Addr().String(), "answered with a redirect 301 to https://example.invalid/v1/chat/completions; check follows no redirect"},
		{"another service", elsewhere.Listener.Addr().String(), "404 Not Found"},
		{"not HTTP", notHTTP, "does not answer in HTTP"},
		{"another server", other.Addr().String(), "answered with a stream the server never sent"},
	} {
		start := time.Now()
		target := tt.target
		rep, err := check(t, func(*testing.T, string) string { return target }, api.Chat)
		if rep != nil || !errors.Is(err, ErrNotGateway) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: report %v, error %v; want ErrNotGateway on one line, saying %q", tt.name, rep, err, tt.want)
		}
		if d := time.Since(start); d > PreflightTimeout {
			t.Errorf("%s: the check took %v to give up", tt.name, d)
		}
	}
}

// TestSelection: --only and --skip choose the scenarios, the long ones
// run only when asked, and an unknown name is an error naming it.
func TestSelection(t *testing.T) {
	names := func(ss []scenario) string {
		var out []string
		for _, s := range ss {
			out = append(out, s.name)
		}
		return strings.Join(out, " ")
	}
	for _, tt := range []struct {
		only, skip []string
		long       bool
		want       string
	}{
		{only: []string{"cancel", "flush"}, want: "flush cancel"},
		{only: []string{"long-silence"}, want: "long-silence"},
		{skip: []string{"flush", "first-token", "large-event", "utf8-split", "line-endings", "sse-framing", "usage", "usage-fidelity", "terminal",
			"upstream-cut", "error-status", "cancel", "large-body", "keepalive"}, want: "compression multiplex"},
		{skip: []string{"flush", "first-token", "large-event", "utf8-split", "line-endings", "sse-framing", "usage", "usage-fidelity", "terminal",
			"upstream-cut", "error-status", "cancel", "large-body", "keepalive", "compression"}, want: "multiplex"},
		{only: []string{"multiplex", "flush"}, want: "flush multiplex"},
		{skip: []string{"flush", "first-token", "large-event", "utf8-split", "line-endings", "sse-framing", "usage", "usage-fidelity", "terminal",
			"upstream-cut", "error-status", "cancel", "large-body", "keepalive", "multiplex"}, long: true, want: "compression long-silence long-first-token"},
	} {
		got, err := selected(tt.only, tt.skip, tt.long)
		if err != nil || names(got) != tt.want {
			t.Errorf("selected(only %v, skip %v, long %v) = %q, %v; want %q", tt.only, tt.skip, tt.long, names(got), err, tt.want)
		}
	}
	if _, err := selected([]string{"flush", "flsh"}, nil, false); err == nil || !strings.Contains(err.Error(), `unknown check "flsh" (checks: flush, first-token`) {
		t.Errorf("an unknown name: %v", err)
	}
}
