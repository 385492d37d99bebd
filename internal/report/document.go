package report

import (
	"encoding/json"
	"time"

	"github.com/sse-latency/sse-latency/internal/stats"
)

// SchemaVersion is the version of the JSON document (Document). It changes
// when a field changes meaning or disappears; new fields may appear without
// a change.
const SchemaVersion = 1

// Document is a whole measurement as --json writes it and as the report,
// merge and compare subcommands read it: everything needed to re-render the
// text and HTML reports later, and to merge runs exactly (histograms are
// serialised, not only their percentiles). Times are RFC 3339; durations
// and delays are milliseconds (_ms) unless a field says otherwise.
type Document struct {
	SchemaVersion int             `json:"schema_version"`
	Tool          ToolInfo        `json:"tool"`
	Environment   Environment     `json:"environment"`
	Config        json.RawMessage `json:"config"` // the normalised command-line configuration (cli.Config)
	Start         time.Time       `json:"start"`
	End           time.Time       `json:"end"`
	EndReason     string          `json:"end_reason"` // "done", "interrupted" or "setup_failed"
	ExitCode      int             `json:"exit_code"`
	Runs          int             `json:"runs"` // 1, or how many runs were merged into this one

	Batches  []Batch      `json:"batches"`            // "loopback" first when it ran, then "gateway"
	Overhead *Overhead    `json:"overhead,omitempty"` // gateway minus loopback; absent without calibration
	Verdict  *VerdictInfo `json:"verdict,omitempty"`
	Self     Self         `json:"self"` // the tool's own behaviour: emission lateness, CPU

	// Notes say what a merge could not combine exactly (see Merge); absent
	// from a single run.
	Notes []string `json:"notes,omitempty"`
}

// ToolInfo identifies the program that wrote the document.
type ToolInfo struct {
	Name      string `json:"name"`       // "sse-latency"
	Version   string `json:"version"`    // from the build info
	GoVersion string `json:"go_version"` // runtime.Version()
}

