package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// testConfig is a cli.Config as the CLI marshals it (snake_case keys).
const testConfig = `{"listen": ":8090", "target": "127.0.0.1:8080", "requests": 4, "concurrency": 2,
	"tokens": 1000, "think_ms": 0, "delay_ms": 5, "timeout_ms": 300000, "no_loopback": false,
	"quiet": false, "verbose": false, "compat": false, "compressed": false, "api": "chat",
	"model": "sse-latency-1", "path": "", "include_usage": false}`

// runStart is the fixed start of the synthetic runs.
var runStart = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// fixture is a synthetic run: the records of its batches, run through the
// same aggregators as the CLI's.
type fixture struct {
	loopRs, gwRs []*result.Request // loopRs nil: no calibration
	loop, gw     *stats.Batch
	verdict      verdict.Verdict
}

func newFixture(loopS, gwS []stream) *fixture {
	f := &fixture{gw: stats.NewBatch()}
	var loopAcc *verdict.Accumulator
	if loopS != nil {
		f.loopRs = requests(loopS...)
		f.loop, loopAcc = stats.NewBatch(), verdict.NewAccumulator()
		for _, r := range f.loopRs {
			f.loop.Add(r)
			loopAcc.Add(r)
		}
	}
	f.gwRs = requests(gwS...)
	gwAcc := verdict.NewAccumulator()
	for _, r := range f.gwRs {
		f.gw.Add(r)
		gwAcc.Add(r)
	}
	f.verdict = verdict.Classify(loopAcc, gwAcc, f.loop, f.gw)
	return f
}

// info is the RunInfo of the fixture, with fixed times, samples and
// lateness.
func (f *fixture) info() RunInfo {
	late := stats.NewMetric()
	for _, ns := range []int64{12_000, 25_000, 25_000, 40_000, 310_000} {
		late.Record(ns)
	}
	v := f.verdict
	ri := RunInfo{
		Config:    json.RawMessage(testConfig),
		Start:     runStart,
		End:       runStart.Add(12500 * time.Millisecond),
		EndReason: EndDone,
		ExitCode:  boolExit(f.gw.Failed > 0),
		Loop:      f.loop, LoopTarget: "127.0.0.1:8090",
		Gateway: f.gw, GatewayTarget: "127.0.0.1:8080",
		GatewaySamples: Samples{
			Requests: []RequestSample{
				{Index: 0, OK: true, TTFTMs: 0.18, WallMs: 1195.236, Tokens: 1000},
				{Index: 3, OK: false, TTFTMs: -1, WallMs: 300000, Tokens: 0},
			},
			Series: []Series{{Label: "fastest", Index: 0, Tokens: 1000, Points: [][2]float64{{0.18, 0.036}, {200.18, 195.04}}}},
		},
		Verdict:  &v,
		Lateness: late,
		UserS:    1.25,
		SystemS:  0.5,
		Version:  "v1.2.3-test",
	}
	if f.loop != nil {
		ri.LoopSamples = Samples{Requests: []RequestSample{{Index: 0, OK: true, TTFTMs: 0.04, WallMs: 995.2, Tokens: 200}}}
	}
	return ri
}

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
		sc, ok := scenarios[name]
		if !ok {
			t.Fatalf("no scenario %q", name)
		}
		js, _ = fixedDocs.LoadOrStore(name, marshal(t, fixEnv(NewDocument(newFixture(sc.loop, sc.gw).info()))))
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
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v (run go test -update to create it)", name, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s:\n--- got\n%s--- want\n%s", path, got, want)
	}
}

func TestJSONGolden(t *testing.T) {
	for _, name := range []string{"full", "no_calibration"} {
		t.Run(name, func(t *testing.T) {
			golden(t, "json_"+name+".golden", marshal(t, fixedDoc(t, name)))
		})
	}
}

