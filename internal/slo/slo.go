// Package slo reads and checks the gates a run or a comparison is held to:
// service-level objectives on a run's figures (--slo, Parse, Check, the
// goodput of Goodput), and the regression conditions of `sse-latency
// compare --fail-if` (ParseFailIf, FailIf.Eval), which fail only beyond the
// noise the rounds of the runs show.
//
// Both name figures as the reports print them: a batch (gateway, loopback,
// or added — gateway minus loopback, the overhead block), a metric by its
// report name (TTFT (client), TTFT emit->recv(1st), inter-token (client),
// emit->recv (tokens), or their short forms TTFT, emit->recv(1st),
// inter-token, emit->recv), and a statistic (mean, p50, p99, …); or a
// figure of the cost block, which has no statistic: the gateway's
// processes' CPU per token or per stream ("gateway cpu/token"), or the
// tool's ("tool cpu/token"). The parsers' errors name the part that is
// wrong.
package slo

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/summary"
)

// Scopes: which figures an objective or a condition reads.
const (
	ScopeGateway  = "gateway"  // the gateway batch
	ScopeLoopback = "loopback" // the loopback calibration
	ScopeAdded    = "added"    // gateway minus loopback (the overhead)
	ScopeTool     = "tool"     // the tool's own cost (cost figures only)
)

// Metric keys, as the document names the metrics.
const (
	MetricTTFT          = "ttft"
	MetricFirstEmitRecv = "first_emit_recv"
	MetricInterToken    = "inter_token"
	MetricEmitRecv      = "emit_recv"
	// The cost block's figures, of the gateway batch: CPU per token
	// received and per stream, in milliseconds here (the block prints
	// µs/token and ms/stream).
	MetricCPUPerToken  = "cpu_per_token"
	MetricCPUPerStream = "cpu_per_stream"
)

// costNames maps the spellings of the cost figures to their keys.
var costNames = map[string]string{
	"cpu/token": MetricCPUPerToken, "cpu_per_token": MetricCPUPerToken,
	"cpu/stream": MetricCPUPerStream, "cpu_per_stream": MetricCPUPerStream,
}

// IsCost reports whether metric key k is a figure of the cost block.
func IsCost(k string) bool { return k == MetricCPUPerToken || k == MetricCPUPerStream }

// metricNames maps every accepted spelling of a metric (lower case) to its
// key: the batch block's names, the overhead block's, short forms and the
// document's keys.
var metricNames = map[string]string{
	"ttft (client)": MetricTTFT, "ttft": MetricTTFT,
	"ttft emit->recv(1st)": MetricFirstEmitRecv, "emit->recv (1st token)": MetricFirstEmitRecv,
	"emit->recv(1st)": MetricFirstEmitRecv, "first_emit_recv": MetricFirstEmitRecv,
	"inter-token (client)": MetricInterToken, "inter-token": MetricInterToken, "inter_token": MetricInterToken,
	"emit->recv (tokens)": MetricEmitRecv, "emit->recv": MetricEmitRecv, "emit_recv": MetricEmitRecv,
}

// reportName is the name the batch block gives each metric.
var reportName = map[string]string{
	MetricTTFT:          "TTFT (client)",
	MetricFirstEmitRecv: "TTFT emit->recv(1st)",
	MetricInterToken:    "inter-token (client)",
	MetricEmitRecv:      "emit->recv (tokens)",
	MetricCPUPerToken:   "cpu/token",
	MetricCPUPerStream:  "cpu/stream",
}

// batchStats are the statistics of a batch's metric; overheadStats those
// the overhead (and the rounds) have.
var (
	batchStats    = []string{"mean", "min", "p50", "p90", "p95", "p99", "p99.9", "max"}
	overheadStats = []string{"mean", "p50", "p95", "p99"}
)

// ErrSyntax is wrapped by every error of Parse and ParseFailIf.
var ErrSyntax = errors.New("malformed")

