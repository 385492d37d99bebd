package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/sse-latency/sse-latency/internal/probe"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/summary"
)

// Defaults of a probe.
const (
	DefaultProbeEvery   = 30 * time.Second
	DefaultProbeMetrics = ":9464"
)

// probeDefaults are the probe's own defaults of the measurement flags, a
// small round; the command line's own values come after and win.
var probeDefaults = []string{"-r", "5", "-c", "5", "-n", "100"}

// probeDefaultsFor are the probe's defaults for its command line args: a
// --corpus sets the tokens itself, and a default -n would read as the
// user's (which the corpus refuses).
func probeDefaultsFor(args []string) []string {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--corpus" || strings.HasPrefix(a, "--corpus=") {
			return slices.Clone(probeDefaults[:4])
		}
	}
	return slices.Clone(probeDefaults)
}

// probeAbout and probeNotes are the probe's help around its own flags
// (see command).
const probeAbout = `Measures the gateway in rounds, one every --every, until it is stopped, and
serves what it measured as Prometheus metrics. Each round is a measurement
of its own: the calibration straight to the server, then -r requests (-c at
once, -n tokens each) through the gateway; a line per round on stderr. The
dummy server runs here (-L), or on another host (--server, --control-token).
Ctrl-C or SIGTERM ends the probe after the round in flight (exit 0); a second
signal at once.
`

const probeNotes = `The flags of sse-latency set up the measurement (see sse-latency -h); the
probe's defaults are -r 5 -c 5 -n 100. --json, --html, --csv, --compat,
--duration, --rounds and --slo do not apply to a probe.
`

// probeCmd runs `sse-latency probe`.
func probeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cl, every, metricsAddr, err := parseProbe(args)
	switch {
	case errors.Is(err, errHelp):
		fmt.Fprint(stderr, probeUsage())
		return ExitOK
	case errors.Is(err, errVersion):
		fmt.Fprintln(stdout, "sse-latency", Version())
		return ExitOK
	case err != nil:
		fmt.Fprintf(stderr, "sse-latency probe: %v\n%s", err, probeUsage())
		return ExitFailure
	}
	cl.cfg.Quiet = true // a line per round, not per request
	r := &run{commandLine: cl, cfg: cl.cfg, out: &console{stdout: stdout, stderr: stderr}, sum: &Summary{Config: cl.cfg}, docOut: stdout}
	p := &prober{run: r, every: every, metricsAddr: metricsAddr, metrics: probe.New()}
	return p.main(ctx)
}

// parseProbe parses the probe's arguments (after "probe") into its
// validated command line, --every and --metrics.
func parseProbe(args []string) (cl commandLine, every time.Duration, metricsAddr string, err error) {
	every, metricsAddr = DefaultProbeEvery, DefaultProbeMetrics
	cl, err = parseArgs(append(probeDefaultsFor(args), args...), probeFlags(&every, &metricsAddr))
	if err == nil {
		err = checkProbe(cl.cfg, every, metricsAddr)
	}
	return cl, every, metricsAddr, err
}

// probeFlags adds the probe's own flags to the run's.
func probeFlags(every *time.Duration, metricsAddr *string) func(*pflag.FlagSet) {
	return func(fs *pflag.FlagSet) {
		fs.DurationVar(every, "every", *every, "<d> time between the starts of two rounds (def 30s)")
		fs.StringVar(metricsAddr, "metrics", *metricsAddr, "<addr> listen address of the metrics endpoint: GET /metrics, GET /healthz (def :9464)")
	}
}

