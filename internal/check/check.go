// Package check is sse-latency's conformance report card for a gateway
// (`sse-latency check`): a fixed battery of short scenarios, each a few
// streams through the gateway from the dummy server (which injects the
// upstream faults a scenario needs, api.Faults), each judged PASS, WARN or
// FAIL with a one-line evidence and the likely fix. It says what is wrong
// with a gateway and why — how it buffers (the verdict's signature), what
// it does with a stream that is oversized, split inside a character, in
// other line endings, cut or failing upstream, and whether a client that
// goes away reaches the upstream — rather than a latency figure.
//
// Run starts the dummy server on the listener it is given (the gateway
// forwards to it), checks first that the target is a gateway to it — a
// refused connection, a redirect, a response that is not HTTP or not the
// server's stream ends the check at once with an error (ErrNotGateway) —
// then runs the scenarios in order, each on its own, reporting each row as
// it finishes. Long scenarios (silences of tens of seconds) run only with
// Options.Long. The whole default battery takes a few seconds.
package check

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sse-latency/sse-latency/internal/advice"
	"github.com/sse-latency/sse-latency/internal/client"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/evloop"
	gwid "github.com/sse-latency/sse-latency/internal/gateway"
	"github.com/sse-latency/sse-latency/internal/server"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// Status is the outcome of one scenario.
type Status string

// The outcomes.
const (
	Pass Status = "PASS"
	Warn Status = "WARN"
	Fail Status = "FAIL"
)

// Row is the result of one scenario.
type Row struct {
	Name     string `json:"name"`          // the scenario's name, as --only and --skip take it
	Title    string `json:"title"`         // what it checks: "flushes every event"
	Status   Status `json:"status"`        // PASS, WARN or FAIL
	Evidence string `json:"evidence"`      // what was seen, in one line
	Fix      string `json:"fix,omitempty"` // the likely fix (WARN and FAIL): the advice in one line each, "; "-joined
	// Advice is the fix for the identified gateway (package advice), or
	// the generic one with the known gateways' as "if your gateway is …";
	// absent for a row that passed, or whose fix is no gateway's setting.
	Advice   []gwid.Advice `json:"advice,omitempty"`
	Seconds  float64       `json:"duration_s"`         // how long the scenario took
	Requests int           `json:"requests"`           // requests it made
	Failures []string      `json:"failures,omitempty"` // the failure texts of its requests, when they matter (sanitised)
	// FailureKinds are what went wrong with them, as the run's failure
	// summary names it (failures.Kind: "closed_mid_stream", …).
	FailureKinds []string `json:"failure_kinds,omitempty"`

	// Signature is the verdict's signature of the scenario's streams (the
	// flush and compression scenarios).
	Signature *verdict.Signature `json:"signature,omitempty"`

	advise []advice.Key // what the row calls for: Run makes Advice and Fix of them
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

// Options configure a check.
type Options struct {
	// Client is the template of every request through the gateway: its
	// dialect, address, Host, path, scheme, TLS, protocol, API key, extra
	// headers, model and engine. Its token counts, faults, registry, ids
	// and keep-alive are each scenario's.
	Client client.Options
	// Target names the gateway in the report ("127.0.0.1:8080").
	Target string
	// Listener is where the dummy server listens: the gateway forwards
	// there. Run serves on it and closes it.
	Listener net.Listener
	// Engine is the server's I/O engine (the client's is in Client).
	Engine evloop.Engine
	// Only, when not empty, runs only the scenarios named; Skip leaves out
	// those named. Unknown names are an error.
	Only, Skip []string
	// Long runs the long scenarios too.
	Long bool
	// Gateway is what is known of the gateway besides its responses:
	// --gateway, the local owners of the target's socket. The check names
	// it (gateway.Identify) with the pre-flight response's headers.
	Gateway gwid.Evidence
	// Identified, when set, receives the gateway's identity once the
	// pre-flight request has named it, before the first scenario.
	Identified func(*gwid.Identity)
	// Progress, when set, receives each row as it finishes.
	Progress func(Row)
	// Logf, when set, receives debug lines (the server's among them).
	Logf func(format string, args ...any)
}

// ErrNotGateway is wrapped by the error of a target that is not a gateway
// to the dummy server.
var ErrNotGateway = errors.New("not a gateway to sse-latency's server")

// scenario is one check of the battery.
type scenario struct {
	name, title string
	long        bool
	run         func(c *checker, ctx context.Context) Row
}

// Names returns the names of the scenarios, in the order they run, the
// long ones included.
func Names() []string {
	var out []string
	for _, s := range battery {
		out = append(out, s.name)
	}
	return out
}

// selected returns the scenarios to run: the battery (without the long
// ones unless long), filtered by only and skip.
func selected(only, skip []string, long bool) ([]scenario, error) {
	known := Names()
	for _, n := range slices.Concat(only, skip) {
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("unknown check %q (checks: %s)", n, strings.Join(known, ", "))
		}
	}
	var out []scenario
	for _, s := range battery {
		switch {
		case len(only) > 0 && !slices.Contains(only, s.name):
		case slices.Contains(skip, s.name):
		case s.long && !long && !slices.Contains(only, s.name):
		default:
			out = append(out, s)
		}
	}
	return out, nil
}

