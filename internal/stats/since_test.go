package stats

import (
	"math/rand/v2"
	"testing"
)

// TestSince: the samples recorded after a snapshot, recovered from the
// running metric, agree with a metric of those samples alone: exactly in
// count, sum and every percentile, and in the extremes within a bucket
// (exactly when the extreme sample is a new one).
func TestSince(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 200 {
		running, fresh := NewMetric(), NewMetric()
		nBefore, nAfter := rng.IntN(300), 1+rng.IntN(300)
		scale := int64(1) << rng.IntN(30)
		for range nBefore {
			running.Record(rng.Int64N(scale) + 1)
		}
		before, err := MetricFromSnapshot(running.Snapshot())
		if err != nil {
			t.Fatal(err)
		}
		for range nAfter {
			v := rng.Int64N(2*scale) + 1
			running.Record(v)
			fresh.Record(v)
		}
		got := Since(running, before)
		if got.N() != fresh.N() || got.Sum() != fresh.Sum() {
			t.Fatalf("trial %d: n=%d sum=%d, want %d %d", trial, got.N(), got.Sum(), fresh.N(), fresh.Sum())
		}
		for _, p := range []float64{0.01, 0.5, 0.9, 0.99, 0.999} {
			g, w := got.Percentile(p), fresh.Percentile(p)
			if bucketOf(g) != bucketOf(w) {
				t.Fatalf("trial %d: p%v = %d, want %d (bucket %d)", trial, p, g, w, bucketOf(w))
			}
		}
		if bucketOf(got.Min()) != bucketOf(fresh.Min()) || bucketOf(got.Max()) != bucketOf(fresh.Max()) {
			t.Fatalf("trial %d: min/max %d/%d, want the buckets of %d/%d", trial, got.Min(), got.Max(), fresh.Min(), fresh.Max())
		}
		if fresh.Max() >= before.Max() && got.Max() != fresh.Max() {
			t.Fatalf("trial %d: max %d, want the new sample's %d exactly", trial, got.Max(), fresh.Max())
		}
		if _, err := MetricFromSnapshot(got.Snapshot()); err != nil {
			t.Fatalf("trial %d: the difference's snapshot does not rebuild: %v", trial, err)
		}
	}
	empty := NewMetric()
	if got := Since(empty, nil); got.N() != 0 {
		t.Errorf("Since(empty, nil).N() = %d", got.N())
	}
	m := NewMetric()
	m.Record(5)
	if got := Since(m, m); got.N() != 0 || got.Max() != 0 {
		t.Errorf("Since(m, m) = n %d max %d, want empty", got.N(), got.Max())
	}
	if got := Since(m, nil); got.N() != 1 || got.Min() != 5 || got.Max() != 5 {
		t.Errorf("Since(m, nil) = n %d min %d max %d, want m", got.N(), got.Min(), got.Max())
	}
}
