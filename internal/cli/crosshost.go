package cli

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/batch"
	"github.com/sse-latency/sse-latency/internal/client"
	"github.com/sse-latency/sse-latency/internal/clocksync"
	"github.com/sse-latency/sse-latency/internal/control"
	"github.com/sse-latency/sse-latency/internal/emission"
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
	if cfg.Instance != "" {
		switch {
		case !api.ValidID(cfg.Instance):
			return fmt.Errorf("--instance-id %q: want 1 to 64 of A-Z, a-z, 0-9 and - _ . (no other character)", cfg.Instance)
		case cfg.Control == "":
			return fmt.Errorf("--instance-id names this server to the clients that read its control endpoints: give --control")
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
	if len(cfg.Servers) > MaxReplicas {
		return fmt.Errorf("--server given %d times: at most %d control endpoints (MaxReplicas)", len(cfg.Servers), MaxReplicas)
	}
	for _, s := range cfg.Servers {
		c, err := control.NewClient(s, cfg.ControlToken)
		if err != nil {
			return fmt.Errorf("--server: %v", err)
		}
		c.Close()
	}
	cfg.NoLoopback = true // the calibration would need a server here
	return nil
}

// remote is the client side of a run whose servers are on other hosts
// (--server): the replicas, each its control endpoint and the estimates of
// its clock offset, and the first failure of each replica's fetches.
type remote struct {
	replicas    []*control.Replica
	fetchErrors map[*control.Replica]string
}

// firstSyncTimeout bounds the estimate made before the run.
const firstSyncTimeout = time.Minute

// startBackend starts what answers the requests: the dummy server here,
// with its control endpoints when --control asks; or, across hosts
// (--server), the connection to the server's control endpoints, with a
// first clock-offset estimate.
func (r *run) startBackend() error {
	clk, off, err := processClock()
	if err != nil {
		return err
	}
	r.clk = clk
	if off != 0 {
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
	h, err := control.NewHandler(r.emissions, token, r.instance)
	if err != nil {
		return err
	}
	h.SetClock(r.clk)
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
	r.out.errorf("control endpoints (timing records) on %s: GET %s, %s; %s; instance %s\n", displayListen(ln.Addr()), control.ClockPath, control.RequestsPath, tokenText, r.instance)
	if host == "" {
		r.out.errorf("note: --control listens on every interface; bind it to a private address (docs/security.md)\n")
	}
	return nil
}

// connectRemote reaches the control endpoints of the servers on other
// hosts (every --server, a name resolving to several addresses standing
// for each), estimates each one's clock offset — an endpoint that fails
// (down, slow, garbage, a wrong token) is a replica that is down, and all
// of them failing fail the run before any request — and then every
// control.DefaultSyncEvery until the run stops.
func (r *run) connectRemote() error {
	ctx, cancel := context.WithTimeout(context.Background(), firstSyncTimeout)
	endpoints, err := expandServers(ctx, r.cfg.Servers)
	cancel()
	if err != nil {
		return err
	}
	for i, ep := range endpoints {
		if ep.from != "" && (i == 0 || endpoints[i-1].from != ep.from) {
			n := 0
			for _, e := range endpoints {
				if e.from == ep.from {
					n++
				}
			}
			r.out.errorf("note: --server %s: its host resolves to %d addresses, one replica each\n", ep.from, n)
		}
	}
	replicas, err := r.connectReplicas(endpoints)
	if err != nil {
		return err
	}
	r.remote, r.runID = &remote{replicas: replicas, fetchErrors: make(map[*control.Replica]string)}, emission.NewRunID()
	ctx, r.stopServer = context.WithCancel(context.Background())
	r.serverDone = make(chan error, 1)
	var wg sync.WaitGroup
	for _, rep := range replicas {
		if rep.Down != nil {
			rep.Syncer.Client().Close()
			continue
		}
		wg.Go(func() {
			rep.Syncer.Run(ctx, control.DefaultSyncEvery, func(err error) {
				r.out.errorf("warning: --server %s: estimating the clock offset again failed: %v (the previous estimate stays)\n", rep, err)
			})
			rep.Syncer.Client().Close()
		})
	}
	go func() {
		wg.Wait()
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
// hosts a control.Resolver's, which completes each record with the records
// of the replica that served it before handing it to sink. wait waits for
// the last record and warns of fetches that failed.
func (r *run) resolving(sink batch.Sink) (batch.Sink, func()) {
	if r.remote == nil {
		return sink, func() {}
	}
	res := control.NewResolver(r.remote.replicas, sink)
	return res.Add, func() {
		for _, f := range res.Close() {
			r.out.errorf("warning: --server %s: %d %s of the server's records failed (first: %v): the requests it served have no request leg, "+
				"and their tokens without pi_ts stay unmeasured\n", f.Replica, f.Count, pluralWord(f.Count, "fetch", "fetches"), f.First)
			if r.remote.fetchErrors[f.Replica] == "" {
				r.remote.fetchErrors[f.Replica] = fmt.Sprintf("%d %s of its records failed (first: %v)", f.Count, pluralWord(f.Count, "fetch", "fetches"), f.First)
			}
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
// With several replicas it covers them all: the first one's offset, the
// largest bound and drift, the estimates summed, the shortest round trip
// (each replica's own are in the summary's replicas).
func (r *run) clockSummary() *clocksync.Summary {
	if r.remote == nil {
		return nil
	}
	var out *clocksync.Summary
	for _, rep := range r.remote.replicas {
		if rep.Down != nil {
			continue
		}
		s, ok := rep.Syncer.Summary()
		if !ok {
			continue
		}
		if out == nil {
			out = &s
			continue
		}
		out.Bound, out.Drift = max(out.Bound, s.Bound), max(out.Drift, s.Drift)
		out.Estimates += s.Estimates
		out.MinRTT = min(out.MinRTT, s.MinRTT)
	}
	return out
}

// pluralWord is one when n is 1, else many.
func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
