package report

// This file builds, writes and reads the versioned JSON document (--json,
// the report, merge and compare subcommands); docs/json-schema.md describes
// it field by field and docs/sse-latency.schema.json is its JSON Schema.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// ToolName is Document.Tool.Name.
const ToolName = "sse-latency"

// Batch names (Batch.Name).
const (
	LoopbackBatch = "loopback"
	GatewayBatch  = "gateway"
)

// Why a run ended (Document.EndReason).
const (
	EndDone        = "done"
	EndInterrupted = "interrupted"
	EndSetupFailed = "setup_failed"
)

// ErrSchemaVersion is wrapped by the errors of ReadJSON, Validate and Merge
// for a document of another schema_version than SchemaVersion.
var ErrSchemaVersion = errors.New("unsupported schema_version")

// RunInfo is what the CLI has after a run, for NewDocument.
type RunInfo struct {
	Config     json.RawMessage // json.Marshal of cli.Config
	Start, End time.Time
	EndReason  string // EndDone, EndInterrupted or EndSetupFailed
	ExitCode   int

	Loop                      *stats.Batch // nil when no calibration ran
	LoopTarget, GatewayTarget string
	Gateway                   *stats.Batch // nil when no gateway batch ran

	LoopSamples, GatewaySamples Samples // from the sample collector; zero values are fine

	Verdict  *verdict.Verdict // nil when none
	Lateness *stats.Metric    // the server's emission lateness; nil when unknown
	UserS    float64          // CPU time of the process, user and system, seconds
	SystemS  float64
	Warning  string // the "fell behind" warning, when printed
	Version  string // the tool's version (cli.Version())
}

// NewDocument builds the document of one run: the tool and the environment
// it ran in (read from the runtime and the host name), the configuration,
// one Batch per batch that ran (loopback first), the overhead block when
// both batches ran (a Delta only for a metric with samples on both sides,
// as WriteOverhead prints), the verdict and the tool's own behaviour.
func NewDocument(ri RunInfo) *Document {
	host, _ := os.Hostname()
	d := &Document{
		SchemaVersion: SchemaVersion,
		Tool:          ToolInfo{Name: ToolName, Version: ri.Version, GoVersion: runtime.Version()},
		Environment: Environment{
			OS: runtime.GOOS, Arch: runtime.GOARCH, NumCPU: runtime.NumCPU(),
			GOMAXPROCS: runtime.GOMAXPROCS(0), Hostname: host,
		},
		Config:    configOrEmpty(ri.Config),
		Start:     ri.Start,
		End:       ri.End,
		EndReason: ri.EndReason,
		ExitCode:  ri.ExitCode,
		Runs:      1,
		Batches:   []Batch{},
		Overhead:  overheadOf(ri.Loop, ri.Gateway),
		Self: Self{
			Lateness: docMetric(ri.Lateness),
			UserS:    ri.UserS,
			SystemS:  ri.SystemS,
			Warning:  ri.Warning,
		},
	}
	if ri.Loop != nil {
		d.Batches = append(d.Batches, docBatch(LoopbackBatch, ri.LoopTarget, ri.Loop, ri.LoopSamples))
	}
	if ri.Gateway != nil {
		d.Batches = append(d.Batches, docBatch(GatewayBatch, ri.GatewayTarget, ri.Gateway, ri.GatewaySamples))
	}
	if ri.Verdict != nil {
		d.Verdict = verdictInfo(*ri.Verdict)
	}
	return d
}

// configOrEmpty returns a copy of raw, or an empty object when raw is empty.
func configOrEmpty(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("{}")
	}
	return slices.Clone(raw)
}

