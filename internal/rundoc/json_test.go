package rundoc

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sse-latency/sse-latency/internal/procstat"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/summary/summarytest"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// testConfig is the configuration of the synthetic runs.
var testConfig = Config{Listen: ":8090", Target: "127.0.0.1:8080", Requests: 4, Concurrency: 2, Tokens: 1000, DelayMs: 5,
	TimeoutMs: 300000, API: "chat", Model: "sse-latency-1", ReasoningField: "reasoning_content", Arrival: "constant", Engine: "auto"}

// runStart is the fixed start of the synthetic runs.
var runStart = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// fixture is a synthetic run: the records of its batches, run through the
// same aggregators as the CLI's, and their summary.
type fixture struct {
	loopRs, gwRs []*result.Request // loopRs nil: no calibration
	loop, gw     *stats.Batch
	verdict      verdict.Verdict
	run          *summary.Run
}

func newFixture(loopS, gwS []stream) *fixture {
	f := &fixture{}
	var loop *summary.Collector
	if loopS != nil {
		f.loopRs = requests(loopS...)
		loop = summary.NewCollector()
		for _, r := range f.loopRs {
			loop.Add(r)
		}
		f.loop = loop.Stats
	}
	f.gwRs = requests(gwS...)
	gw := summary.NewCollector()
	for _, r := range f.gwRs {
		gw.Add(r)
	}
	f.gw = gw.Stats
	late := stats.NewMetric()
	for _, ns := range []int64{12_000, 25_000, 25_000, 40_000, 310_000} {
		late.Record(ns)
	}
	f.run = summary.New(summary.Inputs{Loop: loop, Gateway: gw, LoopTarget: "127.0.0.1:8090", GatewayTarget: "127.0.0.1:8080",
		Lateness: late, UserS: 1.25, SystemS: 0.5})
	f.verdict = *f.run.Verdict
	// Fixed samples, so that the goldens show a few of each kind.
	f.run.Gateway().Samples = summary.Samples{
		Requests: []summary.RequestSample{
			{Index: 0, OK: true, TTFTMs: 0.18, WallMs: 1195.236, Tokens: 1000},
			{Index: 3, OK: false, TTFTMs: -1, WallMs: 300000, Tokens: 0},
		},
		Series: []summary.Series{{Label: "fastest", Index: 0, Tokens: 1000, Points: [][2]float64{{0.18, 0.036}, {200.18, 195.04}}}},
	}
	if l := f.run.Loop(); l != nil {
		l.Samples = summary.Samples{Requests: []summary.RequestSample{{Index: 0, OK: true, TTFTMs: 0.04, WallMs: 995.2, Tokens: 200}},
			Series: []summary.Series{}}
	}
	return f
}

// info is the RunInfo of the fixture, with fixed times.
func (f *fixture) info() RunInfo {
	return RunInfo{
		Config:    testConfig,
		Start:     runStart,
		End:       runStart.Add(12500 * time.Millisecond),
		EndReason: EndDone,
		ExitCode:  boolExit(f.gw.Failed > 0),
		Version:   "v1.2.3-test",
	}
}

// doc is the fixture's document.
func (f *fixture) doc() *Document { return NewDocument(f.info(), f.run) }

func boolExit(failed bool) int {
	if failed {
		return 1
	}
	return 0
}

// fixEnv overwrites what NewDocument reads from the machine, so that
// goldens do not depend on it.
func fixEnv(d *Document) *Document {
	d.Tool.GoVersion = "go1.26.0"
	d.Environment = Environment{OS: "linux", Arch: "amd64", NumCPU: 2, GOMAXPROCS: 2, Hostname: "bench-host"}
	return d
}

// fixedDocs caches the JSON of the fixed documents: building them takes
// histograms of 270 KB, slow under the race detector.
var fixedDocs sync.Map // scenario name -> []byte

