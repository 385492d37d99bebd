package summary

import (
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
)

// Sizes is a batch's time to first token and token delay by request size:
// by the prompt's bytes and by the output's tokens — where a gateway's
// cost grows with the body it reads or the answer it relays. Each list
// holds the buckets that had requests, smallest first.
type Sizes struct {
	Prompt []SizeBucket `json:"prompt"` // by prompt size, bytes
	Output []SizeBucket `json:"output"` // by output size, tokens asked for
}

// SizeBucket is the requests of one size range, [Lo, Hi) (Hi 0: no upper
// bound): how many, their time to first token, and the one-way delay of
// their tokens after the first.
type SizeBucket struct {
	Lo       int    `json:"lo"`
	Hi       int    `json:"hi"`
	Requests int    `json:"requests"`
	TTFT     Metric `json:"ttft"`
	EmitRecv Metric `json:"emit_recv"`
}

// The bucket bounds: the prompt's bytes in powers of four from 1 KiB to
// the 4 MiB at most a prompt is, the output's tokens in powers of four
// from 16.
var (
	PromptBounds = []int{1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20}
	OutputBounds = []int{16, 64, 256, 1024, 4096}
)

// sizeStats are the figures of one bucket while a batch runs.
type sizeStats struct {
	requests       int
	ttft, emitRecv *stats.Metric
}

// SizeCollector gathers a batch's figures by size, once per finished
// request.
type SizeCollector struct {
	prompt, output []sizeStats // one per bucket: len(bounds)+1
}

// NewSizeCollector returns an empty SizeCollector.
func NewSizeCollector() *SizeCollector {
	return &SizeCollector{prompt: make([]sizeStats, len(PromptBounds)+1), output: make([]sizeStats, len(OutputBounds)+1)}
}

// bucketOf is the bucket of v among bounds.
func bucketOf(v int, bounds []int) int {
	for i, b := range bounds {
		if v < b {
			return i
		}
	}
	return len(bounds)
}

// Add folds one request in: an ok request of known size (its record
// says what it sent and asked for).
func (c *SizeCollector) Add(r *result.Request) {
	if !r.OK() || r.PromptBytes == 0 {
		return
	}
	p := &c.prompt[bucketOf(r.PromptBytes, PromptBounds)]
	o := &c.output[bucketOf(r.AskedTokens, OutputBounds)]
	for _, s := range []*sizeStats{p, o} {
		s.requests++
		if s.ttft == nil {
			s.ttft, s.emitRecv = stats.NewMetric(), stats.NewMetric()
		}
	}
	first := true
	for _, t := range r.Visible() {
		switch {
		case first && r.Sent > 0:
			d := t.Arrived - r.Sent
			p.ttft.Record(d)
			o.ttft.Record(d)
		case !first && t.Emitted != 0:
			d := t.Arrived - t.Emitted
			p.emitRecv.Record(d)
			o.emitRecv.Record(d)
		}
		first = false
	}
}

// Sizes returns the summary of what c gathered; nil when no request of
// known size finished ok.
func (c *SizeCollector) Sizes() *Sizes {
	s := &Sizes{Prompt: buckets(c.prompt, PromptBounds), Output: buckets(c.output, OutputBounds)}
	if len(s.Prompt) == 0 {
		return nil
	}
	return s
}

func buckets(all []sizeStats, bounds []int) []SizeBucket {
	out := []SizeBucket{}
	for i, s := range all {
		if s.requests == 0 {
			continue
		}
		b := SizeBucket{Requests: s.requests, TTFT: NewMetric(s.ttft), EmitRecv: NewMetric(s.emitRecv)}
		if i > 0 {
			b.Lo = bounds[i-1]
		}
		if i < len(bounds) {
			b.Hi = bounds[i]
		}
		out = append(out, b)
	}
	return out
}

// Varied reports whether the requests spread over more than one bucket of
// either kind: what makes the breakdown worth a table in the text report.
func (s *Sizes) Varied() bool {
	return s != nil && (len(s.Prompt) > 1 || len(s.Output) > 1)
}

// MergeSizes merges the size breakdowns of parallel runs' batches, bucket
// by bucket, from their histograms; nil when none has one. ok is false
// when a histogram does not merge (a damaged document).
func MergeSizes(all []*Sizes) (*Sizes, bool) {
	var out *Sizes
	for _, s := range all {
		if s == nil {
			continue
		}
		if out == nil {
			out = &Sizes{Prompt: []SizeBucket{}, Output: []SizeBucket{}}
		}
		var ok bool
		if out.Prompt, ok = mergeBuckets(out.Prompt, s.Prompt); !ok {
			return nil, false
		}
		if out.Output, ok = mergeBuckets(out.Output, s.Output); !ok {
			return nil, false
		}
	}
	return out, true
}

// mergeBuckets adds the buckets of b into a (both sorted by Lo).
func mergeBuckets(a, b []SizeBucket) ([]SizeBucket, bool) {
	for _, x := range b {
		i := 0
		for i < len(a) && a[i].Lo < x.Lo {
			i++
		}
		if i < len(a) && a[i].Lo == x.Lo {
			m, ok := mergeBucket(a[i], x)
			if !ok {
				return nil, false
			}
			a[i] = m
			continue
		}
		a = append(a[:i], append([]SizeBucket{x}, a[i:]...)...)
	}
	return a, true
}

func mergeBucket(a, b SizeBucket) (SizeBucket, bool) {
	out := SizeBucket{Lo: a.Lo, Hi: a.Hi, Requests: a.Requests + b.Requests}
	for _, m := range []struct {
		into *Metric
		x, y Metric
	}{{&out.TTFT, a.TTFT, b.TTFT}, {&out.EmitRecv, a.EmitRecv, b.EmitRecv}} {
		x, err := m.x.Stats()
		if err != nil {
			return out, false
		}
		y, err := m.y.Stats()
		if err != nil {
			return out, false
		}
		x.Merge(y)
		*m.into = NewMetric(x)
	}
	return out, true
}
