package probe

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"

	"github.com/sse-latency/sse-latency/internal/probe/probetest"
)

func TestWriteText(t *testing.T) {
	for _, tt := range []struct {
		name string
		fams func() []*family
		want string
	}{
		{"a family without series is left out; one without labels is shown at 0", func() []*family {
			return []*family{newFamily("b_total", "B.", counter, "x"), newFamily("a_total", "A.", counter)}
		}, "# HELP a_total A.\n# TYPE a_total counter\na_total 0\n"},
		{"families by name, series by label values", func() []*family {
			g := newFamily("z", "Z.", gauge, "k", "l")
			g.with("b", "a").value = 2
			g.with("a", "b").value = 1
			g.with("a", "a").value = -0.5
			c := newFamily("y_total", "Y.", counter)
			c.with().value = 3
			return []*family{g, c}
		}, "# HELP y_total Y.\n# TYPE y_total counter\ny_total 3\n" +
			"# HELP z Z.\n# TYPE z gauge\n" + `z{k="a",l="a"} -0.5` + "\n" + `z{k="a",l="b"} 1` + "\n" + `z{k="b",l="a"} 2` + "\n"},
		{"escaping: help backslash and newline, label values also the double quote", func() []*family {
			g := newFamily("e", "a \\ b\nc \"d\"", gauge, "v")
			g.with("q\"b\\n\nx").value = 1
			return []*family{g}
		}, "# HELP e a \\\\ b\\nc \"d\"\n# TYPE e gauge\n" + `e{v="q\"b\\n\nx"} 1` + "\n"},
		{"floats as Prometheus writes them", func() []*family {
			g := newFamily("f", "F.", gauge, "v")
			for i, v := range []float64{math.Inf(1), math.Inf(-1), math.NaN(), 0.00005, 1.8e9 + 0.25, 1e21, 1} {
				g.with(string(rune('a' + i))).value = v
			}
			return []*family{g}
		}, "# HELP f F.\n# TYPE f gauge\n" + `f{v="a"} +Inf` + "\n" + `f{v="b"} -Inf` + "\n" + `f{v="c"} NaN` + "\n" +
			`f{v="d"} 5e-05` + "\n" + `f{v="e"} 1.80000000025e+09` + "\n" + `f{v="f"} 1e+21` + "\n" + `f{v="g"} 1` + "\n"},
		{"histogram: cumulative buckets (le inclusive), +Inf, sum and count", func() []*family {
			h := newHistogram("h_seconds", "H.", []float64{0.5, 1}, "batch")
			for _, v := range []float64{0.25, 0.5, 1, 7} {
				h.with("gw").observe(h.bounds, v)
			}
			h.with("gw").observe(h.bounds, math.Inf(1))
			u := newHistogram("u", "U.", []float64{1})
			return []*family{h, u}
		}, "# HELP h_seconds H.\n# TYPE h_seconds histogram\n" +
			`h_seconds_bucket{batch="gw",le="0.5"} 2` + "\n" +
			`h_seconds_bucket{batch="gw",le="1"} 3` + "\n" +
			`h_seconds_bucket{batch="gw",le="+Inf"} 5` + "\n" +
			`h_seconds_sum{batch="gw"} +Inf` + "\n" +
			`h_seconds_count{batch="gw"} 5` + "\n" +
			"# HELP u U.\n# TYPE u histogram\n" + `u_bucket{le="1"} 0` + "\n" + `u_bucket{le="+Inf"} 0` + "\n" + "u_sum 0\nu_count 0\n"},
	} {
		var b bytes.Buffer
		writeText(&b, tt.fams())
		if got := b.String(); got != tt.want {
			t.Errorf("%s: writeText =\n%s\nwant\n%s", tt.name, got, tt.want)
		}
		checkExpfmt(t, tt.name, b.String())
	}
}

// checkExpfmt parses text with Prometheus's parser and writes it back
// with Prometheus's encoder: the same text, or the writer and Prometheus
// disagree.
func checkExpfmt(t *testing.T, name, text string) {
	t.Helper()
	fams, err := probetest.Parse(strings.NewReader(text))
	if err != nil {
		t.Errorf("%s: Prometheus cannot parse\n%s: %v", name, text, err)
		return
	}
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	slices.Sort(names)
	var b bytes.Buffer
	for _, n := range names {
		if _, err := expfmt.MetricFamilyToText(&b, fams[n]); err != nil {
			t.Fatal(err)
		}
	}
	if b.String() != text {
		t.Errorf("%s: Prometheus writes the parsed text back as\n%s\nnot\n%s", name, b.String(), text)
	}
}
