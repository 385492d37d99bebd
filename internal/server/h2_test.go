package server

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/evloop"
)

// h2Client is an HTTP/2-only client: over TLS trusting roots, or, with
// roots nil, in clear text with prior knowledge (h2c).
func h2Client(t *testing.T, roots *x509.CertPool) (*http.Client, string) {
	t.Helper()
	// One connection at most: a Go client that finds its HTTP/2
	// connection busy for an instant (a stream not yet cleaned up, on a
	// busy machine) dials another beside it, and the tests that count the
	// server's connections would count that one; this way a second
	// connection means that the server closed the first.
	tr := &http.Transport{MaxConnsPerHost: 1}
	tr.Protocols = new(http.Protocols)
	scheme := "http"
	if roots != nil {
		scheme = "https"
		tr.TLSClientConfig = &tls.Config{RootCAs: roots}
		tr.Protocols.SetHTTP2(true)
	} else {
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}, scheme
}

// h2Setup is a server with HTTP/2 and a client for it, over TLS or h2c.
type h2Setup struct {
	srv    *Server
	client *http.Client
	base   string // scheme://host:port
	reg    *emission.Registry
}

func newH2Setup(t *testing.T, overTLS bool, cfg Config) h2Setup {
	t.Helper()
	var roots *x509.CertPool
	if overTLS {
		cfg.TLS, roots, _ = selfSigned(t)
	}
	cfg.HTTP2 = true
	cfg.Emissions = emission.New()
	srv := startServer(t, cfg)
	client, scheme := h2Client(t, roots)
	return h2Setup{srv: srv, client: client, base: scheme + "://" + srv.Addr().String(), reg: cfg.Emissions}
}

// post sends body to path and returns the response (HTTP/2 checked) and
// its whole body.
func (h h2Setup) post(t *testing.T, path, body string) (*http.Response, string) {
	t.Helper()
	resp, err := h.client.Post(h.base+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: reading body: %v", path, err)
	}
	if resp.ProtoMajor != 2 {
		t.Fatalf("POST %s answered over %s, want HTTP/2", path, resp.Proto)
	}
	return resp, string(b)
}

// splitEvents cuts an SSE body into its events, each with its "\n\n".
func splitEvents(t *testing.T, body string) []string {
	t.Helper()
	evs := strings.SplitAfter(body, "\n\n")
	if evs[len(evs)-1] != "" {
		t.Fatalf("body %q does not end with a whole event", body)
	}
	return evs[:len(evs)-1]
}

// TestH2Dialects streams every dialect over HTTP/2, on TLS (ALPN h2) and in
// clear text (prior knowledge), and checks the head fields, the whole event
// sequence, and the registry's time of every token.
func TestH2Dialects(t *testing.T) { forEngines(t, testH2Dialects) }

func testH2Dialects(t *testing.T, e evloop.Engine) {
	for _, overTLS := range []bool{true, false} {
		name := map[bool]string{true: "h2", false: "h2c"}[overTLS]
		t.Run(name, func(t *testing.T) {
			h := newH2Setup(t, overTLS, Config{Tokens: 5, DelayMs: 0.1, Engine: e})
			for _, d := range api.Dialects {
				const n = 5
				id := name + "-" + d.String()
				body := fmt.Sprintf(`{"model":"m","stream":true,"pi_id":%q,"pi_tokens":%d,"pi_delay_ms":0.2}`, id, n)
				resp, b := h.post(t, "/gw"+d.Path(), body)
				what := fmt.Sprintf("%s %v", name, d)
				for field, want := range map[string]string{"Content-Type": "text/event-stream",
					"Cache-Control": "no-cache", "X-Accel-Buffering": "no", "Connection": "", "Transfer-Encoding": ""} {
					if got := resp.Header.Get(field); got != want {
						t.Errorf("%s: %s = %q, want %q", what, field, got, want)
					}
				}
				if resp.StatusCode != 200 {
					t.Errorf("%s: status %d, want 200", what, resp.StatusCode)
				}
				ts := checkEvents(t, what, parseEvents(t, splitEvents(t, b)), wantEvents(d, n, false, `"m"`))
				times := h.reg.Take(id)
				if times == nil || times.Len() != n {
					t.Fatalf("%s: registry entry %v, want %d times", what, times, n)
				}
				for k, want := range ts {
					if got := times.At(k); got != want {
						t.Errorf("%s: registry time of token %d = %d, want its pi_ts %d", what, k, got, want)
					}
				}
			}
			if got, want := h.srv.Lateness().N(), int64(5*len(api.Dialects)); got != want {
				t.Errorf("Lateness().N() = %d, want one sample per token (%d)", got, want)
			}
			if got := h.srv.Connections(); got != 1 {
				t.Errorf("Connections() = %d, want the client's one HTTP/2 connection", got)
			}
		})
	}
}

