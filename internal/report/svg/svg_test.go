package svg

import (
	"encoding/xml"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestScaleMap(t *testing.T) {
	tests := []struct {
		s    Scale
		v    float64
		want float64
	}{
		{Scale{Lo: 0, Hi: 10, From: 100, To: 200}, 0, 100},
		{Scale{Lo: 0, Hi: 10, From: 100, To: 200}, 10, 200},
		{Scale{Lo: 0, Hi: 10, From: 100, To: 200}, 2.5, 125},
		{Scale{Lo: 0, Hi: 10, From: 300, To: 100}, 2.5, 250}, // inverted, as a y axis
		{Scale{Lo: 0, Hi: 10, From: 100, To: 200}, -5, 100},  // clamped low
		{Scale{Lo: 0, Hi: 10, From: 100, To: 200}, 99, 200},  // clamped high
		{Scale{Lo: 5, Hi: 5, From: 100, To: 200}, 5, 150},    // empty range: middle
		{Scale{Lo: 0.01, Hi: 100, Log: true, From: 0, To: 400}, 0.01, 0},
		{Scale{Lo: 0.01, Hi: 100, Log: true, From: 0, To: 400}, 1, 200},
		{Scale{Lo: 0.01, Hi: 100, Log: true, From: 0, To: 400}, 10, 300},
		{Scale{Lo: 0.01, Hi: 100, Log: true, From: 0, To: 400}, 0, 0},     // non-positive at the low end
		{Scale{Lo: 0.01, Hi: 100, Log: true, From: 0, To: 400}, -3, 0},    // non-positive at the low end
		{Scale{Lo: 0.01, Hi: 100, Log: true, From: 0, To: 400}, 1e9, 400}, // clamped high
	}
	for _, tt := range tests {
		if got := tt.s.Map(tt.v); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%+v.Map(%g) = %g, want %g", tt.s, tt.v, got, tt.want)
		}
	}
}

func TestLinearTicks(t *testing.T) {
	tests := []struct {
		lo, hi   float64
		n        int
		wantLo   float64
		wantHi   float64
		wantTick []string
	}{
		{0, 1, 5, 0, 1, []string{"0", "0.2", "0.4", "0.6", "0.8", "1"}},
		{0, 97, 5, 0, 100, []string{"0", "20", "40", "60", "80", "100"}},
		{3.9, 6.1, 5, 3.5, 6.5, []string{"3.5", "4", "4.5", "5", "5.5", "6", "6.5"}},
		{0, 0.043, 5, 0, 0.05, []string{"0", "0.01", "0.02", "0.03", "0.04", "0.05"}},
		{-7, 12, 4, -10, 15, []string{"-10", "-5", "0", "5", "10", "15"}},
		{0, 0, 5, 0, 1, []string{"0", "0.2", "0.4", "0.6", "0.8", "1"}},              // empty at zero
		{5, 5, 5, 4.4, 5.6, []string{"4.4", "4.6", "4.8", "5", "5.2", "5.4", "5.6"}}, // empty: ±10 %
		{0, 1999, 5, 0, 2000, []string{"0", "500", "1000", "1500", "2000"}},
		{0, 1090, 5, 0, 1250, []string{"0", "250", "500", "750", "1000", "1250"}},
		{0, 0.11, 5, 0, 0.125, []string{"0", "0.025", "0.05", "0.075", "0.1", "0.125"}},
	}
	for _, tt := range tests {
		lo, hi, ticks := LinearTicks(tt.lo, tt.hi, tt.n)
		var got []string
		for _, v := range ticks {
			got = append(got, FormatTick(v))
		}
		if math.Abs(lo-tt.wantLo) > 1e-9 || math.Abs(hi-tt.wantHi) > 1e-9 || !slices.Equal(got, tt.wantTick) {
			t.Errorf("LinearTicks(%g, %g, %d) = %g, %g, %q; want %g, %g, %q",
				tt.lo, tt.hi, tt.n, lo, hi, got, tt.wantLo, tt.wantHi, tt.wantTick)
		}
	}
}

