package cli

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sse-latency/sse-latency/internal/testutil"
)

// h3FlagRows proves --http3 for every command that takes it: through an
// HTTP/3 gateway (testutil.H3Relay: quic-go's server before a standard
// library proxy to -L over HTTP/1.1), every request reaches the gateway
// over HTTP/3, and a run's report counts its requests as h3.
func h3FlagRows(t *testing.T) {
	cert := newTestCert(t)
	for _, cmd := range []string{cmdRun, cmdSweep, cmdProbe, cmdCheck} {
		t.Run(cmd, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), flagLimit)
			defer cancel()
			up := make(chan string, 1)
			var once sync.Once
			setUp := func(a string) { once.Do(func() { up <- a; close(up) }) }
			var upMu sync.Mutex
			var upAddr string
			wait := func() string {
				upMu.Lock()
				defer upMu.Unlock()
				if upAddr == "" {
					select {
					case upAddr = <-up:
					case <-ctx.Done():
					}
				}
				return upAddr
			}
			gw, protos := testutil.H3Relay(t, wait, cert.tls)
			ln := testutil.Listen(t)
			args := []string{"-L", ln.Addr().String(), "-t", "https://" + gw, "--insecure", "--http3", "-r", "1", "-c", "1", "-n", "3", "-d", "1", "-w", "20000"}
			var stdout bytes.Buffer
			stderr := &watched{on: func([]byte) {}}
			var code int
			switch cmd {
			case cmdRun:
				setUp(ln.Addr().String())
				code, _ = MeasureOn(ctx, ln, args, &stdout, stderr)
			case cmdSweep:
				setUp(ln.Addr().String())
				code, _ = MeasureOn(ctx, ln, slices.Concat([]string{"sweep"}, args, []string{"--prompt-bytes", "1,2"}), &stdout, stderr)
			case cmdCheck:
				setUp(ln.Addr().String())
				code = CheckOn(ctx, ln, []string{"-t", "https://" + gw, "-L", ln.Addr().String(), "--insecure", "--http3", "--only", "terminal"}, &stdout, stderr)
			case cmdProbe:
				ln.Close() // the probe binds -L itself: its address comes on stderr
				args[1] = "127.0.0.1:0"
				pctx, stop := context.WithCancel(ctx)
				defer stop()
				stderr.on = func(p []byte) {
					if m := listening.FindSubmatch(p); m != nil {
						setUp(string(m[1]))
					}
					if bytes.Contains(p, []byte("probe: round 1:")) {
						stop()
					}
				}
				code = Main(pctx, slices.Concat([]string{"probe"}, args, []string{"--every", "1h", "--metrics", "127.0.0.1:0"}), &stdout, stderr)
			}
			seen := protos()
			out := stdout.String() + stderr.String()
			if cmd != cmdProbe && code != ExitOK {
				t.Errorf("%s --http3: exit %d, want %d\n%s", cmd, code, ExitOK, out)
			}
			if len(seen) == 0 || slices.ContainsFunc(seen, func(p string) bool { return p != "HTTP/3.0" }) {
				t.Errorf("%s --http3: the gateway saw %q, want every request over HTTP/3\n%s", cmd, seen, out)
			}
			if cmd == cmdRun && !strings.Contains(out, "; h3 1\n") {
				t.Errorf("run --http3: the connections line does not count the request as h3\n%s", out)
			}
		})
	}
}

// TestHTTP3Unreachable: --http3 to a UDP port where nothing answers (a
// socket that drops every datagram), and to a QUIC server whose
// certificate is not trusted: exit 1, the failure named on one line, the
// first run bounded by -w (500 ms); the second ends by the peer's alert
// and waits long for it (a handshake under -race on a loaded machine may
// take longer than 500 ms, and a timeout would be the first case's failure).
func TestHTTP3Unreachable(t *testing.T) {
	drop, _ := testutil.DropUDP(t)
	cert := newTestCert(t)
	gw, _ := testutil.H3Relay(t, func() string { return "" }, cert.tls)
	for _, c := range []struct {
		name, addr string
		flags      []string
		want       string
	}{
		{"UDP blocked", drop, []string{"--insecure", "-w", "500"}, "QUIC handshake: no answer from UDP " + drop + " within 500ms (UDP blocked, or no HTTP/3 server there)"},
		{"untrusted", gw, []string{"-w", "60000"}, "QUIC handshake: TLS: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			args := slices.Concat([]string{"-L", "127.0.0.1:0", "-t", "https://" + c.addr, "--http3", "-r", "1", "-c", "1", "-n", "3"}, c.flags)
			code, _ := MeasureOn(t.Context(), testutil.Listen(t), args, &stdout, &stderr)
			out := stdout.String() + stderr.String()
			if code != ExitFailure {
				t.Errorf("%s: exit %d, want %d\n%s", c.name, code, ExitFailure, out)
			}
			var lines []string
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, c.want) {
					lines = append(lines, l)
				}
			}
			if len(lines) == 0 {
				t.Errorf("%s: no line says %q\n%s", c.name, c.want, out)
			}
			t.Logf("%d lines name it: %q", len(lines), lines)
		})
	}
}

// h3StreamsPerConnRow proves --streams-per-conn with --http3 on the
// wire: four slots, two per connection, through an HTTP/3 gateway
// (testutil.H3RelayConns) that counts the QUIC connections it accepts:
// two carry the four requests of the measurement, every one over
// HTTP/3, and the report counts them as h3.
func h3StreamsPerConnRow(t *testing.T) {
	cert := newTestCert(t)
	ctx, cancel := context.WithTimeout(t.Context(), flagLimit)
	defer cancel()
	ln := testutil.Listen(t)
	gw, protos, conns := testutil.H3RelayConns(t, func() string { return ln.Addr().String() }, cert.tls)
	args := []string{"-L", ln.Addr().String(), "-t", "https://" + gw, "--insecure", "--http3", "-k",
		"-r", "4", "-c", "4", "--streams-per-conn", "2", "-n", "3", "-d", "1", "-w", "20000"}
	var stdout bytes.Buffer
	stderr := &watched{on: func([]byte) {}}
	code, _ := MeasureOn(ctx, ln, args, &stdout, stderr)
	out := stdout.String() + stderr.String()
	if code != ExitOK {
		t.Fatalf("--http3 -k -c 4 --streams-per-conn 2: exit %d, want %d\n%s", code, ExitOK, out)
	}
	seen := protos()
	if n := conns(); n != 2 || len(seen) != 4 || slices.ContainsFunc(seen, func(p string) bool { return p != "HTTP/3.0" }) {
		t.Errorf("--http3 -k -c 4 --streams-per-conn 2: the gateway accepted %d QUIC connections carrying %q; want 2, carrying 4 HTTP/3 requests\n%s", n, seen, out)
	}
	if !strings.Contains(out, "; h3 4") {
		t.Errorf("--http3 --streams-per-conn 2: the connections line does not count the 4 requests as h3\n%s", out)
	}
}
