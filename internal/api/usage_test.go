package api

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestAppendUsage(t *testing.T) {
	known := PromptUsage{Tokens: 5990, CacheKnown: true, Cached: 5987}
	written := PromptUsage{Tokens: 2048, CacheKnown: true, Cached: 512, Written: 1024}
	for _, tc := range []struct {
		name string
		d    Dialect
		p    UsagePart
		u    TokenUsage
		want string
	}{
		{"chat, the field report's figures", Chat, UsageChunk, TokenUsage{Prompt: known, Output: 109},
			`{"prompt_tokens":5990,"completion_tokens":109,"total_tokens":6099,"prompt_tokens_details":{"cached_tokens":5987}}`},
		{"chat without a cache figure: null, not 0", Chat, UsageChunk, TokenUsage{Output: 3},
			`{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8,"prompt_tokens_details":{"cached_tokens":null}}`},
		{"chat with reasoning", Chat, UsageChunk, TokenUsage{Prompt: known, Output: 10, Reasoning: 4},
			`{"prompt_tokens":5990,"completion_tokens":10,"total_tokens":6000,"prompt_tokens_details":{"cached_tokens":5987},"completion_tokens_details":{"reasoning_tokens":4}}`},
		{"responses", Responses, UsageCompleted, TokenUsage{Prompt: known, Output: 109},
			`{"input_tokens":5990,"input_tokens_details":{"cached_tokens":5987},"output_tokens":109,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":6099}`},
		{"responses without a figure", Responses, UsageCompleted, TokenUsage{Output: 2},
			`{"input_tokens":5,"input_tokens_details":{"cached_tokens":null},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":7}`},
		{"anthropic start: input excludes what the cache read and wrote", Anthropic, UsageStart, TokenUsage{Prompt: written, Output: 50},
			`{"input_tokens":512,"cache_creation_input_tokens":1024,"cache_read_input_tokens":512,"output_tokens":1}`},
		{"anthropic delta", Anthropic, UsageDelta, TokenUsage{Prompt: written, Output: 50},
			`{"input_tokens":512,"cache_creation_input_tokens":1024,"cache_read_input_tokens":512,"output_tokens":50}`},
		{"anthropic without a figure", Anthropic, UsageDelta, TokenUsage{Output: 7},
			`{"input_tokens":5,"cache_creation_input_tokens":null,"cache_read_input_tokens":null,"output_tokens":7}`},
	} {
		got := string(AppendUsage(nil, tc.d, tc.p, tc.u))
		if got != tc.want {
			t.Errorf("%s: AppendUsage(%v, %v, %+v) =\n%s\nwant\n%s", tc.name, tc.d, tc.p, tc.u, got, tc.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("%s: not JSON: %s", tc.name, got)
		}
	}
}

func TestCachedHint(t *testing.T) {
	none, n := int64(NoCacheFigure), int64(5987)
	for _, h := range []Hints{{Cached: &none}, {Cached: &n, ID: "gw-1"}} {
		if got := FindPromptHints([]byte(h.PromptMarker())); got.Cached == nil || *got.Cached != *h.Cached {
			t.Errorf("marker %q read back as %v", h.PromptMarker(), got.Cached)
		}
		if got := ParseHintHeader(h.HeaderValue()); got.Cached == nil || *got.Cached != *h.Cached {
			t.Errorf("header %q read back as %v", h.HeaderValue(), got.Cached)
		}
		body := AppendRequestBody(nil, Chat, RequestBody{Hints: h})
		sr, err := ParseServerRequest(body)
		if err != nil || sr.Hints.Cached == nil || *sr.Hints.Cached != *h.Cached {
			t.Errorf("body %s read back as %v, %v", body, sr.Hints.Cached, err)
		}
	}
	for _, bad := range []string{`{"pi_cached_tokens":"some"}`, `{"pi_cached_tokens":-3}`, `{"pi_cached_tokens":1e12}`} {
		if _, err := ParseServerRequest([]byte(bad)); err == nil {
			t.Errorf("ParseServerRequest(%s): no error", bad)
		}
	}
}

func TestPromptText(t *testing.T) {
	id := "gw-3"
	for _, tc := range []struct {
		name string
		body []byte
		want string
		ok   bool
	}{
		{"the short prompt", AppendRequestBody(nil, Chat, RequestBody{}), ChatPrompt, true},
		{"with a marker", AppendRequestBody(nil, Anthropic, RequestBody{Hints: Hints{ID: id}}), ChatPrompt, true},
		{"re-wrapped by a gateway", []byte(`{"contents":[{"parts":[{"text":"` + ChatPrompt + ` anan [sse-latency id=x]"}]}]}`), ChatPrompt + " anan", true},
		{"another client's", []byte(`{"messages":[{"role":"user","content":"hi"}]}`), "", false},
	} {
		got, ok := PromptText(tc.body)
		if string(got) != tc.want || ok != tc.ok {
			t.Errorf("%s: PromptText(%s) = %q, %v; want %q, %v", tc.name, tc.body, got, ok, tc.want, tc.ok)
		}
	}
	if n := PromptTokensOf([]byte(ChatPrompt)); n != PromptTokens {
		t.Errorf("PromptTokensOf(ChatPrompt) = %d, want the reference's %d", n, PromptTokens)
	}
}

func TestAppendBlockPrompt(t *testing.T) {
	const block = 512 * TokenBytes
	h := Hints{ID: "gw-1"}
	a := AppendBlockPrompt(nil, h, 3*block+100, []uint64{7, 8, 9, 10}, block)
	b := AppendBlockPrompt(nil, Hints{ID: "gw-2"}, 2*block+40, []uint64{7, 8, 11}, block)
	c := AppendBlockPrompt(nil, h, 3*block, []uint64{1, 8, 9}, block)
	body := AppendRequestBody(nil, Chat, RequestBody{Hints: h, PromptBytes: 3*block + 100, Blocks: []uint64{7, 8, 9, 10}, BlockBytes: block})
	text, ok := PromptText(body)
	if !ok || len(text) != 3*block+100 || PromptTokensOf(text) != (3*block+100)/TokenBytes {
		t.Fatalf("PromptText of a block prompt of %d bytes: %d bytes, %d tokens, %v", 3*block+100, len(text), PromptTokensOf(text), ok)
	}
	if !bytes.HasPrefix(a, []byte(ChatPrompt+" ")) || !strings.HasSuffix(string(a), " "+h.PromptMarker()) {
		t.Errorf("block prompt does not start with the prompt and end with the marker: %.40q … %q", a, a[len(a)-40:])
	}
	if !bytes.Equal(a[:2*block], b[:2*block]) {
		t.Error("prompts sharing blocks 7, 8 differ in their first two blocks")
	}
	if bytes.Equal(a[2*block:3*block], b[2*block:min(3*block, len(b))]) {
		t.Error("prompts differing in their third block agree there")
	}
	if bytes.Equal(a[:block], c[:block]) || !bytes.Equal(a[block:2*block], c[block:2*block]) {
		t.Error("block content must depend on the block's id alone")
	}
	for i, ch := range text {
		if !(ch == ' ' || 'a' <= ch && ch <= 'z' || strings.ContainsRune(ChatPrompt, rune(ch))) {
			t.Fatalf("byte %d of the prompt is %q: JSON would escape it, or a gateway's tokenizer see it", i, ch)
		}
	}
}
