package api

import (
	"encoding/json"
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
	if !json.Valid(AppendChatCompletion(nil, 1, 2, 3)) {
		t.Error("completion body is not valid JSON")
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
