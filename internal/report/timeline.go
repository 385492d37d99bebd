package report

import (
	"fmt"
	"io"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/summary"
)

// WriteTimeline writes the timeline block (Go tool only; the CLI omits it
// under --compat), after the stream block, when a batch's timeline is
// notable (summary.Timeline.Notable: phases before the text, a think long
// enough to judge, an idle cut, heartbeats injected or swallowed); nothing
// otherwise. For each such batch (loopback first), the lines it has data
// for:
//
//	=== timeline ===
//	first          gateway  p50/p99 ms from the request: head 0.210/0.300, event 0.212/0.301, reasoning 0.215/0.305, tool call 1000.120/1000.400, visible 1050.130/1050.500, last 1195.140/1195.600
//	emit->recv     gateway  p50/p99 ms: reasoning 0.050/0.200 (n=60), tool call 0.040/0.100 (n=30), text 0.040/0.120 (n=90)
//	heartbeats     gateway  15 seen; the server sent 15 to the 5 ok requests it has a record of: 0 injected, 0 swallowed
//	silence        gateway  longest per request p50 50.010 ms, max 60.000 ms
//
// first: when each phase began, from the request's write — the response
// head, the first event (pings aside), the first reasoning delta,
// tool-call delta and visible token (TTFO), and the last token of any
// phase. emit->recv: the one-way delay of each phase's tokens (the
// reference's metrics above are the text's). heartbeats: the comments and
// ping events the client saw, against those the server wrote.
// silence: the longest time each request went without a byte.
func WriteTimeline(w io.Writer, s *summary.Run) error {
	var bs []*summary.Batch
	for _, b := range []*summary.Batch{s.Loop(), s.Gateway()} {
		if b != nil && b.Timeline != nil && b.Timeline.Notable() {
			bs = append(bs, b)
		}
	}
	if len(bs) == 0 {
		return nil
	}
	p := printer{w: w}
	p.printf("=== timeline ===\n")
	for _, b := range bs {
		timelineLines(&p, b)
	}
	return p.err
}

// timelineLines writes the lines of one batch.
func timelineLines(p *printer, b *summary.Batch) {
	t := b.Timeline
	first := []summary.NamedMetric{{Name: "event", Metric: &t.FirstEvent}, {Name: "reasoning", Metric: &t.FirstReasoning},
		{Name: "tool call", Metric: &t.FirstToolCall}, {Name: "visible", Metric: &t.FirstText}, {Name: "last", Metric: &t.LastToken}}
	if b.Phases != nil {
		first = append([]summary.NamedMetric{{Name: "head", Metric: &b.Phases.Head}}, first...)
	}
	metricsLine(p, "first", b.Name, "p50/p99 ms from the request:", first, false)
	metricsLine(p, "emit->recv", b.Name, "p50/p99 ms:", []summary.NamedMetric{{Name: "reasoning", Metric: &t.EmitRecv.Reasoning},
		{Name: "tool call", Metric: &t.EmitRecv.ToolCall}, {Name: "text", Metric: &t.EmitRecv.Text}}, true)
	if line := heartbeatsLine(b); line != "" {
		p.printf("%s\n", line)
	}
	if m := t.LongestSilence; m.N > 0 {
		p.printf("%-14s %-8s longest per request p50 %.3f ms, max %.3f ms\n", "silence", b.Name, m.P50Ms, m.MaxMs)
	}
}

// heartbeatsLine returns the heartbeats line of b without its line end,
// "" when it saw and sent none.
func heartbeatsLine(b *summary.Batch) string {
	h := b.Timeline.Heartbeats
	if h.Seen == 0 && h.Sent == 0 {
		return ""
	}
	line := fmt.Sprintf("%-14s %-8s %d seen", "heartbeats", b.Name, h.Seen)
	if h.Known == 0 {
		return line + "; no record of the server's to compare with"
	}
	return line + fmt.Sprintf("; the server sent %d to the %d ok %s it has a record of: %d injected, %d swallowed",
		h.Sent, h.Known, plural(h.Known, "request"), h.Injected, h.Swallowed)
}

// metricsLine writes "<label> <batch> <what> name p50/p99, ..." for the
// metrics with samples (with their n when withN); nothing without any.
func metricsLine(p *printer, label, batch, what string, ms []summary.NamedMetric, withN bool) {
	sep := " "
	for _, nm := range ms {
		m := nm.Metric
		if m.N == 0 {
			continue
		}
		if sep == " " {
			p.printf("%-14s %-8s %s", label, batch, what)
		}
		p.printf("%s%s %.3f/%.3f", sep, nm.Name, m.P50Ms, m.P99Ms)
		if withN {
			p.printf(" (n=%d)", m.N)
		}
		sep = ", "
	}
	if sep != " " {
		p.printf("\n")
	}
}

// TimelineLine returns the verbose per-request line of r's timeline, in
// milliseconds from the request's write, without a line end (Go tool; the
// CLI prints it under --verbose):
//
//	gw   3: first event 0.212, reasoning 0.215, tool call 1000.120, visible 1050.130 ms; 3 heartbeats (the server's 3); longest silence 50.010 ms
//
// A phase that did not come is "-"; the server's heartbeats are given when
// the client found its record.
func TimelineLine(r *result.Request) string {
	at := func(t int64) string {
		if t == 0 || r.Sent == 0 {
			return "-"
		}
		return fmt.Sprintf("%.3f", stats.Ms(t-r.Sent))
	}
	line := fmt.Sprintf("%s %3d: first event %s, reasoning %s, tool call %s, visible %s ms; %d heartbeats", r.Batch, r.Index,
		at(r.FirstEventAt), at(r.FirstReasoningAt), at(r.FirstToolCallAt), at(r.FirstTextAt), r.Comments+r.Pings)
	if r.ServerRecord {
		line += fmt.Sprintf(" (the server's %d)", r.ServerHeartbeats)
	}
	return line + fmt.Sprintf("; longest silence %.3f ms", stats.Ms(summary.LongestSilence(r)))
}
