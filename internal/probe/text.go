package probe

import (
	"bytes"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// contentType is the media type of Prometheus's text exposition format,
// version 0.0.4, which every Prometheus-compatible scraper reads.
const contentType = "text/plain; version=0.0.4; charset=utf-8"

// kind is a family's metric type, as its # TYPE line names it.
type kind string

// The metric types the probe has.
const (
	counter   kind = "counter"
	gauge     kind = "gauge"
	histogram kind = "histogram"
)

// family is one metric family: its series by label values. It has no lock
// of its own: Metrics holds one for all of its families.
type family struct {
	name, help string
	kind       kind
	labels     []string  // label names, in the order of every series' values
	bounds     []float64 // a histogram's bucket upper bounds, ascending, without +Inf
	series     map[string]*series
}

// series is one sample set of a family: a counter's or a gauge's value, or
// a histogram's buckets, sum and count.
type series struct {
	values []string // label values, by family.labels
	value  float64  // counter, gauge
	counts []uint64 // histogram: observations per bucket (not cumulative); the last is +Inf's own
	sum    float64  // histogram
	count  uint64   // histogram
}

// newFamily returns a counter or gauge family without series; one of no
// labels has its one series at once (at 0), as every such family is shown.
// The label names are sorted, as Prometheus writes them.
func newFamily(name, help string, k kind, labels ...string) *family {
	return makeFamily(name, help, k, nil, labels)
}

// newHistogram returns a histogram family of the bucket upper bounds
// (ascending).
func newHistogram(name, help string, bounds []float64, labels ...string) *family {
	return makeFamily(name, help, histogram, bounds, labels)
}

// makeFamily makes the families of newFamily and newHistogram.
func makeFamily(name, help string, k kind, bounds []float64, labels []string) *family {
	f := &family{name: name, help: help, kind: k, labels: labels, bounds: bounds, series: make(map[string]*series)}
	if len(labels) == 0 {
		f.with()
	}
	return f
}

// with returns the series of the label values (one per label name),
// created at zero when it is new.
func (f *family) with(values ...string) *series {
	key := strings.Join(values, "\xff")
	s := f.series[key]
	if s == nil {
		s = &series{values: slices.Clone(values)}
		if f.kind == histogram {
			s.counts = make([]uint64, len(f.bounds)+1)
		}
		f.series[key] = s
	}
	return s
}

// observe adds v to the histogram series s of bounds: in the first bucket
// whose upper bound is >= v (le), +Inf's when there is none.
func (s *series) observe(bounds []float64, v float64) {
	s.counts[sort.SearchFloat64s(bounds, v)]++
	s.sum += v
	s.count++
}

// writeText appends fams to b in the text exposition format 0.0.4:
// families sorted by name, a family's series by label values, a family
// without series left out (as Prometheus's client library does).
func writeText(b *bytes.Buffer, fams []*family) {
	fams = slices.Clone(fams)
	slices.SortFunc(fams, func(x, y *family) int { return strings.Compare(x.name, y.name) })
	for _, f := range fams {
		if len(f.series) == 0 {
			continue
		}
		b.WriteString("# HELP ")
		b.WriteString(f.name)
		b.WriteByte(' ')
		writeEscaped(b, f.help, false)
		b.WriteString("\n# TYPE ")
		b.WriteString(f.name)
		b.WriteByte(' ')
		b.WriteString(string(f.kind))
		b.WriteByte('\n')
		all := make([]*series, 0, len(f.series))
		for _, s := range f.series {
			all = append(all, s)
		}
		slices.SortFunc(all, func(x, y *series) int { return slices.Compare(x.values, y.values) })
		for _, s := range all {
			if f.kind != histogram {
				writeSample(b, f.name, f.labels, s.values, "", 0, s.value)
				continue
			}
			var cum uint64
			for i, n := range s.counts {
				cum += n
				le := math.Inf(1)
				if i < len(f.bounds) {
					le = f.bounds[i]
				}
				writeSample(b, f.name+"_bucket", f.labels, s.values, "le", le, float64(cum))
			}
			writeSample(b, f.name+"_sum", f.labels, s.values, "", 0, s.sum)
			writeSample(b, f.name+"_count", f.labels, s.values, "", 0, float64(s.count))
		}
	}
}

// writeSample appends one sample line: name, the labels (and le, when
// extra names it, with the value le), the value.
func writeSample(b *bytes.Buffer, name string, labels, values []string, extra string, le, v float64) {
	b.WriteString(name)
	if len(labels) > 0 || extra != "" {
		b.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(l)
			b.WriteString(`="`)
			writeEscaped(b, values[i], true)
			b.WriteByte('"')
		}
		if extra != "" {
			if len(labels) > 0 {
				b.WriteByte(',')
			}
			b.WriteString(extra)
			b.WriteString(`="`)
			b.WriteString(formatFloat(le))
			b.WriteByte('"')
		}
		b.WriteByte('}')
	}
	b.WriteByte(' ')
	b.WriteString(formatFloat(v))
	b.WriteByte('\n')
}

// writeEscaped appends s with backslash and newline escaped, and the
// double quote too in a label value.
func writeEscaped(b *bytes.Buffer, s string, label bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '"' && label:
			b.WriteString(`\"`)
		default:
			b.WriteByte(c)
		}
	}
}

// formatFloat writes v as Prometheus does: +Inf, -Inf, NaN, otherwise the
// shortest representation that reads back exactly.
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