// fixedDoc returns a fresh copy of the document of scenario name of
// text_test.go.
func fixedDoc(t *testing.T, name string) *Document {
	t.Helper()
	js, ok := fixedDocs.Load(name)
	if !ok {
		sc, ok := summarytest.Scenarios[name]
		if !ok {
			t.Fatalf("no scenario %q", name)
		}
		f := newFixture(sc.Loop, sc.Gw)
		d := f.doc()
		if sc.Clock != nil { // a run across hosts, -l implied
			d.Clock = summary.NewClock(*sc.Clock)
			d.MarkBelowBound()
			d.Config.Server, d.Config.NoLoopback = "http://10.0.0.5:8091", true
		}
		if sc.Replicas != nil {
			rc := summary.NewReplicaCollector()
			for _, r := range f.gwRs {
				rc.Add(r)
			}
			d.Gateway().Replicas = rc.Replicas(sc.Replicas)
			d.Config.Server = "http://10.0.0.5:8091,http://10.0.0.6:8091,http://10.0.0.7:8091"
		}
		js, _ = fixedDocs.LoadOrStore(name, marshal(t, fixEnv(d)))
	}
	d := new(Document)
	if err := json.Unmarshal(js.([]byte), d); err != nil {
		t.Fatal(err)
	}
	return d
}

func marshal(t *testing.T, d *Document) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteJSON(&b, d); err != nil {
		t.Fatalf("WriteJSON: %v", err)
	}
	return b.Bytes()
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	summarytest.Golden(t, name, got, *update)
}

func TestJSONGolden(t *testing.T) {
	for _, name := range []string{"full", "no_calibration", "crosshost"} {
		t.Run(name, func(t *testing.T) {
			golden(t, "json_"+name+".golden", marshal(t, fixedDoc(t, name)))
		})
	}
}

// TestNewDocument checks the fields the golden does not make obvious.
func TestNewDocument(t *testing.T) {
	f := newFixture(summarytest.Scenarios["full"].Loop, summarytest.Scenarios["full"].Gw)
	d := f.doc()
	host, _ := os.Hostname()
	checks := []struct {
		what      string
		got, want any
	}{
		{"schema_version", d.SchemaVersion, SchemaVersion},
		{"tool.name", d.Tool.Name, "sse-latency"},
		{"tool.version", d.Tool.Version, "v1.2.3-test"},
		{"environment.hostname", d.Environment.Hostname, host},
		{"runs", d.Runs, 1},
		{"batch names", batchNames(d), "[loopback gateway]"},
		{"summary", d.Run, *f.run},
		{"gateway failures", len(d.Batches[1].Failures), 2},
		{"lateness n", d.Self.Lateness.N, int64(5)},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("NewDocument(full): %s = %v, want %v", c.what, c.got, c.want)
		}
	}
	d = NewDocument(RunInfo{EndReason: EndSetupFailed}, nil)
	if !reflect.DeepEqual(d.Config, Config{}) || d.Batches == nil || len(d.Batches) != 0 || d.Verdict != nil || d.Overhead != nil || d.Self.Lateness.N != 0 {
		t.Errorf("NewDocument(nothing ran): config %+v, batches %v, verdict %v, overhead %v, lateness n %d; want none, [], nil, nil, 0",
			d.Config, d.Batches, d.Verdict, d.Overhead, d.Self.Lateness.N)
	}
}

// TestJSONRoundTrip checks NewDocument → WriteJSON → ReadJSON: the
// summary reads back as the run computed it (so the reports render the
// same text from it: report's TestDocumentText), and the JSON itself reads
// back to the same bytes.
func TestJSONRoundTrip(t *testing.T) {
	tests := []struct {
		scenario  string
		compat    bool
		noVerdict bool
	}{
		{scenario: "full"},
		{scenario: "no_calibration"},
		{scenario: "empty"},
		{scenario: "full", compat: true},
		{scenario: "full", noVerdict: true},
	}
	for _, tt := range tests {
		sc := summarytest.Scenarios[tt.scenario]
		f := newFixture(sc.Loop, sc.Gw)
		ri := f.info()
		if tt.compat {
			ri.Config.Compat = true
		}
		if tt.noVerdict {
			f.run.Verdict = nil
		}
		js := marshal(t, NewDocument(ri, f.run))
		d, err := ReadJSON(bytes.NewReader(js))
		if err != nil {
			t.Fatalf("%s: ReadJSON(WriteJSON(NewDocument)): %v", tt.scenario, err)
		}
		if !reflect.DeepEqual(d.Run, *f.run) {
			t.Errorf("%s: the summary read back differs from the run's:\n%+v\nwant\n%+v", tt.scenario, d.Run, *f.run)
		}
		if d.Compat() != tt.compat {
			t.Errorf("%s: Compat() = %v, want %v", tt.scenario, d.Compat(), tt.compat)
		}
		if again := marshal(t, d); !bytes.Equal(again, js) {
			t.Errorf("%s: WriteJSON(ReadJSON(js)) differs from js:\n%s\nwant\n%s", tt.scenario, again, js)
		}
	}
}

