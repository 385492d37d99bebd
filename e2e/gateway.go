//go:build linux

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sse-latency/sse-latency/internal/procnet"
)

// The addresses written in the example configurations: the gateway listens
// on ExampleGatewayAddr and forwards to sse-latency's server on
// ExampleBackendAddr. Render replaces them with free ports.
const (
	ExampleGatewayAddr = "127.0.0.1:8080"
	ExampleBackendAddr = "127.0.0.1:8090"
)

// ExamplePEMPath is where the TLS examples read the gateway's certificate
// and key (one PEM file, certificate first). RenderPEM replaces it with a
// file the test writes.
const ExamplePEMPath = "/etc/haproxy/sse-latency.pem"

// Bounds on the life of a gateway process.
const (
	ListenTimeout = 10 * time.Second // from start until the gateway accepts connections
	StopGrace     = 5 * time.Second  // from SIGTERM until SIGKILL
	CommandLimit  = 30 * time.Second // a validation or version command
)

// Gateway is a gateway program and how to drive it. The functions receive
// the configuration file to use and dir, a private directory for everything
// the gateway writes.
type Gateway struct {
	Name    string // as shown in reports: "haproxy"
	Program string // executable name, looked up by LookPath
	Package string // Debian package that provides it

	ConfName    string   // file name of the rendered configuration inside dir
	VersionArgs []string // arguments that print the version

	// RunArgs returns the arguments that run the gateway in the foreground.
	RunArgs func(conf, dir string) []string
	// CheckArgs returns the arguments that only validate the configuration.
	CheckArgs func(conf, dir string) []string
	// Env returns environment variables added to the gateway's (nil: none).
	Env func(dir string) []string
	// SplitAddrs: the configuration names each address's host and port
	// apart (lighttpd's server.port, proxy.server's "port"): RenderPorts
	// renders it, not Render.
	SplitAddrs bool
}

// render renders example for gatewayAddr and backendAddr as g's
// configurations name addresses (Render, or RenderPorts).
func (g *Gateway) render(example []byte, gatewayAddr, backendAddr string) ([]byte, error) {
	if g.SplitAddrs {
		return RenderPorts(example, gatewayAddr, backendAddr)
	}
	return Render(example, gatewayAddr, backendAddr)
}

// HAProxy runs in the foreground (-db); it writes nothing.
var HAProxy = &Gateway{
	Name:        "haproxy",
	Program:     "haproxy",
	Package:     "haproxy",
	ConfName:    "haproxy.cfg",
	VersionArgs: []string{"-v"},
	RunArgs:     func(conf, _ string) []string { return []string{"-db", "-f", conf} },
	CheckArgs:   func(conf, _ string) []string { return []string{"-c", "-f", conf} },
}

// Nginx runs in the foreground with dir as its prefix: the examples keep
// their temp paths relative to it and turn the access log off; the pid file
// goes there too and the error log to stderr. Under root the worker runs as
// root, so that it can use the private (0700) directory.
var Nginx = &Gateway{
	Name:        "nginx",
	Program:     "nginx",
	Package:     "nginx",
	ConfName:    "nginx.conf",
	VersionArgs: []string{"-v"},
	RunArgs: func(conf, dir string) []string {
		g := "daemon off; pid nginx.pid; error_log stderr;"
		if os.Geteuid() == 0 {
			g += " user root;"
		}
		return []string{"-p", dir, "-e", "stderr", "-c", conf, "-g", g}
	},
	CheckArgs: func(conf, dir string) []string {
		return []string{"-t", "-q", "-p", dir, "-e", "stderr", "-c", conf, "-g", "pid nginx.pid; error_log stderr;"}
	},
}

// Caddy runs with its admin endpoint and automatic HTTPS off (the example
// says so) and HOME and the XDG directories in dir, so that it writes
// nothing elsewhere.
var Caddy = &Gateway{
	Name:        "caddy",
	Program:     "caddy",
	Package:     "caddy",
	ConfName:    "Caddyfile",
	VersionArgs: []string{"version"},
	RunArgs: func(conf, _ string) []string {
		return []string{"run", "--config", conf, "--adapter", "caddyfile"}
	},
	CheckArgs: func(conf, _ string) []string {
		return []string{"validate", "--config", conf, "--adapter", "caddyfile"}
	},
	Env: func(dir string) []string {
		return []string{
			"HOME=" + dir,
			"XDG_DATA_HOME=" + filepath.Join(dir, "data"),
			"XDG_CONFIG_HOME=" + filepath.Join(dir, "config"),
		}
	},
}

