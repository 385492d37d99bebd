package cli

// The flag-effect test: every flag of the run, sweep, probe and check has
// a row that proves its effect — on the wire, as a recording gateway in
// front of the dummy server sees the requests (request line, headers,
// body) and the responses, or in what the command prints and writes.
// TestFlagTableCoversEveryFlag keeps the table in step with the flag
// sets: a flag without a row fails it.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/check"
	"github.com/sse-latency/sse-latency/internal/control"
	"github.com/sse-latency/sse-latency/internal/lengths"
	"github.com/sse-latency/sse-latency/internal/rundoc"
	"github.com/sse-latency/sse-latency/internal/schedule"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// The commands of the table.
const (
	cmdRun   = "run"
	cmdSweep = "sweep"
	cmdProbe = "probe"
	cmdCheck = "check"
)

// seenRequest is one request the recording gateway received.
type seenRequest struct {
	Line   string      // "POST /v1/chat/completions HTTP/1.1"; "PRI * HTTP/2.0" for HTTP/2
	Header http.Header // as sent (canonical keys)
	Raw    string      // the head as sent, line endings included
	Body   string
}

// recorder is a TCP gateway on loopback that forwards each connection to
// the dummy server and keeps what the client sent on it and what the
// server answered.
type recorder struct {
	Addr     string
	upstream func() string   // the server's address, once known
	hold     bool            // never forward: answer nothing
	waitFor  int             // forward nothing until this many connections came
	spans    []time.Duration // per connection forwarded: from the first byte sent to the last answered
	starts   []time.Time     // per connection forwarded: its first byte sent

	mu       sync.Mutex
	sent     []*bytes.Buffer // per connection, what the client sent
	answered bytes.Buffer    // what the server answered, all connections
	alpn     []string        // per TLS connection, the protocol negotiated
	arrived  chan struct{}   // one per connection accepted
	wg       sync.WaitGroup  // the accept loop and the connections
	open     int             // connections being relayed (under mu)
	idle     chan struct{}   // closed while open is 0 (under mu)
}

// opened and closed count a connection in and out of open; idle returns
// a channel closed once no connection is open. (A WaitGroup cannot do
// it: a connection accepted while a Wait is under way, the next step of
// a sweep, is an Add racing that Wait.)
func (r *recorder) opened() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.open == 0 {
		r.idle = make(chan struct{})
	}
	r.open++
}

func (r *recorder) closed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.open--; r.open == 0 {
		close(r.idle)
	}
}

func (r *recorder) idleCh() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.idle
}

// startRecorder starts a recording gateway (TLS-terminating with tc when
// not nil); its connections are closed and awaited when the test ends.
func startRecorder(t *testing.T, upstream func() string, tc *tls.Config, hold bool, waitFor int) *recorder {
	t.Helper()
	var ln net.Listener = testutil.Listen(t)
	if tc != nil {
		ln = tls.NewListener(ln, tc)
	}
	r := &recorder{Addr: ln.Addr().String(), upstream: upstream, hold: hold, waitFor: waitFor, arrived: make(chan struct{}, 1024),
		idle: make(chan struct{})}
	close(r.idle)
	var conns []net.Conn
	var cmu sync.Mutex
	r.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			cmu.Lock()
			conns = append(conns, c)
			cmu.Unlock()
			r.opened()
			r.wg.Go(func() { defer r.closed(); r.serve(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		cmu.Lock()
		for _, c := range conns {
			c.Close()
		}
		cmu.Unlock()
		r.wg.Wait()
	})
	return r
}

// serve relays one connection, keeping both directions.
func (r *recorder) serve(down net.Conn) {
	defer down.Close()
	if tc, ok := down.(*tls.Conn); ok {
		if err := tc.Handshake(); err != nil {
			return
		}
		r.mu.Lock()
		r.alpn = append(r.alpn, tc.ConnectionState().NegotiatedProtocol)
		r.mu.Unlock()
	}
	sent := &recBuffer{mu: &r.mu}
	r.mu.Lock()
	r.sent = append(r.sent, &sent.b)
	n := len(r.sent)
	r.mu.Unlock()
	r.arrived <- struct{}{}
	if r.hold {
		io.Copy(sent, down) // until the client gives up
		return
	}
	if r.waitFor > 1 && n < r.waitFor {
		// Until the others came: a client that does not send them
		// concurrently leaves this one waiting until the test ends.
		testutil.Poll(func() bool { r.mu.Lock(); defer r.mu.Unlock(); return len(r.sent) >= r.waitFor }, 20*time.Second)
	}
	up, err := net.Dial("tcp", r.upstream())
	if err != nil {
		return
	}
	defer up.Close()
	var first, last time.Time // written by one goroutine each, read after both
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(io.MultiWriter(writerFunc(func(p []byte) (int, error) {
			if first.IsZero() {
				first = time.Now()
			}
			return len(p), nil
		}), up, sent), down)
		if c, ok := up.(*net.TCPConn); ok {
			c.CloseWrite()
		}
	}()
	io.Copy(io.MultiWriter(down, &recBuffer{mu: &r.mu, into: &r.answered}, writerFunc(func(p []byte) (int, error) {
		last = time.Now()
		return len(p), nil
	})), up)
	down.Close()
	<-done
	r.mu.Lock()
	if !first.IsZero() {
		r.starts = append(r.starts, first)
	}
	if !first.IsZero() && !last.IsZero() {
		r.spans = append(r.spans, last.Sub(first))
	}
	r.mu.Unlock()
}

// writerFunc is a func as an io.Writer.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// recBuffer writes into b (or into) under mu.
type recBuffer struct {
	mu   *sync.Mutex
	b    bytes.Buffer
	into *bytes.Buffer
}

func (l *recBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.into != nil {
		return l.into.Write(p)
	}
	return l.b.Write(p)
}

// requests parses what the clients sent: HTTP/1.1 requests one after the
// other on each connection (up to a WebSocket upgrade, after which frames
// follow); the HTTP/2 preface as one "PRI * HTTP/2.0".
func (r *recorder) requests() (out []seenRequest, conns int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.sent {
		raw := b.String()
		if strings.HasPrefix(raw, "PRI * HTTP/2.0") {
			out = append(out, seenRequest{Line: "PRI * HTTP/2.0", Raw: raw})
			continue
		}
		for pos := 0; pos < len(raw); {
			end := strings.Index(raw[pos:], "\r\n\r\n")
			if end < 0 {
				break
			}
			head := raw[pos : pos+end+4]
			req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(head)))
			if err != nil {
				break
			}
			pos += end + 4
			n := min(max(int(req.ContentLength), 0), len(raw)-pos)
			line, _, _ := strings.Cut(head, "\r\n")
			out = append(out, seenRequest{Line: line, Header: req.Header, Raw: head, Body: raw[pos : pos+n]})
			pos += n
			if req.Header.Get("Upgrade") != "" {
				break
			}
		}
	}
	return out, len(r.sent)
}

// answers is what the server sent back, all connections.
func (r *recorder) answers() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.answered.String()
}

// observed is what a command did, for a row to check.
type observed struct {
	cmd            string
	code           int
	stdout, stderr string
	sum            *Summary // the run's (cmdRun only)
	reqs           []seenRequest
	conns          int
	answers        string
	alpn           []string
	dir            string // the row's directory ($DIR in its arguments)
	steps          int    // the measurements the command made: a sweep's steps, 1 otherwise
	spans          []time.Duration
	starts         []time.Time // when each request's first byte reached the gateway, in order
	announced      []time.Time // when each gateway batch was announced ("gw: sending"), in order
}

// doc reads the run document the row wrote to $DIR/run.json.
func (o *observed) doc(t *testing.T) *rundoc.Document {
	t.Helper()
	d, err := readDocument(filepath.Join(o.dir, "run.json"))
	if err != nil {
		t.Fatalf("%s: %v\n%s", o.cmd, err, o)
	}
	return d
}

