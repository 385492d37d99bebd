package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/control"
	"github.com/sse-latency/sse-latency/internal/control/controltest"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/rundoc"
	"github.com/sse-latency/sse-latency/internal/server"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// crossToken guards the control endpoints of these tests.
const crossToken = "cross-host-test-token"

// remoteServer is a dummy server and its control endpoints, as
// `sse-latency -L … --control …` runs them on another host, here in the
// test's process.
type remoteServer struct {
	addr, control string // the model API's address; the control endpoint's URL
}

func startRemoteServer(t *testing.T) remoteServer {
	t.Helper()
	reg := emission.New()
	srv, err := server.Listen("127.0.0.1:0", server.Config{Tokens: 1000, DelayMs: 5, Emissions: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return remoteServer{addr: srv.Addr().String(), control: controltest.Serve(t, reg, crossToken, nil)}
}

// TestRequestLeg measures through a gateway that holds each request 20 ms
// before forwarding it, with the server in this process and on "another
// host" (its control endpoints): the request leg shows the 20 ms, TTFT
// includes them, and emit->recv does not.
//
// "Does not" without an upper threshold on a shared machine (where a
// token's delay alone can exceed 20 ms under load): every first token was
// emitted after its request's hold, so its emit->recv is at most its TTFT
// less the hold, and the largest first-token emit->recv is at most the
// largest TTFT less the hold. A hold counted in emit->recv (an emission
// time from before the request reached the server) breaks that whatever
// the load.
//
// The client stamps a request's send when its write returns: a client
// descheduled right after the write (a loaded machine) stamps it late by
// as much, and its leg and TTFT then read that much under the hold (seen:
// 1.6 ms, with two busy loops on 2 vCPUs; 7.4 ms cross host with two busy
// loops and two race-built test suites). The lower bounds allow for 10 ms
// of it; a request leg that missed the hold would be some 0.1 ms.
func TestRequestLeg(t *testing.T) {
	const hold = 20 * time.Millisecond
	const stampSlack = 10 * time.Millisecond
	for _, crossHost := range []bool{false, true} {
		g := testutil.StartGateway(t, testutil.GatewayOptions{Hold: hold})
		args := []string{"-t", g.Addr, "-r", "4", "-c", "2", "-n", "20", "-d", "1", "-q", "-l"}
		stderr := &watched{on: func(p []byte) { g.UpstreamFrom(string(p)) }}
		if crossHost {
			rs := startRemoteServer(t)
			g.SetUpstream(rs.addr)
			args = append(args, "--server", rs.control, "--control-token", crossToken)
		} else {
			args = append(args, "-L", "127.0.0.1:0")
		}
		var stdout bytes.Buffer
		code, sum := Measure(context.Background(), args, &stdout, stderr)
		if code != ExitOK || sum == nil {
			t.Fatalf("cross host %v: exit %d\nstdout:\n%s\nstderr:\n%s", crossHost, code, stdout.String(), stderr.String())
		}
		gw := sum.Gateway
		leg, msOf := gw.RequestLeg, func(ns int64) float64 { return float64(ns) / 1e6 }
		if leg.N() != 4 || leg.Min() < int64(hold-stampSlack) {
			t.Errorf("cross host %v: request leg n=%d min %.3f ms, want 4 samples of the %v hold (less %v of stamping slack)",
				crossHost, leg.N(), msOf(leg.Min()), hold, stampSlack)
		}
		if gw.TTFT.Min() < int64(hold-stampSlack) {
			t.Errorf("cross host %v: TTFT min %.3f ms, want the %v the gateway held the request (less %v of stamping slack)",
				crossHost, msOf(gw.TTFT.Min()), hold, stampSlack)
		}
		// The hold is on the request path only: a token does not wait for it.
		if f := gw.FirstEmitRecv; f.N() != 4 || gw.EmitRecv.N() == 0 || f.Max() > gw.TTFT.Max()-int64(hold-stampSlack) {
			t.Errorf("cross host %v: first-token emit->recv max %.3f ms (n=%d), TTFT max %.3f ms: want the emit->recv at most the TTFT less the %v hold",
				crossHost, msOf(f.Max()), f.N(), msOf(gw.TTFT.Max()), hold)
		}
		for _, want := range []string{"=== request leg (client sent -> server received) ===\ngateway    n=4  mean="} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("cross host %v: stdout lacks %q:\n%s", crossHost, want, stdout.String())
			}
		}
		if strings.Contains(stdout.String(), "=== clock") != crossHost {
			t.Errorf("cross host %v: clock block present %v:\n%s", crossHost, !crossHost, stdout.String())
		}
	}
}

