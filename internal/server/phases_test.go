package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/emission"
)

// phaseTexts is the text each phase of an answer streams, unescaped.
func phaseTexts(r, c, n int) [api.NumPhases]string {
	var w [api.NumPhases]string
	for k := range r {
		w[api.PhaseReasoning] += api.PhaseToken(api.PhaseReasoning, k)
	}
	w[api.PhaseToolCall] = string(api.AppendArguments(nil, c))
	w[api.PhaseText] = allText(n)
	return w
}

// scannedToken is one token event of a stream, as the client scans it.
type scannedToken struct {
	phase api.Phase
	piTs  int64
	chunk int // the HTTP chunk that carried it
}

// scanStream splits each chunk of a stream into its SSE events and scans
// them as the client does; it returns each phase's text and the token
// events in order. It fails the test on an event that is not JSON (or
// [DONE]), a malformed or failed one, and a stream whose terminal event is
// not the last.
func scanStream(t *testing.T, what string, d api.Dialect, chunks []string) (texts [api.NumPhases]string, toks []scannedToken) {
	t.Helper()
	var evs []string
	var chunkOf []int
	for i, c := range chunks {
		for _, ev := range strings.SplitAfter(c, "\n\n") {
			if ev != "" {
				evs, chunkOf = append(evs, ev), append(chunkOf, i)
			}
		}
	}
	for i, ev := range evs {
		var name, data string
		for _, line := range strings.Split(strings.TrimSuffix(ev, "\n\n"), "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				name = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				data = v
			} else {
				t.Fatalf("%s: event %d %q: line %q is neither event: nor data:", what, i, ev, line)
			}
		}
		if data != api.Done && !json.Valid([]byte(data)) {
			t.Fatalf("%s: event %d data %q is not JSON", what, i, data)
		}
		var evName []byte
		if name != "" {
			evName = []byte(name)
		}
		s := api.ScanEvent(d, evName, []byte(data))
		if s.Has(api.Malformed) || s.Has(api.Failed) || s.Has(api.Terminal) != (i == len(evs)-1) {
			t.Fatalf("%s: event %d of %d %q scans as flags %08b", what, i, len(evs), ev, s.Flags)
		}
		for p := range api.Phase(api.NumPhases) {
			raw, _ := s.Text(p)
			if len(raw) == 0 {
				continue
			}
			text, _ := api.AppendUnescaped(nil, raw)
			texts[p] += string(text)
			toks = append(toks, scannedToken{phase: p, piTs: s.PiTs, chunk: chunkOf[i]})
		}
	}
	return texts, toks
}