func TestLogTicks(t *testing.T) {
	tests := []struct {
		lo, hi   float64
		wantLo   float64
		wantHi   float64
		wantTick []string
	}{
		{0.015, 120, 0.01, 1000, []string{"0.01", "0.1", "1", "10", "100", "1000"}},
		{0.02, 0.09, 0.01, 0.1, []string{"0.01", "0.02", "0.05", "0.1"}},
		{1, 1, 1, 10, []string{"1", "2", "5", "10"}}, // one value: one decade
		{0.2, 30, 0.1, 100, []string{"0.1", "1", "10", "100"}},
		{0.2, 9, 0.1, 10, []string{"0.1", "0.2", "0.5", "1", "2", "5", "10"}},
		{0, 5, 0.1, 10, []string{"0.1", "0.2", "0.5", "1", "2", "5", "10"}}, // lo <= 0: hi/10
		{1e-6, 3.6e6, 1e-6, 1e7, []string{"1e-06", "0.0001", "0.01", "1", "100", "10000", "1e+06"}},
	}
	for _, tt := range tests {
		lo, hi, ticks := LogTicks(tt.lo, tt.hi)
		var got []string
		for _, v := range ticks {
			got = append(got, FormatTick(v))
		}
		if math.Abs(lo/tt.wantLo-1) > 1e-9 || math.Abs(hi/tt.wantHi-1) > 1e-9 || !slices.Equal(got, tt.wantTick) {
			t.Errorf("LogTicks(%g, %g) = %g, %g, %q; want %g, %g, %q", tt.lo, tt.hi, lo, hi, got, tt.wantLo, tt.wantHi, tt.wantTick)
		}
	}
}

func TestFormatTick(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{
		{0, "0"}, {math.Copysign(0, -1), "0"}, {0.1 * 3, "0.3"}, {0.001, "0.001"}, {2.5, "2.5"},
		{100000, "100000"}, {1e6, "1e+06"}, {1e-5, "1e-05"}, {-20, "-20"}, {1234.5678, "1234.57"},
	}
	for _, tt := range tests {
		if got := FormatTick(tt.v); got != tt.want {
			t.Errorf("FormatTick(%g) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestDownsample(t *testing.T) {
	// A flat series with one spike up and one down, far apart.
	pts := make([]Point, 10_000)
	for i := range pts {
		pts[i] = Point{float64(i), float64(i % 7)}
	}
	pts[1234].Y, pts[8765].Y = 1000, -1000
	got := Downsample(pts, 1000)
	if len(got) > 1000 {
		t.Fatalf("Downsample(10000 points, 1000) has %d points", len(got))
	}
	if !slices.ContainsFunc(got, func(p Point) bool { return p == Point{1234, 1000} }) ||
		!slices.ContainsFunc(got, func(p Point) bool { return p == Point{8765, -1000} }) {
		t.Errorf("Downsample(10000 points, 1000) lost a spike")
	}
	if !slices.IsSortedFunc(got, func(a, b Point) int { return int(a.X - b.X) }) {
		t.Errorf("Downsample(10000 points, 1000) is out of order")
	}
	// Every run keeps its own extremes: 0 and 6 appear all along.
	lows, highs := 0, 0
	for _, p := range got {
		switch p.Y {
		case 0:
			lows++
		case 6:
			highs++
		}
	}
	if lows < 490 || highs < 490 {
		t.Errorf("Downsample(10000 points, 1000) kept %d minima and %d maxima of 500 runs", lows, highs)
	}

	short := pts[:1000]
	if got := Downsample(short, 1000); len(got) != 1000 || &got[0] != &short[0] {
		t.Errorf("Downsample(1000 points, 1000) changed the series")
	}
	// A constant run keeps one point per run.
	flat := make([]Point, 3000)
	for i := range flat {
		flat[i] = Point{float64(i), 1}
	}
	if got := Downsample(flat, 100); len(got) != 50 {
		t.Errorf("Downsample(3000 constant points, 100) has %d points, want 50", len(got))
	}
	// The limit is at least 2.
	if got := Downsample(pts[:5], 0); len(got) != 2 {
		t.Errorf("Downsample(5 points, 0) has %d points, want 2", len(got))
	}
}

// checkXML decodes s as XML to its end and returns the number of start
// elements of each name.
func checkXML(t *testing.T, s string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	d := xml.NewDecoder(strings.NewReader(s))
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return counts
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, s)
		}
		if se, ok := tok.(xml.StartElement); ok {
			counts[se.Name.Local]++
		}
	}
}

