package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/sse-latency/sse-latency/internal/check"
	"github.com/sse-latency/sse-latency/internal/client"
	gwid "github.com/sse-latency/sse-latency/internal/gateway"
	"github.com/sse-latency/sse-latency/internal/report"
)

// checkAbout is check's help before its flags (see command); a test
// checks that the help names every flag and every scenario.
const checkAbout = `Runs a fixed battery of short scenarios through the gateway at -t, which
forwards to sse-latency's dummy server on -L, and says for each PASS, WARN
or FAIL, with the evidence and the likely fix: whether the gateway flushes
every event (and how it buffers if not), holds the first event, passes a
64 KB event, a UTF-8 character split across writes, CRLF/CR line endings
and comments, usage, the terminal event; signals an upstream cut; passes
429 and 500 with their bodies; lets a client's cancel reach the upstream
within 1 s; takes a 1 MB prompt; reuses its connection; compresses the
stream without holding it; runs the streams of one HTTP/2 connection at
once, each flushed (SKIP, saying why, without HTTP/2: an http:// target
needs --h2c). A few seconds; --long adds 65 s silences.
Exit status 0 when no check failed, 1 otherwise (and when the target is no
gateway to the server: one line says why).
`

// checkNotes is check's help after its flags: the scenarios' names.
func checkNotes() string {
	return "Checks, in the order they run:\n  " + strings.Join(check.Names(), ", ") + "\n"
}

// CheckOn runs `sse-latency check` with args (those after "check") and
// returns the exit status, with the dummy server on ln, a listener the
// caller has bound, in place of one bound at -L (tests hand over
// 127.0.0.1:0 rather than a port another socket may take first); ln is
// closed when CheckOn returns. A nil ln binds -L.
func CheckOn(ctx context.Context, ln net.Listener, args []string, stdout, stderr io.Writer) int {
	if ln != nil {
		defer ln.Close()
	}
	return checkArgs(ctx, ln, args, stdout, stderr)
}

// checkOptions are check's own options, beside the Config it fills.
type checkOptions struct {
	only, skip []string
	long       bool
	streams    int // --streams-per-conn: the multiplex row's streams on one connection
}

// checkFlags is check's flag set, filling cfg and co.
func checkFlags(cfg *Config, co *checkOptions) *pflag.FlagSet {
	fs := newSubFlags("check")
	fs.StringVarP(&cfg.Target, "target", "t", "", "<[ip:]port|URL> the gateway (required)")
	fs.StringVarP(&cfg.Listen, "listen", "L", cfg.Listen, "<[ip:]port> listen address of the dummy server the gateway forwards to (def :8090)")
	fs.StringVar(&cfg.API, "api", cfg.API, "<name> API dialect: chat, completions, responses, anthropic (def chat)")
	fs.StringSliceVar(&co.only, "only", nil, "<names> run only these checks (comma-separated)")
	fs.StringSliceVar(&co.skip, "skip", nil, "<names> leave these checks out (comma-separated)")
	fs.BoolVar(&co.long, "long", false, "also run the long checks (a minute or more each)")
	fs.IntVar(&co.streams, "streams-per-conn", check.MuxStreams, "<n> streams the multiplex check runs at once on one HTTP/2 (--http3: QUIC) connection (def 8)")
	fs.StringVar(&cfg.JSONPath, "json", "", "<file> write the check as a JSON document")
	fs.StringVar(&cfg.HTMLPath, "html", "", "<file> write the check as a self-contained HTML page")
	fs.StringVar(&cfg.Model, "model", cfg.Model, "<name> model the requests ask for (def sse-latency-1)")
	fs.StringVar(&cfg.Path, "path", "", "<path> request path through the gateway (def: the dialect's)")
	addRequestFlags(fs, cfg, "<name> the gateway under test, for its own fixes (names: sse-latency -h); def: named from\nits response headers and the local process listening at -t")
	fs.StringVar(&cfg.Engine, "engine", cfg.Engine, "<name> I/O engine: auto, epoll, uring, goroutine (def auto)")
	fs.BoolVarP(&cfg.Verbose, "verbose", "v", false, "debug lines on stderr (the server's among them)")
	return fs
}

