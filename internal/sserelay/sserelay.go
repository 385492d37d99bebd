//go:build linux

// Package sserelay is a small SSE relay of the shape the field reports
// measured (shared seeds: the chunk-forwarding and WebSocket relay
// iterations), run as a process of its own so that what it costs shows in
// /proc: for each POST it makes the same request upstream and streams the
// answer back, either naively — each SSE event parsed, its JSON decoded
// and encoded again, and written with a flush of its own — or by chunk,
// each upstream read written as it came. It may also burn a fixed amount
// of CPU per event: the stand-in gateway whose cost the tests know.
//
// It is a fixture of the tests (which run it by re-executing their
// binary, Main) and of the benchmark in docs (bench/relay), not a
// gateway to deploy: one upstream, no TLS, no limits beyond the
// server's timeouts.
package sserelay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Modes of Relay.Mode.
const (
	ModeNaive = "naive" // each event parsed, re-encoded and written on its own
	ModeChunk = "chunk" // each upstream read written as it is
)

// Relay relays requests to Upstream.
type Relay struct {
	Upstream string        // host:port of the upstream (sse-latency's server)
	Mode     string        // ModeNaive or ModeChunk
	Burn     time.Duration // CPU burnt per event relayed (thread CPU time), 0: none
	// ExitAfter ends Serve once this many responses are whole (a gateway
	// that goes away during a run); 0: never.
	ExitAfter int
	client    *http.Client
	served    chan struct{} // a response was relayed whole
}

// ServeHTTP relays one request.
func (r *Relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 8<<20))
	if err != nil {
		http.Error(w, "relay: reading the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	up, err := http.NewRequestWithContext(req.Context(), req.Method, "http://"+r.Upstream+req.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, "relay: "+err.Error(), http.StatusBadRequest)
		return
	}
	for k, vs := range req.Header {
		if k != "Connection" && k != "Content-Length" {
			up.Header[k] = vs
		}
	}
	resp, err := r.client.Do(up)
	if err != nil {
		http.Error(w, "relay: upstream: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		if k != "Content-Length" && k != "Transfer-Encoding" && k != "Connection" {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(resp.StatusCode)
	f, _ := w.(http.Flusher)
	flush := func() {
		if f != nil {
			f.Flush()
		}
	}
	flush()
	if r.Mode == ModeChunk {
		r.relayChunks(w, resp.Body, flush)
	} else {
		r.relayEvents(w, resp.Body, flush)
	}
	select {
	case r.served <- struct{}{}:
	default: // Serve no longer counts
	}
}

// relayChunks writes each upstream read as it came, burning r.Burn per
// event it holds.
func (r *Relay) relayChunks(w io.Writer, up io.Reader, flush func()) {
	buf := make([]byte, 32<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 {
			r.burn(bytes.Count(buf[:n], []byte("\n\n")))
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			flush()
		}
		if err != nil {
			return
		}
	}
}

// relayEvents parses each SSE event, decodes and encodes again the JSON
// of its data line (the keys of its object; a payload that is not an
// object passes as it is), and writes it with a flush of its own.
func (r *Relay) relayEvents(w io.Writer, up io.Reader, flush func()) {
	sc := bufio.NewScanner(up)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	sc.Split(splitEvents)
	var out bytes.Buffer
	for sc.Scan() {
		r.burn(1)
		out.Reset()
		for line := range bytes.SplitSeq(sc.Bytes(), []byte("\n")) {
			if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				var obj map[string]json.RawMessage
				if json.Unmarshal(data, &obj) == nil {
					if again, err := json.Marshal(obj); err == nil {
						data = again
					}
				}
				out.WriteString("data: ")
				out.Write(data)
				out.WriteByte('\n')
				continue
			}
			out.Write(line)
			out.WriteByte('\n')
		}
		out.WriteByte('\n')
		if _, err := w.Write(out.Bytes()); err != nil {
			return
		}
		flush()
	}
}

// splitEvents splits an SSE stream (with "\n" line ends, as sse-latency's
// server writes it) into events, without their blank line.
func splitEvents(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.Index(data, []byte("\n\n")); i >= 0 {
		return i + 2, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), bytes.TrimRight(data, "\n"), nil
	}
	return 0, nil, nil
}

// burn spends r.Burn of this thread's CPU time for each of n events.
func (r *Relay) burn(n int) {
	if r.Burn <= 0 || n <= 0 {
		return
	}
	// The thread's clock: the goroutine may not move to another thread
	// meanwhile.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	want := threadCPU() + int64(n)*int64(r.Burn)
	x := uint64(1)
	for threadCPU() < want {
		for range 200 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	runtime.KeepAlive(x) // the loop's work is used
}

// threadCPU is the calling thread's CPU time, in nanoseconds.
func threadCPU() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return ts.Nano()
}

// Serve relays the requests of ln until ctx is done.
func (r *Relay) Serve(ctx context.Context, ln net.Listener) error {
	r.client = &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 1024}}
	r.served = make(chan struct{}, 1024)
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		n := 0
		for r.ExitAfter == 0 || n < r.ExitAfter {
			select {
			case <-ctx.Done():
				srv.Close()
				return
			case <-r.served:
				n++
			}
		}
		// Let the responses in flight end whole (the last chunk goes out
		// after the handler returns), then close.
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Main runs a relay from args (-listen or -listen-fd, -upstream, -mode,
// -burn, -exit-after) until SIGINT or SIGTERM, printing "listening on
// ADDR" once it is. It returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("relay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	upstream := fs.String("upstream", "", "upstream host:port (sse-latency's server)")
	mode := fs.String("mode", ModeNaive, "naive (each event parsed, re-encoded, flushed) or chunk (each upstream read forwarded)")
	burn := fs.Duration("burn", 0, "CPU time to burn per event relayed (e.g. 200us)")
	exitAfter := fs.Int("exit-after", 0, "exit once this many responses are relayed (0: never)")
	listenFD := fs.Int("listen-fd", 0, "serve the listener inherited as this file descriptor instead of -listen")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *upstream == "" || (*mode != ModeNaive && *mode != ModeChunk) {
		fmt.Fprintln(stderr, "relay: -upstream is required; -mode is naive or chunk")
		return 2
	}
	var ln net.Listener
	var err error
	if *listenFD > 0 {
		ln, err = net.FileListener(os.NewFile(uintptr(*listenFD), "listener"))
	} else {
		ln, err = net.Listen("tcp", *listen)
	}
	if err != nil {
		fmt.Fprintf(stderr, "relay: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "listening on %s\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r := &Relay{Upstream: *upstream, Mode: *mode, Burn: *burn, ExitAfter: *exitAfter}
	if err := r.Serve(ctx, ln); err != nil {
		fmt.Fprintf(stderr, "relay: %v\n", err)
		return 1
	}
	return 0
}
