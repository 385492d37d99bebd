// Package cli is the command line of sse-latency: it turns argv into a
// Config, starts the dummy server, runs the calibration and gateway batches,
// prints the report and returns the exit status. It is the only package that
// knows about stdout, stderr and exit codes; cmd/sse-latency only calls Main.
package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sse-latency/sse-latency/internal/batch"
	"github.com/sse-latency/sse-latency/internal/client"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/emission"
	gwid "github.com/sse-latency/sse-latency/internal/gateway"
	"github.com/sse-latency/sse-latency/internal/procstat"
	"github.com/sse-latency/sse-latency/internal/report"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/rundoc"
	"github.com/sse-latency/sse-latency/internal/server"
	"github.com/sse-latency/sse-latency/internal/slo"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/trace"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// Exit statuses.
const (
	ExitOK          = 0   // every gateway request succeeded (or server-only mode ended)
	ExitFailure     = 1   // usage error, setup error, or at least one gateway request failed
	ExitGate        = 3   // every request succeeded, but an --slo was not met, or compare --fail-if found a regression
	ExitInterrupted = 130 // the run was interrupted; the report covers what finished
)

// Main runs sse-latency with args (without the program name) and returns the
// exit status. Cancelling ctx (Ctrl-C) stops the run: requests in flight end
// as interrupted and the report covers everything measured so far.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	code, _ := Measure(ctx, args, stdout, stderr)
	return code
}

// Summary is what a measurement produced, for callers (tests, tools built
// on this package) that want more than the printed report.
type Summary struct {
	Config  Config
	Loop    *stats.Batch     // the calibration batch; nil when none ran
	Gateway *stats.Batch     // the gateway batch; nil in server-only mode
	Verdict *verdict.Verdict // nil when no gateway batch ran
	Run     *summary.Run     // the run's summary, as the reports render it (timelines, findings)

	// What the dummy server saw: connections accepted and requests served
	// (fewer connections than requests means a gateway reused them).
	ServerConnections, ServerRequests int64
}

// Measure is Main that also returns the Summary of the run (nil when the
// command line was wrong or only asked for help or the version).
func Measure(ctx context.Context, args []string, stdout, stderr io.Writer) (int, *Summary) {
	return MeasureOn(ctx, nil, args, stdout, stderr)
}

// MeasureOn is Measure with the dummy server on ln, a listener the caller
// has bound, in place of one bound at -L: tests hand over 127.0.0.1:0
// rather than a port number that another socket may take before the run
// binds it. -L must still be given (its host names the calibration
// target). The server closes ln when the run ends; a run that ends before
// starting its server leaves ln to the caller. A nil ln is Measure.
func MeasureOn(ctx context.Context, ln net.Listener, args []string, stdout, stderr io.Writer) (int, *Summary) {
	return MeasureWith(ctx, Options{Listener: ln}, args, stdout, stderr)
}

// Options are what a caller of MeasureWith hands a measurement besides its
// arguments: tests that drive a real gateway while it runs.
type Options struct {
	// Listener is MeasureOn's ln: the dummy server's, bound by the caller;
	// nil binds -L.
	Listener net.Listener
	// Received, when set, counts the content tokens the gateway batch's
	// requests receive, as they arrive: a test awaits it to act on the
	// gateway mid-stream (kill it, stop it) rather than sleep.
	Received *atomic.Int64
}

// MeasureWith is MeasureOn with the options opt.
func MeasureWith(ctx context.Context, opt Options, args []string, stdout, stderr io.Writer) (int, *Summary) {
	return dispatch(ctx, opt, args, stdout, stderr)
}

