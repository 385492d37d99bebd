package rundoc

// This file builds, validates, writes and reads the document.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/sweep"
)

// ToolName is Document.Tool.Name.
const ToolName = "sse-latency"

// Why a run ended (Document.EndReason).
const (
	EndDone        = "done"
	EndInterrupted = "interrupted"
	EndSetupFailed = "setup_failed"
)

// ErrSchemaVersion is wrapped by the errors of ReadJSON, Validate and Merge
// for a document of another schema_version than SchemaVersion.
var ErrSchemaVersion = errors.New("unsupported schema_version")

// RunInfo is what the CLI knows of a run besides its summary, for
// NewDocument.
type RunInfo struct {
	Config     Config // redacted
	Start, End time.Time
	EndReason  string // EndDone, EndInterrupted or EndSetupFailed
	ExitCode   int
	Version    string       // the tool's version (cli.Version())
	Request    *SentRequest // the head of the gateway's requests, redacted; nil: none was sent
}

// NewDocument builds the document of one run: the tool and the environment
// it ran in (read from the runtime and the host name), the configuration,
// and the run's summary s (nil: nothing ran).
func NewDocument(ri RunInfo, s *summary.Run) *Document {
	host, err := os.Hostname()
	if err != nil {
		host = "" // unknown, as the schema allows
	}
	d := &Document{
		SchemaVersion: SchemaVersion,
		Tool:          ToolInfo{Name: ToolName, Version: ri.Version, GoVersion: runtime.Version()},
		Environment: Environment{
			OS: runtime.GOOS, Arch: runtime.GOARCH, NumCPU: runtime.NumCPU(),
			GOMAXPROCS: runtime.GOMAXPROCS(0), Hostname: host,
		},
		Config:    ri.Config,
		Start:     ri.Start,
		End:       ri.End,
		EndReason: ri.EndReason,
		ExitCode:  ri.ExitCode,
		Runs:      1,
		Request:   ri.Request,
	}
	if s == nil {
		s = summary.New(summary.Inputs{})
	}
	d.Run = *s
	d.Config.Headers = slices.Clone(ri.Config.Headers)
	d.Config.SLOs = slices.Clone(ri.Config.SLOs)
	if d.Batches == nil {
		d.Batches = []summary.Batch{}
	}
	return d
}

// Validate checks what ReadJSON cannot check by types alone: the schema
// version, the enumerations, the batches (names, order, counts that add
// up, failure texts of their kind, declared timings, histograms that
// stats.MetricFromSnapshot would accept), the overhead's presence, the
// rounds, and a sweep's steps (each validated as a run). Its errors name
// the field.
func (d *Document) Validate() error {
	if d == nil {
		return errors.New("no document")
	}
	if err := d.validateFields(); err != nil {
		return err
	}
	if d.Sweep != nil && len(d.Batches) > 0 {
		return errors.New("sweep: a sweep document keeps its batches in its steps, not at the top")
	}
	if err := validateRun(&d.Run); err != nil {
		return err
	}
	if d.Sweep != nil {
		if err := validateSweep(d.Sweep); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
	}
	return nil
}

// validateRun checks a run's summary: its batches (names, order, counts
// that add up, failure texts of their kind, histograms that
// stats.MetricFromSnapshot would accept), the overhead's presence, the
// rounds, the lateness and, across hosts, the clock.
func validateRun(r *summary.Run) error {
	if len(r.Batches) > 2 {
		return fmt.Errorf("%d batches, want at most 2", len(r.Batches))
	}
	for i := range r.Batches {
		b := &r.Batches[i]
		switch {
		case b.Name != summary.LoopbackBatch && b.Name != summary.GatewayBatch:
			return fmt.Errorf("batches[%d]: name %q: want %q or %q", i, b.Name, summary.LoopbackBatch, summary.GatewayBatch)
		case r.Batch(b.Name) != b:
			return fmt.Errorf("batches[%d]: a second %q batch", i, b.Name)
		case b.Name == summary.LoopbackBatch && i > 0:
			return fmt.Errorf("batches[%d]: the %q batch must come first", i, summary.LoopbackBatch)
		}
		if err := validateBatch(b); err != nil {
			return fmt.Errorf("batches[%d] (%s): %w", i, b.Name, err)
		}
	}
	switch both := r.Loop() != nil && r.Gateway() != nil; {
	case both && r.Overhead == nil:
		return errors.New("overhead: absent, but the document has a loopback and a gateway batch")
	case !both && r.Overhead != nil:
		return errors.New("overhead: present without both a loopback and a gateway batch")
	}
	if rs := r.Rounds; rs != nil {
		if err := validateRounds(rs); err != nil {
			return fmt.Errorf("rounds: %w", err)
		}
	}
	if err := validateMetric(&r.Self.Lateness); err != nil {
		return fmt.Errorf("self.emission_lateness: %w", err)
	}
	if r.Clock != nil {
		if err := validateClock(r.Clock); err != nil {
			return err
		}
	}
	if v := r.Verdict; v != nil {
		for i, f := range v.Findings {
			switch {
			case f.Name == "":
				return fmt.Errorf("verdict.findings[%d]: no name", i)
			case f.Requests < 0 || f.Of < 0:
				return fmt.Errorf("verdict.findings[%d] (%s): requests %d of %d", i, f.Name, f.Requests, f.Of)
			}
		}
	}
	return nil
}