// TestNewDocument checks the fields the golden does not make obvious.
func TestNewDocument(t *testing.T) {
	f := newFixture(scenarios["full"].loop, scenarios["full"].gw)
	d := NewDocument(f.info())
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
		{"gateway failures", len(d.Batches[1].Failures), 2},
		{"gateway ttft n", d.Batches[1].Metrics.TTFT.N, f.gw.TTFT.N()},
		{"gateway emit_recv p99.9", d.Batches[1].Metrics.EmitRecv.P999Ms, ms(f.gw.EmitRecv.Percentile(0.999))},
		{"gateway emit_recv p90", d.Batches[1].Metrics.EmitRecv.P90Ms, ms(f.gw.EmitRecv.Percentile(0.90))},
		{"gateway emit_recv stddev", d.Batches[1].Metrics.EmitRecv.StddevMs, f.gw.EmitRecv.Stddev() / 1e6},
		{"overhead ttft mean", d.Overhead.TTFT.MeanMs, (f.gw.TTFT.Mean() - f.loop.TTFT.Mean()) / 1e6},
		{"verdict class", d.Verdict.Class, f.verdict.Class.String()},
		{"lateness n", d.Self.Lateness.N, int64(5)},
		{"lateness max", d.Self.Lateness.MaxMs, 0.31},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("NewDocument(full): %s = %v, want %v", c.what, c.got, c.want)
		}
	}

	// A run with one gateway request and its first token only: no overhead
	// line for the metrics without samples; no calibration: no overhead.
	one := stats.NewBatch()
	one.Add(stream{batch: "gw", ttft: 1e6, firstDelay: 50_000, tokens: 1}.request())
	d = NewDocument(RunInfo{Loop: one, Gateway: one, EndReason: EndDone})
	if d.Overhead == nil || d.Overhead.TTFT == nil || d.Overhead.InterToken != nil || d.Overhead.EmitRecv != nil {
		t.Errorf("NewDocument(one token each side).Overhead = %+v, want ttft and first_emit_recv only", d.Overhead)
	}
	if string(d.Config) != "{}" || d.Verdict != nil || d.Self.Lateness.N != 0 {
		t.Errorf("NewDocument(no config, verdict, lateness): config %s, verdict %v, lateness n %d; want {}, nil, 0",
			d.Config, d.Verdict, d.Self.Lateness.N)
	}
	if d = NewDocument(RunInfo{Gateway: one, EndReason: EndDone}); d.Overhead != nil {
		t.Errorf("NewDocument(no calibration).Overhead = %+v, want nil", d.Overhead)
	}
}

// expectedText is what the CLI prints after the per-request lines.
func expectedText(t *testing.T, loop, gw *stats.Batch, v *verdict.Verdict, compat bool) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteReport(&b, loop, gw); err != nil {
		t.Fatal(err)
	}
	if !compat {
		if v != nil {
			if err := WriteVerdict(&b, *v); err != nil {
				t.Fatal(err)
			}
		}
		if err := WriteStream(&b, loop, gw); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// TestJSONRoundTrip checks NewDocument → WriteJSON → ReadJSON →
// WriteDocumentText against the text written from the original batches,
// and that the JSON itself reads back to the same bytes.
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
		sc := scenarios[tt.scenario]
		f := newFixture(sc.loop, sc.gw)
		ri := f.info()
		if tt.compat {
			ri.Config = json.RawMessage(strings.Replace(testConfig, `"compat": false`, `"compat": true`, 1))
		}
		var v *verdict.Verdict
		if tt.noVerdict {
			ri.Verdict = nil
		} else {
			v = &f.verdict
		}
		js := marshal(t, NewDocument(ri))
		d, err := ReadJSON(bytes.NewReader(js))
		if err != nil {
			t.Fatalf("%s: ReadJSON(WriteJSON(NewDocument)): %v", tt.scenario, err)
		}
		var got bytes.Buffer
		if err := WriteDocumentText(&got, d); err != nil {
			t.Fatalf("%s: WriteDocumentText: %v", tt.scenario, err)
		}
		want := expectedText(t, f.loop, f.gw, v, tt.compat)
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%s (compat %v, verdict %v): WriteDocumentText after the round trip =\n%s\nwant (the run's text)\n%s",
				tt.scenario, tt.compat, !tt.noVerdict, got.Bytes(), want)
		}
		if again := marshal(t, d); !bytes.Equal(again, js) {
			t.Errorf("%s: WriteJSON(ReadJSON(js)) differs from js:\n%s\nwant\n%s", tt.scenario, again, js)
		}
		if tt.noVerdict || tt.compat {
			continue
		}
		if got := d.VerdictValue(); !reflect.DeepEqual(*got, f.verdict) {
			t.Errorf("%s: VerdictValue() = %+v, want %+v", tt.scenario, *got, f.verdict)
		}
		if got, want := d.Gateway().Failures(), f.gw.Failures(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Gateway().Failures() = %+v, want %+v", tt.scenario, got, want)
		}
	}
}