// docBatch summarises b, with its samples (whose nil slices become empty
// ones, so that the document has arrays where the schema says so).
func docBatch(name, target string, b *stats.Batch, s Samples) Batch {
	out := Batch{
		Name: name, Target: target,
		Requests: b.Requests, OK: b.OK, Failed: b.Failed, Tokens: b.Tokens,
		Failures: []FailureKind{},
		Metrics: Metrics{
			TTFT:          docMetric(b.TTFT),
			FirstEmitRecv: docMetric(b.FirstEmitRecv),
			InterToken:    docMetric(b.InterToken),
			EmitRecv:      docMetric(b.EmitRecv),
		},
		Stream: Stream{
			ByPiTs: b.ByPiTs, ByContent: b.ByContent, Unmeasured: b.Unmeasured,
			Reads: b.Reads, Events: b.Events, Bytes: b.Bytes,
			MaxTokensPerRead: b.MaxTokensPerRead, IntegrityErrors: b.IntegrityErrors,
			Unstamped: b.Unstamped,
		},
		Samples: normSamples(s),
		Warmup:  b.Warmup,
	}
	if hasConnections(b) {
		out.Connections = &Connections{
			Opened: b.Opened, OpenedByWarmup: b.WarmConnections, Requests: b.ConnRequests,
			RequestsPerConnection: b.RequestsPerConnection(),
			ReuseFailures:         b.ReuseFailures, Poisoned: b.Poisoned,
			Protocols: maps.Clone(b.Protocols),
		}
	}
	if hasPhases(b) {
		out.Phases = &Phases{
			Connect: docMetric(b.Connect), TLS: docMetric(b.TLS), Written: docMetric(b.Written),
			Head: docMetric(b.Head), FirstToken: docMetric(b.FirstToken),
		}
	}
	if b.StartLateness.N() > 0 {
		m := docMetric(b.StartLateness)
		out.StartLateness = &m
	}
	for _, f := range b.Failures() {
		fk := FailureKind{Kind: f.Kind.String(), Count: f.Count, Texts: make([]TextCount, len(f.Texts)), Other: f.Other}
		for i, tc := range f.Texts {
			fk.Texts[i] = TextCount{Text: tc.Text, Count: tc.Count}
		}
		out.Failures = append(out.Failures, fk)
	}
	return out
}

// normSamples returns a copy of s without nil slices.
func normSamples(s Samples) Samples {
	out := Samples{Requests: slices.Clone(s.Requests), Sampled: s.Sampled, Series: make([]Series, len(s.Series))}
	if out.Requests == nil {
		out.Requests = []RequestSample{}
	}
	for i, se := range s.Series {
		se.Points = slices.Clone(se.Points)
		if se.Points == nil {
			se.Points = [][2]float64{}
		}
		out.Series[i] = se
	}
	return out
}

// docMetric summarises m (nil: no samples) in milliseconds, with its
// histogram.
func docMetric(m *stats.Metric) Metric {
	if m == nil {
		m = stats.NewMetric()
	}
	return Metric{
		N:         m.N(),
		MeanMs:    m.Mean() / nsPerMs,
		StddevMs:  m.Stddev() / nsPerMs,
		MinMs:     ms(m.Min()),
		P50Ms:     ms(m.Percentile(0.50)),
		P90Ms:     ms(m.Percentile(0.90)),
		P95Ms:     ms(m.Percentile(0.95)),
		P99Ms:     ms(m.Percentile(0.99)),
		P999Ms:    ms(m.Percentile(0.999)),
		MaxMs:     ms(m.Max()),
		Histogram: m.Snapshot(),
	}
}

// overheadOf is the overhead block of WriteOverhead: nil unless both
// batches ran, a Delta for each metric with samples on both sides.
func overheadOf(loop, gw *stats.Batch) *Overhead {
	if loop == nil || gw == nil {
		return nil
	}
	return &Overhead{
		FirstEmitRecv: deltaOf(loop.FirstEmitRecv, gw.FirstEmitRecv),
		EmitRecv:      deltaOf(loop.EmitRecv, gw.EmitRecv),
		TTFT:          deltaOf(loop.TTFT, gw.TTFT),
		InterToken:    deltaOf(loop.InterToken, gw.InterToken),
	}
}

