package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// phaseAnswer is the answer the exact-bytes phase tests encode: two
// reasoning tokens (ANAN HUHU), a tool call of two argument tokens
// ({"words":"AnanHuhu"}), two text tokens (anan huhu).
var phaseAnswer = Answer{No: 7, Model: "m", Tokens: 2, Reasoning: 2, ToolCall: 2, Created: 1_700_000_000, IncludeUsage: true}

// sse frames a data payload as an SSE event, with an event line if name is
// not empty.
func sse(name, data string) string {
	if name == "" {
		return "data: " + data + "\n\n"
	}
	return "event: " + name + "\ndata: " + data + "\n\n"
}

// TestEncoderPhaseEvents pins every event of an answer with all three
// phases, byte for byte, in each dialect and reasoning shape.
func TestEncoderPhaseEvents(t *testing.T) {
	const ts = `"pi_ts":1700000000123456789`
	const argsJSON = `{\"words\":\"AnanHuhu\"}`
	chatHead := `{"id":"chatcmpl-sse-latency-7","object":"chat.completion.chunk","created":1700000000,` + ts + `,"model":"m","choices":[{"index":0,"delta":`
	chat := func(delta string) string { return sse("", chatHead+delta+`,"finish_reason":null}]}`) }
	chatCase := func(field string) encCase {
		return encCase{
			name: "chat " + field, d: Chat,
			start: []string{chat(`{"role":"assistant"}`)},
			tokens: []string{
				chat(`{"` + field + `":"ANAN"}`),
				chat(`{"` + field + `":"HUHU"}`),
				chat(`{"tool_calls":[{"index":0,"id":"call_sselatency_7","type":"function","function":{"name":"sse_latency_words","arguments":""}}]}`) +
					chat(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"words\":\"Anan"}}]}`),
				chat(`{"tool_calls":[{"index":0,"function":{"arguments":"Huhu\"}"}}]}`),
				chat(`{"content":"anan"}`),
				chat(`{"content":"huhu"}`),
			},
			end: []string{
				sse("", chatHead+`{},"finish_reason":"tool_calls"}]}`),
				sse("", `{"id":"chatcmpl-sse-latency-7","object":"chat.completion.chunk","created":1700000000,`+ts+`,"model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":6,"total_tokens":11,"prompt_tokens_details":{"cached_tokens":null},"completion_tokens_details":{"reasoning_tokens":2}}}`),
				"data: [DONE]\n\n",
			},
			body: `{"id":"chatcmpl-sse-latency-7","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ananhuhu","` + field + `":"ANANHUHU",` +
				`"tool_calls":[{"id":"call_sselatency_7","type":"function","function":{"name":"sse_latency_words","arguments":"` + argsJSON + `"}}]},"finish_reason":"tool_calls"}],` +
				`"usage":{"prompt_tokens":5,"completion_tokens":6,"total_tokens":11,"prompt_tokens_details":{"cached_tokens":null},"completion_tokens_details":{"reasoning_tokens":2}}}`,
		}
	}

	resp := func(typ string, seq int, rest string) string {
		return sse(typ, `{"type":"`+typ+`","sequence_number":`+strconv.Itoa(seq)+rest+`}`)
	}
	const (
		inProgress = `{"id":"resp_sselatency_7","object":"response","created_at":1700000000,"status":"in_progress","model":"m","output":[],"usage":null}`
		fcRef      = `,"item_id":"fc_sselatency_7","output_index":1`
		msgRef     = `,"item_id":"msg_sselatency_7","output_index":2,"content_index":0`
		fcItem     = `{"id":"fc_sselatency_7","type":"function_call","status":"completed","arguments":"` + argsJSON + `","call_id":"call_sselatency_7","name":"sse_latency_words"}`
		msgItem    = `{"id":"msg_sselatency_7","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"ananhuhu","annotations":[]}]}`
	)
	respCase := func(field ReasoningField) encCase {
		rsRef := `,"item_id":"rs_sselatency_7","output_index":0,"summary_index":0`
		rsAdded, rsItem := `{"id":"rs_sselatency_7","type":"reasoning","summary":[]}`,
			`{"id":"rs_sselatency_7","type":"reasoning","summary":[{"type":"summary_text","text":"ANANHUHU"}]}`
		part, delta, done, partDone := "response.reasoning_summary_part.added", "response.reasoning_summary_text.delta",
			"response.reasoning_summary_text.done", "response.reasoning_summary_part.done"
		partJSON := `{"type":"summary_text","text":"`
		if field == ReasoningPlain {
			rsRef = `,"item_id":"rs_sselatency_7","output_index":0,"content_index":0`
			rsAdded, rsItem = `{"id":"rs_sselatency_7","type":"reasoning","summary":[],"content":[]}`,
				`{"id":"rs_sselatency_7","type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"ANANHUHU"}]}`
			part, delta, done, partDone = "response.content_part.added", "response.reasoning_text.delta",
				"response.reasoning_text.done", "response.content_part.done"
			partJSON = `{"type":"reasoning_text","text":"`
		}
		completed := `{"id":"resp_sselatency_7","object":"response","created_at":1700000000,"status":"completed","model":"m","output":[` +
			rsItem + `,` + fcItem + `,` + msgItem + `],"usage":{"input_tokens":5,"input_tokens_details":{"cached_tokens":null},"output_tokens":6,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":11}}`
		return encCase{
			name: "responses " + field.String(), d: Responses, field: field,
			start: []string{
				resp("response.created", 0, `,"response":`+inProgress),
				resp("response.in_progress", 1, `,"response":`+inProgress),
				resp("response.output_item.added", 2, `,"output_index":0,"item":`+rsAdded),
				resp(part, 3, rsRef+`,"part":`+partJSON+`"}`),
			},
			tokens: []string{
				resp(delta, 4, rsRef+`,"delta":"ANAN",`+ts),
				resp(delta, 5, rsRef+`,"delta":"HUHU",`+ts),
				resp(done, 6, rsRef+`,"text":"ANANHUHU"`) +
					resp(partDone, 7, rsRef+`,"part":`+partJSON+`ANANHUHU"}`) +
					resp("response.output_item.done", 8, `,"output_index":0,"item":`+rsItem) +
					resp("response.output_item.added", 9, `,"output_index":1,"item":{"id":"fc_sselatency_7","type":"function_call","status":"in_progress","arguments":"","call_id":"call_sselatency_7","name":"sse_latency_words"}`) +
					resp("response.function_call_arguments.delta", 10, fcRef+`,"delta":"{\"words\":\"Anan",`+ts),
				resp("response.function_call_arguments.delta", 11, fcRef+`,"delta":"Huhu\"}",`+ts),
				resp("response.function_call_arguments.done", 12, fcRef+`,"arguments":"`+argsJSON+`"`) +
					resp("response.output_item.done", 13, `,"output_index":1,"item":`+fcItem) +
					resp("response.output_item.added", 14, `,"output_index":2,"item":{"id":"msg_sselatency_7","type":"message","status":"in_progress","role":"assistant","content":[]}`) +
					resp("response.content_part.added", 15, msgRef+`,"part":{"type":"output_text","text":"","annotations":[]}`) +
					resp("response.output_text.delta", 16, msgRef+`,"delta":"anan","logprobs":[],`+ts),
				resp("response.output_text.delta", 17, msgRef+`,"delta":"huhu","logprobs":[],`+ts),
			},
			end: []string{
				resp("response.output_text.done", 18, msgRef+`,"text":"ananhuhu","logprobs":[]`),
				resp("response.content_part.done", 19, msgRef+`,"part":{"type":"output_text","text":"ananhuhu","annotations":[]}`),
				resp("response.output_item.done", 20, `,"output_index":2,"item":`+msgItem),
				resp("response.completed", 21, `,"response":`+completed),
			},
			body: completed,
		}
	}

	block := func(typ string, index int, rest string) string {
		return sse(typ, `{"type":"`+typ+`","index":`+strconv.Itoa(index)+rest+`}`)
	}
	anthDelta := func(index int, delta string) string {
		return block("content_block_delta", index, `,"delta":`+delta+`,`+ts)
	}
	tests := []encCase{
		chatCase("reasoning_content"),
		chatCase("reasoning"),
		{
			name: "completions drops the phases", d: Completions,
			tokens: []string{
				sse("", `{"id":"cmpl-sse-latency-7","object":"text_completion","created":1700000000,`+ts+`,"model":"m","choices":[{"text":"anan","index":0,"logprobs":null,"finish_reason":null}]}`),
				sse("", `{"id":"cmpl-sse-latency-7","object":"text_completion","created":1700000000,`+ts+`,"model":"m","choices":[{"text":"huhu","index":0,"logprobs":null,"finish_reason":null}]}`),
				"", "", "", "", // tokens 2..5 do not exist
			},
			end: []string{
				sse("", `{"id":"cmpl-sse-latency-7","object":"text_completion","created":1700000000,`+ts+`,"model":"m","choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"stop"}]}`),
				sse("", `{"id":"cmpl-sse-latency-7","object":"text_completion","created":1700000000,`+ts+`,"model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":null}}}`),
				"data: [DONE]\n\n",
			},
			body: `{"id":"cmpl-sse-latency-7","object":"text_completion","created":1700000000,"model":"m","choices":[{"text":"ananhuhu","index":0,"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":null}}}`,
		},
		respCase(ReasoningContent),
		respCase(ReasoningPlain),
		{
			name: "anthropic", d: Anthropic,
			start: []string{
				sse("message_start", `{"type":"message_start","message":{"id":"msg_sselatency_7","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"cache_creation_input_tokens":null,"cache_read_input_tokens":null,"output_tokens":1}}}`),
				block("content_block_start", 0, `,"content_block":{"type":"thinking","thinking":"","signature":""}`),
				sse("ping", `{"type":"ping"}`),
			},
			tokens: []string{
				anthDelta(0, `{"type":"thinking_delta","thinking":"ANAN"}`),
				anthDelta(0, `{"type":"thinking_delta","thinking":"HUHU"}`),
				block("content_block_delta", 0, `,"delta":{"type":"signature_delta","signature":"c3NlLWxhdGVuY3k="}`) +
					block("content_block_stop", 0, "") +
					block("content_block_start", 1, `,"content_block":{"type":"tool_use","id":"toolu_sselatency_7","name":"sse_latency_words","input":{}}`) +
					anthDelta(1, `{"type":"input_json_delta","partial_json":"{\"words\":\"Anan"}`),
				anthDelta(1, `{"type":"input_json_delta","partial_json":"Huhu\"}"}`),
				block("content_block_stop", 1, "") +
					block("content_block_start", 2, `,"content_block":{"type":"text","text":""}`) +
					anthDelta(2, `{"type":"text_delta","text":"anan"}`),
				anthDelta(2, `{"type":"text_delta","text":"huhu"}`),
			},
			end: []string{
				block("content_block_stop", 2, ""),
				sse("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":5,"cache_creation_input_tokens":null,"cache_read_input_tokens":null,"output_tokens":6}}`),
				sse("message_stop", `{"type":"message_stop"}`),
			},
			body: `{"id":"msg_sselatency_7","type":"message","role":"assistant","model":"m","content":[` +
				`{"type":"thinking","thinking":"ANANHUHU","signature":"c3NlLWxhdGVuY3k="},` +
				`{"type":"tool_use","id":"toolu_sselatency_7","name":"sse_latency_words","input":{"words":"AnanHuhu"}},` +
				`{"type":"text","text":"ananhuhu"}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"cache_creation_input_tokens":null,"cache_read_input_tokens":null,"output_tokens":6}}`,
		},
	}
	for _, tt := range tests {
		a := phaseAnswer
		a.ReasoningField = tt.field
		if tt.name == "chat reasoning" {
			a.ReasoningField = ReasoningPlain
		}
		tt.a = a
		checkEncoder(t, tt)
	}
}

// encCase is one answer and every event and the body its encoder must
// write.
type encCase struct {
	name   string
	d      Dialect
	field  ReasoningField
	a      Answer
	start  []string
	tokens []string // each: the events AppendToken(k) appends (a phase's opening, then the token's)
	end    []string
	body   string
}

// checkEncoder compares every event of tt's encoder with tt's, checks that
// each is well-formed SSE with JSON data, and that out-of-range indexes
// append nothing.
func checkEncoder(t *testing.T, tt encCase) {
	t.Helper()
	e := NewEncoder(tt.d, tt.a)
	if got := e.StartEvents(); got != len(tt.start) {
		t.Errorf("%s: StartEvents() = %d, want %d", tt.name, got, len(tt.start))
	}
	if got := e.EndEvents(); got != len(tt.end) {
		t.Errorf("%s: EndEvents() = %d, want %d", tt.name, got, len(tt.end))
	}
	check := func(what, got, want string, many bool) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %s =\n%s\nwant\n%s", tt.name, what, got, want)
		}
		evs := []string{got}
		if many {
			evs = splitEvents(got)
		}
		for _, ev := range evs {
			checkSSEEvent(t, tt.name+": "+what, ev)
		}
	}
	for i, want := range tt.start {
		check("AppendStart("+strconv.Itoa(i)+")", string(e.AppendStart(nil, i, encTs)), want, false)
	}
	for k, want := range tt.tokens {
		check("AppendToken("+strconv.Itoa(k)+")", string(e.AppendToken(nil, k, encTs)), want, true)
	}
	for i, want := range tt.end {
		check("AppendEnd("+strconv.Itoa(i)+")", string(e.AppendEnd(nil, i, encTs)), want, false)
	}
	if got := string(e.AppendBody(nil)); got != tt.body {
		t.Errorf("%s: AppendBody =\n%s\nwant\n%s", tt.name, got, tt.body)
	} else if !json.Valid([]byte(got)) {
		t.Errorf("%s: AppendBody is not valid JSON", tt.name)
	}
	for _, i := range []int{-1, len(tt.start)} {
		if got := e.AppendStart([]byte("x"), i, encTs); string(got) != "x" {
			t.Errorf("%s: AppendStart(%d) out of range appended %q", tt.name, i, got[1:])
		}
	}
	for _, i := range []int{-1, len(tt.end)} {
		if got := e.AppendEnd([]byte("x"), i, encTs); string(got) != "x" {
			t.Errorf("%s: AppendEnd(%d) out of range appended %q", tt.name, i, got[1:])
		}
	}
	total := tt.a.Total()
	if tt.d == Completions {
		total = tt.a.Tokens
	}
	for _, k := range []int{-1, total} {
		if got := e.AppendToken([]byte("x"), k, encTs); string(got) != "x" {
			t.Errorf("%s: AppendToken(%d) out of range appended %q", tt.name, k, got[1:])
		}
	}
}

// splitEvents splits a run of SSE events into events.
func splitEvents(s string) []string {
	var out []string
	for s != "" {
		i := strings.Index(s, "\n\n")
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i+2])
		s = s[i+2:]
	}
	return out
}

// streamEvents returns every event of e's stream, in order, each with the
// token index whose AppendToken wrote it (-1 for the start and end
// events).
func streamEvents(e Encoder, total int, ts int64) (evs []string, tokens []int) {
	add := func(s string, k int) {
		for _, ev := range splitEvents(s) {
			evs, tokens = append(evs, ev), append(tokens, k)
		}
	}
	for i := range e.StartEvents() {
		add(string(e.AppendStart(nil, i, ts)), -1)
	}
	for k := range total {
		add(string(e.AppendToken(nil, k, ts+int64(k))), k)
	}
	for i := range e.EndEvents() {
		add(string(e.AppendEnd(nil, i, ts)), -1)
	}
	return evs, tokens
}

// TestEncoderPhaseShapes streams answers of every shape — each phase
// absent, of one token, of several, past the word cycle — in every dialect
// and reasoning shape, and checks what a client relies on: every event is
// SSE with JSON data, the scanner finds each phase's text exactly, in
// order, each token in the event AppendToken(k) wrote with its pi_ts;
// Responses sequence numbers count from 0 without a gap, Anthropic blocks
// open and close in order; one finish, one usage, the terminal event last;
// the tool call's accumulated arguments are the JSON object; the
// non-streaming body is JSON.
func TestEncoderPhaseShapes(t *testing.T) {
	const ts = 1_700_000_000_000_000_000
	for _, d := range Dialects {
		for _, field := range []ReasoningField{ReasoningContent, ReasoningPlain} {
			for _, r := range []int{0, 1, 3, 30} {
				for _, c := range []int{0, 1, 3} {
					for _, n := range []int{0, 1, 30} {
						a := Answer{No: 3, Tokens: n, Reasoning: r, ToolCall: c, ReasoningField: field, IncludeUsage: true}
						name := fmt.Sprintf("%s/%s/r%d-c%d-n%d", d, field, r, c, n)
						checkStream(t, name, d, a, ts)
					}
				}
			}
		}
	}
}

func checkStream(t *testing.T, name string, d Dialect, a Answer, ts int64) {
	t.Helper()
	e := NewEncoder(d, a)
	if d == Completions {
		a.Reasoning, a.ToolCall = 0, 0
	}
	evs, tokens := streamEvents(e, a.Total(), ts)
	var texts [NumPhases][]byte
	var finishes, usages, blocks int
	open := -1 // the Anthropic block open, -1 none
	for i, ev := range evs {
		checkSSEEvent(t, name, ev)
		evName, data := splitEvent([]byte(ev))
		s := ScanEvent(d, evName, data)
		if s.Has(Malformed) || s.Has(Failed) || s.Has(Terminal) != (i == len(evs)-1) {
			t.Fatalf("%s: event %d of %d %q scans as %s", name, i, len(evs), ev, s.Flags)
		}
		carried := 0
		for p := range Phase(NumPhases) {
			raw, _ := s.Text(p)
			if len(raw) == 0 {
				continue
			}
			carried++
			k := tokens[i]
			if q, j := a.Locate(k); k < 0 || q != p || s.PiTs != ts+int64(k) {
				t.Fatalf("%s: event %q carries %s text, written for token %d (phase %s index %d), pi_ts %d", name, ev, p, k, q, j, s.PiTs)
			}
			texts[p], _ = AppendUnescaped(texts[p], raw)
		}
		if carried > 1 {
			t.Fatalf("%s: event %q carries the texts of %d phases", name, ev, carried)
		}
		if s.Has(Finish) {
			finishes++
		}
		if s.Has(Usage) {
			usages++
		}
		if d == Responses {
			var v struct {
				Seq *int `json:"sequence_number"`
			}
			if json.Unmarshal(data, &v); v.Seq == nil || *v.Seq != i {
				t.Fatalf("%s: event %d %q has sequence_number %v", name, i, ev, v.Seq)
			}
		}
		if d == Anthropic {
			var v struct {
				Type  string `json:"type"`
				Index int    `json:"index"`
			}
			json.Unmarshal(data, &v)
			switch {
			case v.Type == "content_block_start" && (open != -1 || v.Index != blocks):
				t.Fatalf("%s: block %d starts while block %d is open (%d before)", name, v.Index, open, blocks)
			case v.Type == "content_block_start":
				open = v.Index
				blocks++
			case (v.Type == "content_block_delta" || v.Type == "content_block_stop") && v.Index != open:
				t.Fatalf("%s: %s for block %d while block %d is open", name, v.Type, v.Index, open)
			case v.Type == "content_block_stop":
				open = -1
			}
		}
	}
	var want [NumPhases][]byte
	want[PhaseReasoning] = appendPhaseTokens(nil, PhaseReasoning, a.Reasoning)
	want[PhaseToolCall] = AppendArguments(nil, a.ToolCall)
	want[PhaseText] = appendPhaseTokens(nil, PhaseText, a.Tokens)
	for p := range Phase(NumPhases) {
		if !bytes.Equal(texts[p], want[p]) {
			t.Errorf("%s: %s text %q, want %q", name, p, texts[p], want[p])
		}
	}
	if a.ToolCall > 0 {
		var args struct{ Words string }
		if err := json.Unmarshal(texts[PhaseToolCall], &args); err != nil || len(args.Words) != 4*a.ToolCall {
			t.Errorf("%s: arguments %q: %v", name, texts[PhaseToolCall], err)
		}
	}
	wantFinishes := 1
	if d == Responses && a.ToolCall > 0 && a.has(PhaseText) {
		wantFinishes = 2 // the function call's and the text's
	}
	if finishes != wantFinishes || usages != 1 {
		t.Errorf("%s: %d finish and %d usage events, want %d and 1", name, finishes, usages, wantFinishes)
	}
	if d == Anthropic && (open != -1 || blocks == 0) {
		t.Errorf("%s: %d blocks, block %d left open", name, blocks, open)
	}
	if !json.Valid(e.AppendBody(nil)) {
		t.Errorf("%s: body %s is not JSON", name, e.AppendBody(nil))
	}
}

// TestPhaseWords pins the three word shapes and the tool call's argument
// deltas.
func TestPhaseWords(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{PhaseToken(PhaseText, 0) + PhaseToken(PhaseText, 1) + PhaseToken(PhaseText, 27), "ananhuhuhuhu"},
		{PhaseToken(PhaseReasoning, 0) + PhaseToken(PhaseReasoning, 2), "ANANOBOB"},
		{PhaseToken(PhaseToolCall, 1) + PhaseToken(PhaseToolCall, 25), "HuhuTgtg"},
		{string(AppendArgumentDelta(nil, 0, 3)), `{"words":"Anan`},
		{string(AppendArgumentDelta(nil, 1, 3)), `Huhu`},
		{string(AppendArgumentDelta(nil, 2, 3)), `Obob"}`},
		{string(AppendArgumentDelta(nil, 0, 1)), `{"words":"Anan"}`},
		{string(AppendArguments(nil, 2)), `{"words":"AnanHuhu"}`},
		{string(appendArgumentsJSON(nil, 2)), `{\"words\":\"AnanHuhu\"}`},
		{PhaseReasoning.String() + PhaseToolCall.String() + PhaseText.String() + Phase(9).String(), "reasoningtool_calltextphase(9)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	for i := range 26 {
		if strings.ToLower(PhaseToken(PhaseReasoning, i)) != Token(i) || strings.ToLower(PhaseToken(PhaseToolCall, i)) != Token(i) {
			t.Errorf("token %d: %q %q %q are not one word in three shapes", i, Token(i), PhaseToken(PhaseReasoning, i), PhaseToken(PhaseToolCall, i))
		}
	}
}

func TestLocateToken(t *testing.T) {
	tests := []struct {
		k, r, c int
		p       Phase
		j       int
	}{
		{0, 0, 0, PhaseText, 0},
		{5, 0, 0, PhaseText, 5},
		{0, 2, 3, PhaseReasoning, 0},
		{1, 2, 3, PhaseReasoning, 1},
		{2, 2, 3, PhaseToolCall, 0},
		{4, 2, 3, PhaseToolCall, 2},
		{5, 2, 3, PhaseText, 0},
		{2, 0, 3, PhaseToolCall, 2},
		{3, 0, 3, PhaseText, 0},
		{1, -4, -1, PhaseText, 1},
	}
	for _, tt := range tests {
		if p, j := LocateToken(tt.k, tt.r, tt.c); p != tt.p || j != tt.j {
			t.Errorf("LocateToken(%d, %d, %d) = %s %d, want %s %d", tt.k, tt.r, tt.c, p, j, tt.p, tt.j)
		}
	}
}

func TestParseReasoningField(t *testing.T) {
	for _, f := range []ReasoningField{ReasoningContent, ReasoningPlain} {
		if got, err := ParseReasoningField(f.String()); got != f || err != nil {
			t.Errorf("ParseReasoningField(%q) = %v, %v", f, got, err)
		}
	}
	for _, s := range []string{"", "Reasoning", "reasoning_text", "summary"} {
		if _, err := ParseReasoningField(s); err == nil || !strings.Contains(err.Error(), "reasoning_content or reasoning") {
			t.Errorf("ParseReasoningField(%q) error %v, want one naming the choices", s, err)
		}
	}
	if got := ReasoningField(7).String(); got != "reasoning_field(7)" {
		t.Errorf("ReasoningField(7).String() = %q", got)
	}
}