func (o *observed) String() string {
	var heads []string
	for _, r := range o.reqs {
		heads = append(heads, r.Raw)
	}
	return fmt.Sprintf("exit %d\n--- stdout ---\n%s--- stderr ---\n%s--- %d connection(s), requests ---\n%s",
		o.code, o.stdout, o.stderr, o.conns, strings.Join(heads, "\n"))
}

// header is the value of the request's header name, "" without one.
func (r seenRequest) header(name string) string { return r.Header.Get(name) }

// gwMode is how a row's gateway behaves.
type gwMode struct {
	hold    bool // answer nothing
	waitFor int  // forward nothing until this many connections came
	tls     bool // terminate TLS (the test's certificate), ALPN h2 and http/1.1
	passTLS bool // the server speaks TLS (the row's flags): -t is https:// through the gateway, which passes the bytes on
}

// flagRow is one row of the table: the flags it proves, the commands it
// runs, the arguments it adds to each command's base, the gateway, and
// what it checks. A row with run set runs that instead (setups of their
// own: across hosts).
type flagRow struct {
	flags []string // the long names of the flags this row proves
	cmds  []string
	args  []string          // "$DIR" is the row's directory, "$CERT" and "$KEY" the test's certificate and key
	files map[string]string // written into $DIR before the command runs
	bare  bool              // no -r, -c, -n, -d in the command's base (a trace gives them)
	gw    gwMode
	want  func(t *testing.T, o *observed)
	run   func(t *testing.T)
}

// testCert is a self-signed certificate for 127.0.0.1, written as PEM
// files into a directory of the test.
type testCert struct {
	certPath, keyPath string
	tls               *tls.Config
}

func newTestCert(t *testing.T) testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(now.UnixNano()), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c := testCert{certPath: filepath.Join(dir, "cert.pem"), keyPath: filepath.Join(dir, "key.pem")}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	if err := os.WriteFile(c.certPath, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.keyPath, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	c.tls = &tls.Config{Certificates: []tls.Certificate{pair}, NextProtos: []string{"h2", "http/1.1"}}
	return c
}

// flagLimit bounds each row's command.
const flagLimit = time.Minute

