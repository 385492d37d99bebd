// Package cli is the command line of sse-latency: it turns argv into a
// Config, starts the dummy server, runs the calibration and gateway batches,
// prints the report and returns the exit status. It is the only package that
// knows about stdout, stderr and exit codes; cmd/sse-latency only calls Main.
package cli

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/sse-latency/sse-latency/internal/batch"
	"github.com/sse-latency/sse-latency/internal/client"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/report"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/server"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// Exit statuses.
const (
	ExitOK          = 0   // every gateway request succeeded (or server-only mode ended)
	ExitFailure     = 1   // usage error, setup error, or at least one gateway request failed
	ExitInterrupted = 130 // the run was interrupted; the report covers what finished
)

// calibrationMaxTokens caps the tokens of each calibration request
// (SPEC §5: min(n, 200)).
const calibrationMaxTokens = 200

// LatenessWarnNs is the emission-lateness p99 above which the tool warns
// that it is measuring its own overload.
const LatenessWarnNs = 1_000_000

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
	if len(args) > 0 {
		if cmd, ok := subcommands[args[0]]; ok {
			return cmd(args[1:], stdout, stderr), nil
		}
	}
	cfg, err := parseArgs(args)
	switch {
	case errors.Is(err, errHelp):
		fmt.Fprint(stderr, usage)
		return ExitOK, nil
	case errors.Is(err, errVersion):
		fmt.Fprintln(stdout, "sse-latency", Version())
		return ExitOK, nil
	case err != nil:
		fmt.Fprintf(stderr, "sse-latency: %v\n%s", err, usage)
		return ExitFailure, nil
	}
	text := stdout
	if cfg.JSONPath == "-" {
		text = stderr // stdout carries the JSON document
	}
	r := &run{cfg: cfg, out: &console{stdout: text, stderr: stderr, tty: isTerminal(stderr)}, sum: &Summary{Config: cfg}, docOut: stdout, ln: ln}
	return r.main(ctx), r.sum
}

// Version is the module version from the build info ("(devel)" when built
// from a work tree), with the VCS revision when known.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return v
}

// run is one invocation's state.
type run struct {
	selfTLS   *tls.Config // the server's TLS configuration, when it listens with TLS
	cfg       Config
	out       *console
	srv       *server.Server
	sum       *Summary
	emissions *emission.Registry
	runID     string
	docOut    io.Writer // where --json - goes
	start     time.Time
	csv       *report.CSVWriter
	csvFile   *os.File

	loopSamples, gwSamples *report.SampleCollector

	loopBursts, gwBursts *verdict.Accumulator

	ln net.Listener // the listener handed to MeasureOn; nil: bind -L
}

