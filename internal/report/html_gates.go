package report

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/sse-latency/sse-latency/internal/failures"
	"github.com/sse-latency/sse-latency/internal/report/svg"
	"github.com/sse-latency/sse-latency/internal/rundoc"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/sweep"
)

// This file holds the HTML of the rounds, the declared timings, the
// objectives, and the sweep's page.

type htmlRounds struct {
	Order   string
	Rows    []htmlRoundRow
	Medians []htmlMedianRow
}

type htmlRoundRow struct {
	Index            int
	Batch            string
	Requests, Failed int
	Cells            []string // emit->recv p50, p99, TTFT p50, p99 (ms)
}

type htmlMedianRow struct {
	Name                     string
	Loopback, Gateway, Added string
}

// newHTMLRounds formats the rounds as the text block does.
func newHTMLRounds(r *summary.Rounds) *htmlRounds {
	if r == nil {
		return nil
	}
	v := &htmlRounds{Order: strings.Join(strings.Split(r.Order, ""), " ")}
	for i, rd := range r.Rounds {
		m := &rd.Metrics
		v.Rows = append(v.Rows, htmlRoundRow{Index: i + 1, Batch: rd.Batch, Requests: rd.Requests, Failed: rd.Failed, Cells: []string{
			msOrNA(&m.EmitRecv, m.EmitRecv.P50Ms), msOrNA(&m.EmitRecv, m.EmitRecv.P99Ms),
			msOrNA(&m.TTFT, m.TTFT.P50Ms), msOrNA(&m.TTFT, m.TTFT.P99Ms)}})
	}
	for _, row := range []struct {
		name    string
		l, g, a *summary.RoundStat
	}{
		{"emit->recv p50", &r.Loopback.EmitRecv.P50, &r.Gateway.EmitRecv.P50, &r.Added.EmitRecv.P50},
		{"emit->recv p99", &r.Loopback.EmitRecv.P99, &r.Gateway.EmitRecv.P99, &r.Added.EmitRecv.P99},
		{"TTFT p50", &r.Loopback.TTFT.P50, &r.Gateway.TTFT.P50, &r.Added.TTFT.P50},
		{"TTFT p99", &r.Loopback.TTFT.P99, &r.Gateway.TTFT.P99, &r.Added.TTFT.P99},
	} {
		v.Medians = append(v.Medians, htmlMedianRow{Name: row.name, Loopback: roundStat(row.l, "%.3f"),
			Gateway: roundStat(row.g, "%.3f"), Added: roundStat(row.a, "%+.3f")})
	}
	return v
}

type htmlDeclaredRow struct {
	Batch, Source, Counts string
	Cells                 []string // mean, p50, p99 (ms); empty without values
}

// newHTMLDeclared lists the declared timings of every batch, then the
// observed TTFT overhead they should explain (declaredRows, observedTTFT).
func newHTMLDeclared(s *summary.Run) []htmlDeclaredRow {
	rows, _ := declaredRows(s)
	if rows == nil {
		return nil
	}
	var out []htmlDeclaredRow
	for _, r := range rows {
		row := htmlDeclaredRow{Batch: r.batch, Source: r.source, Counts: r.counts}
		if m := r.metric; m.N > 0 {
			row.Cells = []string{htmlMs(m.MeanMs), htmlMs(m.P50Ms), htmlMs(m.P99Ms)}
		}
		out = append(out, row)
	}
	if o, ok := observedTTFT(s); ok {
		out = append(out, htmlDeclaredRow{Batch: "observed", Source: o.name + ", " + o.what, Cells: o.cells[:]})
	}
	return out
}

type htmlSLO struct {
	Rows    []htmlSLORow
	Goodput string
}

type htmlSLORow struct {
	State, SLO, Observed string
	Met                  bool
}

// newHTMLSLO formats the objectives as the text block does.
func newHTMLSLO(s *summary.SLOs) *htmlSLO {
	if s == nil {
		return nil
	}
	v := &htmlSLO{}
	for _, c := range s.Checks {
		v.Rows = append(v.Rows, htmlSLORow{State: sloState(c.Met), SLO: c.SLO, Observed: sloObserved(&c), Met: c.Met})
	}
	if g := s.Goodput; g != nil {
		v.Goodput = fmt.Sprintf("goodput: %d of %d gateway requests (%.1f%%) succeeded within every per-request objective",
			g.Good, g.Requests, 100*g.Share)
	}
	return v
}

// sweepView is what the sweep's page prints.
type sweepView struct {
	Title    string
	Meta     []string
	Warnings []string
	Axis     string
	Rounds   string
	Rows     []sweepRow
	Knee     string
	Costs    bool     // the steps have the gateway's CPU (sweepCosts)
	Notes    []string // the saturated steps
	Charts   []htmlChart
	Config   string
}

type sweepRow struct {
	Value, OKFailed, Verdict, Gateway, Tool string
	Cost                                    string   // the gateway's CPU (stepCost), with Costs
	Cells                                   []string // added emit->recv p50, p99, TTFT p50, p99
	Knee, Saturated                         bool     // the gateway's cell marked bad (the knee, or a failing step), the tool's
}

