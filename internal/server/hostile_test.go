package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/testutil"
	"github.com/sse-latency/sse-latency/internal/wire"
)

// hostileSeed makes the generated cases reproducible.
const hostileSeed = 20260501

// How each hostile connection is made.
const (
	toPlain   = iota // raw bytes to the plain listener (HTTP/1.x and h2c)
	toTLSRaw         // raw bytes to the TLS listener: no TLS at all, or a broken handshake
	overTLS          // a real TLS session to the TLS listener, then the bytes
	toControl        // raw bytes to the control listener (package control, on the same registry)
)

// hostileCase is one connection of TestHostile: bytes sent in one write,
// then either a half-close (the server sees the end of the request at
// once) or, with hold, nothing more until the client's deadline.
type hostileCase struct {
	name string
	to   int
	data []byte
	hold bool
}

// hostileDeadline bounds each hostile connection, from dial to close.
const hostileDeadline = 250 * time.Millisecond

// TestHostile sends thousands of malformed, truncated and oversized
// requests — generated from a fixed seed, hand-written, and every file of
// the fuzz corpora — to a server running in this process (a panic in any
// of its goroutines fails the test binary; one recovered by recoverPanic
// is counted and fails the test), then checks that it still serves normal
// streams on every transport, that every error it answered was an
// OpenAI-style JSON error, and that its goroutines come back to their
// baseline.
func TestHostile(t *testing.T) {
	tlsCfg, roots, _ := selfSigned(t)
	cfg := Config{
		Tokens: 3, DelayMs: 0.1, HTTP2: true, Emissions: emission.New(),
		MaxTokens: 10_000, MaxDelay: 200 * time.Millisecond, MaxStreams: 500,
		ReadHeaderTimeout: 150 * time.Millisecond, ReadTimeout: 300 * time.Millisecond,
		IdleTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond,
	}
	plain := startServer(t, cfg)
	cfg.TLS = tlsCfg
	secure := startServer(t, cfg)
	ctl := startControl(t, cfg.Emissions)
	// The normal streams must reach the servers within their head timeout
	// of 150 ms: on a machine too busy for that the servers rightly close
	// them, and the check cannot be made (tooBusy says why).
	tooBusy := normalStreams(t, plain, secure, roots, cfg.ReadHeaderTimeout) // warm-up: every code path once
	ctl.normalUse(t)
	baseline := runtime.NumGoroutine()

	rng := rand.New(rand.NewPCG(hostileSeed, 0))
	cases := append(hostileCases(t, rng), controlCases(rng)...)
	start := time.Now()
	statuses := runHostile(t, cases, hostileAddrs{plain.Addr().String(), secure.Addr().String(), ctl.addr}, roots)
	var summary []string
	for _, k := range slices.Sorted(maps.Keys(statuses)) {
		summary = append(summary, fmt.Sprintf("%s×%d", k, statuses[k]))
	}
	t.Logf("%d hostile connections (seed %d) in %v: %s", len(cases), hostileSeed,
		time.Since(start).Round(time.Millisecond), strings.Join(summary, " "))
	if len(cases) < 3000 {
		t.Errorf("only %d hostile cases, want at least 3000", len(cases))
	}

	if why := normalStreams(t, plain, secure, roots, cfg.ReadHeaderTimeout); why != "" {
		tooBusy = why
	}
	ctl.normalUse(t)
	for name, srv := range map[string]*Server{"plain": plain, "TLS": secure} {
		if p := srv.Panics(); p != 0 {
			t.Errorf("%s server recovered %d panics (see the log with -v)", name, p)
		}
	}
	if p := ctl.panics.Load(); p != 0 {
		t.Errorf("the control endpoint's handler panicked %d times (see the log)", p)
	}
	// Lingering closes, dropped streams and waits end within a second.
	if !testutil.Poll(func() bool {
		return runtime.NumGoroutine() <= baseline+5 && plain.ActiveStreams()+secure.ActiveStreams() == 0
	}, 10*time.Second) {
		var b bytes.Buffer
		pprof.Lookup("goroutine").WriteTo(&b, 1)
		t.Fatalf("after 10 s, %d goroutines (baseline %d) and %d+%d active streams:\n%s",
			runtime.NumGoroutine(), baseline, plain.ActiveStreams(), secure.ActiveStreams(), b.String())
	}
	if tooBusy != "" {
		t.Skipf("the normal streams could not be checked: %s (the other checks ran)", tooBusy)
	}
}

