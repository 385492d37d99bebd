package cli

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/testutil"
)

// relay is a TCP gateway to upstream whose response direction goes
// through pump (which copies from up to down however it likes).
func relay(t *testing.T, upstream string, pump func(down io.Writer, up io.Reader)) string {
	return testutil.Relay(t, func() string { return upstream }, func(down, up net.Conn) { pump(down, up) })
}

// bufferingPump releases what it received every period, like a gateway
// that holds SSE events in a buffer.
func bufferingPump(period time.Duration) func(io.Writer, io.Reader) {
	return func(down io.Writer, up io.Reader) {
		var mu sync.Mutex
		var held []byte
		done := make(chan struct{})
		go func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := up.Read(buf)
				mu.Lock()
				held = append(held, buf[:n]...)
				mu.Unlock()
				if err != nil {
					close(done)
					return
				}
			}
		}()
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
			case <-done:
			}
			mu.Lock()
			out := held
			held = nil
			mu.Unlock()
			if len(out) > 0 {
				if _, err := down.Write(out); err != nil {
					return
				}
			}
			select {
			case <-done:
				mu.Lock()
				down.Write(held)
				mu.Unlock()
				return
			default:
			}
		}
	}
}

var (
	titleRE = regexp.MustCompile(`(?m)^=== (gateway|loopback \(direct to listen address\)): (\d+) requests, (\d+) ok, (\d+) failed, (\d+) tokens ===$`)
	meanRE  = regexp.MustCompile(`(?m)^emit->recv \(tokens\)\s+n=(\d+)\s+mean=([0-9.]+)ms\s+min=[0-9.]+ms\s+p50=([0-9.]+)ms`)
)

var interTokenN = regexp.MustCompile(`(?m)^inter-token \(client\)\s+n=(\d+)\s`)

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

type batchLine struct{ requests, ok, failed, tokens int }

func parseTitles(t *testing.T, out string) map[string]batchLine {
	t.Helper()
	m := map[string]batchLine{}
	for _, g := range titleRE.FindAllStringSubmatch(out, -1) {
		a, _ := strconv.Atoi(g[2])
		b, _ := strconv.Atoi(g[3])
		c, _ := strconv.Atoi(g[4])
		d, _ := strconv.Atoi(g[5])
		m[strings.Fields(g[1])[0]] = batchLine{a, b, c, d}
	}
	return m
}

// emitRecvMeans returns the emit->recv (tokens) means of the report's
// batches in order (loopback first when present).
func emitRecvMeans(t *testing.T, out string) []float64 {
	t.Helper()
	var v []float64
	for _, g := range meanRE.FindAllStringSubmatch(out, -1) {
		f, _ := strconv.ParseFloat(g[2], 64)
		v = append(v, f)
	}
	return v
}

