package summary

import "testing"

func TestMergeSamples(t *testing.T) {
	reqs := func(n int) []RequestSample {
		out := make([]RequestSample, n)
		for i := range out {
			out[i] = RequestSample{Index: i, OK: true, TTFTMs: float64(i), Tokens: 10}
		}
		return out
	}
	series := func(label string, index int, delay float64) Series {
		return Series{Label: label, Index: index, Tokens: 2, Points: [][2]float64{{1, delay}, {2, delay}}}
	}
	list := []Samples{
		{Requests: reqs(1500), Series: []Series{series("fastest", 1, 0.5), series("median", 2, 1), series("slowest", 3, 9), series("odd", 4, 0)}},
		{Requests: reqs(1000), Series: []Series{series("fastest", 1, 0.2), series("median", 2, 2), series("slowest", 3, 4)}},
		{Requests: reqs(500), Sampled: true, Series: []Series{series("median", 2, 3), series("slowest", 3, 12), {Label: "fastest"}}},
	}
	var shifted []Samples
	offset := 0
	for _, s := range list {
		shifted = append(shifted, offsetSamples(s, offset))
		offset += len(s.Requests)
	}
	got := mergeSamples(shifted)
	if len(got.Requests) != MaxRequestSamples || !got.Sampled {
		t.Fatalf("mergeSamples(3000 requests): %d kept, sampled %v; want %d, true", len(got.Requests), got.Sampled, MaxRequestSamples)
	}
	for i, r := range got.Requests {
		if want := i * 3000 / MaxRequestSamples; r.Index != want {
			t.Fatalf("mergeSamples: request %d has index %d, want %d (uniform over the runs, offset)", i, r.Index, want)
		}
	}
	want := []struct {
		label string
		index int
	}{{"fastest", 1500 + 1}, {"median", 1500 + 2}, {"slowest", 2500 + 3}, {"odd", 4}}
	if len(got.Series) != len(want) {
		t.Fatalf("mergeSamples: %d series, want %d", len(got.Series), len(want))
	}
	for i, w := range want {
		if s := got.Series[i]; s.Label != w.label || s.Index != w.index {
			t.Errorf("mergeSamples: series %d is %s of request %d, want %s of request %d", i, s.Label, s.Index, w.label, w.index)
		}
	}
	// One request's series serves one label only.
	dup := mergeSamples([]Samples{{Series: []Series{series("fastest", 7, 1), series("slowest", 7, 1)}}})
	if len(dup.Series) != 1 || dup.Series[0].Label != "fastest" {
		t.Errorf("mergeSamples(one request fastest and slowest) = %+v, want its series once, as fastest", dup.Series)
	}
	small := mergeSamples([]Samples{{Requests: reqs(3)}, {}})
	if len(small.Requests) != 3 || small.Sampled || small.Series == nil {
		t.Errorf("mergeSamples(3 requests) = %+v, want the 3, not sampled, empty series", small)
	}
}