// runRow runs the row's command cmd and returns what it did.
func runRow(t *testing.T, row flagRow, cmd string, cert testCert) *observed {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), flagLimit)
	defer cancel()
	o := &observed{cmd: cmd, dir: t.TempDir(), steps: 1}
	ln := testutil.Listen(t)
	serverAddr := ln.Addr().String()
	upstream := make(chan string, 1)
	var upOnce sync.Once
	setUp := func(a string) { upOnce.Do(func() { upstream <- a; close(upstream) }) }
	var upAddr string
	var upMu sync.Mutex
	wait := func() string {
		upMu.Lock()
		defer upMu.Unlock()
		if upAddr == "" {
			select {
			case upAddr = <-upstream:
			case <-ctx.Done():
			}
		}
		return upAddr
	}
	var tc *tls.Config
	if row.gw.tls {
		tc = cert.tls
	}
	rec := startRecorder(t, wait, tc, row.gw.hold, row.gw.waitFor)
	target := rec.Addr
	if row.gw.tls || row.gw.passTLS {
		target = "https://" + rec.Addr
	}
	for name, content := range row.files {
		if err := os.WriteFile(filepath.Join(o.dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := make([]string, len(row.args))
	for i, a := range row.args {
		a = strings.ReplaceAll(a, "$DIR", o.dir)
		a = strings.ReplaceAll(a, "$CERT", cert.certPath)
		args[i] = strings.ReplaceAll(a, "$KEY", cert.keyPath)
	}
	base := []string{"-L", serverAddr, "-t", target, "-r", "1", "-c", "1", "-n", "3", "-d", "1", "-w", "20000"}
	if row.bare {
		base = []string{"-L", serverAddr, "-t", target, "-w", "20000"}
	}
	var stdout bytes.Buffer
	var announced []time.Time
	var amu sync.Mutex
	note := func(p []byte) {
		if bytes.Contains(p, []byte("gw: sending ")) || bytes.Contains(p, []byte("gw: replaying ")) {
			amu.Lock()
			announced = append(announced, time.Now())
			amu.Unlock()
		}
	}
	stderr := &watched{on: note}
	switch cmd {
	case cmdRun:
		setUp(serverAddr)
		o.code, o.sum = MeasureOn(ctx, ln, append(base, args...), &stdout, stderr)
	case cmdSweep:
		setUp(serverAddr)
		o.steps = 2
		axis := false
		for i, a := range args[:max(len(args)-1, 0)] {
			axis = axis || slices.Contains([]string{"-c", "--concurrency", "--rate", "--prompt-bytes"}, a) && strings.Contains(args[i+1], ",")
		}
		if !axis {
			base = append(base, "--prompt-bytes", "1,2") // an axis of two steps that change nothing
		}
		o.code, _ = MeasureOn(ctx, ln, slices.Concat([]string{"sweep"}, base, args), &stdout, stderr)
	case cmdCheck:
		setUp(serverAddr)
		o.code = CheckOn(ctx, ln, slices.Concat([]string{"-t", target, "-L", serverAddr, "--only", "terminal"}, args), &stdout, stderr)
	case cmdProbe:
		ln.Close() // the probe binds -L itself: its address comes on stderr
		base[1] = "127.0.0.1:0"
		pctx, stop := context.WithCancel(ctx)
		defer stop()
		rounds := 1
		if slices.Contains(row.flags, "every") {
			rounds = 2
		}
		stderr.on = func(p []byte) {
			note(p)
			if m := listening.FindSubmatch(p); m != nil {
				setUp(string(m[1]))
			}
			if bytes.Contains(p, []byte(fmt.Sprintf("probe: round %d:", rounds))) {
				stop()
			}
		}
		o.code = Main(pctx, slices.Concat([]string{"probe"}, base, []string{"--every", "1h", "--metrics", "127.0.0.1:0"}, args), &stdout, stderr)
	}
	o.stdout, o.stderr = stdout.String(), stderr.String()
	amu.Lock()
	o.announced = slices.Clone(announced)
	amu.Unlock()
	{
		// The client has closed its connections: let the relay finish
		// copying what they carried.
		select {
		case <-rec.idleCh():
		case <-time.After(10 * time.Second):
		}
		o.reqs, o.conns = rec.requests()
		rec.mu.Lock()
		o.spans = slices.Clone(rec.spans)
		o.starts = slices.Clone(rec.starts)
		rec.mu.Unlock()
		slices.SortFunc(o.starts, func(a, b time.Time) int { return a.Compare(b) })
		o.answers = rec.answers()
		rec.mu.Lock()
		o.alpn = slices.Clone(rec.alpn)
		rec.mu.Unlock()
	}
	return o
}

// The checks rows share.
func wantExit(code int) func(t *testing.T, o *observed) {
	return func(t *testing.T, o *observed) {
		t.Helper()
		if o.code != code {
			t.Errorf("%s: exit %d, want %d\n%s", o.cmd, o.code, code, o)
		}
	}
}

func wantAll(checks ...func(t *testing.T, o *observed)) func(t *testing.T, o *observed) {
	return func(t *testing.T, o *observed) {
		t.Helper()
		for _, c := range checks {
			c(t, o)
		}
	}
}

func wantOutput(re string) func(t *testing.T, o *observed) {
	rx := regexp.MustCompile(re)
	return func(t *testing.T, o *observed) {
		t.Helper()
		if !rx.MatchString(o.stdout + o.stderr) {
			t.Errorf("%s: the output does not match %q\n%s", o.cmd, re, o)
		}
	}
}

func wantNoOutput(re string) func(t *testing.T, o *observed) {
	rx := regexp.MustCompile(re)
	return func(t *testing.T, o *observed) {
		t.Helper()
		if rx.MatchString(o.stdout + o.stderr) {
			t.Errorf("%s: the output matches %q\n%s", o.cmd, re, o)
		}
	}
}

// wantRequests: the gateway saw n requests per measurement (a sweep's
// step).
func wantRequests(n int) func(t *testing.T, o *observed) {
	return func(t *testing.T, o *observed) {
		t.Helper()
		if len(o.reqs) != n*o.steps {
			t.Errorf("%s: the gateway saw %d requests, want %d\n%s", o.cmd, len(o.reqs), n*o.steps, o)
		}
	}
}

// wantEach: every request the gateway saw passes ok.
func wantEach(what string, ok func(r seenRequest) bool) func(t *testing.T, o *observed) {
	return func(t *testing.T, o *observed) {
		t.Helper()
		if len(o.reqs) == 0 {
			t.Errorf("%s: the gateway saw no request\n%s", o.cmd, o)
		}
		for _, r := range o.reqs {
			if !ok(r) {
				t.Errorf("%s: a request without %s:\n%s\n%s", o.cmd, what, r.Raw, r.Body)
			}
		}
	}
}

func wantHeader(name, value string) func(t *testing.T, o *observed) {
	return wantEach(name+": "+value, func(r seenRequest) bool { return slices.Contains(r.Header.Values(name), value) })
}

// wantDoc checks the run document written to $DIR/run.json.
func wantDoc(check func(d *rundoc.Document) string) func(t *testing.T, o *observed) {
	return func(t *testing.T, o *observed) {
		t.Helper()
		if msg := check(o.doc(t)); msg != "" {
			t.Errorf("%s: the document %s", o.cmd, msg)
		}
	}
}

// deadlines are the first n deadlines of kind at rate with seed, from
// the batch's start.
func deadlines(t *testing.T, kind string, rate float64, n int, seed uint64) []time.Duration {
	a, err := schedule.NewArrivals(kind, 0, rate, seed)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(a.Next())
	}
	return out
}

// flagTable is every flag's row. Rows prove several flags at once where
// their effects do not mix, so that the table runs in seconds: a command
// run costs about a second under -race, a sweep (two steps) twice that.
func flagTable(t *testing.T) []flagRow {
	all := []string{cmdRun, cmdSweep, cmdProbe, cmdCheck}
	measuring := []string{cmdRun, cmdSweep, cmdProbe}
	refused := func(msg string) func(t *testing.T, o *observed) {
		return wantAll(wantExit(ExitFailure), wantOutput(regexp.QuoteMeta(msg)))
	}
	// A process for --gateway-pid to account, other than this one (which
	// owns the recording gateway's socket, and would be found without it).
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatalf("starting a process for --gateway-pid: %v", err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	otherPID := strconv.Itoa(other.Process.Pid)
	// A probe's round that ended (its line) with ok of n requests.
	probeRound := func(ok, n int) func(t *testing.T, o *observed) {
		return wantOutput(fmt.Sprintf(`probe: round 1: gateway %d/%d ok`, ok, n))
	}
	// What the requests carry, from the flags that shape them (the rows
	// that set them all).
	shaped := wantAll(
		wantEach("the --path", func(r seenRequest) bool { return strings.HasPrefix(r.Line, "POST /gw/v1/chat/completions HTTP/1.1") }),
		wantEach("Host: gw.example", func(r seenRequest) bool { return strings.Contains(r.Raw, "\r\nHost: gw.example\r\n") }),
		wantEach("both -H X-Team, in order", func(r seenRequest) bool { return slices.Equal(r.Header.Values("X-Team"), []string{"bench", "two"}) }),
		wantHeader("X-Api-Key", "hdr-secret"),
		wantHeader("Authorization", "Bearer sk-flag-key"),
		wantEach(`"model":"flag-model-7"`, func(r seenRequest) bool { return strings.Contains(r.Body, `"model":"flag-model-7"`) }),
		wantNoOutput(`hdr-secret|sk-flag-key`),
		wantOutput(`(?m)^client: goroutine engine`),
		wantOutput(`listening on 127\.0\.0\.1:\d+ |its dummy server on 127\.0\.0\.1:\d+`))
	shapeArgs := []string{"-H", "X-Team: bench", "-H", "X-Api-Key: hdr-secret", "-H", "X-Team: two", "--api-key", "sk-flag-key",
		"--host-header", "gw.example", "--model", "flag-model-7", "--path", "/gw/v1/chat/completions", "--engine", "goroutine", "-v"}
	return []flagRow{
		// The measurement's shape, all at once.
		{flags: []string{"listen", "target", "requests", "warmup", "tokens", "think", "delay", "header", "api-key", "host-header", "model", "path",
			"include-usage", "reasoning", "reasoning-field", "tool-call", "heartbeat", "compressed", "engine", "verbose", "quiet"},
			cmds: measuring,
			args: slices.Concat([]string{"-r", "2", "--warmup", "1", "-n", "4", "-T", "60", "-d", "30", "--include-usage", "--reasoning", "3",
				"--reasoning-field", "reasoning", "--tool-call", "2", "--heartbeat", "20", "--compressed", "-q"}, shapeArgs),
			want: wantAll(shaped, wantRequests(3), wantOutput(`sending 3 request\(s\) \(1 warm-up, then 2 measured\)`),
				wantEach("include_usage", func(r seenRequest) bool { return strings.Contains(r.Body, `"include_usage":true`) }),
				wantEach("the hints", func(r seenRequest) bool {
					h := r.header("X-Sse-Latency")
					return strings.Contains(h, "reasoning=3") && strings.Contains(h, "tool_call=2") && strings.Contains(h, "heartbeat=20")
				}),
				wantHeader("Accept-Encoding", "gzip"),
				wantNoOutput(`gw +0: ok `), // -q (a probe is always quiet)
				// The server's schedule is absolute and starts when the
				// request reached it: a stream never ends sooner than -T
				// and the -d gaps after the gateway forwarded its request.
				wantSpans(150*time.Millisecond),
				func(t *testing.T, o *observed) {
					if n := strings.Count(o.answers, `"delta":{"content":"`); n != 4*3*o.steps {
						t.Errorf("-n 4: %d tokens streamed through the gateway, want 4 per request\n%s", n, o)
					}
					if !strings.Contains(o.answers, `"reasoning":`) || strings.Contains(o.answers, `"reasoning_content":`) {
						t.Errorf("--reasoning-field reasoning: the stream does not carry delta.reasoning alone\n%s", o)
					}
				})},
		{flags: []string{"listen", "target", "header", "api-key", "host-header", "model", "path", "engine", "verbose"}, cmds: []string{cmdCheck},
			args: shapeArgs, want: shaped},
		{flags: []string{"api"}, cmds: []string{cmdCheck, cmdRun}, args: []string{"--api", "anthropic"}, want: wantEach("the Messages API", func(r seenRequest) bool {
			return strings.HasPrefix(r.Line, "POST /v1/messages ") && r.header("Anthropic-Version") != ""
		})},
		// The Responses API's WebSocket mode (--api chooses the path).
		{flags: []string{"websocket", "api"}, cmds: measuring, args: []string{"--api", "responses", "--websocket", "-H", "X-WS: 1"},
			want: wantEach("the upgrade with -H", func(r seenRequest) bool {
				return strings.HasPrefix(r.Line, "GET /v1/responses ") && r.header("Upgrade") == "websocket" && r.header("X-Ws") == "1"
			})},
		// The gateway forwards nothing until two requests are in flight.
		{flags: []string{"concurrency"}, cmds: []string{cmdRun, cmdProbe}, args: []string{"-r", "2", "-c", "2"}, gw: gwMode{waitFor: 2},
			want: wantAll(wantExit(ExitOK), wantRequests(2))},
		{flags: []string{"concurrency", "knee-threshold"}, cmds: []string{cmdSweep}, args: []string{"-c", "1,2", "--knee-threshold", "0.0001"},
			want: wantAll(wantExit(ExitOK), wantOutput(`step 2/2: --concurrency 2`), wantOutput(`knee: .*0\.000ms`), func(t *testing.T, o *observed) {
				if len(o.reqs) != 3 {
					t.Errorf("-c 1,2: %d requests, want 1, then 2 (-r raised to -c)\n%s", len(o.reqs), o)
				}
			})},
		{flags: []string{"timeout"}, cmds: []string{cmdRun, cmdSweep}, args: []string{"-w", "300"}, gw: gwMode{hold: true},
			want: wantOutput(`FAILED: timeout after 300ms`)},
		{flags: []string{"timeout"}, cmds: []string{cmdProbe}, args: []string{"-w", "300"}, gw: gwMode{hold: true}, want: probeRound(0, 1)},
		{flags: []string{"idle-timeout"}, cmds: []string{cmdRun, cmdSweep}, args: []string{"--idle-timeout", "200"}, gw: gwMode{hold: true},
			want: wantOutput(`FAILED: idle timeout after 200ms`)},
		{flags: []string{"idle-timeout"}, cmds: []string{cmdProbe}, args: []string{"--idle-timeout", "200"}, gw: gwMode{hold: true}, want: probeRound(0, 1)},
		{flags: []string{"no-loopback", "compat"}, cmds: []string{cmdRun}, args: []string{"-l", "--compat"}, want: wantAll(wantExit(ExitOK),
			wantOutput(`=== gateway: `), wantNoOutput(`=== verdict ===|loop: |=== loopback`))},
		{flags: []string{"no-loopback"}, cmds: []string{cmdProbe}, args: []string{"-l"}, want: wantAll(probeRound(1, 1), wantNoOutput(`loop: `))},
		{flags: []string{"no-loopback"}, cmds: []string{cmdSweep}, args: []string{"-l"}, want: refused("-l: a sweep measures each step against its own loopback")},
		{flags: []string{"compat"}, cmds: []string{cmdSweep}, args: []string{"--compat"}, want: refused("--compat: not with sweep")},
		{flags: []string{"compat"}, cmds: []string{cmdProbe}, args: []string{"--compat"}, want: refused("--compat: a probe prints a line per round")},
		{flags: []string{"keepalive"}, cmds: measuring, args: []string{"-k", "-r", "2"}, want: func(t *testing.T, o *observed) {
			if o.conns != o.steps || len(o.reqs) != 2*o.steps || strings.Contains(o.reqs[0].Raw, "Connection: close") {
				t.Errorf("-k -r 2: %d connections, %d requests; want both requests on one connection, without Connection: close\n%s", o.conns, len(o.reqs), o)
			}
		}},
		// Four slots, two per connection: the gateway sees two HTTP/2
		// connections a measurement, each carrying two requests; the
		// event loops multiplex them themselves, no note.
		{flags: []string{"streams-per-conn"}, cmds: measuring, args: []string{"--h2c", "-k", "-r", "4", "-c", "4", "--streams-per-conn", "2", "--engine", "epoll"},
			want: wantAll(wantNoOutput(`goroutine engine`),
				func(t *testing.T, o *observed) {
					if o.conns != 2*o.steps || len(o.reqs) != 2*o.steps || o.reqs[0].Line != "PRI * HTTP/2.0" {
						t.Errorf("--streams-per-conn 2 -c 4: %d connections (%d prefaces); want 2 HTTP/2 connections a measurement\n%s", o.conns, len(o.reqs), o)
					}
				})},
		{flags: []string{"streams-per-conn"}, cmds: []string{cmdRun}, args: []string{"--h2c", "-k", "-r", "2", "-c", "2", "--streams-per-conn", "2", "--json", "$DIR/run.json"},
			want: func(t *testing.T, o *observed) {
				if d := o.doc(t); d.Config.StreamsPerConn != 2 || o.conns != 1 {
					t.Errorf("--streams-per-conn 2 -c 2: the document records %d, %d connections; want 2, and one connection\n%s", d.Config.StreamsPerConn, o.conns, o)
				}
			}},
		{flags: []string{"streams-per-conn"}, cmds: measuring, args: []string{"--streams-per-conn", "0"},
			want: refused("--streams-per-conn 0: want at least 1 (1: a connection per concurrency slot)")},
		{flags: []string{"streams-per-conn"}, cmds: measuring, args: []string{"-k", "--streams-per-conn", "2"},
			want: refused("--streams-per-conn multiplexes HTTP/2 or HTTP/3 streams: add --http2 (https targets), --h2c (http targets) or --http3")},
		// Over HTTP/3: the slots of a group share one QUIC connection
		// (an HTTP/3 gateway of its own, h3StreamsPerConnRow).
		{flags: []string{"streams-per-conn"}, cmds: []string{cmdRun}, run: h3StreamsPerConnRow},
		{flags: []string{"streams-per-conn"}, cmds: []string{cmdRun}, args: []string{"--http3", "--streams-per-conn", "2"},
			want: refused("--streams-per-conn shares connections between requests: add -k")},
		{flags: []string{"streams-per-conn"}, cmds: measuring, args: []string{"--h2c", "--streams-per-conn", "2"},
			want: refused("--streams-per-conn shares connections between requests: add -k")},
		{flags: []string{"server-close"}, cmds: measuring, args: []string{"-k", "-r", "2", "--server-close"}, want: func(t *testing.T, o *observed) {
			if o.conns != 2*o.steps || !strings.Contains(o.answers, "Connection: close\r\n") {
				t.Errorf("--server-close: %d connections, want one per request (the server closed each)\n%s", o.conns, o)
			}
		}},
		// Two streams at once (the gateway holds the first until the
		// second comes; each lasts at least a second), one allowed: the
		// other is refused with 429.
		{flags: []string{"max-streams"}, cmds: []string{cmdRun, cmdSweep}, args: []string{"-r", "2", "-c", "2", "--max-streams", "1", "-n", "200", "-d", "5"},
			gw: gwMode{waitFor: 2}, want: wantOutput(`gw +\d: FAILED: .*429`)},
		{flags: []string{"max-streams"}, cmds: []string{cmdProbe}, args: []string{"-r", "2", "-c", "2", "--max-streams", "1", "-n", "200", "-d", "5"},
			gw: gwMode{waitFor: 2}, want: probeRound(1, 2)},
		{flags: []string{"fault"}, cmds: measuring, args: []string{"--fault", "cut_after=1"}, want: func(t *testing.T, o *observed) {
			if n := strings.Count(o.answers, `"delta":{"content":"`); n != o.steps {
				t.Errorf("--fault cut_after=1: %d tokens streamed, want the 1 before the cut\n%s", n, o)
			}
		}},
		// The gateway terminates TLS with the test's certificate: without
		// --insecure, or its CA in --cacert, nothing reaches it.
		{flags: []string{"insecure"}, cmds: []string{cmdCheck}, args: []string{"--insecure"}, gw: gwMode{tls: true},
			want: wantEach("the chat path over TLS", func(r seenRequest) bool { return strings.HasPrefix(r.Line, "POST /v1/chat") })},
		{flags: []string{"cacert", "http2"}, cmds: []string{cmdCheck}, args: []string{"--cacert", "$CERT", "--http2"}, gw: gwMode{tls: true}, want: func(t *testing.T, o *observed) {
			if len(o.alpn) == 0 || o.alpn[0] != "h2" || len(o.reqs) == 0 || o.reqs[0].Line != "PRI * HTTP/2.0" {
				t.Errorf("--cacert --http2: ALPN %q; want the certificate trusted and HTTP/2 negotiated and spoken\n%s", o.alpn, o)
			}
		}},
		{flags: []string{"h2c"}, cmds: all, args: []string{"--h2c"},
			want: wantEach("the HTTP/2 preface", func(r seenRequest) bool { return r.Line == "PRI * HTTP/2.0" })},
		// HTTP/3 to an HTTP/3 gateway (UDP: a setup of its own, h3FlagRows).
		{flags: []string{"http3"}, cmds: all, run: h3FlagRows},
		{flags: []string{"http3"}, cmds: []string{cmdRun}, args: []string{"--http3", "--h2c"}, want: refused("--http3 speaks HTTP/3 over QUIC: not with --http2 or --h2c")},
		{flags: []string{"http3"}, cmds: []string{cmdRun}, args: []string{"--http3"}, want: refused("--http3: -t must be an https:// URL (QUIC is always TLS)")},
		// The server's own TLS, the gateway passing the TLS bytes on: the
		// client trusts the server's certificate by --cacert, or not at
		// all with --insecure, and speaks HTTP/2 with --http2; the
		// calibration speaks TLS to the server too.
		{flags: []string{"tls-cert", "tls-key", "cacert", "http2"}, cmds: measuring, args: []string{"--tls-cert", "$CERT", "--tls-key", "$KEY", "--cacert", "$CERT", "--http2", "-v"},
			gw: gwMode{passTLS: true}, want: wantOutput(`gw +0: h2 conn 1 `)},
		{flags: []string{"tls-self-signed", "insecure"}, cmds: measuring, args: []string{"--tls-self-signed", "--insecure"}, gw: gwMode{passTLS: true},
			want: wantAll(wantOutput(`server TLS: self-signed certificate .* SHA-256 fingerprint`), wantOutput(`gw +0: ok |probe: round 1: gateway 1/1 ok`))},
		// The files, and the gateway named: the document records what was
		// sent (the secret redacted) and the gateway.
		{flags: []string{"json", "html", "csv", "gateway"}, cmds: []string{cmdRun},
			args: []string{"--json", "$DIR/run.json", "--html", "$DIR/run.html", "--csv", "$DIR/run.csv", "--gateway", "lighttpd", "-H", "X-Api-Key: hdr-secret"},
			want: wantAll(fileWants("run.html", "<!DOCTYPE html>", "gateway: lighttpd"), fileWants("run.csv", "batch,request,token"),
				wantOutput(`(?m)^gateway +lighttpd \(--gateway; local process \d+`), wantDoc(func(d *rundoc.Document) string {
					if d.Request == nil || d.Request.Path != "/v1/chat/completions" || !slices.Contains(d.Request.Headers, "X-Api-Key: REDACTED") ||
						strings.Contains(fmt.Sprint(d.Request.Headers, d.Config.Headers), "hdr-secret") {
						return fmt.Sprintf("records %+v (config %q), want what was sent, the secret redacted", d.Request, d.Config.Headers)
					}
					if d.Config.Gateway != "lighttpd" || !d.Identity.Known() || d.Identity.Name != "lighttpd" {
						return fmt.Sprintf("names the gateway %q %+v, want lighttpd", d.Config.Gateway, d.Identity)
					}
					return ""
				}))},
		{flags: []string{"json", "html", "gateway"}, cmds: []string{cmdSweep}, args: []string{"--json", "$DIR/run.json", "--html", "$DIR/run.html", "--gateway", "httpd"},
			want: wantAll(fileWants("run.html", "<!DOCTYPE html>"), wantDoc(func(d *rundoc.Document) string {
				if d.Request == nil || d.Config.Gateway != "apache" || d.Sweep == nil || len(d.Sweep.Steps) == 0 || d.Sweep.Steps[0].Run.Identity.Name != "apache" {
					return fmt.Sprintf("names the gateway %q, want apache (httpd), and records the request %+v", d.Config.Gateway, d.Request)
				}
				return ""
			}))},
		{flags: []string{"json", "html", "gateway"}, cmds: []string{cmdCheck}, args: []string{"--json", "$DIR/run.json", "--html", "$DIR/run.html", "--gateway", "lighttpd"},
			want: wantAll(fileWants("run.json", `"rows":`, `"name": "lighttpd"`), fileWants("run.html", "gateway: lighttpd"),
				wantOutput(`(?m)^gateway: lighttpd \(--gateway; local process \d+`))},
		{flags: []string{"gateway"}, cmds: []string{cmdProbe}, args: []string{"--gateway", "bogus"},
			want: refused(`--gateway: unknown gateway "bogus" (known: haproxy, nginx,`)},
		{flags: []string{"json", "html", "csv"}, cmds: []string{cmdProbe}, args: []string{"--html", "$DIR/run.html"},
			want: refused("--json, --html and --csv: a probe serves metrics")},
		{flags: []string{"csv"}, cmds: []string{cmdSweep}, args: []string{"--csv", "$DIR/run.csv"}, want: refused("--csv: not with sweep")},
		// No request starts before its deadline: with --rate and
		// --arrival poisson the k-th reaches the gateway no sooner than the
		// Poisson schedule's k-th deadline after its batch was announced,
		// later than a constant schedule's. A sweep walks --rate.
		{flags: []string{"rate", "arrival"}, cmds: []string{cmdRun, cmdProbe}, args: []string{"--rate", "40", "--arrival", "poisson", "-r", "3"}, want: wantArrivals(40)},
		{flags: []string{"rate", "arrival"}, cmds: []string{cmdSweep}, args: []string{"--rate", "40,80", "--arrival", "poisson", "-r", "3"},
			want: wantAll(wantOutput(`step 2/2: --rate 80`), wantArrivals(40, 80))},
		// A --duration stops starting requests: at 20/s for 300 ms, the
		// deadlines before its end (fewer when the scheduler wakes late).
		{flags: []string{"duration"}, cmds: []string{cmdRun, cmdSweep}, args: []string{"--rate", "20", "--duration", "300ms", "-r", "0", "-c", "0"},
			want: wantAll(wantExit(ExitOK), func(t *testing.T, o *observed) {
				if n := len(o.reqs); n < 2*o.steps || n > 6*o.steps {
					t.Errorf("--rate 20 --duration 300ms: %d requests, want 2 to 6 per step\n%s", n, o)
				}
			})},
		{flags: []string{"duration"}, cmds: []string{cmdProbe}, args: []string{"--duration", "1s"}, want: refused("--duration: a probe's round is -r requests")},
		{flags: []string{"rounds"}, cmds: []string{cmdRun, cmdSweep}, args: []string{"--rounds", "2"}, want: wantAll(wantRequests(2), wantOutput(`round 4/4: `))},
		{flags: []string{"rounds"}, cmds: []string{cmdProbe}, args: []string{"--rounds", "2"}, want: refused("--rounds: a probe's round is one calibration")},
		{flags: []string{"prompt-bytes"}, cmds: []string{cmdRun, cmdProbe}, args: []string{"--prompt-bytes", "4k"}, want: wantEach("a 4 KiB body", func(r seenRequest) bool {
			return len(r.Body) >= 4096
		})},
		{flags: []string{"prompt-bytes"}, cmds: []string{cmdSweep}, args: []string{"--prompt-bytes", "1k,4k"}, want: func(t *testing.T, o *observed) {
			if len(o.reqs) != 2 || len(o.reqs[0].Body) < 1024 || len(o.reqs[0].Body) >= 4096 || len(o.reqs[1].Body) < 4096 {
				t.Errorf("--prompt-bytes 1k,4k: want a 1 KiB then a 4 KiB body\n%s", o)
			}
		}},
		{flags: []string{"slo"}, cmds: []string{cmdRun}, args: []string{"--slo", "gateway TTFT p50 < 0.001ms"}, want: wantAll(wantExit(ExitGate),
			wantOutput(`NOT MET +gateway TTFT \(client\) p50 < 0\.001ms`))},
		{flags: []string{"slo"}, cmds: []string{cmdSweep}, args: []string{"--slo", "gateway TTFT p50 < 1ms"}, want: refused("--slo: not with sweep")},
		{flags: []string{"slo"}, cmds: []string{cmdProbe}, args: []string{"--slo", "gateway TTFT p50 < 1ms"}, want: refused("--slo: a probe exports its figures")},
		{flags: []string{"every", "metrics"}, cmds: []string{cmdProbe}, args: []string{"--every", "10ms"}, want: wantAll(wantExit(ExitOK), wantRequests(2),
			wantOutput(`probe: stopped after 2 rounds`), wantOutput(`probe: metrics on http://127\.0\.0\.1:\d+/metrics`))},
		{flags: []string{"only", "skip"}, cmds: []string{cmdCheck}, args: []string{"--only", "terminal,usage", "--skip", "terminal"},
			want: wantAll(wantOutput(`(?m)^PASS  usage `), wantNoOutput(`(?m)^PASS  terminal `), wantOutput(`1 checks: 1 PASS`))},
		{flags: []string{"long"}, cmds: []string{cmdCheck}, run: runLongFlag},
		{flags: []string{"streams-per-conn"}, cmds: []string{cmdCheck}, run: TestCheckStreamsPerConn},
		{flags: []string{"control", "control-token"}, cmds: measuring, run: runControlFlags},
		{flags: []string{"server", "control-token"}, cmds: []string{cmdRun, cmdProbe}, run: runServerFlags},
		// The server's instance id, in every stream's head and beside
		// every pi_ts, for the clients that read its control endpoint.
		{flags: []string{"instance-id", "control"}, cmds: measuring, args: []string{"--control", "127.0.0.1:0", "--instance-id", "srv-flag"},
			want: func(t *testing.T, o *observed) {
				heads, fields, stamps := strings.Count(o.answers, api.InstanceHeader+": srv-flag\r\n"), strings.Count(o.answers, `"pi_instance":"srv-flag"`), strings.Count(o.answers, `"pi_ts":`)
				if heads != len(o.reqs) || stamps == 0 || fields != stamps {
					t.Errorf("--instance-id srv-flag: %d of %d heads name it, %d of %d events with pi_ts; want all\n%s", heads, len(o.reqs), fields, stamps, o)
				}
			}},
		{flags: []string{"server"}, cmds: []string{cmdSweep}, args: []string{"--server", "http://127.0.0.1:1", "--control-token", "x"},
			want: wantAll(wantExit(ExitFailure), wantOutput(`sse-latency: sweep: .*--server`))},
		// Production-shaped traffic: a distribution's draws follow --seed;
		// a trace gives each request's arrival and size.
		{flags: []string{"seed"}, cmds: []string{cmdRun, cmdProbe}, args: []string{"-n", "uniform:2-40", "--seed", "7", "-r", "4"}, want: wantSeedDraws("uniform:2-40", 7, 4)},
		// A sweep's steps are of one size: its seed draws the Poisson gaps.
		{flags: []string{"seed"}, cmds: []string{cmdSweep}, args: []string{"--rate", "40,80", "--arrival", "poisson", "-r", "3", "--seed", "22"},
			want: wantArrivalsSeed(22, 40, 80)},
		{flags: []string{"trace"}, cmds: []string{cmdRun}, bare: true, files: map[string]string{"t.jsonl": flagTrace}, args: []string{"--trace", "$DIR/t.jsonl"},
			want: wantAll(wantExit(ExitOK), wantTokenHints(4, 5, 6))},
		{flags: []string{"trace-speed"}, cmds: []string{cmdRun}, bare: true, files: map[string]string{"t.jsonl": flagTrace},
			args: []string{"--trace", "$DIR/t.jsonl", "--trace-speed", "0.25"}, want: func(t *testing.T, o *observed) {
				// The trace's offsets, 0, 30 and 60 ms, four times as long.
				if len(o.announced) != 1 || len(o.starts) != 3 {
					t.Fatalf("%d replays announced, %d requests; want 1 and 3\n%s", len(o.announced), len(o.starts), o)
				}
				for k, d := range []time.Duration{0, 120 * time.Millisecond, 240 * time.Millisecond} {
					if got := o.starts[k].Sub(o.announced[0]); got < d {
						t.Errorf("--trace-speed 0.25: request %d reached the gateway %v after the replay began, before its deadline %v\n%s", k, got, d, o)
					}
				}
			}},
		{flags: []string{"trace-limit"}, cmds: []string{cmdRun}, bare: true, files: map[string]string{"t.jsonl": flagTrace},
			args: []string{"--trace", "$DIR/t.jsonl", "--trace-limit", "2"}, want: wantAll(wantRequests(2), wantTokenHints(4, 5))},
		{flags: []string{"trace-skip-bad"}, cmds: []string{cmdRun}, bare: true, files: map[string]string{"t.jsonl": flagTrace + "{\"timestamp\": 90, \"input_length\": -4}\n"},
			args: []string{"--trace", "$DIR/t.jsonl", "--trace-skip-bad"}, want: wantAll(wantExit(ExitOK), wantRequests(3))},
		{flags: []string{"trace", "trace-speed", "trace-limit", "trace-skip-bad"}, cmds: []string{cmdSweep}, files: map[string]string{"t.jsonl": flagTrace},
			args: []string{"--trace", "$DIR/t.jsonl", "--trace-speed", "2", "--trace-limit", "1", "--trace-skip-bad"},
			want: refused("--trace: a sweep's steps are closed or open loops of their own")},
		{flags: []string{"trace", "trace-speed", "trace-limit", "trace-skip-bad"}, cmds: []string{cmdProbe}, files: map[string]string{"t.jsonl": flagTrace},
			args: []string{"--trace", "$DIR/t.jsonl", "--trace-speed", "2", "--trace-limit", "1", "--trace-skip-bad"},
			want: wantAll(wantExit(ExitFailure), wantOutput(`sse-latency probe: --trace`))},
		// The server's simulated prefix cache counts in blocks of
		// --cache-block tokens: an 8 KiB prompt already sent has 1984
		// tokens cached in blocks of 64, 1536 in the default 512.
		{flags: []string{"cache-block"}, cmds: []string{cmdRun, cmdProbe}, args: []string{"--prompt-bytes", "8k", "--include-usage", "--cache-block", "64"}, want: wantCached(64)},
		{flags: []string{"cache-block"}, cmds: []string{cmdSweep}, args: []string{"-c", "1,2", "--prompt-bytes", "8k", "--include-usage", "--cache-block", "64"}, want: wantCached(64)},
		// What the gateway costs: the process named, the tool pinned, the
		// field reports' corpus streamed.
		{flags: []string{"gateway-pid"}, cmds: measuring, args: []string{"--gateway-pid", otherPID},
			want: wantOutput(`gateway cost: sleep \(pid ` + otherPID + `.*named by --gateway-pid`)},
		{flags: []string{"cpus"}, cmds: measuring, args: []string{"--cpus", "0"},
			want: wantOutput(`--cpus: the tool's threads run on CPUs 0 \(GOMAXPROCS 1\)`)},
		{flags: []string{"corpus"}, cmds: measuring, bare: true, args: []string{"--corpus", "responses", "-r", "1", "-c", "1", "-d", "0"},
			want: wantEach("a Responses API request", func(r seenRequest) bool { return strings.HasPrefix(r.Line, "POST /v1/responses ") })},
		{flags: []string{"help"}, cmds: all, run: runHelpFlag},
		{flags: []string{"version"}, cmds: []string{cmdRun, cmdSweep, cmdProbe}, run: runVersionFlag},
	}
}

// wantArrivals: the requests of each batch (one per rate, in order)
// reached the gateway no sooner than the deadlines of the Poisson
// schedule at that rate after the batch was announced — deadlines a
// constant schedule would not have waited for.
func wantArrivals(rates ...float64) func(t *testing.T, o *observed) {
	return wantArrivalsSeed(1, rates...)
}

// wantArrivalsSeed is wantArrivals for the Poisson schedule of seed.
func wantArrivalsSeed(seed uint64, rates ...float64) func(t *testing.T, o *observed) {
	return func(t *testing.T, o *observed) {
		t.Helper()
		const n = 3
		if len(o.announced) < len(rates) || len(o.starts) != n*len(rates) {
			t.Fatalf("%s: %d batches announced, %d requests; want %d and %d\n%s", o.cmd, len(o.announced), len(o.starts), len(rates), n*len(rates), o)
		}
		for b, rate := range rates {
			p, c := deadlines(t, schedule.ArrivalPoisson, rate, n, seed), deadlines(t, schedule.ArrivalConstant, rate, n, seed)
			if seed != 1 {
				c = deadlines(t, schedule.ArrivalPoisson, rate, n, 1) // what the default seed would have waited for
			}
			if p[1] < 2*c[1] && p[2] < 2*c[2] {
				t.Fatalf("the test's Poisson schedule %v is too close to %v: choose another rate or seed", p, c)
			}
			batch := o.announced[len(o.announced)-len(rates)+b] // a sweep's gateway rounds come after its loopback ones
			for k, d := range p {
				if got := o.starts[n*b+k].Sub(batch); got < d {
					t.Errorf("%s --arrival poisson --rate %v: request %d reached the gateway %v after its batch began, before its deadline %v (a constant schedule's: %v)\n%s",
						o.cmd, rate, k, got, d, c[k], o)
				}
			}
		}
	}
}

// flagTrace is a Mooncake trace of three requests, 30 ms apart, of 4, 5
// and 6 output tokens.
const flagTrace = `{"timestamp": 0, "input_length": 10, "output_length": 4, "hash_ids": [0]}
{"timestamp": 30, "input_length": 10, "output_length": 5, "hash_ids": [0]}
{"timestamp": 60, "input_length": 10, "output_length": 6, "hash_ids": [1]}
`

// tokenHints are the tokens hints of the requests, in the order they
// reached the gateway.
func tokenHints(o *observed) []int {
	var out []int
	for _, r := range o.reqs {
		if m := regexp.MustCompile(`tokens=(\d+)`).FindStringSubmatch(r.header("X-Sse-Latency")); m != nil {
			n, _ := strconv.Atoi(m[1])
			out = append(out, n)
		}
	}
	return out
}

// wantTokenHints: the requests asked for these many tokens, in any order.
func wantTokenHints(want ...int) func(t *testing.T, o *observed) {
	return func(t *testing.T, o *observed) {
		t.Helper()
		got := tokenHints(o)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: the requests asked for %v tokens, want %v\n%s", o.cmd, got, want, o)
		}
	}
}

// wantSeedDraws: the first n requests (-c 1: in order) asked for the
// tokens the distribution spec draws with seed — which seed 1 would not.
func wantSeedDraws(spec string, seed uint64, n int) func(t *testing.T, o *observed) {
	return func(t *testing.T, o *observed) {
		t.Helper()
		d, err := tokensDist(spec)
		if err != nil {
			t.Fatal(err)
		}
		draws := func(seed uint64) []int {
			var out []int
			for i := range n {
				out = append(out, d.Draw(seed, lengths.StreamTokens, i))
			}
			return out
		}
		want, other := draws(seed), draws(1)
		if slices.Equal(want, other) {
			t.Fatalf("seeds %d and 1 draw alike (%v): choose another", seed, want)
		}
		if got := tokenHints(o); len(got) < n || !slices.Equal(got[:n], want) {
			t.Errorf("%s --seed %d: the requests asked for %v tokens, want %v (seed 1: %v)\n%s", o.cmd, seed, got, want, other, o)
		}
	}
}

// wantCached: the usage the server sent counts the cached prompt tokens
// in blocks of block tokens, not of the default 512.
func wantCached(block int) func(t *testing.T, o *observed) {
	return func(t *testing.T, o *observed) {
		t.Helper()
		ms := regexp.MustCompile(`"cached_tokens":(\d+)`).FindAllStringSubmatch(o.answers, -1)
		for _, m := range ms {
			n, _ := strconv.Atoi(m[1])
			if n > 0 && n%block == 0 && n%DefaultCacheBlock != 0 {
				return
			}
		}
		t.Errorf("%s --cache-block %d: no cached figure counted in blocks of %d (%v)\n%s", o.cmd, block, block, ms, o)
	}
}

// wantSpans: each request through the gateway took at least least, from
// its first byte to the last byte answered.
func wantSpans(least time.Duration) func(t *testing.T, o *observed) {
	return func(t *testing.T, o *observed) {
		t.Helper()
		if len(o.spans) == 0 || slices.Min(o.spans) < least {
			t.Errorf("%s: requests through the gateway took %v, want each at least %v\n%s", o.cmd, o.spans, least, o)
		}
	}
}

// fileWants: the row's file name holds each of wants.
func fileWants(name string, wants ...string) func(t *testing.T, o *observed) {
	return func(t *testing.T, o *observed) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(o.dir, name))
		for _, w := range wants {
			if err != nil || !bytes.Contains(b, []byte(w)) {
				t.Errorf("%s: %s (%v) lacks %q\n%s", o.cmd, name, err, w, o)
			}
		}
	}
}