// measureCmd runs the measurement itself: the command table's first row.
func measureCmd(ctx context.Context, opt Options, args []string, stdout, stderr io.Writer) (int, *Summary) {
	ln := opt.Listener
	cl, err := parseArgs(args)
	switch {
	case errors.Is(err, errHelp):
		fmt.Fprint(stderr, usage())
		return ExitOK, nil
	case errors.Is(err, errVersion):
		if _, err := fmt.Fprintln(stdout, "sse-latency", Version()); err != nil {
			fmt.Fprintf(stderr, "sse-latency: %v\n", err)
			return ExitFailure, nil
		}
		return ExitOK, nil
	case err != nil:
		fmt.Fprintf(stderr, "sse-latency: %v\n%s", err, usage())
		return ExitFailure, nil
	}
	text := stdout
	if cl.cfg.JSONPath == "-" {
		text = stderr // stdout carries the JSON document
	}
	r := &run{commandLine: cl, cfg: cl.cfg, out: &console{stdout: text, stderr: stderr, tty: isTerminal(stderr)},
		sum: &Summary{Config: cl.cfg}, docOut: stdout, ln: ln, received: opt.Received}
	return r.main(ctx), r.sum
}

// commit is the VCS revision a build stamped (image/build.sh: -ldflags
// "-X github.com/sse-latency/sse-latency/internal/cli.commit=<sha>[-dirty]"),
// for builds without the toolchain's VCS stamp (-buildvcs=false, no git in
// a container build); "" when none did.
var commit string

// Version is the module version from the build info ("(devel)" when built
// from a work tree), with the VCS revision when known: the toolchain's
// stamp, else the one the build stamped (commit), its first 12 digits and
// "-dirty" when the tree had changes.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return versionOf(bi, commit)
}

// versionOf is Version from build info bi and a stamped commit.
func versionOf(bi *debug.BuildInfo, commit string) string {
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return v + " " + s.Value[:12]
		}
	}
	if rev, dirty := strings.CutSuffix(commit, "-dirty"); len(rev) >= 12 {
		v += " " + rev[:12]
		if dirty {
			v += "-dirty"
		}
	}
	return v
}

// run is one invocation's state.
type run struct {
	commandLine
	cfg    Config
	out    *console
	sum    *Summary
	docOut io.Writer // where --json - goes
	start  time.Time

	srv        *server.Server
	serverDone chan error         // what Serve returned
	stopServer context.CancelFunc // ends Serve
	selfTLS    *tls.Config        // the server's TLS configuration, when it listens with TLS
	gwTLS      *tls.Config        // the client's, for an https target
	emissions  *emission.Registry // when the server wrote each token, by request id
	runID      string             // prefixes this run's request ids
	gwAddr     string             // where the gateway batch goes (-t resolved)
	selfAddr   string             // where the calibration goes (the bound -L, wildcard as loopback)
	outs       *outputs           // the files the run writes, open from before its first request
	goodput    *slo.Goodput       // counts the gateway requests that meet every per-request --slo; nil without one
	ln         net.Listener       // the listener handed to MeasureOn; nil: bind -L
	received   *atomic.Int64      // Options.Received: counts the gateway batch's tokens as they arrive; nil: none
	clk        clock.Clock        // the clock of the server, the client and the control endpoints (processClock)

	gwSeen gwid.Evidence   // what is known of the gateway besides its responses (--gateway, its local process)
	trace  *trace.Trace    // --trace: the trace the gateway batch replays; nil without one
	replay *summary.Replay // its description in the report

	remote   *remote               // across hosts (--server): the servers' control endpoints; nil when the server runs here
	instance string                // the instance id of the server here (--instance-id, or a default with --control); "" none
	observe  func(*result.Request) // sees every finished record too (the probe's metrics); nil: nothing does

	cost     *costMeter // samples each batch's CPU (the tool's, the gateway's, the host's); nil: only the tool's
	toolCPUs []int      // --cpus, applied; nil when the tool is not pinned
}

// main runs the measurement and returns the exit status.
func (r *run) main(ctx context.Context) int {
	r.start = time.Now()
	restore, err := r.pinTool()
	if err != nil {
		return r.fail(err)
	}
	defer restore()
	if err := r.setUp(); err != nil {
		return r.fail(err)
	}
	defer r.outs.abandon() // what a run that did not finish leaves
	defer r.stop()
	if r.cfg.Target == "" {
		return r.serveOnly(ctx)
	}
	if err := r.resolve(ctx); err != nil {
		return r.fail(err)
	}
	r.goodput = slo.NewGoodput(r.cfg.Objectives())
	if r.cfg.Rounds > 0 {
		loop, gw, rounds, err := r.interleave(ctx, r.cfg.Rounds, "")
		if err != nil {
			return r.fail(err)
		}
		return r.finish(ctx, loop, gw, rounds)
	}
	loop, err := r.calibrate(ctx)
	if err != nil {
		return r.fail(err)
	}
	gw, err := r.measure(ctx)
	if err != nil {
		return r.fail(err)
	}
	return r.finish(ctx, loop, gw, nil)
}