// deltaOf is gw minus loop as writeOverheadLine computes it; nil when a
// side has no samples.
func deltaOf(loop, gw *stats.Metric) *Delta {
	if loop.N() == 0 || gw.N() == 0 {
		return nil
	}
	diff := func(p float64) float64 { return ms(gw.Percentile(p) - loop.Percentile(p)) }
	return &Delta{MeanMs: (gw.Mean() - loop.Mean()) / nsPerMs, P50Ms: diff(0.50), P95Ms: diff(0.95), P99Ms: diff(0.99)}
}

// verdictInfo converts v.
func verdictInfo(v verdict.Verdict) *VerdictInfo {
	causes := slices.Clone(v.Causes)
	if causes == nil {
		causes = []string{}
	}
	return &VerdictInfo{
		Class: v.Class.String(), Reason: v.Reason,
		Tokens: v.Tokens, CoalescedFraction: v.CoalescedFraction, LoopCoalesced: v.LoopCoalesced, Noisy: v.Noisy,
		BurstSizeP50: v.BurstSizeP50, BurstSizeMax: v.BurstSizeMax, Bursts: v.Bursts,
		BurstPeriodMs: v.BurstPeriodMs, EmitGapMs: v.EmitGapMs,
		AddedMeanMs: v.AddedMeanMs, AddedP50Ms: v.AddedP50Ms, AddedP99Ms: v.AddedP99Ms, Relative: v.Relative,
		FirstTokenHold: v.FirstTokenHold, FirstTokenHoldMs: v.FirstTokenHoldMs,
		FollowingMs: v.FollowingMs, HoldRequests: v.HoldRequests,
		Causes: causes,
	}
}

// verdictClasses maps VerdictInfo.Class to verdict.Class.
var verdictClasses = map[string]verdict.Class{
	verdict.Unknown.String(): verdict.Unknown,
	verdict.Flushes.String(): verdict.Flushes,
	verdict.Buffers.String(): verdict.Buffers,
}

// value converts vi back (no causes: nil Causes, as the classifier gives).
func (vi *VerdictInfo) value() verdict.Verdict {
	var causes []string
	if len(vi.Causes) > 0 {
		causes = slices.Clone(vi.Causes)
	}
	return verdict.Verdict{
		Class: verdictClasses[vi.Class], Reason: vi.Reason,
		Tokens: vi.Tokens, CoalescedFraction: vi.CoalescedFraction, LoopCoalesced: vi.LoopCoalesced, Noisy: vi.Noisy,
		BurstSizeP50: vi.BurstSizeP50, BurstSizeMax: vi.BurstSizeMax, Bursts: vi.Bursts,
		BurstPeriodMs: vi.BurstPeriodMs, EmitGapMs: vi.EmitGapMs,
		AddedMeanMs: vi.AddedMeanMs, AddedP50Ms: vi.AddedP50Ms, AddedP99Ms: vi.AddedP99Ms, Relative: vi.Relative,
		FirstTokenHold: vi.FirstTokenHold, FirstTokenHoldMs: vi.FirstTokenHoldMs,
		FollowingMs: vi.FollowingMs, HoldRequests: vi.HoldRequests,
		Causes: causes,
	}
}

// VerdictValue returns the document's verdict, nil when it has none.
func (d *Document) VerdictValue() *verdict.Verdict {
	if d.Verdict == nil {
		return nil
	}
	v := d.Verdict.value()
	return &v
}

// batch returns the batch named name, nil when absent.
func (d *Document) batch(name string) *Batch {
	for i := range d.Batches {
		if d.Batches[i].Name == name {
			return &d.Batches[i]
		}
	}
	return nil
}

// Loop rebuilds the calibration batch from the document: its counts, its
// failures and its metrics from their histograms, so that WriteReport
// prints what the run printed. It returns nil when the document has no
// loopback batch, or when that batch is invalid (Validate says why).
func (d *Document) Loop() *stats.Batch { return d.statsOf(LoopbackBatch) }

