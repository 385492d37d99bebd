package svg

import (
	"strconv"
	"strings"
)

// Timeline is a chart of rows along one time axis: each row a labelled
// line of coloured spans (the phases of an answer, say) and marks (an
// instant: the response head). The legend names the spans' and marks'
// kinds, each once, in order of first appearance.
type Timeline struct {
	Title string
	X     Axis // linear; its range from the data (0 included) unless Min < Max
	Rows  []Row
	// Note replaces the plot when no row has a span or a mark; empty
	// means "no samples".
	Note string
}

// Row is one line of a Timeline.
type Row struct {
	Label string
	Spans []Span
	Marks []Mark
}

// Span is a stretch of a row, From to To (From <= To, else it is left
// out), in the axis's units.
type Span struct {
	Name  string // in the legend
	Color string
	From  float64
	To    float64
}

// Mark is an instant of a row, drawn as a vertical stroke across it.
type Mark struct {
	Name  string // in the legend
	Color string
	At    float64
}

// Geometry of a Timeline's rows.
const (
	rowHeight  = 34
	spanHeight = 16
)

// String returns the chart as one <svg> element.
func (c *Timeline) String() string {
	var b strings.Builder
	head := &Chart{Title: c.Title, Note: c.Note}
	rows, pts := c.drawable()
	if len(pts) == 0 {
		head.writeEmpty(&b)
		return b.String()
	}
	height := marginTop + 10 + rowHeight*len(rows) + marginBottom
	bottom := float64(height - marginBottom)
	axis := c.X
	axis.Log, axis.Zero = false, true
	xs := axis.scale([]Series{{Points: pts}}, func(p Point) float64 { return p.X }, true, marginLeft, Width-marginRight)

	head.open(&b, height, "chart timeline")
	b.WriteString(`<g class="grid" stroke="` + gridColor + `" stroke-width="1">`)
	xGridLines(&b, xs, marginTop, bottom)
	b.WriteString("</g>\n")
	writeXAxis(&b, xs, bottom, c.X.Label)
	var legend []Series
	seen := map[string]bool{}
	addLegend := func(s Series) {
		if !seen[s.Name] {
			seen[s.Name] = true
			legend = append(legend, s)
		}
	}
	for i, r := range rows {
		mid := float64(marginTop+10+rowHeight*i) + rowHeight/2
		b.WriteString(`<g class="row">`)
		b.WriteString(`<text x="` + f1(marginLeft-8) + `" y="` + f1(mid+4) + `" text-anchor="end">` + esc(r.Label) + `</text>`)
		for _, s := range r.Spans {
			x0, x1 := xs.Map(s.From), xs.Map(s.To)
			b.WriteString(`<rect x="` + f1(x0) + `" y="` + f1(mid-spanHeight/2) + `" width="` + f1(max(x1-x0, 1)) +
				`" height="` + strconv.Itoa(spanHeight) + `" fill="` + esc(s.Color) + `" fill-opacity="0.6" stroke="` + esc(s.Color) + `"/>`)
			addLegend(Series{Name: s.Name, Color: s.Color, Kind: Bars})
		}
		for _, m := range r.Marks {
			x := f1(xs.Map(m.At))
			b.WriteString(`<line x1="` + x + `" y1="` + f1(mid-rowHeight/2+3) + `" x2="` + x + `" y2="` + f1(mid+rowHeight/2-3) +
				`" stroke="` + esc(m.Color) + `" stroke-width="2"/>`)
			addLegend(Series{Name: m.Name, Color: m.Color, Kind: Line})
		}
		b.WriteString("</g>\n")
	}
	writeLegend(&b, legend)
	b.WriteString("</svg>")
	return b.String()
}

// drawable returns the rows with their finite spans (From <= To) and
// marks, and every x they use.
func (c *Timeline) drawable() ([]Row, []Point) {
	var rows []Row
	var pts []Point
	for _, r := range c.Rows {
		out := Row{Label: r.Label}
		for _, s := range r.Spans {
			if finite(s.From) && finite(s.To) && s.From <= s.To {
				out.Spans = append(out.Spans, s)
				pts = append(pts, Point{X: s.From}, Point{X: s.To})
			}
		}
		for _, m := range r.Marks {
			if finite(m.At) {
				out.Marks = append(out.Marks, m)
				pts = append(pts, Point{X: m.At})
			}
		}
		rows = append(rows, out)
	}
	return rows, pts
}
