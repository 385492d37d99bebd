package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/sse-latency/sse-latency/internal/failures"
	"github.com/sse-latency/sse-latency/internal/summary"
)

// WriteFailures writes the failures block (Go tool only; omitted under
// --compat, printed with -q too), after the reference's blocks, when a
// batch of s had failed requests: for each such batch (loopback first) its
// failures grouped by what went wrong (package failures), the most
// frequent first — each group's count, its share of the batch's requests,
// when the first and the last of them ended (from the batch's first
// request), for the groups whose requests had received tokens how many
// and how long they had run (p50 and max), and the first one's message,
// sanitised:
//
//	=== failures ===
//	gateway    400 of 400 requests failed (times from the batch's start)
//	  connection closed mid-stream  200  50.0%  first +2.014 s  last +2.016 s  after 181 tokens p50 (max 190), 1.9 s p50 (max 2.0 s)
//	      e.g. connection closed before [DONE]
//	  connection refused            200  50.0%  first +2.016 s  last +2.171 s
//	      e.g. connect(): Connection refused
//
// A batch of a document written before failure summaries has none: the
// block leaves it out.
func WriteFailures(w io.Writer, s *summary.Run) error {
	var batches []*summary.Batch
	for i := range s.Batches {
		if fs := s.Batches[i].FailureSummary; fs != nil && fs.Failed > 0 {
			batches = append(batches, &s.Batches[i])
		}
	}
	if len(batches) == 0 {
		return nil
	}
	p := printer{w: w}
	p.printf("=== failures ===\n")
	for _, b := range batches {
		fs := b.FailureSummary
		p.printf("%-10s %d of %d requests failed (times from the batch's start)\n", b.Name, fs.Failed, fs.Requests)
		width, cw := 0, 0
		for _, g := range fs.Groups {
			width = max(width, len(failures.Sanitize(g.Title)))
			cw = max(cw, len(fmt.Sprint(g.Count)))
		}
		for i := range fs.Groups {
			g := &fs.Groups[i]
			p.printf("  %-*s  %*d  %5.1f%%  first %s  last %s%s\n", width, failures.Sanitize(g.Title), cw, g.Count,
				100*share(g.Count, fs.Requests), failures.At(g.FirstNs), failures.At(g.LastNs), afterText(g))
			if ex := failures.Sanitize(g.Example); ex != "" {
				p.printf("      e.g. %s\n", ex)
			}
		}
	}
	return p.err
}

// share is n of total, 0 of none.
func share(n, total int) float64 {
	if total <= 0 {
		return 0
	}
	return float64(n) / float64(total)
}

// afterText is how far a group's requests had got, for a group whose
// requests can have received tokens or did: "  after 181 tokens p50 (max
// 190), 2.0 s p50 (max 2.0 s)"; "" for the others.
func afterText(g *failures.GroupSummary) string {
	if k, _ := failures.ParseKind(g.Kind); !k.MidStream() && g.Tokens.Max == 0 {
		return ""
	}
	return fmt.Sprintf("  after %d tokens p50 (max %d), %s p50 (max %s)", g.Tokens.P50, g.Tokens.Max,
		failures.Duration(g.AgeNs.P50), failures.Duration(g.AgeNs.Max))
}

// failureAdvice words the advice for the failed requests of a batch's
// summary: a line per advice row of each group (failures.AdviceFor), the
// group's title first, the most frequent group first; nil when none
// failed.
func failureAdvice(fs *failures.Summary) []string {
	if fs == nil {
		return nil
	}
	var out []string
	for i := range fs.Groups {
		g := &fs.Groups[i]
		for _, row := range failures.AdviceFor(g) {
			out = append(out, failures.Sanitize(g.Title)+": "+row.Text)
		}
	}
	return out
}

// basisNote says which requests a verdict's timing was judged on, for a
// batch with failures: "" when none failed, or for a document written
// before the verdict said.
func basisNote(basis string, requests int64) string {
	switch {
	case requests == 0:
		return ""
	case basis == "completed":
		return fmt.Sprintf("judged on the %d completed %s", requests, plural(requests, "request"))
	case basis == "partial":
		return fmt.Sprintf("judged on the partial streams of %d failed %s", requests, plural(requests, "request"))
	}
	return ""
}

// headlineWith inserts a note into a verdict's headline, after its class
// ("gateway buffers (judged on …): 99.1% …"), or at its end when it has no
// colon.
func headlineWith(h, note string) string {
	if note == "" {
		return h
	}
	if i := strings.Index(h, ": "); i >= 0 {
		return h[:i] + " (" + note + ")" + h[i:]
	}
	return h + " (" + note + ")"
}
