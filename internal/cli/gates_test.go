package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/report"
	"github.com/sse-latency/sse-latency/internal/rundoc"
	"github.com/sse-latency/sse-latency/internal/sweep"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// hooks shape an in-process gateway (newGateway): before runs as a
// request arrives, before it is forwarded (it may hold it); respond sees
// each response before it is passed on (headers, body); done runs when the
// request's handler returns.
type hooks struct {
	before  func(r *http.Request)
	respond func(resp *http.Response)
	done    func()
}

// gateway is an in-process gateway, an httputil.ReverseProxy that flushes
// every write (an SSE-friendly gateway), shaped by its hooks, in front of
// the server of the run that gateway.run starts: that run binds -L
// 127.0.0.1:0, and the gateway learns the port from the line the run
// prints on stderr before its first request (no port is closed and found
// again).
type gateway struct {
	addr    string
	backend atomic.Pointer[string]
	mu      sync.Mutex
	stderr  bytes.Buffer
}

// newGateway starts a gateway shaped by h.
func newGateway(t *testing.T, h hooks) *gateway {
	t.Helper()
	g := &gateway{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			if b := g.backend.Load(); b != nil {
				pr.SetURL(&url.URL{Scheme: "http", Host: *b})
			}
		},
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0), // an interrupted request's "context canceled" is expected
	}
	if h.respond != nil {
		rp.ModifyResponse = func(r *http.Response) error { h.respond(r); return nil }
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.done != nil {
			defer h.done()
		}
		if h.before != nil {
			h.before(r)
		}
		rp.ServeHTTP(w, r)
	})}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	g.addr = ln.Addr().String()
	return g
}

// Write takes the run's stderr, and the server's address from it.
func (g *gateway) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stderr.Write(p)
	if g.backend.Load() == nil {
		if m := listeningRE.FindSubmatch(g.stderr.Bytes()); m != nil {
			addr := string(m[1])
			g.backend.Store(&addr)
		}
	}
	return len(p), nil
}

// run runs sse-latency with args (the "sweep" subcommand, or a run)
// through the gateway, -L 127.0.0.1:0 and -t added, and returns its exit
// status and outputs; ctx nil means a two-minute deadline.
func (g *gateway) run(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	if ctx == nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
	}
	g.mu.Lock()
	g.stderr.Reset()
	g.backend.Store(nil)
	g.mu.Unlock()
	flags := []string{"-L", "127.0.0.1:0", "-t", g.addr}
	if len(args) > 0 && args[0] == "sweep" {
		args = append(append([]string{"sweep"}, flags...), args[1:]...)
	} else {
		args = append(flags, args...)
	}
	var out bytes.Buffer
	code = Main(ctx, args, &out, g)
	g.mu.Lock()
	defer g.mu.Unlock()
	return code, out.String(), g.stderr.String()
}

// backendAddr is the address of the last run's server.
func (g *gateway) backendAddr() string {
	if b := g.backend.Load(); b != nil {
		return *b
	}
	return "(none)"
}

// delayedBody holds every read of the upstream's body for delay before
// passing it on: every byte leaves at least delay after it arrived.
type delayedBody struct {
	rc    io.ReadCloser
	delay time.Duration
}

func (d *delayedBody) Read(p []byte) (int, error) {
	n, err := d.rc.Read(p)
	time.Sleep(d.delay)
	return n, err
}

func (d *delayedBody) Close() error { return d.rc.Close() }

