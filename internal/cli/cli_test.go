package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/batch"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite golden files")

// runMain calls Main in-process with a deadline and returns its outputs.
func runMain(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runOn(t, ctx, nil, args...)
}

// runOn is runMain with the dummy server on ln (MeasureOn), a listener the
// test bound, whose address args give with -L; nil ln: Main.
func runOn(t *testing.T, ctx context.Context, ln net.Listener, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	if ctx == nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
	}
	var out, errb bytes.Buffer
	if ln == nil {
		code = Main(ctx, args, &out, &errb)
	} else {
		code, _ = MeasureOn(ctx, ln, args, &out, &errb)
	}
	return code, out.String(), errb.String()
}

func TestUsagePinned(t *testing.T) {
	golden := filepath.Join("testdata", "usage.txt")
	if *update {
		os.WriteFile(golden, []byte(usage()), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if usage() != string(want) {
		t.Errorf("usage text drifted from %s (run go test -update to accept):\n%s", golden, usage())
	}
}

// TestUsageNamesEveryFlag keeps the hand-written usage in step with the flag
// set: every long and short name must appear in it.
func TestUsageNamesEveryFlag(t *testing.T) {
	for _, name := range []string{"listen", "target", "requests", "concurrency", "tokens", "think", "delay",
		"timeout", "no-loopback", "quiet", "verbose", "compat", "compressed", "api", "model", "path", "include-usage", "json", "html", "csv", "idle-timeout", "keepalive", "server-close", "max-streams", "header", "api-key", "host-header", "gateway", "insecure", "cacert", "http2", "h2c", "tls-cert", "tls-key", "tls-self-signed", "rate", "arrival", "duration", "warmup", "rounds", "prompt-bytes", "slo", "control", "control-token", "server", "help", "version"} {
		if !strings.Contains(usage(), "--"+name) {
			t.Errorf("usage does not mention --%s", name)
		}
	}
	for _, short := range "LtrcnTdwlqvhkH" {
		if !strings.Contains(usage(), "-"+string(short)+",") {
			t.Errorf("usage does not mention -%c", short)
		}
	}
}

func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}} {
		code, out, errOut := runMain(t, nil, args...)
		if code != ExitOK || out != "" || errOut != usage() {
			t.Errorf("Main(%q) = %d, stdout %q, stderr %q; want 0 and the usage on stderr", args, code, out, errOut)
		}
	}
	code, out, _ := runMain(t, nil, "--version")
	if code != ExitOK || !strings.HasPrefix(out, "sse-latency ") {
		t.Errorf("Main(--version) = %d, %q; want 0 and a version line", code, out)
	}
}

// TestVersionOf: the version names the toolchain's VCS stamp, else the
// commit the build stamped (image/build.sh), else none.
func TestVersionOf(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	vcs := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "fedcba9876543210"}}}
	plain := &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}
	for _, tt := range []struct {
		bi     *debug.BuildInfo
		commit string
		want   string
	}{
		{vcs, sha, "(devel) fedcba987654"},
		{plain, sha, "v1.2.3 0123456789ab"},
		{plain, sha + "-dirty", "v1.2.3 0123456789ab-dirty"},
		{plain, "", "v1.2.3"},
		{plain, "short", "v1.2.3"},
	} {
		if got := versionOf(tt.bi, tt.commit); got != tt.want {
			t.Errorf("versionOf(%v, %q) = %q, want %q", tt.bi.Main.Version, tt.commit, got, tt.want)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-x"}, "unknown shorthand flag: 'x'"},
		{[]string{"--bogus"}, "unknown flag: --bogus"},
		{[]string{"-r"}, "flag needs an argument"},
		{[]string{"-r", "many"}, "invalid argument \"many\""},
		{[]string{"-d", "fast"}, "invalid argument \"fast\""},
		{[]string{"-L", "nope"}, "bad port"},
		{[]string{"-L", ":99999"}, "bad port"},
		{[]string{"-t", "host:"}, "bad port"},
		{[]string{"-T", "NaN", "-t", ":1"}, "finite"},
		{[]string{"extra"}, "unexpected argument \"extra\""},
		{[]string{"--websocket", "-t", ":1"}, "--websocket needs --api responses"},
		{[]string{"--websocket", "--api", "responses", "--h2c", "-t", ":1"}, "not with --http2 or --h2c"},
	}
	for _, tt := range tests {
		code, out, errOut := runMain(t, nil, tt.args...)
		if code != ExitFailure || out != "" || !strings.Contains(errOut, tt.want) || !strings.HasSuffix(errOut, usage()) {
			t.Errorf("Main(%q) = %d, stdout %q, stderr %q; want 1, an error containing %q, then the usage", tt.args, code, out, errOut, tt.want)
		}
	}
}