func (r *run) main(ctx context.Context) int {
	cfg := r.cfg
	r.start = time.Now()
	if cfg.Target != "" {
		if err := checkOpenFiles(cfg.Concurrency); err != nil {
			r.out.errorf("sse-latency: %v\n", err)
			return ExitFailure
		}
	}
	if cfg.CSVPath != "" {
		f, err := os.Create(cfg.CSVPath)
		if err != nil {
			r.out.errorf("sse-latency: --csv: %v\n", err)
			return ExitFailure
		}
		r.csvFile, r.csv = f, report.NewCSVWriter(f)
		defer r.closeCSV()
	}
	laddr, _ := listenAddr(cfg.Listen)
	// The server records when it wrote each token of each request id, so
	// that the client can measure tokens whose pi_ts a gateway removed.
	r.emissions = emission.New()
	r.runID = newRunID()
	srvCfg := server.Config{Tokens: cfg.Tokens, ThinkMs: cfg.ThinkMs, DelayMs: cfg.DelayMs, Emissions: r.emissions,
		HTTP2: true, ServerClose: cfg.ServerClose, MaxStreams: cfg.MaxStreams}
	if cfg.Verbose {
		srvCfg.Logf = r.out.debugf
	}
	switch {
	case cfg.TLSSelfSigned:
		tc, fp, err := server.SelfSignedTLS()
		if err != nil {
			r.out.errorf("sse-latency: --tls-self-signed: %v\n", err)
			return ExitFailure
		}
		srvCfg.TLS, r.selfTLS = tc, tc
		r.out.errorf("server TLS: self-signed certificate for 127.0.0.1, ::1, localhost; SHA-256 fingerprint %s\n", fp)
	case cfg.TLSCert != "":
		tc, err := server.LoadTLS(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			r.out.errorf("sse-latency: --tls-cert/--tls-key: %v\n", err)
			return ExitFailure
		}
		srvCfg.TLS, r.selfTLS = tc, tc
	}
	gwTarget, err := parseTarget(cfg.Target)
	if err != nil {
		r.out.errorf("sse-latency: -t: %v\n", err)
		return ExitFailure
	}
	gwTLS, err := r.gatewayTLS(gwTarget)
	if err != nil {
		r.out.errorf("sse-latency: %v\n", err)
		return ExitFailure
	}
	srv, err := r.listen(laddr, srvCfg)
	if err != nil {
		r.out.errorf("sse-latency: cannot listen on %s: %v\n", cfg.Listen, err)
		return ExitFailure
	}
	r.srv = srv
	srvCtx, stopSrv := context.WithCancel(context.Background())
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Serve(srvCtx) }()
	defer func() {
		stopSrv()
		<-srvDone
	}()
	r.out.errorf("dummy OpenAI-like SSE server listening on %s (POST /v1/chat/completions)\n", displayListen(srv.Addr()))
	if cfg.Verbose {
		r.out.debugf("server: also POST /v1/completions, /v1/responses, /v1/messages (any path with these endings), GET /v1/models")
	}

	if cfg.Target == "" {
		r.out.errorf("no -t given: running as server only. Ctrl-C to stop.\n")
		select {
		case <-ctx.Done():
		case err := <-srvDone:
			srvDone <- err
			r.out.errorf("sse-latency: server stopped: %v\n", err)
			return ExitFailure
		}
		return ExitOK
	}

	target, err := destAddr(ctx, gwTarget.hostPort)
	if err != nil {
		r.out.errorf("sse-latency: -t: %v\n", err)
		return ExitFailure
	}
	// The calibration target is the listen address as the server really
	// bound it (so -L :0 works), wildcard meaning loopback.
	self, err := destAddr(ctx, srvAddrString(srv, cfg.Listen))
	if err != nil {
		r.out.errorf("sse-latency: -L: %v\n", err)
		return ExitFailure
	}

	var loop *stats.Batch
	if !cfg.NoLoopback && self == target {
		r.out.errorf("note: -t equals -L, skipping loopback calibration\n")
	} else if !cfg.NoLoopback {
		k := max(cfg.Concurrency, 3)
		if cfg.Requests > 0 {
			k = min(k, cfg.Requests)
		}
		m := min(cfg.Tokens, calibrationMaxTokens)
		c := min(cfg.Concurrency, k)
		r.out.errorf("loop: calibrating the noise floor with %d request(s) of %d tokens to %s (concurrency=%d, think=%sms, delay=%sms) ...\n",
			k, m, self, c, fmtMs(cfg.ThinkMs), fmtMs(cfg.DelayMs))
		// Straight to the server, on the dialect's own path (--path is the
		// gateway's), in the protocol closest to the gateway batch's.
		req := r.calibrationRequest(self, m)
		r.loopBursts, r.loopSamples = verdict.NewAccumulator(), report.NewSampleCollector()
		loop = r.runBatch(ctx, batch.Spec{Name: "loop", Requests: k, Concurrency: c, Request: req}, r.loopBursts, r.loopSamples)
	}

	var gw *stats.Batch
	if ctx.Err() == nil {
		if cfg.Rate == 0 && cfg.Duration == 0 {
			r.out.errorf("gw: sending %d request(s) to %s (concurrency=%d, tokens=%d, think=%sms, delay=%sms) ...\n",
				cfg.Requests, target, cfg.Concurrency, cfg.Tokens, fmtMs(cfg.ThinkMs), fmtMs(cfg.DelayMs))
			if line, ok := report.ExpectLine(cfg.ThinkMs, cfg.DelayMs, cfg.Tokens, cfg.Requests, cfg.Concurrency); ok {
				r.out.errorf("%s\n", line)
			}
		} else {
			r.out.errorf("gw: sending %s to %s (%s, tokens=%d, think=%sms, delay=%sms) ...\n",
				loadShape(cfg), target, capText(cfg), cfg.Tokens, fmtMs(cfg.ThinkMs), fmtMs(cfg.DelayMs))
		}
		req := r.request(target, gwTarget, gwTLS, -1, cfg.Tokens)
		r.gwBursts, r.gwSamples = verdict.NewAccumulator(), report.NewSampleCollector()
		spec := batch.Spec{Name: "gw", Requests: cfg.Requests, Concurrency: cfg.Concurrency, Request: req,
			Rate: cfg.Rate, Arrival: cfg.Arrival, Seed: 1, Duration: cfg.Duration, Warmup: cfg.Warmup}
		if spec.Requests > 0 {
			spec.Requests += cfg.Warmup // -r counts the measured requests
			if spec.Rate == 0 {
				spec.Concurrency = min(spec.Concurrency, spec.Requests)
			}
		}
		gw = r.runBatch(ctx, spec, r.gwBursts, r.gwSamples)
	} else {
		gw = stats.NewBatch()
		r.gwBursts, r.gwSamples = verdict.NewAccumulator(), report.NewSampleCollector()
	}
	v := verdict.Classify(r.loopBursts, r.gwBursts, loop, gw)
	r.sum.Loop, r.sum.Gateway, r.sum.Verdict = loop, gw, &v
	r.sum.ServerConnections, r.sum.ServerRequests = srv.Connections(), srv.Requests()

	if err := r.out.report(loop, gw); err != nil {
		r.out.errorf("sse-latency: writing the report: %v\n", err)
	}
	if !cfg.Compat {
		if err := r.out.goReport(v, loop, gw); err != nil {
			r.out.errorf("sse-latency: writing the report: %v\n", err)
		}
	}
	warning := r.checkLateness()
	code, reason := ExitOK, "done"
	switch {
	case ctx.Err() != nil:
		r.out.errorf("interrupted: the report covers the requests that finished or were cut short\n")
		code, reason = ExitInterrupted, "interrupted"
	case gw.Failed > 0:
		code = ExitFailure
	}
	if err := r.closeCSV(); err != nil {
		r.out.errorf("sse-latency: --csv: %v\n", err)
		code = max(code, ExitFailure)
	}
	if cfg.JSONPath != "" || cfg.HTMLPath != "" {
		doc := r.document(loop, gw, self, target, &v, warning, code, reason)
		if err := r.writeDocument(doc); err != nil {
			r.out.errorf("sse-latency: %v\n", err)
			code = max(code, ExitFailure)
		}
	}
	return code
}

