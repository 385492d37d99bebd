package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// The gateways of this file do one thing each to the stream, as AI
// gateways are reported to: hold the response until the first visible
// token, hold a tool call's arguments until the call is complete, drop the
// reasoning, inject heartbeats of their own, or drop the server's. Each is
// an httputil.ReverseProxy that flushes every write, in front of the
// server the measurement starts: it learns the server's address from the
// line announcing it (-L 127.0.0.1:0), so no port is chosen twice.

// announced passes what it is written on to w, and keeps the address of
// the "listening on" line.
type announced struct {
	w    io.Writer
	mu   sync.Mutex
	addr atomic.Pointer[string]
}

var listeningRE = regexp.MustCompile(`listening on (\S+)`)

func (a *announced) Write(p []byte) (int, error) {
	if m := listeningRE.FindSubmatch(p); m != nil && a.addr.Load() == nil {
		s := string(m[1])
		a.addr.Store(&s)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.w.Write(p)
}

// sseEvent is one SSE event: its name ("" for none) and data; comment is
// a comment line's text when the event is a lone comment.
type sseEvent struct {
	name, data, comment string
	isComment           bool
}

func (e sseEvent) String() string {
	switch {
	case e.isComment:
		return ":" + e.comment + "\n\n"
	case e.name != "":
		return "event: " + e.name + "\ndata: " + e.data + "\n\n"
	}
	return "data: " + e.data + "\n\n"
}

// parseEvent reads one event's lines (without the blank line ending it).
func parseEvent(raw string) sseEvent {
	var ev sseEvent
	for _, line := range strings.Split(raw, "\n") {
		switch {
		case strings.HasPrefix(line, "event: "):
			ev.name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[len("data: "):]
		case strings.HasPrefix(line, ":"):
			ev.comment, ev.isComment = line[1:], true
		}
	}
	return ev
}

// eventFilter is a response body whose events pass through filter, which
// returns what to send on for each (done: the upstream ended).
type eventFilter struct {
	rc     io.ReadCloser
	filter func(ev sseEvent, done bool) []sseEvent
	buf    []byte
	out    []byte
	ended  bool
}

func (f *eventFilter) Read(p []byte) (int, error) {
	for len(f.out) == 0 {
		if f.ended {
			return 0, io.EOF
		}
		var tmp [4096]byte
		n, err := f.rc.Read(tmp[:])
		f.buf = append(f.buf, tmp[:n]...)
		for {
			i := bytes.Index(f.buf, []byte("\n\n"))
			if i < 0 {
				break
			}
			for _, o := range f.filter(parseEvent(string(f.buf[:i])), false) {
				f.out = append(f.out, o.String()...)
			}
			f.buf = f.buf[i+2:]
		}
		if err != nil {
			for _, o := range f.filter(sseEvent{}, true) {
				f.out = append(f.out, o.String()...)
			}
			f.ended = true
		}
	}
	n := copy(p, f.out)
	f.out = f.out[n:]
	return n, nil
}

func (f *eventFilter) Close() error { return f.rc.Close() }

// pingInjector is a response body that sends a heartbeat of its own
// after every interval without upstream bytes.
type pingInjector struct {
	rc       io.ReadCloser
	ping     string
	interval time.Duration
	chunks   chan []byte
	err      error // after chunks is closed
	pending  []byte
}

func newPingInjector(rc io.ReadCloser, ping string, interval time.Duration) *pingInjector {
	p := &pingInjector{rc: rc, ping: ping, interval: interval, chunks: make(chan []byte, 16)}
	go func() {
		for {
			b := make([]byte, 4096)
			n, err := rc.Read(b)
			if n > 0 {
				p.chunks <- b[:n]
			}
			if err != nil {
				p.err = err
				close(p.chunks)
				return
			}
		}
	}()
	return p
}

func (p *pingInjector) Read(b []byte) (int, error) {
	if len(p.pending) == 0 {
		timer := time.NewTimer(p.interval)
		select {
		case c, ok := <-p.chunks:
			timer.Stop()
			if !ok {
				return 0, p.err
			}
			p.pending = c
		case <-timer.C:
			p.pending = []byte(p.ping)
		}
	}
	n := copy(b, p.pending)
	p.pending = p.pending[n:]
	return n, nil
}

func (p *pingInjector) Close() error {
	err := p.rc.Close()
	for range p.chunks { // let the reading goroutine end
	}
	return err
}

// gatewayTo starts a gateway in front of the server a announces, whose
// responses go through modify (nil: passed on as they come).
func gatewayTo(t *testing.T, a *announced, modify func(r *http.Response) error) string {
	t.Helper()
	p := &httputil.ReverseProxy{
		FlushInterval: -1,
		Rewrite: func(pr *httputil.ProxyRequest) {
			addr := a.addr.Load()
			if addr == nil {
				t.Error("the gateway got a request before the server announced its address")
				return
			}
			u, _ := url.Parse("http://" + *addr)
			pr.SetURL(u)
		},
		ModifyResponse: modify,
	}
	gw := httptest.NewServer(p)
	t.Cleanup(gw.Close)
	return gw.Listener.Addr().String()
}

// holdingHead holds the response — head and body — until the first
// visible text arrives, then sends on everything at once.
func holdingHead(d api.Dialect) func(r *http.Response) error {
	return func(r *http.Response) error {
		var held bytes.Buffer
		f := &eventFilter{rc: r.Body, filter: func(ev sseEvent, done bool) []sseEvent {
			if done {
				return nil
			}
			return []sseEvent{ev}
		}}
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			held.Write(buf[:n])
			if visible(d, held.String()) || err != nil {
				break
			}
		}
		r.Body = readCloser{io.MultiReader(bytes.NewReader(held.Bytes()), f), f}
		return nil
	}
}