// writeSweepHTML writes a sweep's page: the table of its steps (as
// WriteSweep), the knee and the saturated steps, two charts of the
// overhead against the load (emit->recv and TTFT, p50 and p99, with the
// knee's threshold), and the configuration. Offline and deterministic like
// the run's page.
func writeSweepHTML(w io.Writer, d *rundoc.Document) error {
	s := d.Sweep
	name := axisName(s.Axis)
	v := sweepView{
		Title:    fmt.Sprintf("%s %s — sweep of %s, %s", cmp.Or(d.Tool.Name, "sse-latency"), cmp.Or(d.Tool.Version, "(unknown version)"), name, htmlTime(d.Start)),
		Meta:     htmlMeta(d),
		Warnings: Warnings(d),
		Axis:     name,
		Rounds:   fmt.Sprintf("%d of %d steps, each %s", len(s.Steps), len(s.Values), roundsText(s.Rounds)),
		Config:   htmlConfig(&d.Config),
		Costs:    sweepCosts(s),
	}
	for i := range s.Steps {
		st := &s.Steps[i]
		c := stepCells(&st.Run)
		v.Rows = append(v.Rows, sweepRow{Value: sweep.FormatValue(s.Axis, st.Value), OKFailed: okFailed(&st.Run),
			Verdict: verdictClass(&st.Run), Gateway: gatewayState(s, i), Tool: toolState(st), Cells: c[:],
			Knee: s.Knee != nil && s.Knee.Step == i || st.Failing, Saturated: st.ToolSaturated, Cost: stepCost(&st.Run)})
		if st.Failing {
			v.Notes = append(v.Notes, fmt.Sprintf("failing at %s %s: %s", name, sweep.FormatValue(s.Axis, st.Value), failures.Sanitize(st.FailingReason)))
		}
		if st.ToolSaturated {
			v.Notes = append(v.Notes, fmt.Sprintf("tool saturated at %s %s: %s; that step measured sse-latency's own load, not the gateway's",
				name, sweep.FormatValue(s.Axis, st.Value), st.ToolReason))
		}
	}
	if g := s.GatewaySaturated; g != nil {
		v.Notes = append(v.Notes, fmt.Sprintf("gateway saturated a core at %s %s: %.2f cores, %.3fus/token",
			name, sweep.FormatValue(s.Axis, g.Value), g.Cores, g.CPUPerTokenUs))
	}
	switch {
	case s.Knee != nil:
		v.Knee = "knee: " + s.Knee.Text
	case len(s.Steps) > 0:
		v.Knee = fmt.Sprintf("knee: none up to %s %s", name, sweep.FormatValue(s.Axis, s.Steps[len(s.Steps)-1].Value))
	}
	for _, c := range sweepCharts(s) {
		v.Charts = append(v.Charts, htmlChart{SVG: template.HTML(c.chart.String()), Caption: c.caption})
	}
	var b bytes.Buffer
	if err := sweepTemplate().Execute(&b, v); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	_, err := w.Write(b.Bytes())
	return err
}

type captioned struct {
	chart   *svg.Chart
	caption string
}

// sweepCharts draws the added p50 and p99 of emit->recv and of TTFT
// against the axis value (a log axis when the values span a factor of 10
// or more), each with the knee's threshold for reference on the first.
func sweepCharts(s *sweep.Sweep) []captioned {
	name := axisName(s.Axis)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, st := range s.Steps {
		lo, hi = min(lo, st.Value), max(hi, st.Value)
	}
	logX := lo > 0 && hi/lo >= 10
	unit := map[string]string{sweep.AxisConcurrency: "requests in flight", sweep.AxisRate: "requests/s", sweep.AxisPromptBytes: "bytes"}[s.Axis]
	x := svg.Axis{Label: fmt.Sprintf("%s (%s%s)", name, unit, map[bool]string{true: ", log scale"}[logX]), Log: logX}
	var out []captioned
	for i, metric := range []string{"emit->recv (tokens)", "TTFT (client)"} {
		c := &svg.Chart{Title: "added " + metric + " against " + name, X: x, Y: svg.Axis{Label: "gateway minus loopback (ms)", Zero: true}}
		var p50, p99 []svg.Point
		for _, st := range s.Steps {
			var d *summary.Delta
			if o := st.Overhead; o != nil {
				d = []*summary.Delta{o.EmitRecv, o.TTFT}[i]
			}
			if d != nil {
				p50 = append(p50, svg.Point{X: st.Value, Y: d.P50Ms})
				p99 = append(p99, svg.Point{X: st.Value, Y: d.P99Ms})
			}
		}
		c.Series = append(c.Series,
			svg.Series{Name: "p50", Kind: svg.Line, Color: "#1c7ed6", Markers: true, Points: p50},
			svg.Series{Name: "p99", Kind: svg.Line, Color: "#e8590c", Markers: true, Points: p99})
		caption := "The overhead at each step: the gateway's figure minus the loopback's at the same load."
		if i == 0 && len(s.Steps) > 0 {
			c.Series = append(c.Series, svg.Series{Name: "knee threshold", Kind: svg.Line, Color: "#868e96", Dashed: true,
				Points: []svg.Point{{X: lo, Y: s.KneeThresholdMs}, {X: hi, Y: s.KneeThresholdMs}}})
			caption += fmt.Sprintf(" The knee is the first step whose p99 exceeds %.3f ms (dashed) or grows faster than the load.", s.KneeThresholdMs)
		}
		out = append(out, captioned{c, caption})
	}
	return out
}