// fail reports the error that ends the run and returns ExitFailure.
func (r *run) fail(err error) int {
	r.out.errorf("sse-latency: %v\n", err)
	return ExitFailure
}

// setUp checks that the streams fit under the open-files limit, prepares
// TLS on both sides, opens the files the run writes, and starts the dummy
// server: everything that can fail before the first request, so that a
// path that cannot be written fails now, not after the measurement.
func (r *run) setUp() error {
	if err := r.loadTrace(); err != nil {
		return err
	}
	cfg := r.cfg
	if cfg.Target != "" {
		if err := checkOpenFiles(cfg.Concurrency); err != nil {
			return err
		}
	}
	if err := checkGatewayPIDs(procstat.Proc, cfg.GatewayPIDs, r.out.errorf); err != nil {
		return err
	}
	tc, fingerprint, err := server.TLSConfig(cfg.TLSCert, cfg.TLSKey, cfg.TLSSelfSigned)
	if err != nil {
		if cfg.TLSSelfSigned {
			return fmt.Errorf("--tls-self-signed: %w", err)
		}
		return fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	if fingerprint != "" {
		r.out.errorf("server TLS: self-signed certificate for 127.0.0.1, ::1, localhost; SHA-256 fingerprint %s\n", fingerprint)
	}
	r.selfTLS = tc
	if r.target.scheme == "https" {
		if r.gwTLS, err = client.TLSConfig(r.target.serverName(cfg.HostHeader), cfg.Insecure, cfg.CACert); err != nil {
			return fmt.Errorf("--cacert: %w", err)
		}
	}
	if r.outs, err = openOutputs(cfg, r.docOut); err != nil {
		return err
	}
	if err := r.startBackend(); err != nil {
		r.outs.abandon()
		return err
	}
	return nil
}

// startServer starts the dummy server on -L. It records when it wrote each
// token of each request id, so that the client can measure tokens whose
// pi_ts a gateway removed.
func (r *run) startServer() error {
	cfg := r.cfg
	r.emissions, r.runID = emission.New(), emission.NewRunID()
	if r.instance = cfg.Instance; r.instance == "" && cfg.Control != "" {
		r.instance = defaultInstance()
	}
	srvCfg := server.Config{Instance: r.instance, Tokens: cfg.Tokens, ThinkMs: cfg.ThinkMs, DelayMs: cfg.DelayMs, Emissions: r.emissions,
		HTTP2: true, ServerClose: cfg.ServerClose, MaxStreams: cfg.MaxStreams, TLS: r.selfTLS,
		Reasoning: cfg.Reasoning, ToolCall: cfg.ToolCall, ReasoningField: cfg.ReasoningShape(), HeartbeatMs: cfg.HeartbeatMs,
		Engine: client.Engine(cfg.Engine), Faults: cfg.ServerFaults(), CacheBlockTokens: cfg.CacheBlock, Clock: r.clk}
	if cfg.Verbose {
		srvCfg.Logf = r.out.debugf
	}
	srv, err := r.newServer(srvCfg)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", cfg.Listen, err)
	}
	if cfg.HTTP3 && r.selfTLS != nil {
		if _, err := srv.ListenHTTP3(); err != nil {
			return fmt.Errorf("--http3: cannot listen on UDP %s: %w", displayListen(srv.Addr()), err)
		}
	}
	r.srv = srv
	ctx, cancel := context.WithCancel(context.Background())
	r.serverDone, r.stopServer = make(chan error, 1), cancel
	go func() { r.serverDone <- srv.Serve(ctx) }()
	r.out.errorf("dummy OpenAI-like SSE server listening on %s (POST /v1/chat/completions)\n", displayListen(srv.Addr()))
	if cfg.Verbose {
		r.out.debugf("server: also POST /v1/completions, /v1/responses, /v1/messages (any path with these endings), GET /v1/models")
	}
	return nil
}

