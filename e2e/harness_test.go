//go:build linux

package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/testutil"
)

// These tests check the harness itself, with ordinary programs standing in
// for gateways; they need no gateway installed.

func TestRender(t *testing.T) {
	example := []byte("# listens on 127.0.0.1:8080\nbind 127.0.0.1:8080\nserver 127.0.0.1:8090\n")
	got, err := Render(example, "127.0.0.1:1111", "127.0.0.1:2222")
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	if want := "# listens on 127.0.0.1:1111\nbind 127.0.0.1:1111\nserver 127.0.0.1:2222\n"; string(got) != want {
		t.Errorf("Render = %q, want %q", got, want)
	}
	for _, bad := range []string{
		"bind 127.0.0.1:8080\n# server 127.0.0.1:8090\n",
		"  # bind 127.0.0.1:8080\nserver 127.0.0.1:8090\n",
	} {
		if _, err := Render([]byte(bad), "a", "b"); err == nil {
			t.Errorf("Render(%q) succeeded; want an error: an address is only in a comment", bad)
		}
	}
}

func TestRenderPorts(t *testing.T) {
	example := []byte("# 127.0.0.1:8080 to 127.0.0.1:8090\nserver.bind = \"127.0.0.1\"\nserver.port = 8080\n" +
		"proxy.server = (\"\" => ((\"host\" => \"127.0.0.1\", \"port\" => 8090)))\nkeep = 18080\n")
	got, err := RenderPorts(example, "127.0.0.1:1111", "127.0.0.1:2222")
	want := "# 127.0.0.1:1111 to 127.0.0.1:2222\nserver.bind = \"127.0.0.1\"\nserver.port = 1111\n" +
		"proxy.server = (\"\" => ((\"host\" => \"127.0.0.1\", \"port\" => 2222)))\nkeep = 18080\n"
	if err != nil || string(got) != want {
		t.Errorf("RenderPorts = %q, %v; want %q", got, err, want)
	}
	for _, bad := range []string{"server.port = 8080\n# port 8090\n", "port = 8080\nport = 8090\n"} {
		if _, err := RenderPorts([]byte(bad), "127.0.0.1:1", "127.0.0.1:2"); err == nil {
			t.Errorf("RenderPorts(%q) succeeded; want an error: a port or the host only in a comment, or missing", bad)
		}
	}
	if _, err := RenderPorts(example, "10.0.0.1:1", "127.0.0.1:2"); err == nil {
		t.Error("RenderPorts to another host succeeded; want an error: the configuration names the host apart")
	}
}

func TestRenderPEM(t *testing.T) {
	example := []byte("# cert: /etc/haproxy/sse-latency.pem\nbind 127.0.0.1:8080 ssl crt /etc/haproxy/sse-latency.pem alpn h2\n")
	got, err := RenderPEM(example, "/tmp/x/sse-latency.pem")
	if err != nil {
		t.Fatalf("RenderPEM: %v", err)
	}
	if want := "# cert: /tmp/x/sse-latency.pem\nbind 127.0.0.1:8080 ssl crt /tmp/x/sse-latency.pem alpn h2\n"; string(got) != want {
		t.Errorf("RenderPEM = %q, want %q", got, want)
	}
	for _, bad := range []string{"bind 127.0.0.1:8080\n", "  # crt /etc/haproxy/sse-latency.pem\nbind 127.0.0.1:8080\n"} {
		if _, err := RenderPEM([]byte(bad), "/x.pem"); err == nil {
			t.Errorf("RenderPEM(%q) succeeded; want an error: no PEM path outside comments", bad)
		}
	}
}

func TestFreePortsDistinct(t *testing.T) {
	ports, err := FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range ports {
		if !strings.HasPrefix(p, "127.0.0.1:") || seen[p] {
			t.Errorf("FreePorts(3) = %v: want 3 distinct loopback addresses", ports)
		}
		seen[p] = true
	}
}

func TestLookPathMissing(t *testing.T) {
	if p, err := LookPath("sse-latency-no-such-gateway"); err == nil {
		t.Errorf("LookPath of a missing program = %q, want an error", p)
	}
}

func TestVersionParsing(t *testing.T) {
	sh, err := LookPath("sh")
	if err != nil {
		t.Skip(err)
	}
	for _, tt := range []struct{ printed, want string }{
		{"HAProxy version 2.6.12-1+deb12u4 2026/10/17 - https://haproxy.org/\nStatus: ...", "2.6.12-1+deb12u4"},
		{"nginx version: nginx/1.22.1", "1.22.1"},
		{"v2.7.6 h1:w0NymbG2m9PcvKWsrXO6EEkY9Ru4FJK8uQbYcev1p3A=", "2.7.6"},
		{"2.6.2", "2.6.2"},
	} {
		g := &Gateway{Name: "fake", VersionArgs: []string{"-c", "printf '%s\\n' \"$0\" >&2", tt.printed}}
		got, err := Version(t.Context(), g, sh, t.TempDir())
		if err != nil || got != tt.want {
			t.Errorf("Version from %q = %q, %v; want %q", tt.printed, got, err, tt.want)
		}
	}
}

