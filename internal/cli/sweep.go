package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/sse-latency/sse-latency/internal/report"
	"github.com/sse-latency/sse-latency/internal/rundoc"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/sweep"
)

// sweepAbout and sweepNotes are the sweep's help around its own flags
// (see command).
const sweepAbout = `Walks one axis of load, a measurement per value, to find where the
gateway's overhead starts to climb: -c, --rate or --prompt-bytes takes
the list of values.

Each step runs its own loopback round and gateway round (--rounds n: n of
each, alternated L G G L ...), so the overhead at each load is measured
against the tool's own floor at that load. The other options are the
run's (see sse-latency -h), the same for every step.

Then a table of the overhead per step (added emit->recv and TTFT, p50 and
p99), the verdict, and two flags: the gateway's knee, the first step whose
added emit->recv p99 exceeds the threshold or grows faster than the load;
and the tool's own saturation (its emission lateness p99 above 1 ms, or
its loopback adding more than the threshold), which makes a step's figures
the tool's, not the gateway's. A step where more than 1% of the gateway
requests failed is marked FAILING, with what went wrong.
`

const sweepNotes = `--json and --html hold every step, re-rendered by sse-latency report.

Ctrl-C stops the sweep and prints the steps done (exit 130). Exit 1 when a
request failed, else 0.
`

// The usages of the sweep's flags that differ from the run's.
const (
	sweepConcurrencyUsage = "<list> requests in flight, a step per value, e.g. 1,10,50,100,200 (-r is raised to at least each value)"
	sweepRateUsage        = "<list> requests started per second, a step per value, e.g. 10,50,100 (open loop; -c caps those in flight)"
	sweepPromptBytesUsage = "<list> the prompt padded to each size, a step per value, e.g. 1k,64k,256k,1m (k = 1024 bytes, m = 1024 k)"
	sweepKneeUsage        = "<ms> the knee's threshold on the added emit->recv p99 (def 1)"
)

// sweepPlan is a sweep's command line: the run's, with an axis and its
// values.
type sweepPlan struct {
	commandLine        // its cfg: the first step's, validated (the document records it)
	base        Config // the configuration as given, before a step's value
	axis        string
	values      []float64
	kneeMs      float64
}

// parseSweep reads the sweep's command line: the run's flags, with -c,
// --rate or --prompt-bytes giving the list of values of the axis (the
// others single values) and --knee-threshold.
func parseSweep(args []string) (sweepPlan, error) {
	lists := &listFlags{}
	cl, err := parseFlags(args, lists)
	p := sweepPlan{commandLine: cl, kneeMs: lists.kneeMs}
	if err != nil {
		return p, err
	}
	cfg := &p.cfg
	var list string
	if p.axis, list, err = sweep.Axis(lists.concurrency, lists.rate, lists.promptBytes); err != nil {
		return p, err
	}
	if p.values, err = sweep.ParseValues(p.axis, list); err != nil {
		return p, fmt.Errorf("%s %q: %v", sweep.Flag(p.axis), list, err)
	}
	// The flags that are not the axis hold single values.
	if v := lists.concurrency; p.axis != sweep.AxisConcurrency && v != "" {
		if cfg.Concurrency, err = strconv.Atoi(v); err != nil {
			return p, fmt.Errorf("-c %q: not a whole number", v)
		}
	}
	if v := lists.rate; p.axis != sweep.AxisRate && v != "" {
		if cfg.Rate, err = strconv.ParseFloat(v, 64); err != nil {
			return p, fmt.Errorf("--rate %q: not a number", v)
		}
	}
	if v := lists.promptBytes; p.axis != sweep.AxisPromptBytes && v != "" {
		n, err := sweep.ParseSize(v)
		if err != nil {
			return p, fmt.Errorf("--prompt-bytes: %v", err)
		}
		cfg.PromptBytes = n
	}
	if (cfg.Rate > 0 || p.axis == sweep.AxisRate) && !lists.changed("concurrency") {
		cfg.Concurrency = 0 // open loop: no cap unless -c gives one
	}
	switch {
	case math.IsNaN(p.kneeMs) || math.IsInf(p.kneeMs, 0) || p.kneeMs <= 0:
		return p, fmt.Errorf("--knee-threshold %v: want a number of milliseconds above 0", p.kneeMs)
	case cfg.Target == "":
		return p, errors.New("sweep needs -t: the gateway to measure")
	case cfg.CSVPath != "":
		return p, errors.New("--csv: not with sweep (its steps' tokens would share the file's request numbers)")
	case cfg.Compat:
		return p, errors.New("--compat: not with sweep (the reference has no sweep: its table is the Go tool's)")
	case cfg.Server != "":
		return p, errors.New("--server: a sweep measures each step against its own loopback, which needs the server here")
	case cfg.NoLoopback:
		return p, errors.New("-l: a sweep measures each step against its own loopback")
	case len(cfg.SLOs) > 0:
		return p, errors.New("--slo: not with sweep (its knee shows where the overhead starts to climb; check objectives on a run at the load you choose)")
	}
	p.base = *cfg
	for _, v := range p.values {
		if _, err := p.stepConfig(v); err != nil {
			return p, fmt.Errorf("%s %s: %w", sweep.Flag(p.axis), sweep.FormatValue(p.axis, v), err)
		}
	}
	p.cfg, _ = p.stepConfig(p.values[0])
	return p, p.check()
}

// stepConfig is the configuration of the step at value v: the axis set to
// v (a concurrency raising -r to it, when -r counts the requests),
// validated.
func (p *sweepPlan) stepConfig(v float64) (Config, error) {
	cfg := p.base
	switch p.axis {
	case sweep.AxisConcurrency:
		cfg.Concurrency = int(v)
		if cfg.Requests > 0 {
			cfg.Requests = max(cfg.Requests, cfg.Concurrency)
		}
	case sweep.AxisRate:
		cfg.Rate = v
	case sweep.AxisPromptBytes:
		cfg.PromptBytes = int(v)
	}
	return cfg, cfg.Validate()
}