func TestRounds(t *testing.T) {
	g := newGateway(t, hooks{})
	code, out, errOut := g.run(t, nil, "-r", "2", "-c", "2", "-n", "20", "-d", "1", "--rounds", "2")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	// L G G L, each round the run's whole load.
	for i, side := range []string{"loop", "gw", "gw", "loop"} {
		addr := g.addr
		if side == "loop" {
			addr = g.backendAddr()
		}
		want := "round " + strconv.Itoa(i+1) + "/4: " + side + ": sending 2 request(s) to " + addr + " (concurrency=2, tokens=20,"
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if got, want := parseTitles(t, out), map[string]batchLine{"loopback": {4, 4, 0, 80}, "gateway": {4, 4, 0, 80}}; got["loopback"] != want["loopback"] || got["gateway"] != want["gateway"] {
		t.Errorf("batches %+v, want every round's requests in each: %+v", got, want)
	}
	// The rounds' requests are numbered on from round to round.
	for i := range 4 {
		if !regexp.MustCompile(`(?m)^gw +` + strconv.Itoa(i) + `: ok`).MatchString(out) {
			t.Errorf("no line for gateway request %d:\n%s", i, out)
		}
	}
	for _, want := range []string{
		"=== rounds: 2 pairs, L G G L; the overhead is the difference of the sides' medians ===\n",
		"\n1      loopback         2       0 ", "\n2      gateway          2       0 ", "\n4      loopback         2       0 ",
		"median of rounds (lowest..highest)\n", "\nemit->recv p99     loopback ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if i, j := strings.Index(out, "=== gateway overhead"), strings.Index(out, "=== rounds"); i < 0 || j < i {
		t.Errorf("the rounds block should follow the overhead block:\n%s", out)
	}
	// Without --rounds the reference's single calibration runs.
	_, plain, _ := g.run(t, nil, "-r", "2", "-c", "2", "-n", "20", "-d", "1")
	if strings.Contains(plain, "=== rounds") || parseTitles(t, plain)["loopback"] != (batchLine{2, 2, 0, 40}) {
		t.Errorf("without --rounds:\n%s", plain)
	}
}

// TestSLOExitStatus: objectives met exit 0, one missed exits 3 and says
// which, on stderr and in the document; failed requests take precedence.
func TestSLOExitStatus(t *testing.T) {
	g := newGateway(t, hooks{})
	dir := t.TempDir()
	base := []string{"-r", "3", "-c", "3", "-n", "20", "-d", "1", "-q"}
	doc := filepath.Join(dir, "pass.json")
	code, out, errOut := g.run(t, nil, append(base, "--slo", "gateway emit->recv p99 < 60s", "--slo", "ttft p99 <= 60s", "--json", doc)...)
	if code != ExitOK || !strings.Contains(out, "=== SLO ===\nmet       gateway emit->recv (tokens) p99 < 60000ms: ") ||
		!strings.Contains(out, "goodput   3 of 3 gateway requests (100.0%) succeeded within every per-request objective") {
		t.Errorf("objectives met: exit %d\n%s\n%s", code, out, errOut)
	}
	d, err := readDocument(doc)
	if err != nil || d.SLO == nil || !d.SLO.Met || len(d.Config.SLOs) != 2 || d.Config.SLOs[1] != "gateway TTFT (client) p99 <= 60000ms" {
		t.Errorf("the document's objectives: %v, %+v, config %q", err, d.SLO, d.Config.SLOs)
	}
	doc = filepath.Join(dir, "fail.json")
	code, out, errOut = g.run(t, nil, append(base, "--slo", "added TTFT p50 < -60s", "--slo", "emit->recv p99 < 60s", "--json", doc)...)
	if code != ExitGate || !strings.Contains(out, "NOT MET   added TTFT (client) p50 < -60000ms: ") ||
		!strings.Contains(errOut, "SLO not met: added TTFT (client) p50 < -60000ms (observed ") {
		t.Errorf("an objective missed: exit %d, want %d\n%s\n%s", code, ExitGate, out, errOut)
	}
	// report says it again, from the document.
	var rOut, rErr bytes.Buffer
	if code := Main(context.Background(), []string{"report", doc}, &rOut, &rErr); code != ExitOK ||
		!strings.Contains(rErr.String(), "SLO not met: added TTFT") || !strings.Contains(rOut.String(), "NOT MET") {
		t.Errorf("report of the missed objective: %d\n%s\n%s", code, rOut.String(), rErr.String())
	}
	// A failed request is exit 1 whatever the objectives.
	closing := testutil.ServeTCP(t, func(c net.Conn) {}) // closes every connection at once
	code, _, _ = runMain(t, nil, "-L", "127.0.0.1:0", "-t", closing, "-n", "5", "-d", "1", "-q", "--slo", "ttft p50 < 1ns")
	if code != ExitFailure {
		t.Errorf("failed requests with a missed objective: exit %d, want %d", code, ExitFailure)
	}
}

func TestGateUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-t", ":1", "--slo", "gateway emit-recv p99 < 1ms"}, `--slo: malformed SLO "gateway emit-recv p99 < 1ms": unknown metric "emit-recv"`},
		{[]string{"-t", ":1", "--slo", "emit->recv p98 < 1ms"}, `unknown statistic "p98"`},
		{[]string{"-t", ":1", "--slo", "emit->recv p99 < 1"}, `value "1": no unit (want ns, us, ms or s)`},
		{[]string{"-t", ":1", "--slo", "emit->recv p99 > 1ms"}, `want < or <=, got ">"`},
		{[]string{"-t", ":1", "-l", "--slo", "added emit->recv p99 < 1ms"}, "added figures need the loopback calibration: not with -l"},
		{[]string{"-t", ":1", "--rounds", "-1"}, "--rounds -1: want 0"},
		{[]string{"-t", ":1", "--rounds", "2", "-l"}, "--rounds alternates loopback and gateway rounds: not with -l"},
		{[]string{"-t", ":1", "--prompt-bytes", "2g"}, `--prompt-bytes: "2g" is not a size`},
		{[]string{"-t", ":1", "--prompt-bytes", "5m"}, "--prompt-bytes 5242880: want 0 to 4194304 bytes"},
	}
	for _, tt := range tests {
		code, out, errOut := runMain(t, nil, tt.args...)
		if code != ExitFailure || out != "" || !strings.Contains(errOut, tt.want) || !strings.HasSuffix(errOut, usage()) {
			t.Errorf("Main(%q) = %d, stdout %q, stderr %q; want 1, an error containing %q, then the usage", tt.args, code, out, errOut, tt.want)
		}
	}
	if sweep.MaxPromptBytes != api.MaxPromptBytes {
		t.Errorf("sweep.MaxPromptBytes %d, api.MaxPromptBytes %d: they must agree", sweep.MaxPromptBytes, api.MaxPromptBytes)
	}
}

func TestSweepUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-t", ":1", "-c", "4"}, "sweep needs one axis"},
		{[]string{"-t", ":1", "-c", "1,2", "--rate", "1,2"}, "sweep walks one axis at a time; --concurrency and --rate all give lists"},
		{[]string{"-t", ":1", "-c", "1,,4"}, `--concurrency "1,,4": step 2 is empty`},
		{[]string{"-t", ":1", "-c", "10,5"}, `the steps must increase: "5" after "10"`},
		{[]string{"-t", ":1", "--rate", "1,x"}, `--rate "1,x": "x" is not a rate`},
		{[]string{"-t", ":1", "--prompt-bytes", "1k,9m"}, `"9m" is above the largest prompt, 4m`},
		{[]string{"-t", ":1", "--prompt-bytes", "1k,2k", "-c", "x"}, `-c "x": not a whole number`},
		{[]string{"-c", "1,2"}, "sweep needs -t"},
		{[]string{"-t", ":1", "-c", "1,2", "-l"}, "-l: a sweep measures each step against its own loopback"},
		{[]string{"-t", ":1", "-c", "1,2", "--server", "http://10.0.0.1:9000", "--control-token", "t"}, "--server: a sweep measures each step against its own loopback"},
		{[]string{"-t", ":1", "-c", "1,2", "--csv", "x.csv"}, "--csv: not with sweep"},
		{[]string{"-t", ":1", "-c", "1,2", "--slo", "ttft p50 < 1ms"}, "--slo: not with sweep"},
		{[]string{"-t", ":1", "-c", "1,2", "--knee-threshold", "0"}, "--knee-threshold 0: want a number of milliseconds above 0"},
		{[]string{"-t", ":1", "-c", "1,2", "--bogus"}, "unknown flag: --bogus"},
	}
	for _, tt := range tests {
		code, out, errOut := runMain(t, nil, append([]string{"sweep"}, tt.args...)...)
		if code != ExitFailure || out != "" || !strings.Contains(errOut, tt.want) || !strings.HasSuffix(errOut, sweepUsage()) {
			t.Errorf("sweep %q = %d, stdout %q, stderr %q; want 1, an error containing %q, then the sweep's usage", tt.args, code, out, errOut, tt.want)
		}
	}
	if code, _, errOut := runMain(t, nil, "sweep", "-h"); code != ExitOK || errOut != sweepUsage() {
		t.Errorf("sweep -h = %d, %q", code, errOut)
	}
	for _, flag := range []string{"--concurrency", "--rate", "--prompt-bytes", "--rounds", "--knee-threshold", "--json", "--html"} {
		if !strings.Contains(sweepUsage(), flag) {
			t.Errorf("the sweep's usage does not mention %s", flag)
		}
	}
}