// listen returns the dummy server on the listener handed to MeasureOn,
// else bound to laddr.
func (r *run) listen(laddr string, cfg server.Config) (*server.Server, error) {
	if r.ln != nil {
		return server.New(r.ln, cfg), nil
	}
	return server.Listen(laddr, cfg)
}

// closeCSV flushes and closes the --csv file (once).
func (r *run) closeCSV() error {
	if r.csv == nil {
		return nil
	}
	err := r.csv.Close()
	if cerr := r.csvFile.Close(); err == nil {
		err = cerr
	}
	r.csv, r.csvFile = nil, nil
	return err
}

// document gathers the run into the JSON document.
func (r *run) document(loop, gw *stats.Batch, loopTarget, gwTarget string, v *verdict.Verdict, warning string, code int, reason string) *report.Document {
	cfgJSON, _ := json.Marshal(r.cfg.Redacted())
	user, sys := cpuTimes()
	ri := report.RunInfo{
		Config: cfgJSON, Start: r.start, End: time.Now(), EndReason: reason, ExitCode: code,
		Loop: loop, LoopTarget: loopTarget, Gateway: gw, GatewayTarget: gwTarget,
		Verdict: v, Lateness: r.srv.Lateness(), UserS: user, SystemS: sys, Warning: warning, Version: Version(),
	}
	if r.loopSamples != nil {
		ri.LoopSamples = r.loopSamples.Samples()
	}
	if r.gwSamples != nil {
		ri.GatewaySamples = r.gwSamples.Samples()
	}
	return report.NewDocument(ri)
}

// writeDocument writes --json and --html.
func (r *run) writeDocument(doc *report.Document) error {
	if p := r.cfg.JSONPath; p == "-" {
		if err := report.WriteJSON(r.docOut, doc); err != nil {
			return fmt.Errorf("--json: %v", err)
		}
	} else if p != "" {
		if err := writeFile(p, func(w io.Writer) error { return report.WriteJSON(w, doc) }); err != nil {
			return fmt.Errorf("--json: %v", err)
		}
	}
	if p := r.cfg.HTMLPath; p != "" {
		if err := writeFile(p, func(w io.Writer) error { return report.WriteHTML(w, doc) }); err != nil {
			return fmt.Errorf("--html: %v", err)
		}
	}
	return nil
}

