//go:build linux

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/rundoc"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// lanHost is one host of a test LAN: its network namespace and address.
type lanHost struct {
	ns, ip string
}

// lanPrefix is the LAN's private /24, inside namespaces of its own.
const lanPrefix = "10.253.42."

// newLAN creates one network namespace per name, each with its loopback
// up and an address on a /24 (lanPrefix, from .1 in order) joined by a
// bridge that lives in a namespace of its own, and removes them all when
// the test ends, failed or not.
func newLAN(t *testing.T, names ...string) map[string]lanHost {
	t.Helper()
	suffix := fmt.Sprintf("%d%s", os.Getpid()%100000, strings.ToLower(rand.Text()[:3]))
	bridgeNS := "sselat-lan-" + suffix
	hosts := make(map[string]lanHost, len(names))
	t.Cleanup(func() {
		for _, n := range names {
			exec.Command("ip", "netns", "del", "sselat-"+n+"-"+suffix).Run()
			os.RemoveAll(filepath.Join("/etc/netns", "sselat-"+n+"-"+suffix))
		}
		exec.Command("ip", "netns", "del", bridgeNS).Run() // deleting a namespace deletes its ends of the pairs
	})
	ip(t, "netns", "add", bridgeNS)
	ip(t, "-n", bridgeNS, "link", "add", "br0", "type", "bridge")
	ip(t, "-n", bridgeNS, "link", "set", "br0", "up")
	for i, n := range names {
		h := lanHost{ns: "sselat-" + n + "-" + suffix, ip: fmt.Sprintf("%s%d", lanPrefix, i+1)}
		dev, peer := fmt.Sprintf("slh%d%s", i, suffix), fmt.Sprintf("slb%d%s", i, suffix) // at most 15 bytes
		ip(t, "netns", "add", h.ns)
		ip(t, "link", "add", dev, "type", "veth", "peer", "name", peer)
		ip(t, "link", "set", dev, "netns", h.ns)
		ip(t, "link", "set", peer, "netns", bridgeNS)
		ip(t, "-n", bridgeNS, "link", "set", peer, "master", "br0")
		ip(t, "-n", bridgeNS, "link", "set", peer, "up")
		ip(t, "-n", h.ns, "addr", "add", h.ip+"/24", "dev", dev)
		ip(t, "-n", h.ns, "link", "set", dev, "up")
		ip(t, "-n", h.ns, "link", "set", "lo", "up")
		hosts[n] = h
	}
	return hosts
}

// requireHAProxy returns the haproxy executable; without one it skips the
// test, or fails it under CI=true.
func requireHAProxy(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"haproxy", "/usr/sbin/haproxy"} {
		if bin, err := exec.LookPath(p); err == nil {
			return bin
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no haproxy (apt-get install haproxy): CI=true requires it")
	}
	t.Skip("no haproxy: apt-get install haproxy to run this test")
	return ""
}

// Clock offsets of the two replicas of TestReplicasNetns (ns): far apart,
// and far from zero, so that a token measured against the other replica's
// clock, or against none, cannot pass for noise.
var replicaOffsets = [2]int64{1_234_567_891, -777_000_123}

