package report

import (
	"io"

	"github.com/sse-latency/sse-latency/internal/verdict"
)

// WriteVerdict writes the buffering verdict block that follows the overhead
// block (Go tool only; omitted under --compat).
func WriteVerdict(w io.Writer, v verdict.Verdict) error {
	return nil
}