// TestSweepKnee: a gateway that adds a large, explicit delay to every
// byte once more requests than its set point are in flight. The sweep
// finds the knee at the first step past the set point, and the steps
// before it are ok. The gateway holds each request (up to half a second)
// until more than the set point are in flight, so that the step past the
// set point really has them in flight together; the hold is before the
// request is forwarded, so it adds to the TTFT, not to the emit->recv
// the knee is judged on. Each Read of the response is passed on the delay
// after it returned, and the tokens emitted meanwhile wait for the next:
// the knee step's added p99 is at least the delay (250 ms). The steps
// before it are judged on three rounds each: a p99 of a few dozen tokens
// is one stall of a busy machine (up to ~40 ms seen at concurrency 2
// under -race), which lands in one round, not in the median of three nor
// in a rise above the rounds' spread; the threshold (100 ms) and the
// growth rule's floor (a quarter of it) stand above such a stall too.
func TestSweepKnee(t *testing.T) {
	const setPoint, delay = 2, 250 * time.Millisecond
	var inFlight atomic.Int64
	g := newGateway(t, hooks{
		before: func(r *http.Request) {
			inFlight.Add(1)
			for deadline := time.Now().Add(500 * time.Millisecond); inFlight.Load() <= setPoint && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
		},
		respond: func(resp *http.Response) {
			if inFlight.Load() > setPoint {
				resp.Body = &delayedBody{rc: resp.Body, delay: delay}
			}
		},
		done: func() { inFlight.Add(-1) },
	})
	dir := t.TempDir()
	jsonPath, htmlPath := filepath.Join(dir, "sweep.json"), filepath.Join(dir, "sweep.html")
	code, out, errOut := g.run(t, nil, "sweep", "-r", "1", "-n", "30", "-d", "2", "-q", "--rounds", "3",
		"--concurrency", "1,2,4", "--knee-threshold", "100", "--json", jsonPath, "--html", htmlPath)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"\n=== sweep: concurrency, 3 of 3 steps, each 3 loopback + 3 gateway rounds, alternated ===\n",
		"knee: concurrency 4: added emit->recv p99 +",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	rows := regexp.MustCompile(`(?m)^ +(\d+) +(\d+)/0 .*  (ok|KNEE|beyond) +(ok|SATURATED)$`).FindAllStringSubmatch(out, -1)
	if len(rows) != 3 || rows[0][3] != "ok" || rows[1][3] != "ok" || rows[2][3] != "KNEE" || rows[2][1] != "4" || rows[2][2] != "12" {
		t.Errorf("step rows %q, want concurrency 1 and 2 ok, 4 the knee with its 3 rounds × 4 requests ok\n%s", rows, out)
	}
	for i, want := range []string{"step 1/3: --concurrency 1\n", "step 3/3: --concurrency 4\n", "round 6/6: gw: sending 4 request(s)"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %d %q:\n%s", i, want, errOut)
		}
	}
	d, err := readDocument(jsonPath)
	if err != nil || d.Sweep == nil || d.Sweep.Knee == nil || d.Sweep.Knee.Step != 2 || len(d.Sweep.Steps) != 3 {
		t.Fatalf("the sweep's document: %v %+v", err, d)
	}
	if o := d.Sweep.Steps[2].Overhead; o == nil || o.EmitRecv.P99Ms < float64(delay/time.Millisecond) {
		t.Errorf("the knee step's overhead %+v, want an added p99 of at least the gateway's delay", o)
	}
	// report re-renders the table; the page has it with its charts.
	var rOut, rErr bytes.Buffer
	if code := Main(context.Background(), []string{"report", jsonPath}, &rOut, &rErr); code != ExitOK || rOut.String() != out {
		t.Errorf("report of the sweep: %d\n%s\nwant\n%s\n%s", code, rOut.String(), out, rErr.String())
	}
	if page, err := os.ReadFile(htmlPath); err != nil || !strings.Contains(string(page), "added emit-&gt;recv (tokens) against concurrency") {
		t.Errorf("--html: %v", err)
	}
}