// Lighttpd runs in the foreground (-D), its error log on stderr (the
// examples say so), writing nothing else.
var Lighttpd = &Gateway{
	Name:        "lighttpd",
	Program:     "lighttpd",
	Package:     "lighttpd",
	ConfName:    "lighttpd.conf",
	VersionArgs: []string{"-v"},
	RunArgs:     func(conf, _ string) []string { return []string{"-D", "-f", conf} },
	CheckArgs:   func(conf, _ string) []string { return []string{"-tt", "-f", conf} },
	SplitAddrs:  true,
}

// Apache is Debian's apache2 run in the foreground on a whole
// configuration of its own (the examples load their modules, log to
// stderr), its runtime directory and pid file in dir. Under root its
// children run as nobody: httpd refuses to serve as root.
var Apache = &Gateway{
	Name:        "apache",
	Program:     "apache2",
	Package:     "apache2",
	ConfName:    "apache.conf",
	VersionArgs: []string{"-v"},
	RunArgs:     func(conf, dir string) []string { return append([]string{"-D", "FOREGROUND"}, apacheArgs(conf, dir)...) },
	CheckArgs:   func(conf, dir string) []string { return append([]string{"-t"}, apacheArgs(conf, dir)...) },
}

// apacheArgs are the arguments of every apache2 command: the
// configuration, and the directives that keep it in dir.
func apacheArgs(conf, dir string) []string {
	args := []string{"-f", conf, "-C", "DefaultRuntimeDir " + dir, "-C", "PidFile " + filepath.Join(dir, "apache2.pid")}
	if os.Geteuid() == 0 {
		args = append(args, "-C", "User #65534", "-C", "Group #65534")
	}
	return args
}

// Example is one configuration shipped in examples/.
type Example struct {
	Name       string // test name: "haproxy-no-delay"
	Gateway    *Gateway
	File       string // path from the repository root
	Compressed bool   // measured with --compressed (Accept-Encoding: gzip)
	PEM        bool   // terminates TLS with the certificate and key at ExamplePEMPath
	// Edit, when set, changes the example's bytes before they are
	// rendered: a test's variant of a shipped configuration.
	Edit func([]byte) []byte
}

// Examples are the shipped configurations, in the order of the report.
var Examples = []Example{
	{Name: "haproxy", Gateway: HAProxy, File: "examples/haproxy/haproxy.cfg"},
	{Name: "haproxy-no-delay", Gateway: HAProxy, File: "examples/haproxy/haproxy-no-delay.cfg"},
	{Name: "nginx", Gateway: Nginx, File: "examples/nginx/nginx.conf"},
	{Name: "nginx-unbuffered", Gateway: Nginx, File: "examples/nginx/nginx-unbuffered.conf"},
	{Name: "nginx-gzip", Gateway: Nginx, File: "examples/nginx/nginx-gzip.conf", Compressed: true},
	{Name: "nginx-gzip-buffered", Gateway: Nginx, File: "examples/nginx/nginx-gzip-buffered.conf", Compressed: true},
	{Name: "caddy", Gateway: Caddy, File: "examples/caddy/Caddyfile"},
	{Name: "lighttpd", Gateway: Lighttpd, File: "examples/lighttpd/lighttpd.conf"},
	{Name: "lighttpd-streaming", Gateway: Lighttpd, File: "examples/lighttpd/lighttpd-streaming.conf"},
	{Name: "apache", Gateway: Apache, File: "examples/apache/apache.conf"},
	{Name: "apache-deflate", Gateway: Apache, File: "examples/apache/apache-deflate.conf", Compressed: true},
}