// SLO is one service-level objective: a figure of the run below a bound.
type SLO struct {
	Scope     string  // ScopeGateway, ScopeLoopback or ScopeAdded
	Metric    string  // MetricTTFT, …
	Stat      string  // "mean", "p99", …
	Inclusive bool    // "<=" rather than "<"
	BoundMs   float64 // the bound, in milliseconds
}

// Syntax is the form of an objective, for messages and help.
const Syntax = `[gateway|loopback|added] <metric> <stat> < <value><unit>, or [gateway|tool] cpu/token|cpu/stream < <value><unit>`

// Parse reads an objective such as "gateway emit->recv p99 < 1ms":
//
//	[gateway|loopback|added] <metric> <stat> (<|<=) <number><unit>
//
// The batch is the gateway's when left out; metrics go by their report
// names or short forms (case and spacing free); stat is mean, min, p50,
// p90, p95, p99, p99.9 or max (added: mean, p50, p95 or p99, as the
// overhead block has); the unit is ns, us (or µs), ms or s. Its errors
// wrap ErrSyntax and name the part that is wrong.
func Parse(s string) (SLO, error) {
	f, rest, err := parseFigure(s, "SLO", batchStats)
	o := SLO{Scope: f.Scope, Metric: f.Metric, Stat: f.Stat}
	if err != nil {
		return o, err
	}
	opEnd := 0
	switch {
	case strings.HasPrefix(rest, "<="):
		o.Inclusive, opEnd = true, 2
	case strings.HasPrefix(rest, "<"):
		opEnd = 1
	default:
		return o, fmt.Errorf("%w SLO %q: after %q want < or <=, got %q", ErrSyntax, s, o.Stat, firstWord(rest))
	}
	if o.BoundMs, err = parseDuration(strings.TrimSpace(rest[opEnd:])); err != nil {
		return o, fmt.Errorf("%w SLO %q: %v", ErrSyntax, s, err)
	}
	return o, nil
}

// figure is what an objective and a condition both name: a batch, a
// metric and a statistic.
type figure struct {
	Scope, Metric, Stat string
}