// normalStreams checks that both servers stream normally: HTTP/1.1 in clear
// and over TLS, HTTP/2 in clear (h2c) and over TLS. A request that fails is
// the servers' fault unless it went out headTimeout or more after its
// client began to dial: then a server that closed the connection, silent
// for that long, was right, and the machine was too busy for the check —
// normalStreams returns why, skipping the transports left ("" when every
// one was checked).
func normalStreams(t *testing.T, plain, secure *Server, roots *x509.CertPool, headTimeout time.Duration) (tooBusy string) {
	t.Helper()
	const n = 5
	body := fmt.Sprintf(`{"stream":true,"pi_tokens":%d,"pi_delay_ms":0.2}`, n)
	want := wantEvents(api.Chat, n, false, `"sse-latency-1"`)
	// failed judges the error of a request whose client began to dial at
	// start and wrote the request at sent (zero: it did not).
	failed := func(what string, start, sent time.Time, err error) string {
		if sent.IsZero() {
			sent = time.Now()
		}
		if d := sent.Sub(start); d >= headTimeout {
			return fmt.Sprintf("%s: %v, the request %v after the dial began, the servers' head timeout %v", what, err, d.Round(time.Millisecond), headTimeout)
		}
		t.Fatalf("%s after the hostile requests: %v", what, err)
		return ""
	}

	// HTTP/1.1, in clear and over TLS.
	for _, tc := range []struct {
		name string
		srv  *Server
		dial func(addr string) (net.Conn, error)
	}{
		{"HTTP/1.1", plain, func(addr string) (net.Conn, error) { return net.Dial("tcp", addr) }},
		{"HTTP/1.1 over TLS", secure, func(addr string) (net.Conn, error) {
			return tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}})
		}},
	} {
		start := time.Now()
		c, err := tc.dial(tc.srv.Addr().String())
		if err != nil {
			return failed(tc.name, start, time.Time{}, err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		var sent time.Time
		if _, err = io.WriteString(c, postRequest("/v1/chat/completions", body)); err == nil {
			sent = time.Now()
		}
		var resp string
		if err == nil {
			resp, err = readResponse(bufio.NewReader(c))
		}
		if err != nil {
			return failed(tc.name, start, sent, err)
		}
		h, b := splitResponse(t, resp)
		if h != streamHead {
			t.Fatalf("%s after the hostile requests: head %q", tc.name, h)
		}
		checkEvents(t, tc.name+" after the hostile requests", parseEvents(t, dechunk(t, b)), want)
	}

	// HTTP/2, in clear (h2c) and over TLS.
	for _, tc := range []struct {
		name  string
		srv   *Server
		roots *x509.CertPool
	}{{"h2c", plain, nil}, {"h2", secure, roots}} {
		client, scheme := h2Client(t, tc.roots)
		var wrote atomic.Int64 // when the transport wrote the request (UnixNano), 0: not
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			WroteRequest: func(i httptrace.WroteRequestInfo) {
				if i.Err == nil {
					wrote.Store(time.Now().UnixNano())
				}
			}})
		req, _ := http.NewRequestWithContext(ctx, "POST", scheme+"://"+tc.srv.Addr().String()+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		resp, err := client.Do(req)
		var got []byte
		if err == nil {
			got, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		client.CloseIdleConnections()
		if err != nil {
			var sent time.Time
			if ns := wrote.Load(); ns != 0 {
				sent = time.Unix(0, ns)
			}
			return failed(tc.name, start, sent, err)
		}
		if resp.ProtoMajor != 2 {
			t.Fatalf("%s after the hostile requests: answered over %s", tc.name, resp.Proto)
		}
		checkEvents(t, tc.name+" after the hostile requests", parseEvents(t, splitEvents(t, string(got))), want)
	}
	return ""
}

// hostileAddrs are the listeners the cases go to.
type hostileAddrs struct{ plain, tls, control string }

// runHostile sends every case from a few workers and returns how many
// answers had each status ("none" when the server sent no HTTP/1.x head).
// An HTTP/1.x error answer with a length must carry an OpenAI-style JSON
// error (net/http's own answers to the control listener's malformed
// requests are plain text without one).
func runHostile(t *testing.T, cases []hostileCase, addrs hostileAddrs, roots *x509.CertPool) map[string]int {
	var mu sync.Mutex
	statuses := map[string]int{}
	work := make(chan hostileCase)
	var wg sync.WaitGroup
	for range 24 {
		wg.Go(func() {
			for hc := range work {
				resp := sendHostile(hc, addrs, roots)
				status := "none"
				if head, n, err := wire.ParseResponseHead(resp); err == nil && n > 0 {
					status = strconv.Itoa(head.StatusCode)
					if head.StatusCode >= 400 && head.ContentLength >= 0 && int64(len(resp)-n) >= head.ContentLength {
						var e apiError
						body := resp[n : n+int(head.ContentLength)]
						if err := json.Unmarshal(body, &e); err != nil || e.Error.Message == "" || e.Error.Code == "" {
							t.Errorf("%s: %d answer with body %q, want an OpenAI-style JSON error", hc.name, head.StatusCode, body)
						}
					}
				}
				mu.Lock()
				statuses[status]++
				mu.Unlock()
			}
		})
	}
	for _, hc := range cases {
		work <- hc
	}
	close(work)
	wg.Wait()
	return statuses
}

// sendHostile makes one hostile connection and returns the first bytes the
// server sent back (at most 64 KiB are kept; the rest is read and dropped).
// Network errors are expected and ignored.
func sendHostile(hc hostileCase, addrs hostileAddrs, roots *x509.CertPool) []byte {
	addr := addrs.plain
	switch hc.to {
	case toTLSRaw, overTLS:
		addr = addrs.tls
	case toControl:
		addr = addrs.control
	}
	raw, err := net.DialTimeout("tcp", addr, hostileDeadline)
	if err != nil {
		return nil
	}
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(hostileDeadline))
	c := raw
	if hc.to == overTLS {
		tc := tls.Client(raw, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}})
		if tc.Handshake() != nil {
			return nil
		}
		c = tc
	}
	c.Write(hc.data)
	if !hc.hold {
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
	}
	var resp bytes.Buffer
	io.Copy(&resp, io.LimitReader(c, 64<<10))
	io.Copy(io.Discard, c)
	return resp.Bytes()
}