// TestSweepFailing: through a gateway that answers 503 to every request
// after the first step's, the second step is FAILING, with what went
// wrong, in the table, on stderr as the step ends, and in the document.
func TestSweepFailing(t *testing.T) {
	var forwarded atomic.Int64
	g := newGateway(t, hooks{respond: func(resp *http.Response) {
		if forwarded.Add(1) > 2 { // step 1: its 2 gateway requests
			resp.StatusCode, resp.Status = http.StatusServiceUnavailable, "503 Service Unavailable"
		}
	}})
	jsonPath := filepath.Join(t.TempDir(), "sweep.json")
	// The knee threshold is far off: the test is about failures, and a
	// busy machine's delays are not.
	code, out, errOut := g.run(t, nil, "sweep", "-r", "2", "-n", "5", "-d", "1", "-q", "--concurrency", "1,2", "--knee-threshold", "10000",
		"--json", jsonPath)
	if code != ExitFailure {
		t.Fatalf("exit %d, want 1 (requests failed)\n%s\n%s", code, out, errOut)
	}
	rows := regexp.MustCompile(`(?m)^ +(\d+) +(\d+/\d+) .*  (ok|KNEE|beyond|FAILING) +(ok|SATURATED)$`).FindAllStringSubmatch(out, -1)
	if len(rows) != 2 || rows[0][2] != "2/0" || rows[0][3] == "FAILING" || rows[1][2] != "0/2" || rows[1][3] != "FAILING" {
		t.Errorf("step rows %q, want concurrency 1 not failing, 2 FAILING with its 2 requests failed\n%s", rows, out)
	}
	const why = "gateway failed 2 of 2 requests: HTTP 503 Service Unavailable (100.0% > 1.0%)"
	if !strings.Contains(out, "failing at concurrency 2: "+why+"\n") || !strings.Contains(errOut, "FAILING: "+why) {
		t.Errorf("the failing step is not said so, with why:\n%s\n%s", out, errOut)
	}
	d, err := readDocument(jsonPath)
	if err != nil || d.Sweep == nil || len(d.Sweep.Steps) != 2 || d.Sweep.Steps[0].Failing || !d.Sweep.Steps[1].Failing ||
		d.Sweep.Steps[1].FailingReason != why {
		t.Errorf("the sweep's document (%v): steps %+v", err, d.Sweep)
	}
}