// parseFigure reads "[scope] metric stat" at the start of s (what names
// the kind of expression in errors) and returns the rest, its leading
// spaces removed. A batch scope allows stats; added allows overheadStats.
func parseFigure(s, what string, stats []string) (figure, string, error) {
	var f figure
	norm := strings.Join(strings.Fields(s), " ")
	if norm == "" {
		return f, "", fmt.Errorf("%w %s %q: empty (want %s)", ErrSyntax, what, s, syntaxOf(what))
	}
	low := lowerASCII(norm) // byte for byte: low's offsets are norm's
	f.Scope = ScopeGateway
	for _, sc := range []string{ScopeGateway, ScopeLoopback, ScopeAdded, ScopeTool} {
		if strings.HasPrefix(low, sc+" ") {
			f.Scope, low = sc, low[len(sc)+1:]
			break
		}
	}
	for n, k := range costNames {
		if low == n || strings.HasPrefix(low, n+" ") || strings.HasPrefix(low, n+"<") || strings.HasPrefix(low, n+"+") {
			if f.Scope != ScopeGateway && f.Scope != ScopeTool {
				return f, "", fmt.Errorf("%w %s %q: %s is a figure of the gateway's processes or of the tool (gateway %s, tool %s), not of %s",
					ErrSyntax, what, s, n, n, n, f.Scope)
			}
			f.Metric = k
			return f, strings.TrimPrefix(norm[len(norm)-len(low)+len(n):], " "), nil
		}
	}
	if f.Scope == ScopeTool {
		return f, "", fmt.Errorf("%w %s %q: the tool has only cost figures (tool cpu/token, tool cpu/stream)", ErrSyntax, what, s)
	}
	name := ""
	for n := range metricNames {
		if strings.HasPrefix(low, n) && len(n) > len(name) && (len(low) == len(n) || low[len(n)] == ' ') {
			name = n
		}
	}
	if name == "" {
		return f, "", fmt.Errorf("%w %s %q: unknown metric %q (want TTFT, TTFT emit->recv(1st), inter-token or emit->recv, as the reports name them, or cpu/token or cpu/stream)",
			ErrSyntax, what, s, firstWord(norm[len(norm)-len(low):]))
	}
	f.Metric = metricNames[name]
	low = strings.TrimPrefix(low[len(name):], " ")
	end := strings.IndexFunc(low, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.') })
	if end < 0 {
		end = len(low)
	}
	f.Stat = low[:end]
	allowed := stats
	if f.Scope == ScopeAdded {
		allowed = overheadStats
	}
	if !contains(allowed, f.Stat) {
		stat := f.Stat
		if stat == "" {
			stat = firstWord(low)
		}
		return f, "", fmt.Errorf("%w %s %q: unknown statistic %q of %s %s (want %s)",
			ErrSyntax, what, s, stat, f.Scope, reportName[f.Metric], strings.Join(allowed, ", "))
	}
	return f, strings.TrimPrefix(norm[len(norm)-len(low)+end:], " "), nil
}

// lowerASCII lowers the ASCII letters of s, and only them, so that its
// bytes stay at the offsets of s's.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// syntaxOf is the syntax of the kind of expression what names.
func syntaxOf(what string) string {
	if what == "SLO" {
		return Syntax
	}
	return FailIfSyntax
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// firstWord is the first space-separated word of s, or s when it has none
// ("" stays "").
func firstWord(s string) string {
	if w := strings.Fields(s); len(w) > 0 {
		return w[0]
	}
	return s
}

// units are the duration units, in milliseconds.
var units = []struct {
	name string
	ms   float64
}{{"ns", 1e-6}, {"us", 1e-3}, {"µs", 1e-3}, {"ms", 1}, {"s", 1000}}

// parseDuration reads "<number><unit>" (a space between them allowed)
// into milliseconds.
func parseDuration(v string) (float64, error) {
	if v == "" {
		return 0, errors.New("no value (want a number and a unit, e.g. 1ms)")
	}
	lv := lowerASCII(v)
	for _, u := range units {
		num, ok := strings.CutSuffix(lv, u.name) // "ms" is tried before "s"
		if !ok {
			continue
		}
		num = v[:len(num)]
		num = strings.TrimSpace(num)
		f, err := strconv.ParseFloat(num, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return 0, fmt.Errorf("value %q: %q is not a number", v, num)
		}
		return f * u.ms, nil
	}
	return 0, fmt.Errorf("value %q: no unit (want ns, us, ms or s)", v)
}

// String writes the objective as Parse reads it back, with the metric's
// report name and the bound in milliseconds: "gateway emit->recv (tokens)
// p99 < 1ms".
func (o SLO) String() string {
	op := "<"
	if o.Inclusive {
		op = "<="
	}
	if IsCost(o.Metric) {
		return fmt.Sprintf("%s %s %s %sms", o.Scope, reportName[o.Metric], op, strconv.FormatFloat(o.BoundMs, 'g', -1, 64))
	}
	return fmt.Sprintf("%s %s %s %s %sms", o.Scope, reportName[o.Metric], o.Stat, op, strconv.FormatFloat(o.BoundMs, 'g', -1, 64))
}

// PerRequest reports whether the objective holds for each request on its
// own — a gateway metric with one sample per request (TTFT, the first
// token's emit->recv) — and so counts in the goodput. An objective on the
// tokens' metrics, or on the loopback, or on the overhead (a comparison of
// two distributions) does not.
func (o SLO) PerRequest() bool {
	return o.Scope == ScopeGateway && (o.Metric == MetricTTFT || o.Metric == MetricFirstEmitRecv)
}

// met reports whether v is within the bound.
func (o SLO) met(v float64) bool {
	if o.Inclusive {
		return v <= o.BoundMs
	}
	return v < o.BoundMs
}

// Check checks the objectives against a run's summary: each objective's
// figure (the batch's statistic, or the overhead's — with rounds, the
// difference of the rounds' medians), met or not; a figure the run does
// not have (no such batch, no samples, no calibration) is not met, with
// the reason. goodput (nil for none) is reported beside them.
func Check(slos []SLO, run *summary.Run, goodput *Goodput) *summary.SLOs {
	out := &summary.SLOs{Met: true, Checks: []summary.SLOCheck{}}
	for _, o := range slos {
		c := summary.SLOCheck{SLO: o.String(), BoundMs: o.BoundMs, PerRequest: o.PerRequest()}
		v, reason := value(run, figure{o.Scope, o.Metric, o.Stat})
		if reason != "" {
			c.Reason = reason
		} else {
			c.ObservedMs, c.Met = v, o.met(v)
		}
		out.Met = out.Met && c.Met
		out.Checks = append(out.Checks, c)
	}
	if goodput != nil {
		out.Goodput = goodput.Result()
	}
	return out
}

// Gate returns the check of slos on a run's summary, as summary.New takes
// it (summary.Inputs.SLO): Check with the goodput counted during the run
// (nil when no objective is per request).
func Gate(slos []SLO, goodput *Goodput) func(*summary.Run) *summary.SLOs {
	return func(run *summary.Run) *summary.SLOs { return Check(slos, run, goodput) }
}

// value returns the figure f of run, or why there is none.
func value(run *summary.Run, f figure) (float64, string) {
	if IsCost(f.Metric) {
		g := run.Gateway()
		if g == nil {
			return 0, "no gateway batch"
		}
		return costValue(g.Cost, f)
	}
	if f.Scope == ScopeAdded {
		if run.Overhead == nil {
			return 0, "no calibration to subtract (no loopback batch)"
		}
		d := deltaOf(run.Overhead, f.Metric)
		if d == nil {
			return 0, "no samples"
		}
		return map[string]float64{"mean": d.MeanMs, "p50": d.P50Ms, "p95": d.P95Ms, "p99": d.P99Ms}[f.Stat], ""
	}
	b := run.Batch(f.Scope)
	if b == nil {
		return 0, "no " + f.Scope + " batch"
	}
	m := metricOf(&b.Metrics, f.Metric)
	if m.N == 0 {
		return 0, "no samples"
	}
	return statOf(m, f.Stat), ""
}

// costValue is cost figure f of a batch's (or a round's) cost c, in
// milliseconds, or why there is none.
func costValue(c *summary.Cost, f figure) (float64, string) {
	if c == nil {
		return 0, "no cost sampled (the run did not read /proc)"
	}
	cpu := &c.Tool
	if f.Scope == ScopeGateway {
		switch g := c.Gateway; {
		case g == nil:
			return 0, "no gateway process accounted (--gateway-pid names one)"
		case g.Unseen != "":
			return 0, "the gateway's processes were not seen: " + g.Unseen
		default:
			cpu = &g.CPUCost
		}
	}
	if f.Metric == MetricCPUPerStream {
		if c.Streams == 0 {
			return 0, "no streams"
		}
		return cpu.CPUPerStreamMs, ""
	}
	if c.Tokens == 0 {
		return 0, "no tokens"
	}
	return cpu.CPUPerTokenUs / 1000, ""
}

// metricOf is the metric of ms with key k.
func metricOf(ms *summary.Metrics, k string) *summary.Metric {
	switch k {
	case MetricTTFT:
		return &ms.TTFT
	case MetricFirstEmitRecv:
		return &ms.FirstEmitRecv
	case MetricInterToken:
		return &ms.InterToken
	}
	return &ms.EmitRecv
}

// deltaOf is the overhead line of o with key k (nil without samples).
func deltaOf(o *summary.Overhead, k string) *summary.Delta {
	switch k {
	case MetricTTFT:
		return o.TTFT
	case MetricFirstEmitRecv:
		return o.FirstEmitRecv
	case MetricInterToken:
		return o.InterToken
	}
	return o.EmitRecv
}

// statOf is statistic stat of m, in milliseconds.
func statOf(m *summary.Metric, stat string) float64 {
	switch stat {
	case "mean":
		return m.MeanMs
	case "min":
		return m.MinMs
	case "p50":
		return m.P50Ms
	case "p90":
		return m.P90Ms
	case "p95":
		return m.P95Ms
	case "p99":
		return m.P99Ms
	case "p99.9":
		return m.P999Ms
	}
	return m.MaxMs
}

// Goodput counts, as the gateway's requests finish, those that succeeded
// and met every per-request objective (SLO.PerRequest). Warm-up requests
// are left out. Add is called one request at a time.
type Goodput struct {
	slos           []SLO
	requests, good int
}

// NewGoodput returns the goodput counter of slos' per-request objectives;
// nil when none is per request (then only Check's figures say anything).
func NewGoodput(slos []SLO) *Goodput {
	g := &Goodput{}
	for _, o := range slos {
		if o.PerRequest() {
			g.slos = append(g.slos, o)
		}
	}
	if len(g.slos) == 0 {
		return nil
	}
	return g
}

// Add counts one finished gateway request.
func (g *Goodput) Add(r *result.Request) {
	if r.Warmup {
		return
	}
	g.requests++
	if r.OK() && g.meets(r) {
		g.good++
	}
}

// meets reports whether r's own figures meet every per-request objective
// (a figure r does not have — no token, no emission stamp — does not).
func (g *Goodput) meets(r *result.Request) bool {
	if len(r.Tokens) == 0 {
		return false
	}
	first := r.Tokens[0]
	for _, o := range g.slos {
		var ns int64
		switch {
		case o.Metric == MetricTTFT && r.Sent > 0:
			ns = first.Arrived - r.Sent
		case o.Metric == MetricFirstEmitRecv && first.Emitted != 0:
			ns = first.Arrived - first.Emitted
		default:
			return false
		}
		if !o.met(float64(ns) / 1e6) {
			return false
		}
	}
	return true
}

// Result returns the goodput so far.
func (g *Goodput) Result() *summary.Goodput {
	out := &summary.Goodput{Requests: g.requests, Good: g.good}
	if g.requests > 0 {
		out.Share = float64(g.good) / float64(g.requests)
	}
	return out
}

// RunOutcome is what one of the runs of a merge recorded of its
// objectives: those it was given (--slo, as written) and their check (nil
// when it had none).
type RunOutcome struct {
	Objectives []string
	Check      *summary.SLOs
}

// CheckMerged checks a merged run (summary.Merge) against the first run's
// objectives again, and returns the check with the notes to add: the
// goodput is the runs' summed when every run counted it for the same
// objectives, else dropped. It returns nil when the first run had no
// objectives, and only a note when one of them does not read.
func CheckMerged(merged *summary.Run, runs []RunOutcome) (*summary.SLOs, []string) {
	first := runs[0].Objectives
	if len(first) == 0 {
		return nil, nil
	}
	objectives := make([]SLO, 0, len(first))
	for _, s := range first {
		o, err := Parse(s)
		if err != nil {
			return nil, []string{fmt.Sprintf("slo: not checked again: the first run's objective %q does not read: %v", s, err)}
		}
		objectives = append(objectives, o)
	}
	check := Check(objectives, merged, nil)
	notes := []string{"slo: the first run's objectives checked again on the merged figures"}
	var good summary.Goodput
	for _, r := range runs {
		if r.Check == nil || r.Check.Goodput == nil || !slices.Equal(r.Objectives, first) {
			if NewGoodput(objectives) != nil {
				notes = append(notes, "slo: goodput dropped: not every run counted it for the same objectives")
			}
			return check, notes
		}
		good.Requests += r.Check.Goodput.Requests
		good.Good += r.Check.Goodput.Good
	}
	if good.Requests > 0 {
		good.Share = float64(good.Good) / float64(good.Requests)
	}
	check.Goodput = &good
	return check, notes
}
