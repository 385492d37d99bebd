package api

import (
	"encoding/json"
	"testing"
)

func TestAppendRequestBody(t *testing.T) {
	n, think, r, c, zero, beat := int64(200), 1.5, int64(50), int64(20), int64(0), 500.0
	id := Hints{ID: "k2f9ab-gw-3", Tokens: &n}
	tests := []struct {
		d    Dialect
		r    RequestBody
		want string
	}{
		{Chat, RequestBody{}, `{"model":"sse-latency-1","stream":true,"messages":[{"role":"user","content":"Say 4-letter words"}]}`},
		{Chat, RequestBody{Model: "gpt-x", Hints: id, IncludeUsage: true},
			`{"model":"gpt-x","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Say 4-letter words [sse-latency id=k2f9ab-gw-3 tokens=200]"}],"pi_id":"k2f9ab-gw-3","pi_tokens":200}`},
		{Completions, RequestBody{Hints: id, IncludeUsage: true},
			`{"model":"sse-latency-1","stream":true,"stream_options":{"include_usage":true},"prompt":"Say 4-letter words [sse-latency id=k2f9ab-gw-3 tokens=200]","pi_id":"k2f9ab-gw-3","pi_tokens":200}`},
		{Responses, RequestBody{Hints: id, IncludeUsage: true},
			`{"model":"sse-latency-1","stream":true,"input":"Say 4-letter words [sse-latency id=k2f9ab-gw-3 tokens=200]","pi_id":"k2f9ab-gw-3","pi_tokens":200}`},
		{Anthropic, RequestBody{Hints: Hints{Tokens: &n, ThinkMs: &think}},
			`{"model":"sse-latency-1","stream":true,"max_tokens":4096,"messages":[{"role":"user","content":"Say 4-letter words [sse-latency tokens=200 think=1.5]"}],"pi_tokens":200,"pi_think_ms":1.5}`},
		{Chat, RequestBody{Hints: Hints{HeartbeatMs: &beat}},
			`{"model":"sse-latency-1","stream":true,"messages":[{"role":"user","content":"Say 4-letter words [sse-latency heartbeat=500]"}],"pi_heartbeat_ms":500}`},
		{Chat, RequestBody{Model: "a\"b"}, `{"model":"a\"b","stream":true,"messages":[{"role":"user","content":"Say 4-letter words"}]}`},
		// The phases: the hints, and what each real API asks for them.
		{Chat, RequestBody{Hints: Hints{Reasoning: &r, ToolCall: &c}},
			`{"model":"sse-latency-1","stream":true,"messages":[{"role":"user","content":"Say 4-letter words [sse-latency reasoning=50 tool_call=20]"}]` +
				chatReasoning + chatTools + `,"pi_reasoning_tokens":50,"pi_tool_call_tokens":20}`},
		{Completions, RequestBody{Hints: Hints{Reasoning: &r}},
			`{"model":"sse-latency-1","stream":true,"prompt":"Say 4-letter words [sse-latency reasoning=50]","pi_reasoning_tokens":50}`},
		{Responses, RequestBody{Hints: Hints{Reasoning: &r, ToolCall: &zero}},
			`{"model":"sse-latency-1","stream":true,"input":"Say 4-letter words [sse-latency reasoning=50 tool_call=0]"` +
				`,"reasoning":{"effort":"medium","summary":"auto"},"pi_reasoning_tokens":50,"pi_tool_call_tokens":0}`},
		{Anthropic, RequestBody{Hints: Hints{Reasoning: &r, ToolCall: &c}},
			`{"model":"sse-latency-1","stream":true,"max_tokens":4096,"messages":[{"role":"user","content":"Say 4-letter words [sse-latency reasoning=50 tool_call=20]"}]` +
				`,"thinking":{"type":"enabled","budget_tokens":1024}` + anthropicTools + `,"pi_reasoning_tokens":50,"pi_tool_call_tokens":20}`},
	}
	for _, tt := range tests {
		got := AppendRequestBody(nil, tt.d, tt.r)
		if string(got) != tt.want {
			t.Errorf("AppendRequestBody(%s, %+v) =\n%s\nwant\n%s", tt.d, tt.r, got, tt.want)
		}
		if !json.Valid(got) {
			t.Errorf("AppendRequestBody(%s, %+v) is not valid JSON: %s", tt.d, tt.r, got)
		}
	}
}