// TestVerdictRoundTrip: every verdict of verdict_test.go reads back from a
// document as it was written.
func TestVerdictRoundTrip(t *testing.T) {
	for name, v := range summarytest.Verdicts {
		d := fixedDoc(t, "full")
		d.Verdict = summary.NormVerdict(&v)
		back, err := ReadJSON(bytes.NewReader(marshal(t, d)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(back.Verdict, d.Verdict) {
			t.Errorf("verdict %s read back as %+v, want %+v", name, back.Verdict, d.Verdict)
		}
	}
}

// TestFailuresRoundTrip checks that the failure tallies survive the
// document: many texts (some only counted in other), large counts, every
// kind with a detail.
func TestFailuresRoundTrip(t *testing.T) {
	tests := []struct {
		name     string
		failures []result.Failure
	}{
		{"none", nil},
		{"fixed texts", []result.Failure{{Kind: result.NoTokens}, {Kind: result.NoTokens}, {Kind: result.Interrupted}}},
		{"details", []result.Failure{
			{Kind: result.ClosedBeforeDone}, {Kind: result.ClosedBeforeDone, Detail: "message_stop"},
			{Kind: result.BadStatus, Detail: "HTTP/1.1 502 Bad Gateway"}, {Kind: result.Timeout, Detail: "300000"},
			{Kind: result.Connect, Detail: "Connection refused"}, {Kind: result.RecvError}, {Kind: result.RecvError, Detail: "EOF"},
			{Kind: result.BadFraming, Detail: "bad chunk size"}, {Kind: result.Integrity, Detail: "3 tokens missing (first: token 17)"},
			{Kind: result.StreamError, Detail: "overloaded"}, {Kind: result.ShortResponse}, {Kind: result.HeadTooLarge},
		}},
		{"more texts than kept", func() []result.Failure {
			var fs []result.Failure
			for i := range 25 {
				fs = append(fs, result.Failure{Kind: result.Connect, Detail: strings.Repeat("x", i%13+1)})
			}
			return fs
		}()},
		{"large counts", func() []result.Failure {
			var fs []result.Failure
			for i := range 1000 {
				fs = append(fs, result.Failure{Kind: result.Timeout, Detail: []string{"1000", "2000", "3000"}[i%3]})
			}
			return fs
		}()},
	}
	for _, tt := range tests {
		c := summary.NewCollector()
		for _, f := range tt.failures {
			c.Add(&result.Request{Batch: "gw", Failure: f})
		}
		b := c.Stats
		d, err := ReadJSON(bytes.NewReader(marshal(t, NewDocument(RunInfo{EndReason: EndDone}, summary.New(summary.Inputs{Gateway: c})))))
		if err != nil {
			t.Fatalf("%s: ReadJSON: %v", tt.name, err)
		}
		got, err := d.Gateway().Stats()
		if err != nil {
			t.Fatalf("%s: Stats() of the batch read back: %v", tt.name, err)
		}
		if !reflect.DeepEqual(got.Failures(), b.Failures()) {
			t.Errorf("%s: failures after the document = %+v, want %+v", tt.name, got.Failures(), b.Failures())
		}
		if got.Requests != b.Requests || got.Failed != b.Failed || got.IntegrityErrors != b.IntegrityErrors {
			t.Errorf("%s: counts after the document %d/%d/%d, want %d/%d/%d", tt.name,
				got.Requests, got.Failed, got.IntegrityErrors, b.Requests, b.Failed, b.IntegrityErrors)
		}
	}
}

// mutate decodes js, applies f to it and encodes it again.
func mutate(t *testing.T, js []byte, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// at walks m along a path of keys and indices.
func at(m any, path ...any) map[string]any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m = m.(map[string]any)[k]
		case int:
			m = m.([]any)[k]
		}
	}
	return m.(map[string]any)
}