// TransportExamples are the shipped configurations for real transports:
// keep-alive on both hops, TLS on both hops and HTTP/2 from the client,
// TLS and HTTP/2 from the client in front of a plain backend (nginx-h2-tls,
// which check_mux_test.go checks), the Responses API's WebSocket mode. Each needs its own sse-latency flags
// (-k; --tls-self-signed, an https target, --http2; --api responses
// --websocket) and the TLS one a certificate, so TestGateways and the report,
// which measure every Example alike, leave them to transport_test.go and
// websocket_test.go; the
// tests that need no gateway and TestExamplesValid cover both lists.
var TransportExamples = []Example{
	{Name: "haproxy-keepalive", Gateway: HAProxy, File: "examples/haproxy/haproxy-keepalive.cfg"},
	{Name: "nginx-keepalive", Gateway: Nginx, File: "examples/nginx/nginx-keepalive.conf"},
	{Name: "haproxy-tls-h2", Gateway: HAProxy, File: "examples/haproxy/haproxy-tls-h2.cfg", PEM: true},
	{Name: "nginx-h2-tls", Gateway: Nginx, File: "examples/nginx/nginx-h2-tls.conf", PEM: true},
	{Name: "caddy-h3", Gateway: Caddy, File: "examples/caddy/Caddyfile-h3", PEM: true},
	{Name: "haproxy-websocket", Gateway: HAProxy, File: "examples/haproxy/haproxy-websocket.cfg"},
	{Name: "nginx-websocket", Gateway: Nginx, File: "examples/nginx/nginx-websocket.conf"},
}

// PhaseExamples are the shipped configurations for the phases of an
// answer: nginx with a 2 s read timeout, which cuts a silent think. Like
// TransportExamples they need flags of their own (a think, heartbeats), so
// phases_test.go measures them.
var PhaseExamples = []Example{
	{Name: "nginx-read-timeout", Gateway: Nginx, File: "examples/nginx/nginx-read-timeout.conf"},
}

// sbinDirs are searched after PATH: haproxy and nginx live in /usr/sbin,
// which a non-root PATH often lacks.
var sbinDirs = []string{"/usr/local/sbin", "/usr/sbin", "/sbin"}

// LookPath returns the path of program, searching PATH then the sbin
// directories.
func LookPath(program string) (string, error) {
	if p, err := exec.LookPath(program); err == nil {
		return p, nil
	}
	for _, d := range sbinDirs {
		p := filepath.Join(d, program)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in PATH nor in %s", program, strings.Join(sbinDirs, ", "))
}

// Render returns the example configuration with the conventional addresses
// replaced by gatewayAddr and backendAddr. Both must appear outside
// comments ('#' lines), or the gateway would not use the ports the test
// chose.
func Render(example []byte, gatewayAddr, backendAddr string) ([]byte, error) {
	for _, a := range []string{ExampleGatewayAddr, ExampleBackendAddr} {
		if !usedOutsideComments(example, a) {
			return nil, fmt.Errorf("the configuration does not use %s outside comments", a)
		}
	}
	out := bytes.ReplaceAll(example, []byte(ExampleGatewayAddr), []byte(gatewayAddr))
	return bytes.ReplaceAll(out, []byte(ExampleBackendAddr), []byte(backendAddr)), nil
}

// RenderPorts is Render for a configuration that names each address's
// host and port apart: the ports of the conventional addresses (8080,
// 8090) are replaced, as whole numbers, by those of gatewayAddr and
// backendAddr, whose host must be the conventional one (127.0.0.1, as
// FreePorts gives). Both ports must appear outside comments, and the host
// too.
func RenderPorts(example []byte, gatewayAddr, backendAddr string) ([]byte, error) {
	out := string(example)
	for _, a := range [][2]string{{ExampleGatewayAddr, gatewayAddr}, {ExampleBackendAddr, backendAddr}} {
		host, port, _ := strings.Cut(a[0], ":")
		newHost, newPort, ok := strings.Cut(a[1], ":")
		if !ok || newHost != host {
			return nil, fmt.Errorf("%s: want an address on %s", a[1], host)
		}
		re := regexp.MustCompile(`\b` + port + `\b`)
		if !usedOutsideComments(example, host) || !slices.ContainsFunc(strings.Split(string(example), "\n"), func(l string) bool {
			return !strings.HasPrefix(strings.TrimSpace(l), "#") && re.MatchString(l)
		}) {
			return nil, fmt.Errorf("the configuration does not use %s (host and port) outside comments", a[0])
		}
		out = re.ReplaceAllString(out, newPort)
	}
	return []byte(out), nil
}

// RenderPEM returns the example configuration with ExamplePEMPath replaced
// by pemPath (comments included, so that they name the file used). The
// path must appear outside comments.
func RenderPEM(example []byte, pemPath string) ([]byte, error) {
	if !usedOutsideComments(example, ExamplePEMPath) {
		return nil, fmt.Errorf("the configuration does not use %s outside comments", ExamplePEMPath)
	}
	return bytes.ReplaceAll(example, []byte(ExamplePEMPath), []byte(pemPath)), nil
}

// usedOutsideComments reports whether s appears on a line that is not a
// '#' comment.
func usedOutsideComments(conf []byte, s string) bool {
	for line := range strings.Lines(string(conf)) {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") && strings.Contains(line, s) {
			return true
		}
	}
	return false
}