// checker is what the scenarios share: the options, the server and its
// registry, the run's id, and the signature streams once measured.
type checker struct {
	o      Options
	reg    *emission.Registry
	direct string // host:port of the dummy server itself
	runID  string
	seq    atomic.Int64

	flushStreams streams        // the signature streams, once run (flush, first-token)
	id           *gwid.Identity // the gateway, named by the pre-flight request
}

// Run runs the check: the server on o.Listener, the pre-flight request,
// then the scenarios. It returns the report, or an error that ends the
// check — a scenario name that does not exist, a target that is not a
// gateway to the server (wrapping ErrNotGateway), a cancelled ctx before
// the first scenario.
func Run(ctx context.Context, o Options) (*Report, error) {
	scenarios, err := selected(o.Only, o.Skip, o.Long)
	if err != nil {
		o.Listener.Close()
		return nil, err
	}
	c := &checker{o: o, reg: emission.New(), direct: loopbackAddr(o.Listener.Addr()), runID: emission.NewRunID()}
	srv := server.New(o.Listener, server.Config{Tokens: 1, DelayMs: DelayMs, Emissions: c.reg, HTTP2: true,
		Engine: o.Engine, Logf: o.Logf})
	sctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx) }()
	defer func() { stop(); <-done }()

	rep := &Report{SchemaVersion: SchemaVersion, Target: o.Target, Dialect: o.Client.Dialect.String(),
		Server: o.Listener.Addr().String(), Long: o.Long, Start: time.Now(), Rows: []Row{}}
	if err := c.preflight(ctx); err != nil {
		return nil, err
	}
	rep.Gateway = c.id
	if o.Identified != nil {
		o.Identified(c.id)
	}
	for _, s := range scenarios {
		if ctx.Err() != nil {
			break
		}
		start := time.Now()
		row := s.run(c, ctx)
		row.Name, row.Title, row.Seconds = s.name, s.title, time.Since(start).Seconds()
		c.advise(&row)
		rep.Rows = append(rep.Rows, row)
		if o.Progress != nil {
			o.Progress(row)
		}
	}
	rep.End = time.Now()
	return rep, ctx.Err()
}

// advise gives a row that did not pass the identified gateway's advice
// on what it calls for, and its fix in one line; a row that passed has
// neither.
func (c *checker) advise(row *Row) {
	if row.Status == Pass {
		row.Fix, row.Advice = "", nil
		return
	}
	if len(row.advise) == 0 {
		return // a fix of its own (the tool's overload)
	}
	row.Advice = advice.ForAll(c.id, row.advise...)
	lines := make([]string, len(row.Advice))
	for i, a := range row.Advice {
		lines[i] = a.Line()
	}
	row.Fix = strings.Join(lines, "; or ")
}

// loopbackAddr is the host:port to reach a listener at: its own address,
// loopback for a wildcard.
func loopbackAddr(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	ip := ta.IP
	switch {
	case ip == nil || ip.IsUnspecified() && ip.To4() != nil:
		ip = net.IPv4(127, 0, 0, 1)
	case ip.IsUnspecified():
		ip = net.IPv6loopback
	}
	return net.JoinHostPort(ip.String(), fmt.Sprint(ta.Port))
}