func TestChart(t *testing.T) {
	c := Chart{
		Title: `emit->recv "CDF" & <more>`,
		X:     Axis{Label: "emit->recv (ms)", Log: true},
		Y:     Axis{Label: "share", Min: 0, Max: 1},
		Series: []Series{
			{Name: "loopback", Kind: Step, Color: "#1f77b4", Points: []Point{{0, 0}, {0.02, 0.5}, {0.03, 1}}},
			{Name: "gateway <gw>", Kind: Line, Color: "#d9480f", Dashed: true, Markers: true, Points: []Point{{1, 0.1}, {math.NaN(), 1}, {100, 1}}},
			{Name: "gaps", Kind: Bars, Color: "#2b8a3e", Points: []Point{{0.1, 0.2}, {1, 0.7}, {10, 0}}},
			{Name: "empty", Kind: Line, Color: "#000"},
		},
	}
	s := c.String()
	counts := checkXML(t, s)
	if counts["svg"] != 1 || counts["title"] != 1 || counts["path"] != 3 || counts["circle"] != 2 {
		t.Errorf("chart elements = %v; want 1 svg, 1 title, 3 paths, 2 circles", counts)
	}
	for _, want := range []string{
		`<title>emit-&gt;recv &#34;CDF&#34; &amp; &lt;more&gt;</title>`,
		`class="axis x"`, `class="axis y"`, `>0.01</text>`, `>100</text>`, `>0.2</text>`,
		`>gateway &lt;gw&gt;</text>`, `stroke-dasharray="6 3"`, `fill-opacity="0.3"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("chart lacks %s:\n%s", want, s)
		}
	}
	if strings.Contains(s, ">empty<") {
		t.Errorf("chart has a legend entry for a series without points")
	}
	if strings.Contains(s, "http") {
		t.Errorf("chart holds a URL:\n%s", s)
	}
	if s2 := c.String(); s2 != s {
		t.Errorf("two renderings of one chart differ")
	}
	var b strings.Builder
	if err := c.WriteSVG(&b); err != nil || b.String() != s {
		t.Errorf("WriteSVG = %v, or differs from String", err)
	}
}

func TestChartEmpty(t *testing.T) {
	for _, c := range []Chart{
		{Title: "nothing"},
		{Title: "nothing", Series: []Series{{Name: "a", Points: []Point{{math.Inf(1), 1}}}}},
		{Title: "one bar edge", Series: []Series{{Name: "a", Kind: Bars, Points: []Point{{1, 1}}}}},
		{Title: "note", Note: "no gateway batch"},
	} {
		s := c.String()
		counts := checkXML(t, s)
		want := "no samples"
		if c.Note != "" {
			want = c.Note
		}
		if counts["path"] != 0 || strings.Contains(s, `class="axis`) ||
			!strings.Contains(s, ">"+want+"</text>") || !strings.Contains(s, `class="chart empty"`) {
			t.Errorf("chart %q without data = %s; want the note %q and no axes or paths", c.Title, s, want)
		}
	}
}