// validateRounds checks that the rounds match their order and hold valid
// counts and metrics.
func validateRounds(rs *summary.Rounds) error {
	if len(rs.Order) != len(rs.Rounds) {
		return fmt.Errorf("order %q has %d letters for %d rounds", rs.Order, len(rs.Order), len(rs.Rounds))
	}
	for i := range rs.Rounds {
		r := &rs.Rounds[i]
		want := map[byte]string{'L': summary.LoopbackBatch, 'G': summary.GatewayBatch}[rs.Order[i]]
		if r.Batch != want || r.Pair < 0 {
			return fmt.Errorf("rounds[%d]: batch %q, pair %d: want batch %q (order %q) and a pair >= 0", i, r.Batch, r.Pair, want, rs.Order)
		}
		if r.Requests < 0 || r.OK < 0 || r.Failed < 0 || r.Tokens < 0 || r.Requests != r.OK+r.Failed {
			return fmt.Errorf("rounds[%d]: requests=%d, ok=%d, failed=%d, tokens=%d: want counts >= 0 and requests = ok + failed",
				i, r.Requests, r.OK, r.Failed, r.Tokens)
		}
		for _, m := range r.Metrics.Named() {
			if err := validateMetric(m.Metric); err != nil {
				return fmt.Errorf("rounds[%d]: %s: %w", i, m.Name, err)
			}
		}
	}
	return nil
}

// validateSweep checks a sweep: a known axis, at most as many steps as
// values, each step the value asked for, and a valid run.
func validateSweep(s *sweep.Sweep) error {
	switch s.Axis {
	case sweep.AxisConcurrency, sweep.AxisRate, sweep.AxisPromptBytes:
	default:
		return fmt.Errorf("axis %q: want %q, %q or %q", s.Axis, sweep.AxisConcurrency, sweep.AxisRate, sweep.AxisPromptBytes)
	}
	if len(s.Steps) > len(s.Values) {
		return fmt.Errorf("%d steps for %d values", len(s.Steps), len(s.Values))
	}
	for i := range s.Steps {
		st := &s.Steps[i]
		if st.Value != s.Values[i] {
			return fmt.Errorf("steps[%d]: value %v, but values[%d] is %v", i, st.Value, i, s.Values[i])
		}
		if err := validateRun(&st.Run); err != nil {
			return fmt.Errorf("steps[%d]: %w", i, err)
		}
	}
	if k := s.Knee; k != nil && (k.Step < 0 || k.Step >= len(s.Steps) || s.Steps[k.Step].Value != k.Value) {
		return fmt.Errorf("knee: step %d (value %v) is not a step of the sweep", k.Step, k.Value)
	}
	return nil
}

