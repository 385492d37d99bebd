package svg_test

import (
	"fmt"
	"strings"

	"github.com/sse-latency/sse-latency/internal/report/svg"
)

func ExampleChart() {
	c := svg.Chart{
		Title: "TTFT per request",
		X:     svg.Axis{Label: "request index", Zero: true},
		Y:     svg.Axis{Label: "TTFT (ms)", Zero: true},
		Series: []svg.Series{{
			Name: "gateway", Kind: svg.Line, Color: "#e8590c", Markers: true,
			Points: []svg.Point{{X: 0, Y: 0.41}, {X: 1, Y: 0.38}, {X: 2, Y: 0.52}},
		}},
	}
	s := c.String()
	fmt.Println(strings.HasPrefix(s, "<svg"), strings.Count(s, "<path"), strings.Count(s, "<circle"))

	empty := svg.Chart{Title: "TTFT per request"}
	fmt.Println(strings.Contains(empty.String(), ">no samples</text>"))
	// Output:
	// true 1 3
	// true
}
