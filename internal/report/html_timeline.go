package report

import (
	"html/template"

	"github.com/sse-latency/sse-latency/internal/report/svg"
	"github.com/sse-latency/sse-latency/internal/summary"
)

// htmlPhases is the HTML report's phases section: the phase timeline of
// each batch (p50s) and the table of its timeline's figures. It is shown
// when a batch's timeline is notable, as the text report's timeline block.
type htmlPhases struct {
	Chart      htmlChart
	Batches    []htmlBatch // the timeline's metrics, per batch
	Heartbeats []string    // per batch, as the text block's line
}

// The colours of the phase timeline.
const (
	htmlWaitColor      = "#adb5bd"
	htmlReasoningColor = "#7048e8"
	htmlToolCallColor  = "#1098ad"
	htmlTextColor      = "#37b24d"
	htmlHeadColor      = "#212529"
)

// newHTMLPhases returns the phases section of bs; nil when no batch has a
// notable timeline.
func newHTMLPhases(bs []summary.Batch) *htmlPhases {
	var hp htmlPhases
	c := &svg.Timeline{Title: "phase timeline (p50 per batch)", X: svg.Axis{Label: "since the request was written (ms)"}}
	for i := range bs {
		b := &bs[i]
		t := b.Timeline
		if t == nil || !t.Notable() {
			continue
		}
		c.Rows = append(c.Rows, timelineRow(b))
		hb := htmlBatch{Title: b.Title()}
		for _, nm := range []summary.NamedMetric{{Name: "first event", Metric: &t.FirstEvent}, {Name: "first reasoning", Metric: &t.FirstReasoning},
			{Name: "first tool call", Metric: &t.FirstToolCall}, {Name: "first visible (TTFO)", Metric: &t.FirstText},
			{Name: "last token", Metric: &t.LastToken}, {Name: "emit->recv reasoning", Metric: &t.EmitRecv.Reasoning},
			{Name: "emit->recv tool call", Metric: &t.EmitRecv.ToolCall}, {Name: "emit->recv text", Metric: &t.EmitRecv.Text},
			{Name: "longest silence", Metric: &t.LongestSilence}} {
			hb.Rows = append(hb.Rows, newHTMLMetricRow(nm.Name, nm.Metric))
		}
		hp.Batches = append(hp.Batches, hb)
		if line := heartbeatsLine(b); line != "" {
			hp.Heartbeats = append(hp.Heartbeats, line)
		}
	}
	if len(c.Rows) == 0 {
		return nil
	}
	hp.Chart = htmlChart{SVG: template.HTML(c.String()), Caption: "When each phase of the answers began and ended (p50 over each batch's requests): " +
		"waiting for the first event, the reasoning, the tool call's arguments, the visible text; the mark is the response head. " +
		"A gateway that holds the stream's start draws a long wait, the head late."}
	return &hp
}

// timelineRow is the phase timeline of one batch: its phases as spans
// from their first arrival to the next phase's (the text to the last
// token), at p50.
func timelineRow(b *summary.Batch) svg.Row {
	t := b.Timeline
	type edge struct {
		name, color string
		m           *summary.Metric
	}
	edges := []edge{{"waiting", htmlWaitColor, nil}, {"reasoning", htmlReasoningColor, &t.FirstReasoning},
		{"tool call", htmlToolCallColor, &t.FirstToolCall}, {"text", htmlTextColor, &t.FirstText}}
	row := svg.Row{Label: b.Name}
	from := 0.0
	for i, e := range edges {
		if e.m != nil {
			if e.m.N == 0 {
				continue
			}
			from = e.m.P50Ms
		}
		to := t.LastToken.P50Ms
		for _, next := range edges[i+1:] {
			if next.m.N > 0 {
				to = next.m.P50Ms
				break
			}
		}
		if e.m == nil && t.FirstEvent.N > 0 { // waiting ends with the first event
			to = t.FirstEvent.P50Ms
		}
		row.Spans = append(row.Spans, svg.Span{Name: e.name, Color: e.color, From: from, To: to})
	}
	if b.Phases != nil && b.Phases.Head.N > 0 {
		row.Marks = append(row.Marks, svg.Mark{Name: "response head", Color: htmlHeadColor, At: b.Phases.Head.P50Ms})
	}
	return row
}
