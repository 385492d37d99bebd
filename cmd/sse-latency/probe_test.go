package main

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/probe/probetest"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// TestProbeSIGTERM runs `sse-latency probe` as a process through an
// in-process gateway and sends it SIGTERM while the requests of its second
// round are in the gateway: the round runs to its end, every request ok,
// no third round starts, and the process exits 0.
func TestProbeSIGTERM(t *testing.T) {
	const r = 3
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var p *proc
	signalled := make(chan struct{})
	g := testutil.StartGateway(t, testutil.GatewayOptions{OnRequest: func(n int64) {
		if n == r+1 { // the first request of round 2
			p.cmd.Process.Signal(syscall.SIGTERM)
			close(signalled)
		}
	}})
	p = &proc{cmd: exec.CommandContext(ctx, binary, "probe", "-L", "127.0.0.1:0", "-t", g.Addr, "--metrics", "127.0.0.1:0",
		"--every", "10ms", "-r", "3", "-c", "1", "-n", "20", "-d", "1")}
	p.startReading(t, "probe: stopped", []func(string){func(line string) { g.UpstreamFrom(line) }})
	code := p.wait(t, time.Minute)
	select {
	case <-signalled:
	default:
		t.Fatalf("the probe ended (%d) before its second round:\n%s", code, p.stderrText())
	}
	out := p.stderrText()
	if code != 0 {
		t.Errorf("exit status %d after SIGTERM, want 0\n%s", code, out)
	}
	probetest.CheckStoppedAfter(t, out, 2, r)
}
