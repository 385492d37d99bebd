package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/control/controltest"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/rundoc"
	"github.com/sse-latency/sse-latency/internal/server"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// startReplica runs a dummy server of instance id on 127.0.0.1:0, its
// control endpoints on ctl (nil: 127.0.0.1:0), as `sse-latency -L …
// --control … --instance-id id` runs on another host.
func startReplica(t *testing.T, id string, ctl net.Listener) remoteServer {
	t.Helper()
	reg := emission.New()
	srv := server.New(testutil.Listen(t), server.Config{Tokens: 1000, DelayMs: 5, Emissions: reg, Instance: id})
	testutil.Serve(t, srv)
	if ctl == nil {
		ctl = testutil.Listen(t)
	}
	return remoteServer{addr: srv.Addr().String(), control: controltest.ServeOn(t, ctl, reg, crossToken, id, nil)}
}

// replicaRun measures through g with the --server values given, and
// returns the run's summary and document.
func replicaRun(t *testing.T, g *testutil.Gateway, servers []string, extra ...string) (int, *Summary, *rundoc.Document, string) {
	t.Helper()
	args := []string{"-t", g.Addr, "--control-token", crossToken, "-r", "6", "-c", "3", "-n", "20", "-d", "1", "-q", "--json", "-"}
	for _, s := range servers {
		args = append(args, "--server", s)
	}
	var stdout, stderr bytes.Buffer
	code, sum := Measure(context.Background(), append(args, extra...), &stdout, &stderr)
	if sum == nil {
		t.Fatalf("exit %d, no summary\nstderr:\n%s", code, stderr.String())
	}
	d, err := rundoc.ReadJSON(&stdout)
	if err != nil {
		t.Fatalf("the document: %v\nstderr:\n%s", err, stderr.String())
	}
	return code, sum, d, stderr.String()
}

// checkSplit checks that the replica rows of d add up to its gateway
// batch: requests, request legs and emit->recv samples.
func checkSplit(t *testing.T, what string, d *rundoc.Document) {
	t.Helper()
	b := d.Gateway()
	var requests int
	var legs, emits int64
	for _, r := range b.Replicas {
		requests += r.Requests
		legs += r.RequestLeg.N
		emits += r.EmitRecv.N
	}
	var batchLegs int64
	if b.RequestLeg != nil {
		batchLegs = b.RequestLeg.N
	}
	if requests != b.Requests || legs != batchLegs || emits != b.Metrics.EmitRecv.N {
		t.Errorf("%s: the replicas hold %d requests, %d request legs, %d emit->recv samples; the batch %d, %d, %d",
			what, requests, legs, emits, b.Requests, batchLegs, b.Metrics.EmitRecv.N)
	}
}

// TestReplicas measures through a gateway that balances round-robin over
// two server replicas, each read over its own control endpoint: every
// token is measured against the clock of the replica that emitted it,
// each request is attributed to the replica that served it — by the
// instance its events name, or, through a gateway that strips every stamp,
// by its id in the replicas' records — and the split adds up.
func TestReplicas(t *testing.T) {
	a, b := startReplica(t, "srv-a", nil), startReplica(t, "srv-b", nil)
	for _, strip := range []bool{false, true} {
		g := testutil.StartGateway(t, testutil.GatewayOptions{Strip: strip})
		g.SetUpstreams(a.addr, b.addr)
		code, sum, d, stderr := replicaRun(t, g, []string{a.control, b.control})
		what := fmt.Sprintf("stripped %v", strip)
		gw := sum.Gateway
		if code != ExitOK || gw.OK != 6 || gw.Unmeasured != 0 || gw.RequestLeg.N() != 6 {
			t.Fatalf("%s: exit %d, %d ok, %d unmeasured, %d request legs; want 0, 6, 0, 6\n%s", what, code, gw.OK, gw.Unmeasured, gw.RequestLeg.N(), stderr)
		}
		if strip && (gw.ByPiTs != 0 || gw.ByContent != 6*20) || !strip && gw.ByPiTs != 6*20 {
			t.Errorf("%s: %d tokens by pi_ts, %d by content", what, gw.ByPiTs, gw.ByContent)
		}
		rows := d.Gateway().Replicas
		if len(rows) != 2 || rows[0].Instance != "srv-a" || rows[1].Instance != "srv-b" || rows[0].Control != a.control || rows[1].Control != b.control {
			t.Fatalf("%s: replicas %+v, want srv-a and srv-b", what, rows)
		}
		for _, r := range rows {
			if r.Requests != 3 || r.OK != 3 || r.Tokens != 60 || r.Unmeasured != 0 || r.RequestLeg.N != 3 || r.Estimates < 1 || r.Error != "" {
				t.Errorf("%s: replica %+v: want 3 requests of 20 tokens, all measured, 3 request legs", what, r)
			}
		}
		checkSplit(t, what, d)
		for _, want := range []string{"control endpoint " + a.control + ", instance srv-a: clock offset", "control endpoint " + b.control + ", instance srv-b: clock offset"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%s: stderr lacks %q:\n%s", what, want, stderr)
			}
		}
		if d.Config.Server != a.control+","+b.control {
			t.Errorf("%s: config.server %q", what, d.Config.Server)
		}
	}
}