// runLongFlag: check --long runs the long scenarios: the gateway sees
// the 65 s silence asked for, and the check is stopped there.
func runLongFlag(t *testing.T) {
	ln := testutil.Listen(t)
	rec := startRecorder(t, func() string { return ln.Addr().String() }, nil, false, 0)
	ctx, cancel := context.WithTimeout(t.Context(), flagLimit)
	defer cancel()
	done := make(chan int, 1)
	var stdout, stderr bytes.Buffer
	go func() {
		done <- CheckOn(ctx, ln, []string{"-t", rec.Addr, "-L", ln.Addr().String(), "--long", "--skip", strings.Join(shortChecks(), ",")}, &stdout, &stderr)
	}()
	testutil.Await(t, "the long silence's request", func() bool {
		reqs, _ := rec.requests()
		return slices.ContainsFunc(reqs, func(r seenRequest) bool { return strings.Contains(r.header("X-Sse-Latency"), "stall_ms=65000") })
	})
	cancel()
	if code := <-done; code != ExitInterrupted {
		t.Errorf("check --long, stopped: exit %d, want %d\n%s%s", code, ExitInterrupted, stdout.String(), stderr.String())
	}
}

// shortChecks are the checks that run without --long.
func shortChecks() []string {
	var out []string
	for _, n := range check.Names() {
		if !strings.HasPrefix(n, "long-") {
			out = append(out, n)
		}
	}
	return out
}