// badDocuments are documents ReadJSON must refuse, and the schema too
// (schema false: the schema cannot tell, the semantic checks must).
var badDocuments = []struct {
	name   string
	mutate func(m map[string]any)
	want   string // in ReadJSON's error
	schema bool   // the schema refuses it too
}{
	{"no schema_version", func(m map[string]any) { delete(m, "schema_version") }, "no schema_version", true},
	{"schema_version 2", func(m map[string]any) { m["schema_version"] = 2 }, "unsupported schema_version 2 (this sse-latency reads schema_version 1", true},
	{"schema_version string", func(m map[string]any) { m["schema_version"] = "1" }, `schema_version "1" is not an integer`, true},
	{"requests a string", func(m map[string]any) { at(m, "batches", 1)["requests"] = "4" },
		"batches.requests: a JSON string where an integer is wanted", true},
	{"start not a time", func(m map[string]any) { m["start"] = "yesterday" }, `start: "yesterday" is not an RFC 3339 time`, true},
	{"end_reason", func(m map[string]any) { m["end_reason"] = "crashed" }, `end_reason "crashed"`, true},
	{"class", func(m map[string]any) { at(m, "verdict")["class"] = "maybe" }, `verdict.class "maybe"`, true},
	{"batch name", func(m map[string]any) { at(m, "batches", 1)["name"] = "gw" }, `batches[1]: name "gw"`, true},
	{"gateway first", func(m map[string]any) {
		b := m["batches"].([]any)
		b[0], b[1] = b[1], b[0]
	}, `batches[1]: the "loopback" batch must come first`, false},
	{"bucket count", func(m map[string]any) {
		at(m, "batches", 1, "metrics", "ttft", "histogram", "histogram", "buckets", 0)["count"] = 7
	}, "batches[1] (gateway): metrics.ttft: histogram: invalid metric snapshot: bucket counts sum to", false},
	{"bucket missing count", func(m map[string]any) {
		delete(at(m, "batches", 1, "metrics", "ttft", "histogram", "histogram", "buckets", 0), "count")
	}, "batches[1] (gateway): metrics.ttft: histogram: invalid metric snapshot", true},
	{"n differs", func(m map[string]any) { at(m, "batches", 0, "metrics", "emit_recv")["n"] = 1 },
		"batches[0] (loopback): metrics.emit_recv: n is 1 but histogram.n is", false},
	{"timeline n differs", func(m map[string]any) { at(m, "batches", 1, "timeline", "emit_recv", "text")["n"] = 1 },
		"batches[1] (gateway): timeline.emit_recv.text: n is 1 but histogram.n is", false},
	{"timeline count negative", func(m map[string]any) { at(m, "batches", 1, "timeline")["cut"] = -1 },
		"batches[1] (gateway): timeline: a negative count (-1)", true},
	{"finding without a name", func(m map[string]any) {
		at(m, "verdict")["findings"] = []any{map[string]any{"name": "", "requests": 1, "of": 1}}
	}, "verdict.findings[0]: no name", true},
	{"failure text", func(m map[string]any) {
		at(m, "batches", 1, "failures", 1, "texts", 0)["text"] = "no content tokens received"
	},
		`batches[1] (gateway): failures[1]: texts[0]: "no content tokens received" is not a timeout failure text`, false},
	{"failure kind", func(m map[string]any) { at(m, "batches", 1, "failures", 1)["kind"] = "gremlins" },
		`failures[1]: unknown failure kind "gremlins"`, true},
	{"failed count", func(m map[string]any) { at(m, "batches", 1)["failed"] = 3.0; at(m, "batches", 1)["requests"] = 5.0 },
		"batches[1] (gateway): failures count 2 requests, failed says 3", false},
	{"failure group kind", func(m map[string]any) { at(m, "batches", 1, "failure_summary", "groups", 0)["kind"] = "gremlins" },
		`batches[1] (gateway): failure_summary: invalid failure summary: groups[0] (gremlins): unknown kind "gremlins"`, true},
	{"failure group example", func(m map[string]any) {
		at(m, "batches", 1, "failure_summary", "groups", 0)["example"] = "\x1b[2Jgone"
	}, `failure_summary: invalid failure summary: groups[0] (closed_mid_stream): example "[2Jgone": longer than 240 bytes, or with control characters`, false},
	{"failure group count", func(m map[string]any) { at(m, "batches", 1, "failure_summary", "groups", 0)["count"] = 2 },
		"failure_summary: invalid failure summary: groups[0] (closed_mid_stream): tokens: n is 1 for 2 failures", false},
	{"failure summary of another batch", func(m map[string]any) { at(m, "batches", 1, "failure_summary")["requests"] = 9 },
		"batches[1] (gateway): failure_summary: 9 requests, 2 failed; the batch has 4 and 2", false},
	{"failed tokens", func(m map[string]any) { at(m, "batches", 1, "stream")["failed_tokens"] = 1e9 },
		"batches[1] (gateway): stream.failed_tokens is 1000000000, more than the", false},
	{"lateness", func(m map[string]any) { at(m, "self", "emission_lateness", "histogram")["max_ns"] = 1 },
		"self.emission_lateness: histogram: invalid metric snapshot", false},
	{"config", func(m map[string]any) { m["config"] = []any{1} }, "config: a JSON array where an object is wanted", true},
	{"config field", func(m map[string]any) { at(m, "config")["tokens"] = "many" }, "config.tokens: a JSON string where an integer is wanted", false},
	{"tool", func(m map[string]any) { at(m, "tool")["name"] = "other" }, `tool.name is "other"`, true},
	{"runs", func(m map[string]any) { m["runs"] = 0 }, "runs is 0", true},
	{"negative framing count", func(m map[string]any) {
		at(m, "batches", 1, "stream")["framing"] = map[string]any{"bom_streams": 0, "multi_line_events": -1, "no_data_blocks": 0,
			"bare_cr_lines": 0, "invalid_utf8": 0, "id_fields": 0, "retry_fields": 0, "retry_max_ms": 0}
	}, "batches[1] (gateway): stream.framing: negative counter", true},
}

