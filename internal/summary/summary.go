// Package summary is the one model every report renders: per batch the
// counts, the failures by kind with their texts, every metric with its
// serialised histogram, the stream and connection figures; then the
// overhead (gateway minus loopback), the buffering verdict and the tool's
// own behaviour (emission lateness, CPU, the warning it printed).
//
// A Run is computed once, from the records (New, through a Collector per
// batch), and saved as it is in the run document (package rundoc, whose
// batches, overhead, verdict and self objects are these types). The text,
// JSON and HTML reports render from it, and `sse-latency report RUN.json`
// renders from the summary the document stores, without recomputing it.
// Summary figures are in milliseconds; the histograms, in nanoseconds, are
// the authority a merge recomputes them from (Batch.Stats).
package summary

import (
	"github.com/sse-latency/sse-latency/internal/failures"
	"github.com/sse-latency/sse-latency/internal/gateway"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// Batch names (Batch.Name).
const (
	LoopbackBatch = "loopback"
	GatewayBatch  = "gateway"
)

// Batch titles, as the text report prints them (SPEC §6).
const (
	LoopbackTitle = "loopback (direct to listen address)"
	GatewayTitle  = "gateway"
)

// Run is the summary of one measurement, or of several merged.
type Run struct {
	Batches  []Batch           `json:"batches"`            // "loopback" first when it ran, then "gateway"
	Overhead *Overhead         `json:"overhead,omitempty"` // gateway minus loopback; absent without calibration
	Verdict  *verdict.Verdict  `json:"verdict,omitempty"`  // absent when no gateway batch ran
	Identity *gateway.Identity `json:"gateway,omitempty"`  // the gateway, named (package gateway); absent when no gateway batch ran, and in documents written before
	Self     Self              `json:"self"`               // the tool's own behaviour: emission lateness, CPU
	Clock    *Clock            `json:"clock,omitempty"`    // across hosts: the clock offset and its bound; absent in one process

	// Rounds are the rounds of an interleaved run (--rounds); absent for
	// the reference's single calibration. The overhead is then theirs.
	Rounds *Rounds `json:"rounds,omitempty"`
	// SLO is the check of the run's service-level objectives (--slo);
	// absent without any.
	SLO *SLOs `json:"slo,omitempty"`
	// Replay is the trace the gateway batch replayed (--trace); absent
	// without one. How far it fell behind its schedule is the gateway
	// batch's start lateness.
	Replay *Replay `json:"replay,omitempty"`
}

// Replay describes a trace replay: the file and its format, its requests
// and how many the run's bounds let it start, the bad lines skipped, whether
// its timestamps had to be sorted, the speed, and the bound that stopped
// it before its end ("--trace-limit", "--duration"; "" when none did).
type Replay struct {
	File      string  `json:"file"`
	Format    string  `json:"format"`
	Entries   int     `json:"entries"`
	Replayed  int     `json:"replayed"`
	Skipped   int     `json:"skipped"`
	Sorted    bool    `json:"sorted"`
	Speed     float64 `json:"speed"`
	StoppedBy string  `json:"stopped_by"`
}

// Batch returns the batch named name, nil when absent.
func (r *Run) Batch(name string) *Batch {
	for i := range r.Batches {
		if r.Batches[i].Name == name {
			return &r.Batches[i]
		}
	}
	return nil
}

// Loop returns the calibration batch, nil when none ran.
func (r *Run) Loop() *Batch { return r.Batch(LoopbackBatch) }

// Gateway returns the gateway batch, nil when none ran.
func (r *Run) Gateway() *Batch { return r.Batch(GatewayBatch) }

// Batch is one batch of requests: the loopback calibration or the gateway.
type Batch struct {
	Name     string        `json:"name"`   // LoopbackBatch or GatewayBatch
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
	Transport     string       `json:"transport,omitempty"`      // TransportWebSocket when the requests went over WebSocket; absent: SSE over HTTP
	Warmup        int          `json:"warmup,omitempty"`         // warm-up requests, left out of everything else
	Connections   *Connections `json:"connections,omitempty"`    // the connections that carried the requests
	Phases        *Phases      `json:"phases,omitempty"`         // the phases of the time to first token
	StartLateness *Metric      `json:"start_lateness,omitempty"` // open loop: request start − its schedule
	RequestLeg    *Metric      `json:"request_leg,omitempty"`    // the server's arrival − request sent: the request through the gateway
	Timeline      *Timeline    `json:"timeline,omitempty"`       // the answers' phases, heartbeats and silences (documents before it have none)
	// Declared are the timings the gateway declared in its response
	// heads, present when any head did.
	Declared *DeclaredTimings `json:"declared,omitempty"`
	// Replicas split a gateway batch across hosts by the server replica
	// that served each request (--server, one control endpoint per
	// replica); absent in one process.
	Replicas []Replica `json:"replicas,omitempty"`
	// FailureSummary groups the failed requests by what went wrong
	// (package failures): always present, its groups empty when none
	// failed; absent from documents written before it.
	FailureSummary *failures.Summary `json:"failure_summary,omitempty"`
	// Sizes is the time to first token and token delay by request size
	// (prompt bytes, output tokens); Usage how the usage objects arrived
	// against what the server reported. Present when the batch has them.
	Sizes *Sizes `json:"sizes,omitempty"`
	Usage *Usage `json:"usage,omitempty"`
	// Cost is what the batch cost in CPU, the tool's and the gateway's,
	// and how busy the host was; absent when not sampled (documents
	// before it, platforms without /proc, a merge).
	Cost *Cost `json:"cost,omitempty"`

	Samples Samples `json:"samples"`
}

// TransportWebSocket is Batch.Transport for a batch whose requests went
// over the Responses API's WebSocket mode; it is also the protocol their
// records name (client.ProtoWebSocket).
const TransportWebSocket = "websocket"

// Title returns the batch's title in the text report (SPEC §6), its name
// for a batch of another name.
func (b *Batch) Title() string {
	switch b.Name {
	case LoopbackBatch:
		return LoopbackTitle
	case GatewayBatch:
		return GatewayTitle
	}
	return b.Name
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
	Protocols             map[string]int `json:"protocols"`               // requests per protocol: "HTTP/1.1", "h2", "h2c", "h3"
	StreamsAtOnce         int            `json:"streams_at_once"`         // the most HTTP/2 (or shared QUIC) streams in flight on one connection (1: one at a time; 0: no HTTP/2 over TCP, nor a shared QUIC connection)
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

// Named returns the phases in the order of a request, with the names the
// stream block gives them ("connect", "tls", "written", "head",
// "first-token", as stats.Batch.Phases).
func (p *Phases) Named() []NamedMetric {
	return []NamedMetric{{"connect", &p.Connect}, {"tls", &p.TLS}, {"written", &p.Written}, {"head", &p.Head},
		{"first-token", &p.FirstToken}}
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

// NamedMetric is a metric with the name the reports give it.
type NamedMetric struct {
	Name   string
	Metric *Metric
}

// Named returns the metrics in the order of the text report's batch block,
// with its names (SPEC §4, §6).
func (m *Metrics) Named() []NamedMetric {
	return []NamedMetric{
		{"TTFT (client)", &m.TTFT},
		{"TTFT emit->recv(1st)", &m.FirstEmitRecv},
		{"inter-token (client)", &m.InterToken},
		{"emit->recv (tokens)", &m.EmitRecv},
	}
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

// Stream is how the tokens travelled (the text report's stream block).
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
	// FailedTokens are the tokens (all phases) that the failed requests
	// received: among those received, the ones the title's count leaves
	// out. Documents written before it read as 0.
	FailedTokens int64 `json:"failed_tokens"`
	// Framing is what the SSE framing of the responses looked like, when
	// it was anything but one data line per event (nil then).
	Framing *Framing `json:"framing,omitempty"`
}

// Framing counts, over a batch's responses, what their SSE framing looked
// like as the client read it by the WHATWG rules (result.Framing): a
// gateway that re-frames the stream — joins or splits data lines, adds a
// byte order mark, ids, retry fields or events without data, ends lines
// in a bare CR — is described as one.
type Framing struct {
	BOMStreams      int64   `json:"bom_streams"`       // responses whose body began with a UTF-8 byte order mark
	MultiLineEvents int64   `json:"multi_line_events"` // events whose data came on two or more data lines
	NoDataBlocks    int64   `json:"no_data_blocks"`    // blocks of fields a blank line ended without data (nothing dispatched)
	BareCRLines     int64   `json:"bare_cr_lines"`     // lines ended by a bare CR
	InvalidUTF8     int64   `json:"invalid_utf8"`      // ill-formed UTF-8 sequences, each read as U+FFFD
	IDFields        int64   `json:"id_fields"`         // id fields that set the last event ID
	RetryFields     int64   `json:"retry_fields"`      // retry fields that set the reconnection time
	RetryMaxMs      float64 `json:"retry_max_ms"`      // the largest reconnection time they set, 0 without
}

// NewFraming returns the summary of f and the largest retry retryMaxMs,
// nil when f counts nothing.
func NewFraming(f result.Framing, retryMaxMs int64) *Framing {
	if f.Plain() {
		return nil
	}
	return &Framing{
		BOMStreams: int64(f.BOMs), MultiLineEvents: int64(f.MultiLineEvents), NoDataBlocks: int64(f.NoDataBlocks),
		BareCRLines: int64(f.BareCRLines), InvalidUTF8: int64(f.InvalidUTF8), IDFields: int64(f.IDFields),
		RetryFields: int64(f.RetryFields), RetryMaxMs: float64(retryMaxMs),
	}
}

// Counts returns the counts of f as a result.Framing and its largest
// retry (zero for a nil f).
func (f *Framing) Counts() (result.Framing, int64) {
	if f == nil {
		return result.Framing{}, 0
	}
	return result.Framing{
		BOMs: int(f.BOMStreams), MultiLineEvents: int(f.MultiLineEvents), NoDataBlocks: int(f.NoDataBlocks),
		BareCRLines: int(f.BareCRLines), InvalidUTF8: int(f.InvalidUTF8), IDFields: int(f.IDFields),
		RetryFields: int(f.RetryFields),
	}, int64(f.RetryMaxMs)
}

// Received returns the tokens received, by ok and failed requests alike.
func (s *Stream) Received() int64 { return s.ByPiTs + s.ByContent + s.Unmeasured }

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

// NamedDelta is an overhead line with the name the reports give it; Delta
// is nil when a side had no samples.
type NamedDelta struct {
	Name  string
	Delta *Delta
}

// Named returns the overhead lines in the order of the text report's
// overhead block, with its names (SPEC §6). A nil Overhead gives every
// line without a Delta.
func (o *Overhead) Named() []NamedDelta {
	if o == nil {
		o = &Overhead{}
	}
	return []NamedDelta{
		{"emit->recv (1st token)", o.FirstEmitRecv},
		{"emit->recv (tokens)", o.EmitRecv},
		{"TTFT (client)", o.TTFT},
		{"inter-token (client)", o.InterToken},
	}
}

// Self is the tool's own behaviour during the run: how late the server
// wrote tokens against their schedule, and the CPU the process used.
type Self struct {
	Lateness Metric  `json:"emission_lateness"`
	UserS    float64 `json:"cpu_user_s"`
	SystemS  float64 `json:"cpu_system_s"`
	// Warning is the "fell behind" warning (OverloadWarning) when the run
	// printed it; a merge keeps its runs' warnings, one per line.
	Warning string `json:"warning,omitempty"`
	// Host is the host's CPUs over the run, attributed (the tool, the
	// gateway, other processes, steal); absent where /proc/stat cannot be
	// read, and from a merge.
	Host *HostCost `json:"host,omitempty"`
	// Pin is how the tool and the gateway would run on CPUs apart;
	// absent when there is nothing to pin (one CPU, no gateway process).
	Pin *Pin `json:"pin,omitempty"`
}

// Pin is how the tool and the gateway run, or would run, on CPUs apart.
type Pin struct {
	ToolCPUs string `json:"tool_cpus"` // the tool's CPUs, as --cpus takes them ("0")
	Applied  bool   `json:"applied"`   // the tool ran pinned to them (--cpus); false: a suggestion
	// Gateway is the command that pins the gateway's processes (each,
	// all their threads) to the other CPUs: "taskset -a -cp 1 1234".
	Gateway string `json:"gateway"`
}

// Text says how to pin both: "the tool runs on CPUs 0 (--cpus 0); for
// the gateway: taskset -a -cp 1 1234", or as a suggestion "--cpus 0 for
// the tool, taskset -a -cp 1 1234 for the gateway".
func (p *Pin) Text() string {
	if p.Applied {
		return "the tool runs on CPUs " + p.ToolCPUs + " (--cpus " + p.ToolCPUs + "); for the gateway: " + p.Gateway
	}
	return "--cpus " + p.ToolCPUs + " for the tool, " + p.Gateway + " for the gateway"
}
