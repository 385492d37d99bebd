package report

import "github.com/sse-latency/sse-latency/internal/verdict"

// signatureLines words the signature of a verdict, for the text block and
// the HTML box alike (verdictWords): its kind and evidence, then the fix
// it points to (none for a gateway that flushes every event). A verdict
// without one (an unknown class, a document written before signatures)
// has no line.
//
//	signature                time period: released every ~250 ms (period varying 2%), in bursts of ~50 tokens
//	signature fix            a periodic flush: set the gateway's flush interval to immediate (…)
func signatureLines(s *verdict.Signature) []verdictLine {
	if s == nil {
		return nil
	}
	lines := []verdictLine{{"signature", s.Title() + ": " + s.Evidence}}
	if c := s.Cause(); c != "" {
		lines = append(lines, verdictLine{"signature fix", c})
	}
	return lines
}
