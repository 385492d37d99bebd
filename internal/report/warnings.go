package report

import (
	"github.com/sse-latency/sse-latency/internal/rundoc"
	"io"
	"strings"
)

// InterruptedLine is what a run stopped by a signal prints after its
// report.
const InterruptedLine = "interrupted: the report covers the requests that finished or were cut short"

// Warnings returns the lines a run prints on stderr after its report to
// say that its figures need care, in this order: a merge forced over what
// merge refuses (one line per difference, rundoc.Document.Forced), the
// tool's own overload ("warning: sse-latency fell behind its own emission
// schedule …", one line per run for a merged document), each objective
// not met ("SLO not met: …"), and the interruption when the run was
// stopped. The run prints them from its
// document, `sse-latency report` from the saved one, and the HTML report
// shows them: the same lines wherever the run is looked at.
func Warnings(d *rundoc.Document) []string {
	var out []string
	for _, f := range d.Forced {
		out = append(out, "warning: merged with --force although "+f+": the figures may mix different measurements")
	}
	for w := range strings.SplitSeq(d.Self.Warning, "\n") {
		if w != "" {
			out = append(out, "warning: "+w)
		}
	}
	out = append(out, sloWarnings(d.SLO)...)
	if d.EndReason == rundoc.EndInterrupted {
		out = append(out, InterruptedLine)
	}
	return out
}

// WriteWarnings writes the lines of Warnings, each with a newline.
func WriteWarnings(w io.Writer, d *rundoc.Document) error {
	for _, l := range Warnings(d) {
		if _, err := io.WriteString(w, l+"\n"); err != nil {
			return err
		}
	}
	return nil
}