func TestReadJSONErrors(t *testing.T) {
	js := marshal(t, fixedDoc(t, "full"))
	for _, tt := range badDocuments {
		_, err := ReadJSON(bytes.NewReader(mutate(t, js, tt.mutate)))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ReadJSON(%s) = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
	raw := []struct {
		name, in, want string
	}{
		{"empty", "  \n", "empty input"},
		{"truncated", string(js[:200]), "line 4, column 88: invalid JSON: unexpected end of JSON input"},
		{"array", "[1, 2]", "line 1, column 2: a JSON array where the document (an object) should be"},
		{"null", "null", "not a JSON object"},
		{"syntax", "{\n  \"schema_version\": 1,\n  \"tool\": {,}\n}", "line 3, column 12: invalid JSON: invalid character ','"},
		{"type", strings.Replace(string(js), `"num_cpu": 2`, `"num_cpu": "two"`, 1), "line 4, column 67: environment.num_cpu: a JSON string where an integer is wanted"},
		{"trailing", string(js) + "{}", "invalid JSON: invalid character '{' after top-level value"},
	}
	for _, tt := range raw {
		_, err := ReadJSON(strings.NewReader(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ReadJSON(%s) = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
	if _, err := ReadJSON(bytes.NewReader(mutate(t, js, badDocuments[1].mutate))); !errors.Is(err, ErrSchemaVersion) {
		t.Errorf("ReadJSON(schema_version 2) = %v, want an error wrapping ErrSchemaVersion", err)
	}
}

// schema compiles docs/sse-latency.schema.json.
func schema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	sch, err := jsonschema.NewCompiler().Compile(filepath.Join("..", "..", "docs", "sse-latency.schema.json"))
	if err != nil {
		t.Fatalf("compiling the JSON Schema: %v", err)
	}
	return sch
}

func validate(sch *jsonschema.Schema, js []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		return err
	}
	return sch.Validate(inst)
}

// TestSchema checks that the documents the tool writes validate against the
// shipped JSON Schema, and that broken ones do not.
func TestSchema(t *testing.T) {
	sch := schema(t)
	good := map[string]*Document{
		"full":           fixedDoc(t, "full"),
		"no_calibration": fixedDoc(t, "no_calibration"),
		"crosshost":      fixedDoc(t, "crosshost"),
		"empty":          fixedDoc(t, "empty"),
		"setup failed":   fixEnv(NewDocument(RunInfo{EndReason: EndSetupFailed, ExitCode: 1}, nil)),
	}
	merged, err := Merge([]*Document{fixedDoc(t, "full"), fixedDoc(t, "full")}, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	good["merged"] = merged
	forced, err := Merge([]*Document{fixedDoc(t, "full"), fixedDoc(t, "no_calibration")}, MergeOptions{Force: true})
	if err != nil || forced.Forced == nil {
		t.Fatalf("forced merge: %v, forced %q", err, forced.Forced)
	}
	good["forced merge"] = forced
	loopS, gwS := randomRun(rand.New(rand.NewPCG(1, 2)), 0, 15) // with re-framed streams
	good["reframed"] = fixEnv(newFixture(loopS, gwS).doc())
	if good["reframed"].Gateway().Stream.Framing == nil {
		t.Fatal("the reframed document has no stream.framing")
	}
	good["cost"] = costDoc(t)
	for name, d := range good {
		if err := validate(sch, marshal(t, d)); err != nil {
			t.Errorf("the %s document does not validate: %v", name, err)
		}
	}

	js := marshal(t, good["full"])
	bad := []struct {
		name   string
		mutate func(m map[string]any)
	}{
		{"unknown top-level field", func(m map[string]any) { m["extra"] = 1 }},
		{"unknown batch field", func(m map[string]any) { at(m, "batches", 0)["extra"] = 1 }},
		{"unknown metric field", func(m map[string]any) { at(m, "batches", 0, "metrics", "ttft")["p42_ms"] = 1 }},
		{"no batches", func(m map[string]any) { delete(m, "batches") }},
		{"three batches", func(m map[string]any) { m["batches"] = append(m["batches"].([]any), m["batches"].([]any)[1]) }},
		{"float count", func(m map[string]any) { at(m, "batches", 0)["tokens"] = 1.5 }},
		{"negative n", func(m map[string]any) { at(m, "batches", 0, "metrics", "ttft")["n"] = -1 }},
		{"point of 3", func(m map[string]any) {
			at(m, "batches", 1, "samples", "series", 0)["points"] = []any{[]any{1, 2, 3}}
		}},
		{"empty forced", func(m map[string]any) { m["forced"] = []any{} }},
		{"geometry", func(m map[string]any) {
			at(m, "self", "emission_lateness", "histogram", "histogram")["significant_figures"] = 2
		}},
	}
	costJS := marshal(t, good["cost"])
	for _, tt := range []struct {
		name   string
		mutate func(m map[string]any)
	}{
		{"a share above 1", func(m map[string]any) { at(m, "batches", 1, "cost", "host")["busy_share"] = 1.5 }},
		{"an unknown culprit", func(m map[string]any) { at(m, "self", "host")["culprit"] = "cosmic rays" }},
		{"an unknown gateway cost field", func(m map[string]any) { at(m, "batches", 1, "cost", "gateway")["extra"] = 1 }},
		{"a gateway found otherwise", func(m map[string]any) { at(m, "batches", 1, "cost", "gateway")["found"] = "guess" }},
	} {
		if err := validate(sch, mutate(t, costJS, tt.mutate)); err == nil {
			t.Errorf("a document with %s validates against the schema, want an error", tt.name)
		}
	}
	for _, tt := range badDocuments {
		if tt.schema {
			bad = append(bad, struct {
				name   string
				mutate func(m map[string]any)
			}{tt.name, tt.mutate})
		}
	}
	for _, tt := range bad {
		if err := validate(sch, mutate(t, js, tt.mutate)); err == nil {
			t.Errorf("a document with %s validates against the schema, want an error", tt.name)
		}
	}
}

// costDoc is the full document with the costs a run through a gateway
// on this host records: each batch's, the host's over the run, the pin.
func costDoc(t *testing.T) *Document {
	d := fixedDoc(t, "full")
	host := &procstat.Host{All: procstat.CPUTimes{User: 120, System: 40, Idle: 40},
		CPUs: []procstat.CPU{{ID: 0, CPUTimes: procstat.CPUTimes{User: 60, System: 20, Idle: 20}},
			{ID: 1, CPUTimes: procstat.CPUTimes{User: 60, System: 20, Idle: 20}}}}
	gw := &summary.GatewaySample{PIDs: []int{1234}, Name: "haproxy", Exe: "/usr/sbin/haproxy", Found: "listener",
		Usage: procstat.Usage{CPUNs: 300e6, UserTicks: 10, SystemTicks: 20, Writes: 100, WriteBytes: 10000, WritesKnown: true,
			Processes: 1, Threads: 2, Exited: []procstat.Exited{{PID: 1234, Comm: "haproxy"}}}}
	for i := range d.Batches {
		d.Batches[i].Cost = summary.NewCost(summary.CostSample{WallNs: 1e9, Tokens: 2000, Streams: 4, ToolUserS: 0.2, ToolSystemS: 0.1,
			Host: host, Gateway: gw}, 4096)
	}
	d.Self.Host = d.Batches[1].Cost.Host
	d.Self.Pin = &summary.Pin{ToolCPUs: "0", Gateway: "taskset -a -cp 1 1234"}
	return d
}

func TestJoinLeaves(t *testing.T) {
	tests := []struct{ in, want string }{
		{"{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2\n  ]\n}\n", "{\n  \"a\": 1,\n  \"b\": [1, 2]\n}\n"},
		{"[\n  {\n    \"x\": \"a, [b]: {c}\",\n    \"y\": true\n  }\n]\n", "[\n  {\"x\": \"a, [b]: {c}\", \"y\": true}\n]\n"},
		{"{\n  \"s\": \"q\\\"[\",\n  \"e\": []\n}\n", "{\n  \"s\": \"q\\\"[\",\n  \"e\": []\n}\n"}, // [] is a container
		{"{\n  \"s\": \"q\\\"[\",\n  \"e\": 1\n}\n", "{\"s\": \"q\\\"[\", \"e\": 1}\n"},
		{"[\n  \"" + strings.Repeat("x", 120) + "\"\n]\n", "[\n  \"" + strings.Repeat("x", 120) + "\"\n]\n"},
	}
	for _, tt := range tests {
		if got := string(joinLeaves([]byte(tt.in))); got != tt.want {
			t.Errorf("joinLeaves(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestWriteJSONErrors: a failing writer's error is returned.
func TestWriteJSONErrors(t *testing.T) {
	if err := WriteJSON(&failAfter{}, fixedDoc(t, "empty")); !errors.Is(err, errWrite) {
		t.Errorf("WriteJSON(failing writer) = %v, want %v", err, errWrite)
	}
	d := fixedDoc(t, "empty")
	d.Config.DelayMs = math.NaN()
	if err := WriteJSON(&bytes.Buffer{}, d); err == nil {
		t.Errorf("WriteJSON(config delay NaN) = nil, want an error")
	}
	if err := WriteJSON(&bytes.Buffer{}, nil); err == nil {
		t.Errorf("WriteJSON(nil) = nil, want an error")
	}
}
