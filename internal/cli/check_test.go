package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/check"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// TestCheckUsage: check -h prints its usage, which names every flag it
// takes and every check.
func TestCheckUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Main(context.Background(), []string{"check", "-h"}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("check -h: exit %d", code)
	}
	help := stderr.String()
	if !strings.HasPrefix(help, "usage: sse-latency check -t TARGET") {
		t.Errorf("check -h printed %q", help)
	}
	for _, name := range check.Names() {
		if !strings.Contains(help, name) {
			t.Errorf("the usage does not name the check %q", name)
		}
	}
	var flags []string
	code := checkArgs(context.Background(), nil, []string{"--no-such-flag"}, &stdout, &stderr)
	if code != ExitFailure || !strings.Contains(stderr.String(), "unknown flag: --no-such-flag") {
		t.Errorf("an unknown flag: exit %d, %q", code, stderr.String())
	}
	for _, l := range strings.Split(help, "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], "-") {
			flags = append(flags, f...)
		}
	}
	for _, want := range []string{"-t,", "--target", "-L,", "--listen", "--api", "--only", "--skip", "--long", "--json", "--html",
		"--model", "--path", "-H,", "--header", "--api-key", "--host-header", "--gateway", "--insecure", "--cacert", "--http2", "--h2c",
		"--engine", "-v,", "--verbose", "-h,", "--help"} {
		found := false
		for _, f := range flags {
			found = found || f == want
		}
		if !found {
			t.Errorf("the usage lacks %s", want)
		}
	}
}

// TestCheckBadInput: each mistake on the command line is refused with its
// reason, before anything runs.
func TestCheckBadInput(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "check needs the gateway: -t"},
		{[]string{"-t", "127.0.0.1:1", "--api", "soap"}, "--api"},
		{[]string{"-t", "ftp://x"}, `URL scheme "ftp"`},
		{[]string{"-t", "127.0.0.1:1", "extra"}, `unexpected argument "extra"`},
		{[]string{"-t", "127.0.0.1:1", "--json", "a", "--html", "a"}, "name the same file"},
		{[]string{"-t", "127.0.0.1:1", "-L", "127.0.0.1:0", "--only", "flush,flsh"}, `unknown check "flsh"`},
		{[]string{"-t", "127.0.0.1:1", "-L", "127.0.0.1:0", "--json", "/no/such/dir/x.json"}, "--json: open /no/such/dir/x.json: no such file or directory"},
		{[]string{"-t", "127.0.0.1:1", "--h2c", "--streams-per-conn", "1"}, "--streams-per-conn 1: the multiplex check needs at least 2"},
		{[]string{"-t", "127.0.0.1:1", "--streams-per-conn", "4"}, "an http:// target runs over HTTP/2 with prior knowledge: add --h2c"},
		{[]string{"-t", "https://127.0.0.1:1", "--http3", "--streams-per-conn", "1"}, "--streams-per-conn 1: the multiplex check needs at least 2"},
		{[]string{"-t", "127.0.0.1:1", "--h2c", "--streams-per-conn", "4", "--skip", "multiplex"}, "which --only or --skip leave out"},
		{[]string{"-t", "127.0.0.1:1", "--h2c", "--streams-per-conn", "4", "--only", "flush"}, "which --only or --skip leave out"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(context.Background(), append([]string{"check"}, tt.args...), &stdout, &stderr); code != ExitFailure ||
			!strings.Contains(stderr.String(), tt.want) {
			t.Errorf("check %q: exit %d, stderr %q; want 1 and %q", tt.args, code, stderr.String(), tt.want)
		}
	}
}