// stop ends the server and waits for it; an error it ended with is
// reported.
func (r *run) stop() {
	r.stopServer()
	if err := <-r.serverDone; err != nil {
		r.out.errorf("sse-latency: server stopped: %v\n", err)
	}
}

// serveOnly serves until ctx is cancelled (no -t).
func (r *run) serveOnly(ctx context.Context) int {
	r.out.errorf("no -t given: running as server only. Ctrl-C to stop.\n")
	select {
	case <-ctx.Done():
		r.serverAccount()
		return ExitOK
	case err := <-r.serverDone:
		r.serverDone <- err // for stop, which reports it
		return ExitFailure
	}
}

// serverAccount prints, when a server-only run stops, what the server
// did: the requests it read, the tokens it emitted and how late against
// their schedule — what says whether a server on its own host (a pod)
// kept up with the load of its clients, who cannot see its lateness — and
// the warning when it fell behind.
func (r *run) serverAccount() {
	late := r.srv.Lateness()
	if late.N() == 0 {
		n := int(r.srv.Requests())
		r.out.errorf("server: %d %s, no token emitted\n", n, pluralWord(n, "request", "requests"))
		return
	}
	n := int(r.srv.Requests())
	r.out.errorf("server: %d %s, %d tokens emitted, emission lateness p50=%.3fms p99=%.3fms max=%.3fms\n",
		n, pluralWord(n, "request", "requests"), late.N(), stats.Ms(late.Percentile(0.50)), stats.Ms(late.Percentile(0.99)), stats.Ms(late.Max()))
	if w := summary.LatenessWarning(late); w != "" {
		r.out.errorf("warning: %s\n", w)
	}
}

// resolve finds where the batches go: the gateway, and the server itself.
func (r *run) resolve(ctx context.Context) error {
	var err error
	if r.gwAddr, err = destAddr(ctx, r.target.hostPort); err != nil {
		return fmt.Errorf("-t: %w", err)
	}
	r.gwSeen = gatewayEvidence(r.cfg.Gateway, r.gwAddr)
	// The calibration goes to the listen address as the server really
	// bound it (so -L :0 works), the wildcard meaning loopback; across
	// hosts there is none.
	if r.srv == nil {
		r.meterCost()
		return nil
	}
	if r.selfAddr, err = destAddr(ctx, boundAddr(r.listenHost, r.srv.Addr())); err != nil {
		return fmt.Errorf("-L: %w", err)
	}
	r.meterCost()
	return nil
}

// meterCost sets up the sampling of each batch's CPU, and says which
// gateway process it accounts.
func (r *run) meterCost() {
	gwAddr := r.gwAddr
	if gwAddr == r.selfAddr {
		gwAddr = "" // -t is the dummy server: no gateway
	}
	r.cost = newCostMeter(procstat.Proc, r.cfg.GatewayPIDs, gwAddr, findListener)
	if line := r.cost.describe(); line != "" {
		r.out.errorf("%s\n", line)
	}
}

// pinTool pins the tool's threads to --cpus; restore undoes it.
func (r *run) pinTool() (restore func(), err error) {
	if r.cfg.CPUs == "" {
		return func() {}, nil
	}
	cpus, _ := parseCPUList(r.cfg.CPUs) // Validate has checked it
	if restore, err = pinCPUs(cpus); err != nil {
		return nil, err
	}
	r.toolCPUs = cpus
	r.out.errorf("--cpus: the tool's threads run on CPUs %s (GOMAXPROCS %d)\n", formatCPUList(cpus), runtime.GOMAXPROCS(0))
	return restore, nil
}

// calibrates reports whether the run has a loopback side: not with -l, nor
// across hosts (--server) or when -t is the server itself (which it
// notes).
func (r *run) calibrates() bool {
	switch {
	case r.remote != nil:
		r.out.errorf("note: the server is on another host (--server): no loopback calibration\n")
		return false
	case r.cfg.NoLoopback:
		return false
	case r.selfAddr == r.gwAddr:
		r.out.errorf("note: -t equals -L, skipping loopback calibration\n")
		return false
	}
	return true
}