// TestReplicasReport: the text report of a run across two replicas has
// the replica block, one line per replica; --compat does not.
func TestReplicasReport(t *testing.T) {
	a, b := startReplica(t, "srv-a", nil), startReplica(t, "srv-b", nil)
	g := testutil.StartGateway(t, testutil.GatewayOptions{})
	g.SetUpstreams(a.addr, b.addr)
	for _, compat := range []bool{false, true} {
		args := []string{"-t", g.Addr, "--server", a.control + "," + b.control, "--control-token", crossToken, "-r", "2", "-n", "5", "-d", "1", "-q"}
		if compat {
			args = append(args, "--compat")
		}
		code, stdout, stderr := runMain(t, context.Background(), args...)
		if code != ExitOK {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		has := strings.Contains(stdout, "=== replicas (by the server instance that served each request) ===\nsrv-a  "+a.control+"  requests 1 (1 ok)  tokens 5 (0 unmeasured)")
		if has == compat || compat == strings.Contains(stdout, "\nsrv-b  "+b.control+"  requests 1 (1 ok)") {
			t.Errorf("compat %v: replica block present %v:\n%s", compat, has, stdout)
		}
	}
}

// TestReplicasBadEndpoints: a control endpoint that is down or answers
// garbage is a replica that is down — a warning names why, its row says
// so, the run goes on with the others; a gateway that reaches a server no
// endpoint answers as fails those requests as integrity errors, their
// tokens unmeasured; all endpoints down fail the run.
func TestReplicasBadEndpoints(t *testing.T) {
	a, b := startReplica(t, "srv-a", nil), startReplica(t, "srv-b", nil)
	closed := testutil.Listen(t)
	deadURL := "http://" + closed.Addr().String()
	closed.Close()
	garbage := testutil.Listen(t)
	go (&http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html>a login page</html>"))
	})}).Serve(garbage)
	t.Cleanup(func() { garbage.Close() })
	garbageURL := "http://" + garbage.Addr().String()

	g := testutil.StartGateway(t, testutil.GatewayOptions{})
	g.SetUpstreams(a.addr)
	code, sum, d, stderr := replicaRun(t, g, []string{a.control, deadURL, garbageURL})
	if code != ExitOK || sum.Gateway.OK != 6 || sum.Gateway.Unmeasured != 0 {
		t.Fatalf("with two bad endpoints: exit %d, %d ok, %d unmeasured\n%s", code, sum.Gateway.OK, sum.Gateway.Unmeasured, stderr)
	}
	for _, want := range []string{"warning: --server " + deadURL + ": reading the server's clock: ", "connection refused: the tokens of its replica stay unmeasured",
		"warning: --server " + garbageURL + ": reading the server's clock: reading the answer: invalid character '<'"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	rows := d.Gateway().Replicas
	if len(rows) != 3 || rows[0].Requests != 6 || !strings.HasPrefix(rows[1].Error, "down: reading the server's clock: ") || rows[1].Control != deadURL ||
		!strings.Contains(rows[2].Error, "invalid character") {
		t.Errorf("replicas %+v: want srv-a with the 6 requests, then the two endpoints down", rows)
	}
	checkSplit(t, "bad endpoints", d)

	// A gateway that also reaches srv-b, which no --server names.
	g = testutil.StartGateway(t, testutil.GatewayOptions{})
	g.SetUpstreams(a.addr, b.addr)
	code, sum, d, stderr = replicaRun(t, g, []string{a.control})
	if code != ExitFailure || sum.Gateway.OK != 3 || sum.Gateway.IntegrityErrors != 3 || sum.Gateway.Unmeasured != 3*20 {
		t.Errorf("through a gateway that reaches an unread replica: exit %d, %d ok, %d integrity errors, %d unmeasured; want 1, 3, 3, 60\n%s",
			code, sum.Gateway.OK, sum.Gateway.IntegrityErrors, sum.Gateway.Unmeasured, stderr)
	}
	if f := d.Gateway().Failures; len(f) != 1 || len(f[0].Texts) != 1 ||
		!strings.HasPrefix(f[0].Texts[0].Text, `integrity: served by server instance "srv-b", which no control endpoint answers as ("srv-a")`) {
		t.Errorf("failures %+v: want the 3 integrity failures naming srv-b", f)
	}
	rows = d.Gateway().Replicas
	if len(rows) != 2 || rows[1].Instance != "srv-b" || rows[1].Error != summary.ErrUnknownInstance || rows[1].Unmeasured != 60 || rows[1].Control != "" {
		t.Errorf("replicas %+v: want srv-a, then srv-b without an endpoint, its 60 tokens unmeasured", rows)
	}

	code, errOut, _ := func() (int, string, string) {
		c, _, e := runMain(t, context.Background(), "-t", g.Addr, "--server", deadURL, "--server", garbageURL, "--control-token", crossToken, "-n", "5")
		return c, e, ""
	}()
	if code != ExitFailure || !strings.Contains(errOut, "--server: no control endpoint answered: "+deadURL+": reading the server's clock: ") {
		t.Errorf("every endpoint down: exit %d\n%s", code, errOut)
	}
}

