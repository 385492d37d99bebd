package summary

import (
	"testing"

	"github.com/sse-latency/sse-latency/internal/clocksync"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
)

// replicaRecord is an ok request served by instance: sent at 1000, its
// arrival at the server leg ns later, its 3 visible tokens each emitted
// delay ns before it arrived, the last unmeasured when unmeasured.
func replicaRecord(instance string, leg, delay int64, unmeasured bool) *result.Request {
	r := &result.Request{Instance: instance, Sent: 1000, ServerArrived: 1000 + leg, ByPiTs: 3}
	for i := range int32(3) {
		r.AppendTokens(1, i, i, 10_000+1000*int64(i))
		r.Tokens[i].Emitted = r.Tokens[i].Arrived - delay
	}
	if unmeasured {
		r.Tokens[2].Emitted, r.ByPiTs = 0, 2
	}
	return r
}

// TestReplicaCollector: the rows follow the endpoints, each with what its
// instance served and its clock; then the instances no endpoint is, and
// the requests of none; a replica down has only its error.
func TestReplicaCollector(t *testing.T) {
	c := NewReplicaCollector()
	for _, r := range []*result.Request{
		replicaRecord("a", 100, 10, false), replicaRecord("a", 300, 30, false), replicaRecord("b", 200, 20, true),
		replicaRecord("x", 1, 1, true), replicaRecord("", 1, 1, true),
	} {
		c.Add(r)
	}
	clock := &clocksync.Summary{Offset: 2_000_000, Bound: 50_000, Estimates: 3}
	rows := c.Replicas([]ReplicaInfo{
		{Instance: "b", Control: "http://b:8091", Clock: clock},
		{Instance: "a", Control: "http://a:8091", Clock: clock},
		{Control: "http://down:8091", Error: "down: refused"},
	})
	want := []struct {
		instance, control, err      string
		requests                    int
		tokens, unmeasured, leg, er int64
	}{
		{"b", "http://b:8091", "", 1, 3, 1, 1, 1},
		{"a", "http://a:8091", "", 2, 6, 0, 2, 4},
		{"", "http://down:8091", "down: refused", 0, 0, 0, 0, 0},
		{"", "", ErrNoReplica, 1, 3, 1, 1, 1},
		{"x", "", ErrUnknownInstance, 1, 3, 1, 1, 1},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows %+v, want %d", len(rows), rows, len(want))
	}
	for i, w := range want {
		r := rows[i]
		if r.Instance != w.instance || r.Control != w.control || r.Error != w.err || r.Requests != w.requests || r.OK != w.requests ||
			r.Tokens != w.tokens || r.Unmeasured != w.unmeasured || r.RequestLeg.N != w.leg || r.EmitRecv.N != w.er {
			t.Errorf("row %d = %+v, want %+v", i, r, w)
		}
	}
	if a := rows[1]; a.OffsetMs != 2 || a.BoundMs != 0.05 || a.Estimates != 3 || a.RequestLeg.Histogram.MinNs != 100 || a.RequestLeg.Histogram.MaxNs != 300 {
		t.Errorf("row a: offset %v, bound %v, %d estimates, leg %v..%v; want 2 ms, 0.05 ms, 3, 100..300 ns",
			a.OffsetMs, a.BoundMs, a.Estimates, a.RequestLeg.Histogram.MinNs, a.RequestLeg.Histogram.MaxNs)
	}
}

// TestMergeReplicas: rows of one instance and endpoint merge exactly —
// counts summed, the metrics those of all the samples, the largest bound,
// the first offset and error — in the order they first appear.
func TestMergeReplicas(t *testing.T) {
	run := func(infos []ReplicaInfo, recs ...*result.Request) []Replica {
		c := NewReplicaCollector()
		for _, r := range recs {
			c.Add(r)
		}
		return c.Replicas(infos)
	}
	a1 := ReplicaInfo{Instance: "a", Control: "http://a:8091", Clock: &clocksync.Summary{Offset: 1e6, Bound: 10_000, Estimates: 2}}
	a2 := ReplicaInfo{Instance: "a", Control: "http://a:8091", Clock: &clocksync.Summary{Offset: 3e6, Bound: 40_000, Estimates: 1}, Error: "1 fetch of its records failed"}
	b := ReplicaInfo{Instance: "b", Control: "http://b:8091", Clock: &clocksync.Summary{Offset: 5e6, Bound: 20_000, Estimates: 1}}
	recs1 := []*result.Request{replicaRecord("a", 100, 10, false), replicaRecord("a", 500, 50, false)}
	recs2 := []*result.Request{replicaRecord("a", 300, 30, true), replicaRecord("b", 700, 70, false)}
	merged, err := MergeReplicas([][]Replica{run([]ReplicaInfo{a1}, recs1...), run([]ReplicaInfo{a2, b}, recs2...)})
	if err != nil {
		t.Fatal(err)
	}
	// What one run of all the requests would have had.
	leg, emit := stats.NewMetric(), stats.NewMetric()
	for _, r := range []*result.Request{recs1[0], recs1[1], recs2[0]} {
		leg.Record(r.ServerArrived - r.Sent)
		for _, tk := range r.Tokens[1:] {
			if tk.Emitted != 0 {
				emit.Record(tk.Arrived - tk.Emitted)
			}
		}
	}
	if len(merged) != 2 {
		t.Fatalf("merged %+v, want a then b", merged)
	}
	a := merged[0]
	if a.Instance != "a" || a.Requests != 3 || a.OK != 3 || a.Tokens != 9 || a.Unmeasured != 1 || a.Estimates != 3 || a.BoundMs != 0.04 || a.OffsetMs != 1 ||
		a.Error != "1 fetch of its records failed" {
		t.Errorf("merged a = %+v", a)
	}
	if want := NewMetric(leg); a.RequestLeg.N != want.N || a.RequestLeg.P50Ms != want.P50Ms || a.RequestLeg.MaxMs != want.MaxMs || a.RequestLeg.MeanMs != want.MeanMs {
		t.Errorf("merged a's request leg %+v, want that of all its samples %+v", a.RequestLeg, want)
	}
	if want := NewMetric(emit); a.EmitRecv.N != want.N || a.EmitRecv.P99Ms != want.P99Ms || a.EmitRecv.MinMs != want.MinMs {
		t.Errorf("merged a's emit->recv %+v, want that of all its samples %+v", a.EmitRecv, want)
	}
	if merged[1].Instance != "b" || merged[1].Requests != 1 || merged[1].OffsetMs != 5 {
		t.Errorf("merged b = %+v", merged[1])
	}
	bad := run([]ReplicaInfo{a1}, recs1...)
	bad[0].RequestLeg.N++
	if _, err := MergeReplicas([][]Replica{bad}); err == nil {
		t.Error("MergeReplicas accepted a metric whose n is not its histogram's")
	}
}
