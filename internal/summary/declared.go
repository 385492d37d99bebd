package summary

import (
	"math"
	"strconv"
	"strings"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/wire"
)

// Sources of declared timings (Declared.Source): the headers, and each
// Server-Timing metric as DeclaredServerTiming followed by its name.
const (
	DeclaredLiteLLM      = "x-litellm-overhead-duration-ms"
	DeclaredKongProxy    = "x-kong-proxy-latency"
	DeclaredKongUpstream = "x-kong-upstream-latency"
	DeclaredServerTiming = "server-timing:"
)

// MaxDeclaredSources bounds the distinct sources a batch keeps (each holds
// a histogram): the three headers and the first Server-Timing metric names
// seen; metrics of further names are counted in DeclaredTimings.Dropped.
const MaxDeclaredSources = 16

// DeclaredTimings are the timings a gateway declared of itself in its
// response heads — LiteLLM's x-litellm-overhead-duration-ms, Kong's
// X-Kong-Proxy-Latency and X-Kong-Upstream-Latency, the durations of
// Server-Timing — over the requests of a batch, to set beside what the
// tool observed. A gateway's own account misses what happens before its
// handler runs (accept queues, TLS, parsing) and after it hands bytes on;
// the difference with the observed overhead is that part.
type DeclaredTimings struct {
	Heads   int        `json:"heads"`   // requests (warm-ups left out) that received a response head
	Figures []Declared `json:"figures"` // one per source, in the order first seen
	Dropped int        `json:"dropped"` // Server-Timing durations of names beyond MaxDeclaredSources, ignored
}

// Declared is one declared timing over a batch: the values its requests'
// heads gave, in milliseconds as the headers state them.
type Declared struct {
	// Source is the header (lower case), or "server-timing:" and the
	// metric's name.
	Source string `json:"source"`
	// Overhead is true for the headers that state the gateway's own
	// overhead (LiteLLM's, Kong's proxy latency); the others time
	// something else (the upstream, or what a Server-Timing metric names).
	Overhead bool   `json:"overhead"`
	Requests int    `json:"requests"` // heads that declared it with a valid value
	Invalid  int    `json:"invalid"`  // heads that declared it with a value that is not a finite number >= 0
	Missing  int    `json:"missing"`  // heads (DeclaredTimings.Heads) that did not declare it
	Metric   Metric `json:"metric"`   // the valid values
}

// DeclaredCollector gathers a batch's declared timings from its records.
type DeclaredCollector struct {
	heads   int
	dropped int
	order   []string
	by      map[string]*declaredEntry
}

type declaredEntry struct {
	overhead          bool
	requests, invalid int
	m                 *stats.Metric
}

// NewDeclaredCollector returns an empty DeclaredCollector.
func NewDeclaredCollector() *DeclaredCollector {
	return &DeclaredCollector{by: make(map[string]*declaredEntry)}
}

// Add folds in the timing headers of one request that received a response
// head (others are not counted).
func (c *DeclaredCollector) Add(r *result.Request) {
	if r.HeadAt == 0 {
		return
	}
	c.heads++
	t := r.Timing
	if t.Empty() {
		return
	}
	c.header(DeclaredLiteLLM, true, t.LiteLLMOverhead)
	c.header(DeclaredKongProxy, true, t.KongProxy)
	c.header(DeclaredKongUpstream, false, t.KongUpstream)
	if t.ServerTiming == "" {
		return
	}
	seen := map[string]bool{} // a metric named twice counts once per request, its first duration
	for _, m := range wire.ParseServerTiming(t.ServerTiming) {
		name := DeclaredServerTiming + m.Name
		if !m.HasDur || seen[name] {
			continue
		}
		seen[name] = true
		if e := c.entry(name, false); e != nil {
			e.record(m.Dur)
		}
	}
}

// header folds in one header's raw value ("" when absent).
func (c *DeclaredCollector) header(source string, overhead bool, raw string) {
	if raw == "" {
		return
	}
	e := c.entry(source, overhead)
	if e == nil {
		return
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		e.invalid++
		return
	}
	e.record(v)
}

// entry returns the entry of source, created if there is room; nil (and
// counted as dropped) when the batch has MaxDeclaredSources already.
func (c *DeclaredCollector) entry(source string, overhead bool) *declaredEntry {
	if e := c.by[source]; e != nil {
		return e
	}
	if len(c.order) == MaxDeclaredSources {
		c.dropped++
		return nil
	}
	e := &declaredEntry{overhead: overhead, m: stats.NewMetric()}
	c.by[source] = e
	c.order = append(c.order, source)
	return e
}

// record adds a declared duration in milliseconds; a negative Server-Timing
// duration counts as invalid.
func (e *declaredEntry) record(ms float64) {
	if ms < 0 || ms > float64(stats.HistogramHighestNs)/nsPerMs {
		e.invalid++
		return
	}
	e.requests++
	e.m.Record(int64(math.Round(ms * nsPerMs)))
}

// Timings returns what was gathered; nil when no head declared anything.
func (c *DeclaredCollector) Timings() *DeclaredTimings {
	if len(c.order) == 0 && c.dropped == 0 {
		return nil
	}
	d := &DeclaredTimings{Heads: c.heads, Figures: []Declared{}, Dropped: c.dropped}
	for _, s := range c.order {
		e := c.by[s]
		d.Figures = append(d.Figures, Declared{Source: s, Overhead: e.overhead, Requests: e.requests, Invalid: e.invalid,
			Missing: c.heads - e.requests - e.invalid, Metric: NewMetric(e.m)})
	}
	return d
}

// MergeDeclared combines the declared timings of the same batch in several
// runs: heads and counts summed, each source's values merged exactly, a
// source a run did not see counted missing in all that run's heads. It
// returns nil when no run has any, and ok false when a run lacks them
// while another has them (the heads of a run without declared timings are
// not recorded), or a histogram does not rebuild.
func MergeDeclared(list []*DeclaredTimings) (out *DeclaredTimings, ok bool) {
	var have int
	for _, d := range list {
		if d != nil {
			have++
		}
	}
	switch {
	case have == 0:
		return nil, true
	case have < len(list):
		return nil, false
	}
	out = &DeclaredTimings{Figures: []Declared{}}
	merged := map[string]*stats.Metric{}
	var order []string
	figure := map[string]*Declared{}
	for _, d := range list {
		out.Heads += d.Heads
		out.Dropped += d.Dropped
		for _, f := range d.Figures {
			m, err := f.Metric.Stats()
			if err != nil {
				return nil, false
			}
			if figure[f.Source] == nil {
				figure[f.Source] = &Declared{Source: f.Source, Overhead: f.Overhead}
				merged[f.Source] = stats.NewMetric()
				order = append(order, f.Source)
			}
			g := figure[f.Source]
			g.Requests += f.Requests
			g.Invalid += f.Invalid
			merged[f.Source].Merge(m)
		}
	}
	for _, s := range order {
		g := figure[s]
		g.Missing = out.Heads - g.Requests - g.Invalid
		g.Metric = NewMetric(merged[s])
		out.Figures = append(out.Figures, *g)
	}
	return out, true
}
