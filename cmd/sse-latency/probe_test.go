package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestProbeSIGTERM runs `sse-latency probe` as a process through an
// in-process gateway and sends it SIGTERM while the requests of its second
// round are in the gateway: the round runs to its end, every request ok,
// no third round starts, and the process exits 0.
func TestProbeSIGTERM(t *testing.T) {
	const r = 3
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		mu    sync.Mutex
		up    *url.URL
		ready = make(chan struct{})
		once  sync.Once
		n     atomic.Int64
		p     *proc
	)
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			mu.Lock()
			defer mu.Unlock()
			pr.SetURL(up)
		},
		FlushInterval: -1,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	signalled := make(chan struct{})
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		<-ready
		if n.Add(1) == r+1 { // the first request of round 2
			p.cmd.Process.Signal(syscall.SIGTERM)
			close(signalled)
		}
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		rp.ServeHTTP(w, req)
	})}
	go hs.Serve(ln)
	defer hs.Close()

	p = &proc{cmd: exec.CommandContext(ctx, binary, "probe", "-L", "127.0.0.1:0", "-t", ln.Addr().String(), "--metrics", "127.0.0.1:0",
		"--every", "10ms", "-r", "3", "-c", "1", "-n", "20", "-d", "1"), seen: make(chan struct{}), done: make(chan struct{})}
	p.startReading(t, "probe: stopped", []func(string){func(line string) {
		if m := listeningRE.FindStringSubmatch(line); m != nil {
			once.Do(func() {
				mu.Lock()
				up = &url.URL{Scheme: "http", Host: m[1]}
				mu.Unlock()
				close(ready)
			})
		}
	}})
	code := p.wait(t, time.Minute)
	select {
	case <-signalled:
	default:
		t.Fatalf("the probe ended (%d) before its second round:\n%s", code, p.stderrText())
	}
	out := p.stderrText()
	if code != 0 {
		t.Errorf("exit status %d after SIGTERM, want 0\n%s", code, out)
	}
	for _, want := range []string{"probe: round 2: gateway 3/3 ok", "probe: stopped after 2 rounds"} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "probe: round 3") {
		t.Errorf("a round started after SIGTERM:\n%s", out)
	}
}

// listeningRE finds where a run's server listens in its stderr.
var listeningRE = regexp.MustCompile(`listening on (\S+) `)