// TestSweepPromptBytes: through a gateway that spends 4 ms per KiB of
// request body once it has read it (as one that parses and counts the
// prompt does), each step sends its prompt size, and the figures of each
// step show the gateway's hold growing with it. The hold is judged where
// the tool records it apart from its own work: in the gateway batch's
// request leg (the client's write to the server's read of the whole
// request) and TTFT, each at least half the hold. The added TTFT (minus
// the calibration's) is not compared with the hold: the calibration's
// TTFT includes the server's own handling of the prompt, which under
// -race on a busy machine varies by tens of ms from one batch to the next.
func TestSweepPromptBytes(t *testing.T) {
	const nsPerKiB = 4 * time.Millisecond
	var mu sync.Mutex
	var bodies []int // the sizes of the request bodies the gateway read, in order
	g := newGateway(t, hooks{before: func(r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, len(body))
		mu.Unlock()
		time.Sleep(time.Duration(len(body)>>10) * nsPerKiB)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}})
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "sweep.json")
	const requests = 5
	code, out, errOut := g.run(t, nil, "sweep", "-r", fmt.Sprint(requests), "-n", "5", "-d", "1", "-q",
		"--prompt-bytes", "1k,16k,64k", "--json", jsonPath)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	d, err := readDocument(jsonPath)
	if err != nil || len(d.Sweep.Steps) != 3 || d.Config.PromptBytes != 1<<10 {
		t.Fatalf("document: %v, config prompt_bytes %d", err, d.Config.PromptBytes)
	}
	// Each step's requests, and only they, carried its prompt (and the
	// request's JSON around it) through the gateway.
	mu.Lock()
	got := slices.Clone(bodies)
	mu.Unlock()
	if len(got) != 3*requests {
		t.Fatalf("the gateway read %d request bodies, want %d: %d per step", len(got), 3*requests, requests)
	}
	for i, st := range d.Sweep.Steps {
		for _, n := range got[i*requests : (i+1)*requests] {
			if n < int(st.Value) || n > int(st.Value)+4096 {
				t.Errorf("step %s: a request body of %d bytes through the gateway, want the prompt and its JSON: %v",
					sweep.FormatSize(int(st.Value)), n, got)
			}
		}
	}
	for _, st := range d.Sweep.Steps {
		hold := float64(int(st.Value)>>10) * float64(nsPerKiB) / 1e6
		gw, loop := st.Gateway(), st.Loop()
		if gw == nil || loop == nil || gw.RequestLeg == nil || st.Overhead == nil || st.Overhead.TTFT == nil {
			t.Fatalf("step %s: incomplete figures %+v", sweep.FormatSize(int(st.Value)), st)
		}
		leg, ttft := gw.RequestLeg.P50Ms, gw.Metrics.TTFT.P50Ms
		if leg < hold/2 || ttft < hold/2 {
			t.Errorf("step %s: gateway request leg p50 %.3f ms, TTFT p50 %.3f ms; want each at least half the gateway's %.0f ms hold",
				sweep.FormatSize(int(st.Value)), leg, ttft, hold)
		}
		// The added TTFT the table shows is this step's own: its gateway
		// batch's minus its calibration's.
		if added := ttft - loop.Metrics.TTFT.P50Ms; math.Abs(st.Overhead.TTFT.P50Ms-added) > 1e-6 {
			t.Errorf("step %s: added TTFT p50 %.6f ms, want its batches' difference %.6f ms",
				sweep.FormatSize(int(st.Value)), st.Overhead.TTFT.P50Ms, added)
		}
	}
	if !strings.Contains(out, "prompt-bytes  ok/failed") || !strings.Contains(out, "\n         64k        5/0 ") {
		t.Errorf("table:\n%s", out)
	}
}

// TestSweepInterrupted: Ctrl-C during a step prints the steps done, the
// interrupted one left out, and exits 130.
func TestSweepInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen atomic.Int64
	g := newGateway(t, hooks{before: func(r *http.Request) {
		if seen.Add(1) == 2 { // the first gateway request of the second step
			cancel()
		}
	}})
	code, out, errOut := g.run(t, ctx, "sweep", "-r", "1", "-n", "20", "-d", "1", "-q", "-c", "1,2,4")
	if code != ExitInterrupted {
		t.Errorf("exit %d, want %d", code, ExitInterrupted)
	}
	if !strings.Contains(out, "=== sweep: concurrency, 1 of 3 steps,") || !regexp.MustCompile(`(?m)^ +1 +1/0 `).MatchString(out) {
		t.Errorf("stdout should hold the one step done:\n%s", out)
	}
	for _, want := range []string{"sweep: interrupted during step 2 (--concurrency 2): left out", report.InterruptedLine} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