// TestReplicasByName: a --server whose host resolves to several addresses
// (a headless Service) stands for one replica per address; one resolving
// to more than MaxReplicas is refused with the bound named, and so are
// more than MaxReplicas --server values.
func TestReplicasByName(t *testing.T) {
	// Two control endpoints on one port, on two loopback addresses.
	var ctlA, ctlB net.Listener
	for try := 0; ctlB == nil; try++ {
		ctlA = testutil.Listen(t)
		_, port, _ := net.SplitHostPort(ctlA.Addr().String())
		ln, err := net.Listen("tcp", "127.0.0.2:"+port)
		if err != nil {
			ctlA.Close()
			if try == 10 {
				t.Skipf("no port free on both 127.0.0.1 and 127.0.0.2: %v", err)
			}
			continue
		}
		ctlB = ln
	}
	a, b := startReplica(t, "srv-a", ctlA), startReplica(t, "srv-b", ctlB)
	_, port, _ := net.SplitHostPort(ctlA.Addr().String())
	many := make([]net.IPAddr, MaxReplicas+1)
	for i := range many {
		many[i] = net.IPAddr{IP: net.IPv4(10, 1, byte(i/250), byte(1+i%250))}
	}
	lookupIPAddr = func(_ context.Context, host string) ([]net.IPAddr, error) {
		switch host {
		case "replicas.test":
			return []net.IPAddr{{IP: net.ParseIP("127.0.0.1")}, {IP: net.ParseIP("::1")}, {IP: net.ParseIP("127.0.0.2")}, {IP: net.ParseIP("127.0.0.1")}}, nil
		case "many.test":
			return many, nil
		}
		return nil, fmt.Errorf("no such host %s", host)
	}
	t.Cleanup(func() { lookupIPAddr = net.DefaultResolver.LookupIPAddr })

	g := testutil.StartGateway(t, testutil.GatewayOptions{})
	g.SetUpstreams(a.addr, b.addr)
	code, sum, d, stderr := replicaRun(t, g, []string{"http://replicas.test:" + port})
	if code != ExitOK || sum.Gateway.Unmeasured != 0 {
		t.Fatalf("exit %d, %d unmeasured\n%s", code, sum.Gateway.Unmeasured, stderr)
	}
	rows := d.Gateway().Replicas
	if len(rows) != 2 || rows[0].Control != "http://127.0.0.1:"+port || rows[1].Control != "http://127.0.0.2:"+port || rows[0].Requests != 3 || rows[1].Requests != 3 {
		t.Errorf("replicas %+v: want one per IPv4 address of the name, 3 requests each", rows)
	}
	if !strings.Contains(stderr, "note: --server http://replicas.test:"+port+": its host resolves to 2 addresses, one replica each") {
		t.Errorf("stderr lacks the note on the name:\n%s", stderr)
	}

	code, _, errOut := runMain(t, context.Background(), "-t", g.Addr, "--server", "http://many.test:8091", "--control-token", crossToken)
	if want := "--server http://many.test:8091: many.test resolves to " + strconv.Itoa(MaxReplicas+1) + " addresses, more than the 64 replicas one run reads (MaxReplicas)"; code != ExitFailure || !strings.Contains(errOut, want) {
		t.Errorf("a name of %d addresses: exit %d\n%s\nwant %q", MaxReplicas+1, code, errOut, want)
	}
	args := []string{"-t", g.Addr, "--control-token", crossToken}
	for i := range MaxReplicas + 1 {
		args = append(args, "--server", fmt.Sprintf("http://10.2.0.%d:8091", i+1))
	}
	if code, _, errOut := runMain(t, context.Background(), args...); code != ExitFailure || !strings.Contains(errOut, "--server given 65 times: at most 64 control endpoints (MaxReplicas)") {
		t.Errorf("65 --server: exit %d\n%s", code, errOut)
	}
}

// TestInstanceFlagErrors: --instance-id is checked before anything runs.
func TestInstanceFlagErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--instance-id", "a b", "--control", "127.0.0.1:0"}, `--instance-id "a b": want 1 to 64 of A-Z, a-z, 0-9 and - _ . (no other character)`},
		{[]string{"--instance-id", "srv-a"}, "--instance-id names this server to the clients that read its control endpoints: give --control"},
	} {
		code, out, errOut := runMain(t, nil, tt.args...)
		if code != ExitFailure || !strings.Contains(errOut, tt.want) || out != "" {
			t.Errorf("Main(%q) = %d, stderr\n%s\nwant exit 1 and %q", tt.args, code, errOut, tt.want)
		}
	}
}