// FreePorts returns n distinct loopback addresses that were free a moment
// ago (they are held together, then released: another process may take
// one before the caller binds it).
func FreePorts(n int) ([]string, error) {
	addrs := make([]string, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}

// Process is a running gateway: the leader of its own process group, its
// output in a log file.
type Process struct {
	Cmdline string // the command as run, for messages
	LogPath string // stdout and stderr of the gateway

	cmd     *exec.Cmd
	done    chan struct{} // closed when the leader has been reaped
	waitErr error         // valid once done is closed
	stop    sync.Once
	stopErr error
}

// Start starts bin with args and env added to the environment, in dir, in a
// new process group, with stdout and stderr in logPath. The process group is
// killed if the caller's thread dies, so a crashed test leaves no gateway
// behind (the leader gets SIGKILL; see Stop for the rest of the group).
func Start(bin string, args, env []string, dir, logPath string) (*Process, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own copy
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &Process{Cmdline: shellQuote(append([]string{bin}, args...)), LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", p.Cmdline, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Log returns what the gateway has written so far.
func (p *Process) Log() string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", p.LogPath, err)
	}
	if len(b) == 0 {
		return "(empty)"
	}
	return string(b)
}

// ErrExited is returned by WaitListening when the gateway exited first.
var ErrExited = errors.New("gateway exited before accepting connections")

// WaitListening dials addr until the gateway accepts a connection, it exits
// (ErrExited) or ctx ends. A connection accepted by another process does
// not count: the port FreePorts found may be taken by another test's
// listener before the gateway binds it, and the gateway then exits
// ("Address already in use"), which LaunchTo retries on another port.
func (p *Process) WaitListening(ctx context.Context, addr string) error {
	var d net.Dialer
	other := "" // the other process found listening on addr, if one was
	for {
		select {
		case <-p.done:
			return fmt.Errorf("%w (%v)", ErrExited, p.waitErr)
		default:
		}
		dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		c, err := d.DialContext(dctx, "tcp", addr)
		cancel()
		if err == nil {
			c.Close()
			owner, ours := p.listens(addr)
			if ours {
				return nil
			}
			other = fmt.Sprintf("; %s is listening there, not the gateway", owner)
			err = errors.New("accepted")
		}
		select {
		case <-p.done:
			return fmt.Errorf("%w (%v)", ErrExited, p.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("%s not accepting connections: %w (last dial: %v%s)", addr, ctx.Err(), err, other)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// listens reports whether the socket listening on addr is the gateway's:
// held by a process of its group. Without /proc to tell (no owner
// readable), it is taken to be. owner names the process that holds it.
func (p *Process) listens(addr string) (owner string, ours bool) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return "", true
	}
	owners, err := procnet.ListenerOwners(ap)
	if err != nil || len(owners) == 0 {
		return "", true
	}
	leader := p.cmd.Process.Pid
	for _, o := range owners {
		if pg, err := syscall.Getpgid(o.PID); o.PID == leader || err == nil && pg == leader {
			return "", true
		}
	}
	return fmt.Sprintf("%s (pid %d)", owners[0].Comm, owners[0].PID), false
}

// Signal sends sig to the gateway's whole process group: SIGKILL kills it
// as a crash would, SIGSTOP stalls it (SIGCONT resumes it; Stop a stalled
// gateway only after that).
func (p *Process) Signal(sig syscall.Signal) error {
	return syscall.Kill(-p.cmd.Process.Pid, sig)
}

// Exited returns a channel closed once the gateway's leader has exited
// and been reaped.
func (p *Process) Exited() <-chan struct{} { return p.done }

// Stop sends SIGTERM to the gateway's process group, waits up to grace for
// the leader to exit, then sends SIGKILL; finally it kills what is left of
// the group (workers whose master died). It returns an error only when the
// gateway had to be killed. Stop may be called more than once.
func (p *Process) Stop(grace time.Duration) error {
	p.stop.Do(func() {
		pgid := p.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-p.done:
		case <-t.C:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.done
			p.stopErr = fmt.Errorf("%s did not exit within %v of SIGTERM: killed", p.Cmdline, grace)
		}
		if syscall.Kill(-pgid, 0) == nil { // members left after the leader
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	})
	return p.stopErr
}

// RunCommand runs bin with args and env (added to the environment) in dir,
// bounded by CommandLimit, and returns its combined output.
func RunCommand(ctx context.Context, bin string, args, env []string, dir string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, CommandLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Version returns the gateway's version: the first word with a digit of the
// first line it prints about it, without a "name/" or "v" prefix
// ("HAProxy version 2.6.12-1+deb12u4 2026/10/17" gives "2.6.12-1+deb12u4",
// "nginx version: nginx/1.22.1" gives "1.22.1").
func Version(ctx context.Context, g *Gateway, bin, dir string) (string, error) {
	out, err := RunCommand(ctx, bin, g.VersionArgs, envOf(g, dir), dir)
	if err != nil {
		return "", fmt.Errorf("%s: %v: %s", shellQuote(append([]string{bin}, g.VersionArgs...)), err, out)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	for _, f := range strings.Fields(line) {
		if strings.ContainsAny(f, "0123456789") {
			if i := strings.LastIndexByte(f, '/'); i >= 0 {
				f = f[i+1:]
			}
			return strings.TrimPrefix(f, "v"), nil
		}
	}
	return strings.TrimSpace(line), nil
}

// Launched is a gateway started by Launch.
type Launched struct {
	*Process
	Addr        string       // where the gateway listens
	BackendAddr string       // where it forwards: sse-latency's -L
	Backend     net.Listener // bound there, for sse-latency's server (cli.MeasureOn)
	ConfPath    string       // the rendered configuration
}

// Launch renders example into dir for a free port and the address of
// backend, a listener the caller has bound for sse-latency's server (so
// that nothing can take that port before the run), starts the gateway and
// waits until it accepts connections. The gateway binds its own port: when
// it exits before it accepts (the port taken in the meantime, say), Launch
// tries once more with a new one. The error includes the command and the
// gateway's log.
func Launch(ctx context.Context, g *Gateway, bin string, example []byte, dir string, backend net.Listener) (*Launched, error) {
	l, err := LaunchTo(ctx, g, bin, example, dir, backend.Addr().String())
	if l != nil {
		l.Backend = backend
	}
	return l, err
}

// LaunchTo is Launch with the gateway forwarding to backendAddr, whatever
// is there: a refused address (testutil.RefusedAddr) makes a gateway whose
// upstream is gone. Launched.Backend is nil.
func LaunchTo(ctx context.Context, g *Gateway, bin string, example []byte, dir string, backendAddr string) (*Launched, error) {
	var errs []error
	for attempt := 1; attempt <= 2; attempt++ {
		l, err := launchOnce(ctx, g, bin, example, dir, backendAddr, attempt)
		if err == nil {
			return l, nil
		}
		if l == nil {
			return nil, errors.Join(append(errs, err)...)
		}
		l.Stop(StopGrace)
		errs = append(errs, fmt.Errorf("attempt %d: %s: %w\n--- gateway log (%s) ---\n%s", attempt, l.Cmdline, err, l.LogPath, l.Log()))
		if !errors.Is(err, ErrExited) {
			break
		}
	}
	return nil, errors.Join(errs...)
}

func launchOnce(ctx context.Context, g *Gateway, bin string, example []byte, dir string, backendAddr string, attempt int) (*Launched, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return nil, err
	}
	conf, err := g.render(example, ports[0], backendAddr)
	if err != nil {
		return nil, err
	}
	confPath := filepath.Join(dir, g.ConfName)
	if err := os.WriteFile(confPath, conf, 0o644); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, fmt.Sprintf("gateway-%d.log", attempt))
	p, err := Start(bin, g.RunArgs(confPath, dir), envOf(g, dir), dir, logPath)
	if err != nil {
		return nil, err
	}
	l := &Launched{Process: p, Addr: ports[0], BackendAddr: backendAddr, ConfPath: confPath}
	wctx, cancel := context.WithTimeout(ctx, ListenTimeout)
	defer cancel()
	return l, p.WaitListening(wctx, l.Addr)
}

func envOf(g *Gateway, dir string) []string {
	if g.Env == nil {
		return nil
	}
	return g.Env(dir)
}

// shellQuote renders argv as a shell command line, for messages.
func shellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,+@%", r))
		}) < 0 {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