// TestPhaseStreams streams answers with reasoning and a tool call from
// every dialect, the phases asked for through each hint channel, and
// checks what the client relies on: each phase's text exactly, one token
// per event and chunk, every token stamped, in phase order; the schedule
// (reasoning spread over the think time, the tokens after it on the -d
// cadence from its end: lower bounds only, an emission can be late but not
// early); the registry's times equal to the pi_ts, all phases.
func TestPhaseStreams(t *testing.T) {
	reg := emission.New()
	srv := startServer(t, Config{Tokens: 1000, DelayMs: 1, Emissions: reg})
	const (
		r, c, n = 5, 3, 4
		thinkMs = 40.0
		slack   = earlySlack
	)
	hdr := api.HintHeader + ": "
	channels := []struct {
		name   string
		hints  string // JSON fields, after a comma
		header []string
		prompt string
	}{
		{"json", fmt.Sprintf(`"pi_tokens":%d,"pi_reasoning_tokens":%d,"pi_tool_call_tokens":%d,"pi_think_ms":%v,"pi_delay_ms":1`, n, r, c, thinkMs), nil, ""},
		{"header", "", []string{fmt.Sprintf("%sid=%%s; tokens=%d; reasoning=%d; tool_call=%d; think=%v; delay=1", hdr, n, r, c, thinkMs)}, ""},
		{"prompt", "", nil, fmt.Sprintf(" [sse-latency id=%%s tokens=%d reasoning=%d tool_call=%d think=%v delay=1]", n, r, c, thinkMs)},
	}
	bodies := map[api.Dialect]string{
		api.Chat:      `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi%s"}]`,
		api.Responses: `{"model":"m","stream":true,"input":"hi%s"`,
		api.Anthropic: `{"model":"m","stream":true,"max_tokens":4096,"messages":[{"role":"user","content":"hi%s"}]`,
	}
	want := phaseTexts(r, c, n)
	for _, d := range []api.Dialect{api.Chat, api.Responses, api.Anthropic} {
		for _, ch := range channels {
			id := fmt.Sprintf("ph-%s-%s", d, ch.name)
			what := fmt.Sprintf("%s via %s", d, ch.name)
			prompt := ch.prompt
			if prompt != "" {
				prompt = fmt.Sprintf(prompt, id)
			}
			body := fmt.Sprintf(bodies[d], prompt)
			if ch.hints != "" {
				body += `,"pi_id":"` + id + `",` + ch.hints
			}
			body += "}"
			var header []string
			for _, h := range ch.header {
				header = append(header, fmt.Sprintf(h, id))
			}
			before := clock.Real.Now()
			h, b := splitResponse(t, exchange(t, srv, postRequest(d.Path(), body, header...)))
			if h != streamHead {
				t.Fatalf("%s: head %q body %q", what, h, b)
			}
			chunks := dechunk(t, b)
			texts, toks := scanStream(t, what, d, chunks)
			if texts != want {
				t.Errorf("%s: texts %q, want %q", what, texts, want)
			}
			if len(toks) != r+c+n {
				t.Fatalf("%s: %d token events, want %d", what, len(toks), r+c+n)
			}
			times := reg.Take(id)
			if times == nil || times.Len() != r+c+n {
				t.Fatalf("%s: registry entry %v, want %d times", what, times, r+c+n)
			}
			for k, tok := range toks {
				p, _ := api.LocateToken(k, r, c)
				if tok.phase != p || tok.piTs <= 0 || (k > 0 && (tok.piTs < toks[k-1].piTs || tok.chunk == toks[k-1].chunk)) {
					t.Errorf("%s: token %d: phase %s pi_ts %d chunk %d; want phase %s, stamped, after token %d in a chunk of its own",
						what, k, tok.phase, tok.piTs, tok.chunk, p, k-1)
				}
				if got := times.At(k); got != tok.piTs {
					t.Errorf("%s: registry time of token %d = %d, want its pi_ts %d", what, k, got, tok.piTs)
				}
				due := int64(0)
				switch {
				case k < r:
					due = int64(k) * int64(thinkMs*1e6) / r
				default:
					due = int64(thinkMs*1e6) + int64(k-r)*1e6
				}
				if tok.piTs < before+due-slack {
					t.Errorf("%s: token %d (%s) stamped %.3f ms after the request was sent, due at %.3f ms at the earliest",
						what, k, tok.phase, float64(tok.piTs-before)/1e6, float64(due)/1e6)
				}
			}
		}
	}
}

// TestPhaseDefaults: the server's own phase counts apply to every answer
// without hints, except Completions, which streams text only; a hint of 0
// turns a phase off.
func TestPhaseDefaults(t *testing.T) {
	srv := startServer(t, Config{Tokens: 3, Reasoning: 2, ToolCall: 2, ReasoningField: api.ReasoningPlain, DelayMs: 0.1})
	tests := []struct {
		d    api.Dialect
		body string
		want [api.NumPhases]string
	}{
		{api.Chat, `{"stream":true}`, phaseTexts(2, 2, 3)},
		{api.Responses, `{"stream":true}`, phaseTexts(2, 2, 3)},
		{api.Anthropic, `{"stream":true}`, phaseTexts(2, 2, 3)},
		{api.Completions, `{"stream":true}`, phaseTexts(0, 0, 3)},
		{api.Chat, `{"stream":true,"pi_reasoning_tokens":0}`, phaseTexts(0, 2, 3)},
		{api.Anthropic, `{"stream":true,"pi_tool_call_tokens":0,"pi_tokens":0}`, phaseTexts(2, 0, 0)},
		{api.Responses, `{"stream":true,"pi_tokens":0}`, phaseTexts(2, 2, 0)},
	}
	for _, tt := range tests {
		what := tt.d.String() + " " + tt.body
		h, b := splitResponse(t, exchange(t, srv, postRequest(tt.d.Path(), tt.body)))
		if h != streamHead {
			t.Fatalf("%s: head %q body %q", what, h, b)
		}
		texts, _ := scanStream(t, what, tt.d, dechunk(t, b))
		if texts != tt.want {
			t.Errorf("%s: texts %q, want %q", what, texts, tt.want)
		}
		// The plain shape of the reasoning: Chat's delta.reasoning,
		// Responses' reasoning_text.
		if tt.d == api.Chat && tt.want[api.PhaseReasoning] != "" && !strings.Contains(b, `"delta":{"reasoning":"ANAN"}`) {
			t.Errorf("%s: no delta.reasoning in %q", what, b)
		}
		if tt.d == api.Responses && tt.want[api.PhaseReasoning] != "" && !strings.Contains(b, `"type":"response.reasoning_text.delta"`) {
			t.Errorf("%s: no response.reasoning_text.delta in %q", what, b)
		}
	}
}

