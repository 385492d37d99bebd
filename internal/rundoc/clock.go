package rundoc

import (
	"errors"
	"fmt"
	"math"

	"github.com/sse-latency/sse-latency/internal/summary"
)

// validateClock checks the clock object of a run across hosts: finite
// figures, a bound and round trip that are not negative, at least one
// estimate, and a list of the figures below the bound.
func validateClock(c *summary.Clock) error {
	for _, f := range []struct {
		Name  string
		Value float64
	}{{"offset_ms", c.OffsetMs}, {"bound_ms", c.BoundMs}, {"drift_ms", c.DriftMs}, {"min_rtt_ms", c.MinRTTMs}} {
		if math.IsNaN(f.Value) || math.IsInf(f.Value, 0) || (f.Name != "offset_ms" && f.Value < 0) {
			return fmt.Errorf("clock.%s is %v", f.Name, f.Value)
		}
	}
	if c.Estimates < 1 {
		return fmt.Errorf("clock.estimates is %d, want at least 1", c.Estimates)
	}
	if c.BelowBound == nil {
		return errors.New("clock.below_bound: absent")
	}
	return nil
}

// mergeClocks combines the clocks of runs across hosts (each instance with
// its own offset to its own server): the largest bound and drift, the
// shortest round trip, the estimates summed, the first run's offset (a note
// says when they differ). nil when no run has one; the figures below the
// bound are marked again on the merged run.
func mergeClocks(docs []*Document, name func(int) string) (*summary.Clock, []string) {
	var out *summary.Clock
	var notes []string
	for i, d := range docs {
		c := d.Clock
		if c == nil {
			continue
		}
		if out == nil {
			cp := *c
			out = &cp
			continue
		}
		out.BoundMs = max(out.BoundMs, c.BoundMs)
		out.DriftMs = max(out.DriftMs, c.DriftMs)
		out.MinRTTMs = min(out.MinRTTMs, c.MinRTTMs)
		out.Estimates += c.Estimates
		if c.OffsetMs != out.OffsetMs && len(notes) == 0 {
			notes = append(notes, fmt.Sprintf("each run had its own clock offset to its server (%s: %+.3f ms, %s: %+.3f ms, …); clock keeps %s's and the largest bound",
				name(0), docs[0].clockOffset(), name(i), c.OffsetMs, name(0)))
		}
	}
	if out != nil {
		out.BelowBound = []string{}
	}
	return out, notes
}

// clockOffset is d's clock offset, 0 without a clock.
func (d *Document) clockOffset() float64 {
	if d.Clock == nil {
		return 0
	}
	return d.Clock.OffsetMs
}
