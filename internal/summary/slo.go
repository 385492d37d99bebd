package summary

// SLOs is the check of a run's service-level objectives (--slo, parsed and
// checked by package slo): each objective with the figure observed, and the
// goodput.
type SLOs struct {
	Met     bool       `json:"met"` // every objective was met
	Checks  []SLOCheck `json:"checks"`
	Goodput *Goodput   `json:"goodput,omitempty"` // present when any objective is per request
}

// SLOCheck is one objective and how the run fared.
type SLOCheck struct {
	SLO        string  `json:"slo"`              // the objective, as package slo writes it: "gateway emit->recv (tokens) p99 < 1ms"
	Met        bool    `json:"met"`              // the observed figure is within the bound
	ObservedMs float64 `json:"observed_ms"`      // the figure; 0 when there is none (Reason)
	BoundMs    float64 `json:"bound_ms"`         // the bound, in milliseconds
	Reason     string  `json:"reason,omitempty"` // why there is no figure ("no samples"), which counts as not met
	PerRequest bool    `json:"per_request"`      // a per-request metric (TTFT, first-token emit->recv): it counts in the goodput
}

// Goodput is the share of the gateway's requests that succeeded and met
// every per-request objective (warm-ups left out).
type Goodput struct {
	Requests int     `json:"requests"`
	Good     int     `json:"good"`
	Share    float64 `json:"share"` // good / requests, 0 without requests
}