// calibrate runs the loopback calibration batch straight to the server
// (SPEC §5), unless -l, or -t is the server itself; nil when it did not
// run.
func (r *run) calibrate(ctx context.Context) (*summary.Collector, error) {
	cfg := r.cfg
	if !r.calibrates() {
		return nil, nil
	}
	c := batch.CalibrationFor(cfg.Requests, cfg.Concurrency, cfg.Tokens)
	size := fmt.Sprintf("%d tokens", c.Tokens)
	if r.shaper(0, false) != nil {
		size = fmt.Sprintf("the run's sizes (at most %d tokens)", batch.CalibrationMaxTokens)
	}
	r.out.errorf("loop: calibrating the noise floor with %d request(s) of %s to %s (concurrency=%d, think=%sms, delay=%sms) ...\n",
		c.Requests, size, r.selfAddr, max(c.Concurrency, 1), fmtMs(cfg.ThinkMs), fmtMs(cfg.DelayMs))
	col := r.newCollector()
	_, err := r.runBatch(ctx, r.shapeBatch(batch.Spec{Name: "loop", Requests: c.Requests, Concurrency: c.Concurrency,
		Request: r.calibrationRequest(c.Tokens)}, true), col, nil, 0)
	return col, err
}

// measure runs the gateway batch; an empty one when the run was stopped
// before it.
func (r *run) measure(ctx context.Context) (*summary.Collector, error) {
	if ctx.Err() != nil {
		return summary.NewCollector(), nil
	}
	r.announce("gw: ", r.gwAddr)
	req := r.gatewayRequest()
	r.engineNote(req)
	col := r.newCollector()
	_, err := r.runBatch(ctx, r.batchSpec("gw", req), col, nil, 0)
	if note := req.TLSFallback(); note != "" {
		r.out.errorf("note: %s\n", note)
	}
	return col, err
}

// announce prints the line that starts a batch of the run's load to addr,
// after prefix ("gw: ", "round 2/6: loop: "), and for a long closed-loop
// batch the duration it is expected to take. The count is what is sent:
// the --warmup requests and the -r measured ones after them.
func (r *run) announce(prefix, addr string) {
	cfg := r.cfg
	if r.trace != nil {
		r.out.errorf("%sreplaying %d request(s) of %s (%s trace, speed %s) to %s (%s, think=%sms, delay=%sms) ...\n",
			prefix, cfg.Requests, cfg.Trace, r.trace.Format, fmtMs(cfg.TraceSpeed), addr, capText(cfg), fmtMs(cfg.ThinkMs), fmtMs(cfg.DelayMs))
		return
	}
	if cfg.Rate == 0 && cfg.Duration == 0 && (cfg.TokensDist != "" || cfg.PromptBytesDist != "") {
		r.out.errorf("%ssending %d request(s) to %s (concurrency=%d, %s, seed=%d, think=%sms, delay=%sms) ...\n",
			prefix, cfg.Requests, addr, cfg.Concurrency, sizeText(cfg), cfg.Seed, fmtMs(cfg.ThinkMs), fmtMs(cfg.DelayMs))
		return
	}
	if cfg.Rate == 0 && cfg.Duration == 0 {
		// What is sent: the warm-up requests, then -r measured ones.
		sent, warm := cfg.Requests+cfg.Warmup, ""
		if cfg.Warmup > 0 {
			warm = fmt.Sprintf(" (%d warm-up, then %d measured)", cfg.Warmup, cfg.Requests)
		}
		r.out.errorf("%ssending %d request(s)%s to %s (concurrency=%d, tokens=%d, think=%sms, delay=%sms) ...\n",
			prefix, sent, warm, addr, cfg.Concurrency, cfg.Tokens, fmtMs(cfg.ThinkMs), fmtMs(cfg.DelayMs))
		if line, ok := report.ExpectLine(cfg.ThinkMs, cfg.DelayMs, cfg.Tokens, sent, cfg.Concurrency); ok {
			r.out.errorf("%s\n", line)
		}
		return
	}
	r.out.errorf("%ssending %s to %s (%s, %s, think=%sms, delay=%sms) ...\n",
		prefix, loadShape(cfg), addr, capText(cfg), sizeText(cfg), fmtMs(cfg.ThinkMs), fmtMs(cfg.DelayMs))
}

