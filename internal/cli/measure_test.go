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
	"testing"
	"time"
)

// freePort returns a loopback address that was free a moment ago, for a
// server whose address a proxy must know before it starts.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// serveTCP accepts connections on a loopback port and hands each to handle,
// until the test ends.
func serveTCP(t *testing.T, handle func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); defer c.Close(); handle(c) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// relay is a TCP proxy to upstream whose response direction goes through
// pump (which copies from up to down however it likes).
func relay(t *testing.T, upstream string, pump func(down io.Writer, up io.Reader)) string {
	return serveTCP(t, func(c net.Conn) {
		u, err := net.Dial("tcp", upstream)
		if err != nil {
			return
		}
		defer u.Close()
		go io.Copy(u, c)
		pump(c, u)
	})
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
	backend := freePort(t)
	u, _ := url.Parse("http://" + backend)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // flush every write: an SSE-friendly gateway
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: rp}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })

	code, out, errOut := runMain(t, nil, "-L", backend, "-t", ln.Addr().String(), "-r", "4", "-c", "2", "-n", "50", "-d", "1")
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
	backend := freePort(t)
	proxy := relay(t, backend, bufferingPump(100*time.Millisecond))
	code, out, errOut := runMain(t, nil, "-L", backend, "-t", proxy, "-r", "2", "-c", "2", "-n", "100", "-d", "2", "-q")
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
			return serveTCP(t, func(c net.Conn) {
				c.Read(make([]byte, 4096))
				io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 11\r\nConnection: close\r\n\r\nbad gateway")
			})
		}, nil, "gw   0: FAILED: status HTTP/1.1 502 Bad Gateway\n"},
		{"never answers", func(t *testing.T, _ string) string {
			return serveTCP(t, func(c net.Conn) { io.Copy(io.Discard, c) })
		}, []string{"-w", "300"}, "gw   0: FAILED: timeout after 300ms\n"},
		{"short response", func(t *testing.T, _ string) string {
			return serveTCP(t, func(c net.Conn) {
				c.Read(make([]byte, 4096))
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/ev")
			})
		}, nil, "gw   0: FAILED: short response\n"},
		{"no content", func(t *testing.T, _ string) string {
			return serveTCP(t, func(c net.Conn) {
				c.Read(make([]byte, 4096))
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"+
					"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\ndata: [DONE]\n\n")
			})
		}, nil, "gw   0: FAILED: no content tokens received\n"},
		{"content cut short", func(t *testing.T, _ string) string {
			return serveTCP(t, func(c net.Conn) {
				c.Read(make([]byte, 4096))
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"+
					"data: {\"choices\":[{\"delta\":{\"content\":\"anan\"}}]}\n\ndata: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
			})
		}, nil, "gw   0: FAILED: integrity: 199 tokens missing (first: token 1)\n"},
		{"refused", func(t *testing.T, _ string) string {
			return freePort(t) // nothing listens there any more
		}, nil, "gw   0: FAILED: connect(): Connection refused\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			backend := freePort(t)
			gw := tt.gateway(t, backend)
			args := append([]string{"-L", backend, "-t", gw, "-n", "200", "-d", "1"}, tt.args...)
			code, out, errOut := runMain(t, nil, args...)
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
	addr := freePort(t)
	code, out, errOut := runMain(t, nil, "-L", addr, "-t", addr, "-n", "20", "-d", "0.5", "-r", "2", "-c", "2")
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
	addr := freePort(t)
	other := relay(t, addr, func(down io.Writer, up io.Reader) { io.Copy(down, up) })
	code, out, errOut := runMain(t, nil, "-L", addr, "-t", other, "-n", "10", "-d", "0.2", "-q", "-l")
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
	addr := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Two quick requests finish, two long ones are cut by the cancellation.
	time.AfterFunc(1500*time.Millisecond, cancel)
	code, out, errOut := runMain(t, ctx, "-L", addr, "-t", addr, "-r", "3", "-c", "3", "-n", "100000", "-d", "1")
	if code != ExitInterrupted {
		t.Errorf("exit %d, want %d after an interruption", code, ExitInterrupted)
	}
	if got := parseTitles(t, out)["gateway"]; got.requests != 3 || got.failed != 3 {
		t.Errorf("gateway batch %+v, want the 3 interrupted requests reported\n%s", got, out)
	}
	if !strings.Contains(out, "FAILED: interrupted") || !regexp.MustCompile(`inter-token \(client\)\s+n=[1-9]`).MatchString(out) {
		t.Errorf("report lacks the interrupted requests' samples:\n%s", out)
	}
	if !strings.Contains(errOut, "interrupted") {
		t.Errorf("stderr does not say the run was interrupted:\n%s", errOut)
	}
}

// TestCompatOmitsVerdict: the verdict block is the Go tool's; --compat
// keeps the output to what the reference prints.
func TestCompatOmitsVerdict(t *testing.T) {
	for _, compat := range []bool{false, true} {
		addr := freePort(t)
		args := []string{"-L", addr, "-t", addr, "-n", "40", "-d", "1", "-q"}
		if compat {
			args = append(args, "--compat")
		}
		var stdout strings.Builder
		code, sum := Measure(context.Background(), args, &stdout, io.Discard)
		if code != ExitOK || sum == nil || sum.Verdict == nil || sum.Gateway.OK != 1 {
			t.Fatalf("compat=%v: exit %d, summary %+v", compat, code, sum)
		}
		if has := strings.Contains(stdout.String(), "=== verdict ==="); has == compat {
			t.Errorf("compat=%v: verdict block present=%v\n%s", compat, has, stdout.String())
		}
	}
}