// Environment is where the run happened.
type Environment struct {
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	NumCPU     int    `json:"num_cpu"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Hostname   string `json:"hostname"`
}

// Batch is one batch of requests: the loopback calibration or the gateway.
type Batch struct {
	Name     string        `json:"name"`   // "loopback" or "gateway"
	Target   string        `json:"target"` // address the requests went to
	Requests int           `json:"requests"`
	OK       int           `json:"ok"`
	Failed   int           `json:"failed"`
	Tokens   int64         `json:"tokens"` // tokens of ok requests (the reference's count)
	Failures []FailureKind `json:"failures"`
	Metrics  Metrics       `json:"metrics"`
	Stream   Stream        `json:"stream"`

	// Go tool, present only when the batch has them (documents written
	// before these fields read as a batch without any).
	Warmup        int          `json:"warmup,omitempty"`         // warm-up requests, left out of everything else
	Connections   *Connections `json:"connections,omitempty"`    // the connections that carried the requests
	Phases        *Phases      `json:"phases,omitempty"`         // the phases of the time to first token
	StartLateness *Metric      `json:"start_lateness,omitempty"` // open loop: request start − its schedule

	Samples Samples `json:"samples"`
}

// Connections are the connections that carried a batch's requests (warm-ups
// left out; see stats.Batch).
type Connections struct {
	Opened                int            `json:"opened"`                  // requests that opened their connection
	OpenedByWarmup        int            `json:"opened_by_warmup"`        // connections opened by warm-up requests, then reused
	Requests              int            `json:"requests"`                // requests carried by a connection
	RequestsPerConnection float64        `json:"requests_per_connection"` // requests / (opened + opened_by_warmup); 0 without connections
	ReuseFailures         int            `json:"reuse_failures"`          // kept connections found closed by the peer; the request went again on a new one
	Poisoned              int            `json:"poisoned"`                // kept connections closed because of bytes after, or no, framing end
	Protocols             map[string]int `json:"protocols"`               // requests per protocol: "HTTP/1.1", "h2", "h2c"
}

// Phases are the phases of the time to first token (k6-style), one sample
// per request where both ends are known.
type Phases struct {
	Connect    Metric `json:"connect"`     // TCP connect (new connections)
	TLS        Metric `json:"tls"`         // TLS handshake
	Written    Metric `json:"written"`     // request written, from the connection ready (or the start)
	Head       Metric `json:"head"`        // response head received, from the request written
	FirstToken Metric `json:"first_token"` // first token, from the response head
}

// FailureKind counts the failed requests of one kind, with their texts.
type FailureKind struct {
	Kind  string      `json:"kind"` // result.Kind.String(): "timeout", "integrity", …
	Count int         `json:"count"`
	Texts []TextCount `json:"texts"` // the distinct failure texts (bounded), most frequent first
	Other int         `json:"other"` // failures whose text did not fit in Texts
}

// TextCount is one failure text and how often it occurred.
type TextCount struct {
	Text  string `json:"text"`
	Count int    `json:"count"`
}

// Metrics are the four distributions of a batch (SPEC §4).
type Metrics struct {
	TTFT          Metric `json:"ttft"`            // request sent -> first token received
	FirstEmitRecv Metric `json:"first_emit_recv"` // one-way delay of the first token
	InterToken    Metric `json:"inter_token"`     // gap between consecutive arrivals
	EmitRecv      Metric `json:"emit_recv"`       // one-way delay of tokens 2..n
}

// Metric is one distribution: its summary in milliseconds (percentiles by
// the SPEC's rank rule, see package stats) and its serialised histogram,
// from which the summary can be recomputed and runs merged exactly.
type Metric struct {
	N         int64          `json:"n"`
	MeanMs    float64        `json:"mean_ms"`
	StddevMs  float64        `json:"stddev_ms"`
	MinMs     float64        `json:"min_ms"`
	P50Ms     float64        `json:"p50_ms"`
	P90Ms     float64        `json:"p90_ms"`
	P95Ms     float64        `json:"p95_ms"`
	P99Ms     float64        `json:"p99_ms"`
	P999Ms    float64        `json:"p99_9_ms"`
	MaxMs     float64        `json:"max_ms"`
	Histogram stats.Snapshot `json:"histogram"`
}

// Stream is how the tokens travelled (see report.WriteStream).
type Stream struct {
	ByPiTs           int64 `json:"by_pi_ts"`
	ByContent        int64 `json:"by_content"`
	Unmeasured       int64 `json:"unmeasured"`
	Reads            int64 `json:"reads"`
	Events           int64 `json:"events"`
	Bytes            int64 `json:"bytes"`
	MaxTokensPerRead int   `json:"max_tokens_per_read"`
	IntegrityErrors  int   `json:"integrity_errors"`
	Unstamped        int64 `json:"unstamped"` // tokens without an emission time, left out of the emit->recv metrics
}

// Samples are the few raw series the HTML report plots, bounded whatever
// the number of requests.
type Samples struct {
	// Requests is one entry per request, or a uniform sample of at most
	// MaxRequestSamples of them (Sampled then says so).
	Requests []RequestSample `json:"requests"`
	Sampled  bool            `json:"sampled"`
	// Series are the per-token delays of a few representative requests
	// (the fastest, the median and the slowest by mean emit->recv),
	// downsampled to at most MaxSeriesPoints points each.
	Series []Series `json:"series"`
}

// Bounds of Samples.
const (
	MaxRequestSamples = 2000
	MaxSeriesPoints   = 500
)

// RequestSample is one request's headline figures.
type RequestSample struct {
	Index  int     `json:"index"`
	OK     bool    `json:"ok"`
	TTFTMs float64 `json:"ttft_ms"` // -1 when no token arrived
	WallMs float64 `json:"wall_ms"`
	Tokens int     `json:"tokens"`
}

// Series is the emit->recv delay of each token of one request against the
// token's arrival time since the request was sent.
type Series struct {
	Label  string       `json:"label"` // "fastest", "median", "slowest"
	Index  int          `json:"index"` // the request's index in its batch
	Tokens int          `json:"tokens"`
	Points [][2]float64 `json:"points"` // [arrival since sent ms, emit->recv ms]
}

// Overhead is the gateway statistic minus the loopback one (SPEC §6), for
// the mean and each percentile, in milliseconds. A metric without samples
// on either side is absent.
type Overhead struct {
	FirstEmitRecv *Delta `json:"first_emit_recv,omitempty"`
	EmitRecv      *Delta `json:"emit_recv,omitempty"`
	TTFT          *Delta `json:"ttft,omitempty"`
	InterToken    *Delta `json:"inter_token,omitempty"`
}

// Delta is one overhead line.
type Delta struct {
	MeanMs float64 `json:"mean_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P95Ms  float64 `json:"p95_ms"`
	P99Ms  float64 `json:"p99_ms"`
}

// VerdictInfo is verdict.Verdict in snake_case.
type VerdictInfo struct {
	Class             string   `json:"class"` // "flushes", "buffers" or "unknown"
	Reason            string   `json:"reason,omitempty"`
	Tokens            int64    `json:"tokens"`
	CoalescedFraction float64  `json:"coalesced_fraction"`
	LoopCoalesced     float64  `json:"loop_coalesced_fraction"` // -1 without calibration
	Noisy             bool     `json:"noisy"`                   // the calibration itself coalesced: the tool was overloaded
	BurstSizeP50      float64  `json:"burst_size_p50"`
	BurstSizeMax      int64    `json:"burst_size_max"`
	Bursts            int64    `json:"bursts"` // bursts of 2 or more tokens
	BurstPeriodMs     float64  `json:"burst_period_ms"`
	EmitGapMs         float64  `json:"emit_gap_ms"`
	AddedMeanMs       float64  `json:"added_mean_ms"`
	AddedP50Ms        float64  `json:"added_p50_ms"`
	AddedP99Ms        float64  `json:"added_p99_ms"`
	Relative          bool     `json:"relative"` // added_* are gateway minus loopback
	FirstTokenHold    bool     `json:"first_token_hold"`
	FirstTokenHoldMs  float64  `json:"first_token_hold_ms"`
	FollowingMs       float64  `json:"following_ms"`  // typical emit->recv of the tokens after the first
	HoldRequests      int64    `json:"hold_requests"` // requests that gave a first-token hold sample
	Causes            []string `json:"causes"`
}

// Self is the tool's own behaviour during the run: how late the server
// wrote tokens against their schedule, and the CPU the process used.
type Self struct {
	Lateness Metric  `json:"emission_lateness"`
	UserS    float64 `json:"cpu_user_s"`
	SystemS  float64 `json:"cpu_system_s"`
	Warning  string  `json:"warning,omitempty"` // the "fell behind" warning, when printed
}
