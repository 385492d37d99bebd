package stats

// Ms converts a duration in nanoseconds to milliseconds, the unit every
// figure is printed and stored in.
func Ms(ns int64) float64 { return float64(ns) / 1e6 }