// TestReplicasNetns runs two server replicas, a real haproxy balancing
// round-robin over them, and three clients, each in a network namespace
// of its own on one LAN (a bridge), the replicas' clocks shifted apart by
// two seconds (the sselatency_testclock build). Every client reads both
// replicas' control endpoints — one through a name that resolves to both
// (/etc/netns/<ns>/hosts: a headless Service), two through --server given
// twice — and measures every token (none unmeasured) against the clock of
// the replica that emitted it, each replica's offset estimated within its
// bound. Each request is attributed to the replica that served it: the
// replicas' rows hold as many requests as each replica's own log shows
// streams. The three runs merge exactly (`sse-latency merge`): the counts
// summed, the replicas' rows one per replica, their samples adding up to
// the merged batch's. Then the same through a gateway that strips pi_ts,
// pi_instance and the instance head field (an in-process
// httputil.ReverseProxy balancing round-robin in the gateway's namespace):
// every token is measured by content, each request found in the records of
// the replica that served it.
//
// It needs root, the ip command and haproxy; it skips without them, and
// fails under CI=true.
func TestReplicasNetns(t *testing.T) {
	requireNetns(t)
	haproxy := requireHAProxy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tagged := buildTestClock(t, ctx)
	lan := newLAN(t, "s0", "s1", "gw", "c0", "c1", "c2")
	const token = "replicas-netns-token"

	// The replicas, each on its own host, their control endpoints on the
	// same port (each host has its own).
	var servers [2]*proc
	var controls [2]string
	for i := range servers {
		h := lan[fmt.Sprintf("s%d", i)]
		servers[i] = startIn(t, ctx, h.ns, []string{"SSE_LATENCY_TEST_CLOCK_OFFSET_NS=" + fmt.Sprint(replicaOffsets[i])}, tagged, "control endpoints",
			"-L", h.ip+":8090", "--control", h.ip+":8091", "--control-token", token, "--instance-id", fmt.Sprintf("replica-%d", i), "-v")
		servers[i].await(t, 30*time.Second)
		controls[i] = "http://" + h.ip + ":8091"
	}

	// The gateway: the example configuration with this LAN's addresses.
	gw := lan["gw"]
	example, err := os.ReadFile(filepath.Join("..", "..", "examples", "haproxy", "haproxy-replicas.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	conf := strings.NewReplacer("10.0.0.3:8080", gw.ip+":8080", "10.0.0.1:8090", lan["s0"].ip+":8090", "10.0.0.2:8090", lan["s1"].ip+":8090").Replace(string(example))
	confPath := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	hp := startIn(t, ctx, gw.ns, nil, haproxy, "\x00never", "-db", "-f", confPath)
	awaitListening(t, gw.ns, gw.ip+":8080", hp)

	// One client resolves a name to both replicas.
	hostsDir := filepath.Join("/etc/netns", lan["c0"].ns)
	if err := os.MkdirAll(hostsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	hosts := fmt.Sprintf("127.0.0.1 localhost\n%s sse-latency-control\n%s sse-latency-control\n", lan["s0"].ip, lan["s1"].ip)
	if err := os.WriteFile(filepath.Join(hostsDir, "hosts"), []byte(hosts), 0o644); err != nil {
		t.Fatal(err)
	}
	serverFlags := [3][]string{
		{"--server", "http://sse-latency-control:8091"},
		{"--server", controls[0], "--server", controls[1]},
		{"--server", controls[1] + "," + controls[0]},
	}

	for _, phase := range []struct {
		name   string
		target string
		strip  bool
	}{
		{"haproxy", gw.ip + ":8080", false},
		{"stripping gateway", startStrippingGateway(t, gw, lan).Addr, true},
	} {
		before := [2]int{streams(servers[0]), streams(servers[1])}
		const requests, tokens = 10, 100
		docs := make([]*rundoc.Document, 3)
		paths := make([]string, 3)
		var wg sync.WaitGroup
		for i := range docs {
			wg.Go(func() {
				args := append([]string{"-t", phase.target, "--control-token", token, "-r", fmt.Sprint(requests), "-c", "5",
					"-n", fmt.Sprint(tokens), "-d", "2", "-q", "--json", "-"}, serverFlags[i]...)
				docs[i] = runDocIn(t, ctx, lan[fmt.Sprintf("c%d", i)].ns, args)
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		// What each replica served, by its own log.
		var served [2]int
		testutil.Await(t, "the replicas to log every stream", func() bool {
			served = [2]int{streams(servers[0]) - before[0], streams(servers[1]) - before[1]}
			return served[0]+served[1] >= 3*requests
		})
		if served[0]+served[1] != 3*requests || served[0] == 0 || served[1] == 0 {
			t.Fatalf("%s: the replicas served %d and %d streams, want %d in all, both some", phase.name, served[0], served[1], 3*requests)
		}
		for i, d := range docs {
			what := fmt.Sprintf("%s, client %d", phase.name, i)
			checkReplicaRun(t, what, d, controls, requests*tokens, phase.strip)
			paths[i] = filepath.Join(t.TempDir(), fmt.Sprintf("run-%d.json", i))
			writeDoc(t, paths[i], d)
		}
		// The merge.
		var out, errOut bytes.Buffer
		cmd := exec.CommandContext(ctx, binary, append([]string{"merge"}, paths...)...)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: merge: %v\n%s", phase.name, err, errOut.String())
		}
		m, err := rundoc.ReadJSON(&out)
		if err != nil {
			t.Fatalf("%s: the merged document: %v", phase.name, err)
		}
		mg := m.Gateway()
		var emits, legs int64
		for _, d := range docs {
			emits += d.Gateway().Metrics.EmitRecv.N
			if l := d.Gateway().RequestLeg; l != nil {
				legs += l.N
			}
		}
		if mg.RequestLeg == nil {
			t.Fatalf("%s: the merged batch has no request leg", phase.name)
		}
		if mg.Requests != 3*requests || mg.OK != 3*requests || mg.Stream.Unmeasured != 0 || mg.Metrics.EmitRecv.N != emits || mg.RequestLeg.N != legs {
			t.Errorf("%s: merged %d requests, %d ok, %d unmeasured, %d emit->recv samples, %d request legs; want %d, %d, 0, %d, %d",
				phase.name, mg.Requests, mg.OK, mg.Stream.Unmeasured, mg.Metrics.EmitRecv.N, mg.RequestLeg.N, 3*requests, 3*requests, emits, legs)
		}
		rows := mg.Replicas
		if len(rows) != 2 {
			t.Fatalf("%s: merged replicas %+v, want one row per replica", phase.name, rows)
		}
		var rowEmits int64
		for k, r := range rows {
			if r.Instance != fmt.Sprintf("replica-%d", k) || r.Control != controls[k] || r.Requests != served[k] || r.Unmeasured != 0 || r.RequestLeg.N != int64(served[k]) {
				t.Errorf("%s: merged row %d: %s at %s, %d requests, %d unmeasured, %d request legs; want replica-%d at %s, the %d streams it logged, all measured",
					phase.name, k, r.Instance, r.Control, r.Requests, r.Unmeasured, r.RequestLeg.N, k, controls[k], served[k])
			}
			rowEmits += r.EmitRecv.N
		}
		if rowEmits != mg.Metrics.EmitRecv.N {
			t.Errorf("%s: the merged rows hold %d emit->recv samples, the batch %d", phase.name, rowEmits, mg.Metrics.EmitRecv.N)
		}
		t.Logf("%s: replica-0 served %d, replica-1 %d; merged emit->recv p50 %.3f ms, request leg p50 %.3f ms",
			phase.name, served[0], served[1], mg.Metrics.EmitRecv.P50Ms, mg.RequestLeg.P50Ms)
	}
}

// checkReplicaRun checks one client's run through the balanced gateway:
// every request ok, every token measured (by pi_ts, or all by content when
// stripped), one row per replica in the order of the endpoints, each
// offset within its bound of the injected one, and no token arriving
// before its emission beyond the bound.
func checkReplicaRun(t *testing.T, what string, d *rundoc.Document, controls [2]string, tokens int, stripped bool) {
	t.Helper()
	g := d.Gateway()
	s := &g.Stream
	if g.OK != g.Requests || s.Unmeasured != 0 || stripped && (s.ByPiTs != 0 || s.ByContent != int64(tokens)) || !stripped && s.ByPiTs != int64(tokens) {
		t.Errorf("%s: %d of %d ok; %d tokens by pi_ts, %d by content, %d unmeasured; want all ok and all %d measured", what, g.OK, g.Requests,
			s.ByPiTs, s.ByContent, s.Unmeasured, tokens)
	}
	rows := g.Replicas
	if len(rows) != 2 {
		t.Fatalf("%s: replicas %+v, want 2", what, rows)
	}
	// Rows follow the endpoints as given: the third client named replica 1 first.
	requests := 0
	for _, r := range rows {
		k := 0
		if r.Control == controls[1] {
			k = 1
		}
		want := float64(replicaOffsets[k]) / 1e6
		if r.Instance != fmt.Sprintf("replica-%d", k) || r.Control != controls[k] || r.Error != "" || r.Unmeasured != 0 || r.Estimates < 1 {
			t.Errorf("%s: row %+v: want replica-%d at %s, nothing unmeasured", what, r, k, controls[k])
		}
		if dev := math.Abs(r.OffsetMs - want); dev > r.BoundMs+1e-6 || r.BoundMs <= 0 || r.BoundMs > 100 {
			t.Errorf("%s: replica-%d offset %.6f ms ± %.6f ms, injected %.6f ms: off by %.6f ms", what, k, r.OffsetMs, r.BoundMs, want, dev)
		}
		requests += r.Requests
	}
	if requests != g.Requests {
		t.Errorf("%s: the rows hold %d requests, the batch %d", what, requests, g.Requests)
	}
	if c := d.Clock; c == nil || g.Metrics.EmitRecv.MinMs < -c.BoundMs || g.Metrics.FirstEmitRecv.MinMs < -c.BoundMs {
		t.Errorf("%s: emit->recv min %.3f ms, first %.3f ms, clock %+v: a token arrived before its emission beyond the bound",
			what, g.Metrics.EmitRecv.MinMs, g.Metrics.FirstEmitRecv.MinMs, c)
	}
}

// streamLine is what a replica logs (-v) for each stream it begins.
var streamLine = regexp.MustCompile(`(?m)^server: .* stream \d+ \(id "`)

// streams is the number of streams p has logged so far.
func streams(p *proc) int { return len(streamLine.FindAllStringIndex(p.stderrText(), -1)) }

// startStrippingGateway starts, in the gateway host's namespace, an
// in-process gateway that balances round-robin over the two replicas and
// strips their stamps and instance ids.
func startStrippingGateway(t *testing.T, gw lanHost, lan map[string]lanHost) *testutil.Gateway {
	t.Helper()
	var ln net.Listener
	if err := inNetns(gw.ns, func() (err error) { ln, err = net.Listen("tcp", gw.ip+":0"); return err }); err != nil {
		t.Fatal(err)
	}
	g := testutil.StartGateway(t, testutil.GatewayOptions{Listener: ln, Strip: true, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := inNetns(gw.ns, func() (err error) {
			c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}})
	g.SetUpstreams(lan["s0"].ip+":8090", lan["s1"].ip+":8090")
	return g
}

// awaitListening waits until addr, in namespace ns, accepts a connection
// (the gateway p is up), or fails the test if p exits first.
func awaitListening(t *testing.T, ns, addr string, p *proc) {
	t.Helper()
	testutil.Await(t, addr+" to accept connections", func() bool {
		select {
		case <-p.done:
			t.Fatalf("the gateway exited:\n%s", p.stderrText())
		default:
		}
		return inNetns(ns, func() error {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
			}
			return err
		}) == nil
	})
}

// runDocIn runs sse-latency in network namespace ns to its end, on a
// goroutine of its own, and returns its document (--json - in args); it
// reports a failure with t.Errorf (and returns nil) rather than ending the
// test.
func runDocIn(t *testing.T, ctx context.Context, ns string, args []string) *rundoc.Document {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, binary}, args...)...)
	cmd.Stdout, cmd.Stderr, cmd.WaitDelay = &stdout, &stderr, 5*time.Second
	if err := cmd.Run(); err != nil {
		t.Errorf("sse-latency %s in %s: %v\nstderr:\n%s", strings.Join(args, " "), ns, err, stderr.String())
		return nil
	}
	d, err := rundoc.ReadJSON(&stdout)
	if err != nil {
		t.Errorf("sse-latency %s: its document: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
		return nil
	}
	return d
}

// writeDoc writes d's JSON to path.
func writeDoc(t *testing.T, path string, d *rundoc.Document) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := rundoc.WriteJSON(f, d); err != nil {
		t.Fatal(err)
	}
}
