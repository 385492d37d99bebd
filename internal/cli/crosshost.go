package cli

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"time"

	"github.com/spf13/pflag"

	"github.com/sse-latency/sse-latency/internal/batch"
	"github.com/sse-latency/sse-latency/internal/client"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/clocksync"
	"github.com/sse-latency/sse-latency/internal/control"
	"github.com/sse-latency/sse-latency/internal/stats"
)

// serverFlags set up the dummy server; with --server it runs on the other
// host, which takes them.
var serverFlags = []string{"listen", "tls-cert", "tls-key", "tls-self-signed", "server-close", "max-streams", "reasoning-field"}

// checkCrossHost checks the flags of the control plane: --control takes a
// listen address and needs a server here; --server needs -t and the
// token, a valid URL, and none of the flags of a server here.
func checkCrossHost(cfg *Config, fs *pflag.FlagSet) error {
	if cfg.Control != "" {
		if _, _, err := listenAddr(cfg.Control); err != nil {
			return fmt.Errorf("--control: %v", err)
		}
	}
	if cfg.Server == "" {
		return nil
	}
	switch {
	case cfg.Target == "":
		return fmt.Errorf("--server measures through a gateway: give -t")
	case cfg.ControlToken == "":
		return fmt.Errorf("--server needs --control-token: the token the server printed, or was given")
	case cfg.Control != "":
		return fmt.Errorf("--control and --server exclude each other: with --server the server, and its control endpoints, run on the other host")
	}
	for _, f := range serverFlags {
		if fs.Changed(f) {
			return fmt.Errorf("--%s sets up the dummy server, which runs on the other host with --server: give it there", f)
		}
	}
	c, err := control.NewClient(cfg.Server, cfg.ControlToken)
	if err != nil {
		return fmt.Errorf("--server: %v", err)
	}
	c.Close()
	cfg.NoLoopback = true // the calibration would need a server here
	return nil
}

// remote is the client side of a run whose server is on another host
// (--server): the control endpoint's client, and the clock offset's
// estimates.
type remote struct {
	client *control.Client
	syncer *control.Syncer
}

// firstSyncTimeout bounds the estimate made before the run.
const firstSyncTimeout = time.Minute

// startBackend starts what answers the requests: the dummy server here,
// with its control endpoints when --control asks; or, across hosts
// (--server), the connection to the server's control endpoints, with a
// first clock-offset estimate.
func (r *run) startBackend() error {
	if off := clock.TestOffset(); off != 0 {
		r.out.errorf("warning: test build: this process's clock is shifted by %d ns (%s)\n", off, "SSE_LATENCY_TEST_CLOCK_OFFSET_NS")
	}
	if r.cfg.Server != "" {
		return r.connectRemote()
	}
	if err := r.startServer(); err != nil {
		return err
	}
	if err := r.startControl(); err != nil {
		r.stop()
		return err
	}
	return nil
}

// startControl serves the control endpoints of the server's registry on
// --control, guarded by --control-token or a random token printed here.
func (r *run) startControl() error {
	cfg := r.cfg
	if cfg.Control == "" {
		return nil
	}
	addr, host, err := listenAddr(cfg.Control)
	if err != nil {
		return fmt.Errorf("--control: %v", err)
	}
	token, random := cfg.ControlToken, cfg.ControlToken == ""
	if random {
		token = rand.Text()
	}
	h, err := control.NewHandler(r.emissions, token)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--control: cannot listen on %s: %w", cfg.Control, err)
	}
	var logf func(string, ...any)
	if cfg.Verbose {
		logf = r.out.debugf
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- control.Serve(ctx, ln, h, logf) }()
	stopServer := r.stopServer
	r.stopServer = func() {
		cancel()
		if err := <-done; err != nil {
			r.out.errorf("sse-latency: control endpoints stopped: %v\n", err)
		}
		stopServer()
	}
	tokenText := "token from --control-token"
	if random {
		tokenText = "token " + token + " (random: give it to the client with --control-token)"
	}
	r.out.errorf("control endpoints (timing records) on %s: GET %s, %s; %s\n", displayListen(ln.Addr()), control.ClockPath, control.RequestsPath, tokenText)
	if host == "" {
		r.out.errorf("note: --control listens on every interface; bind it to a private address (docs/security.md)\n")
	}
	return nil
}