// hostileCases generates the cases: each group is listed with what it
// aims at.
func hostileCases(t *testing.T, rng *rand.Rand) []hostileCase {
	var cases []hostileCase
	add := func(name string, to int, data string, hold bool) {
		cases = append(cases, hostileCase{name: name, to: to, data: []byte(data), hold: hold})
	}
	valid := postRequest("/v1/chat/completions",
		`{"model":"m","stream":true,"pi_id":"hostile-1","pi_tokens":3,"messages":[{"role":"user","content":"hi [sse-latency tokens=2]"}]}`)
	keepAlive := kaRequest("/v1/responses", `{"stream":true,"pi_tokens":2}`)
	chunked := "POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"

	// A valid request truncated at every length, half-closed and held open
	// (the server's head and body timeouts, or the client's close, end it).
	for i := range len(valid) {
		add(fmt.Sprintf("valid request truncated to %d bytes", i), toPlain, valid[:i], false)
		add(fmt.Sprintf("valid request truncated to %d bytes, held", i), toPlain, valid[:i], true)
	}
	// Random bytes, and random mutations of a valid request (a byte changed,
	// dropped, inserted or a span duplicated, one to eight times).
	for i := range 800 {
		b := make([]byte, 1+rng.IntN(512))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		add(fmt.Sprintf("random bytes %d", i), toPlain, string(b), i%20 == 0)
	}
	for i := range 900 {
		add(fmt.Sprintf("mutated request %d", i), toPlain, mutate(rng, valid), i%20 == 0)
	}
	for i := range 100 {
		add(fmt.Sprintf("mutated keep-alive pipeline %d", i), toPlain, mutate(rng, keepAlive+keepAlive+valid), false)
	}

	// Oversized heads and bodies, and bad framing.
	for _, tc := range []struct{ name, data string }{
		{"70 KB field", "GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 70_000) + "\r\n\r\n"},
		{"70 KB request line", "GET /" + strings.Repeat("a", 70_000) + " HTTP/1.1\r\n\r\n"},
		{"64 KiB of fields, no end", "GET / HTTP/1.1\r\n" + strings.Repeat("A: b\r\n", (64<<10)/6+1)},
		{"1 MB of newlines", strings.Repeat("\r\n", 1<<19)},
		{"1 MB head", "POST /v1/chat/completions HTTP/1.1\r\n" + strings.Repeat("X-Y: zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz\r\n", 1<<20/38)},
		{"body over 1 MiB declared", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1048577\r\n\r\n{"},
		{"body of 2^63-1 declared", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 9223372036854775807\r\n\r\n"},
		{"Content-Length overflow", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n"},
		{"negative Content-Length", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n"},
		{"conflicting Content-Length", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}"},
		{"Content-Length and chunked", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"},
		{"body of 1.5 MB sent", postRequest("/v1/chat/completions", `{"x":"`+strings.Repeat("y", 1_500_000)+`"}`)},
		{"chunked size overflow", chunked + "fffffffffffffffffff\r\n"},
		{"chunked size too large", chunked + "40000001\r\n"},
		{"chunked size line of 5000 bytes", chunked + "1;" + strings.Repeat("e", 5000) + "\r\n"},
		{"chunked data without CRLF", chunked + "2\r\n{}XX0\r\n\r\n"},
		{"chunked bare CR", chunked + "2\r{}\r\n0\r\n\r\n"},
		{"chunked trailer of 70 KB", chunked + "2\r\n{}\r\n0\r\nX: " + strings.Repeat("t", 70_000) + "\r\n\r\n"},
		{"chunked 1.5 MB", chunked + strings.Repeat("10000\r\n"+strings.Repeat(" ", 1<<16)+"\r\n", 24) + "0\r\n\r\n"},
		{"HTTP/0.9", "GET /\r\n\r\n"},
		{"HTTP/2.0 request line", "GET / HTTP/2.0\r\n\r\n"},
		{"HTTP/1.1 without Host", "GET /v1/models HTTP/1.1\r\n\r\n"},
		{"two Hosts", "GET /v1/models HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"},
		{"folded field", "GET /v1/models HTTP/1.1\r\nHost: a\r\n b\r\n\r\n"},
		{"NUL in a field", "GET /v1/models HTTP/1.1\r\nHost: a\x00b\r\n\r\n"},
		{"Expect 100-continue", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 10\r\n\r\n"},
		{"CONNECT", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"},
		{"OPTIONS *", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"absolute URI", "POST http://x/v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"},
		{"Upgrade h2c", "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n"},
		{"100 pipelined requests", strings.Repeat("GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n", 100)},
		{"pipelined garbage", keepAlive + "\x00\x01\x02garbage\r\n\r\n"},
		{"HEAD of a stream", "HEAD /v1/chat/completions HTTP/1.1\r\nHost: x\r\n\r\n"},
	} {
		add(tc.name, toPlain, tc.data, false)
		add(tc.name+", held", toPlain, tc.data, true)
	}

	// Bad JSON and bad hints in every dialect, and requests that are valid
	// but expensive, abandoned at the client's deadline.
	bodies := []string{
		`{`, `[]`, `null`, `"x"`, `{"stream":"yes"}`, `{"model":{}}`, `{"stream":true,"stream_options":[]}`,
		strings.Repeat("[", 100_000), `{"a":` + strings.Repeat(`{"a":`, 10_000) + `1` + strings.Repeat("}", 10_001),
		"{\"model\":\"\xff\xfe\"}", `{"stream":true,"pi_tokens":1e400}`, `{"pi_tokens":NaN}`, `{"pi_tokens":"1"}`,
		`{"pi_tokens":-1e300}`, `{"pi_tokens":10001}`, `{"pi_tokens":2147483648}`, `{"pi_think_ms":1e300}`,
		`{"pi_think_ms":-5,"pi_delay_ms":-5,"stream":true}`, `{"pi_delay_ms":200.001}`, `{"pi_delay_ms":true}`,
		`{"pi_id":"` + strings.Repeat("i", 1000) + `"}`, `{"pi_id":"a b"}`, `{"pi_id":7}`,
		`{"stream":true,"pi_tokens":10000,"pi_delay_ms":0,"pi_id":"big"}`,
		`{"stream":true,"pi_tokens":10000,"pi_delay_ms":200,"pi_think_ms":200}`,
		`{"pi_tokens":10000,"pi_delay_ms":200}`,
		`{"stream":true,"model":"` + strings.Repeat("m", 500_000) + `"}`,
		`{"messages":[{"role":"user","content":"[sse-latency tokens=10001]"}]}`,
		`{"messages":[{"role":"user","content":"[sse-latency tokens=99999999999999 think=1e999 delay=NaN id=a/b]"}]}`,
		`{"input":"[sse-latency ` + strings.Repeat("x", 300) + `]"}`, `{"prompt":"[sse-latency tokens=1"}`,
	}
	headers := []string{
		"X-SSE-Latency: tokens=10001", "X-SSE-Latency: think=201", "X-SSE-Latency: delay=1e999; tokens=-1",
		"X-SSE-Latency: tokens=99999999999999999999", "X-SSE-Latency: ;;;==;id=;tokens", "X-SSE-Latency: " + strings.Repeat("tokens=1;", 5000),
	}
	for _, d := range api.Dialects {
		for i, body := range bodies {
			add(fmt.Sprintf("%s body %d", d, i), toPlain, postRequest(d.Path(), body), i%3 == 0)
		}
		for i, h := range headers {
			add(fmt.Sprintf("%s header %d", d, i), toPlain, postRequest(d.Path(), `{"stream":true}`, h), false)
		}
	}

	// HTTP/2: the preface cut short, then garbage after it, frames with
	// absurd lengths, a valid SETTINGS then random frames.
	preface := http2.ClientPreface
	for i := range len(preface) {
		add(fmt.Sprintf("h2 preface truncated to %d", i), toPlain, preface[:i], i%4 == 0)
	}
	settings := frame(http2.FrameSettings, 0, 0, nil)
	add("h2 preface only, held", toPlain, preface, true)
	add("h2 frame of 16 MB declared", toPlain, preface+settings+frame(http2.FrameData, 0, 1, nil)[:3]+"\xff\xff\xff\x00\x00\x00\x00\x01", true)
	add("h2 HEADERS with a garbage block", toPlain, preface+settings+frame(http2.FrameHeaders, 0x5, 1, []byte("\xff\xff\xff\xff garbage")), false)
	add("h2 CONTINUATION flood", toPlain, preface+settings+frame(http2.FrameHeaders, 0x1, 1, []byte{0x82})+
		strings.Repeat(frame(http2.FrameContinuation, 0, 1, bytes.Repeat([]byte{0}, 1000)), 200), false)
	for i := range 150 {
		var b strings.Builder
		b.WriteString(preface)
		if i%2 == 0 {
			b.WriteString(settings)
		}
		for range 1 + rng.IntN(6) {
			payload := make([]byte, rng.IntN(64))
			for j := range payload {
				payload[j] = byte(rng.Uint32())
			}
			b.WriteString(frame(http2.FrameType(rng.IntN(12)), http2.Flags(rng.Uint32()), uint32(rng.IntN(8)), payload))
		}
		add(fmt.Sprintf("h2 random frames %d", i), toPlain, b.String(), i%10 == 0)
	}

	cases = append(cases, wsHostileCases(rng)...)

	// The TLS listener: plaintext, random bytes, a ClientHello cut short
	// or followed by garbage; and hostile requests inside real sessions.
	hello := clientHello(t)
	add("plaintext HTTP to TLS", toTLSRaw, valid, false)
	add("plaintext HTTP to TLS, held", toTLSRaw, valid, true)
	for i := 0; i < len(hello); i += 1 + len(hello)/40 {
		add(fmt.Sprintf("ClientHello truncated to %d", i), toTLSRaw, string(hello[:i]), i%3 == 0)
	}
	add("ClientHello then garbage", toTLSRaw, string(hello)+strings.Repeat("\x17\x03\x03\x00\x10garbage!", 10), false)
	for i := range 60 {
		b := make([]byte, 1+rng.IntN(300))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		if i%2 == 0 {
			b[0] = 0x16 // a handshake record
		}
		add(fmt.Sprintf("random bytes to TLS %d", i), toTLSRaw, string(b), false)
	}
	for i := range 60 {
		add(fmt.Sprintf("mutated request over TLS %d", i), overTLS, mutate(rng, valid), i%10 == 0)
	}
	add("1 MB head over TLS", overTLS, "POST / HTTP/1.1\r\n"+strings.Repeat("X-Y: z\r\n", 1<<17), false)

	// Every file of the fuzz corpora: each as raw bytes, and where a target
	// takes a request part, in its place in a request.
	for _, dir := range []string{"../wire/testdata/fuzz", "../api/testdata/fuzz"} {
		targets, _ := os.ReadDir(dir)
		for _, target := range targets {
			files, _ := os.ReadDir(filepath.Join(dir, target.Name()))
			for _, f := range files {
				path := filepath.Join(dir, target.Name(), f.Name())
				v, ok := corpusValue(t, path)
				if !ok {
					continue
				}
				add("corpus "+path, toPlain, v, false)
				switch target.Name() {
				case "FuzzParseRequestHead":
					add("corpus "+path+", held", toPlain, v, true)
					add("corpus "+path+" with a body", toPlain, v+`{"stream":true,"pi_tokens":2}`, false)
				case "FuzzParseServerRequest", "FuzzFindPromptHints":
					for _, d := range api.Dialects {
						add("corpus "+path+" to "+d.Path(), toPlain, postRequest(d.Path(), v), false)
					}
				case "FuzzParseHintHeader":
					add("corpus "+path+" as the hint header", toPlain, postRequest("/v1/chat/completions", `{"stream":true}`, api.HintHeader+": "+v), false)
				case "FuzzChunkedDecoder":
					add("corpus "+path+" as a chunked body", toPlain, chunked+v, false)
				}
			}
		}
	}
	return cases
}

// mutate changes s at one to eight random places.
func mutate(rng *rand.Rand, s string) string {
	b := []byte(s)
	for range 1 + rng.IntN(8) {
		i := rng.IntN(len(b))
		switch rng.IntN(4) {
		case 0:
			b[i] = byte(rng.Uint32())
		case 1:
			b = slices.Delete(b, i, i+1)
		case 2:
			b = slices.Insert(b, i, byte(rng.Uint32()))
		default:
			j := i + rng.IntN(len(b)-i)
			b = slices.Insert(b, j, b[i:j]...)
		}
		if len(b) == 0 {
			b = []byte{'\n'}
		}
	}
	return string(b)
}

// frame encodes one HTTP/2 frame, its length taken from payload.
func frame(typ http2.FrameType, flags http2.Flags, stream uint32, payload []byte) string {
	var h [9]byte
	h[0], h[1], h[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	h[3], h[4] = byte(typ), byte(flags)
	binary.BigEndian.PutUint32(h[5:], stream&(1<<31-1))
	return string(h[:]) + string(payload)
}

// clientHello returns the first flight of a crypto/tls client.
func clientHello(t *testing.T) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go tls.Client(a, &tls.Config{ServerName: "127.0.0.1"}).HandshakeContext(ctx)
	b.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64<<10)
	n, err := b.Read(buf)
	if err != nil {
		t.Fatalf("capturing a ClientHello: %v", err)
	}
	return buf[:n]
}

// corpusValue reads the first []byte or string value of a file of a
// native fuzz corpus ("go test fuzz v1").
func corpusValue(t *testing.T, path string) (string, bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("fuzz corpus: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n")[1:] {
		for _, prefix := range []string{"[]byte(", "string("} {
			if rest, ok := strings.CutPrefix(line, prefix); ok && strings.HasSuffix(rest, ")") {
				v, err := strconv.Unquote(strings.TrimSuffix(rest, ")"))
				if err != nil {
					t.Fatalf("fuzz corpus %s: %q: %v", path, line, err)
				}
				return v, true
			}
		}
	}
	return "", false
}