func TestChartDownsamplesAndClamps(t *testing.T) {
	pts := make([]Point, 5000)
	for i := range pts {
		pts[i] = Point{float64(i), float64(i % 10)}
	}
	c := Chart{
		Title:  "long",
		X:      Axis{Label: "i", Min: 0, Max: 1000}, // fixed: most points beyond
		Y:      Axis{Label: "v", Zero: true},
		Series: []Series{{Name: "s", Kind: Line, Color: "#000", Points: pts}},
	}
	s := c.String()
	checkXML(t, s)
	start := strings.Index(s, ` d="`) + 4
	d := s[start : start+strings.Index(s[start:], `"`)]
	if n := strings.Count(d, "L") + 1; n > MaxPoints {
		t.Errorf("a series of 5000 points is drawn with %d points, want at most %d", n, MaxPoints)
	}
	for _, seg := range strings.FieldsFunc(d, func(r rune) bool { return r == 'M' || r == 'L' }) {
		x, err := strconv.ParseFloat(strings.SplitN(seg, ",", 2)[0], 64)
		if err != nil || x < marginLeft || x > Width-marginRight {
			t.Fatalf("point %q lies outside the plot area [%d, %d]", seg, marginLeft, Width-marginRight)
		}
	}
}

func TestTimeline(t *testing.T) {
	c := Timeline{
		Title: "phases <p50>",
		X:     Axis{Label: "since the request (ms)"},
		Rows: []Row{
			{Label: "loopback", Spans: []Span{{Name: "waiting", Color: "#aaa", From: 0, To: 0.1}, {Name: "text", Color: "#3b3", From: 0.1, To: 200}},
				Marks: []Mark{{Name: "head", Color: "#000", At: 0.1}}},
			{Label: "gateway <gw>", Spans: []Span{{Name: "waiting", Color: "#aaa", From: 0, To: 1050}, {Name: "text", Color: "#3b3", From: 1050, To: 1250},
				{Name: "backwards", Color: "#f00", From: 5, To: 4}, {Name: "nan", Color: "#f00", From: math.NaN(), To: 4}},
				Marks: []Mark{{Name: "head", Color: "#000", At: 1050}, {Name: "inf", At: math.Inf(1)}}},
		},
	}
	s := c.String()
	counts := checkXML(t, s)
	// 4 spans and 2 legend boxes; 2 marks and 1 legend line.
	if counts["svg"] != 1 || counts["rect"] != 1+4+2 || counts["line"] < 2+1 || counts["g"] < 2 {
		t.Errorf("timeline elements = %v; want 1 svg, 7 rects (background, 4 spans, 2 legend boxes), the marks' lines", counts)
	}
	for _, want := range []string{`<title>phases &lt;p50&gt;</title>`, `class="chart timeline"`, `class="axis x"`, `>gateway &lt;gw&gt;</text>`,
		`>waiting</text>`, `>head</text>`, `>1250</text>`} {
		if !strings.Contains(s, want) {
			t.Errorf("timeline lacks %s:\n%s", want, s)
		}
	}
	for _, bad := range []string{"backwards", ">nan<", ">inf<", `class="axis y"`} {
		if strings.Contains(s, bad) {
			t.Errorf("timeline holds %q:\n%s", bad, s)
		}
	}
	if strings.Count(s, ">waiting</text>") != 1 {
		t.Errorf("the legend names a kind of span more than once:\n%s", s)
	}
	if c.String() != s {
		t.Error("two renderings of one timeline differ")
	}
	empty := (&Timeline{Title: "none", Rows: []Row{{Label: "gw", Spans: []Span{{From: 2, To: 1}}}}, Note: "no phases"}).String()
	if checkXML(t, empty)["rect"] != 1 || !strings.Contains(empty, ">no phases</text>") || !strings.Contains(empty, `class="chart empty"`) {
		t.Errorf("a timeline without spans = %s; want the note only", empty)
	}
}