// TestPhaseNonStreaming checks the one-object answer with every phase, in
// each dialect's non-streaming shape.
func TestPhaseNonStreaming(t *testing.T) {
	srv := startServer(t, Config{Tokens: 2, Reasoning: 3, ToolCall: 2, DelayMs: 0.01})
	w := phaseTexts(3, 2, 2)
	args := q(w[api.PhaseToolCall])
	tests := []struct {
		path, body string
		fields     map[string]string
	}{
		{"/v1/chat/completions", `{"model":"m"}`, map[string]string{
			"choices.0.message.content": q(w[api.PhaseText]), "choices.0.message.reasoning_content": q(w[api.PhaseReasoning]),
			"choices.0.message.tool_calls.0.type": `"function"`, "choices.0.message.tool_calls.0.function.name": q(api.ToolName),
			"choices.0.message.tool_calls.0.function.arguments": args, "choices.0.finish_reason": `"tool_calls"`,
			"usage.completion_tokens": "7", "usage.completion_tokens_details.reasoning_tokens": "3"}},
		{"/v1/chat/completions", `{"model":"m","pi_tokens":0}`, map[string]string{
			"choices.0.message.content": "null", "choices.0.message.tool_calls.0.function.arguments": args}},
		{"/v1/responses", `{"model":"m"}`, map[string]string{
			"output.0.type": `"reasoning"`, "output.0.summary.0.text": q(w[api.PhaseReasoning]),
			"output.1.type": `"function_call"`, "output.1.arguments": args, "output.1.name": q(api.ToolName), "output.1.status": `"completed"`,
			"output.2.type": `"message"`, "output.2.content.0.text": q(w[api.PhaseText]),
			"usage.output_tokens": "7", "usage.output_tokens_details.reasoning_tokens": "3"}},
		{"/v1/messages", `{"model":"m","max_tokens":4096}`, map[string]string{
			"content.0.type": `"thinking"`, "content.0.thinking": q(w[api.PhaseReasoning]), "content.0.signature": q(api.AnthropicSignature),
			"content.1.type": `"tool_use"`, "content.1.input.words": q(w[api.PhaseToolCall][len(api.ArgumentsPrefix) : len(w[api.PhaseToolCall])-len(api.ArgumentsSuffix)]),
			"content.2.type": `"text"`, "content.2.text": q(w[api.PhaseText]), "stop_reason": `"tool_use"`, "usage.output_tokens": "7"}},
		{"/v1/completions", `{"model":"m"}`, map[string]string{
			"choices.0.text": q(w[api.PhaseText]), "choices.0.finish_reason": `"stop"`, "usage.completion_tokens": "2"}},
	}
	for _, tt := range tests {
		what := tt.path + " " + tt.body
		h, b := splitResponse(t, exchange(t, srv, postRequest(tt.path, tt.body)))
		if !strings.HasPrefix(h, "HTTP/1.1 200 OK\r\n") {
			t.Errorf("%s: head %q", what, h)
			continue
		}
		var obj any
		dec := json.NewDecoder(strings.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&obj); err != nil {
			t.Errorf("%s: body %q: %v", what, b, err)
			continue
		}
		for path, want := range tt.fields {
			if v, ok := jget(obj, path); !ok || jstr(v) != want {
				t.Errorf("%s: %s = %s, want %s", what, path, jstr(v), want)
			}
		}
	}
}

