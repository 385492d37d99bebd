package rundoc

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/rundoc/rundoctest"
	"github.com/sse-latency/sse-latency/internal/slo"
)

// gatesDoc is the document of gatesRun.
func gatesDoc(t *testing.T, objectives ...string) *Document {
	t.Helper()
	cfg := testConfig
	cfg.Rounds = 2
	for _, o := range objectives {
		p, _ := slo.Parse(o)
		cfg.SLOs = append(cfg.SLOs, p.String())
	}
	ri := RunInfo{Config: cfg, Start: runStart, End: runStart.Add(3e9), EndReason: EndDone, ExitCode: 1, Version: "v1.2.3-test"}
	return fixEnv(NewDocument(ri, rundoctest.GatesRun(objectives...)))
}

// sweepDoc is the document of rundoctest.Sweep.
func sweepDoc(t *testing.T) *Document {
	t.Helper()
	d := fixEnv(NewDocument(RunInfo{Config: testConfig, Start: runStart, End: runStart.Add(9e9), EndReason: EndDone, Version: "v"}, nil))
	d.Sweep = rundoctest.Sweep()
	if d.Sweep.Knee == nil {
		t.Fatal("the buffering gateway of the full scenario has no knee")
	}
	return d
}

// TestGatesRoundTrip: rounds, declared timings, objectives and sweeps
// read back as written, and validate against the JSON Schema.
func TestGatesRoundTrip(t *testing.T) {
	sch := schema(t)
	for name, d := range map[string]*Document{
		"rounds, declared, slo": gatesDoc(t, "gateway emit->recv p99 < 1ms", "ttft p50 < 1ms", "added emit->recv p50 < 500ms"),
		"sweep":                 sweepDoc(t),
	} {
		js := marshal(t, d)
		back, err := ReadJSON(bytes.NewReader(js))
		if err != nil {
			t.Fatalf("%s: ReadJSON: %v", name, err)
		}
		if !reflect.DeepEqual(back.Run, d.Run) || !reflect.DeepEqual(back.Sweep, d.Sweep) {
			t.Errorf("%s: the document reads back differently", name)
		}
		if again := marshal(t, back); !bytes.Equal(again, js) {
			t.Errorf("%s: WriteJSON(ReadJSON(js)) differs from js", name)
		}
		if err := validate(sch, js); err != nil {
			t.Errorf("%s: does not validate against the schema: %v", name, err)
		}
	}
	d := gatesDoc(t, "ttft p50 < 1ms")
	if d.Rounds == nil || d.Gateway().Declared == nil || d.SLO == nil || d.SLO.Goodput == nil || d.Loop().Declared != nil {
		t.Fatalf("gatesDoc lacks a part: rounds %v, declared %v, slo %+v", d.Rounds != nil, d.Gateway().Declared != nil, d.SLO)
	}
}

