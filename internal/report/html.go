package report

import (
	"bytes"
	"cmp"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sse-latency/sse-latency/internal/failures"
	"github.com/sse-latency/sse-latency/internal/gateway"
	"github.com/sse-latency/sse-latency/internal/report/svg"
	"github.com/sse-latency/sse-latency/internal/rundoc"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

//go:embed templates/report.html.tmpl templates/check.html.tmpl templates/sweep.html.tmpl templates/style.html.tmpl templates/advice.html.tmpl
var htmlTemplateFS embed.FS

// htmlTemplate is the run's page, sweepTemplate the sweep's; the views
// hold every string they print. Both share the style. They are parsed at
// their first use: at the process's start they were a tenth of the CPU
// of a run that writes no HTML (issue 21).
var (
	htmlTemplate = sync.OnceValue(func() *template.Template {
		return template.Must(template.New("report.html.tmpl").ParseFS(htmlTemplateFS, "templates/report.html.tmpl", "templates/style.html.tmpl", "templates/advice.html.tmpl"))
	})
	sweepTemplate = sync.OnceValue(func() *template.Template {
		return template.Must(template.New("sweep.html.tmpl").ParseFS(htmlTemplateFS, "templates/sweep.html.tmpl", "templates/style.html.tmpl"))
	})
)

// WriteHTML writes the report of d as one self-contained, offline HTML page
// (--html): the verdict, the summary table of each batch with the overhead
// (and the rounds, the declared timings and the objectives when the run
// has them) and the failures, four inline SVG charts (the CDF of emit->recv, the
// per-token delays of the representative requests, the histogram of
// inter-token gaps, the TTFT of each request), the stream figures, the
// answers' phases (a phase timeline and the timeline's figures, when the
// text report has a timeline block), the tool's own lateness and CPU, and
// the configuration. The page has inline CSS, no script and no external
// reference; its bytes depend on d only. A sweep's document gets the
// sweep's page (see writeSweepHTML).
func WriteHTML(w io.Writer, d *rundoc.Document) error {
	if d.Sweep != nil {
		return writeSweepHTML(w, d)
	}
	var b bytes.Buffer
	if err := htmlTemplate().Execute(&b, newHTMLView(d)); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// htmlView is what the template prints, formatted in Go.
type htmlView struct {
	Title    string
	Meta     []string
	Warnings []string // what the run warned of (Warnings), as the text report prints it
	Verdict  *htmlVerdict
	Batches  []htmlBatch
	Clock    *htmlClock        // nil in one process
	Replicas []htmlReplicaRow  // across hosts, the gateway batch's replicas; nil in one process
	Overhead []htmlOverheadRow // nil without calibration
	Rounds   *htmlRounds       // nil without rounds
	Declared []htmlDeclaredRow // nil when no head declared timings
	Cost     []htmlCostRow     // nil when the gateway batch's CPU was not sampled
	SLO      *htmlSLO          // nil without objectives
	// FailureGroups are the failures by kind (failures.Summary), Failures
	// their texts by the tool's failure kind.
	FailureGroups []htmlFailureGroup
	Failures      []htmlFailureRow
	Stream        []htmlStreamRow
	Phases        *htmlPhases // nil when no batch's timeline is notable (html_timeline.go)
	Self          htmlSelf
	Charts        []htmlChart
	Config        string
}

type htmlVerdict struct {
	Class string // "flushes", "buffers" or "unknown", or "failed" when requests failed: the box's colour
	// Failure leads when requests failed, with the advice about them.
	Failure       string
	FailureAdvice []string
	Headline      string
	Lines         []string
	Advice        adviceText
}

// htmlFailureGroup is one group of a batch's failure summary, as the text
// block words it.
type htmlFailureGroup struct {
	Batch, Title       string
	Count              int
	Share, First, Last string
	After              string // tokens and age p50 (max); "" for a group of requests that got no stream
	Example            string
}

// htmlClock describes the clock offset of a run across hosts.
type htmlClock struct {
	Offset string
	Note   string // what a * means; "" when nothing is marked
}

// htmlReplicaRow is one server replica of a run across hosts.
type htmlReplicaRow struct {
	Instance, Control    string
	Requests, OK         int
	Tokens, Unmeasured   int64
	RequestLeg, EmitRecv string // p50, ms
	Offset, Bound, Error string
	Bad                  bool // tokens unmeasured, or an error
}

type htmlBatch struct {
	Title string
	Rows  []htmlMetricRow
}

type htmlMetricRow struct {
	Name  string
	N     int64
	Cells []string // mean, min, p50, p90, p95, p99, p99.9, max
}

type htmlOverheadRow struct {
	Name  string
	Cells []string // mean, p50, p95, p99; empty when n/a
}

type htmlFailureRow struct {
	Batch, Kind string
	Count       int
	Texts       []string
}

type htmlStreamRow struct {
	Batch string
	Cells []string
}

type htmlSelf struct {
	Lateness *htmlMetricRow // nil when no emission was recorded
	CPU      string
}

type htmlChart struct {
	SVG     template.HTML
	Caption string
}

// newHTMLView formats d for the template.
func newHTMLView(d *rundoc.Document) htmlView {
	name := cmp.Or(d.Tool.Name, "sse-latency")
	v := htmlView{
		Title:    fmt.Sprintf("%s %s — run of %s", name, cmp.Or(d.Tool.Version, "(unknown version)"), htmlTime(d.Start)),
		Meta:     htmlMeta(d),
		Warnings: Warnings(d),
		Verdict:  newHTMLVerdict(d.Verdict, d.Identity, d.Clock, gatewayFailures(d)),
		Clock:    newHTMLClock(d.Clock),
		Replicas: newHTMLReplicas(d),
		Self:     newHTMLSelf(&d.Self),
		Charts:   htmlCharts(d.Batches),
		Phases:   newHTMLPhases(d.Batches),
		Config:   htmlConfig(&d.Config),
	}
	for i := range d.Batches {
		b := &d.Batches[i]
		over := ""
		if b.Transport == summary.TransportWebSocket {
			over = " over WebSocket"
		}
		hb := htmlBatch{Title: fmt.Sprintf("%s — %s%s: %d requests, %d ok, %d failed, %d tokens",
			cmp.Or(b.Title(), "batch"), cmp.Or(b.Target, "?"), over, b.Requests, b.OK, b.Failed, b.Tokens)}
		twoClock := b.TwoClockMetrics()
		for _, nm := range b.Metrics.Named() {
			var c *summary.Clock
			if slices.ContainsFunc(twoClock, func(t summary.NamedMetric) bool { return t.Metric == nm.Metric }) {
				c = d.Clock
			}
			hb.Rows = append(hb.Rows, newHTMLMetricRow(nm.Name, nm.Metric, c))
		}
		if b.RequestLeg != nil {
			hb.Rows = append(hb.Rows, newHTMLMetricRow("request leg (sent → server received)", b.RequestLeg, d.Clock))
		}
		v.Batches = append(v.Batches, hb)
		v.FailureGroups = append(v.FailureGroups, newHTMLFailureGroups(b)...)
		for _, f := range b.Failures {
			row := htmlFailureRow{Batch: b.Name, Kind: f.Kind, Count: f.Count}
			for _, t := range f.Texts {
				row.Texts = append(row.Texts, fmt.Sprintf("%s (×%d)", t.Text, t.Count))
			}
			if f.Other > 0 {
				row.Texts = append(row.Texts, fmt.Sprintf("%d with other texts", f.Other))
			}
			v.Failures = append(v.Failures, row)
		}
		s := &b.Stream
		batch := b.Name
		if b.Transport != "" {
			batch += " (" + b.Transport + ")"
		}
		v.Stream = append(v.Stream, htmlStreamRow{Batch: batch, Cells: []string{
			fmt.Sprint(s.Received()), fmt.Sprint(s.ByPiTs), fmt.Sprint(s.ByContent), fmt.Sprint(s.Unmeasured),
			fmt.Sprint(s.Reads), fmt.Sprint(s.Events), byteSize(s.Bytes),
			fmt.Sprint(s.MaxTokensPerRead), fmt.Sprint(s.IntegrityErrors),
		}})
	}
	if d.Overhead != nil {
		for _, l := range d.Overhead.Named() {
			var c *summary.Clock
			if l.Delta != nil && (l.Delta == d.Overhead.FirstEmitRecv || l.Delta == d.Overhead.EmitRecv) {
				c = d.Clock
			}
			v.Overhead = append(v.Overhead, newHTMLOverheadRow(l.Name, l.Delta, c))
		}
	}
	v.Rounds = newHTMLRounds(d.Rounds)
	v.Declared = newHTMLDeclared(&d.Run)
	v.Cost = newHTMLCost(&d.Run)
	v.SLO = newHTMLSLO(d.SLO)
	return v
}

// htmlCostRow is one line of the cost block: its label and its text.
type htmlCostRow struct{ Label, Text string }

// newHTMLCost is the cost block's lines (WriteCost), the same words as
// the text report's; nil without a sampled gateway batch.
func newHTMLCost(r *summary.Run) []htmlCostRow {
	var b strings.Builder
	if WriteCost(&b, r) != nil || b.Len() == 0 {
		return nil
	}
	var rows []htmlCostRow
	for i, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if i == 0 { // the title: the template has its own
			continue
		}
		label, text := strings.TrimSpace(line[:min(len(line), costLabelWidth)]), strings.TrimSpace(line[min(len(line), costLabelWidth):])
		rows = append(rows, htmlCostRow{Label: label, Text: text})
	}
	return rows
}

// htmlMeta describes the run: when, how it ended, where.
func htmlMeta(d *rundoc.Document) []string {
	when := "started " + htmlTime(d.Start)
	if !d.End.IsZero() {
		when += ", ended " + htmlTime(d.End)
		if !d.Start.IsZero() && !d.End.Before(d.Start) {
			when += fmt.Sprintf(" (%.3f s)", d.End.Sub(d.Start).Seconds())
		}
	}
	end := fmt.Sprintf("end: %s, exit code %d", cmp.Or(d.EndReason, "unknown"), d.ExitCode)
	if d.Runs > 1 {
		end += fmt.Sprintf("; %d runs merged", d.Runs)
	}
	e := d.Environment
	env := fmt.Sprintf("%s/%s, %d CPUs (GOMAXPROCS %d)", cmp.Or(e.OS, "?"), cmp.Or(e.Arch, "?"), e.NumCPU, e.GOMAXPROCS)
	if e.Hostname != "" {
		env += ", host " + e.Hostname
	}
	if d.Tool.GoVersion != "" {
		env += ", " + d.Tool.GoVersion
	}
	return []string{when, end, env, fmt.Sprintf("report schema version %d", d.SchemaVersion)}
}

// htmlTime prints t as recorded (RFC 3339 with milliseconds).
func htmlTime(t time.Time) string {
	if t.IsZero() {
		return "unknown time"
	}
	return t.Format("2006-01-02T15:04:05.000Z07:00")
}

// htmlMs prints a duration in milliseconds with three significant decimals
// for small values, fewer for large ones.
func htmlMs(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1000:
		return fmt.Sprintf("%.1f", v)
	case a >= 10:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

// htmlSigned prints an overhead in milliseconds with its sign, as the text
// report does.
func htmlSigned(v float64) string { return fmt.Sprintf("%+.3f", v) }

// newHTMLMetricRow is the row of metric m; across hosts (c not nil) its
// figures within the clock's bound are marked with a *.
func newHTMLMetricRow(name string, m *summary.Metric, c *summary.Clock) htmlMetricRow {
	r := htmlMetricRow{Name: name, N: m.N}
	if m.N == 0 {
		return r
	}
	for _, x := range []float64{m.MeanMs, m.MinMs, m.P50Ms, m.P90Ms, m.P95Ms, m.P99Ms, m.P999Ms, m.MaxMs} {
		r.Cells = append(r.Cells, htmlMark(c, htmlMs(x), x))
	}
	return r
}

// newHTMLOverheadRow is the row of an overhead line, marked as
// newHTMLMetricRow's.
func newHTMLOverheadRow(name string, d *summary.Delta, c *summary.Clock) htmlOverheadRow {
	r := htmlOverheadRow{Name: name}
	if d != nil {
		for _, x := range []float64{d.MeanMs, d.P50Ms, d.P95Ms, d.P99Ms} {
			r.Cells = append(r.Cells, htmlMark(c, htmlSigned(x), x))
		}
	}
	return r
}

// htmlMark appends a * to text, the figure v (ms), when v is within clock
// c's bound (summary.Clock.Below).
func htmlMark(c *summary.Clock, text string, v float64) string {
	if c.Below(v) {
		return text + "*"
	}
	return text
}

// newHTMLClock describes c; nil for nil.
func newHTMLClock(c *summary.Clock) *htmlClock {
	if c == nil {
		return nil
	}
	hc := &htmlClock{Offset: fmt.Sprintf("The server ran on another host: its clock minus this host's is %+.3f ms ± %.3f ms "+
		"(%d %s, best round trip %.3f ms, drift %.3f ms). Every emit->recv figure and the request leg carry this error.",
		c.OffsetMs, c.BoundMs, c.Estimates, plural(int64(c.Estimates), "estimate"), c.MinRTTMs, c.DriftMs)}
	if len(c.BelowBound) > 0 {
		hc.Note = fmt.Sprintf("Figures marked * are within ±%.3f ms of zero, the offset's error bound: not exact.", c.BoundMs)
	}
	return hc
}

// newHTMLReplicas lists the replicas of d's gateway batch (nil without
// any), as WriteReplicas does.
func newHTMLReplicas(d *rundoc.Document) []htmlReplicaRow {
	b := d.Gateway()
	if b == nil || len(b.Replicas) == 0 {
		return nil
	}
	rows := make([]htmlReplicaRow, 0, len(b.Replicas))
	for _, r := range b.Replicas {
		p50 := func(m *summary.Metric) string {
			if m.N == 0 {
				return "–"
			}
			return htmlMark(d.Clock, fmt.Sprintf("%.3f", m.P50Ms), m.P50Ms)
		}
		row := htmlReplicaRow{Instance: r.Instance, Control: r.Control, Requests: r.Requests, OK: r.OK, Tokens: r.Tokens,
			Unmeasured: r.Unmeasured, RequestLeg: p50(&r.RequestLeg), EmitRecv: p50(&r.EmitRecv), Error: r.Error,
			Offset: "–", Bound: "–", Bad: r.Unmeasured > 0 || r.Error != ""}
		if row.Instance == "" {
			row.Instance = "(none)"
		}
		if r.Estimates > 0 {
			row.Offset, row.Bound = fmt.Sprintf("%+.3f", r.OffsetMs), fmt.Sprintf("%.3f", r.BoundMs)
		}
		rows = append(rows, row)
	}
	return rows
}

// newHTMLVerdict words the verdict as the text block does: the same
// sentences (verdictWords, withFailures: led by the failures of the
// gateway batch fs), each figure after its label and a colon.
func newHTMLVerdict(v *verdict.Verdict, id *gateway.Identity, c *summary.Clock, fs *failures.Summary) *htmlVerdict {
	if v == nil {
		return nil
	}
	t := withFailures(verdictWords(*v, id, c), *v, fs)
	hv := &htmlVerdict{Class: t.Class.String(), Failure: t.Failure, FailureAdvice: t.FailureAdvice, Headline: t.Headline, Advice: t.Advice}
	if t.Failure != "" {
		hv.Class = "failed"
	}
	for _, l := range t.Lines {
		hv.Lines = append(hv.Lines, l.Label+": "+l.Text)
	}
	for _, n := range []string{t.Note, t.FailureNote} {
		if n != "" {
			hv.Lines = append(hv.Lines, n)
		}
	}
	return hv
}

// gatewayFailures is the failure summary of d's gateway batch, nil
// without one.
func gatewayFailures(d *rundoc.Document) *failures.Summary {
	if g := d.Gateway(); g != nil {
		return g.FailureSummary
	}
	return nil
}

// newHTMLFailureGroups are the rows of b's failure groups (none without a
// summary, or failures), worded as the text block's.
func newHTMLFailureGroups(b *summary.Batch) []htmlFailureGroup {
	fs := b.FailureSummary
	if fs == nil {
		return nil
	}
	var out []htmlFailureGroup
	for i := range fs.Groups {
		g := &fs.Groups[i]
		out = append(out, htmlFailureGroup{Batch: b.Name, Title: failures.Sanitize(g.Title), Count: g.Count,
			Share: fmt.Sprintf("%.1f%%", 100*share(g.Count, fs.Requests)), First: failures.At(g.FirstNs), Last: failures.At(g.LastNs),
			After: strings.TrimPrefix(afterText(g), "  after "), Example: failures.Sanitize(g.Example)})
	}
	return out
}

func newHTMLSelf(s *summary.Self) htmlSelf {
	v := htmlSelf{CPU: fmt.Sprintf("CPU: %.3f s user, %.3f s system", s.UserS, s.SystemS)}
	if s.Lateness.N > 0 {
		r := newHTMLMetricRow("emission lateness", &s.Lateness, nil)
		v.Lateness = &r
	}
	return v
}

// htmlConfig indents the configuration's JSON; a zero configuration (a
// document that recorded none) is "(not recorded)".
func htmlConfig(c *rundoc.Config) string {
	if reflect.ValueOf(*c).IsZero() {
		return "(not recorded)"
	}
	js, err := json.MarshalIndent(c, "", "  ")
	if err != nil { // a NaN or ±Inf setting, which the command line refuses
		return fmt.Sprintf("%+v", *c)
	}
	return string(js)
}

// Chart colours: loopback blue, gateway orange; the representative
// requests in three shades of each (fastest, median, slowest).
var (
	htmlBatchColors  = map[string]string{"loopback": "#1c7ed6", "gateway": "#e8590c"}
	htmlOtherColors  = []string{"#2b8a3e", "#862e9c", "#c2255c", "#5c940d"}
	htmlSeriesShades = map[string][3]string{
		"loopback": {"#74c0fc", "#1c7ed6", "#0b3d91"},
		"gateway":  {"#fcc419", "#e8590c", "#a61e4d"},
	}
	htmlLabelShade = map[string]int{"fastest": 0, "median": 1, "slowest": 2}
)

func htmlColor(i int, name string) string {
	if c, ok := htmlBatchColors[name]; ok {
		return c
	}
	return htmlOtherColors[i%len(htmlOtherColors)]
}

// htmlCharts draws the four htmlCharts.
func htmlCharts(bs []summary.Batch) []htmlChart {
	var out []htmlChart
	add := func(c *svg.Chart, caption string) {
		out = append(out, htmlChart{SVG: template.HTML(c.String()), Caption: caption})
	}
	add(htmlCDFChart(bs), "Share of tokens (after the first) that arrived within a given delay of their emission, "+
		"from each batch's histogram. A flushing gateway sits just right of the loopback curve; "+
		"a buffering one spreads over the burst period.")
	add(htmlSeriesChart(bs), "Delay of each token of the fastest, median and slowest requests (by mean emit->recv) "+
		"against its arrival time. A buffering gateway draws a sawtooth: tokens wait, then leave together.")
	gaps, gapNote := htmlGapChart(bs)
	add(gaps, "Gaps between consecutive token arrivals, as a share of each batch's gaps. "+
		"A flushing gateway keeps the emission gap; a buffering one gives many gaps near 0 and a few as long as its period."+gapNote)
	add(htmlTTFTChart(bs), "Time to first token of each request, by request index.")
	if c := htmlSizeChart(bs); c != nil {
		add(c, "Time to first token against the prompt's size, by size bucket (powers of 4 from 1 KiB): the median (solid) "+
			"and the 99th percentile (dashed) of each bucket's requests. A gateway whose cost grows with the body it reads climbs to the right.")
	}
	return out
}

// htmlSizeChart plots each batch's TTFT, p50 and p99, against the prompt
// size of its size buckets (at the bucket's geometric middle), nil when no
// batch has a breakdown by size.
func htmlSizeChart(bs []summary.Batch) *svg.Chart {
	c := &svg.Chart{
		Title: "TTFT by prompt size",
		X:     svg.Axis{Label: "prompt size (bytes, log scale)", Log: true},
		Y:     svg.Axis{Label: "TTFT (ms)", Zero: true},
	}
	for i, b := range bs {
		if b.Sizes == nil || len(b.Sizes.Prompt) == 0 {
			continue
		}
		var p50, p99 []svg.Point
		for _, k := range b.Sizes.Prompt {
			x := bucketMiddle(k)
			p50 = append(p50, svg.Point{X: x, Y: k.TTFT.P50Ms})
			p99 = append(p99, svg.Point{X: x, Y: k.TTFT.P99Ms})
		}
		c.Series = append(c.Series,
			svg.Series{Name: b.Name + " p50", Kind: svg.Line, Color: htmlColor(i, b.Name), Markers: true, Points: p50},
			svg.Series{Name: b.Name + " p99", Kind: svg.Line, Color: htmlColor(i, b.Name), Dashed: true, Markers: true, Points: p99})
	}
	if len(c.Series) == 0 {
		return nil
	}
	return c
}

// bucketMiddle is where a size bucket sits on a log axis: the geometric
// middle of its bounds, half its upper bound for the first, twice its lower
// bound for the last.
func bucketMiddle(k summary.SizeBucket) float64 {
	switch {
	case k.Lo == 0:
		return float64(k.Hi) / 2
	case k.Hi == 0:
		return 2 * float64(k.Lo)
	}
	return math.Sqrt(float64(k.Lo) * float64(k.Hi))
}

// htmlCDFChart is the CDF of emit->recv (tokens after the first) per batch: the
// cumulative share of samples at each histogram bucket's midpoint.
func htmlCDFChart(bs []summary.Batch) *svg.Chart {
	c := &svg.Chart{
		Title: "emit->recv CDF (tokens after the first)",
		X:     svg.Axis{Label: "emit->recv (ms, log scale)", Log: true},
		Y:     svg.Axis{Label: "share of tokens", Min: 0, Max: 1},
	}
	for i, b := range bs {
		h := &b.Metrics.EmitRecv.Histogram
		if h.N == 0 || len(h.Histogram.Buckets) == 0 {
			continue
		}
		pts := make([]svg.Point, 0, len(h.Histogram.Buckets)+1)
		var cum int64
		for _, k := range h.Histogram.Buckets {
			cum += k.Count
			pts = append(pts, svg.Point{X: htmlBucketMidMs(k), Y: float64(cum) / float64(h.N)})
		}
		pts = slices.Insert(pts, 0, svg.Point{X: pts[0].X, Y: 0})
		c.Series = append(c.Series, svg.Series{Name: b.Name, Kind: svg.Step, Color: htmlColor(i, b.Name), Points: pts})
	}
	return c
}

// htmlBucketMidMs is the midpoint of a histogram bucket in milliseconds.
func htmlBucketMidMs(k stats.Bucket) float64 {
	return (float64(k.FromNs) + float64(k.ToNs)) / 2 / nsPerMs
}

// htmlSeriesChart plots the representative requests' per-token delays.
func htmlSeriesChart(bs []summary.Batch) *svg.Chart {
	c := &svg.Chart{
		Title: "emit->recv per token, representative requests",
		X:     svg.Axis{Label: "arrival since request sent (ms)", Zero: true},
		Y:     svg.Axis{Label: "emit->recv (ms)", Zero: true},
	}
	for i, b := range bs {
		for j, s := range b.Samples.Series {
			color := htmlColor(i, b.Name)
			if shades, ok := htmlSeriesShades[b.Name]; ok {
				k, ok := htmlLabelShade[s.Label]
				if !ok {
					k = j % 3
				}
				color = shades[k]
			}
			pts := make([]svg.Point, len(s.Points))
			for k, p := range s.Points {
				pts[k] = svg.Point{X: p[0], Y: p[1]}
			}
			c.Series = append(c.Series, svg.Series{
				Name:   fmt.Sprintf("%s %s #%d", htmlShortName(b.Name), s.Label, s.Index),
				Kind:   svg.Line,
				Color:  color,
				Dashed: b.Name == "loopback",
				Points: pts,
			})
		}
	}
	return c
}

// htmlShortName abbreviates a batch name for a legend.
func htmlShortName(name string) string {
	switch name {
	case "loopback":
		return "loop"
	case "gateway":
		return "gw"
	}
	return name
}

// htmlGapBins is the number of bins of the inter-token histogram.
const htmlGapBins = 40

// htmlGapLogRatio is the ratio of the largest to the smallest positive gap
// beyond which the histogram uses log bins.
const htmlGapLogRatio = 1000

// htmlGapChart re-bins each batch's inter-token histogram into htmlGapBins bins
// shared by all batches: linear, or logarithmic when the gaps span more
// than htmlGapLogRatio (gaps of 0 — tokens of one read — then count in the
// first bin, which the returned caption note says).
func htmlGapChart(bs []summary.Batch) (*svg.Chart, string) {
	c := &svg.Chart{
		Title: "inter-token gaps",
		X:     svg.Axis{Label: "gap between consecutive arrivals (ms)"},
		Y:     svg.Axis{Label: "share of gaps (%)", Zero: true},
	}
	lo, hi, posLo := math.Inf(1), math.Inf(-1), math.Inf(1)
	zeros := false
	for _, b := range bs {
		for _, k := range b.Metrics.InterToken.Histogram.Histogram.Buckets {
			m := htmlBucketMidMs(k)
			lo, hi = min(lo, m), max(hi, m)
			if m > 0 {
				posLo = min(posLo, m)
			} else {
				zeros = true
			}
		}
	}
	if lo > hi {
		return c, ""
	}
	logBins := posLo < hi && hi/posLo > htmlGapLogRatio
	var elo, ehi float64
	if logBins {
		elo, ehi, _ = svg.LogTicks(posLo, hi)
		c.X = svg.Axis{Label: "gap between consecutive arrivals (ms, log scale)", Log: true, Min: elo, Max: ehi}
	} else {
		elo, ehi, _ = svg.LinearTicks(lo, hi, 5)
		c.X.Min, c.X.Max = elo, ehi
	}
	edge := func(i int) float64 {
		t := float64(i) / htmlGapBins
		if logBins {
			return elo * math.Pow(ehi/elo, t)
		}
		return elo + t*(ehi-elo)
	}
	bin := func(m float64) int {
		var t float64
		switch {
		case logBins && m <= 0:
			t = 0
		case logBins:
			t = math.Log(m/elo) / math.Log(ehi/elo)
		default:
			t = (m - elo) / (ehi - elo)
		}
		return min(max(int(t*htmlGapBins), 0), htmlGapBins-1)
	}
	for i, b := range bs {
		h := &b.Metrics.InterToken.Histogram
		if h.N == 0 {
			continue
		}
		var counts [htmlGapBins]int64
		for _, k := range h.Histogram.Buckets {
			counts[bin(htmlBucketMidMs(k))] += k.Count
		}
		pts := make([]svg.Point, 0, htmlGapBins+1)
		for j, n := range counts {
			pts = append(pts, svg.Point{X: edge(j), Y: 100 * float64(n) / float64(h.N)})
		}
		pts = append(pts, svg.Point{X: edge(htmlGapBins), Y: 0})
		c.Series = append(c.Series, svg.Series{Name: b.Name, Kind: svg.Bars, Color: htmlColor(i, b.Name), Points: pts})
	}
	note := ""
	if logBins && zeros {
		note = " Log bins; gaps of 0 ms (tokens delivered by one read) are counted in the first bin."
	}
	return c, note
}

// htmlTTFTChart plots each sampled request's TTFT against its index; requests
// that received no token are left out.
func htmlTTFTChart(bs []summary.Batch) *svg.Chart {
	c := &svg.Chart{
		Title: "TTFT per request",
		X:     svg.Axis{Label: "request index", Zero: true},
		Y:     svg.Axis{Label: "TTFT (ms)", Zero: true},
	}
	for i, b := range bs {
		reqs := slices.Clone(b.Samples.Requests)
		slices.SortStableFunc(reqs, func(x, y summary.RequestSample) int { return cmp.Compare(x.Index, y.Index) })
		var pts []svg.Point
		for _, r := range reqs {
			if r.TTFTMs >= 0 {
				pts = append(pts, svg.Point{X: float64(r.Index), Y: r.TTFTMs})
			}
		}
		name := b.Name
		if b.Samples.Sampled {
			name += " (sample)"
		}
		c.Series = append(c.Series, svg.Series{Name: name, Kind: svg.Line, Color: htmlColor(i, b.Name),
			Dashed: b.Name == "loopback", Markers: true, Points: pts})
	}
	return c
}