func TestMeasureThroughReverseProxy(t *testing.T) {
	backendLn := testutil.Listen(t)
	backend := backendLn.Addr().String()
	u, _ := url.Parse("http://" + backend)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // flush every write: an SSE-friendly gateway
	ln := testutil.Listen(t)
	hs := &http.Server{Handler: testutil.FullDuplex(rp)}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })

	code, out, errOut := runOn(t, nil, backendLn, "-L", backend, "-t", ln.Addr().String(), "-r", "4", "-c", "2", "-n", "50", "-d", "1")
	if code != ExitOK {
		t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	titles := parseTitles(t, out)
	if got, want := titles["gateway"], (batchLine{4, 4, 0, 200}); got != want {
		t.Errorf("gateway batch %+v, want %+v\n%s", got, want, out)
	}
	if got, want := titles["loopback"], (batchLine{3, 3, 0, 150}); got != want {
		t.Errorf("loopback batch %+v, want %+v (min(max(c,3),r) requests of min(n,200) tokens)\n%s", got, want, out)
	}
	if !strings.Contains(out, "emit->recv (tokens)      n=196 ") {
		t.Errorf("gateway emit->recv should have n=4*(50-1)=196 samples:\n%s", out)
	}
	if !strings.Contains(out, "=== gateway overhead (gateway minus loopback; negative = loopback noise) ===") {
		t.Errorf("no overhead block:\n%s", out)
	}
	for _, want := range []string{
		"loop: calibrating the noise floor with 3 request(s) of 50 tokens to " + backend + " (concurrency=2, think=0ms, delay=1ms) ...\n",
		"gw: sending 4 request(s) to " + ln.Addr().String() + " (concurrency=2, tokens=50, think=0ms, delay=1ms) ...\n",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if n := len(regexp.MustCompile(`(?m)^gw +\d: ok  ttft=`).FindAllString(out, -1)); n != 4 {
		t.Errorf("%d ok gw request lines, want 4:\n%s", n, out)
	}
}

func TestMeasureThroughBufferingProxy(t *testing.T) {
	ln := testutil.Listen(t)
	backend := ln.Addr().String()
	proxy := relay(t, backend, bufferingPump(100*time.Millisecond))
	code, out, errOut := runOn(t, nil, ln, "-L", backend, "-t", proxy, "-r", "2", "-c", "2", "-n", "100", "-d", "2", "-q")
	if code != ExitOK {
		t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	means := emitRecvMeans(t, out)
	if len(means) != 2 {
		t.Fatalf("found %d emit->recv lines, want loopback and gateway:\n%s", len(means), out)
	}
	// Held for up to 100 ms, tokens wait ~50 ms on average: far above the
	// loopback noise floor whatever the machine.
	if loop, gw := means[0], means[1]; gw < 10 || gw < 10*loop {
		t.Errorf("gateway emit->recv mean %.2f ms vs loopback %.2f ms: want an order of magnitude above, and above 10 ms\n%s", gw, loop, out)
	}
}

func TestFailures(t *testing.T) {
	tests := []struct {
		name    string
		gateway func(t *testing.T, backend string) string
		args    []string
		want    string
	}{
		{"cut stream", func(t *testing.T, backend string) string {
			return relay(t, backend, func(down io.Writer, up io.Reader) {
				io.CopyN(down, up, 2000) // head and some tokens, then close
			})
		}, nil, "gw   0: FAILED: connection closed before [DONE]\n"},
		{"502", func(t *testing.T, _ string) string {
			return testutil.ServeTCP(t, func(c net.Conn) {
				c.Read(make([]byte, 4096))
				io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 11\r\nConnection: close\r\n\r\nbad gateway")
			})
		}, nil, "gw   0: FAILED: status HTTP/1.1 502 Bad Gateway\n"},
		{"never answers", func(t *testing.T, _ string) string {
			return testutil.ServeTCP(t, func(c net.Conn) { io.Copy(io.Discard, c) })
		}, []string{"-w", "300"}, "gw   0: FAILED: timeout after 300ms\n"},
		{"short response", func(t *testing.T, _ string) string {
			return testutil.ServeTCP(t, func(c net.Conn) {
				c.Read(make([]byte, 4096))
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/ev")
			})
		}, nil, "gw   0: FAILED: short response\n"},
		{"no content", func(t *testing.T, _ string) string {
			return testutil.ServeTCP(t, func(c net.Conn) {
				c.Read(make([]byte, 4096))
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"+
					"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\ndata: [DONE]\n\n")
			})
		}, nil, "gw   0: FAILED: no content tokens received\n"},
		{"content cut short", func(t *testing.T, _ string) string {
			return testutil.ServeTCP(t, func(c net.Conn) {
				c.Read(make([]byte, 4096))
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"+
					"data: {\"choices\":[{\"delta\":{\"content\":\"anan\"}}]}\n\ndata: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
			})
		}, nil, "gw   0: FAILED: integrity: 199 tokens missing (first: token 1)\n"},
		{"refused", func(t *testing.T, _ string) string {
			return testutil.RefusedAddr(t)
		}, nil, "gw   0: FAILED: connect(): Connection refused\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln := testutil.Listen(t)
			backend := ln.Addr().String()
			gw := tt.gateway(t, backend)
			args := append([]string{"-L", backend, "-t", gw, "-n", "200", "-d", "1"}, tt.args...)
			code, out, errOut := runOn(t, nil, ln, args...)
			if code != ExitFailure {
				t.Errorf("exit %d, want 1 (a gateway request failed)\nstderr:\n%s", code, errOut)
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("stdout lacks %q:\n%s", tt.want, out)
			}
			if got := parseTitles(t, out)["gateway"]; got != (batchLine{1, 0, 1, 0}) {
				t.Errorf("gateway batch %+v, want 1 request, 0 ok, 1 failed, 0 tokens", got)
			}
		})
	}
}

func TestTargetEqualsListen(t *testing.T) {
	ln := testutil.Listen(t)
	addr := ln.Addr().String()
	code, out, errOut := runOn(t, nil, ln, "-L", addr, "-t", addr, "-n", "20", "-d", "0.5", "-r", "2", "-c", "2")
	if code != ExitOK || !strings.Contains(errOut, "note: -t equals -L, skipping loopback calibration\n") {
		t.Errorf("exit %d, stderr %q; want 0 and the -t equals -L note", code, errOut)
	}
	if strings.Contains(out, "=== loopback") || strings.Contains(out, "overhead") {
		t.Errorf("calibration ran although -t equals -L:\n%s", out)
	}
	if got := parseTitles(t, out)["gateway"]; got != (batchLine{2, 2, 0, 40}) {
		t.Errorf("gateway batch %+v, want 2 requests, 2 ok, 40 tokens", got)
	}
}

