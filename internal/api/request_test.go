package api

import (
	"encoding/json"
	"testing"
)

func TestAppendRequestBody(t *testing.T) {
	n, think := int64(200), 1.5
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
		{Chat, RequestBody{Model: "a\"b"}, `{"model":"a\"b","stream":true,"messages":[{"role":"user","content":"Say 4-letter words"}]}`},
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
	n := int64(42)
	h := Hints{ID: "run1-gw-0", Tokens: &n}
	for _, d := range Dialects {
		body := AppendRequestBody(nil, d, RequestBody{Model: "m", Hints: h, IncludeUsage: true})
		req, err := ParseServerRequest(body)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		wantUsage := d == Chat || d == Completions
		if !req.Stream || req.Model != "m" || req.IncludeUsage != wantUsage || req.Hints.ID != h.ID || req.Hints.Tokens == nil || *req.Hints.Tokens != n {
			t.Errorf("%s: the server reads %+v from %s", d, req, body)
		}
		if p := FindPromptHints(body); p.ID != h.ID || p.Tokens == nil || *p.Tokens != n {
			t.Errorf("%s: the prompt marker gives %+v", d, p)
		}
	}
}