// fakeGateway runs sh -c script as a gateway.
func fakeGateway(t *testing.T, script string) (*Gateway, string) {
	t.Helper()
	sh, err := LookPath("sh")
	if err != nil {
		t.Skip(err)
	}
	return &Gateway{
		Name:     "fake",
		ConfName: "fake.conf",
		RunArgs:  func(conf, _ string) []string { return []string{"-c", script, "fake", conf} },
	}, sh
}

func TestLaunchRetriesAGatewayThatExits(t *testing.T) {
	checkGoroutines(t)
	g, sh := fakeGateway(t, `echo "cannot bind: $(grep bind "$1")" >&2; exit 3`)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	l, err := Launch(ctx, g, sh, []byte("bind 127.0.0.1:8080\nserver 127.0.0.1:8090\n"), t.TempDir(), testutil.Listen(t))
	if err == nil {
		l.Stop(StopGrace)
		t.Fatal("Launch of a gateway that exits succeeded")
	}
	t.Logf("Launch error, as a failing test would show it:\n%v", err)
	msg := err.Error()
	for _, want := range []string{"attempt 1:", "attempt 2:", "exit status 3", "cannot bind: bind 127.0.0.1:", "--- gateway log"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Launch error lacks %q:\n%s", want, msg)
		}
	}
	if !errors.Is(err, ErrExited) {
		t.Errorf("Launch error is not ErrExited: %v", err)
	}
}

func TestLaunchGivesUpOnAGatewayThatNeverListens(t *testing.T) {
	checkGoroutines(t)
	g, sh := fakeGateway(t, `echo starting >&2; exec sleep 30`)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	dir := t.TempDir()
	// The context ends once the gateway has said it started, so that its
	// log has something to quote.
	cancelled := make(chan time.Time, 1)
	go func() {
		testutil.Poll(func() bool {
			b, _ := os.ReadFile(filepath.Join(dir, "gateway-1.log"))
			return strings.Contains(string(b), "starting")
		}, testutil.AwaitBound)
		cancel()
		cancelled <- time.Now()
	}()
	l, err := Launch(ctx, g, sh, []byte("127.0.0.1:8080 127.0.0.1:8090"), dir, testutil.Listen(t))
	if err == nil {
		l.Stop(StopGrace)
		t.Fatal("Launch of a gateway that never listens succeeded")
	}
	if d := time.Since(<-cancelled); d > 5*time.Second {
		t.Errorf("Launch returned %v after its context ended", d)
	}
	for _, want := range []string{"not accepting connections", "context canceled", "starting"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Launch error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "attempt 2") {
		t.Errorf("Launch retried a gateway that was still running:\n%v", err)
	}
}

// TestWaitListeningNotAnotherProcess: a connection accepted on the
// gateway's port by another process (here the test's own listener, as a
// parallel test's could take a port FreePorts found) is not the gateway
// listening: WaitListening keeps waiting, then names who listens there.
func TestWaitListeningNotAnotherProcess(t *testing.T) {
	checkGoroutines(t)
	g, sh := fakeGateway(t, `exec sleep 30`)
	dir := t.TempDir()
	p, err := Start(sh, g.RunArgs("fake.conf", dir), nil, dir, filepath.Join(dir, "gateway.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(StopGrace)
	ln := testutil.Listen(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	err = p.WaitListening(ctx, ln.Addr().String())
	if err == nil {
		t.Fatal("WaitListening took the test's own listener for the gateway's")
	}
	if errors.Is(err, ErrExited) || !errors.Is(err, context.DeadlineExceeded) ||
		!strings.Contains(err.Error(), "is listening there, not the gateway") {
		t.Errorf("WaitListening: %v; want the deadline, naming the other listener", err)
	}
}

func TestStopKillsWhatIgnoresSIGTERM(t *testing.T) {
	checkGoroutines(t)
	sh, err := LookPath("sh")
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	// The leader ignores SIGTERM; so does the child it leaves in the group.
	p, err := Start(sh, []string{"-c", `trap "" TERM; (trap "" TERM; sleep 30) & echo $! > child.pid; echo ready; wait`}, nil, dir, filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	testutil.Await(t, "the gateway to say it is ready", func() bool { return strings.Contains(p.Log(), "ready") })
	start := time.Now()
	err = p.Stop(200 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Stop = %v, want a report that the gateway was killed", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Stop took %v with a 200 ms grace", d)
	}
	if p.Stop(time.Second) != err {
		t.Errorf("a second Stop did not return the first one's result")
	}
	b, _ := os.ReadFile(filepath.Join(dir, "child.pid"))
	pid := strings.TrimSpace(string(b))
	gone := testutil.Poll(func() bool {
		if _, err := os.Stat("/proc/" + pid); err != nil {
			return true
		}
		st, _ := os.ReadFile("/proc/" + pid + "/stat")
		return strings.Contains(string(st), ") Z ") // a zombie awaiting its reaper
	}, testutil.AwaitBound)
	if !gone {
		t.Errorf("the gateway's child %s survived Stop", pid)
	}
}

func TestMissingProgramSkipsOutsideCI(t *testing.T) {
	t.Setenv("CI", "")
	g := &Gateway{Name: "fake", Program: "sse-latency-no-such-gateway", Package: "fake-package"}
	skipped := false
	t.Run("missing", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		requireProgram(t, g)
		t.Error("requireProgram returned for a missing program")
	})
	if !skipped {
		t.Error("a missing gateway program did not skip the test outside CI")
	}
}