// TestRequestBodyReachesTheServer parses every dialect's body the way the
// server does: the JSON fields and the prompt marker carry the same hints.
func TestRequestBodyReachesTheServer(t *testing.T) {
	n, r, c := int64(42), int64(3), int64(2)
	beat := 250.5
	h := Hints{ID: "run1-gw-0", Tokens: &n, Reasoning: &r, ToolCall: &c, HeartbeatMs: &beat}
	for _, d := range Dialects {
		body := AppendRequestBody(nil, d, RequestBody{Model: "m", Hints: h, IncludeUsage: true})
		req, err := ParseServerRequest(body)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		wantUsage := d == Chat || d == Completions
		if !req.Stream || req.Model != "m" || req.IncludeUsage != wantUsage || !hintsEqual(req.Hints, h) {
			t.Errorf("%s: the server reads %+v from %s", d, req, body)
		}
		if p := FindPromptHints(body); !hintsEqual(p, h) {
			t.Errorf("%s: the prompt marker gives {%s}", d, p.HeaderValue())
		}
	}
}

func TestAppendResponseCreate(t *testing.T) {
	n, r := int64(200), int64(5)
	h := Hints{ID: "k2f9ab-gw-3", Tokens: &n, Reasoning: &r}
	got := AppendResponseCreate(nil, RequestBody{Model: "gpt-x", Hints: h, IncludeUsage: true})
	want := `{"type":"response.create","model":"gpt-x","input":"Say 4-letter words [sse-latency id=k2f9ab-gw-3 tokens=200 reasoning=5]"` +
		responsesReasoning + `,"pi_id":"k2f9ab-gw-3","pi_tokens":200,"pi_reasoning_tokens":5}`
	if string(got) != want {
		t.Errorf("AppendResponseCreate =\n%s\nwant\n%s", got, want)
	}
	req, err := ParseServerRequest(got)
	if err != nil || req.Stream || req.Model != "gpt-x" || !hintsEqual(req.Hints, h) {
		t.Errorf("the server reads %+v, %v from %s (no stream field: it is implicit over WebSocket)", req, err, got)
	}
}

// TestPaddedPrompt: --prompt-bytes pads the prompt to exactly its size,
// the body grows by exactly the padding, stays valid JSON, and the server
// still finds the hints in every channel, the prompt marker included.
func TestPaddedPrompt(t *testing.T) {
	n := int64(7)
	h := Hints{ID: "pad-gw-1", Tokens: &n}
	unpadded := len(AppendPrompt(nil, h))
	for _, size := range []int{0, 10, unpadded, unpadded + 1, unpadded + 2, 1000, 64 << 10, MaxPromptBytes, MaxPromptBytes + 5} {
		p := AppendPaddedPrompt(nil, h, size)
		want := min(max(size, unpadded), MaxPromptBytes)
		if len(p) != want {
			t.Errorf("AppendPaddedPrompt(size %d) has %d bytes, want %d", size, len(p), want)
		}
		if got := FindPromptHints(p); got.ID != h.ID || got.Tokens == nil || *got.Tokens != n {
			t.Errorf("size %d: the marker's hints %+v, want %+v", size, got, h)
		}
		for _, d := range Dialects {
			body := AppendRequestBody(nil, d, RequestBody{Hints: h, PromptBytes: size})
			base := AppendRequestBody(nil, d, RequestBody{Hints: h})
			if !json.Valid(body) || len(body)-len(base) != want-unpadded {
				t.Errorf("%s, size %d: body of %d bytes (valid %v), want %d more than %d", d, size, len(body), json.Valid(body), want-unpadded, len(base))
			}
			req, err := ParseServerRequest(body)
			if err != nil || req.Hints.ID != h.ID {
				t.Errorf("%s, size %d: the server reads %+v, %v", d, size, req, err)
			}
		}
	}
	if got := string(AppendPaddedPrompt(nil, Hints{}, len(ChatPrompt)+12)); got != ChatPrompt+" anan huhu o" {
		t.Errorf("padded prompt without hints = %q", got)
	}
}