// runControlFlags: --control serves the server's timing records with
// --control-token, which a client must present: a server-only run, a
// sweep's and a probe's server alike.
func runControlFlags(t *testing.T) {
	for _, cmd := range []string{cmdRun, cmdSweep, cmdProbe} {
		t.Run(cmd, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), flagLimit)
			defer cancel()
			upstream := make(chan string, 1)
			rec := startRecorder(t, func() string {
				select {
				case a := <-upstream:
					upstream <- a
					return a
				case <-ctx.Done():
					return ""
				}
			}, nil, false, 0)
			got := make(chan string, 1)
			controlRE := regexp.MustCompile(`control endpoints \(timing records\) on (127\.0\.0\.1:\d+)`)
			stderr := &watched{on: func(p []byte) {
				if m := controlRE.FindSubmatch(p); m != nil {
					got <- "http://" + string(m[1])
				}
				if m := listening.FindSubmatch(p); m != nil {
					upstream <- string(m[1])
				}
			}}
			args := []string{"-L", "127.0.0.1:0", "--control", "127.0.0.1:0", "--control-token", "tok-flag"}
			measure := []string{"-t", rec.Addr, "-r", "1", "-n", "3", "-d", "1"}
			switch cmd {
			case cmdSweep:
				args = slices.Concat([]string{"sweep"}, args, measure, []string{"--prompt-bytes", "1,2"})
			case cmdProbe:
				args = slices.Concat([]string{"probe"}, args, measure, []string{"--every", "1h", "--metrics", "127.0.0.1:0"})
			}
			done := make(chan int, 1)
			go func() { done <- Main(ctx, args, &bytes.Buffer{}, stderr) }()
			var url string
			select {
			case url = <-got:
			case <-ctx.Done():
				t.Fatalf("no control line:\n%s", stderr.String())
			}
			for token, ok := range map[string]bool{"tok-flag": true, "another": false} {
				c, err := control.NewClient(url, token)
				if err != nil {
					t.Fatal(err)
				}
				_, _, err = c.Exchange(ctx)
				c.Close()
				if (err == nil) != ok {
					t.Errorf("%s: a clock exchange with token %q: %v; want it to succeed %v", cmd, token, err, ok)
				}
			}
			cancel()
			<-done
		})
	}
}