// Gateway is Loop for the gateway batch.
func (d *Document) Gateway() *stats.Batch { return d.statsOf(GatewayBatch) }

func (d *Document) statsOf(name string) *stats.Batch {
	b := d.batch(name)
	if b == nil {
		return nil
	}
	sb, err := statsBatch(b)
	if err != nil {
		return nil
	}
	return sb
}

// statsBatch rebuilds a stats.Batch from b after checking that b is
// consistent: known failure kinds whose texts are texts of their kind,
// counts that add up, histograms that MetricFromSnapshot accepts.
func statsBatch(b *Batch) (*stats.Batch, error) {
	if b.Requests < 0 || b.OK < 0 || b.Failed < 0 || b.Tokens < 0 || b.Requests != b.OK+b.Failed {
		return nil, fmt.Errorf("requests=%d, ok=%d, failed=%d, tokens=%d: want counts >= 0 and requests = ok + failed",
			b.Requests, b.OK, b.Failed, b.Tokens)
	}
	sb := stats.NewBatch()
	failed, integrity := 0, 0
	for i := range b.Failures {
		f := &b.Failures[i]
		if err := addFailures(sb, f); err != nil {
			return nil, fmt.Errorf("failures[%d]: %w", i, err)
		}
		failed += f.Count
		if f.Kind == result.Integrity.String() {
			integrity += f.Count
		}
	}
	if failed != b.Failed {
		return nil, fmt.Errorf("failures count %d requests, failed says %d", failed, b.Failed)
	}
	s := &b.Stream
	if s.ByPiTs < 0 || s.ByContent < 0 || s.Unmeasured < 0 || s.Reads < 0 || s.Events < 0 || s.Bytes < 0 ||
		s.MaxTokensPerRead < 0 || s.Unstamped < 0 {
		return nil, errors.New("stream: negative counter")
	}
	if s.IntegrityErrors != integrity {
		return nil, fmt.Errorf("stream.integrity_errors is %d but %d requests failed with kind integrity", s.IntegrityErrors, integrity)
	}
	sb.Requests, sb.OK, sb.Failed, sb.Tokens = b.Requests, b.OK, b.Failed, b.Tokens
	sb.Unstamped = s.Unstamped
	sb.ByPiTs, sb.ByContent, sb.Unmeasured = s.ByPiTs, s.ByContent, s.Unmeasured
	sb.Reads, sb.Events, sb.Bytes = s.Reads, s.Events, s.Bytes
	sb.MaxTokensPerRead, sb.IntegrityErrors = s.MaxTokensPerRead, s.IntegrityErrors
	if err := restoreGoFields(sb, b); err != nil {
		return nil, err
	}
	for _, m := range []struct {
		name string
		doc  *Metric
		dst  **stats.Metric
	}{
		{"ttft", &b.Metrics.TTFT, &sb.TTFT},
		{"first_emit_recv", &b.Metrics.FirstEmitRecv, &sb.FirstEmitRecv},
		{"inter_token", &b.Metrics.InterToken, &sb.InterToken},
		{"emit_recv", &b.Metrics.EmitRecv, &sb.EmitRecv},
	} {
		sm, err := metricOf(m.doc)
		if err != nil {
			return nil, fmt.Errorf("metrics.%s: %w", m.name, err)
		}
		*m.dst = sm
	}
	return sb, nil
}

