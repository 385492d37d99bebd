package api

import (
	"encoding/json"
	"strings"
	"testing"
)

const encTs = 1_700_000_000_123_456_789 // pi_ts of every event in these tests

// encAnswer is the answer the exact-bytes tests encode: two tokens, "anan"
// and "huhu".
var encAnswer = Answer{No: 7, Model: "m", Tokens: 2, Created: 1_700_000_000}

// TestEncoderEvents pins every event of a two-token answer in every dialect,
// byte for byte: these are the wire formats the client scans.
func TestEncoderEvents(t *testing.T) {
	const chatHead = `data: {"id":"chatcmpl-sse-latency-7","object":"chat.completion.chunk","created":1700000000,"pi_ts":1700000000123456789,"model":"m",`
	const cmplHead = `data: {"id":"cmpl-sse-latency-7","object":"text_completion","created":1700000000,"pi_ts":1700000000123456789,"model":"m",`
	const respInProgress = `{"id":"resp_sselatency_7","object":"response","created_at":1700000000,"status":"in_progress","model":"m","output":[],"usage":null}`
	const respItemDone = `{"id":"msg_sselatency_7","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"ananhuhu","annotations":[]}]}`
	const respCompleted = `{"id":"resp_sselatency_7","object":"response","created_at":1700000000,"status":"completed","model":"m","output":[` + respItemDone + `],"usage":{"input_tokens":5,"input_tokens_details":{"cached_tokens":null},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":7}}`
	withUsage := encAnswer
	withUsage.IncludeUsage = true
	tests := []encCase{
		{
			name:  "chat",
			d:     Chat,
			a:     encAnswer,
			start: []string{chatHead + `"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}` + "\n\n"},
			tokens: []string{
				chatHead + `"choices":[{"index":0,"delta":{"content":"anan"},"finish_reason":null}]}` + "\n\n",
				chatHead + `"choices":[{"index":0,"delta":{"content":"huhu"},"finish_reason":null}]}` + "\n\n",
			},
			end: []string{
				chatHead + `"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n",
				"data: [DONE]\n\n",
			},
			body: `{"id":"chatcmpl-sse-latency-7","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ananhuhu"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":null}}}`,
		},
		{
			name:  "chat include_usage",
			d:     Chat,
			a:     withUsage,
			start: []string{chatHead + `"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}` + "\n\n"},
			tokens: []string{
				chatHead + `"choices":[{"index":0,"delta":{"content":"anan"},"finish_reason":null}]}` + "\n\n",
				chatHead + `"choices":[{"index":0,"delta":{"content":"huhu"},"finish_reason":null}]}` + "\n\n",
			},
			end: []string{
				chatHead + `"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n",
				chatHead + `"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":null}}}` + "\n\n",
				"data: [DONE]\n\n",
			},
			body: `{"id":"chatcmpl-sse-latency-7","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ananhuhu"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":null}}}`,
		},
		{
			name: "completions include_usage",
			d:    Completions,
			a:    withUsage,
			tokens: []string{
				cmplHead + `"choices":[{"text":"anan","index":0,"logprobs":null,"finish_reason":null}]}` + "\n\n",
				cmplHead + `"choices":[{"text":"huhu","index":0,"logprobs":null,"finish_reason":null}]}` + "\n\n",
			},
			end: []string{
				cmplHead + `"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"stop"}]}` + "\n\n",
				cmplHead + `"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":null}}}` + "\n\n",
				"data: [DONE]\n\n",
			},
			body: `{"id":"cmpl-sse-latency-7","object":"text_completion","created":1700000000,"model":"m","choices":[{"text":"ananhuhu","index":0,"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":null}}}`,
		},
		{
			name: "completions",
			d:    Completions,
			a:    encAnswer,
			tokens: []string{
				cmplHead + `"choices":[{"text":"anan","index":0,"logprobs":null,"finish_reason":null}]}` + "\n\n",
				cmplHead + `"choices":[{"text":"huhu","index":0,"logprobs":null,"finish_reason":null}]}` + "\n\n",
			},
			end: []string{
				cmplHead + `"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"stop"}]}` + "\n\n",
				"data: [DONE]\n\n",
			},
			body: `{"id":"cmpl-sse-latency-7","object":"text_completion","created":1700000000,"model":"m","choices":[{"text":"ananhuhu","index":0,"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":null}}}`,
		},
		{
			name: "responses",
			d:    Responses,
			a:    withUsage, // include_usage means nothing here
			start: []string{
				"event: response.created\ndata: " + `{"type":"response.created","sequence_number":0,"response":` + respInProgress + "}\n\n",
				"event: response.in_progress\ndata: " + `{"type":"response.in_progress","sequence_number":1,"response":` + respInProgress + "}\n\n",
				"event: response.output_item.added\ndata: " + `{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_sselatency_7","type":"message","status":"in_progress","role":"assistant","content":[]}}` + "\n\n",
				"event: response.content_part.added\ndata: " + `{"type":"response.content_part.added","sequence_number":3,"item_id":"msg_sselatency_7","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}` + "\n\n",
			},
			tokens: []string{
				"event: response.output_text.delta\ndata: " + `{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_sselatency_7","output_index":0,"content_index":0,"delta":"anan","logprobs":[],"pi_ts":1700000000123456789}` + "\n\n",
				"event: response.output_text.delta\ndata: " + `{"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_sselatency_7","output_index":0,"content_index":0,"delta":"huhu","logprobs":[],"pi_ts":1700000000123456789}` + "\n\n",
			},
			end: []string{
				"event: response.output_text.done\ndata: " + `{"type":"response.output_text.done","sequence_number":6,"item_id":"msg_sselatency_7","output_index":0,"content_index":0,"text":"ananhuhu","logprobs":[]}` + "\n\n",
				"event: response.content_part.done\ndata: " + `{"type":"response.content_part.done","sequence_number":7,"item_id":"msg_sselatency_7","output_index":0,"content_index":0,"part":{"type":"output_text","text":"ananhuhu","annotations":[]}}` + "\n\n",
				"event: response.output_item.done\ndata: " + `{"type":"response.output_item.done","sequence_number":8,"output_index":0,"item":` + respItemDone + "}\n\n",
				"event: response.completed\ndata: " + `{"type":"response.completed","sequence_number":9,"response":` + respCompleted + "}\n\n",
			},
			body: respCompleted,
		},
		{
			name: "anthropic",
			d:    Anthropic,
			a:    encAnswer,
			start: []string{
				"event: message_start\ndata: " + `{"type":"message_start","message":{"id":"msg_sselatency_7","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"cache_creation_input_tokens":null,"cache_read_input_tokens":null,"output_tokens":1}}}` + "\n\n",
				"event: content_block_start\ndata: " + `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n",
				"event: ping\ndata: " + `{"type":"ping"}` + "\n\n",
			},
			tokens: []string{
				"event: content_block_delta\ndata: " + `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"anan"},"pi_ts":1700000000123456789}` + "\n\n",
				"event: content_block_delta\ndata: " + `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"huhu"},"pi_ts":1700000000123456789}` + "\n\n",
			},
			end: []string{
				"event: content_block_stop\ndata: " + `{"type":"content_block_stop","index":0}` + "\n\n",
				"event: message_delta\ndata: " + `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":5,"cache_creation_input_tokens":null,"cache_read_input_tokens":null,"output_tokens":2}}` + "\n\n",
				"event: message_stop\ndata: " + `{"type":"message_stop"}` + "\n\n",
			},
			body: `{"id":"msg_sselatency_7","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ananhuhu"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"cache_creation_input_tokens":null,"cache_read_input_tokens":null,"output_tokens":2}}`,
		},
	}
	for _, tt := range tests {
		checkEncoder(t, tt)
	}
}

