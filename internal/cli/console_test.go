package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/rundoc"
)

func TestExitStatus(t *testing.T) {
	tests := []struct {
		interrupted bool
		failed      int
		sloMet      bool
		code        int
		reason      string
	}{
		{false, 0, true, ExitOK, rundoc.EndDone},
		{false, 3, true, ExitFailure, rundoc.EndDone},
		{false, 0, false, ExitGate, rundoc.EndDone},
		{false, 3, false, ExitFailure, rundoc.EndDone}, // failed requests first: they explain a missed objective
		{true, 0, true, ExitInterrupted, rundoc.EndInterrupted},
		{true, 3, false, ExitInterrupted, rundoc.EndInterrupted},
	}
	for _, tt := range tests {
		if code, reason := exitStatus(tt.interrupted, tt.failed, tt.sloMet); code != tt.code || reason != tt.reason {
			t.Errorf("exitStatus(%v, %d, %v) = %d, %q; want %d, %q", tt.interrupted, tt.failed, tt.sloMet, code, reason, tt.code, tt.reason)
		}
	}
}

// brokenStdout fails every write after the first n.
type brokenStdout struct{ n int }

func (b *brokenStdout) Write(p []byte) (int, error) {
	if b.n == 0 {
		return 0, errors.New("no space left on device")
	}
	b.n--
	return len(p), nil
}

// TestStdoutFailure: a run whose stdout fails (a full disk under a
// redirection) says so and exits 1, whether a per-request line or the
// report was lost; it still writes its document.
func TestStdoutFailure(t *testing.T) {
	g := startPodGateway(t)
	for _, n := range []int{0, 2} { // the first request line lost; the report lost
		path := filepath.Join(t.TempDir(), "run.json")
		stderr := announcer(g, "pod-0")
		args := []string{"-L", "127.0.0.1:0", "-t", g.addr, "--path", "/pod-0/v1/chat/completions",
			"-r", "2", "-n", "10", "-d", "0.5", "-l", "--json", path}
		code, _ := Measure(context.Background(), args, &brokenStdout{n: n}, stderr)
		if code != ExitFailure || !strings.Contains(stderr.String(), "sse-latency: writing the report: no space left on device\n") {
			t.Errorf("stdout failing after %d writes: exit %d, stderr\n%s\nwant 1 and the error", n, code, stderr.String())
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("stdout failing after %d writes: no document: %v", n, err)
		}
	}
}

// TestVersionToBrokenStdout: --version that cannot be printed fails.
func TestVersionToBrokenStdout(t *testing.T) {
	var errOut strings.Builder
	if code, _ := Measure(context.Background(), []string{"--version"}, &brokenStdout{}, &errOut); code != ExitFailure ||
		!strings.Contains(errOut.String(), "no space left on device") {
		t.Errorf("--version to a failing stdout: exit %d, stderr %q; want 1 and the error", code, errOut.String())
	}
}