// restoreGoFields sets the warm-up count, connections, phases and start
// lateness of sb from b, after checking them.
func restoreGoFields(sb *stats.Batch, b *Batch) error {
	if b.Warmup < 0 {
		return fmt.Errorf("warmup is %d", b.Warmup)
	}
	sb.Warmup = b.Warmup
	if c := b.Connections; c != nil {
		if c.Opened < 0 || c.OpenedByWarmup < 0 || c.Requests < 0 || c.ReuseFailures < 0 || c.Poisoned < 0 {
			return errors.New("connections: negative counter")
		}
		if c.Requests > b.Requests {
			return fmt.Errorf("connections.requests is %d, more than the batch's %d requests", c.Requests, b.Requests)
		}
		sb.Opened, sb.WarmConnections, sb.ConnRequests = c.Opened, c.OpenedByWarmup, c.Requests
		sb.ReuseFailures, sb.Poisoned = c.ReuseFailures, c.Poisoned
		for _, p := range sortedKeys(c.Protocols) {
			n := c.Protocols[p]
			if n < 0 || p == "" {
				return fmt.Errorf("connections.protocols: %q: %d", p, n)
			}
			sb.Protocols[p] = n
		}
	}
	var metrics []docStat
	if p := b.Phases; p != nil {
		metrics = append(metrics,
			docStat{"phases.connect", &p.Connect, &sb.Connect}, docStat{"phases.tls", &p.TLS, &sb.TLS},
			docStat{"phases.written", &p.Written, &sb.Written}, docStat{"phases.head", &p.Head, &sb.Head},
			docStat{"phases.first_token", &p.FirstToken, &sb.FirstToken})
	}
	if b.StartLateness != nil {
		metrics = append(metrics, docStat{"start_lateness", b.StartLateness, &sb.StartLateness})
	}
	for _, m := range metrics {
		sm, err := metricOf(m.doc)
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		*m.dst = sm
	}
	return nil
}

// docStat pairs a metric of the document with the stats.Batch field it
// rebuilds.
type docStat struct {
	name string
	doc  *Metric
	dst  **stats.Metric
}

// hasConnections reports whether b knows anything of its connections (a
// batch of records without connection facts, or of an older document, does
// not).
func hasConnections(b *stats.Batch) bool {
	return b.ConnRequests > 0 || b.Connections() > 0 || b.ReuseFailures > 0 || b.Poisoned > 0 || len(b.Protocols) > 0
}

// hasPhases reports whether any phase of b has a sample.
func hasPhases(b *stats.Batch) bool {
	for _, p := range b.Phases() {
		if p.Metric.N() > 0 {
			return true
		}
	}
	return false
}

// metricOf rebuilds the Metric of m from its histogram.
func metricOf(m *Metric) (*stats.Metric, error) {
	if m.N != m.Histogram.N {
		return nil, fmt.Errorf("n is %d but histogram.n is %d", m.N, m.Histogram.N)
	}
	sm, err := stats.MetricFromSnapshot(m.Histogram)
	if err != nil {
		return nil, fmt.Errorf("histogram: %w", err)
	}
	return sm, nil
}

// failureKinds maps result.Kind.String() to the failure kinds.
var failureKinds = sync.OnceValue(func() map[string]result.Kind {
	m := make(map[string]result.Kind)
	for k := result.Kind(1); ; k++ {
		s := k.String()
		if strings.HasPrefix(s, "kind(") {
			return m
		}
		m[s] = k
	}
})

// addFailures counts the failures of f into sb (whose other counts the
// caller then overwrites), so that sb.Failures() gives f back.
func addFailures(sb *stats.Batch, f *FailureKind) error {
	k, ok := failureKinds()[f.Kind]
	if !ok {
		return fmt.Errorf("unknown failure kind %q", f.Kind)
	}
	if len(f.Texts) > stats.MaxFailureTexts || f.Other < 0 || (f.Other > 0 && len(f.Texts) < stats.MaxFailureTexts) {
		return fmt.Errorf("%d texts and other=%d: want at most %d texts, and other > 0 only with %d",
			len(f.Texts), f.Other, stats.MaxFailureTexts, stats.MaxFailureTexts)
	}
	total := f.Other
	seen := make(map[string]bool, len(f.Texts))
	for j, tc := range f.Texts {
		fl, ok := failureWithText(k, tc.Text)
		switch {
		case !ok:
			return fmt.Errorf("texts[%d]: %q is not a %s failure text", j, tc.Text, f.Kind)
		case tc.Count <= 0:
			return fmt.Errorf("texts[%d]: count %d", j, tc.Count)
		case seen[tc.Text]:
			return fmt.Errorf("texts[%d]: %q appears twice", j, tc.Text)
		}
		seen[tc.Text] = true
		total += tc.Count
		addFailure(sb, fl, tc.Count)
	}
	if total != f.Count {
		return fmt.Errorf("count is %d but texts and other add up to %d", f.Count, total)
	}
	if f.Other > 0 {
		// The texts are full: a failure with another text is only counted.
		for n := 0; ; n++ {
			fl := result.Failure{Kind: k, Detail: fmt.Sprintf("(text not kept %d)", n)}
			if !seen[fl.Error()] {
				addFailure(sb, fl, f.Other)
				break
			}
		}
	}
	return nil
}