// runServerFlags: --server and --control-token take the server's records
// from another host's control endpoint (the run's clock block; the
// probe's round); the wrong token fails at once.
func runServerFlags(t *testing.T) {
	rs := startRemoteServer(t)
	rec := startRecorder(t, func() string { return rs.addr }, nil, false, 0)
	for _, cmd := range []string{cmdRun, cmdProbe} {
		for token, ok := range map[string]bool{crossToken: true, "wrong": false} {
			ctx, cancel := context.WithTimeout(t.Context(), flagLimit)
			args := []string{"-t", rec.Addr, "--server", rs.control, "--control-token", token, "-r", "1", "-n", "3", "-d", "1"}
			stderr := &watched{on: func([]byte) {}}
			if cmd == cmdProbe {
				args = append([]string{"probe", "--every", "1h", "--metrics", "127.0.0.1:0"}, args...)
				stderr.on = func(p []byte) {
					if bytes.Contains(p, []byte("probe: round 1:")) {
						cancel()
					}
				}
			}
			var stdout bytes.Buffer
			code := Main(ctx, args, &stdout, stderr)
			cancel()
			out := stdout.String() + stderr.String()
			switch {
			case !ok && code != ExitFailure:
				t.Errorf("%s --server with the wrong --control-token: exit %d, want %d\n%s", cmd, code, ExitFailure, out)
			case ok && cmd == cmdRun && (code != ExitOK || !strings.Contains(out, "=== clock")):
				t.Errorf("run --server: exit %d, want 0 and the clock block\n%s", code, out)
			case ok && cmd == cmdProbe && !strings.Contains(out, "probe: round 1: gateway 1/1 ok"):
				t.Errorf("probe --server: no round measured\n%s", out)
			}
		}
	}
}

