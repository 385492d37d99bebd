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
	} {
		bad := mutate(t, js, tt.mutate)
		if _, err := ReadJSON(bytes.NewReader(bad)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ReadJSON(%s) = %v, want an error containing %q", tt.name, err, tt.want)
		}
		if err := validate(schema(t), bad); err == nil && tt.name != "request leg" {
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
	full, err := Merge([]*Document{fixedDoc(t, "full"), fixedDoc(t, "full")}, MergeOptions{})
	if err != nil || full.Clock != nil {
		t.Errorf("merging runs in one process: clock %+v, %v; want none", full.Clock, err)
	}
}