func TestClamps(t *testing.T) {
	tests := []struct {
		args []string
		want Config
	}{
		{nil, DefaultConfig()},
		{[]string{"-r", "0", "-c", "-4"}, func() Config { c := DefaultConfig(); return c }()},
		{[]string{"-r", "5", "-c", "50"}, func() Config { c := DefaultConfig(); c.Requests, c.Concurrency = 5, 5; return c }()},
		{[]string{"--requests=7", "--concurrency", "3", "-n", "-1", "-T", "-2", "-d", "-1", "-w", "0"},
			func() Config {
				c := DefaultConfig()
				c.Requests, c.Concurrency, c.Tokens, c.ThinkMs, c.DelayMs, c.TimeoutMs = 7, 3, 0, 0, 0, 1
				return c
			}()},
		{[]string{"-lqv", "-t", "127.0.0.1:8080", "-L", "*:9000", "-d", "2.5"},
			func() Config {
				c := DefaultConfig()
				c.NoLoopback, c.Quiet, c.Verbose, c.Target, c.Listen, c.DelayMs = true, true, true, "127.0.0.1:8080", "*:9000", 2.5
				return c
			}()},
	}
	for _, tt := range tests {
		got, err := parseArgs(tt.args)
		if err != nil || !reflect.DeepEqual(got.cfg, tt.want) {
			t.Errorf("parseArgs(%q) = %+v, %v; want %+v", tt.args, got.cfg, err, tt.want)
		}
	}
}

func TestAddressForms(t *testing.T) {
	tests := []struct {
		in         string
		listen     string
		dest       string
		wantErrSub string
	}{
		{"8090", ":8090", "127.0.0.1:8090", ""},
		{":8090", ":8090", "127.0.0.1:8090", ""},
		{"*:8090", ":8090", "127.0.0.1:8090", ""},
		{"127.0.0.2:80", "127.0.0.2:80", "127.0.0.2:80", ""},
		{"localhost:80", "localhost:80", "127.0.0.1:80", ""},
		{"::1:8090", "[::1]:8090", "[::1]:8090", ""},
		{"[::1]:8090", "[::1]:8090", "[::1]:8090", ""},
		{"0.0.0.0:1", "0.0.0.0:1", "127.0.0.1:1", ""},
		{"", "", "", "empty address"},
		{"host:x", "", "", "bad port"},
		{"[::1:80", "", "", "bad address"},
	}
	for _, tt := range tests {
		l, _, err := listenAddr(tt.in)
		if tt.wantErrSub != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErrSub) {
				t.Errorf("listenAddr(%q) = %q, %v; want an error containing %q", tt.in, l, err, tt.wantErrSub)
			}
			continue
		}
		d, derr := destAddr(context.Background(), tt.in)
		if err != nil || derr != nil || l != tt.listen || d != tt.dest {
			t.Errorf("listenAddr(%q), destAddr = %q, %q (%v, %v); want %q, %q", tt.in, l, d, err, derr, tt.listen, tt.dest)
		}
	}
}

func TestServerOnlyStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const waiting = "no -t given: running as server only. Ctrl-C to stop.\n"
	stderr := &watchWriter{}
	done := make(chan int, 1)
	go func() { done <- Main(ctx, []string{"-L", "127.0.0.1:0"}, io.Discard, stderr) }()
	// Cancelled once it says it waits for Ctrl-C, and has served a stream.
	testutil.Await(t, "the server-only line", func() bool { return strings.Contains(stderr.String(), waiting) })
	addr := regexp.MustCompile(`listening on (\S+) `).FindStringSubmatch(stderr.String())[1]
	resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true,"pi_tokens":7,"pi_delay_ms":0.1}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	cancel()
	var code int
	select {
	case code = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("server-only mode did not stop after its context was cancelled")
	}
	errOut := stderr.String()
	if code != ExitOK || !regexp.MustCompile(`dummy OpenAI-like SSE server listening on 127\.0\.0\.1:\d+ \(POST /v1/chat/completions\)`).MatchString(errOut) {
		t.Errorf("server-only: code %d, stderr %q", code, errOut)
	}
	// Its account when it stops: the stream's 7 tokens.
	if !regexp.MustCompile(`\nserver: 1 request, 7 tokens emitted, emission lateness p50=\d+\.\d{3}ms p99=\d+\.\d{3}ms max=\d+\.\d{3}ms\n`).MatchString(errOut) {
		t.Errorf("server-only: no account of the stream when it stopped:\n%s", errOut)
	}
}

// watchWriter is a buffer safe to read while the run writes into it.
type watchWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func TestListenFailure(t *testing.T) {
	code, _, errOut := runMain(t, nil, "-L", "192.0.2.1:1", "-t", "127.0.0.1:1")
	if code != ExitFailure || !strings.Contains(errOut, "cannot listen on 192.0.2.1:1") {
		t.Errorf("code %d stderr %q; want 1 and a listen error", code, errOut)
	}
}

// TestOpenFilesRefused: a concurrency that cannot fit under the hard
// open-files limit is refused before anything starts, saying how many
// descriptors it needs and how to raise the limit.
func TestOpenFilesRefused(t *testing.T) {
	code, out, errOut := runMain(t, nil, "-L", "127.0.0.1:0", "-t", "127.0.0.1:1", "-r", "100000000", "-c", "100000000")
	if code != ExitFailure || out != "" || !strings.Contains(errOut, "needs about 200000064 open files") || !strings.Contains(errOut, "ulimit -n") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1 and the open-files message", code, out, errOut)
	}
}

// TestHeartbeatFlag: --heartbeat parses, is bounded like the hint the
// server checks (a usage error naming the flag), is echoed in the JSON
// configuration, and reaches the server's default and the requests' hint.
func TestHeartbeatFlag(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--heartbeat", "5"}, "--heartbeat 5: want 0 (none) or 10 to 600000 ms of silence before each heartbeat"},
		{[]string{"--heartbeat", "-1"}, "--heartbeat -1: want 0 (none)"},
		{[]string{"--heartbeat", "600001"}, "--heartbeat 600001: want"},
		{[]string{"--heartbeat", "NaN"}, "--heartbeat NaN: want"},
		{[]string{"--heartbeat", "often"}, `invalid argument "often" for "--heartbeat" flag`},
	} {
		code, out, errOut := runMain(t, nil, tt.args...)
		if code != ExitFailure || out != "" || !strings.Contains(errOut, tt.want) || !strings.HasSuffix(errOut, usage()) {
			t.Errorf("Main(%q) = %d, stdout %q, stderr %q; want 1, an error containing %q, then the usage", tt.args, code, out, errOut, tt.want)
		}
	}
	cl, err := parseArgs([]string{"--heartbeat", "500"})
	if err != nil || cl.cfg.HeartbeatMs != 500 || DefaultConfig().HeartbeatMs != 0 {
		t.Fatalf("parseArgs(--heartbeat 500) = %v, %v; default %v", cl.cfg.HeartbeatMs, err, DefaultConfig().HeartbeatMs)
	}
	var echo map[string]any
	b, _ := json.Marshal(cl.cfg.Redacted())
	if json.Unmarshal(b, &echo); echo["heartbeat_ms"] != 500.0 {
		t.Errorf("the JSON configuration %s lacks heartbeat_ms 500", b)
	}
	r := &run{commandLine: cl, cfg: cl.cfg, gwAddr: "127.0.0.1:1", selfAddr: "127.0.0.1:1"}
	if gw, loop := r.gatewayRequest(), r.calibrationRequest(10); gw.HeartbeatMs != 500 || loop.HeartbeatMs != 500 {
		t.Errorf("the requests ask for heartbeats every %v ms (gateway), %v ms (calibration); want 500", gw.HeartbeatMs, loop.HeartbeatMs)
	}
}

