// Package svg draws the charts of the HTML report as hand-written SVG: line,
// step (CDF) and histogram series on linear or log axes, with ticks, grid,
// axis labels, a legend and a "no samples" note for a chart without data.
//
// Why not a plotting library: the report needs four simple charts — lines,
// step CDFs, bars and axes with ticks — which take a few hundred lines of
// Go. A library such as gonum.org/v1/plot brings fonts, rasterisers and
// their dependencies for that, and its SVG embeds font metrics and
// generated ids. This package's output is small, has no ids (so any number
// of charts share a page), no external reference and no script, and is a
// pure function of the Chart: byte-for-byte deterministic, so the report is
// golden-tested.
//
// The output is meant to be inlined in an HTML5 page, which needs no
// namespace declaration: the <svg> element carries none, so the page holds
// no URL at all. It is well-formed XML all the same.
package svg

import (
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// Point is one data point, in the axes' units.
type Point struct{ X, Y float64 }

// Kind is how a series is drawn.
type Kind int

// The kinds of series.
const (
	// Line joins consecutive points with straight segments.
	Line Kind = iota
	// Step draws a step function: each point's Y holds until the next
	// point's X (a CDF).
	Step
	// Bars draws a histogram as a filled outline rising from 0: point i's Y
	// is the height of the bin from its X to point i+1's X; the last
	// point's X only closes the last bin.
	Bars
)

// Series is one named set of points. Series of more than MaxPoints points
// (except Bars) are drawn downsampled (see Downsample).
type Series struct {
	Name    string // in the legend
	Kind    Kind
	Color   string // an SVG colour such as "#1f77b4"
	Dashed  bool
	Markers bool // a dot on each point, when there are at most MarkerLimit of them
	Points  []Point
}

// Axis describes one axis.
type Axis struct {
	Label    string // the quantity and its unit: "emit->recv (ms)"
	Log      bool   // log10 scale (non-positive values sit at the low end)
	Min, Max float64
	// Zero includes 0 in a linear range taken from the data.
	Zero bool
}

// Chart is one chart. The axes' ranges are Min..Max when Min < Max;
// otherwise they are taken from the data and widened to whole ticks.
type Chart struct {
	Title  string
	X, Y   Axis
	Series []Series
	// Note replaces the plot when no series has a point; empty means
	// "no samples".
	Note string
}

// Geometry of a chart, in SVG user units (the page may scale them).
const (
	Width       = 640
	Height      = 360
	EmptyHeight = 110 // height of a chart without data

	marginLeft   = 64
	marginRight  = 176 // the legend sits there
	marginTop    = 36
	marginBottom = 50
)

// Limits on what one chart draws.
const (
	MaxPoints   = 1000 // points per series before downsampling
	MarkerLimit = 200  // dots per series at most
)

// Colours of the frame, grid and text.
const (
	gridColor  = "#e6e6e6"
	axisColor  = "#555"
	textColor  = "#222"
	mutedColor = "#777"
)

// fontFamily lists fonts present on the CI machine (fonts-dejavu-core) and
// on most desktops.
const fontFamily = "DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif"

// WriteSVG writes the chart as one <svg> element.
func (c *Chart) WriteSVG(w io.Writer) error {
	_, err := io.WriteString(w, c.String())
	return err
}

// String returns the chart as one <svg> element.
func (c *Chart) String() string {
	var b strings.Builder
	series := c.drawable()
	if len(series) == 0 {
		c.writeEmpty(&b)
		return b.String()
	}
	xs := c.X.scale(series, func(p Point) float64 { return p.X }, false, marginLeft, Width-marginRight)
	ys := c.Y.scale(series, func(p Point) float64 { return p.Y }, hasBars(series), Height-marginBottom, marginTop)

	c.open(&b, Height, "chart")
	c.writeAxes(&b, xs, ys)
	b.WriteString(`<g class="series" fill="none" stroke-width="1.6" stroke-linejoin="round">`)
	for _, s := range series {
		writeSeries(&b, s, xs.Scale, ys.Scale)
	}
	b.WriteString("</g>\n")
	writeLegend(&b, series)
	b.WriteString("</svg>")
	return b.String()
}

// drawable returns the series that have finite points, NaN and infinite
// points removed and long series downsampled.
func (c *Chart) drawable() []Series {
	var out []Series
	for _, s := range c.Series {
		pts := make([]Point, 0, len(s.Points))
		for _, p := range s.Points {
			if finite(p.X) && finite(p.Y) {
				pts = append(pts, p)
			}
		}
		if len(pts) == 0 || (s.Kind == Bars && len(pts) < 2) {
			continue
		}
		if s.Kind != Bars {
			pts = Downsample(pts, MaxPoints)
		}
		s.Points = pts
		out = append(out, s)
	}
	return out
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func hasBars(series []Series) bool {
	for _, s := range series {
		if s.Kind == Bars {
			return true
		}
	}
	return false
}

// open writes the <svg> start tag, the accessible title, the background
// and the visible title.
func (c *Chart) open(b *strings.Builder, height int, class string) {
	h := strconv.Itoa(height)
	b.WriteString(`<svg class="` + class + `" viewBox="0 0 ` + strconv.Itoa(Width) + ` ` + h +
		`" width="` + strconv.Itoa(Width) + `" height="` + h + `" role="img" font-family="` + fontFamily +
		`" font-size="11" fill="` + textColor + `">` + "\n")
	b.WriteString("<title>" + esc(c.Title) + "</title>\n")
	b.WriteString(`<rect width="` + strconv.Itoa(Width) + `" height="` + h + `" fill="#fff"/>` + "\n")
	b.WriteString(`<text class="chart-title" x="` + strconv.Itoa(marginLeft) + `" y="22" font-size="14" font-weight="bold">` +
		esc(c.Title) + "</text>\n")
}

// writeEmpty writes a short chart holding only the title and the note.
func (c *Chart) writeEmpty(b *strings.Builder) {
	note := c.Note
	if note == "" {
		note = "no samples"
	}
	c.open(b, EmptyHeight, "chart empty")
	b.WriteString(`<text class="note" x="` + strconv.Itoa(Width/2) + `" y="68" text-anchor="middle" font-size="13" fill="` +
		mutedColor + `">` + esc(note) + "</text>\n</svg>")
}

// axisScale is an axis's scale and ticks.
type axisScale struct {
	Scale
	ticks []float64
}

// scale computes an axis's range, ticks and pixel mapping. zero forces 0
// into a linear range from the data (bars rise from 0).
func (a Axis) scale(series []Series, get func(Point) float64, zero bool, from, to float64) axisScale {
	fixed := a.Min < a.Max && (!a.Log || a.Min > 0)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, p := range s.Points {
			v := get(p)
			if a.Log && v <= 0 {
				continue
			}
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if fixed {
		lo, hi = a.Min, a.Max
	}
	if lo > hi { // no usable value: log axis with non-positive data only
		lo, hi = 1, 1
	}
	var ticks []float64
	if a.Log {
		var nlo, nhi float64
		nlo, nhi, ticks = LogTicks(lo, hi)
		if !fixed {
			lo, hi = nlo, nhi
		}
	} else {
		if (a.Zero || zero) && !fixed {
			lo, hi = min(lo, 0), max(hi, 0)
		}
		var nlo, nhi float64
		nlo, nhi, ticks = LinearTicks(lo, hi, 5)
		if !fixed {
			lo, hi = nlo, nhi
		}
	}
	kept := ticks[:0]
	for _, t := range ticks {
		if t >= lo-1e-9*math.Abs(hi-lo) && t <= hi+1e-9*math.Abs(hi-lo) {
			kept = append(kept, t)
		}
	}
	return axisScale{Scale{Lo: lo, Hi: hi, Log: a.Log, From: from, To: to}, kept}
}

// writeAxes writes the grid, both axes with their ticks and labels, and the
// plot frame.
func (c *Chart) writeAxes(b *strings.Builder, xs, ys axisScale) {
	left, right := float64(marginLeft), float64(Width-marginRight)
	top, bottom := float64(marginTop), float64(Height-marginBottom)

	b.WriteString(`<g class="grid" stroke="` + gridColor + `" stroke-width="1">`)
	xGridLines(b, xs, top, bottom)
	for _, t := range ys.ticks {
		y := f1(ys.Map(t))
		b.WriteString(`<line x1="` + f1(left) + `" y1="` + y + `" x2="` + f1(right) + `" y2="` + y + `"/>`)
	}
	b.WriteString("</g>\n")
	writeXAxis(b, xs, bottom, c.X.Label)

	b.WriteString(`<g class="axis y" stroke="` + axisColor + `">`)
	b.WriteString(`<line x1="` + f1(left) + `" y1="` + f1(top) + `" x2="` + f1(left) + `" y2="` + f1(bottom) + `"/>`)
	for _, t := range ys.ticks {
		y := ys.Map(t)
		b.WriteString(`<line x1="` + f1(left-5) + `" y1="` + f1(y) + `" x2="` + f1(left) + `" y2="` + f1(y) + `"/>`)
		b.WriteString(`<text x="` + f1(left-8) + `" y="` + f1(y+4) + `" text-anchor="end" stroke="none">` + FormatTick(t) + `</text>`)
	}
	mid := f1((top + bottom) / 2)
	b.WriteString(`<text class="label" x="16" y="` + mid + `" transform="rotate(-90 16 ` + mid +
		`)" text-anchor="middle" font-size="12" stroke="none">` + esc(c.Y.Label) + `</text>`)
	b.WriteString("</g>\n")
}

// xGridLines writes a vertical grid line at each x tick, from top to
// bottom.
func xGridLines(b *strings.Builder, xs axisScale, top, bottom float64) {
	for _, t := range xs.ticks {
		x := f1(xs.Map(t))
		b.WriteString(`<line x1="` + x + `" y1="` + f1(top) + `" x2="` + x + `" y2="` + f1(bottom) + `"/>`)
	}
}

// writeXAxis writes the x axis along bottom, its ticks and its label.
func writeXAxis(b *strings.Builder, xs axisScale, bottom float64, label string) {
	left, right := float64(marginLeft), float64(Width-marginRight)
	b.WriteString(`<g class="axis x" stroke="` + axisColor + `">`)
	b.WriteString(`<line x1="` + f1(left) + `" y1="` + f1(bottom) + `" x2="` + f1(right) + `" y2="` + f1(bottom) + `"/>`)
	for _, t := range xs.ticks {
		x := f1(xs.Map(t))
		b.WriteString(`<line x1="` + x + `" y1="` + f1(bottom) + `" x2="` + x + `" y2="` + f1(bottom+5) + `"/>`)
		b.WriteString(`<text x="` + x + `" y="` + f1(bottom+17) + `" text-anchor="middle" stroke="none">` + FormatTick(t) + `</text>`)
	}
	b.WriteString(`<text class="label" x="` + f1((left+right)/2) + `" y="` + f1(bottom+38) +
		`" text-anchor="middle" font-size="12" stroke="none">` + esc(label) + `</text>`)
	b.WriteString("</g>\n")
}

// writeSeries writes one series as a <path>, and its markers.
func writeSeries(b *strings.Builder, s Series, xs, ys Scale) {
	var d strings.Builder
	pts := s.Points
	switch s.Kind {
	case Step:
		for i, p := range pts {
			x, y := f1(xs.Map(p.X)), f1(ys.Map(p.Y))
			if i == 0 {
				d.WriteString("M" + x + "," + y)
				continue
			}
			d.WriteString("H" + x + "V" + y)
		}
	case Bars:
		base := f1(ys.Map(0))
		d.WriteString("M" + f1(xs.Map(pts[0].X)) + "," + base)
		for i := 0; i+1 < len(pts); i++ {
			d.WriteString("V" + f1(ys.Map(pts[i].Y)) + "H" + f1(xs.Map(pts[i+1].X)))
		}
		d.WriteString("V" + base + "Z")
	default:
		for i, p := range pts {
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			d.WriteString(cmd + f1(xs.Map(p.X)) + "," + f1(ys.Map(p.Y)))
		}
	}
	b.WriteString(`<path class="line" d="` + d.String() + `" stroke="` + esc(s.Color) + `"`)
	if s.Kind == Bars {
		b.WriteString(` fill="` + esc(s.Color) + `" fill-opacity="0.3"`)
	}
	if s.Dashed {
		b.WriteString(` stroke-dasharray="6 3"`)
	}
	b.WriteString("/>\n")
	if s.Markers && len(pts) <= MarkerLimit {
		b.WriteString(`<g fill="` + esc(s.Color) + `" stroke="none">`)
		for _, p := range pts {
			b.WriteString(`<circle cx="` + f1(xs.Map(p.X)) + `" cy="` + f1(ys.Map(p.Y)) + `" r="2.2"/>`)
		}
		b.WriteString("</g>\n")
	}
}

// writeLegend writes the legend, one line per series, right of the plot.
func writeLegend(b *strings.Builder, series []Series) {
	x := float64(Width - marginRight + 14)
	b.WriteString(`<g class="legend" font-size="11">`)
	for i, s := range series {
		y := float64(marginTop+10) + 18*float64(i)
		if s.Kind == Bars {
			b.WriteString(`<rect x="` + f1(x) + `" y="` + f1(y-5) + `" width="20" height="10" fill="` + esc(s.Color) +
				`" fill-opacity="0.3" stroke="` + esc(s.Color) + `"/>`)
		} else {
			b.WriteString(`<line x1="` + f1(x) + `" y1="` + f1(y) + `" x2="` + f1(x+20) + `" y2="` + f1(y) +
				`" stroke="` + esc(s.Color) + `" stroke-width="2"`)
			if s.Dashed {
				b.WriteString(` stroke-dasharray="6 3"`)
			}
			b.WriteString("/>")
		}
		b.WriteString(`<text x="` + f1(x+26) + `" y="` + f1(y+4) + `">` + esc(s.Name) + `</text>`)
	}
	b.WriteString("</g>\n")
}

// f1 prints a coordinate with one decimal.
func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// esc escapes text for an XML text node or attribute value.
func esc(s string) string { return html.EscapeString(s) }