// addFailure adds n requests that failed with f to sb: one by one when few,
// else by doubling a batch of them (stats.Batch keeps no other way in).
func addFailure(sb *stats.Batch, f result.Failure, n int) {
	r := &result.Request{Failure: f}
	if n <= 64 {
		for range n {
			sb.Add(r)
		}
		return
	}
	unit := stats.NewBatch()
	unit.Add(r)
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			sb.Merge(unit)
		}
		if n > 1 {
			unit.Merge(unit)
		}
	}
}

// failureWithText returns the failure of kind k whose Error() is text.
func failureWithText(k result.Kind, text string) (result.Failure, bool) {
	if f := (result.Failure{Kind: k}); f.Error() == text {
		return f, true
	}
	const mark = "\x00"
	pre, suf, ok := strings.Cut(result.Failure{Kind: k, Detail: mark}.Error(), mark)
	if !ok || len(text) < len(pre)+len(suf) || !strings.HasPrefix(text, pre) || !strings.HasSuffix(text, suf) {
		return result.Failure{}, false
	}
	f := result.Failure{Kind: k, Detail: text[len(pre) : len(text)-len(suf)]}
	return f, f.Error() == text
}

// Validate checks what ReadJSON cannot check by types alone: the schema
// version, the enumerations, the batches (names, order, counts that add
// up, failure texts of their kind) and every histogram (through
// stats.MetricFromSnapshot). Its errors name the field.
func (d *Document) Validate() error {
	_, err := d.rebuild()
	return err
}

// rebuilt is a validated document's batches and lateness as stats values.
type rebuilt struct {
	loop, gw *stats.Batch // nil when absent
	lateness *stats.Metric
}

// rebuild validates d (see Validate) and returns what it rebuilt doing so.
func (d *Document) rebuild() (*rebuilt, error) {
	if d == nil {
		return nil, errors.New("no document")
	}
	if err := d.validateFields(); err != nil {
		return nil, err
	}
	var r rebuilt
	for i := range d.Batches {
		b := &d.Batches[i]
		switch {
		case b.Name != LoopbackBatch && b.Name != GatewayBatch:
			return nil, fmt.Errorf("batches[%d]: name %q: want %q or %q", i, b.Name, LoopbackBatch, GatewayBatch)
		case d.batch(b.Name) != b:
			return nil, fmt.Errorf("batches[%d]: a second %q batch", i, b.Name)
		case b.Name == LoopbackBatch && i > 0:
			return nil, fmt.Errorf("batches[%d]: the %q batch must come first", i, LoopbackBatch)
		}
		sb, err := statsBatch(b)
		if err != nil {
			return nil, fmt.Errorf("batches[%d] (%s): %w", i, b.Name, err)
		}
		if b.Name == LoopbackBatch {
			r.loop = sb
		} else {
			r.gw = sb
		}
	}
	m, err := metricOf(&d.Self.Lateness)
	if err != nil {
		return nil, fmt.Errorf("self.emission_lateness: %w", err)
	}
	r.lateness = m
	return &r, nil
}