// runHelpFlag: -h prints each command's own usage.
func runHelpFlag(t *testing.T) {
	for cmd, want := range map[string]string{cmdRun: usage(), cmdSweep: sweepUsage(), cmdProbe: probeUsage(), cmdCheck: checkHelp()} {
		var stdout, stderr bytes.Buffer
		args := []string{"-h"}
		if cmd != cmdRun {
			args = []string{cmd, "-h"}
		}
		if code := Main(context.Background(), args, &stdout, &stderr); code != ExitOK || stderr.String() != want {
			t.Errorf("%s -h: exit %d, stderr %.80q…; want 0 and its usage", cmd, code, stderr.String())
		}
	}
}

// runVersionFlag: --version prints the version.
func runVersionFlag(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"sweep", "--version"}, {"probe", "--version"}} {
		var stdout bytes.Buffer
		if code := Main(context.Background(), args, &stdout, io.Discard); code != ExitOK || !strings.HasPrefix(stdout.String(), "sse-latency ") {
			t.Errorf("%q: exit %d, %q", args, code, stdout.String())
		}
	}
}

// TestFlagEffects runs every row of the table under each of its
// commands.
func TestFlagEffects(t *testing.T) {
	cert := newTestCert(t)
	var wg sync.WaitGroup
	slots := make(chan struct{}, flagParallel)
	for i, row := range flagTable(t) {
		for _, cmd := range row.cmds {
			name := fmt.Sprintf("%s/%d-%s", cmd, i, strings.Join(row.flags, "+"))
			wg.Go(func() {
				slots <- struct{}{}
				defer func() { <-slots }()
				t.Run(name, func(t *testing.T) {
					if row.run != nil {
						row.run(t)
						return
					}
					row.want(t, runRow(t, row, cmd, cert))
				})
			})
			if row.run != nil {
				break // runs all its commands itself
			}
		}
	}
	wg.Wait()
}

