//go:build linux

package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/cli"
	"github.com/sse-latency/sse-latency/internal/rundoc"
	"github.com/sse-latency/sse-latency/internal/sweep"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// exampleNamed returns the shipped example called name.
func exampleNamed(t *testing.T, name string) Example {
	t.Helper()
	for _, ex := range allExamples() {
		if ex.Name == name {
			return ex
		}
	}
	t.Fatalf("no example %q", name)
	return Example{}
}

// TestSweepHAProxy sweeps the concurrency through real haproxy, with and
// without option http-no-delay: every step has its overhead; without the
// option every step buffers, adding tens of milliseconds (the knee is the
// first step: the threshold is passed at every load); with it every step
// adds well under a millisecond at p50 — every step the tool did not flag
// as its own saturation: on a machine busy enough to stall the tool for
// tens of milliseconds (which the step then flags) the few requests of a
// step show the stall, not the gateway; those steps are logged, not
// judged. (The flushing verdict is logged too, for the same reason.)
func TestSweepHAProxy(t *testing.T) {
	for _, name := range []string{"haproxy", "haproxy-no-delay"} {
		t.Run(name, func(t *testing.T) {
			checkGoroutines(t)
			ex := exampleNamed(t, name)
			bin := requireProgram(t, ex.Gateway)
			ctx, cancel := context.WithTimeout(t.Context(), e2eLimit)
			defer cancel()
			gw := launch(t, ctx, ex, bin)
			jsonPath := filepath.Join(t.TempDir(), "sweep.json")
			args := []string{"sweep", "-L", gw.BackendAddr, "-t", gw.Addr, "-r", "4", "-n", "100", "-d", "2", "-w", "20000", "-q",
				"--concurrency", "1,2,4", "--json", jsonPath}
			var stdout, stderr bytes.Buffer
			code, _ := cli.MeasureOn(ctx, gw.Backend, args, &stdout, &stderr)
			run := "sse-latency " + strings.Join(args, " ") + "\n--- stdout ---\n" + stdout.String() + "--- stderr ---\n" + stderr.String() +
				"--- gateway log ---\n" + gw.Log()
			if code != cli.ExitOK {
				t.Fatalf("exit %d\n%s", code, run)
			}
			f, err := os.Open(jsonPath)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			d, err := rundoc.ReadJSON(f)
			if err != nil || d.Sweep == nil || len(d.Sweep.Steps) != 3 {
				t.Fatalf("the sweep's document: %v\n%s", err, run)
			}
			for _, st := range d.Sweep.Steps {
				o, v := st.Overhead, st.Verdict
				if o == nil || o.EmitRecv == nil || o.TTFT == nil || v == nil || st.Gateway().OK != 4 {
					t.Fatalf("step %v: overhead %+v, verdict %v; want both, and every request ok\n%s", st.Value, o, v, run)
				}
				t.Logf("%s concurrency %v: added emit->recv p50 %+.3f p99 %+.3f ms, TTFT p50 %+.3f ms, %s, tool saturated %v",
					name, st.Value, o.EmitRecv.P50Ms, o.EmitRecv.P99Ms, o.TTFT.P50Ms, v.Class, st.ToolSaturated)
				switch {
				case name == "haproxy":
					// Held tokens wait tens of ms; at p99 whatever the load.
					if v.Class != verdict.Buffers || o.EmitRecv.P99Ms < buffersMinAddedMeanMs {
						t.Errorf("step %v: %s, added p99 %.3f ms; want buffering adding over %v ms at every load\n%s",
							st.Value, v.Class, o.EmitRecv.P99Ms, buffersMinAddedMeanMs, run)
					}
				case st.ToolSaturated:
					// The step says it measured the tool's own load (a
					// machine busy enough to stall it for tens of ms):
					// its figures are not the gateway's to judge.
					t.Logf("concurrency %v: not judged: %s", st.Value, st.ToolReason)
				default:
					if o.EmitRecv.P50Ms > flushesMaxAddedP50Ms {
						t.Errorf("step %v: added p50 %.3f ms; want under %v ms\n%s", st.Value, o.EmitRecv.P50Ms, flushesMaxAddedP50Ms, run)
					}
				}
			}
			if name == "haproxy" {
				if k := d.Sweep.Knee; k == nil || k.Step != 0 || k.Reason != sweep.KneeThreshold {
					t.Errorf("knee %+v, want the first step, past the threshold\n%s", k, run)
				}
				if !strings.Contains(stdout.String(), "buffers   KNEE") || strings.Count(stdout.String(), "buffers   beyond") != 2 {
					t.Errorf("the table should show the buffering at every step:\n%s", run)
				}
			}
		})
	}
}

