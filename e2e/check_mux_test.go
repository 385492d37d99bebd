//go:build linux

package e2e

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/sse-latency/sse-latency/internal/advice"
	"github.com/sse-latency/sse-latency/internal/check"
)

// TestCheckMultiplex runs `sse-latency check --only multiplex` over
// HTTP/2 on TLS (--insecure) through real gateways terminating TLS in
// front of the plain HTTP/1.1 dummy server: haproxy (haproxy-tls-h2.cfg,
// its server line's TLS to the backend dropped: the check's dummy server
// is plain) and nginx (nginx-h2-tls.conf) each take the 8 streams at once
// on one connection and flush them: PASS on 1 connection. nginx with
// keepalive_requests 4 answers the request that reaches the cap with a
// GOAWAY, so the streams past it are refused and sent again on a second
// connection: WARN, on 2 connections, with the advice that names
// keepalive_requests. How many are refused depends on how many of the 8
// nginx had read when it sent the GOAWAY (4 in most runs, 2 in some), so
// only "of 8" is asserted. The PASS is checked again while the
// streams' flush verdict (a timing judgement) fails, as for HTTP/3.
func TestCheckMultiplex(t *testing.T) {
	plainBackend := func(b []byte) []byte {
		return bytes.Replace(b, []byte(" ssl verify none alpn http/1.1"), nil, 1)
	}
	keepalive4 := func(b []byte) []byte {
		return bytes.Replace(b, []byte("http {\n"), []byte("http {\n    keepalive_requests 4;\n"), 1)
	}
	for _, tt := range []struct {
		name        string
		example     string
		edit        func([]byte) []byte
		status      check.Status
		connections int
		says        []string
		advice      advice.Key
	}{
		{"haproxy-tls-h2", "haproxy-tls-h2", plainBackend, check.Pass, 1,
			[]string{"8 streams at once on one h2 connection, each flushed"}, ""},
		{"nginx-h2-tls", "nginx-h2-tls", nil, check.Pass, 1,
			[]string{"8 streams at once on one h2 connection, each flushed"}, ""},
		{"nginx-h2-tls-keepalive-4", "nginx-h2-tls", keepalive4, check.Warn, 2,
			[]string{" of 8 streams refused before their response on the shared connection", "and sent again"}, advice.MuxRefused},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkGoroutines(t)
			ex := transportExample(t, tt.example)
			bin := requireProgram(t, ex.Gateway)
			ex.Edit = tt.edit
			ctx, cancel := context.WithTimeout(t.Context(), checkLimit)
			defer cancel()
			r, out := checkMultiplex(t, ctx, ex, bin, check.MuxStreams, tt.status == check.Pass, func(*Launched) []string {
				return []string{"--insecure"}
			})
			checkMuxRow(t, "multiplex over h2 through "+tt.name, r, out, tt.status, tt.says)
			if r.Connections != tt.connections {
				t.Errorf("multiplex through %s: on %d connections, want %d\n%s", tt.name, r.Connections, tt.connections, out)
			}
			if r.Requests < check.MuxStreams {
				t.Errorf("multiplex through %s: %d requests, want at least %d", tt.name, r.Requests, check.MuxStreams)
			}
			var keys []string
			for _, a := range r.Advice {
				keys = append(keys, a.Key)
			}
			if tt.advice != "" && !slices.Contains(keys, string(tt.advice)) {
				t.Errorf("multiplex through %s: advice %v, want %s (fix %q)", tt.name, keys, tt.advice, r.Fix)
			}
		})
	}
}
