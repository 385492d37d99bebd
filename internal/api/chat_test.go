package api

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestChunksAreValidJSONInFieldOrder(t *testing.T) {
	c := NewChatChunk(42)
	const ts = 1_700_000_000_123_456_789
	tests := []struct {
		name string
		got  []byte
		want string
	}{
		{"role", c.AppendRole(nil, ts), `{"id":"chatcmpl-sse-latency-42","object":"chat.completion.chunk","created":1700000000,"pi_ts":1700000000123456789,"model":"sse-latency-1","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}`},
		{"token 3", c.AppendToken(nil, ts, 3), `{"id":"chatcmpl-sse-latency-42","object":"chat.completion.chunk","created":1700000000,"pi_ts":1700000000123456789,"model":"sse-latency-1","choices":[{"index":0,"delta":{"content":"vivi"},"finish_reason":null}]}`},
		{"finish", c.AppendFinish(nil, ts), `{"id":"chatcmpl-sse-latency-42","object":"chat.completion.chunk","created":1700000000,"pi_ts":1700000000123456789,"model":"sse-latency-1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`},
	}
	for _, tt := range tests {
		if string(tt.got) != tt.want {
			t.Errorf("%s chunk =\n%s\nwant\n%s", tt.name, tt.got, tt.want)
		}
		if !json.Valid(tt.got) {
			t.Errorf("%s chunk is not valid JSON", tt.name)
		}
	}
	if !json.Valid(AppendChatCompletion(nil, 1, 2, 3)) || !json.Valid(AppendChatRequest(nil, 5)) || !json.Valid(AppendChatRequest(nil, -1)) {
		t.Error("completion or request body is not valid JSON")
	}
}

func TestScanChatEvent(t *testing.T) {
	c := NewChatChunk(1)
	tests := []struct {
		payload string
		want    Event
	}{
		{string(c.AppendToken(nil, 123, 0)), Event{PiTs: 123, Content: true}},
		{string(c.AppendRole(nil, 123)), Event{PiTs: 123}},
		{string(c.AppendFinish(nil, 123)), Event{PiTs: 123}},
		{"[DONE]", Event{Done: true}},
		{`{"choices":[{"delta":{"content":"abcd"}}]}`, Event{Content: true}},
		{`{"pi_ts": 77, "choices":[{"delta":{"content": ""}}]}`, Event{PiTs: 77}},
		{`{"pi_ts":99999999999999999999999,"content":"x"}`, Event{Content: true}},
		{`{"pi_ts":"12","content":null}`, Event{}},
		{`{"content":"`, Event{}},
		{``, Event{}},
	}
	for _, tt := range tests {
		if got := ScanChatEvent([]byte(tt.payload)); got != tt.want {
			t.Errorf("ScanChatEvent(%q) = %+v, want %+v", tt.payload, got, tt.want)
		}
	}
}

func TestParseChatRequest(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	f64 := func(v float64) *float64 { return &v }
	tests := []struct {
		body    string
		want    ChatRequest
		wantErr string
	}{
		{``, ChatRequest{}, ""},
		{`{"stream":true}`, ChatRequest{Stream: true}, ""},
		{`{"stream":true,"pi_tokens":200,"pi_think_ms":1.5,"pi_delay_ms":0.25}`,
			ChatRequest{Stream: true, Overrides: Overrides{Tokens: i64(200), ThinkMs: f64(1.5), DelayMs: f64(0.25)}}, ""},
		{`{"pi_tokens":-5}`, ChatRequest{Overrides: Overrides{Tokens: i64(0)}}, ""},
		{`{"pi_tokens":null}`, ChatRequest{}, ""},
		{`{"pi_tokens":"x"}`, ChatRequest{}, "pi_tokens must be a number"},
		{`{"pi_delay_ms":true}`, ChatRequest{}, "pi_delay_ms must be a number"},
		{`{"pi_tokens":1e12}`, ChatRequest{}, "pi_tokens too large"},
		{`{"stream":`, ChatRequest{}, "invalid JSON body"},
		{`[1,2]`, ChatRequest{}, "invalid JSON body"},
	}
	for _, tt := range tests {
		got, err := ParseChatRequest([]byte(tt.body))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseChatRequest(%s) error %v, want one containing %q", tt.body, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !sameRequest(got, tt.want) {
			t.Errorf("ParseChatRequest(%s) = %+v, %v; want %+v", tt.body, got, err, tt.want)
		}
	}
}

func sameRequest(a, b ChatRequest) bool {
	eqI := func(x, y *int64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	eqF := func(x, y *float64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.Stream == b.Stream && eqI(a.Overrides.Tokens, b.Overrides.Tokens) &&
		eqF(a.Overrides.ThinkMs, b.Overrides.ThinkMs) && eqF(a.Overrides.DelayMs, b.Overrides.DelayMs)
}

func FuzzScanChatEvent(f *testing.F) {
	c := NewChatChunk(7)
	f.Add(c.AppendToken(nil, 1_700_000_000_000_000_000, 5))
	f.Add(c.AppendRole(nil, 1))
	f.Add([]byte("[DONE]"))
	f.Add([]byte(`{"pi_ts":-1,"content":"\""}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		ev := ScanChatEvent(payload)
		if ev.PiTs < 0 {
			t.Fatalf("negative pi_ts %d from %q", ev.PiTs, payload)
		}
		if ev.Done && (ev.Content || ev.PiTs != 0) {
			t.Fatalf("[DONE] with content or pi_ts: %+v", ev)
		}
	})
}

func FuzzParseChatRequest(f *testing.F) {
	f.Add(AppendChatRequest(nil, 200))
	f.Add([]byte(`{"stream":true,"pi_think_ms":1e308,"pi_delay_ms":-0}`))
	f.Add([]byte(`{"pi_tokens":2147483647.9}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := ParseChatRequest(body)
		if err != nil {
			return
		}
		o := req.Overrides
		if o.Tokens != nil && *o.Tokens < 0 || o.ThinkMs != nil && !(*o.ThinkMs >= 0) || o.DelayMs != nil && !(*o.DelayMs >= 0) {
			t.Fatalf("accepted negative or NaN hints from %q: %+v", body, o)
		}
	})
}

func BenchmarkScanChatEvent(b *testing.B) {
	payload := NewChatChunk(1).AppendToken(nil, 1_700_000_000_123_456_789, 9)
	b.ReportAllocs()
	for b.Loop() {
		ScanChatEvent(payload)
	}
}

func BenchmarkAppendToken(b *testing.B) {
	c := NewChatChunk(1)
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = c.AppendToken(buf[:0], 1_700_000_000_123_456_789, 9)
	}
}
