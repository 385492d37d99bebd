package verdict

// Finding is one thing the tool found about how the gateway treated the
// answers' phases, heartbeats and silences, with its evidence: a named
// line of the verdict block. Package summary derives the findings from a
// batch's timeline (summary.Findings); Requests and Of say how many
// requests showed it among those that could, and the other fields, each
// used by the findings named in its comment (and absent from the others'
// JSON), are the evidence. Durations are in milliseconds.
type Finding struct {
	Name     string `json:"name"`     // one of the Finding* names
	Requests int64  `json:"requests"` // requests that showed it
	Of       int64  `json:"of"`       // requests that could: judged, asked, counted

	// FindingHeldStart: what the gateway held ("head" or "first_event"),
	// when it arrived (p50 since the server began the stream, or since
	// the request was written without the server's record), when the
	// server emitted its first token after the think (p50, same origin),
	// and whether it came only with the first visible token.
	Held       string  `json:"held,omitempty"`
	ReleasedMs float64 `json:"released_ms,omitempty"`
	ThinkMs    float64 `json:"think_ms,omitempty"`
	WithText   bool    `json:"with_text,omitempty"`

	// FindingArgumentsHeld: the spreads (last minus first, p50) of the
	// argument deltas' arrivals and of their emissions.
	ArrivalSpreadMs  float64 `json:"arrival_spread_ms,omitempty"`
	EmissionSpreadMs float64 `json:"emission_spread_ms,omitempty"`

	// FindingIdleCut: the silence before the end (p50, min, max), what the
	// cut requests had received (requests with the head, events, tokens
	// of any phase) and how the first one ended (its failure text).
	SilenceMs    float64 `json:"silence_ms,omitempty"`
	SilenceMinMs float64 `json:"silence_min_ms,omitempty"`
	SilenceMaxMs float64 `json:"silence_max_ms,omitempty"`
	Heads        int64   `json:"heads,omitempty"`
	Events       int64   `json:"events,omitempty"`
	Tokens       int64   `json:"tokens,omitempty"`
	Failure      string  `json:"failure,omitempty"`

	// FindingHeartbeatsInjected, FindingHeartbeatsSwallowed: the
	// heartbeats the server wrote and the client saw (requests of Of),
	// and how many were injected or swallowed in all.
	Sent       int64 `json:"sent,omitempty"`
	Seen       int64 `json:"seen,omitempty"`
	Heartbeats int64 `json:"heartbeats,omitempty"`
}

// The findings' names, in the order the verdict lists them.
const (
	FindingHeldStart           = "held_start"           // the head or first event came only after the think
	FindingReasoningDropped    = "reasoning_dropped"    // the answers came without their reasoning
	FindingReasoningConverted  = "reasoning_converted"  // the reasoning came as visible text
	FindingArgumentsHeld       = "arguments_held"       // a tool call's argument deltas came together
	FindingIdleCut             = "idle_cut"             // streams ended after a long silence
	FindingHeartbeatsInjected  = "heartbeats_injected"  // the client saw heartbeats the server did not send
	FindingHeartbeatsSwallowed = "heartbeats_swallowed" // the server's heartbeats did not reach the client
)

// FindingNames lists the findings in the order the verdict lists them.
var FindingNames = []string{FindingHeldStart, FindingReasoningDropped, FindingReasoningConverted, FindingArgumentsHeld,
	FindingIdleCut, FindingHeartbeatsInjected, FindingHeartbeatsSwallowed}
