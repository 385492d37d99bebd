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