// validateFields checks the fields of d but its batches and lateness.
func (d *Document) validateFields() error {
	if d.SchemaVersion != SchemaVersion {
		return fmt.Errorf("%w %d (this sse-latency reads schema_version %d)", ErrSchemaVersion, d.SchemaVersion, SchemaVersion)
	}
	if d.Tool.Name != ToolName {
		return fmt.Errorf("tool.name is %q, not %q", d.Tool.Name, ToolName)
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
	return nil
}

// validateBatch checks that b is consistent: counts that add up, known
// failure kinds whose texts are texts of their kind, no negative counter,
// histograms that MetricFromSnapshot accepts.
func validateBatch(b *summary.Batch) error {
	if b.Requests < 0 || b.OK < 0 || b.Failed < 0 || b.Tokens < 0 || b.Requests != b.OK+b.Failed {
		return fmt.Errorf("requests=%d, ok=%d, failed=%d, tokens=%d: want counts >= 0 and requests = ok + failed",
			b.Requests, b.OK, b.Failed, b.Tokens)
	}
	failed, integrity := 0, 0
	for i := range b.Failures {
		f := &b.Failures[i]
		if err := validateFailures(f); err != nil {
			return fmt.Errorf("failures[%d]: %w", i, err)
		}
		failed += f.Count
		if f.Kind == result.Integrity.String() {
			integrity += f.Count
		}
	}
	if failed != b.Failed {
		return fmt.Errorf("failures count %d requests, failed says %d", failed, b.Failed)
	}
	s := &b.Stream
	if s.ByPiTs < 0 || s.ByContent < 0 || s.Unmeasured < 0 || s.Reads < 0 || s.Events < 0 || s.Bytes < 0 ||
		s.MaxTokensPerRead < 0 || s.Unstamped < 0 || s.FailedTokens < 0 {
		return errors.New("stream: negative counter")
	}
	if f := s.Framing; f != nil && (f.BOMStreams < 0 || f.MultiLineEvents < 0 || f.NoDataBlocks < 0 || f.BareCRLines < 0 ||
		f.InvalidUTF8 < 0 || f.IDFields < 0 || f.RetryFields < 0 || f.RetryMaxMs < 0) {
		return errors.New("stream.framing: negative counter")
	}
	if s.FailedTokens > s.Received() {
		return fmt.Errorf("stream.failed_tokens is %d, more than the %d tokens received", s.FailedTokens, s.Received())
	}
	if s.IntegrityErrors != integrity {
		return fmt.Errorf("stream.integrity_errors is %d but %d requests failed with kind integrity", s.IntegrityErrors, integrity)
	}
	if b.Warmup < 0 {
		return fmt.Errorf("warmup is %d", b.Warmup)
	}
	if c := b.Connections; c != nil {
		if c.Opened < 0 || c.OpenedByWarmup < 0 || c.Requests < 0 || c.ReuseFailures < 0 || c.Poisoned < 0 || c.StreamsAtOnce < 0 {
			return errors.New("connections: negative counter")
		}
		if c.Requests > b.Requests {
			return fmt.Errorf("connections.requests is %d, more than the batch's %d requests", c.Requests, b.Requests)
		}
		for _, p := range slices.Sorted(maps.Keys(c.Protocols)) {
			if n := c.Protocols[p]; n < 0 || p == "" {
				return fmt.Errorf("connections.protocols: %q: %d", p, n)
			}
		}
	}
	if dt := b.Declared; dt != nil {
		if err := validateDeclared(dt); err != nil {
			return fmt.Errorf("declared: %w", err)
		}
	}
	var metrics []summary.NamedMetric
	if p := b.Phases; p != nil {
		metrics = append(metrics,
			summary.NamedMetric{Name: "phases.connect", Metric: &p.Connect}, summary.NamedMetric{Name: "phases.tls", Metric: &p.TLS},
			summary.NamedMetric{Name: "phases.written", Metric: &p.Written}, summary.NamedMetric{Name: "phases.head", Metric: &p.Head},
			summary.NamedMetric{Name: "phases.first_token", Metric: &p.FirstToken})
	}
	if b.StartLateness != nil {
		metrics = append(metrics, summary.NamedMetric{Name: "start_lateness", Metric: b.StartLateness})
	}
	if b.RequestLeg != nil {
		metrics = append(metrics, summary.NamedMetric{Name: "request_leg", Metric: b.RequestLeg})
	}
	metrics = append(metrics,
		summary.NamedMetric{Name: "metrics.ttft", Metric: &b.Metrics.TTFT},
		summary.NamedMetric{Name: "metrics.first_emit_recv", Metric: &b.Metrics.FirstEmitRecv},
		summary.NamedMetric{Name: "metrics.inter_token", Metric: &b.Metrics.InterToken},
		summary.NamedMetric{Name: "metrics.emit_recv", Metric: &b.Metrics.EmitRecv})
	for _, m := range metrics {
		if err := validateMetric(m.Metric); err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
	}
	if err := validateReplicas(b); err != nil {
		return err
	}
	if fs := b.FailureSummary; fs != nil {
		if _, err := fs.Tally(); err != nil {
			return fmt.Errorf("failure_summary: %w", err)
		}
		if fs.Requests != b.Requests || fs.Failed != b.Failed {
			return fmt.Errorf("failure_summary: %d requests, %d failed; the batch has %d and %d", fs.Requests, fs.Failed, b.Requests, b.Failed)
		}
	}
	if b.Timeline != nil {
		return b.Timeline.Validate()
	}
	return nil
}

// validateReplicas checks the per-replica split of a batch: counts that
// are not negative and do not exceed the batch's, a finite offset and a
// bound not negative, valid metrics.
func validateReplicas(b *summary.Batch) error {
	requests := 0
	for i := range b.Replicas {
		r := &b.Replicas[i]
		switch {
		case r.Requests < 0 || r.OK < 0 || r.OK > r.Requests || r.Tokens < 0 || r.Unmeasured < 0 || r.Unmeasured > r.Tokens || r.Estimates < 0:
			return fmt.Errorf("replicas[%d]: requests=%d, ok=%d, tokens=%d, unmeasured=%d, estimates=%d: want counts >= 0, ok <= requests, unmeasured <= tokens",
				i, r.Requests, r.OK, r.Tokens, r.Unmeasured, r.Estimates)
		case math.IsNaN(r.OffsetMs) || math.IsInf(r.OffsetMs, 0) || math.IsNaN(r.BoundMs) || math.IsInf(r.BoundMs, 0) || r.BoundMs < 0:
			return fmt.Errorf("replicas[%d]: offset_ms %v, bound_ms %v", i, r.OffsetMs, r.BoundMs)
		}
		for _, m := range []summary.NamedMetric{{Name: "request_leg", Metric: &r.RequestLeg}, {Name: "emit_recv", Metric: &r.EmitRecv}} {
			if err := validateMetric(m.Metric); err != nil {
				return fmt.Errorf("replicas[%d].%s: %w", i, m.Name, err)
			}
		}
		requests += r.Requests
	}
	if requests > b.Requests {
		return fmt.Errorf("replicas count %d requests, the batch %d", requests, b.Requests)
	}
	return nil
}

// validateDeclared checks a batch's declared timings: counts that add up
// to the heads, one figure per source, each metric's n its requests.
func validateDeclared(dt *summary.DeclaredTimings) error {
	if dt.Heads < 0 || dt.Dropped < 0 {
		return fmt.Errorf("heads=%d, dropped=%d", dt.Heads, dt.Dropped)
	}
	seen := map[string]bool{}
	for i := range dt.Figures {
		f := &dt.Figures[i]
		switch {
		case f.Source == "" || seen[f.Source]:
			return fmt.Errorf("figures[%d]: source %q empty or repeated", i, f.Source)
		case f.Requests < 0 || f.Invalid < 0 || f.Missing < 0 || f.Requests+f.Invalid+f.Missing != dt.Heads:
			return fmt.Errorf("figures[%d] (%s): requests=%d, invalid=%d, missing=%d: want counts >= 0 adding up to the %d heads",
				i, f.Source, f.Requests, f.Invalid, f.Missing, dt.Heads)
		case f.Metric.N != int64(f.Requests):
			return fmt.Errorf("figures[%d] (%s): metric.n is %d for %d requests", i, f.Source, f.Metric.N, f.Requests)
		}
		seen[f.Source] = true
		if err := validateMetric(&f.Metric); err != nil {
			return fmt.Errorf("figures[%d] (%s): metric: %w", i, f.Source, err)
		}
	}
	return nil
}

// validateMetric checks that m's n is its histogram's, and the histogram
// one stats.MetricFromSnapshot accepts.
func validateMetric(m *summary.Metric) error {
	if m.N != m.Histogram.N {
		return fmt.Errorf("n is %d but histogram.n is %d", m.N, m.Histogram.N)
	}
	if err := m.Histogram.Validate(); err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	return nil
}

// validateFailures checks one failure kind: a known kind, at most
// stats.MaxFailureTexts distinct texts of that kind, each counted, other
// used only when the texts are full, and a count that adds up.
func validateFailures(f *summary.FailureKind) error {
	k, ok := result.ParseKind(f.Kind)
	if !ok || k == result.OK {
		return fmt.Errorf("unknown failure kind %q", f.Kind)
	}
	if len(f.Texts) > stats.MaxFailureTexts || f.Other < 0 || (f.Other > 0 && len(f.Texts) < stats.MaxFailureTexts) {
		return fmt.Errorf("%d texts and other=%d: want at most %d texts, and other > 0 only with %d",
			len(f.Texts), f.Other, stats.MaxFailureTexts, stats.MaxFailureTexts)
	}
	total := f.Other
	seen := make(map[string]bool, len(f.Texts))
	for j, tc := range f.Texts {
		switch {
		case !isFailureText(k, tc.Text):
			return fmt.Errorf("texts[%d]: %q is not a %s failure text", j, tc.Text, f.Kind)
		case tc.Count <= 0:
			return fmt.Errorf("texts[%d]: count %d", j, tc.Count)
		case seen[tc.Text]:
			return fmt.Errorf("texts[%d]: %q appears twice", j, tc.Text)
		}
		seen[tc.Text] = true
		total += tc.Count
	}
	if total != f.Count {
		return fmt.Errorf("count is %d but texts and other add up to %d", f.Count, total)
	}
	return nil
}

// isFailureText reports whether text is the text (result.Failure.Error) of
// a failure of kind k, with some detail.
func isFailureText(k result.Kind, text string) bool {
	if (result.Failure{Kind: k}).Error() == text {
		return true
	}
	const mark = "\x00"
	pre, suf, ok := strings.Cut(result.Failure{Kind: k, Detail: mark}.Error(), mark)
	if !ok || len(text) < len(pre)+len(suf) || !strings.HasPrefix(text, pre) || !strings.HasSuffix(text, suf) {
		return false
	}
	return result.Failure{Kind: k, Detail: text[len(pre) : len(text)-len(suf)]}.Error() == text
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
	d := &Document{Config: MissingSettings} // what the document has overwrites them
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