// visible reports whether the SSE text s holds an event with visible text.
func visible(d api.Dialect, s string) bool {
	for _, raw := range strings.Split(s, "\n\n") {
		ev := parseEvent(raw)
		if api.ScanEvent(d, []byte(ev.name), []byte(ev.data)).Has(api.HasContent) {
			return true
		}
	}
	return false
}

type readCloser struct {
	io.Reader
	io.Closer
}

// filtering passes the events through filter.
func filtering(filter func(d api.Dialect) func(ev sseEvent, done bool) []sseEvent, d api.Dialect) func(r *http.Response) error {
	return func(r *http.Response) error {
		r.Body = &eventFilter{rc: r.Body, filter: filter(d)}
		return nil
	}
}

// holdingArguments holds the tool call's argument deltas and sends them
// on, each as it came, with the next other event.
func holdingArguments(d api.Dialect) func(ev sseEvent, done bool) []sseEvent {
	var held []sseEvent
	return func(ev sseEvent, done bool) []sseEvent {
		if !done && api.ScanEvent(d, []byte(ev.name), []byte(ev.data)).Has(api.HasArguments) {
			held = append(held, ev)
			return nil
		}
		out := append(held, ev)
		held = nil
		if done {
			out = out[:len(out)-1]
		}
		return out
	}
}

// droppingReasoning drops the reasoning deltas (and the other events of a
// reasoning item or block stay: the client ignores them).
func droppingReasoning(d api.Dialect) func(ev sseEvent, done bool) []sseEvent {
	return func(ev sseEvent, done bool) []sseEvent {
		if done || api.ScanEvent(d, []byte(ev.name), []byte(ev.data)).Has(api.HasReasoning) {
			return nil
		}
		return []sseEvent{ev}
	}
}

// reasoningAsContent moves Chat's reasoning deltas into the content, as
// gateways that merge reasoning into the text do.
func reasoningAsContent(api.Dialect) func(ev sseEvent, done bool) []sseEvent {
	return func(ev sseEvent, done bool) []sseEvent {
		if done {
			return nil
		}
		ev.data = strings.Replace(ev.data, `"reasoning_content":`, `"content":`, 1)
		return []sseEvent{ev}
	}
}

// droppingComments drops SSE comments: the server's heartbeats.
func droppingComments(api.Dialect) func(ev sseEvent, done bool) []sseEvent {
	return func(ev sseEvent, done bool) []sseEvent {
		if done || ev.isComment {
			return nil
		}
		return []sseEvent{ev}
	}
}

// injectingPings sends a heartbeat of its own after every 20 ms of
// silence: a comment, or for Anthropic a ping event.
func injectingPings(d api.Dialect) func(r *http.Response) error {
	ping := ": gateway keep-alive\n\n"
	if d == api.Anthropic {
		ping = "event: ping\ndata: {\"type\": \"ping\"}\n\n"
	}
	return func(r *http.Response) error {
		r.Body = newPingInjector(r.Body, ping, 20*time.Millisecond)
		return nil
	}
}