// validateFields checks the fields of d but its batches and lateness.
func (d *Document) validateFields() error {
	if d.SchemaVersion != SchemaVersion {
		return fmt.Errorf("%w %d (this sse-latency reads schema_version %d)", ErrSchemaVersion, d.SchemaVersion, SchemaVersion)
	}
	if d.Tool.Name != ToolName {
		return fmt.Errorf("tool.name is %q, not %q", d.Tool.Name, ToolName)
	}
	if c := bytes.TrimSpace(d.Config); len(c) == 0 || c[0] != '{' || !json.Valid(c) {
		return errors.New("config: not a JSON object")
	}
	switch d.EndReason {
	case EndDone, EndInterrupted, EndSetupFailed:
	default:
		return fmt.Errorf("end_reason %q: want %q, %q or %q", d.EndReason, EndDone, EndInterrupted, EndSetupFailed)
	}
	if d.Runs < 1 {
		return fmt.Errorf("runs is %d, want at least 1", d.Runs)
	}
	if d.End.Before(d.Start) {
		return fmt.Errorf("end %s is before start %s", d.End.Format(time.RFC3339Nano), d.Start.Format(time.RFC3339Nano))
	}
	if len(d.Batches) > 2 {
		return fmt.Errorf("%d batches, want at most 2", len(d.Batches))
	}
	if d.Verdict != nil {
		if _, ok := verdictClasses[d.Verdict.Class]; !ok {
			return fmt.Errorf("verdict.class %q: want \"flushes\", \"buffers\" or \"unknown\"", d.Verdict.Class)
		}
	}
	return nil
}

// WriteJSON writes d as indented JSON with a trailing newline, its fields
// in the order of the Go types. An object or array holding only numbers,
// strings and booleans is written on one line when that line fits in
// jsonLineWidth columns (histogram buckets, series points, request
// samples), which keeps large histograms readable.
func WriteJSON(w io.Writer, d *Document) error {
	if d == nil {
		return errors.New("no document to write")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return fmt.Errorf("encoding the JSON document: %w", err)
	}
	_, err := w.Write(joinLeaves(buf.Bytes()))
	return err
}

// jsonLineWidth is the width within which WriteJSON joins a container of
// scalars onto one line.
const jsonLineWidth = 120

// joinLeaves rewrites indented JSON so that each object or array without
// nested containers sits on one line ({"a": 1, "b": 2}, [1, 2]) when that
// line, with its indentation and a trailing comma, fits in jsonLineWidth.
func joinLeaves(in []byte) []byte {
	out := make([]byte, 0, len(in))
	col := 0 // column of the next byte written
	for i := 0; i < len(in); i++ {
		c := in[i]
		switch c {
		case '"':
			j := stringEnd(in, i)
			out = append(out, in[i:j]...)
			col += j - i
			i = j - 1
			continue
		case '\n':
			out = append(out, c)
			col = 0
			continue
		case '{', '[':
			if end, ok := leafEnd(in, i); ok {
				joined := joinLeaf(in[i : end+1])
				if col+len(joined)+1 <= jsonLineWidth {
					out = append(out, joined...)
					col += len(joined)
					i = end
					continue
				}
			}
		}
		out = append(out, c)
		col++
	}
	return out
}