// TestCrossHostByContent measures across hosts through a gateway that
// re-serialises every chunk (pi_ts gone): every token is measured by
// content from the server's records, fetched over the control endpoint;
// the document records the clock and the server, and no listen address.
func TestCrossHostByContent(t *testing.T) {
	rs := startRemoteServer(t)
	gw := startRewritingGateway(t, rs.addr, api.ChatPath, true, keepChat, func() rewriter { return reserialise{} })
	const requests, tokens = 5, 40
	args := []string{"-t", gw, "--server", rs.control, "--control-token", crossToken,
		"-r", "5", "-c", "3", "-n", "40", "-d", "1", "-T", "3", "-q", "--json", "-"}
	var stdout, stderr bytes.Buffer
	code, sum := Measure(context.Background(), args, &stdout, &stderr)
	if code != ExitOK || sum == nil {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	g := sum.Gateway
	if g.OK != requests || g.ByContent != requests*tokens || g.ByPiTs != 0 || g.RequestLeg.N() != requests {
		t.Errorf("%d ok, %d by content, %d by pi_ts, %d request legs; want %d ok, all %d tokens by content, %d legs",
			g.OK, g.ByContent, g.ByPiTs, g.RequestLeg.N(), requests, requests*tokens, requests)
	}
	// -T 3 was asked of the remote server with a hint: TTFT includes it,
	// from the server's receipt of the request. The client's clock starts
	// when its write returns, which on a busy machine can come after the
	// server read the request (a negative request leg, in the server's
	// clock converted within the bound): for every request TTFT >= 3 ms
	// + min(0, its leg) - the bound, so the smallest TTFT >= 3 ms + the
	// smallest leg (when negative) - the bound.
	floor := 3e6 + min(0, float64(g.RequestLeg.Min()))
	if c := sum.Run.Clock; c != nil {
		floor -= c.BoundMs * 1e6
	}
	if float64(g.TTFT.Min()) < floor {
		t.Errorf("TTFT min %.3f ms, request leg min %.3f ms: want at least the 3 ms think time asked of the server, less a negative leg and the clock's bound (%.3f ms)",
			float64(g.TTFT.Min())/1e6, float64(g.RequestLeg.Min())/1e6, floor/1e6)
	}
	d, err := rundoc.ReadJSON(&stdout)
	if err != nil {
		t.Fatal(err)
	}
	if d.Clock == nil || d.Clock.Estimates < 1 || d.Config.Server != rs.control || d.Config.Listen != "" || !d.Config.NoLoopback || d.Loop() != nil {
		t.Errorf("document: clock %+v, server %q, listen %q, no_loopback %v, loopback batch %v",
			d.Clock, d.Config.Server, d.Config.Listen, d.Config.NoLoopback, d.Loop() != nil)
	}
	js, _ := json.Marshal(d.Config)
	if strings.Contains(string(js), crossToken) || strings.Contains(stderr.String(), crossToken) {
		t.Error("the control token shows in the document or on stderr")
	}
	for _, want := range []string{"server on another host, control endpoint " + rs.control + ": clock offset ",
		"note: the server is on another host (--server): no loopback calibration"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

// TestCrossHostErrors: the flags of the control plane are checked before
// anything runs, and a wrong token or an unreachable server fails the run
// with a message that says so.
func TestCrossHostErrors(t *testing.T) {
	rs := startRemoteServer(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--server", rs.control, "--control-token", "x"}, "--server measures through a gateway: give -t"},
		{[]string{"-t", "127.0.0.1:1", "--server", rs.control}, "--server needs --control-token"},
		{[]string{"-t", "127.0.0.1:1", "--server", rs.control, "--control-token", "x", "--control", ":0"}, "--control and --server exclude each other"},
		{[]string{"-t", "127.0.0.1:1", "--server", rs.control, "--control-token", "x", "-L", ":9"}, "--listen sets up the dummy server, which runs on the other host"},
		{[]string{"-t", "127.0.0.1:1", "--server", rs.control, "--control-token", "x", "--tls-self-signed"}, "--tls-self-signed sets up the dummy server"},
		{[]string{"-t", "127.0.0.1:1", "--server", "https://x:1", "--control-token", "x"}, "--server: \"https://x:1\": want http://host:port"},
		{[]string{"-t", "127.0.0.1:1", "--server", "http://x", "--control-token", "x"}, "--server: "},
		{[]string{"--control", "nonsense"}, "--control: bad port"},
		{[]string{"-t", "127.0.0.1:1", "--server", rs.control, "--control-token", "wrong"}, "reading the server's clock: the server refused the control token (401)"},
	}
	for _, tt := range tests {
		code, out, errOut := runMain(t, nil, tt.args...)
		if code != ExitFailure || !strings.Contains(errOut, tt.want) || out != "" {
			t.Errorf("Main(%q) = %d, stdout %q, stderr\n%s\nwant exit 1 and %q", tt.args, code, out, errOut, tt.want)
		}
	}
}

// TestControlFlag: a run with --control serves its registry's records
// there: a random token is printed, and a client reads the clock with it,
// and the server's instance id — --instance-id, or a default printed on
// the control line — which its streams carry in their head and chunks.
func TestControlFlag(t *testing.T) {
	for _, id := range []string{"", "srv-x.1"} {
		ctx, cancel := context.WithCancel(context.Background())
		type found struct{ url, token, instance string }
		got := make(chan found, 1)
		listen := make(chan string, 1)
		stderr := &watched{on: func(p []byte) {
			if m := controlLine.FindSubmatch(p); m != nil {
				got <- found{"http://" + string(m[1]), string(m[2]), string(m[3])}
			}
			if m := regexp.MustCompile(`listening on (\S+) `).FindSubmatch(p); m != nil {
				listen <- string(m[1])
			}
		}}
		done := make(chan int, 1)
		args := []string{"-L", "127.0.0.1:0", "--control", "127.0.0.1:0"}
		if id != "" {
			args = append(args, "--instance-id", id)
		}
		go func() {
			code, _ := Measure(ctx, args, &bytes.Buffer{}, stderr)
			done <- code
		}()
		var f found
		var addr string
		select {
		case f = <-got:
			addr = <-listen
		case <-time.After(30 * time.Second):
			t.Fatalf("no control line within 30 s:\n%s", stderr.String())
		}
		if id != "" && f.instance != id || id == "" && !regexp.MustCompile(`^[A-Za-z0-9._-]+-\d+$`).MatchString(f.instance) {
			t.Errorf("--instance-id %q: the control line names instance %q", id, f.instance)
		}
		c, err := control.NewClient(f.url, f.token)
		if err != nil {
			t.Fatal(err)
		}
		if _, instance, err := c.Exchange(ctx); err != nil || instance != f.instance {
			t.Errorf("a clock exchange with the printed token: instance %q, %v; want %q", instance, err, f.instance)
		}
		c.Close()
		resp, err := http.Post("http://"+addr+api.ChatPath, "application/json", strings.NewReader(`{"model":"m","stream":true,"pi_tokens":2,"pi_delay_ms":0.1}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if h := resp.Header.Get(api.InstanceHeader); h != f.instance || strings.Count(string(body), `"pi_instance":"`+f.instance+`"`) != 4 {
			t.Errorf("--instance-id %q: stream head %s %q, body\n%s\nwant instance %q in the head and the 4 chunks", id, api.InstanceHeader, h, body, f.instance)
		}
		cancel()
		if code := <-done; code != ExitOK {
			t.Errorf("server-only run with --control ended with %d\n%s", code, stderr.String())
		}
	}
}

// controlLine is what a run prints when its control endpoints listen with
// a random token.
var controlLine = regexp.MustCompile(`control endpoints \(timing records\) on (127\.0\.0\.1:\d+): .*token ([A-Z0-9]+) \(random.*; instance (\S+)`)
