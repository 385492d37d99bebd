// Package sweep holds the pure logic of interleaved measurements: the order
// of loopback and gateway rounds (Order), the axes a sweep walks and their
// value lists (ParseValues, ParseSize), the sweep's record (Sweep, Step)
// and the knee of its curve (FindKnee), what says the tool itself
// saturated at a step (Saturation), and what says the gateway failed too
// many requests at a step (Failing). Package cli runs the batches; nothing
// here sleeps or sends.
package sweep

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/sse-latency/sse-latency/internal/failures"
	"github.com/sse-latency/sse-latency/internal/summary"
)

// Order returns the batches of pairs loopback/gateway pairs of rounds in
// the order they run, one letter per round (L loopback, G gateway):
// L G G L L G G L … — each pair in turn reversed (ABBA). Under a drift that
// is linear in time, the loopback and gateway rounds then sit at the same
// mean time, and with an even number of pairs at the same median time, so
// the drift weighs on both sides alike; the plain alternation L G L G puts
// every gateway round after its loopback round and biases the difference by
// half a round's drift. Without loopback, only the gateway rounds: G G …
func Order(pairs int, loopback bool) string {
	var b strings.Builder
	for k := range max(pairs, 0) {
		switch {
		case !loopback:
			b.WriteString("G")
		case k%2 == 0:
			b.WriteString("LG")
		default:
			b.WriteString("GL")
		}
	}
	return b.String()
}

// Axes a sweep walks, as its document names them (Sweep.Axis).
const (
	AxisConcurrency = "concurrency"  // -c: requests in flight
	AxisRate        = "rate"         // --rate: requests started per second (open loop)
	AxisPromptBytes = "prompt_bytes" // --prompt-bytes: the prompt's size
)

// Flag returns the command-line flag of axis.
func Flag(axis string) string {
	if axis == AxisPromptBytes {
		return "--prompt-bytes"
	}
	return "--" + axis
}

// MaxSteps bounds the values of a sweep.
const MaxSteps = 32

// MaxPromptBytes is the largest size ParseValues accepts on the
// prompt_bytes axis (api.MaxPromptBytes; the cli checks they agree).
const MaxPromptBytes = 4 << 20

// ParseValues reads the comma-separated values of axis: whole numbers of
// at least 1 for concurrency, numbers above 0 (requests per second) for
// rate, sizes (ParseSize) up to MaxPromptBytes for prompt_bytes; at most
// MaxSteps, each larger than the one before (a sweep climbs). Its errors
// name the value that is wrong.
func ParseValues(axis, list string) ([]float64, error) {
	items := strings.Split(list, ",")
	if len(items) > MaxSteps {
		return nil, fmt.Errorf("%d steps; at most %d", len(items), MaxSteps)
	}
	out := make([]float64, 0, len(items))
	for i, it := range items {
		it = strings.TrimSpace(it)
		if it == "" {
			return nil, fmt.Errorf("step %d is empty", i+1)
		}
		v, err := parseValue(axis, it)
		if err != nil {
			return nil, err
		}
		if i > 0 && v <= out[i-1] {
			return nil, fmt.Errorf("the steps must increase: %q after %q", it, strings.TrimSpace(items[i-1]))
		}
		out = append(out, v)
	}
	return out, nil
}

// parseValue reads one value of axis.
func parseValue(axis, s string) (float64, error) {
	switch axis {
	case AxisConcurrency:
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("%q is not a whole number of requests of at least 1", s)
		}
		return float64(n), nil
	case AxisRate:
		r, err := strconv.ParseFloat(s, 64)
		if err != nil || !(r > 0) || math.IsInf(r, 0) {
			return 0, fmt.Errorf("%q is not a rate above 0 requests per second", s)
		}
		return r, nil
	case AxisPromptBytes:
		n, err := ParseSize(s)
		if err != nil {
			return 0, err
		}
		if n > MaxPromptBytes {
			return 0, fmt.Errorf("%q is above the largest prompt, %s", s, FormatSize(MaxPromptBytes))
		}
		return float64(n), nil
	}
	return 0, fmt.Errorf("unknown axis %q", axis)
}

// ParseSize reads a size in bytes: a whole number, optionally followed by
// k (×1024) or m (×1024²), in either case: "512", "64k", "1m".
func ParseSize(s string) (int, error) {
	num, mult := s, 1
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		num, mult = s[:len(s)-1], 1<<10
	case strings.HasSuffix(s, "m"), strings.HasSuffix(s, "M"):
		num, mult = s[:len(s)-1], 1<<20
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || n > math.MaxInt32/mult {
		return 0, fmt.Errorf("%q is not a size (bytes, or a whole number followed by k or m: 512, 64k, 1m)", s)
	}
	return n * mult, nil
}

// FormatSize writes n bytes as ParseSize reads it, in the largest unit
// that divides it: "1m", "64k", "1000".
func FormatSize(n int) string {
	switch {
	case n > 0 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "m"
	case n > 0 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "k"
	}
	return strconv.Itoa(n)
}