// batchSpec is the batch of the run's load (-r, -c, --rate, --duration,
// --warmup), named name ("gw" or "loop"), of req's requests.
func (r *run) batchSpec(name string, req *client.Request) batch.Spec {
	cfg := r.cfg
	spec := batch.Spec{Name: name, Requests: cfg.Requests, Concurrency: cfg.Concurrency, Request: req,
		Rate: cfg.Rate, Arrival: cfg.Arrival, Seed: cfg.Seed, Duration: cfg.Duration}
	return r.shapeBatch(spec.WithWarmup(cfg.Warmup), false)
}

// finish summarises the run, checks its objectives, prints its report and
// warnings, writes its files and returns the exit status.
func (r *run) finish(ctx context.Context, loop, gw *summary.Collector, rounds []summary.Round) int {
	user, sys := cpuTimes()
	late, conns, reqs := r.serverFigures()
	// The batches are over: the records of their requests, most of the
	// heap of a large run, are garbage the collector has not taken yet.
	// Taking it now (a few milliseconds, after the CPU times above) lets
	// the summary's allocations reuse that memory instead of raising the
	// peak resident size (docs/PERF.md, "Memory at -c 4000"). A small
	// heap is left alone: the collection cost a -c 1 run 15 ms of CPU, a
	// third of its start and end (issue 21).
	if heapBytes() > gcBeforeSummary {
		runtime.GC()
	}
	var sloGate func(*summary.Run) *summary.SLOs
	if len(r.cfg.SLOs) > 0 {
		sloGate = slo.Gate(r.cfg.Objectives(), r.goodput)
	}
	sum := summary.New(summary.Inputs{Loop: loop, Gateway: gw, LoopTarget: r.selfAddr, GatewayTarget: r.gwAddr, Identify: r.gwSeen,
		Lateness: late, UserS: user, SystemS: sys, Rounds: rounds, Clock: r.clockSummary(), Replicas: r.replicaInfos(),
		PageBytes: os.Getpagesize(), Pin: r.cost.pin(r.toolCPUs), SLO: sloGate})
	if r.replay != nil {
		rp := *r.replay
		rp.Replayed = gw.Stats.Requests + gw.Stats.Warmup
		sum.Replay = &rp
	}
	if loop != nil {
		r.sum.Loop = loop.Stats
	}
	r.sum.Gateway, r.sum.Verdict, r.sum.Run = gw.Stats, sum.Verdict, sum
	r.sum.ServerConnections, r.sum.ServerRequests = conns, reqs

	code, reason := exitStatus(ctx.Err() != nil, gw.Stats.Failed, sum.SLO == nil || sum.SLO.Met)
	if err := r.outs.closeCSV(); err != nil {
		r.out.errorf("sse-latency: %v\n", err)
		code = max(code, ExitFailure)
	}
	doc := rundoc.NewDocument(rundoc.RunInfo{Config: r.cfg.Redacted().Config, Start: r.start, End: time.Now(),
		EndReason: reason, ExitCode: code, Version: Version(), Request: r.sentRequest()}, sum)
	r.out.report(doc, r.cfg.Compat)
	if r.cfg.Verbose && late != nil {
		r.out.debugf("server: %d tokens emitted, emission lateness p50=%.3fms p99=%.3fms max=%.3fms",
			late.N(), stats.Ms(late.Percentile(0.50)), stats.Ms(late.Percentile(0.99)), stats.Ms(late.Max()))
	}
	return r.conclude(doc, code)
}

// gcBeforeSummary is the heap above which finish collects before the
// summary.
const gcBeforeSummary = 16 << 20

