// Package check is sse-latency's conformance report card for a gateway
// (`sse-latency check`): a fixed battery of short scenarios, each a few
// streams through the gateway from the dummy server (which injects the
// upstream faults a scenario needs, api.Faults), each judged PASS, WARN or
// FAIL with a one-line evidence and the likely fix — or SKIP, saying why,
// for a scenario the target cannot be put to (the multiplex row of a
// gateway that does not speak HTTP/2). It says what is wrong
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
	"github.com/sse-latency/sse-latency/internal/check/checkreport"
	"github.com/sse-latency/sse-latency/internal/client"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/evloop"
	gwid "github.com/sse-latency/sse-latency/internal/gateway"
	"github.com/sse-latency/sse-latency/internal/server"
)

// Status is the outcome of one scenario (checkreport.Status).
type Status = checkreport.Status

// The outcomes.
const (
	Pass = checkreport.Pass
	Warn = checkreport.Warn
	Fail = checkreport.Fail
	Skip = checkreport.Skip
)

// Row is the result of one scenario (checkreport.Row).
type Row = checkreport.Row

// Report is a whole check (checkreport.Report).
type Report = checkreport.Report

// SchemaVersion is the version of the check's JSON document.
const SchemaVersion = checkreport.SchemaVersion

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
	// StreamsPerConn is the number of streams the multiplex scenario runs
	// at once on one HTTP/2 connection; 0 means MuxStreams.
	StreamsPerConn int
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
	clk    clock.Clock // o.Client.Clock, or clock.Real: the server's too

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
	c := &checker{o: o, reg: emission.New(), direct: loopbackAddr(o.Listener.Addr()), runID: emission.NewRunID(), clk: clock.Or(o.Client.Clock)}
	srv := server.New(o.Listener, server.Config{Tokens: 1, DelayMs: DelayMs, Emissions: c.reg, HTTP2: true,
		Engine: o.Engine, Logf: o.Logf, Clock: o.Client.Clock})
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
	if len(row.Advise) == 0 {
		return // a fix of its own (the tool's overload)
	}
	row.Advice = advice.ForAll(c.id, row.Advise...)
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