// TestPhaseFlags: --reasoning, --tool-call and --reasoning-field parse,
// are checked (a bad value is a usage error naming the flag), are echoed
// in the configuration the JSON document carries, and reach the requests
// of both batches (the calibration's capped like its text) and the
// server's defaults.
func TestPhaseFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--reasoning", "-1"}, "--reasoning -1: want a number of tokens from 0 to the server's limit of 1000000"},
		{[]string{"--tool-call", "1000001"}, "--tool-call 1000001: want a number of tokens from 0"},
		{[]string{"--reasoning", "lots"}, `invalid argument "lots" for "--reasoning" flag`},
		{[]string{"--reasoning-field", "summary"}, `--reasoning-field: unknown reasoning field "summary" (want reasoning_content or reasoning)`},
		{[]string{"--api", "completions", "--tool-call", "2"}, "--reasoning and --tool-call need --api chat, responses or anthropic"},
	} {
		code, out, errOut := runMain(t, nil, tt.args...)
		if code != ExitFailure || out != "" || !strings.Contains(errOut, tt.want) || !strings.HasSuffix(errOut, usage()) {
			t.Errorf("Main(%q) = %d, stdout %q, stderr %q; want 1, an error containing %q, then the usage", tt.args, code, out, errOut, tt.want)
		}
	}

	cl, err := parseArgs([]string{"--api", "responses", "--reasoning", "300", "--tool-call", "20", "--reasoning-field", "reasoning", "-n", "50"})
	cfg := cl.cfg
	if err != nil || cfg.Reasoning != 300 || cfg.ToolCall != 20 || cfg.ReasoningShape() != api.ReasoningPlain {
		t.Fatalf("parseArgs = %+v, %v", cfg, err)
	}
	if def := DefaultConfig(); def.Reasoning != 0 || def.ToolCall != 0 || def.ReasoningShape() != api.ReasoningContent {
		t.Errorf("defaults: reasoning %d, tool call %d, field %q", def.Reasoning, def.ToolCall, def.ReasoningField)
	}
	var echo map[string]any
	b, _ := json.Marshal(cfg.Redacted())
	if json.Unmarshal(b, &echo); echo["reasoning"] != 300.0 || echo["tool_call"] != 20.0 || echo["reasoning_field"] != "reasoning" {
		t.Errorf("the JSON configuration %s lacks the phase flags", b)
	}
	r := &run{commandLine: cl, cfg: cfg, gwAddr: "127.0.0.1:1", selfAddr: "127.0.0.1:1"}
	gw := r.gatewayRequest()
	loop := r.calibrationRequest(batch.CalibrationFor(cfg.Requests, cfg.Concurrency, cfg.Tokens).Tokens)
	if gw.Reasoning != 300 || gw.ToolCall != 20 || loop.Reasoning != batch.CalibrationMaxTokens || loop.ToolCall != 20 {
		t.Errorf("requests ask for reasoning/tool call %d/%d (gateway), %d/%d (calibration); want 300/20, %d/20",
			gw.Reasoning, gw.ToolCall, loop.Reasoning, loop.ToolCall, batch.CalibrationMaxTokens)
	}
}