// TestDeclaredVsObserved: a gateway that declares its overhead in
// x-litellm-overhead-duration-ms and Server-Timing on every other
// response: the report sets them beside the observed overhead, with the
// requests that lacked them.
func TestDeclaredVsObserved(t *testing.T) {
	var n atomic.Int64
	g := newGateway(t, hooks{respond: func(resp *http.Response) {
		if n.Add(1)%2 == 1 {
			resp.Header.Set("x-litellm-overhead-duration-ms", "0.5")
			resp.Header.Set("Server-Timing", `gateway;dur=0.25;desc="routing", upstream;dur=3`)
		}
	}})
	jsonPath := filepath.Join(t.TempDir(), "run.json")
	code, out, errOut := g.run(t, nil, "-r", "4", "-c", "2", "-n", "10", "-d", "1", "-q", "--json", jsonPath)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"=== declared by the gateway vs observed ===\n",
		"gateway  x-litellm-overhead-duration-ms (overhead)  2 of 4 requests, 2 without it  mean 0.500ms  p50 0.500ms  p99 0.500ms\n",
		"gateway  server-timing:gateway  2 of 4 requests, 2 without it  mean 0.250ms",
		"gateway  server-timing:upstream  2 of 4 requests, 2 without it  mean 3.000ms",
		"observed added TTFT (client)  mean ", // signed: loopback noise can make it negative
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	d, err := readDocument(jsonPath)
	if err != nil || d.Gateway().Declared == nil || d.Loop().Declared != nil || len(d.Gateway().Declared.Figures) != 3 {
		t.Errorf("document: %v; want the gateway's declared timings only", err)
	}
}

// writeDoc saves d as JSON under dir/name and returns the path.
func writeDoc(t *testing.T, dir, name string, d *rundoc.Document) string {
	t.Helper()
	p := filepath.Join(dir, name)
	var b bytes.Buffer
	if err := rundoc.WriteJSON(&b, d); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRoundsPhases: an interleaved run's loopback rounds ask for the
// gateway's phases, uncapped (the reference's calibration caps each phase
// at 200 tokens; rounds compare like with like).
func TestRoundsPhases(t *testing.T) {
	g := newGateway(t, hooks{})
	code, out, errOut := g.run(t, nil, "-n", "5", "-d", "0.2", "--reasoning", "210", "-q", "--rounds", "1")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	// The title counts the visible text tokens; the timeline counts every
	// reasoning token on both sides: 210, not the calibration's cap.
	if got := parseTitles(t, out); got["loopback"] != (batchLine{1, 1, 0, 5}) || got["gateway"] != (batchLine{1, 1, 0, 5}) {
		t.Errorf("batches %+v, want one request of 5 text tokens on each side\n%s", got, out)
	}
	for _, side := range []string{"loopback", "gateway"} {
		re := regexp.MustCompile(`(?m)^emit->recv +` + side + ` .*reasoning [0-9.]+/[0-9.]+ \(n=210\)`)
		if !re.MatchString(out) {
			t.Errorf("the %s timeline does not count 210 reasoning tokens\n%s", side, out)
		}
	}
}

// TestSweepRate: a rate sweep runs each step open loop at its rate (no
// cap on the requests in flight unless -c gives one).
func TestSweepRate(t *testing.T) {
	g := newGateway(t, hooks{})
	jsonPath := filepath.Join(t.TempDir(), "sweep.json")
	code, out, errOut := g.run(t, nil, "sweep", "-r", "4", "-n", "5", "-d", "1", "-q", "--rate", "40,80", "--json", jsonPath)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	d, err := readDocument(jsonPath)
	if err != nil || len(d.Sweep.Steps) != 2 || d.Sweep.Axis != sweep.AxisRate || d.Config.Rate != 40 || d.Config.Concurrency != 0 {
		t.Fatalf("document: %v, config rate %v concurrency %v", err, d.Config.Rate, d.Config.Concurrency)
	}
	for _, st := range d.Sweep.Steps {
		if gw := st.Gateway(); gw == nil || gw.OK != 4 || gw.StartLateness == nil || st.Loop().StartLateness == nil {
			t.Errorf("step %v: %+v; want 4 requests ok, open loop on both sides", st.Value, gw)
		}
	}
	if !strings.Contains(errOut, "round 2/2: gw: sending 80 request(s)/s (constant arrivals) up to 4 to "+g.addr+" (no cap on requests in flight") {
		t.Errorf("stderr lacks the second step's gateway round:\n%s", errOut)
	}
}