// TestCheckThroughReverseProxy runs a few checks through httputil's
// ReverseProxy, the server on a listener the test bound: the rows on
// stdout as they finish, the summary, the JSON and HTML files, exit 0; and
// a target that is no gateway: one line, exit 1.
func TestCheckThroughReverseProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("http://" + ln.Addr().String())
	p := httputil.NewSingleHostReverseProxy(u)
	p.FlushInterval = -1
	gw := httptest.NewServer(p)
	defer gw.Close()
	dir := t.TempDir()
	jsonPath, htmlPath := filepath.Join(dir, "check.json"), filepath.Join(dir, "check.html")
	var stdout, stderr bytes.Buffer
	code := CheckOn(context.Background(), ln, []string{"-t", gw.URL, "-L", ln.Addr().String(), "--only", "terminal,error-status,upstream-cut",
		"--json", jsonPath, "--html", htmlPath}, &stdout, &stderr)
	out := stdout.String()
	if code != ExitOK || stderr.Len() > 0 {
		t.Fatalf("check through ReverseProxy: exit %d\n%s\nstderr: %s", code, out, stderr.String())
	}
	for _, want := range []string{"sse-latency check of " + gw.URL + " (api chat); its dummy server on " + ln.Addr().String() + "\n",
		"PASS  terminal          the terminal event passes: ", "PASS  upstream-cut  ", "PASS  error-status  ", "\n3 checks: 3 PASS, 0 WARN, 0 FAIL ("} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	var rep check.Report
	b, err := os.ReadFile(jsonPath)
	if err != nil || json.Unmarshal(b, &rep) != nil || rep.SchemaVersion != check.SchemaVersion || len(rep.Rows) != 3 || rep.Rows[0].Name != "terminal" {
		t.Errorf("--json: %v, %s", err, b)
	}
	if h, err := os.ReadFile(htmlPath); err != nil || !strings.Contains(string(h), `<section id="check">`) ||
		!strings.Contains(string(h), `<tr class="PASS"><td class="status">PASS</td><td class="name">upstream-cut</td>`) {
		t.Errorf("--html: %v, %s", err, h)
	}

	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	refused := testutil.RefusedAddr(t)
	stdout.Reset()
	stderr.Reset()
	code = CheckOn(context.Background(), ln2, []string{"-t", refused, "--json", jsonPath}, &stdout, &stderr)
	if code != ExitFailure || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "sse-latency check: not a gateway") {
		t.Errorf("no gateway: exit %d, stderr %q; want 1 and one line", code, stderr.String())
	}
	if b2, err := os.ReadFile(jsonPath); err != nil || !bytes.Equal(b2, b) {
		t.Errorf("a check that did not run replaced the --json file of the one before (%v)", err)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, ".check.json.*")); len(tmps) > 0 {
		t.Errorf("temporary files left: %q", tmps)
	}
}

// TestCheckNotAGateway: a target that refuses connections, does not speak
// HTTP, or redirects ends the command at once (before the preflight
// request's timeout), exit 1, with only the header on stdout and one line
// on stderr saying why.
// checkOneRow runs `check args --only multiplex --json FILE` serving -L on
// ln, and returns its exit code, the document's one row and stdout; it
// fails the test when the document does not have exactly one row.
func checkOneRow(t *testing.T, ln net.Listener, args []string) (int, check.Row, *bytes.Buffer) {
	t.Helper()
	jsonPath := filepath.Join(t.TempDir(), "check.json")
	args = append(args, "--only", "multiplex", "--json", jsonPath)
	var stdout, stderr bytes.Buffer
	code := CheckOn(context.Background(), ln, args, &stdout, &stderr)
	var rep check.Report
	b, err := os.ReadFile(jsonPath)
	if err != nil || json.Unmarshal(b, &rep) != nil || len(rep.Rows) != 1 {
		t.Fatalf("check %q: exit %d, %v\n%s%s", args, code, err, stdout.String(), stderr.String())
	}
	return code, rep.Rows[0], &stdout
}

// TestCheckStreamsPerConn: --streams-per-conn sets the number of streams
// the multiplex row runs on one h2c connection to the server, as its
// requests and evidence say in the JSON document and on stdout; without
// it, 8.
func TestCheckStreamsPerConn(t *testing.T) {
	for _, tt := range []struct {
		extra []string
		want  int
	}{{nil, 8}, {[]string{"--streams-per-conn", "3"}, 3}} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		args := append([]string{"-t", ln.Addr().String(), "-L", ln.Addr().String(), "--h2c"}, tt.extra...)
		code, r, stdout := checkOneRow(t, ln, args)
		if strings.Contains(r.Evidence, check.Overloaded) {
			t.Logf("%q: %s (the machine is busy; the streams are counted still)", args, r.Evidence)
		} else if want := fmt.Sprintf("%d streams at once on one h2c connection", tt.want); code != ExitOK || r.Status != check.Pass ||
			!strings.Contains(r.Evidence, want) || !strings.Contains(stdout.String(), want) {
			t.Errorf("check %q: exit %d, %s %q; want PASS saying %q\n%s", args, code, r.Status, r.Evidence, want, stdout.String())
		}
		if r.Requests != tt.want {
			t.Errorf("check %q: %d requests, want %d", args, r.Requests, tt.want)
		}
	}
}

