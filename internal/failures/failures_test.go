package failures

import (
	"strings"
	"syscall"
	"testing"

	"github.com/sse-latency/sse-latency/internal/result"
)

const s = int64(1_000_000_000) // a second, in ns

// rec is a failed request of the given failure, started at 1 s, its
// connection made, its request sent, its head and n tokens received, each
// 5 ms after the one before, then its end 5 ms after the last (10 ms after
// its start without tokens); opts adjust it.
func rec(f result.Failure, n int, opts ...func(*result.Request)) *result.Request {
	r := &result.Request{Start: s, Connected: s + 1e5, Sent: s + 2e5, HeadAt: s + 3e5, End: s + 1e7, Failure: f}
	for i := range n {
		r.Tokens = append(r.Tokens, result.Token{Arrived: s + int64(i+1)*5e6})
	}
	if n > 0 {
		r.LastReadAt = r.Tokens[n-1].Arrived
		r.PrevReadAt = r.LastReadAt - 5e6
		r.End = r.LastReadAt + 5e6
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

var (
	notConnected = func(r *result.Request) { r.Connected, r.Sent, r.HeadAt = 0, 0, 0 }
	notSent      = func(r *result.Request) { r.Sent, r.HeadAt = 0, 0 }
	noHead       = func(r *result.Request) { r.HeadAt = 0 }
	reused       = func(r *result.Request) { r.Connected, r.Sent, r.HeadAt, r.Reused = 0, 0, 0, true }
	bodyEnded    = func(r *result.Request) { r.BodyEnded = true }
	silent       = func(r *result.Request) { r.End += 2 * s } // 2 s of silence before the end
)

// TestOf pins the kind of each failure the client records, from the
// record's facts, the texts unchanged.
func TestOf(t *testing.T) {
	for _, tt := range []struct {
		name string
		r    *result.Request
		want Kind
	}{
		{"ok", rec(result.Failure{}, 5), None},
		{"refused", rec(result.Failure{Kind: result.Connect, Detail: "Connection refused", Errno: syscall.ECONNREFUSED}, 0, notConnected), Refused},
		{"connect ETIMEDOUT", rec(result.Failure{Kind: result.Connect, Detail: "Connection timed out", Errno: syscall.ETIMEDOUT}, 0, notConnected), ConnectTimeout},
		{"connect under -w", rec(result.Failure{Kind: result.Timeout, Detail: "300"}, 0, notConnected), ConnectTimeout},
		{"no route", rec(result.Failure{Kind: result.Connect, Detail: "No route to host", Errno: syscall.EHOSTUNREACH}, 0, notConnected), ConnectError},
		{"dns", rec(result.Failure{Kind: result.Connect, Detail: "lookup nowhere.invalid: no such host"}, 0, notConnected), ConnectError},
		{"tls", rec(result.Failure{Kind: result.Connect, Detail: "TLS handshake: remote error: tls: handshake failure"}, 0, notSent), TLSHandshake},
		{"tls under -w", rec(result.Failure{Kind: result.Timeout, Detail: "300"}, 0, notSent), TLSHandshake},
		{"too many open files", rec(result.Failure{Kind: result.Connect, Detail: "Too many open files", Errno: syscall.EMFILE}, 0, notConnected), ToolLimit},
		{"no local port", rec(result.Failure{Kind: result.Connect, Detail: "Cannot assign requested address", Errno: syscall.EADDRNOTAVAIL}, 0, notConnected), ToolLimit},
		{"head too large", rec(result.Failure{Kind: result.HeadTooLarge}, 0, noHead), ToolLimit},
		{"line too long", rec(result.Failure{Kind: result.BadFraming, Detail: "sse: wire: SSE line too long"}, 3), ToolLimit},
		{"reset after the request", rec(result.Failure{Kind: result.RecvError, Detail: "Connection reset by peer", Errno: syscall.ECONNRESET}, 0, noHead), ResetBeforeResponse},
		{"send failed", rec(result.Failure{Kind: result.RecvError, Detail: "send: Broken pipe", Errno: syscall.EPIPE}, 0, noHead), ResetBeforeResponse},
		{"short response", rec(result.Failure{Kind: result.ShortResponse}, 0, noHead), ClosedBeforeResponse},
		{"502", rec(result.Failure{Kind: result.BadStatus, Detail: "HTTP/1.1 502 Bad Gateway: 502 Bad Gateway nginx"}, 0), HTTPStatus},
		{"504 after a silence", rec(result.Failure{Kind: result.BadStatus, Detail: "HTTP/1.1 504 Gateway Time-out"}, 0, silent), HTTPStatus},
		{"redirect", rec(result.Failure{Kind: result.Redirect, Detail: "301 to https://x/"}, 0), Redirect},
		{"reset mid-stream", rec(result.Failure{Kind: result.RecvError, Detail: "Connection reset by peer", Errno: syscall.ECONNRESET}, 181), ResetMidStream},
		{"closed mid-stream", rec(result.Failure{Kind: result.ClosedBeforeDone}, 181), ClosedMidStream},
		{"closed, body ended", rec(result.Failure{Kind: result.ClosedBeforeDone}, 3, bodyEnded), NoTerminal},
		{"closed after a silence", rec(result.Failure{Kind: result.ClosedBeforeDone}, 3, silent), IdleCut},
		{"reset after a silence", rec(result.Failure{Kind: result.RecvError, Detail: "Connection reset by peer", Errno: syscall.ECONNRESET}, 0, silent), IdleCut},
		{"error event", rec(result.Failure{Kind: result.StreamError, Detail: "upstream went away"}, 3), ErrorEvent},
		{"-w mid-stream", rec(result.Failure{Kind: result.Timeout, Detail: "2000"}, 50), RequestTimeout},
		{"-w writing on a kept connection", rec(result.Failure{Kind: result.Timeout, Detail: "2000"}, 0, reused), RequestTimeout},
		{"--idle-timeout", rec(result.Failure{Kind: result.IdleTimeout, Detail: "500"}, 0), IdleTimeout},
		{"no tokens", rec(result.Failure{Kind: result.NoTokens}, 0), NoTokens},
		{"integrity", rec(result.Failure{Kind: result.Integrity, Detail: "corrupted content at token 0"}, 3), Integrity},
		{"malformed", rec(result.Failure{Kind: result.BadFraming, Detail: "wire: malformed chunked encoding"}, 3), Malformed},
		{"interrupted", rec(result.Failure{Kind: result.Interrupted}, 3), Interrupted},
	} {
		if got := Of(tt.r); got != tt.want {
			t.Errorf("%s: Of(%q, %d tokens) = %v, want %v", tt.name, tt.r.Failure.Error(), len(tt.r.Tokens), got, tt.want)
		}
	}
}

func TestKindNames(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Kinds() {
		name := k.String()
		if back, ok := ParseKind(name); !ok || back != k || seen[name] || strings.ContainsAny(name, " -") {
			t.Errorf("kind %d: name %q does not parse back to it, repeats, or is not snake_case", k, name)
		}
		seen[name] = true
		if k.Title() == "" || k.Title() == name {
			t.Errorf("kind %s has no title of its own", name)
		}
	}
	if _, ok := ParseKind("none"); ok {
		t.Error(`ParseKind("none") succeeded: a summary has no group of requests that did not fail`)
	}
	for _, k := range Kinds() {
		if got := len(AdviceFor(&GroupSummary{Kind: k.String(), Count: 1})); got == 0 {
			t.Errorf("no advice row for kind %s", k)
		}
	}
}

func TestStatusOf(t *testing.T) {
	for _, tt := range []struct {
		detail string
		want   int
	}{
		{"HTTP/1.1 502 Bad Gateway: 502 Bad Gateway nginx", 502},
		{"HTTP/1.1 429: {\"error\"", 429},
		{"HTTP/2.0 503", 503},
		{"HTTP/1.0 099 x", 0},
		{"HTTP/1.1 5022 x", 0},
		{"HTTP/1.1 50x x", 0},
		{"HTTP/1.1", 0},
		{"FTP/1.1 502 x", 0},
		{"", 0},
	} {
		r := &result.Request{Failure: result.Failure{Kind: result.BadStatus, Detail: tt.detail}}
		if got := StatusOf(r); got != tt.want {
			t.Errorf("StatusOf(%q) = %d, want %d", tt.detail, got, tt.want)
		}
	}
	if got := StatusOf(&result.Request{Failure: result.Failure{Kind: result.Connect, Detail: "HTTP/1.1 502 x"}}); got != 0 {
		t.Errorf("StatusOf of a connect failure = %d, want 0", got)
	}
}

func FuzzStatusOf(f *testing.F) {
	for _, s := range []string{"HTTP/1.1 502 Bad Gateway: x", "HTTP/1.1 429", "HTTP/9 999:", "HTTP/ 1000", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, detail string) {
		code := StatusOf(&result.Request{Failure: result.Failure{Kind: result.BadStatus, Detail: detail}})
		if code != 0 && (code < 100 || code > 999 || !strings.HasPrefix(detail, "HTTP/")) {
			t.Errorf("StatusOf(%q) = %d", detail, code)
		}
		k := Key{Kind: HTTPStatus, Status: code}
		if title := k.Title(); !Clean(title) {
			t.Errorf("title of status %d is not clean: %q", code, title)
		}
	})
}
