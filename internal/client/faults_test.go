package client

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/server"
)

// faultServer starts the dummy server with HTTP/2 (h2c), an emission
// registry and faults for every answer.
func faultServer(t *testing.T, faults api.Faults) (addr string, reg *emission.Registry) {
	t.Helper()
	reg = emission.New()
	srv, err := server.Listen("127.0.0.1:0", server.Config{Tokens: 1, DelayMs: 0.2, Emissions: reg, HTTP2: true, Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return srv.Addr().String(), reg
}

func ptr[T any](v T) *T { return &v }

// TestFaultsRecorded asks the server for each fault and checks what the
// record says: the UTF-8 words split inside their characters and the
// other line endings read whole (comments counted), a cut as a close
// without the body's end, an end without end events as a body that ended
// cleanly, an injected status with its body quoted — over HTTP/1.1 on the
// suite's engine, and over h2c.
func TestFaultsRecorded(t *testing.T) {
	addr, reg := faultServer(t, api.Faults{})
	const n = 6
	tests := []struct {
		name      string
		f         api.Faults
		kind      result.Kind
		tokens    int
		bodyEnded bool
		comments  bool
		detail    string // in the failure text
	}{
		{name: "utf8 split", f: api.Faults{Text: api.TextUTF8, Split: []int{api.SplitInChar}, SplitGapMs: ptr(0.2)},
			kind: result.OK, tokens: n},
		{name: "crlf and comments", f: api.Faults{LineEnd: api.LineEndCRLF, Comments: ptr(true)}, kind: result.OK, tokens: n, comments: true},
		{name: "cr, trickled", f: api.Faults{LineEnd: api.LineEndCR, Trickle: ptr(true), SplitGapMs: ptr(0.0)}, kind: result.OK, tokens: n},
		{name: "big event", f: api.Faults{EventBytes: ptr[int64](100_000)}, kind: result.OK, tokens: n},
		{name: "cut", f: api.Faults{CutAfter: ptr[int64](2)}, kind: result.ClosedBeforeDone, tokens: 2},
		{name: "no terminal", f: api.Faults{NoTerminal: ptr(true)}, kind: result.ClosedBeforeDone, tokens: n, bodyEnded: true},
		{name: "status", f: api.Faults{Status: ptr[int64](529)}, kind: result.BadStatus, detail: " 529 ", bodyEnded: true},
	}
	for _, proto := range []string{"HTTP/1.1", "h2c"} {
		for _, tt := range tests {
			q := New(Options{Dialect: api.Chat, Addr: addr, Tokens: n, ExpectTokens: n, Timeout: 10 * time.Second,
				Registry: reg, IDPrefix: "flt", Faults: tt.f, H2C: proto == "h2c"})
			rec := &result.Request{Batch: "gw"}
			q.Do(context.Background(), rec)
			kind := tt.kind
			if tt.name == "cut" && proto == "h2c" {
				kind = result.RecvError // a reset stream
			}
			if tt.kind == result.BadStatus && !strings.Contains(rec.Failure.Error(), `: {"error":{"message":"sse-latency: injected upstream fault`) {
				t.Errorf("%s %s: %q does not quote the error body", proto, tt.name, rec.Failure.Error())
			}
			if rec.Failure.Kind != kind || len(rec.Tokens) != tt.tokens || !strings.Contains(rec.Failure.Error(), tt.detail) {
				t.Errorf("%s %s: %q with %d tokens; want %s with %d tokens (%q)", proto, tt.name, rec.Failure.Error(), len(rec.Tokens),
					tt.kind, tt.tokens, tt.detail)
			}
			if tt.kind != result.OK && rec.BodyEnded != tt.bodyEnded {
				t.Errorf("%s %s: body ended %v, want %v", proto, tt.name, rec.BodyEnded, tt.bodyEnded)
			}
			if (rec.Comments > 0) != tt.comments {
				t.Errorf("%s %s: %d comments counted", proto, tt.name, rec.Comments)
			}
			if tt.kind == result.OK && (rec.Bytes < 100_000) == (tt.f.EventBytes != nil) {
				t.Errorf("%s %s: %d bytes received", proto, tt.name, rec.Bytes)
			}
		}
	}
}

// TestUTF8WordsAreChecked: the UTF-8 words are matched as such — a stream
// of them read as the ASCII words is corrupted text, and the reverse.
func TestUTF8WordsAreChecked(t *testing.T) {
	addr, reg := faultServer(t, api.Faults{Text: api.TextUTF8})
	const n = 3
	q := New(Options{Dialect: api.Anthropic, Addr: addr, Tokens: n, ExpectTokens: n, Timeout: 10 * time.Second,
		Registry: reg, IDPrefix: "w"})
	rec := &result.Request{}
	q.Do(context.Background(), rec)
	if rec.Failure.Kind != result.Integrity || !strings.Contains(rec.Failure.Error(), "corrupt") {
		t.Errorf("UTF-8 words read as ASCII: %q, want an integrity failure", rec.Failure.Error())
	}
	m := newTextMatcher(n, api.TextUTF8)
	if _, got, _ := m.feed([]byte("ananhuhu")); got != 0 || m.problem() == "" {
		t.Errorf("ASCII words read as UTF-8: %d tokens, problem %q; want none and a problem", got, m.problem())
	}
	m = newTextMatcher(n, api.TextUTF8)
	if _, got, _ := m.feed(api.AppendText(api.AppendText(nil, api.TextUTF8, 0), api.TextUTF8, 1)); got != 2 {
		t.Errorf("two UTF-8 words matched as %d tokens", got)
	}
}
