package verdict

import (
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
)

// accumulator is a placeholder until the classifier lands.
type accumulator struct{}

func newAccumulator() accumulator { return accumulator{} }

func (a *accumulator) add(r *result.Request) {}

func classify(loop, gw *Accumulator, loopStats, gwStats *stats.Batch) Verdict {
	return Verdict{Reason: "not implemented"}
}
