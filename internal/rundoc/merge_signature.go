package rundoc

import (
	"fmt"
	"strings"

	"github.com/sse-latency/sse-latency/internal/verdict"
)

// mergeSignatures combines the signatures of the runs' verdicts (all of
// one class, see mergeVerdicts): kept when every run found the same kind
// and shape — its pauses summed, its other figures and evidence the first
// run's, as a note says — dropped with a note otherwise. Runs without a
// signature (documents older than them) drop it silently.
func mergeSignatures(docs []*Document, name func(int) string) (*verdict.Signature, []string) {
	var kinds []string
	same := true
	for i, d := range docs {
		s := d.Verdict.Signature
		if s == nil {
			return nil, nil
		}
		kinds = append(kinds, name(i)+": "+s.Kind.Name())
		if f := docs[0].Verdict.Signature; s.Kind != f.Kind || s.Shape != f.Shape {
			same = false
		}
	}
	if !same {
		return nil, []string{"signature dropped: the runs disagree (" + strings.Join(kinds, ", ") + ")"}
	}
	out := *docs[0].Verdict.Signature
	out.Pauses, out.HeldPauses = 0, 0
	for _, d := range docs {
		out.Pauses += d.Verdict.Signature.Pauses
		out.HeldPauses += d.Verdict.Signature.HeldPauses
	}
	return &out, []string{fmt.Sprintf("signature: the %d merged runs all found %q; the pauses are summed, "+
		"the other figures and the evidence are the first run's", len(docs), out.Kind.Name())}
}