// TestH2Answers checks the non-streaming answers and the errors over
// HTTP/2: the same routing and JSON bodies as HTTP/1.1.
func TestH2Answers(t *testing.T) {
	h := newH2Setup(t, false, Config{Tokens: 3, DelayMs: 0.1})
	tests := []struct {
		method, path, body string
		status             int
		want               string
		allow              string
	}{
		{"POST", "/v1/chat/completions", `{"model":"m","pi_tokens":2}`, 200, `"content":"` + api.Token(0) + api.Token(1) + `"`, ""},
		{"POST", "/v1/messages", `{"max_tokens":10}`, 200, `"type":"message"`, ""},
		{"GET", "/v1/models", "", 200, `"id":"sse-latency-1"`, ""},
		{"GET", "/nope", "", 404, `unknown path /nope`, ""},
		{"GET", "/v1/responses", "", 405, `use POST`, "POST"},
		{"POST", "/v1/models", "{}", 405, `use GET`, "GET"},
		{"POST", "/v1/completions", `{"stream":"yes"}`, 400, `invalid JSON body`, ""},
		{"POST", "/v1/chat/completions", strings.Repeat(" ", MaxBodyBytes+1), 413, `larger than the limit`, ""},
	}
	for _, tt := range tests {
		req, err := http.NewRequest(tt.method, h.base+tt.path, strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := h.client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tt.method, tt.path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		what := tt.method + " " + tt.path
		if resp.ProtoMajor != 2 || resp.StatusCode != tt.status || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %s %d %q, want HTTP/2 %d application/json", what, resp.Proto, resp.StatusCode, resp.Header.Get("Content-Type"), tt.status)
		}
		if !strings.Contains(string(b), tt.want) {
			t.Errorf("%s: body %q lacks %q", what, b, tt.want)
		}
		if got := resp.Header.Get("Allow"); got != tt.allow {
			t.Errorf("%s: Allow %q, want %q", what, got, tt.allow)
		}
		if cl := resp.Header.Get("Content-Length"); cl != strconv.Itoa(len(b)) {
			t.Errorf("%s: Content-Length %q for %d bytes", what, cl, len(b))
		}
	}
}

// TestH2Concurrent runs several streams at once on one HTTP/2 connection:
// all complete, interleaved on the shards' schedule.
func TestH2Concurrent(t *testing.T) {
	for _, overTLS := range []bool{true, false} {
		t.Run(map[bool]string{true: "h2", false: "h2c"}[overTLS], func(t *testing.T) {
			h := newH2Setup(t, overTLS, Config{Tokens: 5, DelayMs: 0.1})
			h.post(t, "/v1/models", "") // one connection, established before the burst
			const streams, n = 8, 20
			var wg sync.WaitGroup
			bodies := make([]string, streams)
			for i := range streams {
				wg.Go(func() {
					resp, err := h.client.Post(h.base+"/v1/chat/completions", "application/json",
						strings.NewReader(fmt.Sprintf(`{"stream":true,"pi_tokens":%d,"pi_delay_ms":1,"pi_id":"c%d"}`, n, i)))
					if err != nil {
						t.Errorf("stream %d: %v", i, err)
						return
					}
					defer resp.Body.Close()
					b, err := io.ReadAll(resp.Body)
					if err != nil {
						t.Errorf("stream %d: reading: %v", i, err)
					}
					bodies[i] = string(b)
				})
			}
			wg.Wait()
			for i, b := range bodies {
				checkEvents(t, fmt.Sprint("stream ", i), parseEvents(t, splitEvents(t, b)), wantEvents(api.Chat, n, false, `"sse-latency-1"`))
			}
			if got := h.srv.Connections(); got != 1 {
				t.Errorf("Connections() = %d, want 1: the streams should share the connection", got)
			}
			if got := h.srv.Requests(); got != streams+1 {
				t.Errorf("Requests() = %d, want %d", got, streams+1)
			}
		})
	}
}

