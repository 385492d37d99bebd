package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/evloop"
)

// heartbeatThink and heartbeatEvery are the silent think and the heartbeat
// interval of the heartbeat tests: the heartbeats the think leaves room
// for are at most heartbeatThink/heartbeatEvery, however late the server
// runs (each heartbeat is due an interval after the previous write, and
// none once the first token is), and at least 1 unless the server's
// first wake-up after the start comes later than the first token's
// deadline. The think leaves it heartbeatThink-heartbeatEvery (250 ms) for
// that: one whole-suite CI run, two busy loops beside it, once stalled an
// io_uring loop for the 95 ms that a think of 120 ms left.
const (
	heartbeatThink = 300.0 // ms
	heartbeatEvery = 50.0  // ms
	maxHeartbeats  = 6     // heartbeatThink / heartbeatEvery, rounded down
)

// beatCount is what one stream carried: its heartbeats (comments or ping
// events, the start ping of Anthropic included), and the heartbeats that
// came after its first token.
type beatCount struct {
	beats, late int
}

// countBeats counts the heartbeats among the events of a stream of
// dialect d; each event must be a heartbeat, or JSON data the client
// scans without fault.
func countBeats(t *testing.T, what string, d api.Dialect, events []string) beatCount {
	t.Helper()
	var c beatCount
	tokens := false
	for _, ev := range events {
		switch {
		case ev == api.CommentHeartbeat && d != api.Anthropic, ev == api.AnthropicHeartbeat && d == api.Anthropic:
			c.beats++
			if tokens {
				c.late++
			}
		case strings.HasPrefix(ev, ":"):
			t.Fatalf("%s: comment %q, want %q only", what, ev, api.CommentHeartbeat)
		default:
			name, data := "", ""
			for _, line := range strings.Split(strings.TrimSuffix(ev, "\n\n"), "\n") {
				if v, ok := strings.CutPrefix(line, "event: "); ok {
					name = v
				} else if v, ok := strings.CutPrefix(line, "data: "); ok {
					data = v
				}
			}
			s := api.ScanEvent(d, []byte(name), []byte(data))
			if s.Has(api.Malformed) || s.Has(api.Failed) {
				t.Fatalf("%s: event %q scans as flags %08b", what, ev, s.Flags)
			}
			tokens = tokens || s.Has(api.HasContent)
		}
	}
	return c
}

// TestHeartbeats streams a silent think with heartbeats from every dialect
// over HTTP/1.1 (written by the shard) and h2c (written by the handler
// goroutine): the heartbeats fill the think and stop with the first token,
// each HTTP/1.1 one in its own chunk; the emission record counts exactly
// the heartbeats the client got; the interval comes from the hint, or the
// server's default (which a hint of 0 turns off).
func TestHeartbeats(t *testing.T) { forEngines(t, testHeartbeats) }

func testHeartbeats(t *testing.T, e evloop.Engine) {
	h2 := newH2Setup(t, false, Config{Tokens: 3, DelayMs: 1, Engine: e})
	h1reg := emission.New()
	h1 := startServer(t, Config{Tokens: 3, DelayMs: 1, Engine: e, Emissions: h1reg, HeartbeatMs: heartbeatEvery})
	for _, d := range api.Dialects {
		t.Run(d.String(), func(t *testing.T) {
			t.Parallel()
			testDialectHeartbeats(t, d, h1, h1reg, h2)
		})
	}
}

// testDialectHeartbeats is testHeartbeats for dialect d, on servers with
// (h1) and without (h2) a default interval.
func testDialectHeartbeats(t *testing.T, d api.Dialect, h1 *Server, h1reg *emission.Registry, h2 h2Setup) {
	for _, tt := range []struct {
		name       string
		fields     string // hint fields, after a comma
		onH1, onH2 bool   // whether the stream has heartbeats on each server
	}{
		{name: "default", onH1: true},
		{name: "hint", onH1: true, onH2: true, fields: fmt.Sprintf(`,"pi_heartbeat_ms":%v`, heartbeatEvery)},
		{name: "hint 0", fields: `,"pi_heartbeat_ms":0`},
	} {
		id := fmt.Sprintf("hb-%s-%s", d, strings.ReplaceAll(tt.name, " ", ""))
		body := fmt.Sprintf(`{"model":"m","stream":true,"pi_id":%q,"pi_think_ms":%v%s}`, id, heartbeatThink, tt.fields)

		what := fmt.Sprintf("HTTP/1.1 %s %s", d, tt.name)
		_, b := splitResponse(t, exchange(t, h1, postRequest(d.Path(), body)))
		var events []string
		for _, c := range dechunk(t, b) {
			if strings.Contains(c, "ping") && c != api.CommentHeartbeat && c != api.AnthropicHeartbeat {
				t.Errorf("%s: chunk %q holds a heartbeat beside other events", what, c)
			}
			events = append(events, splitEvents(t, c)...)
		}
		checkBeats(t, what, d, countBeats(t, what, d, events), h1reg.Take(id), tt.onH1)

		what = fmt.Sprintf("h2c %s %s", d, tt.name)
		_, b = h2.post(t, d.Path(), body)
		checkBeats(t, what, d, countBeats(t, what, d, splitEvents(t, b)), h2.reg.Take(id), tt.onH2)
	}
}

// checkBeats checks the heartbeats of one stream: its start's
// (api.StartHeartbeats), then, when on, at least one and at most what the
// think leaves room for; none after the first token; as many as the
// emission record counts.
func checkBeats(t *testing.T, what string, d api.Dialect, got beatCount, times *emission.Times, on bool) {
	t.Helper()
	lo, hi := api.StartHeartbeats(d), api.StartHeartbeats(d)
	if on {
		lo, hi = lo+1, hi+maxHeartbeats
	}
	switch {
	case times == nil:
		t.Errorf("%s: no emission record", what)
	case got.beats < lo || got.beats > hi:
		t.Errorf("%s: %d heartbeats, want %d to %d", what, got.beats, lo, hi)
	case got.late != 0:
		t.Errorf("%s: %d heartbeats after the first token, want none", what, got.late)
	case times.Heartbeats() != got.beats:
		t.Errorf("%s: the emission record counts %d heartbeats, the stream carried %d", what, times.Heartbeats(), got.beats)
	}
}

// TestHeartbeatHintLimits answers a heartbeat interval outside the
// server's bounds with a 400 naming the hint.
func TestHeartbeatHintLimits(t *testing.T) {
	srv := startServer(t, Config{Tokens: 1})
	for _, tt := range []struct{ body, code, msg string }{
		{`{"stream":true,"pi_heartbeat_ms":0.5}`, "hint_below_minimum", "pi_heartbeat_ms 0.5 in the JSON body; the minimum is 10 ms"},
		{`{"stream":true,"pi_heartbeat_ms":600001}`, "hint_above_limit", "pi_heartbeat_ms 600001 in the JSON body; the limit is 600000 ms"},
		{`{"stream":true,"pi_heartbeat_ms":"x"}`, "invalid_request_error", "pi_heartbeat_ms must be a number"},
	} {
		resp := exchange(t, srv, postRequest(api.ChatPath, tt.body))
		if !strings.HasPrefix(resp, "HTTP/1.1 400 ") || !strings.Contains(resp, `"code":"`+tt.code+`"`) || !strings.Contains(resp, tt.msg) {
			t.Errorf("%s: answered %q, want a 400 %s saying %q", tt.body, resp, tt.code, tt.msg)
		}
	}
}