// checkSSEEvent checks that ev is one SSE event — an optional "event: " line,
// one "data: " line, an empty line — whose data is JSON or [DONE].
func checkSSEEvent(t *testing.T, what, ev string) {
	t.Helper()
	body, ok := strings.CutSuffix(ev, "\n\n")
	if !ok {
		t.Errorf("%s: %q does not end in an empty line", what, ev)
		return
	}
	lines := strings.Split(body, "\n")
	if len(lines) == 2 && strings.HasPrefix(lines[0], "event: ") {
		lines = lines[1:]
	}
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "data: ") {
		t.Errorf("%s: %q is not [event: line] + one data: line", what, ev)
		return
	}
	if data := strings.TrimPrefix(lines[0], "data: "); data != Done && !json.Valid([]byte(data)) {
		t.Errorf("%s: data %q is not JSON", what, data)
	}
}

// TestEncoderModel checks the model echo: the request's model, JSON-escaped,
// or Model when the request named none.
func TestEncoderModel(t *testing.T) {
	tests := []struct {
		model string
		want  string // as it appears in the JSON
	}{
		{"", `"sse-latency-1"`},
		{"gpt-4o", `"gpt-4o"`},
		{`a"b\c` + "\n\x01é", `"a\"b\\c\n\u0001é"`},
	}
	for _, tt := range tests {
		for _, d := range Dialects {
			a := encAnswer
			a.Model = tt.model
			e := NewEncoder(d, a)
			evs := string(e.AppendBody(nil))
			for i := range e.StartEvents() {
				evs += string(e.AppendStart(nil, i, encTs))
			}
			for i := range e.EndEvents() {
				evs += string(e.AppendEnd(nil, i, encTs))
			}
			if !strings.Contains(evs, `"model":`+tt.want) {
				t.Errorf("%v with model %q: no \"model\":%s in\n%s", d, tt.model, tt.want, evs)
			}
			for i := range e.StartEvents() {
				checkSSEEvent(t, d.String()+" start", string(e.AppendStart(nil, i, encTs)))
			}
			if !json.Valid(e.AppendBody(nil)) {
				t.Errorf("%v with model %q: body is not JSON", d, tt.model)
			}
		}
	}
}