// connectRemote reaches the control endpoint of the server on another
// host, estimates the clock offset once (a failure, a wrong token, fails
// the run before any request) and then every control.DefaultSyncEvery
// until the run stops.
func (r *run) connectRemote() error {
	c, err := control.NewClient(r.cfg.Server, r.cfg.ControlToken)
	if err != nil {
		return fmt.Errorf("--server: %v", err)
	}
	s := control.NewSyncer(c, 0)
	ctx, cancel := context.WithTimeout(context.Background(), firstSyncTimeout)
	e, err := s.Sync(ctx)
	cancel()
	if err != nil {
		c.Close()
		return fmt.Errorf("--server %s: reading the server's clock: %w", c, err)
	}
	r.remote, r.runID = &remote{client: c, syncer: s}, newRunID()
	r.out.errorf("server on another host, control endpoint %s: clock offset %+.3fms ± %.3fms "+
		"(server - client; best round trip %.3fms of %d exchanges), estimated again every %v\n",
		c, ms(e.Offset), ms(e.Bound), ms(e.MinRTT), e.Samples+e.Dropped, control.DefaultSyncEvery)
	ctx, r.stopServer = context.WithCancel(context.Background())
	r.serverDone = make(chan error, 1)
	go func() {
		s.Run(ctx, control.DefaultSyncEvery, func(err error) {
			r.out.errorf("warning: estimating the clock offset again failed: %v (the previous estimate stays)\n", err)
		})
		c.Close()
		r.serverDone <- nil
	}()
	return nil
}

// remoteOptions completes the options of requests to a server on another
// host: it does not share this process's -n, -T and -d, so they are asked
// for with hints (as --reasoning and --tool-call always are).
func (r *run) remoteOptions(o *client.Options) {
	if r.remote == nil {
		return
	}
	think, delay := r.cfg.ThinkMs, r.cfg.DelayMs
	o.Tokens, o.ThinkMs, o.DelayMs = r.cfg.Tokens, &think, &delay
}

// resolving returns the sink the batch hands its records to: sink itself
// when the server runs here (the client read its registry already); across
// hosts a control.Resolver's, which completes each record with the
// server's before handing it to sink. wait waits for the last record and
// warns of fetches that failed.
func (r *run) resolving(sink batch.Sink) (batch.Sink, func()) {
	if r.remote == nil {
		return sink, func() {}
	}
	res := control.NewResolver(r.remote.client, r.remote.syncer, sink)
	return res.Add, func() {
		if n, err := res.Close(); n > 0 {
			r.out.errorf("warning: %d %s of the server's records failed (first: %v): their requests have no request leg, "+
				"and their tokens without pi_ts stay unmeasured\n", n, pluralWord(n, "fetch", "fetches"), err)
		}
	}
}

// serverFigures are what the dummy server here saw: its emission
// lateness, connections and requests; none across hosts.
func (r *run) serverFigures() (late *stats.Metric, conns, reqs int64) {
	if r.srv == nil {
		return nil, 0, 0
	}
	return r.srv.Lateness(), r.srv.Connections(), r.srv.Requests()
}

// clockSummary is the clock offset of a run across hosts, nil in one
// process.
func (r *run) clockSummary() *clocksync.Summary {
	if r.remote == nil {
		return nil
	}
	s, ok := r.remote.syncer.Summary()
	if !ok {
		return nil
	}
	return &s
}

// pluralWord is one when n is 1, else many.
func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