// TestCheckStreamsPerConnH3: with --http3, --streams-per-conn sets the
// number of streams the multiplex row runs on one QUIC connection
// through an HTTP/3 gateway (testutil.H3Relay: quic-go's server before a
// standard library proxy to -L), every request reaching it over HTTP/3;
// the row says so, not SKIP.
func TestCheckStreamsPerConnH3(t *testing.T) {
	cert := newTestCert(t)
	ln := testutil.Listen(t)
	gw, protos := testutil.H3Relay(t, func() string { return ln.Addr().String() }, cert.tls)
	args := []string{"-t", "https://" + gw, "-L", ln.Addr().String(), "--insecure", "--http3", "--streams-per-conn", "3"}
	code, r, stdout := checkOneRow(t, ln, args)
	// The streams are counted whatever the flush verdict of them: a busy
	// machine (the race detector, in-process QUIC on both sides) makes
	// the tool fall behind, or bursts its own deliveries.
	t.Logf("%q: exit %d, %s %s", args, code, r.Status, r.Evidence)
	said := strings.Contains(r.Evidence, check.Overloaded) || strings.Contains(r.Evidence, "3 streams") && strings.Contains(r.Evidence, "on one h3 connection")
	if r.Status == check.Skip || !said || !strings.Contains(stdout.String(), r.Evidence) {
		t.Errorf("check %q: exit %d, %s %q; want the row run, saying 3 streams on one h3 connection\n%s", args, code, r.Status, r.Evidence, stdout.String())
	}
	if r.Requests != 3 {
		t.Errorf("check %q: %d requests, want 3", args, r.Requests)
	}
	// The pre-flight request and the three streams.
	if seen := protos(); len(seen) < 4 || slices.ContainsFunc(seen, func(p string) bool { return p != "HTTP/3.0" }) {
		t.Errorf("check %q: the gateway saw %q, want the pre-flight and 3 streams over HTTP/3", args, seen)
	}
}

func TestCheckNotAGateway(t *testing.T) {
	refused, notHTTP := testutil.RefusedAddr(t), testutil.NotHTTP(t)
	redirect := httptest.NewServer(http.RedirectHandler("http://example.invalid/v1/chat/completions", http.StatusFound))
	defer redirect.Close()
	for _, tt := range []struct{ name, target, want string }{
		{"refused", refused, "cannot connect to " + refused},
		{"not HTTP", notHTTP, "does not answer in HTTP"},
		{"redirect", redirect.URL, "answered with a redirect 302 to http://example.invalid/v1/chat/completions; check follows no redirect"},
	} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		start := time.Now()
		code := CheckOn(context.Background(), ln, []string{"-t", tt.target}, &stdout, &stderr)
		took := time.Since(start)
		header := "sse-latency check of " + tt.target + " (api chat); its dummy server on " + ln.Addr().String() + "\n"
		line := stderr.String()
		if code != ExitFailure || stdout.String() != header || strings.Count(line, "\n") != 1 ||
			!strings.HasPrefix(line, "sse-latency check: not a gateway to sse-latency's server: ") || !strings.Contains(line, tt.want) {
			t.Errorf("%s: check -t %s: exit %d, stdout %q, stderr %q; want 1, the header, and one line saying %q",
				tt.name, tt.target, code, stdout.String(), line, tt.want)
		}
		if took >= check.PreflightTimeout {
			t.Errorf("%s: check -t %s took %v to give up, the preflight's whole timeout", tt.name, tt.target, took)
		}
	}
}

// lockedBuffer is a bytes.Buffer written by the run and read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestFaultFlag: --fault makes the server inject its faults into every
// answer — here, in server-only mode on a port it bound and named, an
// error status in the dialect's shape, which a request's own hint
// overrides — and a fault past its cap or unknown is a usage error
// naming it.
func TestFaultFlag(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"-L", "127.0.0.1:0", "--fault", "status=529", "--fault", "cut_after=1"}, &stdout, &stderr)
	}()
	listening := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+) `)
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == ""; time.Sleep(5 * time.Millisecond) {
		if m := listening.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no listening line in 10 s: %q", stderr.String())
		}
	}
	post := func(body string) (int, string) {
		resp, err := http.Post("http://"+addr+"/v1/messages", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(`{"stream":true}`); code != 529 || !strings.Contains(body, `"type":"overloaded_error","message":"sse-latency: injected upstream fault (status 529)"`) {
		t.Errorf("--fault status=529: %d %s", code, body)
	}
	if code, body := post(`{"stream":true,"pi_status":500}`); code != 500 {
		t.Errorf("a request's status hint over --fault's: %d %s", code, body)
	}
	cancel()
	if code := <-done; code != ExitOK {
		t.Errorf("server-only run ended with %d", code)
	}
	for _, tt := range []struct{ flag, want string }{
		{"status=200", "--fault: api: pi_* hint above the server's limit: status=200 in the server's faults; the limit is 400 to 599"},
		{"cut=3", `--fault: unknown fault "cut"`},
		{"split=0", `--fault: split=0: offset "0"`},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(context.Background(), []string{"-L", "127.0.0.1:0", "--fault", tt.flag}, &stdout, &stderr); code != ExitFailure ||
			!strings.Contains(stderr.String(), tt.want) {
			t.Errorf("--fault %s: exit %d, %q; want %q", tt.flag, code, stderr.String(), tt.want)
		}
	}
}