// FormatValue writes a value of axis as the command line gives it.
func FormatValue(axis string, v float64) string {
	if axis == AxisPromptBytes {
		return FormatSize(int(v))
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// ErrNoAxis is returned by Axis when no flag holds a list.
var ErrNoAxis = errors.New("sweep needs one axis: --concurrency, --rate or --prompt-bytes with a comma-separated list of values")

// Axis picks the axis of a sweep from the values given to the three
// flags ("" for a flag not given): the one whose value is a list (holds a
// comma). None, or more than one, is an error naming them.
func Axis(concurrency, rate, promptBytes string) (axis, list string, err error) {
	var lists []string
	for _, f := range []struct{ axis, v string }{{AxisConcurrency, concurrency}, {AxisRate, rate}, {AxisPromptBytes, promptBytes}} {
		if strings.Contains(f.v, ",") {
			axis, list = f.axis, f.v
			lists = append(lists, Flag(f.axis))
		}
	}
	switch len(lists) {
	case 0:
		return "", "", ErrNoAxis
	case 1:
		return axis, list, nil
	}
	return "", "", fmt.Errorf("sweep walks one axis at a time; %s all give lists", strings.Join(lists, " and "))
}

// Sweep is the record of a sweep: its axis, the values asked for, and the
// steps done, each a whole measurement at one value (its own loopback
// rounds and gateway rounds), with the knee of the curve.
type Sweep struct {
	Axis            string    `json:"axis"`              // AxisConcurrency, AxisRate or AxisPromptBytes
	Values          []float64 `json:"values"`            // the values asked for, in order
	Rounds          int       `json:"rounds"`            // loopback/gateway pairs of rounds per step
	KneeThresholdMs float64   `json:"knee_threshold_ms"` // FindKnee's threshold
	Steps           []Step    `json:"steps"`             // the steps done (fewer than Values when interrupted)
	Knee            *Knee     `json:"knee,omitempty"`    // absent when no step reached it
	// GatewaySaturated is the first step at which the gateway's
	// processes used a core's worth of CPU (GatewaySaturation); absent
	// when none did, or their CPU was not accounted.
	GatewaySaturated *GatewaySaturated `json:"gateway_saturated,omitempty"`
}

// GatewaySaturated is the step at which the gateway saturated a core.
type GatewaySaturated struct {
	Step          int     `json:"step"`             // index in Sweep.Steps
	Value         float64 `json:"value"`            // its axis value
	Cores         float64 `json:"cores"`            // the gateway's CPU over the step's gateway rounds, in cores
	CPUPerTokenUs float64 `json:"cpu_per_token_us"` // and per token
}

// GatewaySaturation returns the first of steps whose gateway batch's
// processes used at least summary.SaturatedCores of CPU: from there a
// single-threaded gateway cannot keep up, whatever the tool does. Nil
// when none did.
func GatewaySaturation(steps []Step) *GatewaySaturated {
	for i := range steps {
		if g := steps[i].Gateway(); g != nil && g.Cost != nil && g.Cost.Gateway.SaturatesCore() {
			return &GatewaySaturated{Step: i, Value: steps[i].Value, Cores: g.Cost.Gateway.Cores, CPUPerTokenUs: g.Cost.Gateway.CPUPerTokenUs}
		}
	}
	return nil
}

// Step is one step of a sweep: the summary of the measurement at Value
// (its batches hold every round's requests, its overhead is the rounds'
// medians' difference, its self the tool's behaviour during this step),
// without the request samples the run report plots.
type Step struct {
	Value    float64 `json:"value"`    // the axis value
	Requests int     `json:"requests"` // requests per round
	summary.Run
	// ToolSaturated says the tool itself fell behind at this step
	// (Saturation), apart from anything the gateway did; ToolReason says
	// how.
	ToolSaturated bool   `json:"tool_saturated"`
	ToolReason    string `json:"tool_reason,omitempty"`
	// Failing says more than FailingShare of the step's gateway requests
	// failed (Failing); FailingReason says what went wrong, as the
	// verdict's failure line does. Documents before it read as false.
	Failing       bool   `json:"failing"`
	FailingReason string `json:"failing_reason,omitempty"`
}

// Knee is where the gateway's added delay starts to climb.
type Knee struct {
	Step   int     `json:"step"`   // index in Sweep.Steps
	Value  float64 `json:"value"`  // its axis value
	Reason string  `json:"reason"` // KneeThreshold or KneeGrowth
	Text   string  `json:"text"`   // what the report prints after "knee: "
}

// Why a step is the knee (Knee.Reason).
const (
	KneeThreshold = "threshold" // the added p99 exceeds the threshold
	KneeGrowth    = "growth"    // the added p99 grew faster than the load
)

// DefaultKneeThresholdMs is FindKnee's default threshold on the added
// emit->recv p99 (--knee-threshold): a gateway adding a millisecond at the
// 99th percentile to every token is no longer forwarding events as they
// come.
const DefaultKneeThresholdMs = 1.0

// KneeGrowthFloor is the fraction of the threshold below which an added
// p99 counts as noise when FindKnee compares growths: a p99 going from
// 0.01 to 0.05 ms grows ×5 without meaning anything.
const KneeGrowthFloor = 0.25

// FindKnee returns the knee of steps: the first step whose added
// emit->recv p99 (gateway minus loopback; the gateway's own without a
// calibration)
//
//   - exceeds thresholdMs, or
//   - grew faster than the load since the step before that had a figure:
//     its ratio to that step's (the latter at least KneeGrowthFloor ×
//     thresholdMs) is above the ratio of their axis values, and the rise
//     exceeds the spread of the added p99 over both steps' rounds.
//
// nil when no step is a knee.
func FindKnee(axis string, steps []Step, thresholdMs float64) *Knee {
	floor := KneeGrowthFloor * thresholdMs
	prev := -1
	var prevP99, prevSpread float64
	for i := range steps {
		s := &steps[i]
		p99, spread, ok := AddedP99(&s.Run)
		if !ok {
			continue
		}
		v := FormatValue(axis, s.Value)
		name := strings.TrimPrefix(Flag(axis), "--")
		if p99 > thresholdMs {
			return &Knee{Step: i, Value: s.Value, Reason: KneeThreshold, Text: fmt.Sprintf(
				"%s %s: added emit->recv p99 %+.3fms exceeds the %.3fms threshold", name, v, p99, thresholdMs)}
		}
		if prev >= 0 && steps[prev].Value > 0 {
			load := s.Value / steps[prev].Value
			growth := p99 / max(prevP99, floor)
			if growth > load && p99-prevP99 > max(spread, prevSpread) {
				return &Knee{Step: i, Value: s.Value, Reason: KneeGrowth, Text: fmt.Sprintf(
					"%s %s: added emit->recv p99 grew from %+.3fms to %+.3fms (×%.1f) while the load grew ×%.1f",
					name, v, prevP99, p99, growth, load)}
			}
		}
		prev, prevP99, prevSpread = i, p99, spread
	}
	return nil
}

// AddedP99 returns a step's added emit->recv (tokens) p99 in milliseconds
// — the overhead's, or the gateway's own without calibration — with the
// spread of its rounds (max − min; 0 with one round), and false when the
// step has no such figure.
func AddedP99(r *summary.Run) (p99, spread float64, ok bool) {
	switch {
	case r.Overhead != nil:
		if r.Overhead.EmitRecv == nil {
			return 0, 0, false
		}
		p99 = r.Overhead.EmitRecv.P99Ms
		if r.Rounds != nil {
			st := r.Rounds.Added.EmitRecv.P99
			spread = st.MaxMs - st.MinMs
		}
		return p99, spread, true
	case r.Gateway() != nil && r.Loop() == nil && r.Gateway().Metrics.EmitRecv.N > 0:
		return r.Gateway().Metrics.EmitRecv.P99Ms, 0, true
	}
	return 0, 0, false
}

// FailingShare is the share of a step's gateway requests above which,
// failed, the step is failing (Failing): a gateway that drops one request
// in a hundred at a load has reached a limit there, whatever its delays.
const FailingShare = 0.01

// Failing says whether more than FailingShare of a step's gateway
// requests failed, and what went wrong: the failure line of the verdict
// (failures.Headline), with the share — "gateway failed 12 of 400
// requests: connection refused (3.0% > 1.0%)". A step without failure
// summary (a document written before them) uses its counts alone.
func Failing(r *summary.Run) (bool, string) {
	g := r.Gateway()
	if g == nil || g.Requests == 0 || float64(g.Failed) <= FailingShare*float64(g.Requests) {
		return false, ""
	}
	what := fmt.Sprintf("%d of %d gateway requests failed", g.Failed, g.Requests)
	if h := failures.Headline(g.FailureSummary); h != "" {
		what = h
	}
	return true, fmt.Sprintf("%s (%.1f%% > %.1f%%)", what, 100*float64(g.Failed)/float64(g.Requests), 100*FailingShare)
}

// Saturation says whether the tool itself fell behind during a step, and
// how: its own emission lateness p99 above summary.LatenessWarnNs (the
// self-overload warning of a run), or its loopback — the tool alone —
// already adding more than thresholdMs to the emit->recv p99 of its
// tokens. Either way the step's figures describe the tool's load, not the
// gateway's.
func Saturation(r *summary.Run, thresholdMs float64) (bool, string) {
	if late := &r.Self.Lateness; late.N > 0 && late.P99Ms*1e6 > summary.LatenessWarnNs {
		return true, fmt.Sprintf("emission lateness p99 %.3fms > %.0fms", late.P99Ms, summary.LatenessWarnNs/1e6)
	}
	if l := r.Loop(); l != nil && l.Metrics.EmitRecv.N > 0 && l.Metrics.EmitRecv.P99Ms > thresholdMs {
		return true, fmt.Sprintf("loopback emit->recv p99 %.3fms > %.3fms", l.Metrics.EmitRecv.P99Ms, thresholdMs)
	}
	return false, ""
}