// heapBytes returns the bytes of the heap's objects, live or not yet
// collected.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// conclude prints doc's warnings, writes its files and returns code, or
// ExitFailure when a file or the report could not be written.
func (r *run) conclude(doc *rundoc.Document, code int) int {
	r.out.warnings(doc)
	if err := r.outs.writeDocument(doc); err != nil {
		r.out.errorf("sse-latency: %v\n", err)
		code = max(code, ExitFailure)
	}
	if err := r.out.stdoutErr(); err != nil {
		r.out.errorf("sse-latency: writing the report: %v\n", err)
		code = max(code, ExitFailure)
	}
	return code
}

// exitStatus is the exit status of a run and the reason it ended: 130 and
// "interrupted" when it was stopped; else "done", with 1 when a gateway
// request failed (SPEC §6), else 3 when an objective was not met (sloMet
// false).
func exitStatus(interrupted bool, gwFailed int, sloMet bool) (int, string) {
	switch {
	case interrupted:
		return ExitInterrupted, rundoc.EndInterrupted
	case gwFailed > 0:
		return ExitFailure, rundoc.EndDone
	case !sloMet:
		return ExitGate, rundoc.EndDone
	}
	return ExitOK, rundoc.EndDone
}

// runBatch runs one batch, printing per-request lines and the progress
// line, and folds its records into c, and into round when not nil (a
// round of an interleaved run), their indices offset by offset (the
// requests of the earlier rounds of the batch). The gateway's records
// also go to the goodput, when the run counts one. What the batch cost
// in CPU, sampled before and after it, goes to c too, and is returned.
func (r *run) runBatch(ctx context.Context, spec batch.Spec, c *summary.Collector, round *stats.Batch, offset int) (summary.CostSample, error) {
	var progress func(batch.Progress)
	if r.out.tty {
		progress = r.out.progress
	}
	gateway := spec.Name == "gw" && r.goodput != nil
	var tokens int64 // every token received, warm-ups and failures included: the cost's divisor
	streams := 0
	sink, wait := r.resolving(func(rec *result.Request) {
		tokens += int64(len(rec.Tokens))
		streams++
		rec.Index += offset
		c.Add(rec) // counts a warm-up request apart, outside the statistics
		if r.observe != nil {
			r.observe(rec)
		}
		if round != nil {
			round.Add(rec)
		}
		if gateway {
			r.goodput.Add(rec)
		}
		if !rec.Warmup && r.outs.csv != nil {
			r.outs.csv.Add(rec)
		}
		if !r.cfg.Quiet {
			r.out.requestLine(rec)
		}
		if r.cfg.Verbose {
			r.out.debugf("%s %d: %d tokens in %d reads, %d bytes", rec.Batch, rec.Index, len(rec.Tokens), rec.Reads, rec.Bytes)
			r.out.debugf("%s", report.PhasesLine(rec))
			r.out.debugf("%s", report.TimelineLine(rec))
		}
	})
	before := r.cost.sample()
	err := batch.Run(ctx, spec, sink, progress)
	wait()
	cost := r.cost.since(before, tokens, streams)
	c.AddCost(cost)
	r.out.clearProgress()
	if err != nil {
		return cost, err
	}
	if r.cfg.Verbose {
		b := c.Stats
		if round != nil {
			b = round
		}
		r.out.debugf("%s: inter-token p1=%.3fms p50=%.3fms p99=%.3fms; emit->recv p50=%.3fms p99=%.3fms p99.9=%.3fms",
			spec.Name, stats.Ms(b.InterToken.Percentile(0.01)), stats.Ms(b.InterToken.Percentile(0.50)), stats.Ms(b.InterToken.Percentile(0.99)),
			stats.Ms(b.EmitRecv.Percentile(0.50)), stats.Ms(b.EmitRecv.Percentile(0.99)), stats.Ms(b.EmitRecv.Percentile(0.999)))
	}
	return cost, nil
}

// newServer returns the dummy server on the listener handed to MeasureOn,
// else bound to -L.
func (r *run) newServer(cfg server.Config) (*server.Server, error) {
	if r.ln != nil {
		return server.New(r.ln, cfg), nil
	}
	return server.Listen(r.listen, cfg)
}