// TestGatewayFindings measures through each gateway and checks that the
// run's verdict reports what it did, with its evidence, and nothing else;
// a gateway that passes everything on has no finding at all.
func TestGatewayFindings(t *testing.T) {
	const requests = 3
	tests := []struct {
		name   string
		d      api.Dialect
		gw     func(d api.Dialect) func(r *http.Response) error
		args   []string
		want   []string // the findings' names
		failed bool     // the gateway's requests fail (integrity)
		check  func(t *testing.T, f verdict.Finding)
	}{
		{"passing everything", api.Chat, func(api.Dialect) func(*http.Response) error { return nil },
			[]string{"--reasoning", "10", "--tool-call", "20", "-T", "200", "--heartbeat", "20"}, nil, false, nil},
		{"holding the head", api.Chat, holdingHead, []string{"--reasoning", "10", "-T", "300"},
			[]string{verdict.FindingHeldStart}, false, func(t *testing.T, f verdict.Finding) {
				// The server sent the head at once and thought 300 ms: the
				// head came with the first visible token, after it.
				if f.Held != "head" || !f.WithText || f.Requests != requests || f.ThinkMs < 250 || f.ReleasedMs < 0.9*f.ThinkMs {
					t.Errorf("%+v: want the head held in all %d requests, released with the text after the ~300 ms think", f, requests)
				}
			}},
		{"holding tool-call arguments", api.Responses, func(d api.Dialect) func(*http.Response) error { return filtering(holdingArguments, d) },
			[]string{"--tool-call", "20", "-d", "5"}, []string{verdict.FindingArgumentsHeld}, false, func(t *testing.T, f verdict.Finding) {
				// 20 deltas emitted 5 ms apart spread over ~95 ms (less when
				// a busy server writes late ones together). A client
				// descheduled between the Reads of the held deltas may
				// spread one call's arrivals: the finding needs half.
				if f.Requests < 2 || f.EmissionSpreadMs < 30 || f.ArrivalSpreadMs >= 0.25*f.EmissionSpreadMs {
					t.Errorf("%+v: want at least 2 of %d calls' ~95 ms of deltas arriving together", f, requests)
				}
			}},
		{"dropping reasoning", api.Anthropic, func(d api.Dialect) func(*http.Response) error { return filtering(droppingReasoning, d) },
			[]string{"--reasoning", "10"}, []string{verdict.FindingReasoningDropped}, false, func(t *testing.T, f verdict.Finding) {
				if f.Requests != requests || f.Of != requests {
					t.Errorf("%+v: want %d of %d", f, requests, requests)
				}
			}},
		{"turning reasoning into text", api.Chat, func(d api.Dialect) func(*http.Response) error { return filtering(reasoningAsContent, d) },
			[]string{"--reasoning", "10"}, []string{verdict.FindingReasoningConverted}, true, func(t *testing.T, f verdict.Finding) {
				if f.Requests != requests || f.Of != requests {
					t.Errorf("%+v: want %d of %d", f, requests, requests)
				}
			}},
		{"injecting heartbeats", api.Chat, injectingPings, []string{"-T", "200"}, []string{verdict.FindingHeartbeatsInjected},
			false, func(t *testing.T, f verdict.Finding) {
				// ~9 in 200 ms of silence at 20 ms: at least 2 each.
				if f.Requests != requests || f.Sent != 0 || f.Seen < 2*requests || f.Heartbeats != f.Seen {
					t.Errorf("%+v: want heartbeats in all %d requests, none of them the server's", f, requests)
				}
			}},
		{"injecting pings", api.Anthropic, injectingPings, []string{"-T", "200"}, []string{verdict.FindingHeartbeatsInjected},
			false, func(t *testing.T, f verdict.Finding) {
				// The server's only ping is the one after the first block's start.
				if f.Requests != requests || f.Sent != requests || f.Seen < 3*requests {
					t.Errorf("%+v: want pings injected in all %d requests, beside the server's %d", f, requests, requests)
				}
			}},
		{"swallowing heartbeats", api.Chat, func(d api.Dialect) func(*http.Response) error { return filtering(droppingComments, d) },
			[]string{"-T", "200", "--heartbeat", "20"}, []string{verdict.FindingHeartbeatsSwallowed}, false, func(t *testing.T, f verdict.Finding) {
				if f.Requests != requests || f.Seen != 0 || f.Sent < requests || f.Heartbeats != f.Sent {
					t.Errorf("%+v: want every heartbeat of the %d requests swallowed", f, requests)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			a := &announced{w: &stderr}
			gw := gatewayTo(t, a, tt.gw(tt.d))
			args := append([]string{"-L", "127.0.0.1:0", "-t", gw, "--api", tt.d.String(), "-r", fmt.Sprint(requests), "-c", fmt.Sprint(requests),
				"-n", "20", "-d", "2", "-q"}, tt.args...)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			code, sum := Measure(ctx, args, &stdout, a)
			what := fmt.Sprintf("sse-latency %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), stdout.String(), stderr.String())
			if sum == nil || sum.Verdict == nil || sum.Run == nil {
				t.Fatalf("no verdict (exit %d)\n%s", code, what)
			}
			if want := map[bool]int{false: ExitOK, true: ExitFailure}[tt.failed]; code != want || sum.Loop.Failed != 0 {
				t.Fatalf("exit %d, want %d; %d calibration requests failed\n%s", code, want, sum.Loop.Failed, what)
			}
			var got []string
			for _, f := range sum.Verdict.Findings {
				got = append(got, f.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("findings %v, want %v\n%s", got, tt.want, what)
			}
			if tt.check != nil {
				tt.check(t, sum.Verdict.Findings[0])
			}
			for _, name := range tt.want {
				label := strings.ReplaceAll(strings.ReplaceAll(name, "_", " "), "held start", "held stream start")
				if !strings.Contains(stdout.String(), "\n"+label) {
					t.Errorf("the verdict block has no %q line\n%s", label, what)
				}
			}
			if loop := sum.Run.Loop(); loop == nil || loop.Timeline == nil || len(summaryFindings(loop)) != 0 {
				t.Errorf("the calibration batch, straight to the server, has findings: %v", summaryFindings(loop))
			}
		})
	}
}

// summaryFindings returns the findings a batch's timeline would give.
func summaryFindings(b *summary.Batch) []verdict.Finding {
	if b == nil {
		return nil
	}
	return summary.Findings(b.Timeline)
}