// TestGatesInvalid: documents with inconsistent rounds, declared timings
// or sweeps are refused, the field named.
func TestGatesInvalid(t *testing.T) {
	run := marshal(t, gatesDoc(t))
	sw := marshal(t, sweepDoc(t))
	tests := []struct {
		name   string
		js     []byte
		mutate func(m map[string]any)
		want   string
		schema bool
	}{
		{"round order", run, func(m map[string]any) { at(m, "rounds")["order"] = "LG" }, `rounds: order "LG" has 2 letters for 4 rounds`, false},
		{"round batch", run, func(m map[string]any) { at(m, "rounds", "rounds", 1)["batch"] = "loopback" },
			`rounds: rounds[1]: batch "loopback", pair 0: want batch "gateway"`, false},
		{"round counts", run, func(m map[string]any) { at(m, "rounds", "rounds", 0)["ok"] = 9 }, "rounds: rounds[0]: requests=3, ok=9", false},
		{"round histogram", run, func(m map[string]any) { at(m, "rounds", "rounds", 0, "metrics", "ttft")["n"] = 9 },
			"rounds: rounds[0]: TTFT (client): n is 9", false},
		{"declared counts", run, func(m map[string]any) { at(m, "batches", 1, "declared", "figures", 0)["missing"] = 0 },
			"batches[1] (gateway): declared: figures[0] (x-litellm-overhead-duration-ms): requests=4, invalid=0, missing=0", false},
		{"declared source", run, func(m map[string]any) {
			at(m, "batches", 1, "declared", "figures", 1)["source"] = "x-litellm-overhead-duration-ms"
		},
			"figures[1]: source \"x-litellm-overhead-duration-ms\" empty or repeated", false},
		{"declared extra field", run, func(m map[string]any) { at(m, "batches", 1, "declared")["extra"] = 1 }, "", true},
		{"sweep axis", sw, func(m map[string]any) { at(m, "sweep")["axis"] = "tokens" }, `sweep: axis "tokens"`, true},
		{"sweep value", sw, func(m map[string]any) { at(m, "sweep", "steps", 1)["value"] = 11 }, "sweep: steps[1]: value 11, but values[1] is 10", false},
		{"sweep steps", sw, func(m map[string]any) { at(m, "sweep")["values"] = []any{1} }, "sweep: 2 steps for 1 values", false},
		{"sweep knee", sw, func(m map[string]any) { at(m, "sweep", "knee")["step"] = 5 }, "sweep: knee: step 5", false},
		{"sweep step run", sw, func(m map[string]any) { delete(at(m, "sweep", "steps", 0), "overhead") },
			"sweep: steps[0]: overhead: absent", false},
		{"sweep with batches", sw, func(m map[string]any) { m["batches"] = at(m, "sweep", "steps", 0)["batches"] },
			"a sweep document keeps its batches in its steps", false},
	}
	sch := schema(t)
	for _, tt := range tests {
		js := mutate(t, tt.js, tt.mutate)
		if tt.want != "" {
			if _, err := ReadJSON(bytes.NewReader(js)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s: ReadJSON = %v, want an error containing %q", tt.name, err, tt.want)
			}
		}
		if err := validate(sch, js); (err != nil) != tt.schema {
			t.Errorf("%s: schema validation = %v, want an error: %v", tt.name, err, tt.schema)
		}
	}
}

// TestMergeGates: merge drops the runs' rounds (saying so), checks the
// first run's objectives again with the goodput summed, merges declared
// timings exactly, and refuses sweeps; compare refuses them too.
func TestMergeGates(t *testing.T) {
	objectives := []string{"ttft p50 < 1ms", "emit->recv p99 < 1ms"}
	a, b := gatesDoc(t, objectives...), gatesDoc(t, objectives...)
	m, err := Merge([]*Document{a, b}, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(m.Notes, "\n")
	for _, want := range []string{"rounds: the runs' rounds are not merged", "slo: the first run's objectives checked again"} {
		if !strings.Contains(notes, want) {
			t.Errorf("merged notes lack %q:\n%s", want, notes)
		}
	}
	if m.Rounds != nil || m.SLO == nil || len(m.SLO.Checks) != 2 || m.SLO.Goodput == nil ||
		m.SLO.Goodput.Requests != 2*a.SLO.Goodput.Requests || m.SLO.Goodput.Good != 2*a.SLO.Goodput.Good {
		t.Errorf("merged rounds %v, slo %+v; want no rounds and the goodput of both", m.Rounds != nil, m.SLO)
	}
	gd, ad := m.Gateway().Declared, a.Gateway().Declared
	if gd == nil || gd.Heads != 2*ad.Heads || gd.Figures[0].Requests != 2*ad.Figures[0].Requests {
		t.Errorf("merged declared %+v, want twice %+v", gd, ad)
	}
	if _, err := ReadJSON(bytes.NewReader(marshal(t, m))); err != nil {
		t.Errorf("the merged document does not read back: %v", err)
	}
	// Runs with and without declared timings: dropped, with a note.
	plain := fixedDoc(t, "full")
	plain.Config.Rounds = 2
	mixed, err := Merge([]*Document{a, plain}, MergeOptions{Force: true})
	if err != nil || mixed.Gateway().Declared != nil || !slices.ContainsFunc(mixed.Notes, func(n string) bool {
		return strings.Contains(n, "declared timings of the gateway batch dropped")
	}) {
		t.Errorf("merge with a run without declared timings: %v, notes %q", err, mixed.Notes)
	}
	if _, err := Merge([]*Document{sweepDoc(t)}, MergeOptions{}); err == nil || !strings.Contains(err.Error(), "it is a sweep") {
		t.Errorf("Merge(sweep) = %v, want a refusal", err)
	}
	if err := Compare(new(bytes.Buffer), a, sweepDoc(t)); err == nil || !strings.Contains(err.Error(), "after: a sweep") {
		t.Errorf("Compare(run, sweep) = %v, want a refusal", err)
	}
}
