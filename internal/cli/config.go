package cli

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/client"
	gwid "github.com/sse-latency/sse-latency/internal/gateway"
	"github.com/sse-latency/sse-latency/internal/rundoc"
	"github.com/sse-latency/sse-latency/internal/server"
	"github.com/sse-latency/sse-latency/internal/slo"
	"github.com/sse-latency/sse-latency/internal/sweep"

	"github.com/spf13/pflag"
)

// Config is the whole measurement, as given on the command line, with the
// reference's defaults (SPEC §2) and, after Validate, its clamps: the
// settings a run document records (rundoc.Config, where each field, its
// unit and its merge rule are described) and the output paths, which it
// does not record.
type Config struct {
	rundoc.Config

	JSONPath string `json:"-"` // --json: write the JSON document here ("-" = stdout, the text report then goes to stderr)
	HTMLPath string `json:"-"` // --html: write the HTML report here
	CSVPath  string `json:"-"` // --csv: stream one row per token here

	ControlToken string `json:"-"` // --control-token: the token of the control endpoints (--control, --server); a secret, never recorded

	// Servers are the --server values, each a control endpoint's URL
	// (recorded comma-joined as Server).
	Servers []string `json:"-"`
}

// DefaultConfig returns the reference tool's defaults.
func DefaultConfig() Config {
	return Config{Config: rundoc.Config{
		Listen:      ":8090",
		Requests:    1,
		Concurrency: 1,
		Tokens:      1000,
		DelayMs:     5,
		TimeoutMs:   300000,
		API:         "chat",
		Model:       api.Model,

		ReasoningField: api.ReasoningContent.String(),
		Arrival:        "constant",
		Engine:         string(client.EngineAuto),
		Seed:           DefaultSeed,
		TraceSpeed:     1,
		CacheBlock:     DefaultCacheBlock,
		StreamsPerConn: 1,
	}}
}

// ServerFaults are the faults of --fault (Validate has checked them).
func (c *Config) ServerFaults() api.Faults {
	f, _ := api.ParseFaults(c.Faults)
	return f
}

// faultsValue is the --fault flag: each use adds its faults, "; "-joined
// (a later key overrides an earlier one, ParseFaults reads them so).
type faultsValue struct{ s *string }

func (v faultsValue) String() string { return *v.s }

func (v faultsValue) Set(s string) error {
	if *v.s != "" {
		s = *v.s + "; " + s
	}
	*v.s = s
	return nil
}

func (v faultsValue) Type() string { return "spec" }

// Dialect is the API named by --api (Validate has checked it).
func (c *Config) Dialect() api.Dialect {
	d, _ := api.ParseDialect(c.API)
	return d
}

// ReasoningShape is the reasoning shape named by --reasoning-field
// (Validate has checked it).
func (c *Config) ReasoningShape() api.ReasoningField {
	f, _ := api.ParseReasoningField(c.ReasoningField)
	return f
}