// checkArgs parses the arguments of check and runs it.
func checkArgs(ctx context.Context, ln net.Listener, args []string, stdout, stderr io.Writer) int {
	cfg := DefaultConfig()
	var co checkOptions
	fs := checkFlags(&cfg, &co)
	if err := fs.Parse(args); err != nil {
		return subUsage(stderr, checkHelp(), err)
	}
	if fs.NArg() > 0 {
		return subUsage(stderr, checkHelp(), fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if cfg.Target == "" {
		return subUsage(stderr, checkHelp(), errors.New("check needs the gateway: -t"))
	}
	t, err := parseTarget(cfg.Target)
	if err == nil {
		err = cfg.Validate()
	}
	if err == nil && cfg.HTTP3 && t.scheme != "https" {
		err = errors.New("--http3: -t must be an https:// URL (QUIC is always TLS)")
	}
	if err == nil {
		err = co.validateStreams(fs.Changed("streams-per-conn"), cfg, t)
	}
	if err == nil && cfg.JSONPath != "" && cfg.JSONPath == cfg.HTMLPath {
		err = fmt.Errorf("--json and --html name the same file %q", cfg.JSONPath)
	}
	if err != nil {
		return subUsage(stderr, checkHelp(), err)
	}
	code, err := runCheck(ctx, ln, cfg, t, co, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "sse-latency check: %v\n", err)
	}
	return code
}

// validateStreams checks --streams-per-conn (given: set on the command
// line): at least 2, and, when given, a multiplex check that runs over
// HTTP/2 — an https:// target, or an http:// one with --h2c — or HTTP/3
// (--http3), and is not left out by --only or --skip.
func (co checkOptions) validateStreams(given bool, cfg Config, t target) error {
	n := co.streams
	switch {
	case n < 2:
		return fmt.Errorf("--streams-per-conn %d: the multiplex check needs at least 2 streams on its connection", n)
	case !given:
		return nil
	case t.scheme != "https" && !cfg.H2C:
		return errors.New("--streams-per-conn: the multiplex check of an http:// target runs over HTTP/2 with prior knowledge: add --h2c")
	case len(co.only) > 0 && !slices.Contains(co.only, "multiplex"), slices.Contains(co.skip, "multiplex"):
		return errors.New("--streams-per-conn sets the multiplex check's streams, which --only or --skip leave out")
	}
	return nil
}

// runCheck binds the server's listener, resolves the target, runs the
// check printing each row as it finishes, and writes the files.
func runCheck(ctx context.Context, ln net.Listener, cfg Config, t target, co checkOptions, stdout, stderr io.Writer) (int, error) {
	out := &console{stdout: stdout, stderr: stderr}
	files, err := createCheckFiles(cfg.JSONPath, cfg.HTMLPath)
	if err != nil {
		return ExitFailure, err
	}
	defer files.abandon()
	addr, _, err := listenAddr(cfg.Listen)
	if err != nil {
		return ExitFailure, fmt.Errorf("-L: %v", err)
	}
	gwAddr, err := destAddr(ctx, t.hostPort)
	if err != nil {
		return ExitFailure, fmt.Errorf("-t: %v", err)
	}
	clk, _, err := processClock()
	if err != nil {
		return ExitFailure, err
	}
	o := client.Options{Dialect: cfg.Dialect(), Addr: gwAddr, Model: cfg.Model, Path: cfg.Path, Host: cfg.HostHeader,
		Scheme: t.scheme, APIKey: cfg.APIKey, ExtraHeaders: cfg.Headers, Engine: client.Engine(cfg.Engine),
		HTTP2: cfg.HTTP2 && t.scheme == "https", H2C: cfg.H2C && t.scheme != "https", HTTP3: cfg.HTTP3, Clock: clk}
	if o.Path == "" && t.prefix != "" {
		o.Path = t.prefix + o.Dialect.Path()
	}
	if o.Host == "" && t.url {
		o.Host = t.hostPort
	}
	if t.scheme == "https" {
		if o.TLS, err = client.TLSConfig(t.serverName(cfg.HostHeader), cfg.Insecure, cfg.CACert); err != nil {
			return ExitFailure, fmt.Errorf("--cacert: %w", err)
		}
	}
	if e, note := client.New(o).ResolveEngine(); note != "" || cfg.Verbose {
		if note != "" {
			out.errorf("note: %s\n", note)
		}
		if cfg.Verbose {
			out.debugf("client: %s engine", e)
		}
	}
	if ln == nil {
		if ln, err = net.Listen("tcp", addr); err != nil {
			return ExitFailure, fmt.Errorf("cannot listen on %s: %w", cfg.Listen, err)
		}
	}
	opts := check.Options{Client: o, Target: cfg.Target, Listener: ln, Engine: client.Engine(cfg.Engine), Only: co.only, Skip: co.skip,
		Long: co.long, StreamsPerConn: co.streams, Gateway: gatewayEvidence(cfg.Gateway, gwAddr),
		Identified: func(id *gwid.Identity) {
			out.print(func(w io.Writer) error { return report.WriteCheckGateway(w, id) })
		},
		Progress: func(r check.Row) { out.print(func(w io.Writer) error { return report.WriteCheckRow(w, r) }) }}
	if cfg.Verbose {
		opts.Logf = out.debugf
	}
	out.print(func(w io.Writer) error {
		return report.WriteCheckHeader(w, cfg.Target, cfg.API, displayListen(ln.Addr()))
	})
	rep, err := check.Run(ctx, opts)
	if rep == nil {
		return ExitFailure, err
	}
	out.print(func(w io.Writer) error { return report.WriteCheckSummary(w, rep) })
	code := ExitOK
	switch {
	case ctx.Err() != nil:
		code = ExitInterrupted
	case rep.Failed():
		code = ExitFailure
	}
	if err := files.write(rep); err != nil {
		return ExitFailure, err
	}
	if err := out.stdoutErr(); err != nil {
		return ExitFailure, fmt.Errorf("writing the report: %w", err)
	}
	return code, nil
}

// checkFiles are the check's --json and --html files (see outFile).
type checkFiles struct {
	json, html *outFile // nil: not asked for
}

func createCheckFiles(jsonPath, htmlPath string) (*checkFiles, error) {
	f := &checkFiles{}
	var err error
	if jsonPath != "" {
		if f.json, err = createOutFile("--json", jsonPath); err != nil {
			return nil, err
		}
	}
	if htmlPath != "" {
		if f.html, err = createOutFile("--html", htmlPath); err != nil {
			f.abandon()
			return nil, err
		}
	}
	return f, nil
}

// write fills the files and puts them in place.
func (f *checkFiles) write(rep *check.Report) error {
	var errs []error
	if f.json != nil {
		errs = append(errs, f.json.commit(func(w io.Writer) error { return check.WriteJSON(w, rep) }))
	}
	if f.html != nil {
		errs = append(errs, f.html.commit(func(w io.Writer) error { return report.WriteCheckHTML(w, rep) }))
	}
	return errors.Join(errs...)
}

// abandon removes the temporary files of a check that did not finish.
func (f *checkFiles) abandon() {
	f.json.abandon()
	f.html.abandon()
}

// print writes on stdout with write, keeping its first error (see
// console).
func (c *console) print(write func(io.Writer) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.erase()
	c.keep(write(c.stdout))
}
