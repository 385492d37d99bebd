package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/testutil"
)

// binary is the sse-latency executable built once by TestMain, as the
// image ships it (image/build.sh binary: static, the commit stamped):
// these tests run it as a real process, to check what only a process has —
// signals and exit statuses — and TestImage puts it in the image.
var binary string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sse-latency-main-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "sse-latency")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "sh", filepath.Join("..", "..", "image", "build.sh"), "binary", binary)
	if _, err := exec.LookPath("go"); err != nil { // the script runs the go of PATH
		build.Env = append(os.Environ(), "PATH="+filepath.Join(os.Getenv("GOROOT"), "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building sse-latency: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// proc is a running sse-latency whose stderr is read as it comes.
type proc struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer

	mu     sync.Mutex
	stderr bytes.Buffer
	seen   chan struct{} // closed when a stderr line contains the awaited text (startReading)
	done   chan struct{} // closed when stderr has reached EOF
	listen chan string   // the dummy server's address, once it has said it
}

// listeningRE finds the dummy server's address in its stderr line.
var listeningRE = regexp.MustCompile(`listening on (\S+) `)

// start runs the binary with args; listen receives the address the dummy
// server says it listens on. Its stdout goes to p.stdout, or to the file
// stdout when not nil. The process is killed when the test ends, if it is
// still running.
func start(t *testing.T, ctx context.Context, stdout *os.File, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.CommandContext(ctx, binary, args...)}
	if stdout != nil {
		p.cmd.Stdout = stdout
	}
	p.startReading(t, "", nil)
	return p
}

// startReading starts p.cmd, its stdout into p.stdout unless already set,
// and reads its stderr as it comes: listen receives the address the dummy
// server says it listens on, seen closes on the first line that contains
// await (when not ""), and each line goes to every onLine. The process is
// killed when the test ends, if it is still running.
func (p *proc) startReading(t *testing.T, await string, onLine []func(string)) {
	t.Helper()
	if p.cmd.Stdout == nil {
		p.cmd.Stdout = &p.stdout
	}
	p.seen, p.done, p.listen = make(chan struct{}), make(chan struct{}), make(chan string, 1)
	p.cmd.WaitDelay = 5 * time.Second
	errPipe, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	go func() {
		defer close(p.done)
		r := bufio.NewReader(errPipe)
		var once sync.Once
		for {
			line, err := r.ReadString('\n')
			p.mu.Lock()
			p.stderr.WriteString(line)
			p.mu.Unlock()
			for _, f := range onLine {
				f(line)
			}
			if await != "" && strings.Contains(line, await) {
				once.Do(func() { close(p.seen) })
			}
			if m := listeningRE.FindStringSubmatch(line); m != nil {
				select {
				case p.listen <- m[1]:
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
}

// stderrText is what the process has written to stderr so far.
func (p *proc) stderrText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// await waits, at most d, for the stderr line startReading awaits.
func (p *proc) await(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-p.seen:
	case <-p.done:
		p.cmd.Wait()
		t.Fatalf("process ended before the awaited line; stdout:\n%s\nstderr:\n%s", p.stdout.String(), p.stderrText())
	case <-time.After(d):
		t.Fatalf("no awaited line on stderr within %v; stderr so far:\n%s", d, p.stderrText())
	}
}

// wait waits, at most d, for the process to exit, and returns its exit
// status.
func (p *proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	exited := make(chan error, 1)
	go func() {
		<-p.done // stderr drained first: Wait closes the pipe
		exited <- p.cmd.Wait()
	}()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0
		case errors.As(err, &ee) && ee.Exited():
			return ee.ExitCode()
		default:
			t.Fatalf("process did not exit normally: %v\nstderr:\n%s", err, p.stderrText())
		}
	case <-time.After(d):
		p.cmd.Process.Kill()
		t.Fatalf("process still running %v after the signal; stderr:\n%s", d, p.stderrText())
	}
	return -1
}

func (p *proc) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
}

// holdTokens is how many tokens of each stream the gateway of startLong
// passes on before it holds the rest back.
const holdTokens = 5

// startLong starts a long run (longRun with extra arguments) and returns
// once each of its 4 streams has delivered holdTokens tokens to the
// client: the gateway, a relay to the dummy server, holds the rest back,
// and the kernel says when the client has read what it passed
// (testutil.Hold). The dummy server binds 127.0.0.1:0 and says where; the
// relay dials what it said.
func startLong(t *testing.T, ctx context.Context, stdout *os.File, extra ...string) *proc {
	t.Helper()
	hold := &testutil.Hold{Marker: `"delta":{"content":"`, N: holdTokens}
	addrs := make(chan *proc, 1)
	gw := testutil.Relay(t, func() string {
		p := <-addrs
		addrs <- p
		select {
		case addr := <-p.listen:
			p.listen <- addr
			return addr
		case <-time.After(testutil.AwaitBound):
			return ""
		}
	}, hold.Pump)
	p := start(t, ctx, stdout, longRun(gw, extra...)...)
	addrs <- p
	ended := func() bool {
		select {
		case <-p.done:
			return true
		default:
			return false
		}
	}
	testutil.Await(t, "4 streams through the gateway", func() bool { return len(hold.Held()) >= 4 || ended() })
	if ended() {
		p.cmd.Wait()
		t.Fatalf("process ended before its 4 streams began; stdout:\n%s\nstderr:\n%s", p.stdout.String(), p.stderrText())
	}
	hold.AwaitRead(t, 4)
	return p
}

// longRun is a run that would stream for 100 s: 4 requests of 100,000
// tokens 1 ms apart, through gateway gw to the tool's own server, without
// calibration (-l).
func longRun(gw string, extra ...string) []string {
	return append([]string{"-L", "127.0.0.1:0", "-t", gw, "-l", "-r", "4", "-c", "4", "-n", "100000", "-d", "1", "-q"}, extra...)
}

var interTokenRE = regexp.MustCompile(`(?m)^inter-token \(client\)\s+n=(\d+)\s`)

func TestInterruptReportsWhatWasMeasured(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	jsonPath := filepath.Join(t.TempDir(), "run.json")
	p := startLong(t, ctx, nil, "--json", jsonPath)
	p.signal(t, os.Interrupt)
	code := p.wait(t, 20*time.Second)
	out, errOut := p.stdout.String(), p.stderrText()

	if code != 130 {
		t.Errorf("exit status %d after SIGINT, want 130\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if title := "=== gateway: 4 requests, 0 ok, 4 failed, "; !strings.Contains(out, title) {
		t.Errorf("stdout lacks %q (every stream cut short counts as failed):\n%s", title, out)
	}
	if m := interTokenRE.FindStringSubmatch(out); m == nil {
		t.Errorf("stdout has no inter-token line:\n%s", out)
	} else if n, _ := strconv.Atoi(m[1]); n < 4*(holdTokens-1) {
		t.Errorf("inter-token n=%d, want at least 4 x %d: the tokens received before the interruption are not all reported:\n%s", n, holdTokens-1, out)
	}
	if !strings.Contains(errOut, "interrupted") {
		t.Errorf("stderr does not say the run was interrupted:\n%s", errOut)
	}

	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatalf("--json file not written on interruption: %v", err)
	}
	var doc struct {
		EndReason string `json:"end_reason"`
		ExitCode  int    `json:"exit_code"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("--json file does not parse: %v\n%.500s", err, data)
	}
	if doc.EndReason != "interrupted" || doc.ExitCode != 130 {
		t.Errorf("--json end_reason %q, exit_code %d; want \"interrupted\", 130", doc.EndReason, doc.ExitCode)
	}
}

// TestSecondInterruptExitsAtOnce makes the orderly shutdown of the first
// SIGINT hang — the JSON document goes to a stdout pipe that nobody reads,
// shrunk to one page, which the document overflows — so that only the
// second SIGINT can end the process. The second comes once the pipe is
// full: the shutdown is blocked on it.
func TestSecondInterruptExitsAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	size, err := shrinkPipe(w)
	if err != nil {
		t.Skipf("cannot size the pipe: %v", err)
	}
	p := startLong(t, ctx, w, "--json", "-") // a document of several pages
	w.Close()                                // the child holds its own copy
	p.signal(t, os.Interrupt)
	testutil.Await(t, "the document to fill the stdout pipe", func() bool {
		n, err := pipeBuffered(r)
		return err == nil && n >= size
	})
	p.signal(t, os.Interrupt)
	if code := p.wait(t, 10*time.Second); code != 130 {
		t.Errorf("exit status %d after two SIGINTs, want 130\nstderr:\n%s", code, p.stderrText())
	}
}

func TestSIGTERMInterruptsLikeSIGINT(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := startLong(t, ctx, nil)
	p.signal(t, syscall.SIGTERM)
	if code := p.wait(t, 20*time.Second); code != 130 {
		t.Errorf("exit status %d after SIGTERM, want 130\nstderr:\n%s", code, p.stderrText())
	}
	if out := p.stdout.String(); !strings.Contains(out, "=== gateway: 4 requests, 0 ok, 4 failed, ") {
		t.Errorf("no gateway report after SIGTERM:\n%s", out)
	}
}

func TestExitStatusOfHelpAndBadFlag(t *testing.T) {
	tests := []struct {
		args       []string
		code       int
		wantStderr []string
	}{
		{[]string{"-h"}, 0, []string{"usage: sse-latency [options]"}},
		{[]string{"--help"}, 0, []string{"usage: sse-latency [options]"}},
		{[]string{"--no-such-flag"}, 1, []string{"sse-latency: ", "no-such-flag", "usage: sse-latency [options]"}},
		{[]string{"-r", "many"}, 1, []string{"sse-latency: ", "usage: sse-latency [options]"}},
		{[]string{"-L", "127.0.0.1:99999"}, 1, []string{"-L: "}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, tt.args...)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.code {
				t.Errorf("sse-latency %s: exit status %d, want %d\nstderr:\n%s", strings.Join(tt.args, " "), code, tt.code, errb.String())
			}
			for _, want := range tt.wantStderr {
				if !strings.Contains(errb.String(), want) {
					t.Errorf("sse-latency %s: stderr lacks %q:\n%s", strings.Join(tt.args, " "), want, errb.String())
				}
			}
			if tt.code != 0 && out.Len() != 0 {
				t.Errorf("sse-latency %s: stdout should stay empty on a usage error, got:\n%s", strings.Join(tt.args, " "), out.String())
			}
		})
	}
}

// TestVersion checks --version prints one line and exits 0.
func TestVersion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "--version").Output()
	if err != nil {
		t.Fatalf("--version: %v", err)
	}
	if !strings.HasPrefix(string(out), "sse-latency ") || bytes.Count(out, []byte("\n")) != 1 {
		t.Errorf("--version printed %q, want one line \"sse-latency <version>\"", out)
	}
}