// TestH2DataFrames reads a stream frame by frame with an http2.Framer over
// h2c: every token's event must be exactly one DATA frame, in every dialect.
func TestH2DataFrames(t *testing.T) {
	srv := startServer(t, Config{Tokens: 5, DelayMs: 0.1, HTTP2: true})
	for _, d := range api.Dialects {
		const n = 6
		frames := h2FramesOf(t, srv, d.Path(), fmt.Sprintf(`{"stream":true,"pi_tokens":%d,"pi_delay_ms":0.5}`, n))
		var events []string
		var frameOf []int
		for i, f := range frames {
			for _, ev := range splitEvents(t, f) {
				events = append(events, ev)
				frameOf = append(frameOf, i)
			}
		}
		want := wantEvents(d, n, false, `"sse-latency-1"`)
		checkEvents(t, d.String(), parseEvents(t, events), want)
		tokens := 0
		for i, w := range want {
			if w.token < 0 || i >= len(events) {
				continue
			}
			tokens++
			if f := frames[frameOf[i]]; f != events[i] {
				t.Errorf("%v: token %d travelled in a DATA frame of %d bytes holding %d events, want its event alone",
					d, w.token, len(f), strings.Count(f, "\n\n"))
			}
		}
		if tokens != n {
			t.Errorf("%v: %d token events, want %d", d, tokens, n)
		}
	}
}

// h2FramesOf posts body to path on a new h2c connection driven by hand and
// returns the payload of each non-empty DATA frame of the response.
func h2FramesOf(t *testing.T, srv *Server, path, body string) []string {
	t.Helper()
	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", "x"}, {":path", path},
		{"content-type", "application/json"}, {"content-length", strconv.Itoa(len(body))}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	if err := fr.WriteData(1, true, []byte(body)); err != nil {
		t.Fatal(err)
	}
	var frames []string
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading frames: %v (after %d DATA frames)", err, len(frames))
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				fr.WritePing(true, f.Data)
			}
		case *http2.MetaHeadersFrame:
			if s := f.PseudoValue("status"); s != "200" {
				t.Fatalf("%s: status %s, want 200", path, s)
			}
		case *http2.DataFrame:
			if f.StreamID == 1 && len(f.Data()) > 0 {
				frames = append(frames, string(f.Data()))
			}
			if f.StreamEnded() {
				return frames
			}
		case *http2.RSTStreamFrame:
			t.Fatalf("stream reset: %v", f.ErrCode)
		case *http2.GoAwayFrame:
			t.Fatalf("GOAWAY: %v", f.ErrCode)
		}
	}
}

// TestShutdownWithH2 checks that Serve returns promptly when cancelled with
// an HTTP/2 stream in progress (waiting for a long think time), an idle
// HTTP/2 connection and an idle keep-alive HTTP/1.1 connection over TLS,
// and that their clients see the ends.
func TestShutdownWithH2(t *testing.T) {
	tlsCfg, roots, _ := selfSigned(t)
	srv, stop := runServer(t, Config{Tokens: 5, DelayMs: 0.1, HTTP2: true, TLS: tlsCfg, IdleTimeout: time.Hour})

	base := "https://" + srv.Addr().String()
	busy, _ := h2Client(t, roots)
	resp, err := busy.Post(base+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"stream":true,"pi_think_ms":60000}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Fatalf("answered over %s, want HTTP/2", resp.Proto)
	}
	idle, _ := h2Client(t, roots)
	if r, err := idle.Get(base + "/v1/models"); err != nil {
		t.Fatal(err)
	} else {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	c, err := tls.Dial("tcp", srv.Addr().String(), &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	r := bufio.NewReader(c)
	st := streamStep(api.Chat, 1, "k")
	send(t, c, st.req)
	checkStep(t, r, "TLS keep-alive stream", st, true)

	stop("with HTTP/2 and keep-alive connections open")
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Error("the HTTP/2 stream waiting for its think time ended cleanly, want an error")
	}
	expectClosed(t, r, "idle TLS keep-alive connection")
}
