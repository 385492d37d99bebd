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
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sse-latency/sse-latency/internal/rundoc"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// The addresses of the veth pair: private, and inside namespaces of their
// own, so that nothing of the host's network sees them.
const (
	serverIP = "10.253.41.1"
	clientIP = "10.253.41.2"
)

// injectedOffset is how far ahead the server's clock runs (ns): 1.234 s and
// some, far more than any network delay, so that a correction applied the
// wrong way, or not at all, cannot pass for noise.
const injectedOffset = 1_234_567_891

// TestCrossHostNetns runs the server and the client as two processes in two
// network namespaces joined by a veth pair, the server's clock shifted by
// injectedOffset (a binary built with the sselatency_testclock tag), the
// client's requests through an in-process gateway (httputil.ReverseProxy)
// whose sockets live in the server's namespace. The client's estimate of
// the offset must lie within its bound of the injected one. Every
// converted time must respect causality within the bound: no token
// arrived before it was emitted, no first token was emitted before its
// request was sent (its emit->recv at most its TTFT, give or take the 5 ms
// a loaded client may stamp its send late) — a correction off by the
// offset breaks one or the other by 1234 ms, whatever the load. And its
// emit->recv p50 must be the single-process figure (client and server in
// one process in the client's namespace, through the same kind of gateway)
// within the bound, plus 10 ms and the single-process p50 itself for what
// differs between two runs on two paths (veth or loopback) through a
// gateway built with the race detector on a shared, possibly overloaded,
// machine.
//
// It needs root and the ip command; it skips without them, and fails
// under CI=true like the gateway tests. The namespaces (named after the
// process and a random suffix, so that parallel runs cannot collide) are
// removed when it ends, failed or not.
func TestCrossHostNetns(t *testing.T) {
	requireNetns(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tagged := buildTestClock(t, ctx)
	nsS, nsC := newNetnsPair(t)

	// The server, in its namespace, its clock ahead.
	const token = "netns-test-token"
	srv := startIn(t, ctx, nsS, []string{"SSE_LATENCY_TEST_CLOCK_OFFSET_NS=" + fmt.Sprint(injectedOffset)}, tagged, "control endpoints",
		"-L", serverIP+":0", "--control", serverIP+":0", "--control-token", token)
	srv.await(t, 30*time.Second)
	text := srv.stderrText()
	if !strings.Contains(text, "warning: test build: this process's clock is shifted by 1234567891 ns") {
		t.Fatalf("the tagged server does not say its clock is shifted:\n%s", text)
	}
	modelAddr := submatch(t, `listening on (\S+) `, text)
	controlAddr := submatch(t, `control endpoints \(timing records\) on (\S+):`, text)

	// The gateway: listening in the server's namespace, on the veth.
	gw := startNetnsGateway(t, nsS, serverIP+":0")
	gw.SetUpstream(modelAddr)

	run := []string{"-r", "10", "-c", "5", "-n", "200", "-d", "2", "-q", "--json", "-"}
	cross := runIn(t, ctx, nsC, append([]string{"-t", gw.Addr, "--server", "http://" + controlAddr, "--control-token", token}, run...))

	// The single-process figure, in the client's namespace, through a
	// gateway of its own there.
	local := startNetnsGateway(t, nsC, "127.0.0.1:0")
	single := runIn(t, ctx, nsC, append([]string{"-L", "127.0.0.1:0", "-t", local.Addr, "-l"}, run...), func(line string) { local.UpstreamFrom(line) })

	c := cross.Clock
	if c == nil {
		t.Fatalf("the cross-host run has no clock")
	}
	want := float64(injectedOffset) / 1e6
	if d := math.Abs(c.OffsetMs - want); d > c.BoundMs+1e-6 {
		t.Errorf("estimated offset %.6f ms ± %.6f ms, injected %.6f ms: off by %.6f ms, beyond the bound", c.OffsetMs, c.BoundMs, want, d)
	}
	if c.BoundMs <= 0 || c.BoundMs >= want/4 {
		t.Errorf("bound %.6f ms: want a positive bound far below the offset it bounds (%.3f ms)", c.BoundMs, want)
	}
	xg, sg := cross.Gateway(), single.Gateway()
	if xg.OK != 10 || sg.OK != 10 || xg.RequestLeg == nil || xg.RequestLeg.N != 10 {
		t.Fatalf("cross host: %d ok, request legs %v; single process: %d ok", xg.OK, xg.RequestLeg, sg.OK)
	}
	m := &xg.Metrics
	const stampSlackMs = 5 // a client descheduled after its write stamps its send late (internal/cli's TestRequestLeg)
	if m.EmitRecv.MinMs < -c.BoundMs || m.FirstEmitRecv.MinMs < -c.BoundMs || m.FirstEmitRecv.MaxMs > m.TTFT.MaxMs+c.BoundMs+stampSlackMs {
		t.Errorf("across hosts: emit->recv min %.3f ms, first-token emit->recv %.3f..%.3f ms, TTFT max %.3f ms: "+
			"a token arrived before its emission, or was emitted before its request, beyond the bound %.3f ms (and 5 ms of send stamp)",
			m.EmitRecv.MinMs, m.FirstEmitRecv.MinMs, m.FirstEmitRecv.MaxMs, m.TTFT.MaxMs, c.BoundMs)
	}
	x, s := m.EmitRecv.P50Ms, sg.Metrics.EmitRecv.P50Ms
	if d := math.Abs(x - s); d > c.BoundMs+10+s {
		t.Errorf("emit->recv p50 across hosts %.3f ms, in one process %.3f ms: %.3f ms apart, want at most the bound %.3f ms + 10 ms + %.3f ms",
			x, s, d, c.BoundMs, s)
	}
	t.Logf("offset %.6f ms ± %.6f ms (injected %.6f); emit->recv p50 %.3f ms across hosts, %.3f ms in one process; request leg p50 %.3f ms",
		c.OffsetMs, c.BoundMs, want, x, s, xg.RequestLeg.P50Ms)
}

// requireNetns skips the test without root or the ip command, or fails it
// under CI=true.
func requireNetns(t *testing.T) {
	t.Helper()
	var why string
	if os.Geteuid() != 0 {
		why = "network namespaces need root"
	} else if _, err := exec.LookPath("ip"); err != nil {
		why = "no ip command (apt-get install iproute2)"
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: CI=true requires it", why)
	}
	t.Skipf("%s: run as root with iproute2 to run this test", why)
}

// buildTestClock builds sse-latency with the sselatency_testclock tag.
func buildTestClock(t *testing.T, ctx context.Context) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "sse-latency-testclock")
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	if b, err := exec.CommandContext(ctx, gobin, "build", "-tags", "sselatency_testclock", "-o", out, ".").CombinedOutput(); err != nil {
		t.Fatalf("building with -tags sselatency_testclock: %v\n%s", err, b)
	}
	return out
}