// writeFile creates path and fills it with write, reporting the first error.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// request prepares the gateway batch's requests to addr (the resolved
// target). tokens >= 0 asks the server for that many; expect is how many
// the responses must carry.
func (r *run) request(addr string, t target, tc *tls.Config, tokens, expect int) *client.Request {
	o := r.baseOptions(addr, tokens, expect)
	o.Path = r.cfg.Path
	if o.Path == "" && t.prefix != "" {
		o.Path = t.prefix + r.cfg.Dialect().Path()
	}
	o.Host = r.cfg.HostHeader
	if o.Host == "" && t.url {
		o.Host = t.hostPort
	}
	o.Scheme, o.TLS = t.scheme, tc
	o.HTTP2, o.H2C = r.cfg.HTTP2 && t.scheme == "https", r.cfg.H2C && t.scheme != "https"
	return client.New(o)
}

// calibrationRequest prepares the calibration's requests straight to the
// server: its own path, TLS when it listens with TLS (trusting its own
// certificate), and HTTP/2 when the gateway batch uses it.
func (r *run) calibrationRequest(addr string, tokens int) *client.Request {
	o := r.baseOptions(addr, tokens, tokens)
	if r.selfTLS != nil {
		o.Scheme = "https"
		o.TLS = &tls.Config{InsecureSkipVerify: true} // our own certificate, generated or given
		o.HTTP2 = r.cfg.HTTP2 || r.cfg.H2C
	} else {
		o.H2C = r.cfg.H2C || r.cfg.HTTP2
	}
	return client.New(o)
}

func (r *run) baseOptions(addr string, tokens, expect int) client.Options {
	return client.Options{
		Dialect:      r.cfg.Dialect(),
		Addr:         addr,
		Model:        r.cfg.Model,
		Tokens:       tokens,
		ExpectTokens: expect,
		IncludeUsage: r.cfg.IncludeUsage,
		ExtraHeaders: r.extraHeaders(),
		APIKey:       r.cfg.APIKey,
		KeepAlive:    r.cfg.KeepAlive,
		Timeout:      time.Duration(r.cfg.TimeoutMs) * time.Millisecond,
		IdleTimeout:  time.Duration(r.cfg.IdleMs) * time.Millisecond,
		Registry:     r.emissions,
		IDPrefix:     r.runID,
	}
}