// Validate applies the reference's clamps: -r and -c below 1 become 1, -c is
// capped to -r; the Go tool also turns negative -n/-T/-d into 0 and a
// non-positive -w into 1 ms, and rejects non-finite numbers.
func (c *Config) Validate() error {
	if math.IsNaN(c.ThinkMs) || math.IsInf(c.ThinkMs, 0) || math.IsNaN(c.DelayMs) || math.IsInf(c.DelayMs, 0) {
		return errors.New("-T and -d must be finite numbers of milliseconds")
	}
	switch {
	case c.Duration > 0 && c.Requests <= 0, c.Trace != "" && c.Requests <= 0:
		c.Requests = 0 // as many as --duration allows, or the trace has
	default:
		c.Requests = max(c.Requests, 1)
	}
	switch {
	case c.Rate > 0, c.Trace != "":
		c.Concurrency = max(c.Concurrency, 0) // a cap on requests in flight; 0 = the batch's default
	case c.Requests > 0:
		c.Concurrency = min(max(c.Concurrency, 1), c.Requests)
	default:
		c.Concurrency = max(c.Concurrency, 1)
	}
	c.Tokens = max(c.Tokens, 0)
	c.ThinkMs = max(c.ThinkMs, 0)
	c.DelayMs = max(c.DelayMs, 0)
	c.TimeoutMs = max(c.TimeoutMs, 1)
	if _, err := api.ParseDialect(c.API); err != nil {
		return fmt.Errorf("--api: %v", err)
	}
	e, err := client.ParseEngine(c.Engine)
	if err != nil {
		return fmt.Errorf("--engine: %v", err)
	}
	c.Engine = string(e)
	if c.Model == "" || strings.ContainsAny(c.Model, "\r\n") {
		return errors.New("--model: must be a non-empty name on one line")
	}
	if c.Path != "" && (!strings.HasPrefix(c.Path, "/") || strings.ContainsAny(c.Path, " \t\r\n")) {
		return fmt.Errorf("--path: %q must start with / and contain no spaces", c.Path)
	}
	if err := c.validateHeaders(); err != nil {
		return err
	}
	if c.Gateway != "" {
		n, err := gwid.ParseName(c.Gateway)
		if err != nil {
			return fmt.Errorf("--gateway: %v", err)
		}
		c.Gateway = string(n)
	}
	if c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) {
		return errors.New("--rate: must be a positive number of requests per second")
	}
	if c.Arrival != "constant" && c.Arrival != "poisson" {
		return fmt.Errorf("--arrival: %q is not constant or poisson", c.Arrival)
	}
	if c.Tokens > server.DefaultMaxTokens {
		return fmt.Errorf("-n %d is above the server's limit of %d tokens per response", c.Tokens, server.DefaultMaxTokens)
	}
	if c.TokensDist != "" {
		if _, err := tokensDist(c.TokensDist); err != nil {
			return fmt.Errorf("-n: %v", err)
		}
	}
	if c.PromptBytesDist != "" {
		if _, err := promptDist(c.PromptBytesDist); err != nil {
			return fmt.Errorf("--prompt-bytes: %v", err)
		}
	}
	if err := c.validateShape(nil); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		n    int
	}{{"--reasoning", c.Reasoning}, {"--tool-call", c.ToolCall}} {
		if f.n < 0 || f.n > server.DefaultMaxTokens {
			return fmt.Errorf("%s %d: want a number of tokens from 0 to the server's limit of %d", f.name, f.n, server.DefaultMaxTokens)
		}
	}
	if _, err := api.ParseReasoningField(c.ReasoningField); err != nil {
		return fmt.Errorf("--reasoning-field: %v", err)
	}
	if c.Dialect() == api.Completions && (c.Reasoning > 0 || c.ToolCall > 0) {
		return errors.New("--reasoning and --tool-call need --api chat, responses or anthropic: the completions API streams text only")
	}
	if err := c.validateHeartbeat(); err != nil {
		return err
	}
	if c.ThinkMs > float64(server.DefaultMaxDelay/time.Millisecond) || c.DelayMs > float64(server.DefaultMaxDelay/time.Millisecond) {
		return fmt.Errorf("-T and -d must not exceed the server's limit of %v", server.DefaultMaxDelay)
	}
	if c.IdleMs < 0 {
		return errors.New("--idle-timeout must not be negative")
	}
	f, err := api.ParseFaults(c.Faults)
	if err == nil {
		err = api.Limits{MaxTokens: server.DefaultMaxTokens, MaxDelay: server.DefaultMaxDelay}.CheckFaults(f)
	}
	if err != nil {
		return fmt.Errorf("--fault: %v", err)
	}
	c.Faults = f.String()
	if c.Duration < 0 || c.Warmup < 0 {
		return errors.New("--duration and --warmup must not be negative")
	}
	if c.WebSocket && c.Dialect() != api.Responses {
		return errors.New("--websocket needs --api responses: the WebSocket mode is the Responses API's")
	}
	if c.WebSocket && (c.HTTP2 || c.H2C || c.HTTP3) {
		return errors.New("--websocket upgrades an HTTP/1.1 connection: not with --http2 or --h2c, nor --http3")
	}
	if c.HTTP3 && (c.HTTP2 || c.H2C) {
		return errors.New("--http3 speaks HTTP/3 over QUIC: not with --http2 or --h2c")
	}
	if err := c.validateStreamsPerConn(); err != nil {
		return err
	}
	if err := c.validateGates(); err != nil {
		return err
	}
	if err := c.validateCost(); err != nil {
		return err
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	if c.TLSSelfSigned && c.TLSCert != "" {
		return errors.New("--tls-self-signed and --tls-cert exclude each other")
	}
	return nil
}