// TestCIGate runs examples/ci/gate.sh as the example workflow does, with a
// small load: a change from haproxy with option http-no-delay to haproxy
// without it is a regression far beyond any noise (exit 3); the same
// configuration twice is not (exit 0). The condition is on the added p50,
// which the tens of ms haproxy holds tokens for move and a busy machine's
// stalls do not (with a few rounds, a p99 can be unlucky in every round).
func TestCIGate(t *testing.T) {
	checkGoroutines(t)
	haproxy := requireProgram(t, HAProxy)
	bash, err := LookPath("bash")
	if err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*e2eLimit)
	defer cancel()
	dir := t.TempDir()
	sse := filepath.Join(dir, "sse-latency")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", sse, "../cmd/sse-latency").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, tt := range []struct {
		before, after string
		code          int
	}{
		{"haproxy-no-delay", "haproxy", cli.ExitGate},
		{"haproxy-no-delay", "haproxy-no-delay", cli.ExitOK},
	} {
		// The script starts the gateway on a port found free a moment
		// before, which another process may take meanwhile: the script
		// then refuses to measure it, and the test tries new ports, as
		// Launch does.
		var code int
		var stdout, stderr bytes.Buffer
		for attempt := 1; attempt <= 3; attempt++ {
			stdout.Reset()
			stderr.Reset()
			code = runGate(t, ctx, bash, haproxy, sse, tt.before, tt.after, &stdout, &stderr)
			if !strings.Contains(stderr.String(), "is already in use") && !strings.Contains(stderr.String(), "gate: the gateway exited") {
				break
			}
			t.Logf("attempt %d: the ports were taken:\n%s", attempt, stderr.String())
		}
		if code != tt.code {
			t.Errorf("gate.sh %s %s: exit %d, want %d\n--- stdout ---\n%s--- stderr ---\n%s", tt.before, tt.after, code, tt.code,
				stdout.String(), stderr.String())
		}
		if !strings.Contains(stdout.String(), "=== fail-if ===") {
			t.Errorf("gate.sh %s %s printed no fail-if block:\n%s", tt.before, tt.after, stdout.String())
		}
	}
}

// runGate renders the examples before and after on free ports and runs
// examples/ci/gate.sh on them with a small load; it returns its exit
// status.
func runGate(t *testing.T, ctx context.Context, bash, haproxy, sse, before, after string, stdout, stderr *bytes.Buffer) int {
	t.Helper()
	dir := t.TempDir()
	addrs, err := FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	confs := map[string]string{}
	for _, name := range []string{before, after} {
		b, err := os.ReadFile(repoPath(exampleNamed(t, name).File))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = Render(b, addrs[0], addrs[1]); err != nil {
			t.Fatal(err)
		}
		confs[name] = filepath.Join(dir, name+".cfg")
		if err := os.WriteFile(confs[name], b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(ctx, bash, repoPath("examples/ci/gate.sh"), confs[before], confs[after])
	cmd.Env = append(os.Environ(), "SSE_LATENCY="+sse, "GATEWAY="+haproxy+" -db -f", "LISTEN="+addrs[1], "TARGET="+addrs[0],
		"ROUNDS=3", "LOAD=-r 2 -c 2 -n 100 -d 2 -w 20000", "FAIL_IF=added emit->recv p50 +10ms", "OUT="+dir)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Run()
	return cmd.ProcessState.ExitCode()
}