// checkProbe refuses what a probe cannot do.
func checkProbe(cfg Config, every time.Duration, metricsAddr string) error {
	switch {
	case cfg.Target == "":
		return errors.New("a probe measures a gateway: give -t")
	case cfg.JSONPath != "" || cfg.HTMLPath != "" || cfg.CSVPath != "":
		return errors.New("--json, --html and --csv: a probe serves metrics, it writes no files")
	case cfg.Compat:
		return errors.New("--compat: a probe prints a line per round, not the reference's report")
	case cfg.Duration > 0:
		return errors.New("--duration: a probe's round is -r requests; --every sets how often")
	case cfg.Rounds > 0:
		return errors.New("--rounds: a probe's round is one calibration and -r requests; --every sets how often")
	case len(cfg.SLOs) > 0:
		return errors.New("--slo: a probe exports its figures as metrics; check objectives on them where they are scraped")
	case cfg.Trace != "":
		return errors.New("--trace: a probe's round is -r requests of one shape; replay a trace in a run")
	case every <= 0:
		return fmt.Errorf("--every %v: want a positive duration", every)
	}
	if _, _, err := listenAddr(metricsAddr); err != nil {
		return fmt.Errorf("--metrics: %v", err)
	}
	return nil
}

// prober is a running probe.
type prober struct {
	run         *run
	every       time.Duration
	metricsAddr string
	metrics     *probe.Metrics
}

// main sets up the server (or the connection to it) and the metrics
// endpoint, then runs rounds until ctx is done.
func (p *prober) main(ctx context.Context) int {
	r := p.run
	r.start = time.Now()
	restore, err := r.pinTool()
	if err != nil {
		return r.fail(err)
	}
	defer restore()
	if err := r.setUp(); err != nil {
		return r.fail(err)
	}
	defer r.stop()
	if err := r.resolve(ctx); err != nil {
		return r.fail(err)
	}
	addr, _, _ := listenAddr(p.metricsAddr)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return r.fail(fmt.Errorf("--metrics: cannot listen on %s: %w", p.metricsAddr, err))
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", p.metrics.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	go hs.Serve(ln)
	defer hs.Close()
	cfg := r.cfg
	r.out.errorf("probe: metrics on http://%s/metrics (health: /healthz); a round of %d request(s) of %d tokens every %v through %s\n",
		displayListen(ln.Addr()), cfg.Requests, cfg.Tokens, p.every, r.gwAddr)

	next := time.Now()
	n := 0
	for ctx.Err() == nil {
		n++
		if err := p.round(ctx, n); err != nil {
			return r.fail(err)
		}
		next = next.Add(p.every)
		wait := time.Until(next)
		if wait <= 0 {
			next = time.Now() // the round took longer than --every: the next starts now
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	r.out.errorf("probe: stopped after %d %s\n", n, pluralWord(n, "round", "rounds"))
	return ExitOK
}

// round runs round n to its end, even when ctx is done meanwhile (a
// signal ends the probe after the round in flight), and commits it to the
// metrics.
func (p *prober) round(ctx context.Context, n int) error {
	r := p.run
	rd := probe.NewRound()
	r.observe = func(rec *result.Request) { p.metrics.Add(rd, rec) }
	rctx := context.WithoutCancel(ctx)
	loop, err := r.calibrate(rctx)
	if err != nil {
		return err
	}
	gw, err := r.measure(rctx)
	if err != nil {
		return err
	}
	s := summary.New(summary.Inputs{Loop: loop, Gateway: gw, LoopTarget: r.selfAddr, GatewayTarget: r.gwAddr, Clock: r.clockSummary(), Replicas: r.replicaInfos(),
		Identify: r.gwSeen, PageBytes: os.Getpagesize()})
	p.metrics.Commit(rd, s, time.Now())
	r.out.errorf("probe: round %d: %s\n", n, roundLine(s))
	return nil
}

// roundLine sums a round up in one line: the gateway's requests, TTFT,
// emit->recv and request leg (p50), and the verdict with its added delay.
func roundLine(s *summary.Run) string {
	g := s.Gateway()
	line := fmt.Sprintf("gateway %d/%d ok, TTFT p50 %.3fms, emit->recv p50 %.3fms", g.OK, g.Requests, g.Metrics.TTFT.P50Ms, g.Metrics.EmitRecv.P50Ms)
	if l := g.RequestLeg; l != nil {
		line += fmt.Sprintf(", request leg p50 %.3fms", l.P50Ms)
	}
	if v := s.Verdict; v != nil {
		line += "; verdict " + v.Class.String()
		if v.Tokens > 0 {
			line += fmt.Sprintf(", added mean %+.3fms p99 %+.3fms", v.AddedMeanMs, v.AddedP99Ms)
		}
	}
	return line
}
