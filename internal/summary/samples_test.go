package summary

import (
	"testing"

	"github.com/sse-latency/sse-latency/internal/result"
)

// request builds a finished request whose n tokens are emitted 1 ms apart
// and arrive delay ns later.
func sampleRequest(index, n int, delay int64) *result.Request {
	r := &result.Request{Batch: "gw", Index: index, Start: 1000, Sent: 2000}
	for i := 0; i < n; i++ {
		e := int64(10_000 + i*1_000_000)
		r.AppendTokens(1, int32(i), int32(i), e+delay)
		r.Tokens[i].Emitted = e
	}
	r.End = r.Tokens[n-1].Arrived
	return r
}

func TestSampleCollectorPicksFastestMedianSlowest(t *testing.T) {
	c := NewSampleCollector()
	for i, d := range []int64{5000, 1000, 9000, 3000, 7000} {
		c.Add(sampleRequest(i, 10, d))
	}
	s := c.Samples()
	if len(s.Requests) != 5 || s.Sampled || s.Requests[0].Index != 0 || s.Requests[4].Index != 4 {
		t.Fatalf("requests %+v, want all 5 in index order", s.Requests)
	}
	want := map[string]int{"fastest": 1, "median": 0, "slowest": 2}
	if len(s.Series) != 3 {
		t.Fatalf("%d series, want 3", len(s.Series))
	}
	for _, ser := range s.Series {
		if want[ser.Label] != ser.Index {
			t.Errorf("%s series is request %d, want %d", ser.Label, ser.Index, want[ser.Label])
		}
		if len(ser.Points) != 10 {
			t.Errorf("%s series has %d points, want 10", ser.Label, len(ser.Points))
		}
	}
}

func TestSampleCollectorBounded(t *testing.T) {
	c := NewSampleCollector()
	for i := 0; i < 3*MaxRequestSamples; i++ {
		c.Add(sampleRequest(i, 2000, int64(i)))
	}
	s := c.Samples()
	if len(s.Requests) != MaxRequestSamples || !s.Sampled {
		t.Errorf("%d request samples (sampled=%v), want %d and sampled", len(s.Requests), s.Sampled, MaxRequestSamples)
	}
	for _, ser := range s.Series {
		if len(ser.Points) > MaxSeriesPoints {
			t.Errorf("%s series has %d points, more than %d", ser.Label, len(ser.Points), MaxSeriesPoints)
		}
	}
	if len(c.middle) > medianCandidates {
		t.Errorf("%d median candidates kept, want at most %d", len(c.middle), medianCandidates)
	}
}

// TestSeriesKeepsSpikes: downsampling keeps each bucket's largest delay,
// so a single held token still shows.
func TestSeriesKeepsSpikes(t *testing.T) {
	r := sampleRequest(0, 5*MaxSeriesPoints, 1000)
	r.Tokens[1234].Arrived += 50_000_000
	s := seriesOf(r)
	peak := 0.0
	for _, p := range s.Points {
		peak = max(peak, p[1])
	}
	if peak < 50 {
		t.Errorf("peak delay %.3f ms after downsampling, want the 50 ms spike kept", peak)
	}
}