// gatewayTLS is the client TLS configuration for an https target: SNI from
// its host, --cacert and --insecure applied.
func (r *run) gatewayTLS(t target) (*tls.Config, error) {
	if t.scheme != "https" {
		return nil, nil
	}
	host, _, _ := net.SplitHostPort(t.hostPort)
	if r.cfg.HostHeader != "" {
		host = r.cfg.HostHeader
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
	}
	tc := &tls.Config{ServerName: host, InsecureSkipVerify: r.cfg.Insecure}
	if r.cfg.CACert != "" {
		pem, err := os.ReadFile(r.cfg.CACert)
		if err != nil {
			return nil, fmt.Errorf("--cacert: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--cacert: no PEM certificate in %s", r.cfg.CACert)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

// newRunID returns a short random id that prefixes this run's request ids,
// so that two runs sharing a gateway (or a server) cannot mix them up.
func newRunID() string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	var b [6]byte
	rand.Read(b[:])
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	return string(b[:])
}

// extraHeaders are the request headers the flags add to the reference's.
func (r *run) extraHeaders() []string {
	if r.cfg.Compressed {
		return []string{"Accept-Encoding: gzip"}
	}
	return nil
}

// runBatch runs one batch, printing per-request lines and the progress line,
// and returns its statistics.
func (r *run) runBatch(ctx context.Context, spec batch.Spec, bursts *verdict.Accumulator, samples *report.SampleCollector) *stats.Batch {
	b := stats.NewBatch()
	sink := func(rec *result.Request) {
		b.Add(rec) // counts a warm-up request apart, outside the statistics
		if !rec.Warmup {
			bursts.Add(rec)
			samples.Add(rec)
			if r.csv != nil {
				r.csv.Add(rec)
			}
		}
		if !r.cfg.Quiet {
			r.out.requestLine(rec)
		}
		if r.cfg.Verbose {
			r.out.debugf("%s %d: %d tokens in %d reads, %d bytes", rec.Batch, rec.Index, len(rec.Tokens), rec.Reads, rec.Bytes)
			r.out.debugf("%s", report.PhasesLine(rec))
		}
	}
	var progress func(batch.Progress)
	if r.out.tty {
		progress = r.out.progress
	}
	batch.Run(ctx, spec, sink, progress)
	r.out.clearProgress()
	if r.cfg.Verbose {
		r.out.debugf("%s: inter-token p1=%.3fms p50=%.3fms p99=%.3fms; emit->recv p50=%.3fms p99=%.3fms p99.9=%.3fms",
			spec.Name, ms(b.InterToken.Percentile(0.01)), ms(b.InterToken.Percentile(0.50)), ms(b.InterToken.Percentile(0.99)),
			ms(b.EmitRecv.Percentile(0.50)), ms(b.EmitRecv.Percentile(0.99)), ms(b.EmitRecv.Percentile(0.999)))
	}
	return b
}

// checkLateness warns, after the report, when the tool itself fell behind
// its emission schedule: the figures then describe its overload. It returns
// the warning it printed, if any.
func (r *run) checkLateness() string {
	late := r.srv.Lateness()
	if late.N() == 0 {
		return ""
	}
	p50, p99 := late.Percentile(0.50), late.Percentile(0.99)
	if r.cfg.Verbose {
		r.out.debugf("server: %d tokens emitted, emission lateness p50=%.3fms p99=%.3fms max=%.3fms",
			late.N(), ms(p50), ms(p99), ms(late.Max()))
	}
	if p99 <= LatenessWarnNs {
		return ""
	}
	w := fmt.Sprintf("sse-latency fell behind its own emission schedule (lateness p99=%.3fms > %.0fms): "+
		"these figures describe the tool's overload, not the gateway; lower -c or raise -d", ms(p99), ms(LatenessWarnNs))
	r.out.errorf("warning: %s\n", w)
	return w
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// fmtMs prints a millisecond setting as compactly as C's %g would.
func fmtMs(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// srvAddrString returns the bound address in the -L syntax, keeping the
// host the user gave (so a wildcard stays a wildcard) with the real port (so
// -L :0 works).
func srvAddrString(srv *server.Server, listen string) string {
	host, _, _ := splitAddr(listen)
	port := 0
	if a, ok := srv.Addr().(*net.TCPAddr); ok {
		port = a.Port
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// console serialises everything printed while batches run: per-request
// lines on stdout, and on a terminal the progress line on stderr, which is
// erased before any other line.
type console struct {
	mu            sync.Mutex
	stdout        io.Writer
	stderr        io.Writer
	tty           bool
	progressShown bool
}

func (c *console) erase() {
	if c.progressShown {
		io.WriteString(c.stderr, report.EraseLine)
		c.progressShown = false
	}
}

func (c *console) errorf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.erase()
	fmt.Fprintf(c.stderr, format, args...)
}

func (c *console) debugf(format string, args ...any) {
	c.errorf(format+"\n", args...)
}

func (c *console) requestLine(rec *result.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.erase()
	report.WriteRequestLine(c.stdout, rec)
}

func (c *console) progress(p batch.Progress) {
	c.mu.Lock()
	defer c.mu.Unlock()
	io.WriteString(c.stderr, report.ProgressLine(p.Elapsed, p.Done, p.Total, p.InFlight, p.Tokens))
	c.progressShown = true
}

func (c *console) clearProgress() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.erase()
}

func (c *console) report(loop, gw *stats.Batch) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.erase()
	return report.WriteReport(c.stdout, loop, gw)
}

// goReport writes the Go tool's blocks that follow the reference's report:
// the verdict and the stream shape.
func (c *console) goReport(v verdict.Verdict, loop, gw *stats.Batch) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.erase()
	if err := report.WriteVerdict(c.stdout, v); err != nil {
		return err
	}
	return report.WriteStream(c.stdout, loop, gw)
}

// isTerminal reports whether w is a terminal (for the progress line).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && fileIsTerminal(f)
}
