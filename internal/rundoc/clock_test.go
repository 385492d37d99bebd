package rundoc

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestClockDocuments: a run across hosts reads back with its clock, a
// broken clock is refused with the field named, and a merge keeps the
// largest bound, sums the estimates and marks the merged figures again.
func TestClockDocuments(t *testing.T) {
	js := marshal(t, fixedDoc(t, "crosshost"))
	d, err := ReadJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	if d.Clock == nil || d.Clock.BoundMs != 0.05 || len(d.Clock.BelowBound) == 0 || d.Gateway().RequestLeg == nil {
		t.Fatalf("read back: clock %+v, request leg %v", d.Clock, d.Gateway().RequestLeg)
	}
	for _, tt := range []struct {
		name   string
		mutate func(m map[string]any)
		want   string
	}{
		{"negative bound", func(m map[string]any) { at(m, "clock")["bound_ms"] = -1 }, "clock.bound_ms is -1"},
		{"no estimate", func(m map[string]any) { at(m, "clock")["estimates"] = 0 }, "clock.estimates is 0"},
		{"no below_bound", func(m map[string]any) { delete(at(m, "clock"), "below_bound") }, "clock.below_bound: absent"},
		{"request leg", func(m map[string]any) { at(m, "batches", 0, "request_leg", "histogram")["max_ns"] = 1 }, "request_leg: histogram"},
		{"replica bound", func(m map[string]any) { at(m, "batches", 0, "replicas", 0)["bound_ms"] = -1 }, "replicas[0]: offset_ms 1234.567, bound_ms -1"},
		{"replica counts", func(m map[string]any) { at(m, "batches", 0, "replicas", 1)["ok"] = 5 }, "replicas[1]: requests=1, ok=5"},
		{"replica requests", func(m map[string]any) { at(m, "batches", 0, "replicas", 0)["requests"] = 9 }, "replicas count 10 requests, the batch 3"},
	} {
		bad := mutate(t, js, tt.mutate)
		if _, err := ReadJSON(bytes.NewReader(bad)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ReadJSON(%s) = %v, want an error containing %q", tt.name, err, tt.want)
		}
		if err := validate(schema(t), bad); err == nil && tt.name != "request leg" && tt.name != "replica counts" && tt.name != "replica requests" {
			t.Errorf("a document with %s validates against the schema", tt.name)
		}
	}

	a, b := fixedDoc(t, "crosshost"), fixedDoc(t, "crosshost")
	b.Clock.BoundMs, b.Clock.OffsetMs = 0.5, -20
	m, err := Merge([]*Document{a, b}, MergeOptions{Names: []string{"a.json", "b.json"}})
	if err != nil {
		t.Fatal(err)
	}
	if c := m.Clock; c == nil || c.BoundMs != 0.5 || c.Estimates != 6 || c.OffsetMs != a.Clock.OffsetMs {
		t.Errorf("merged clock %+v, want bound 0.5, 6 estimates, a's offset", c)
	}
	if !slices.ContainsFunc(m.Notes, func(n string) bool { return strings.Contains(n, "own clock offset") }) {
		t.Errorf("merged notes %q, want one about the clock offsets", m.Notes)
	}
	// With the wider bound, the p99 of emit->recv (0.06 ms) is below it too.
	if !slices.Contains(m.Clock.BelowBound, "batches[0].metrics.emit_recv.p99_ms") || slices.Contains(a.Clock.BelowBound, "batches[0].metrics.emit_recv.p99_ms") {
		t.Errorf("merged below_bound %q (a's %q): want emit_recv.p99_ms below the merged bound only", m.Clock.BelowBound, a.Clock.BelowBound)
	}
	if m.Gateway().RequestLeg == nil || m.Gateway().RequestLeg.N != 6 {
		t.Errorf("merged request leg %+v, want 6 samples", m.Gateway().RequestLeg)
	}
	// The replicas: one row each, their requests and samples summed.
	if r := m.Gateway().Replicas; len(r) != 3 || r[0].Instance != "srv-a" || r[0].Requests != 4 || r[0].RequestLeg.N != 4 || r[1].Requests != 2 ||
		r[0].EmitRecv.N != 2*a.Gateway().Replicas[0].EmitRecv.N || r[2].Error == "" {
		t.Errorf("merged replicas %+v, want srv-a with 4 requests, srv-b with 2, the replica down", r)
	}
	full, err := Merge([]*Document{fixedDoc(t, "full"), fixedDoc(t, "full")}, MergeOptions{})
	if err != nil || full.Clock != nil {
		t.Errorf("merging runs in one process: clock %+v, %v; want none", full.Clock, err)
	}
}