func TestQuietAndNoLoopback(t *testing.T) {
	ln := testutil.Listen(t)
	addr := ln.Addr().String()
	other := testutil.Relay(t, func() string { return addr }, testutil.Forward)
	code, out, errOut := runOn(t, nil, ln, "-L", addr, "-t", other, "-n", "10", "-d", "0.2", "-q", "-l")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(out, "gw   0:") || strings.Contains(out, "=== loopback") || strings.Contains(errOut, "loop:") {
		t.Errorf("-q -l still printed request lines or calibrated:\n%s\n%s", out, errOut)
	}
	if !strings.HasPrefix(out, "\n=== gateway: 1 requests, 1 ok, 0 failed, 10 tokens ===\n") {
		t.Errorf("report does not start with a blank line and the gateway block:\n%q", out)
	}
}

func TestInterruptKeepsResults(t *testing.T) {
	ln := testutil.Listen(t)
	addr := ln.Addr().String()
	// A gateway that passes each stream's first 5 tokens, then holds the
	// rest: the run is cancelled once the client has read those, with all
	// three streams in flight.
	hold := &testutil.Hold{Marker: `"delta":{"content":"`, N: 5}
	gw := testutil.Relay(t, func() string { return addr }, hold.Pump)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		code        int
		out, errOut string
	}
	ran := make(chan result, 1)
	go func() {
		var r result
		r.code, r.out, r.errOut = runOn(t, ctx, ln, "-L", addr, "-t", gw, "-l", "-r", "3", "-c", "3", "-n", "100000", "-d", "1")
		ran <- r
	}()
	hold.AwaitRead(t, 3)
	cancel()
	r := <-ran
	code, out, errOut := r.code, r.out, r.errOut
	if code != ExitInterrupted {
		t.Errorf("exit %d, want %d after an interruption", code, ExitInterrupted)
	}
	if got := parseTitles(t, out)["gateway"]; got.requests != 3 || got.failed != 3 {
		t.Errorf("gateway batch %+v, want the 3 interrupted requests reported\n%s", got, out)
	}
	if m := interTokenN.FindStringSubmatch(out); !strings.Contains(out, "FAILED: interrupted") || m == nil || atoi(m[1]) < 3*4 {
		t.Errorf("report lacks the interrupted requests' samples (at least 3 x 4 inter-token gaps):\n%s", out)
	}
	if !strings.Contains(errOut, "interrupted") {
		t.Errorf("stderr does not say the run was interrupted:\n%s", errOut)
	}
}

// TestCompatOmitsVerdict: the verdict block is the Go tool's; --compat
// keeps the output to what the reference prints.
func TestCompatOmitsVerdict(t *testing.T) {
	for _, compat := range []bool{false, true} {
		ln := testutil.Listen(t)
		addr := ln.Addr().String()
		args := []string{"-L", addr, "-t", addr, "-n", "40", "-d", "1", "-q"}
		if compat {
			args = append(args, "--compat")
		}
		var stdout strings.Builder
		code, sum := MeasureOn(context.Background(), ln, args, &stdout, io.Discard)
		if code != ExitOK || sum == nil || sum.Verdict == nil || sum.Gateway.OK != 1 {
			t.Fatalf("compat=%v: exit %d, summary %+v", compat, code, sum)
		}
		if has := strings.Contains(stdout.String(), "=== verdict ==="); has == compat {
			t.Errorf("compat=%v: verdict block present=%v\n%s", compat, has, stdout.String())
		}
	}
}

// TestMeasureWithReceived: Options.Received counts the gateway batch's
// tokens as they arrive, those of the calibration left out.
func TestMeasureWithReceived(t *testing.T) {
	ln := testutil.Listen(t)
	g := newGateway(t, hooks{})
	var received atomic.Int64
	args := []string{"-L", ln.Addr().String(), "-t", g.addr, "-r", "3", "-n", "40", "-d", "0.5", "-q"}
	code, sum := MeasureWith(context.Background(), Options{Listener: ln, Received: &received}, args, io.Discard, g)
	if code != ExitOK || sum == nil || sum.Loop == nil || sum.Gateway.OK != 3 {
		t.Fatalf("exit %d, summary %+v: want a calibration and 3 requests ok", code, sum)
	}
	if got := received.Load(); got != 3*40 {
		t.Errorf("Received counted %d tokens, want the gateway batch's %d", got, 3*40)
	}
}