// ip runs the ip command.
func ip(t *testing.T, args ...string) {
	t.Helper()
	if b, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, b)
	}
}

// newNetnsPair creates two network namespaces joined by a veth pair,
// serverIP on one end, clientIP on the other, each with its loopback up,
// and removes them (and the pair with them) when the test ends.
func newNetnsPair(t *testing.T) (nsS, nsC string) {
	t.Helper()
	suffix := fmt.Sprintf("%d%s", os.Getpid()%100000, strings.ToLower(rand.Text()[:3]))
	nsS, nsC = "sselat-s-"+suffix, "sselat-c-"+suffix
	vS, vC := "sls"+suffix, "slc"+suffix // at most 15 bytes
	t.Cleanup(func() {
		for _, args := range [][]string{{"netns", "del", nsS}, {"netns", "del", nsC}, {"link", "del", vS}} {
			exec.Command("ip", args...).Run() // what exists; deleting a namespace deletes its end of the pair
		}
	})
	ip(t, "netns", "add", nsS)
	ip(t, "netns", "add", nsC)
	ip(t, "link", "add", vS, "type", "veth", "peer", "name", vC)
	ip(t, "link", "set", vS, "netns", nsS)
	ip(t, "link", "set", vC, "netns", nsC)
	for _, n := range []struct{ ns, dev, addr string }{{nsS, vS, serverIP}, {nsC, vC, clientIP}} {
		ip(t, "-n", n.ns, "addr", "add", n.addr+"/30", "dev", n.dev)
		ip(t, "-n", n.ns, "link", "set", n.dev, "up")
		ip(t, "-n", n.ns, "link", "set", "lo", "up")
	}
	return nsS, nsC
}

// inNetns runs fn on an OS thread that has joined network namespace ns:
// the sockets fn creates belong to ns, whichever thread uses them later.
// The thread stays locked, and ends with its goroutine.
func inNetns(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: a thread in another namespace must not run other goroutines
		f, err := os.Open(filepath.Join("/run/netns", ns))
		if err == nil {
			err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
			f.Close()
		}
		if err == nil {
			err = fn()
		}
		errc <- err
	}()
	return <-errc
}

// startNetnsGateway starts an in-process gateway whose listener (on
// listen) and upstream connections live in network namespace ns.
func startNetnsGateway(t *testing.T, ns, listen string) *testutil.Gateway {
	t.Helper()
	var ln net.Listener
	if err := inNetns(ns, func() (err error) { ln, err = net.Listen("tcp", listen); return err }); err != nil {
		t.Fatalf("gateway listener in %s: %v", ns, err)
	}
	return testutil.StartGateway(t, testutil.GatewayOptions{Listener: ln, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := inNetns(ns, func() (err error) {
			c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}})
}

// startIn starts the binary bin in network namespace ns (ip netns exec),
// with the extra environment env; seen closes on the await line.
func startIn(t *testing.T, ctx context.Context, ns string, env []string, bin, await string, args ...string) *proc {
	t.Helper()
	p := &proc{}
	p.cmd = exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, bin}, args...)...)
	p.cmd.Env = append(os.Environ(), env...)
	p.startReading(t, await, nil)
	return p
}

// runIn runs sse-latency in network namespace ns to its end and returns
// its document (--json - in args); onLine sees each stderr line as it
// comes.
func runIn(t *testing.T, ctx context.Context, ns string, args []string, onLine ...func(string)) *rundoc.Document {
	t.Helper()
	p := &proc{}
	p.cmd = exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, binary}, args...)...)
	p.startReading(t, "\x00never", onLine)
	if code := p.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("sse-latency %s in %s: exit %d\nstderr:\n%s", strings.Join(args, " "), ns, code, p.stderrText())
	}
	d, err := rundoc.ReadJSON(bytes.NewReader(p.stdout.Bytes()))
	if err != nil {
		t.Fatalf("sse-latency %s: its document: %v\nstderr:\n%s", strings.Join(args, " "), err, p.stderrText())
	}
	return d
}

// submatch returns the first group of pattern in s.
func submatch(t *testing.T, pattern, s string) string {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %q in:\n%s", pattern, s)
	}
	return m[1]
}
