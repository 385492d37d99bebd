// Package checkreport holds the results of a gateway check (package
// check): the rows, their status and the whole report, as the check's JSON
// document writes them and package report renders them. It imports nothing
// of the I/O stack (server, client, event loops), so a renderer of checks
// does not depend on it.
package checkreport

import (
	"time"

	"github.com/sse-latency/sse-latency/internal/advice"
	gwid "github.com/sse-latency/sse-latency/internal/gateway"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// Status is the outcome of one scenario.
type Status string

// The outcomes.
const (
	Pass Status = "PASS"
	Warn Status = "WARN"
	Fail Status = "FAIL"
	// Skip is a scenario that could not run against this target (the
	// multiplex row of a gateway that does not speak HTTP/2): its
	// Evidence says why. It fails nothing: the exit status ignores it.
	Skip Status = "SKIP"
)

// Row is the result of one scenario.
type Row struct {
	Name     string `json:"name"`          // the scenario's name, as --only and --skip take it
	Title    string `json:"title"`         // what it checks: "flushes every event"
	Status   Status `json:"status"`        // PASS, WARN, FAIL or SKIP
	Evidence string `json:"evidence"`      // what was seen, in one line (SKIP: why it did not run)
	Fix      string `json:"fix,omitempty"` // the likely fix (WARN and FAIL): the advice in one line each, "; "-joined
	// Advice is the fix for the identified gateway (package advice), or
	// the generic one with the known gateways' as "if your gateway is …";
	// absent for a row that passed, or whose fix is no gateway's setting.
	Advice   []gwid.Advice `json:"advice,omitempty"`
	Seconds  float64       `json:"duration_s"` // how long the scenario took
	Requests int           `json:"requests"`   // requests it made
	// Connections is how many distinct client connections its requests
	// used: the multiplex row's (its streams on one connection, or more
	// when the gateway took fewer at once or refused some); 0 — unknown,
	// every other row — is left out.
	Connections int      `json:"connections,omitempty"`
	Failures    []string `json:"failures,omitempty"` // the failure texts of its requests, when they matter (sanitised)
	// FailureKinds are what went wrong with them, as the run's failure
	// summary names it (failures.Kind: "closed_mid_stream", …).
	FailureKinds []string `json:"failure_kinds,omitempty"`

	// Signature is the verdict's signature of the scenario's streams (the
	// flush and compression scenarios).
	Signature *verdict.Signature `json:"signature,omitempty"`

	// Advise is what the row calls for: check.Run makes Advice and Fix of
	// them. It is not part of the document.
	Advise []advice.Key `json:"-"`
}

// Report is a whole check.
type Report struct {
	SchemaVersion int    `json:"schema_version"` // SchemaVersion
	Target        string `json:"target"`         // the gateway, as given
	Dialect       string `json:"api"`            // the API dialect of the requests
	Server        string `json:"server"`         // where the dummy server listened
	Long          bool   `json:"long"`           // the long scenarios ran
	// Gateway names the gateway (package gateway): from the pre-flight
	// response's headers, the local owner of the target's socket,
	// --gateway. Absent from documents written before it.
	Gateway *gwid.Identity `json:"gateway,omitempty"`
	Start   time.Time      `json:"start"`
	End     time.Time      `json:"end"`
	Rows    []Row          `json:"rows"`
}

// SchemaVersion is the version of the check's JSON document.
const SchemaVersion = 1

// Count returns how many rows have status s.
func (r *Report) Count(s Status) int {
	n := 0
	for _, row := range r.Rows {
		if row.Status == s {
			n++
		}
	}
	return n
}

// Failed reports whether a row failed.
func (r *Report) Failed() bool { return r.Count(Fail) > 0 }
