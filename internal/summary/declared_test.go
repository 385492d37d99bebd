package summary

import (
	"testing"

	"github.com/sse-latency/sse-latency/internal/result"
)

func TestDeclaredCollector(t *testing.T) {
	c := NewDeclaredCollector()
	add := func(head bool, tm result.TimingHeaders) {
		r := &result.Request{Timing: tm}
		if head {
			r.HeadAt = 1
		}
		c.Add(r)
	}
	if c.Timings() != nil {
		t.Fatal("an empty collector has timings")
	}
	add(true, result.TimingHeaders{LiteLLMOverhead: "0.8", ServerTiming: "gw;dur=0.5, up;dur=40, gw;dur=99"})
	add(true, result.TimingHeaders{LiteLLMOverhead: " 1.2 ", KongProxy: "3", ServerTiming: "gw;dur=0.7, miss"})
	add(true, result.TimingHeaders{LiteLLMOverhead: "soon", KongUpstream: "-1"})
	add(true, result.TimingHeaders{})                      // a head without any
	add(false, result.TimingHeaders{LiteLLMOverhead: "5"}) // no head: not counted
	d := c.Timings()
	if d == nil || d.Heads != 4 || d.Dropped != 0 {
		t.Fatalf("timings %+v, want 4 heads", d)
	}
	want := map[string]struct {
		overhead                   bool
		requests, invalid, missing int
		p50                        float64
	}{
		DeclaredLiteLLM:             {true, 2, 1, 1, 0.8},
		DeclaredKongProxy:           {true, 1, 0, 3, 3},
		DeclaredKongUpstream:        {false, 0, 1, 3, 0},
		DeclaredServerTiming + "gw": {false, 2, 0, 2, 0.5}, // a repeated name counts its first duration
		DeclaredServerTiming + "up": {false, 1, 0, 3, 40},
	}
	if len(d.Figures) != len(want) {
		t.Fatalf("%d figures %+v, want %d", len(d.Figures), d.Figures, len(want))
	}
	for _, f := range d.Figures {
		w, ok := want[f.Source]
		if !ok || f.Overhead != w.overhead || f.Requests != w.requests || f.Invalid != w.invalid || f.Missing != w.missing ||
			f.Metric.N != int64(w.requests) || !near(f.Metric.P50Ms, w.p50) {
			t.Errorf("figure %s: %+v; want %+v", f.Source, f, w)
		}
	}
	// Sources beyond the bound are dropped, counted.
	many := NewDeclaredCollector()
	r := &result.Request{HeadAt: 1}
	for i := range MaxDeclaredSources + 3 {
		r.Timing.ServerTiming += "m" + string(rune('a'+i)) + ";dur=1, "
	}
	many.Add(r)
	if got := many.Timings(); len(got.Figures) != MaxDeclaredSources || got.Dropped != 3 {
		t.Errorf("%d figures, %d dropped; want %d and 3", len(got.Figures), got.Dropped, MaxDeclaredSources)
	}
}

func TestMergeDeclared(t *testing.T) {
	collect := func(values ...string) *DeclaredTimings {
		c := NewDeclaredCollector()
		for _, v := range values {
			c.Add(&result.Request{HeadAt: 1, Timing: result.TimingHeaders{LiteLLMOverhead: v}})
		}
		c.Add(&result.Request{HeadAt: 1, Timing: result.TimingHeaders{ServerTiming: "gw;dur=2"}})
		return c.Timings()
	}
	a, b := collect("1", "2"), collect("3")
	m, ok := MergeDeclared([]*DeclaredTimings{a, b})
	if !ok || m.Heads != 5 || len(m.Figures) != 2 {
		t.Fatalf("MergeDeclared = %+v, %v", m, ok)
	}
	if f := m.Figures[0]; f.Source != DeclaredLiteLLM || f.Requests != 3 || f.Missing != 2 || f.Metric.N != 3 || !near(f.Metric.MaxMs, 3) {
		t.Errorf("merged %+v", f)
	}
	if _, ok := MergeDeclared([]*DeclaredTimings{a, nil}); ok {
		t.Error("merging a run without declared timings succeeded")
	}
	if m, ok := MergeDeclared([]*DeclaredTimings{nil, nil}); !ok || m != nil {
		t.Errorf("merging runs without any = %+v, %v; want nil, true", m, ok)
	}
}