// TestEncoderLongAnswer checks what varies with the token count: texts,
// sequence numbers and usage, on an answer longer than the token cycle.
func TestEncoderLongAnswer(t *testing.T) {
	const n = 60
	var all strings.Builder
	for i := range n {
		all.WriteString(Token(i))
	}
	a := Answer{No: 1, Tokens: n, IncludeUsage: true}
	tests := []struct {
		d    Dialect
		last string // in the event of the last token
		ends []string
	}{
		{Chat, `"content":"` + Token(n-1) + `"`, []string{`"completion_tokens":60,"total_tokens":65`}},
		{Completions, `"text":"` + Token(n-1) + `"`, []string{`"completion_tokens":60,"total_tokens":65`}},
		{Responses, `"sequence_number":63,` + `"item_id":"msg_sselatency_1","output_index":0,"content_index":0,"delta":"` + Token(n-1) + `"`,
			[]string{`"sequence_number":64,`, `"text":"` + all.String() + `"`, `"sequence_number":67,`, `"output_tokens":60,`}},
		{Anthropic, `"text":"` + Token(n-1) + `"`, []string{`"usage":{"input_tokens":5,"cache_creation_input_tokens":null,"cache_read_input_tokens":null,"output_tokens":60}`}},
	}
	for _, tt := range tests {
		e := NewEncoder(tt.d, a)
		if got := string(e.AppendToken(nil, n-1, encTs)); !strings.Contains(got, tt.last) {
			t.Errorf("%v: AppendToken(%d) = %q, want it to contain %q", tt.d, n-1, got, tt.last)
		}
		var end strings.Builder
		for i := range e.EndEvents() {
			end.Write(e.AppendEnd(nil, i, encTs))
		}
		for _, w := range tt.ends {
			if !strings.Contains(end.String(), w) {
				t.Errorf("%v: end events do not contain %q:\n%s", tt.d, w, end.String())
			}
		}
		if !strings.Contains(string(e.AppendBody(nil)), all.String()) {
			t.Errorf("%v: body lacks the %d tokens' text", tt.d, n)
		}
	}
}

// TestEncoderTokenDoesNotAllocate pins the per-token path: no allocation
// when the buffer has room, in every phase (the first token of a phase,
// which carries the events that open it, is left out: it may grow the
// buffer once).
func TestEncoderTokenDoesNotAllocate(t *testing.T) {
	for _, d := range Dialects {
		for _, field := range []ReasoningField{ReasoningContent, ReasoningPlain} {
			a := Answer{No: 123456, Model: "some-model", Tokens: 1000, Reasoning: 1000, ToolCall: 1000, ReasoningField: field}
			e := NewEncoder(d, a)
			buf := make([]byte, 0, 1024)
			for _, first := range []int{0, 1000, 2000} {
				k := first + 1
				allocs := testing.AllocsPerRun(100, func() {
					buf = e.AppendToken(buf[:0], k, encTs)
					k++
				})
				if allocs != 0 {
					t.Errorf("%v/%v: AppendToken(%d…) allocates %.1f times per call, want 0", d, field, first+1, allocs)
				}
			}
		}
	}
}

// BenchmarkEncoderAppendToken encodes a text token (the names the benchmark
// had before the phases), then a reasoning and a tool-call token; under
// instance/, the same naming the server instance (Answer.Instance).
func BenchmarkEncoderAppendToken(b *testing.B) {
	for _, d := range Dialects {
		for _, p := range []Phase{PhaseText, PhaseReasoning, PhaseToolCall} {
			name := d.String()
			if p != PhaseText {
				if d == Completions {
					continue
				}
				name += "/" + p.String()
			}
			for _, inst := range []InstanceField{nil, NewInstanceField("sse-latency-server-0")} {
				name := name
				if inst != nil { // first, so that -test.bench (or -test.skip) 'AppendToken/^instance$' picks them
					name = "instance/" + name
				}
				benchmarkEncoderToken(b, name, d, p, inst)
			}
		}
	}
}

// benchmarkEncoderToken runs BenchmarkEncoderAppendToken's benchmark of
// phase p in dialect d, the events naming instance inst (nil: none).
func benchmarkEncoderToken(b *testing.B, name string, d Dialect, p Phase, inst InstanceField) {
	b.Run(name, func(b *testing.B) {
		e := NewEncoder(d, Answer{No: 1, Tokens: 1000, Reasoning: 1000, ToolCall: 1000, Instance: inst})
		k := 9 + int(p)*1000 // in the middle of phase p
		if d == Completions {
			k = 9
		}
		buf := make([]byte, 0, 1024)
		b.ReportAllocs()
		for b.Loop() {
			buf = e.AppendToken(buf[:0], k, encTs)
		}
	})
}