// sweepMain runs `sse-latency sweep`, its server on ln when not nil (see
// MeasureOn).
func sweepMain(ctx context.Context, ln net.Listener, args []string, stdout, stderr io.Writer) int {
	p, err := parseSweep(args)
	switch {
	case errors.Is(err, errHelp):
		fmt.Fprint(stderr, sweepUsage())
		return ExitOK
	case errors.Is(err, errVersion):
		return Main(ctx, []string{"--version"}, stdout, stderr)
	case err != nil:
		fmt.Fprintf(stderr, "sse-latency: sweep: %v\n%s", err, sweepUsage())
		return ExitFailure
	}
	text := stdout
	if p.cfg.JSONPath == "-" {
		text = stderr
	}
	r := &run{commandLine: p.commandLine, cfg: p.cfg, out: &console{stdout: text, stderr: stderr, tty: isTerminal(stderr)},
		sum: &Summary{Config: p.cfg}, docOut: stdout, ln: ln}
	return r.sweep(ctx, &p)
}

// sweep runs the steps of p, one after the other on one server, and
// reports them.
func (r *run) sweep(ctx context.Context, p *sweepPlan) int {
	r.start = time.Now()
	restore, err := r.pinTool()
	if err != nil {
		return r.fail(err)
	}
	defer restore()
	if p.axis == sweep.AxisConcurrency { // setUp checks the first step's
		if err := checkOpenFiles(int(p.values[len(p.values)-1])); err != nil {
			return r.fail(err)
		}
	}
	if err := r.setUp(); err != nil {
		return r.fail(err)
	}
	defer r.outs.abandon()
	defer r.stop()
	if err := r.resolve(ctx); err != nil {
		return r.fail(err)
	}
	pairs := max(p.cfg.Rounds, 1)
	sw := &sweep.Sweep{Axis: p.axis, Values: p.values, Rounds: pairs, KneeThresholdMs: p.kneeMs, Steps: []sweep.Step{}}
	failed := 0
	for i, v := range p.values {
		if ctx.Err() != nil {
			break
		}
		step, err := r.sweepStep(ctx, p, i, v, pairs)
		if err != nil {
			return r.fail(err)
		}
		if ctx.Err() != nil {
			r.out.errorf("sweep: interrupted during step %d (%s %s): left out\n", i+1, sweep.Flag(p.axis), sweep.FormatValue(p.axis, v))
			break
		}
		if g := step.Gateway(); g != nil {
			failed += g.Failed
		}
		sw.Steps = append(sw.Steps, *step)
	}
	sw.Knee = sweep.FindKnee(p.axis, sw.Steps, p.kneeMs)
	sw.GatewaySaturated = sweep.GatewaySaturation(sw.Steps)
	return r.finishSweep(ctx, sw, failed)
}

// sweepStep runs step i, at value v, and summarises it: its batches, its
// rounds' overhead, the tool's lateness and CPU during the step, whether
// the tool saturated.
func (r *run) sweepStep(ctx context.Context, p *sweepPlan, i int, v float64, pairs int) (*sweep.Step, error) {
	cfg, err := p.stepConfig(v)
	if err != nil {
		return nil, err
	}
	s := *r // the run at this step's load, on the same server and outputs
	s.cfg = cfg
	r.out.errorf("step %d/%d: %s %s\n", i+1, len(p.values), sweep.Flag(p.axis), sweep.FormatValue(p.axis, v))
	lateBefore := r.srv.Lateness()
	userBefore, sysBefore := cpuTimes()
	loop, gw, rounds, err := s.interleave(ctx, pairs, "s"+strconv.Itoa(i))
	if err != nil {
		return nil, err
	}
	user, sys := cpuTimes()
	sum := summary.New(summary.Inputs{Loop: loop, Gateway: gw, LoopTarget: r.selfAddr, GatewayTarget: r.gwAddr, Identify: r.gwSeen,
		Lateness: stats.Since(r.srv.Lateness(), lateBefore), UserS: user - userBefore, SystemS: sys - sysBefore, Rounds: rounds,
		PageBytes: os.Getpagesize(), Pin: r.cost.pin(r.toolCPUs)})
	for j := range sum.Batches { // the run report's plots are not drawn for steps
		sum.Batches[j].Samples = summary.NormSamples(summary.Samples{})
	}
	step := &sweep.Step{Value: v, Requests: cfg.Requests, Run: *sum}
	step.ToolSaturated, step.ToolReason = sweep.Saturation(sum, p.kneeMs)
	step.Failing, step.FailingReason = sweep.Failing(sum)
	r.out.errorf("%s\n", report.SweepStepLine(p.axis, step))
	return step, nil
}

// finishSweep reports the sweep and writes its files; failed counts the
// failed gateway requests of its steps.
func (r *run) finishSweep(ctx context.Context, sw *sweep.Sweep, failed int) int {
	user, sys := cpuTimes()
	whole := summary.New(summary.Inputs{Lateness: r.srv.Lateness(), UserS: user, SystemS: sys})
	code, reason := exitStatus(ctx.Err() != nil, failed, true)
	doc := rundoc.NewDocument(rundoc.RunInfo{Config: r.cfg.Redacted().Config, Start: r.start, End: time.Now(),
		EndReason: reason, ExitCode: code, Version: Version(), Request: r.sentRequest()}, whole)
	doc.Sweep = sw
	r.out.sweep(doc)
	return r.conclude(doc, code)
}
