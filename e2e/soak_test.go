//go:build linux

package e2e

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/cli"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// The soak: streams concurrent streams of soakTokens tokens soakDelayMs
// apart (about ten seconds each) through an in-process gateway.
const (
	soakStreams     = 2000
	raceSoakStreams = 300 // under -race: the detector allows 8128 live goroutines and runs ~10x slower
	soakTokens      = 1000
	soakDelayMs     = 10

	// fdsPerStream: the client's connection, both sides of the gateway,
	// the server's connection.
	fdsPerStream = 4
	fdMargin     = 256

	// leakSlack is how many goroutines or descriptors above the baseline
	// still count as "back to baseline" (runtime and test helpers).
	leakSlack = 5
	// heapSlack is how much the heap in use may stay above the baseline.
	heapSlack = 16 << 20
	// settleTime bounds the wait for the goroutines and descriptors of the
	// run to go away.
	settleTime = 10 * time.Second
)

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count descriptors: %v", err)
	}
	return len(ents) - 1 // the directory being read
}

// heapInuse returns the heap in use after a full collection.
func heapInuse() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// soakGateway is an SSE-friendly reverse proxy on loopback: it flushes every
// write and keeps enough idle backend connections for every stream.
type soakGateway struct {
	addr   string
	srv    *http.Server
	tr     *http.Transport
	errors atomic.Int64
	last   atomic.Value // last proxy error, for the failure message
}

func startSoakGateway(t *testing.T, backend string, streams int) *soakGateway {
	t.Helper()
	u, err := url.Parse("http://" + backend)
	if err != nil {
		t.Fatal(err)
	}
	g := &soakGateway{tr: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConns:        streams,
		MaxIdleConnsPerHost: streams,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // flush every write, as an SSE-friendly gateway does
	rp.Transport = g.tr
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		g.errors.Add(1)
		g.last.Store(err.Error())
		w.WriteHeader(http.StatusBadGateway)
	}
	ln := testutil.Listen(t)
	g.addr = ln.Addr().String()
	g.srv = &http.Server{Handler: testutil.FullDuplex(rp), ReadHeaderTimeout: 30 * time.Second}
	go g.srv.Serve(ln)
	return g
}

// close stops the gateway: its listener, its client connections, and its
// idle backend connections.
func (g *soakGateway) close() {
	g.srv.Close()
	g.tr.CloseIdleConnections()
}

// peaks are the highest values sampled while the soak ran.
type peaks struct {
	goroutines, fds int
	heap            uint64
}

// sample samples the process every period until the returned function is
// called; that function returns the peaks.
func sample(every time.Duration) (stop func() peaks) {
	var p peaks
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			g, f := runtime.NumGoroutine(), 0
			if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
				f = len(ents) - 1
			}
			p.goroutines, p.fds, p.heap = max(p.goroutines, g), max(p.fds, f), max(p.heap, ms.HeapInuse)
		}
	}()
	return func() peaks {
		close(quit)
		<-done
		return p
	}
}

func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak test: skipped with -short")
	}
	if runtime.GOOS != "linux" {
		t.Skip("soak test: counts descriptors in /proc/self/fd (Linux only)")
	}
	streams := soakStreams
	if raceEnabled {
		streams = raceSoakStreams
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Skipf("soak test: cannot read RLIMIT_NOFILE: %v", err)
	}
	if need := uint64(fdsPerStream*streams + fdMargin); rl.Cur < need {
		t.Skipf("soak test: %d streams need about %d file descriptors (%d per stream), the limit is %d (hard %d); raise it with ulimit -n",
			streams, need, fdsPerStream, rl.Cur, rl.Max)
	}

	// The baseline, taken once the network poller exists (its descriptors
	// stay open for the life of the process) and the dummy server's
	// listener is bound (the run closes it).
	backendLn := testutil.Listen(t)
	backend := backendLn.Addr().String()
	baseG, baseFD, baseHeap := runtime.NumGoroutine(), openFDs(t), heapInuse()

	gw := startSoakGateway(t, backend, streams)
	stopSampling := sample(250 * time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	n := strconv.Itoa(streams)
	began := time.Now()
	code, sum := cli.MeasureOn(ctx, backendLn, []string{"-L", backend, "-t", gw.addr, "-r", n, "-c", n,
		"-n", strconv.Itoa(soakTokens), "-d", strconv.Itoa(soakDelayMs), "-w", "45000", "-q", "-l"}, &out, &errb)
	elapsed := time.Since(began)
	peak := stopSampling()
	gw.close()

	if sum == nil || sum.Gateway == nil {
		t.Fatalf("exit %d without a gateway batch\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	g := sum.Gateway
	t.Logf("%d streams x %d tokens every %d ms: %v; ok %d, failed %d, tokens %d; peak %d goroutines, %d descriptors, heap in use %.1f MB",
		streams, soakTokens, soakDelayMs, elapsed.Round(time.Millisecond), g.OK, g.Failed, g.Tokens,
		peak.goroutines, peak.fds, float64(peak.heap)/(1<<20))
	// On a machine too busy for the streams' schedule (other jobs beside
	// the tests), sse-latency says that it fell behind: the streams then
	// outlast their -w, and their outcome measures the machine, not the
	// tool. The leaks are checked all the same.
	overloaded := strings.Contains(errb.String(), "fell behind its own emission schedule")
	switch {
	case overloaded:
		t.Logf("sse-latency fell behind its own emission schedule: the streams' outcome (exit %d, %d ok, %d failed) is not judged\nstderr:\n%s",
			code, g.OK, g.Failed, errb.String())
	case code != cli.ExitOK || g.OK != streams || g.Failed != 0 || g.Tokens != int64(streams*soakTokens):
		t.Errorf("exit %d, %d ok, %d failed, %d tokens; want 0, %d ok, 0 failed, %d tokens\nstdout:\n%s\nstderr:\n%s",
			code, g.OK, g.Failed, g.Tokens, streams, streams*soakTokens, out.String(), errb.String())
	}
	if e := gw.errors.Load(); e != 0 {
		t.Errorf("the gateway saw %d proxy errors (last: %v)", e, gw.last.Load())
	}

	// Everything the run opened must go away.
	var nowG, nowFD int
	deadline := time.Now().Add(settleTime)
	for {
		runtime.GC()
		nowG, nowFD = runtime.NumGoroutine(), openFDs(t)
		if nowG <= baseG+leakSlack && nowFD <= baseFD+leakSlack || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	nowHeap := heapInuse()
	t.Logf("after: %d goroutines (baseline %d), %d descriptors (baseline %d), heap in use %.1f MB (baseline %.1f MB)",
		nowG, baseG, nowFD, baseFD, float64(nowHeap)/(1<<20), float64(baseHeap)/(1<<20))
	if nowG > baseG+leakSlack {
		var dump bytes.Buffer
		pprof.Lookup("goroutine").WriteTo(&dump, 1)
		t.Errorf("%d goroutines %v after the run, baseline %d: leaked\n%.8000s", nowG, settleTime, baseG, dump.String())
	}
	if nowFD > baseFD+leakSlack {
		t.Errorf("%d open descriptors %v after the run, baseline %d: leaked", nowFD, settleTime, baseFD)
	}
	if nowHeap > baseHeap+heapSlack {
		t.Errorf("heap in use %.1f MB after the run, baseline %.1f MB: more than %d MB retained",
			float64(nowHeap)/(1<<20), float64(baseHeap)/(1<<20), heapSlack>>20)
	}
	if overloaded {
		t.Skip("the machine was too busy to judge the streams (sse-latency fell behind its own schedule); the leak checks ran")
	}
}
