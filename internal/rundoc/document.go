// Package rundoc is the run document: the versioned JSON a run saves with
// --json, and that the report, merge and compare subcommands read. It holds
// the document's types — an envelope (tool, environment, configuration,
// times, how the run ended) around the run's summary (package summary) —
// and writes, reads, validates, merges and compares documents. It prints
// nothing but the comparison; the reports are package report's.
// docs/json-schema.md describes the document field by field and
// docs/sse-latency.schema.json is its JSON Schema.
package rundoc

import (
	"time"

	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/sweep"
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
	SchemaVersion int         `json:"schema_version"`
	Tool          ToolInfo    `json:"tool"`
	Environment   Environment `json:"environment"`
	Config        Config      `json:"config"` // the normalised command-line configuration
	Start         time.Time   `json:"start"`
	End           time.Time   `json:"end"`
	EndReason     string      `json:"end_reason"` // "done", "interrupted" or "setup_failed"
	ExitCode      int         `json:"exit_code"`
	Runs          int         `json:"runs"` // 1, or how many runs were merged into this one
	// Request is the head of the gateway's requests as the run sent it
	// (the first one's; the others differ in their id only), secrets
	// redacted: what -H, --api-key, --host-header and the other flags put
	// on the wire. Absent from documents written before it.
	Request *SentRequest `json:"request,omitempty"`

	// The summary of the run (batches, overhead, verdict, self), as the
	// run computed it and the reports render it.
	summary.Run

	// Notes say what a merge could not combine exactly (see Merge); absent
	// from a single run.
	Notes []string `json:"notes,omitempty"`
	// Forced lists what differed between runs merged with --force
	// (MergeOptions.Force) although merge refuses it: configurations,
	// batches. Absent unless a merge was forced; the reports warn of it.
	Forced []string `json:"forced,omitempty"`

	// Sweep is the record of `sse-latency sweep`: its steps, each a run's
	// summary at one value of its axis. A sweep document has no batches
	// of its own (its self is the whole sweep's); absent from a run.
	Sweep *sweep.Sweep `json:"sweep,omitempty"`
}

// Compat reports whether the run was made with --compat (the reference's
// output only).
func (d *Document) Compat() bool { return d.Config.Compat }

// SentRequest is the head of a request as it went on the wire.
type SentRequest struct {
	Proto   string   `json:"proto"`   // "HTTP/1.1", "h2" (offered by ALPN; HTTP/1.1 if the gateway refused it), "h2c", "h3" (HTTP/3 over QUIC), "websocket"
	Method  string   `json:"method"`  // "POST"; "GET" for the WebSocket upgrade
	Path    string   `json:"path"`    // the request target
	Headers []string `json:"headers"` // "Name: value" in the order sent, secrets redacted
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