// flagParallel is how many rows run at once: most of a row's time is
// spent waiting (a schedule, a timeout), more than -parallel's CPUs
// would fill.
const flagParallel = 4

// TestHeaderEveryEngine: -H, --api-key and --host-header reach the wire
// whatever the engine and the protocol.
func TestHeaderEveryEngine(t *testing.T) {
	cert := newTestCert(t)
	want := wantAll(wantExit(ExitOK), wantHeader("X-Team", "bench"), wantHeader("Authorization", "Bearer sk-e"),
		wantEach("Host: gw.example", func(r seenRequest) bool {
			return r.Line == "PRI * HTTP/2.0" || strings.Contains(r.Raw, "\r\nHost: gw.example\r\n")
		}))
	for _, engine := range []string{"epoll", "uring"} { // goroutine: the flag table's first row
		for _, proto := range [][]string{nil, {"--api", "responses", "--websocket"}} {
			args := slices.Concat([]string{"--engine", engine, "-H", "X-Team: bench", "--api-key", "sk-e", "--host-header", "gw.example", "-v"}, proto)
			t.Run(engine+"/"+strings.Join(proto, " "), func(t *testing.T) {
				t.Parallel()
				o := runRow(t, flagRow{args: args}, cmdRun, cert)
				want(t, o)
			})
		}
	}
	// HTTP/2: the headers are fields (the recorder sees the preface).
	t.Run("h2c", func(t *testing.T) {
		t.Parallel()
		o := runRow(t, flagRow{args: []string{"--h2c", "-H", "X-Team: bench", "--json", "$DIR/run.json"}}, cmdRun, cert)
		wantExit(ExitOK)(t, o)
		if d := o.doc(t); d.Request == nil || d.Request.Proto != "h2c" || !slices.Contains(d.Request.Headers, "x-team: bench") {
			t.Errorf("--h2c -H: the document records %+v", d.Request)
		}
	})
}

// TestFlagTableCoversEveryFlag: each flag of the run's, the sweep's, the
// probe's and the check's flag set has a row for that command.
func TestFlagTableCoversEveryFlag(t *testing.T) {
	covered := map[string]map[string]bool{}
	for _, row := range flagTable(t) {
		for _, cmd := range row.cmds {
			if covered[cmd] == nil {
				covered[cmd] = map[string]bool{}
			}
			for _, f := range row.flags {
				covered[cmd][f] = true
			}
		}
	}
	for cmd, fs := range commandFlagSets() {
		fs.VisitAll(func(f *pflag.Flag) {
			if !covered[cmd][f.Name] {
				t.Errorf("%s --%s: no row of the flag table proves its effect", cmd, f.Name)
			}
		})
	}
}

// commandFlagSets are the flag sets of the commands that measure, from
// the command table, as they parse.
func commandFlagSets() map[string]*pflag.FlagSet {
	sets := FlagSets()
	return map[string]*pflag.FlagSet{
		cmdRun:   sets[""],
		cmdSweep: sets["sweep"],
		cmdProbe: sets["probe"],
		cmdCheck: sets["check"],
	}
}
