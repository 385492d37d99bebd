package summary

import (
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/sse-latency/sse-latency/internal/result"
)

// Samples are the few raw series the HTML report plots, bounded whatever
// the number of requests.
type Samples struct {
	// Requests is one entry per request, or a uniform sample of at most
	// MaxRequestSamples of them (Sampled then says so).
	Requests []RequestSample `json:"requests"`
	Sampled  bool            `json:"sampled"`
	// Series are the per-token delays of a few representative requests
	// (the fastest, the median and the slowest by mean emit->recv),
	// downsampled to at most MaxSeriesPoints points each.
	Series []Series `json:"series"`
}

// Bounds of Samples.
const (
	MaxRequestSamples = 2000
	MaxSeriesPoints   = 500
)

// RequestSample is one request's headline figures.
type RequestSample struct {
	Index  int     `json:"index"`
	OK     bool    `json:"ok"`
	TTFTMs float64 `json:"ttft_ms"` // to the first visible text token; -1 when none arrived
	WallMs float64 `json:"wall_ms"`
	Tokens int     `json:"tokens"` // visible text tokens
}

// Series is the emit->recv delay of each token of one request against the
// token's arrival time since the request was sent.
type Series struct {
	Label  string       `json:"label"` // "fastest", "median", "slowest"
	Index  int          `json:"index"` // the request's index in its batch
	Tokens int          `json:"tokens"`
	Points [][2]float64 `json:"points"` // [arrival since sent ms, emit->recv ms]
}

// NormSamples returns a copy of s without nil slices, as documents hold
// them.
func NormSamples(s Samples) Samples {
	out := Samples{Requests: slices.Clone(s.Requests), Sampled: s.Sampled, Series: make([]Series, len(s.Series))}
	if out.Requests == nil {
		out.Requests = []RequestSample{}
	}
	for i, se := range s.Series {
		se.Points = slices.Clone(se.Points)
		if se.Points == nil {
			se.Points = [][2]float64{}
		}
		out.Series[i] = se
	}
	return out
}

// medianCandidates bounds how many requests' series the collector keeps
// while the run goes, to pick the median one at the end.
const medianCandidates = 64

// SampleCollector gathers, while a batch runs, the bounded raw series the
// HTML report plots: headline figures of every request (a uniform reservoir
// of MaxRequestSamples beyond that) and the token series of the fastest,
// the slowest and a sample of requests (ranked by mean emit->recv) from
// which the median one is chosen. Add is called once per finished request,
// one call at a time; it does not keep the record.
type SampleCollector struct {
	requests []RequestSample
	seen     int
	rng      *rand.Rand

	fastest, slowest *candidate
	middle           []*candidate // reservoir of candidates for the median
	withSeries       int
}

// candidate is a request's series with the key it is ranked by.
type candidate struct {
	meanNs float64
	series Series
}

// NewSampleCollector returns an empty collector. The reservoirs use a fixed
// seed, so a run's samples do not depend on chance beyond the run itself.
func NewSampleCollector() *SampleCollector {
	return &SampleCollector{rng: rand.New(rand.NewPCG(1, 2))}
}

// Add folds one finished request in.
func (c *SampleCollector) Add(r *result.Request) {
	s := RequestSample{Index: r.Index, OK: r.OK(), TTFTMs: -1, WallMs: float64(r.End-r.Start) / 1e6, Tokens: r.VisibleCount()}
	if first, ok := r.FirstVisible(); ok && r.Sent > 0 {
		s.TTFTMs = float64(first.Arrived-r.Sent) / 1e6
	}
	c.seen++
	if len(c.requests) < MaxRequestSamples {
		c.requests = append(c.requests, s)
	} else if j := c.rng.IntN(c.seen); j < MaxRequestSamples {
		c.requests[j] = s
	}

	mean, ok := meanEmitRecv(r)
	if !ok {
		return
	}
	c.withSeries++
	if c.fastest == nil || mean < c.fastest.meanNs {
		c.fastest = &candidate{mean, seriesOf(r)}
	}
	if c.slowest == nil || mean > c.slowest.meanNs {
		c.slowest = &candidate{mean, seriesOf(r)}
	}
	if len(c.middle) < medianCandidates {
		c.middle = append(c.middle, &candidate{mean, seriesOf(r)})
	} else if j := c.rng.IntN(c.withSeries); j < medianCandidates {
		c.middle[j] = &candidate{mean, seriesOf(r)}
	}
}

// Samples returns what was collected: requests in index order, and the
// fastest, median and slowest series (fewer when fewer requests had
// stamped tokens; one series serves several labels only once).
func (c *SampleCollector) Samples() Samples {
	var s Samples
	s.Requests = append([]RequestSample(nil), c.requests...)
	sort.Slice(s.Requests, func(i, j int) bool { return s.Requests[i].Index < s.Requests[j].Index })
	s.Sampled = c.seen > len(c.requests)
	if c.fastest == nil {
		return s
	}
	mid := append([]*candidate(nil), c.middle...)
	sort.Slice(mid, func(i, j int) bool { return mid[i].meanNs < mid[j].meanNs })
	median := mid[len(mid)/2]
	used := map[int]bool{}
	for _, lc := range []struct {
		label string
		c     *candidate
	}{{"fastest", c.fastest}, {"median", median}, {"slowest", c.slowest}} {
		if used[lc.c.series.Index] {
			continue
		}
		used[lc.c.series.Index] = true
		ser := lc.c.series
		ser.Label = lc.label
		s.Series = append(s.Series, ser)
	}
	return s
}

// meanEmitRecv is the mean one-way delay of the request's stamped tokens.
func meanEmitRecv(r *result.Request) (float64, bool) {
	var sum float64
	n := 0
	for _, t := range r.Tokens {
		if t.Emitted != 0 {
			sum += float64(t.Arrived - t.Emitted)
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// seriesOf turns the request's stamped tokens into points (arrival since
// sent, emit->recv), downsampled to MaxSeriesPoints keeping each bucket's
// largest delay, so that bursts stay visible.
func seriesOf(r *result.Request) Series {
	s := Series{Index: r.Index, Tokens: len(r.Tokens)}
	pts := make([][2]float64, 0, min(len(r.Tokens), MaxSeriesPoints))
	stride := (len(r.Tokens) + MaxSeriesPoints - 1) / MaxSeriesPoints
	stride = max(stride, 1)
	for i := 0; i < len(r.Tokens); i += stride {
		best := -1
		for j := i; j < min(i+stride, len(r.Tokens)); j++ {
			t := r.Tokens[j]
			if t.Emitted == 0 {
				continue
			}
			if best < 0 || t.Arrived-t.Emitted > r.Tokens[best].Arrived-r.Tokens[best].Emitted {
				best = j
			}
		}
		if best >= 0 {
			t := r.Tokens[best]
			pts = append(pts, [2]float64{float64(t.Arrived-r.Sent) / 1e6, float64(t.Arrived-t.Emitted) / 1e6})
		}
	}
	s.Points = pts
	return s
}
