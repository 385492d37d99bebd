package report

import "github.com/sse-latency/sse-latency/internal/verdict"

// signatureLines words the signature of a verdict, for the text block and
// the HTML box alike (verdictWords): its kind and evidence. The fix it
// points to is the advice's (adviceWords). A verdict without one (an
// unknown class, a document written before signatures) has no line.
//
//	signature                time period: released every ~250 ms (quartile spread 0.02), ~50 tokens at a time
func signatureLines(s *verdict.Signature) []verdictLine {
	if s == nil {
		return nil
	}
	return []verdictLine{{"signature", s.Title() + ": " + s.Evidence}}
}