// TestWriteDocumentTextNoGateway: a run whose setup failed prints nothing.
func TestWriteDocumentTextNoGateway(t *testing.T) {
	d := fixEnv(NewDocument(RunInfo{EndReason: EndSetupFailed, ExitCode: 1}))
	var b bytes.Buffer
	if err := WriteDocumentText(&b, d); err != nil || b.Len() != 0 {
		t.Errorf("WriteDocumentText(no batch) = %q, %v; want nothing, nil", b.String(), err)
	}
	if d.Loop() != nil || d.Gateway() != nil || d.VerdictValue() != nil {
		t.Errorf("Loop, Gateway, VerdictValue of a document without batches: want nil")
	}
}

// TestVerdictInfoRoundTrip converts every verdict of verdict_test.go there
// and back.
func TestVerdictInfoRoundTrip(t *testing.T) {
	for name, v := range verdicts {
		if got := verdictInfo(v).value(); !reflect.DeepEqual(got, v) {
			t.Errorf("verdictInfo(%s).value() = %+v, want %+v", name, got, v)
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
		b := stats.NewBatch()
		for _, f := range tt.failures {
			b.Add(&result.Request{Batch: "gw", Failure: f})
		}
		d := NewDocument(RunInfo{Gateway: b, EndReason: EndDone})
		got, err := statsBatch(&d.Batches[0])
		if err != nil {
			t.Fatalf("%s: statsBatch(docBatch(b)): %v", tt.name, err)
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
	{"failure text", func(m map[string]any) {
		at(m, "batches", 1, "failures", 1, "texts", 0)["text"] = "no content tokens received"
	},
		`batches[1] (gateway): failures[1]: texts[0]: "no content tokens received" is not a timeout failure text`, false},
	{"failure kind", func(m map[string]any) { at(m, "batches", 1, "failures", 1)["kind"] = "gremlins" },
		`failures[1]: unknown failure kind "gremlins"`, true},
	{"failed count", func(m map[string]any) { at(m, "batches", 1)["failed"] = 3.0; at(m, "batches", 1)["requests"] = 5.0 },
		"batches[1] (gateway): failures count 2 requests, failed says 3", false},
	{"lateness", func(m map[string]any) { at(m, "self", "emission_lateness", "histogram")["max_ns"] = 1 },
		"self.emission_lateness: histogram: invalid metric snapshot", false},
	{"config", func(m map[string]any) { m["config"] = []any{1} }, "config: not a JSON object", true},
	{"tool", func(m map[string]any) { at(m, "tool")["name"] = "other" }, `tool.name is "other"`, true},
	{"runs", func(m map[string]any) { m["runs"] = 0 }, "runs is 0", true},
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
		"empty":          fixedDoc(t, "empty"),
		"setup failed":   fixEnv(NewDocument(RunInfo{EndReason: EndSetupFailed, ExitCode: 1})),
	}
	merged, err := Merge([]*Document{fixedDoc(t, "full"), fixedDoc(t, "full")})
	if err != nil {
		t.Fatal(err)
	}
	good["merged"] = merged
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
		{"geometry", func(m map[string]any) {
			at(m, "self", "emission_lateness", "histogram", "histogram")["significant_figures"] = 2
		}},
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
	d.Config = json.RawMessage("{")
	if err := WriteJSON(&bytes.Buffer{}, d); err == nil {
		t.Errorf("WriteJSON(config {) = nil, want an error")
	}
	if err := WriteJSON(&bytes.Buffer{}, nil); err == nil {
		t.Errorf("WriteJSON(nil) = nil, want an error")
	}
}