// TestPhaseHintErrors: the phase hints are checked like pi_tokens — a
// value that is not a count, or above the cap, gets a 400 naming the hint
// as its channel spells it — and Completions refuses them.
func TestPhaseHintErrors(t *testing.T) {
	srv := startServer(t, Config{Tokens: 2, DelayMs: 0.1, MaxTokens: 100})
	hdr := api.HintHeader + ": "
	tests := []struct {
		name, req, code string
		msgs            []string
	}{
		{"pi_reasoning_tokens above the cap", postRequest("/v1/chat/completions", `{"stream":true,"pi_reasoning_tokens":101}`),
			"hint_above_limit", []string{"pi_reasoning_tokens 101 in the JSON body", "limit is 100"}},
		{"pi_tool_call_tokens above the cap", postRequest("/v1/responses", `{"pi_tool_call_tokens":1000}`),
			"hint_above_limit", []string{"pi_tool_call_tokens 1000 in the JSON body", "limit is 100"}},
		{"header reasoning above the cap", postRequest("/v1/messages", `{"stream":true}`, hdr+"reasoning=500"),
			"hint_above_limit", []string{"reasoning=500 in the X-SSE-Latency header", "limit is 100"}},
		{"prompt tool call above the cap", postRequest("/v1/messages", `{"messages":[{"role":"user","content":"[sse-latency tool_call=101]"}]}`),
			"hint_above_limit", []string{"tool_call=101 in the prompt marker", "limit is 100"}},
		{"pi_reasoning_tokens not a number", postRequest("/v1/chat/completions", `{"pi_reasoning_tokens":"lots"}`),
			"invalid_request_error", []string{"pi_reasoning_tokens must be a number"}},
		{"pi_tool_call_tokens beyond 2^31-1", postRequest("/v1/chat/completions", `{"pi_tool_call_tokens":1e10}`),
			"invalid_request_error", []string{"pi_tool_call_tokens too large"}},
		{"completions with reasoning", postRequest("/v1/completions", `{"stream":true,"pi_reasoning_tokens":3}`),
			"invalid_request_error", []string{"pi_reasoning_tokens 3 cannot be served on /completions"}},
		{"completions with a tool call by header", postRequest("/v1/completions", `{"stream":true}`, hdr+"tool_call=1"),
			"invalid_request_error", []string{"pi_tool_call_tokens 1 cannot be served on /completions"}},
	}
	for _, tt := range tests {
		checkError(t, tt.name, exchange(t, srv, tt.req), "400 Bad Request", tt.code, tt.msgs...)
	}
	// 0 is no phase, on Completions too; the caps are per phase.
	for _, req := range []string{
		postRequest("/v1/completions", `{"stream":true,"pi_reasoning_tokens":0,"pi_tool_call_tokens":0}`),
		postRequest("/v1/chat/completions", `{"stream":true,"pi_tokens":100,"pi_reasoning_tokens":100,"pi_tool_call_tokens":100,"pi_delay_ms":0}`),
	} {
		if h, b := splitResponse(t, exchange(t, srv, req)); h != streamHead {
			t.Errorf("%q: head %q body %q, want a stream", req, h, b)
		}
	}
}

// TestPhaseLog: the debug line of a stream names its phases.
func TestPhaseLog(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	srv := startServer(t, Config{Tokens: 1, Reasoning: 2, ToolCall: 3, DelayMs: 0.1,
		Logf: func(f string, a ...any) { mu.Lock(); lines = append(lines, fmt.Sprintf(f, a...)); mu.Unlock() }})
	exchange(t, srv, postRequest("/v1/messages", `{"stream":true}`))
	// The line is written before the stream's first byte.
	mu.Lock()
	defer mu.Unlock()
	for _, l := range lines {
		if strings.Contains(l, " stream ") {
			if !strings.Contains(l, "6 tokens (2 reasoning, 3 tool call)") {
				t.Errorf("stream log line %q does not name the phases", l)
			}
			return
		}
	}
	t.Errorf("no stream log line among %q", lines)
}