// validateStreamsPerConn checks --streams-per-conn: at least 1, and above
// 1 only over HTTP/2 (--http2 or --h2c) or HTTP/3 (--http3) with -k, the
// connections being shared between the requests of several slots.
func (c *Config) validateStreamsPerConn() error {
	switch n := c.StreamsPerConn; {
	case n < 1:
		return fmt.Errorf("--streams-per-conn %d: want at least 1 (1: a connection per concurrency slot)", n)
	case n == 1:
	case !c.HTTP2 && !c.H2C && !c.HTTP3:
		return errors.New("--streams-per-conn multiplexes HTTP/2 or HTTP/3 streams: add --http2 (https targets), --h2c (http targets) or --http3")
	case !c.KeepAlive:
		return errors.New("--streams-per-conn shares connections between requests: add -k")
	}
	return nil
}

// ownHeaders are the header fields a -H may not set: the request's
// framing and connection, which the tool manages, and its hints.
var ownHeaders = []string{"Content-Length", "Transfer-Encoding", "Connection", "Upgrade", "Sec-WebSocket-Key",
	"Sec-WebSocket-Version", api.HintHeader}

// validateHeaders checks -H, --api-key and --host-header: header lines
// "Name: value" on one line, none of ownHeaders, and a -H Host agreeing
// with --host-header (a -H named Host, Content-Type or Accept replaces
// the tool's own line).
func (c *Config) validateHeaders() error {
	for _, h := range c.Headers {
		name, value, ok := strings.Cut(h, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(h, "\r\n") || strings.ContainsAny(name, " \t") {
			return fmt.Errorf("-H: %q is not a header line (want \"Name: value\")", client.Redact(h))
		}
		for _, own := range ownHeaders {
			if strings.EqualFold(name, own) {
				return fmt.Errorf("-H: %s is the tool's own header (it frames the request, or carries its hints): not settable", name)
			}
		}
		if strings.EqualFold(name, "Host") && c.HostHeader != "" && strings.TrimSpace(value) != c.HostHeader {
			return fmt.Errorf("-H %q and --host-header %q name two hosts", h, c.HostHeader)
		}
	}
	if strings.ContainsAny(c.APIKey, "\r\n") || strings.ContainsAny(c.HostHeader, " \t\r\n") {
		return errors.New("--api-key and --host-header must be single tokens on one line")
	}
	return nil
}

// MaxRounds bounds --rounds.
const MaxRounds = 100

// validateGates checks --rounds, --prompt-bytes and --slo, and writes each
// objective as package slo does ("gateway emit->recv (tokens) p99 < 1ms").
func (c *Config) validateGates() error {
	switch {
	case c.Rounds < 0 || c.Rounds > MaxRounds:
		return fmt.Errorf("--rounds %d: want 0 (a single calibration) to %d pairs of rounds", c.Rounds, MaxRounds)
	case c.Rounds > 0 && c.NoLoopback:
		return errors.New("--rounds alternates loopback and gateway rounds: not with -l")
	case c.PromptBytes < 0 || c.PromptBytes > api.MaxPromptBytes:
		return fmt.Errorf("--prompt-bytes %d: want 0 to %d bytes", c.PromptBytes, api.MaxPromptBytes)
	}
	for i, s := range c.SLOs {
		o, err := slo.Parse(s)
		if err != nil {
			return fmt.Errorf("--slo: %v (want %s)", err, slo.Syntax)
		}
		if (o.Scope == slo.ScopeLoopback || o.Scope == slo.ScopeAdded) && c.NoLoopback {
			return fmt.Errorf("--slo %q: %s figures need the loopback calibration: not with -l", s, o.Scope)
		}
		c.SLOs[i] = o.String()
	}
	return nil
}

// validateCost checks --gateway-pid and --cpus, and writes the CPU list
// as formatCPUList does ("0,2-3").
func (c *Config) validateCost() error {
	for _, pid := range c.GatewayPIDs {
		if pid <= 0 {
			return fmt.Errorf("--gateway-pid %d: want a process id (a positive number)", pid)
		}
	}
	if len(c.GatewayPIDs) > 0 && c.Target == "" {
		return errors.New("--gateway-pid needs -t: the gateway's cost is sampled around the batches through it")
	}
	if c.CPUs != "" {
		cpus, err := parseCPUList(c.CPUs)
		if err != nil {
			return fmt.Errorf("--cpus %q: %v", c.CPUs, err)
		}
		c.CPUs = formatCPUList(cpus)
	}
	return nil
}

// validateHeartbeat checks --heartbeat against the bounds the server puts
// on the pi_heartbeat_ms hint: 0 (none), or from api.MinHeartbeatMs to the
// server's delay limit.
func (c *Config) validateHeartbeat() error {
	max := float64(server.DefaultMaxDelay / time.Millisecond)
	if v := c.HeartbeatMs; math.IsNaN(v) || v < 0 || v > 0 && v < api.MinHeartbeatMs || v > max {
		return fmt.Errorf("--heartbeat %v: want 0 (none) or %d to %.0f ms of silence before each heartbeat", v, api.MinHeartbeatMs, max)
	}
	return nil
}

// Objectives returns the --slo objectives (Validate has checked them).
func (c *Config) Objectives() []slo.SLO {
	out := make([]slo.SLO, 0, len(c.SLOs))
	for _, s := range c.SLOs {
		if o, err := slo.Parse(s); err == nil {
			out = append(out, o)
		}
	}
	return out
}

// Redacted is the configuration as reports show it: the API key and the
// values of secret headers masked.
func (c Config) Redacted() Config {
	if c.APIKey != "" {
		c.APIKey = "REDACTED"
	}
	if len(c.Headers) > 0 {
		hs := make([]string, len(c.Headers))
		for i, h := range c.Headers {
			hs[i] = client.Redact(h)
		}
		c.Headers = hs
	}
	return c
}

// errHelp and errVersion are not errors but requests to print and exit 0.
var (
	errHelp    = errors.New("help requested")
	errVersion = errors.New("version requested")
)

// commandLine is argv parsed and validated: the configuration, and its
// addresses parsed once.
type commandLine struct {
	cfg        Config
	listen     string // -L as net.Listen takes it
	listenHost string // -L's host, "" for the wildcard forms
	target     target // -t; the zero target without -t (server only)
}

// parseArgs parses argv (without the program name) into a validated
// command line. Its errors name the flag; errHelp and errVersion say what
// was asked instead of a run.
func parseArgs(args []string, extra ...func(*pflag.FlagSet)) (commandLine, error) {
	cl, err := parseFlags(args, nil, extra...)
	if err != nil {
		return cl, err
	}
	return cl, cl.check()
}

// check parses the addresses of a command line, and validates its
// configuration and outputs.
func (cl *commandLine) check() error {
	var err error
	cfg := &cl.cfg
	if cfg.Server != "" {
		cfg.Listen = "" // no server here
	} else if cl.listen, cl.listenHost, err = listenAddr(cfg.Listen); err != nil {
		return fmt.Errorf("-L: %v", err)
	}
	if cfg.Target != "" {
		t, err := parseTarget(cfg.Target)
		if err == nil {
			_, _, err = splitAddr(t.hostPort)
		}
		if err != nil {
			return fmt.Errorf("-t: %v", err)
		}
		cl.target = t
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.HTTP3 && cfg.Target != "" && cl.target.scheme != "https" {
		return errors.New("--http3: -t must be an https:// URL (QUIC is always TLS)")
	}
	return checkOutputs(*cfg)
}

// listFlags receive, for the sweep subcommand, the flags whose values are
// lists there (and one that only it has); nil for a run.
type listFlags struct {
	concurrency, rate, promptBytes string
	kneeMs                         float64
	changed                        func(name string) bool // whether a flag was given
}

// parseFlags reads the flags into a Config with the defaults of the
// others. With lists (the sweep subcommand), -c, --rate and --prompt-bytes
// are read as text into it, for the sweep to parse, and --knee-threshold is
// known; extra adds the flags of another subcommand that runs a
// measurement (probe).
func parseFlags(args []string, lists *listFlags, extra ...func(*pflag.FlagSet)) (commandLine, error) {
	cfg := DefaultConfig()
	var v runFlagVars
	fs := runFlags(&cfg, lists, &v)
	for _, f := range extra {
		f(fs)
	}
	if err := fs.Parse(args); err != nil {
		return commandLine{cfg: cfg}, err
	}
	cfg.SLOs = v.slos
	cfg.Server = strings.Join(cfg.Servers, ",")
	if err := applyCorpus(&cfg, fs.Changed); err != nil {
		return commandLine{cfg: cfg}, err
	}
	switch {
	case lists != nil:
		lists.promptBytes, lists.changed = v.promptBytes, fs.Changed
	case v.promptBytes != "":
		if err := cfg.setPromptBytes(v.promptBytes); err != nil {
			return commandLine{cfg: cfg}, err
		}
	}
	if lists != nil && cfg.TokensDist != "" {
		return commandLine{cfg: cfg}, errors.New("-n: a sweep's steps take a number of tokens, not a distribution")
	}
	if lists != nil && cfg.Trace != "" {
		return commandLine{cfg: cfg}, errors.New("--trace: a sweep's steps are closed or open loops of their own, not a trace replay")
	}
	if cfg.Trace != "" {
		if err := cfg.validateShape(fs.Changed); err != nil {
			return commandLine{cfg: cfg}, err
		}
		if !fs.Changed("concurrency") {
			cfg.Concurrency = 0 // the trace's arrivals: no cap unless -c gives one
		}
		cfg.Requests = 0 // as many as the trace and the run's bounds allow
	}
	if cfg.Duration > 0 && !fs.Changed("requests") {
		cfg.Requests = 0 // --duration instead of -r
	}
	if cfg.Rate > 0 && !fs.Changed("concurrency") {
		cfg.Concurrency = 0 // open loop: no cap unless -c gives one
	}
	switch {
	case v.help:
		return commandLine{cfg: cfg}, errHelp
	case v.version:
		return commandLine{cfg: cfg}, errVersion
	case fs.NArg() > 0:
		return commandLine{cfg: cfg}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return commandLine{cfg: cfg}, checkCrossHost(&cfg, fs)
}

// runFlagVars are the run's flags that parseFlags reads after parsing,
// not straight into a Config.
type runFlagVars struct {
	help, version bool
	promptBytes   string
	slos          []string
}

// runFlags is the flag set of a run (and of a sweep, with lists, and of a
// probe, which adds its own): it fills cfg, lists and v. Its usage strings
// are the help (see writeFlags): a placeholder "<...>" first for a flag
// that takes a value, then the description, its lines after the first
// indented under it.
func runFlags(cfg *Config, lists *listFlags, v *runFlagVars) *pflag.FlagSet {
	fs := newSubFlags("sse-latency")
	fs.StringVarP(&cfg.Listen, "listen", "L", cfg.Listen, "<[ip:]port> listen address of the dummy OpenAI-like server (def :8090)")
	fs.StringVarP(&cfg.Target, "target", "t", cfg.Target, "<[ip:]port> gateway address; empty = server only")
	fs.IntVarP(&cfg.Requests, "requests", "r", cfg.Requests, "<n> number of requests (def 1)")
	if lists == nil {
		fs.IntVarP(&cfg.Concurrency, "concurrency", "c", cfg.Concurrency, "<n> concurrency (def 1)")
	} else {
		fs.StringVarP(&lists.concurrency, "concurrency", "c", "", sweepConcurrencyUsage)
	}
	fs.VarP(tokensValue{cfg}, "tokens", "n", "<n|dist> tokens per response (def 1000), or a distribution each request draws from:\nfixed:200, uniform:50-500, normal:300,50, lognormal:300,0.5 (median, sigma), file:PATH")
	fs.Float64VarP(&cfg.ThinkMs, "think", "T", cfg.ThinkMs, "<ms> think delay before first token (def 0)")
	fs.Float64VarP(&cfg.DelayMs, "delay", "d", cfg.DelayMs, "<ms> inter-token delay (def 5, float ok)")
	fs.IntVarP(&cfg.TimeoutMs, "timeout", "w", cfg.TimeoutMs, "<ms> per-request timeout (def 300000)")
	fs.BoolVarP(&cfg.NoLoopback, "no-loopback", "l", false, "disable the loopback calibration batch")
	fs.BoolVarP(&cfg.Quiet, "quiet", "q", false, "quiet, no per-request lines")
	fs.BoolVarP(&cfg.Verbose, "verbose", "v", false, "verbose")
	fs.BoolVar(&cfg.Compat, "compat", false, "output byte for byte as the reference tool (no verdict block)")
	fs.BoolVar(&cfg.Compressed, "compressed", false, "send Accept-Encoding: gzip (gzip responses are always decoded)")
	fs.StringVar(&cfg.Engine, "engine", cfg.Engine, "<name> I/O engine: auto, epoll, uring, goroutine (def auto: epoll on Linux for HTTP/1.1 and HTTP/2, plain or TLS 1.3, else goroutine)")
	fs.StringVar(&cfg.API, "api", cfg.API, "<name> API dialect: chat, completions, responses, anthropic (def chat)")
	fs.StringVar(&cfg.Model, "model", cfg.Model, "<name> model the requests ask for (def sse-latency-1)")
	fs.StringVar(&cfg.Path, "path", cfg.Path, "<path> request path through the gateway (def: the dialect's, e.g. /v1/messages)")
	fs.BoolVar(&cfg.IncludeUsage, "include-usage", false, "ask chat/completions streams for usage and fail requests without it")
	fs.IntVar(&cfg.Reasoning, "reasoning", 0, "<n> stream n reasoning tokens first, spread over -T (at -d when -T is 0) (def 0)")
	fs.IntVar(&cfg.ToolCall, "tool-call", 0, "<n> then one tool call of n argument tokens, at -d, before the text (def 0)")
	fs.StringVar(&cfg.ReasoningField, "reasoning-field", cfg.ReasoningField, "<f> reasoning_content (chat delta.reasoning_content, responses summary) or\nreasoning (chat delta.reasoning, responses reasoning_text) (def reasoning_content)")
	fs.Float64Var(&cfg.HeartbeatMs, "heartbeat", 0, "<ms> the server writes a heartbeat (\": ping\", anthropic: event: ping) after each <ms> of silence (def 0: none)")
	fs.IntVar(&cfg.IdleMs, "idle-timeout", 0, "<ms> end a request whose stream stays silent this long (def 0: off; -w still applies)")
	fs.BoolVarP(&cfg.KeepAlive, "keepalive", "k", false, "reuse one connection per concurrency slot (drained to its end after [DONE])")
	fs.IntVar(&cfg.StreamsPerConn, "streams-per-conn", cfg.StreamsPerConn, "<n> with -k and --http2/--h2c/--http3: n concurrency slots share one HTTP/2 (or QUIC)\nconnection, each request a stream of its own on it (-c 100 --streams-per-conn 10:\n10 connections); def 1")
	fs.BoolVar(&cfg.ServerClose, "server-close", false, "the server closes every connection after its response, as the reference")
	fs.IntVar(&cfg.MaxStreams, "max-streams", 0, "<n> the server answers 429 beyond n concurrent streams (def 10000; -1: no limit)")
	fs.Var(faultsValue{&cfg.Faults}, "fault", "<spec> the server injects upstream faults into every answer, e.g. \"cut_after=5\" or\n\"stall_after=10; stall_ms=2000\" (repeatable; keys in README.md, \"Fault hints\")")
	fs.StringVar(&cfg.Corpus, "corpus", "", "<name> a preset stream: responses (the field reports' relay corpus: --api responses, 1024\ntext deltas, 256 reasoning, a function call of 4 argument deltas, 16 KiB upstream writes)")
	addRequestFlags(fs, cfg, "<name> the gateway under test, for its own advice: haproxy, nginx, caddy, apache, lighttpd, varnish,\nsquid, h2o, trafficserver, envoy, traefik, kong, node, go, litellm, portkey, cloudflare\n(def: named from its response headers and the local process listening at -t)")
	fs.BoolVar(&cfg.WebSocket, "websocket", false, "with --api responses: the Responses API's WebSocket mode (one response.create\nper request, each event a message; -k keeps the socket for the next)")
	fs.StringVar(&cfg.TLSCert, "tls-cert", "", "<file> the server listens with TLS, with this certificate (PEM) ...")
	fs.StringVar(&cfg.TLSKey, "tls-key", "", "<file> ... and this key")
	fs.BoolVar(&cfg.TLSSelfSigned, "tls-self-signed", false, "the server listens with TLS, with an in-memory certificate (fingerprint on stderr)")
	if lists == nil {
		fs.Float64Var(&cfg.Rate, "rate", 0, "<r/s> open loop: start requests at this rate (-c caps those in flight)")
	} else {
		fs.StringVar(&lists.rate, "rate", "", sweepRateUsage)
	}
	fs.StringVar(&cfg.Arrival, "arrival", cfg.Arrival, "<kind> constant or poisson arrivals with --rate (def constant)")
	fs.DurationVar(&cfg.Duration, "duration", 0, "<d> start requests for this long (e.g. 30s) instead of counting -r")
	fs.IntVar(&cfg.Warmup, "warmup", 0, "<n> the first n requests are reported but left out of the statistics")
	fs.IntVar(&cfg.Rounds, "rounds", 0, "<n> alternate n loopback and n gateway rounds (L G G L ...); the overhead is\nthe difference of the rounds' medians (def 0: one calibration, as the reference)")
	promptBytesUsage := "<size> pad the prompt to this size: bytes, or k/m (64k, 1m; def: the short prompt),\nor a distribution of sizes as for -n (uniform:1k-64k)"
	if lists != nil {
		promptBytesUsage = sweepPromptBytesUsage
	}
	fs.StringVar(&v.promptBytes, "prompt-bytes", "", promptBytesUsage)
	if lists != nil {
		fs.Float64Var(&lists.kneeMs, "knee-threshold", sweep.DefaultKneeThresholdMs, sweepKneeUsage)
	}
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "<n> seed of the distributions' draws and the Poisson arrivals (def 1)")
	fs.StringVar(&cfg.Trace, "trace", "", "<file> replay a trace, Mooncake JSONL or BurstGPT CSV: each request's arrival, prompt\n(its prefix blocks shared) and output length; -c caps the requests in flight")
	fs.Float64Var(&cfg.TraceSpeed, "trace-speed", cfg.TraceSpeed, "<x> replay the trace x times as fast (def 1)")
	fs.IntVar(&cfg.TraceLimit, "trace-limit", 0, "<n> replay at most the trace's first n requests (def 0: all; --duration bounds it too)")
	fs.BoolVar(&cfg.TraceSkipBad, "trace-skip-bad", false, "skip the trace's bad lines (counted in the report) instead of stopping")
	fs.IntVar(&cfg.CacheBlock, "cache-block", cfg.CacheBlock, "<tokens> block of the server's simulated prefix cache, and of a trace's hash_ids (def 512;\n0: no cache, the usage's cache fields are null)")
	fs.StringArrayVar(&v.slos, "slo", nil, "<objective> check after the run, e.g. 'gateway emit->recv p99 < 1ms' or 'added TTFT p50 < 2ms'\n(repeatable); exit 3 when one is not met")
	fs.IntSliceVar(&cfg.GatewayPIDs, "gateway-pid", nil, "<pid> account this gateway process's CPU, writes and memory per batch, children included\n(repeatable; def: the process listening on -t's address, when it is on this host)")
	fs.StringVar(&cfg.CPUs, "cpus", "", "<list> pin the tool's threads and GOMAXPROCS to these CPUs (e.g. 0 or 0,2-3); the cost block\nprints the taskset line that pins the gateway to the others")
	fs.StringVar(&cfg.JSONPath, "json", "", "<file> write the run as a JSON document (\"-\": stdout; the text report then goes to stderr)")
	fs.StringVar(&cfg.HTMLPath, "html", "", "<file> write a self-contained HTML report with plots")
	fs.StringVar(&cfg.CSVPath, "csv", "", "<file> stream one row per token (batch, request, token, emitted, arrived, delay, read)")
	fs.StringVar(&cfg.Control, "control", "", "<[ip:]port> serve the server's timing records there (clock, emission times, arrivals), for a\nclient on another host; bind it to a private address")
	fs.StringVar(&cfg.ControlToken, "control-token", "", "<t> the token of those control endpoints (def: a random one, printed at start)")
	fs.StringVar(&cfg.Instance, "instance-id", "", "<id> with --control: this server's name in every chunk and stream head, for clients\nof several replicas (def: host name and process id)")
	fs.StringSliceVar(&cfg.Servers, "server", nil, "<URL> the server runs on another host: its control endpoint, http://host:port\n(with --control-token; the server's own clock is read and corrected for);\nrepeatable, one per server replica, or a name resolving to each (at most 64)")
	fs.BoolVarP(&v.help, "help", "h", false, "help")
	fs.BoolVar(&v.version, "version", false, "print the version and exit")
	return fs
}

// runAbout and runNotes are the measurement's help around its flags (see
// command); a test pins the help and checks that it names every flag.
const runAbout = `Measures how much latency an HTTP gateway adds to streamed (SSE) LLM
responses. One process is both a dummy OpenAI-like server (-L) and a client
that streams through the gateway under test (-t); every token carries its
emission time, so its one-way delay through the gateway is exact.
`

const runNotes = `
Addresses: port, :port, *:port, ip:port, host:port, [v6]:port; -t also takes
a URL, http(s)://host[:port][/prefix] (the prefix goes before the API path).
Example: sse-latency -L :8090 -t 127.0.0.1:8080 -r 20 -c 5 -n 1000
`

// addRequestFlags registers the flags that shape a request to the gateway
// and name it, which a run and check share: -H, --api-key, --host-header,
// --gateway (gatewayUsage, each command's own words), --insecure,
// --cacert, --http2, --h2c and --http3, in that order.
func addRequestFlags(fs *pflag.FlagSet, cfg *Config, gatewayUsage string) {
	fs.StringArrayVarP(&cfg.Headers, "header", "H", nil, "<line> extra request header \"Name: value\" (repeatable)")
	fs.StringVar(&cfg.APIKey, "api-key", "", "<key> send Authorization: Bearer <key> (x-api-key for --api anthropic); never printed")
	fs.StringVar(&cfg.HostHeader, "host-header", "", "<host> Host header to send")
	fs.StringVar(&cfg.Gateway, "gateway", "", gatewayUsage)
	fs.BoolVar(&cfg.Insecure, "insecure", false, "https targets: do not verify the certificate")
	fs.StringVar(&cfg.CACert, "cacert", "", "<file> https targets: trust the CAs of this PEM file")
	fs.BoolVar(&cfg.HTTP2, "http2", false, "https targets: offer HTTP/2 (ALPN)")
	fs.BoolVar(&cfg.H2C, "h2c", false, "http targets: speak HTTP/2 with prior knowledge")
	fs.BoolVar(&cfg.HTTP3, "http3", false, "https targets: speak HTTP/3 over QUIC (UDP); a TLS -L serves it too")
}