// stringEnd returns the index just past the JSON string starting at in[i].
func stringEnd(in []byte, i int) int {
	for j := i + 1; j < len(in); j++ {
		switch in[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(in)
}

// leafEnd returns the index of the bracket closing the container opened at
// in[i], if the container holds no other container.
func leafEnd(in []byte, i int) (int, bool) {
	for j := i + 1; j < len(in); j++ {
		switch in[j] {
		case '"':
			j = stringEnd(in, j) - 1
		case '{', '[':
			return 0, false
		case '}', ']':
			return j, true
		}
	}
	return 0, false
}

// joinLeaf returns the container c on one line: its whitespace outside
// strings removed, then one space after each comma and colon.
func joinLeaf(c []byte) []byte {
	out := make([]byte, 0, len(c))
	for i := 0; i < len(c); i++ {
		switch b := c[i]; b {
		case '"':
			j := stringEnd(c, i)
			out = append(out, c[i:j]...)
			i = j - 1
		case ' ', '\n', '\t', '\r':
		case ',', ':':
			out = append(out, b, ' ')
		default:
			out = append(out, b)
		}
	}
	return out
}

// ReadJSON reads a document written by WriteJSON (fields it does not know
// are ignored, so that documents of later versions of the same schema
// read). It refuses a document of another schema_version, and checks it
// with Validate; its errors give the line and column, or the field, of
// what is wrong.
func ReadJSON(r io.Reader) (*Document, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("empty input: not an sse-latency JSON document")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, decodeError(data, err)
	}
	if top == nil {
		return nil, errors.New("not a JSON object: not an sse-latency JSON document")
	}
	rawVersion, ok := top["schema_version"]
	if !ok {
		return nil, errors.New("no schema_version: not an sse-latency JSON document")
	}
	var version int
	if err := json.Unmarshal(rawVersion, &version); err != nil {
		return nil, fmt.Errorf("schema_version %s is not an integer", rawVersion)
	}
	if version != SchemaVersion {
		return nil, fmt.Errorf("%w %d (this sse-latency reads schema_version %d; use the version that wrote the file)",
			ErrSchemaVersion, version, SchemaVersion)
	}
	for _, k := range []string{"start", "end"} {
		if raw, ok := top[k]; ok {
			var t time.Time
			if err := json.Unmarshal(raw, &t); err != nil {
				return nil, fmt.Errorf("%s: %s is not an RFC 3339 time", k, raw)
			}
		}
	}
	d := new(Document)
	if err := json.Unmarshal(data, d); err != nil {
		return nil, decodeError(data, err)
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

// decodeError rewrites an encoding/json error with the line and column it
// happened at, and the field (encoding/json leaves array indices out of it:
// "batches.requests").
func decodeError(data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		line, col := position(data, se.Offset-1) // the offending byte is the last one read
		return fmt.Errorf("line %d, column %d: invalid JSON: %v", line, col, se)
	case errors.As(err, &te):
		line, col := position(data, te.Offset) // just after the value
		if te.Field == "" {
			return fmt.Errorf("line %d, column %d: a JSON %s where the document (an object) should be", line, col, te.Value)
		}
		return fmt.Errorf("line %d, column %d: %s: a JSON %s where %s is wanted", line, col, te.Field, te.Value, jsonKind(te.Type))
	}
	return err
}

// jsonKind names the JSON type that decodes into t.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}

// position returns the 1-based line and column of byte offset off of data.
func position(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// configKey normalises a config field name, so that "no_loopback",
// "NoLoopback" and "no-loopback" are the same field.
func configKey(k string) string {
	return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(k))
}

// configBool returns the boolean config field name (see configKey), false
// when absent.
func configBool(raw json.RawMessage, name string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	for k, v := range m {
		var b bool
		if configKey(k) == configKey(name) && json.Unmarshal(v, &b) == nil {
			return b
		}
	}
	return false
}

// WriteDocumentText writes the report the run printed after its
// per-request lines: WriteReport, then, unless the configuration has
// compat set, WriteVerdict (when the document has a verdict) and
// WriteStream. A document without a gateway batch (the setup failed)
// writes nothing.
func WriteDocumentText(w io.Writer, d *Document) error {
	r, err := d.rebuild()
	if err != nil {
		return err
	}
	loop, gw := r.loop, r.gw
	if gw == nil {
		return nil
	}
	if err := WriteReport(w, loop, gw); err != nil {
		return err
	}
	if configBool(d.Config, "compat") {
		return nil
	}
	if v := d.VerdictValue(); v != nil {
		if err := WriteVerdict(w, *v); err != nil {
			return err
		}
	}
	return WriteStream(w, loop, gw)
}
