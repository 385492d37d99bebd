package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// scanCase is one payload and what ScanEvent must find in it.
type scanCase struct {
	name    string
	d       Dialect
	event   string // the SSE "event:" value
	payload string
	flags   ScanFlags
	piTs    int64
	content string // resolved
	// The phases' texts, resolved.
	reasoning, arguments string
}

// The server's events, exactly as the task's wire formats give them.
var scanExact = []scanCase{
	{"chat role", Chat, "", `{"id":"chatcmpl-sse-latency-1","object":"chat.completion.chunk","created":1,"pi_ts":17,"model":"sse-latency-1","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}`, 0, 17, "", "", ""},
	{"chat token", Chat, "", `{"id":"chatcmpl-sse-latency-1","object":"chat.completion.chunk","created":1,"pi_ts":1700000000123456789,"model":"sse-latency-1","choices":[{"index":0,"delta":{"content":"anan"},"finish_reason":null}]}`, HasContent, 1700000000123456789, "anan", "", ""},
	{"chat finish", Chat, "", `{"id":"chatcmpl-sse-latency-1","object":"chat.completion.chunk","created":1,"pi_ts":18,"model":"sse-latency-1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, Finish, 18, "", "", ""},
	{"chat usage", Chat, "", `{"id":"chatcmpl-sse-latency-1","object":"chat.completion.chunk","created":1,"pi_ts":19,"model":"sse-latency-1","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`, Usage, 19, "", "", ""},
	{"chat done", Chat, "", `[DONE]`, Terminal, 0, "", "", ""},
	{"completions token", Completions, "", `{"id":"cmpl-sse-latency-1","object":"text_completion","created":1,"pi_ts":20,"model":"sse-latency-1","choices":[{"text":"huhu","index":0,"logprobs":null,"finish_reason":null}]}`, HasContent, 20, "huhu", "", ""},
	{"completions finish", Completions, "", `{"id":"cmpl-sse-latency-1","object":"text_completion","created":1,"pi_ts":21,"model":"sse-latency-1","choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"stop"}]}`, HasContent | Finish, 21, "", "", ""},
	{"completions usage", Completions, "", `{"id":"cmpl-sse-latency-1","object":"text_completion","created":1,"pi_ts":22,"model":"sse-latency-1","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`, Usage, 22, "", "", ""},
	{"completions done", Completions, "", `[DONE]`, Terminal, 0, "", "", ""},
	{"responses created", Responses, "response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"r","object":"response","status":"in_progress","output":[],"usage":null}}`, 0, 0, "", "", ""},
	{"responses part added", Responses, "response.content_part.added", `{"type":"response.content_part.added","sequence_number":3,"item_id":"m","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}`, 0, 0, "", "", ""},
	{"responses token", Responses, "response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"obob","logprobs":[],"pi_ts":23}`, HasContent, 23, "obob", "", ""},
	{"responses text done", Responses, "response.output_text.done", `{"type":"response.output_text.done","sequence_number":7,"item_id":"m","output_index":0,"content_index":0,"text":"ananhuhuobob","logprobs":[]}`, Finish, 0, "", "", ""},
	{"responses item done", Responses, "response.output_item.done", `{"type":"response.output_item.done","sequence_number":9,"output_index":0,"item":{"id":"m","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"ananhuhuobob","annotations":[]}]}}`, 0, 0, "", "", ""},
	{"responses completed", Responses, "response.completed", `{"type":"response.completed","sequence_number":10,"response":{"id":"r","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"ananhuhuobob"}]}],"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}}`, Terminal | Usage, 0, "", "", ""},
	{"responses failed", Responses, "response.failed", `{"type":"response.failed","sequence_number":5,"response":{"status":"failed","error":{"code":"server_error","message":"boom"}}}`, Failed, 0, "", "", ""},
	{"responses incomplete", Responses, "response.incomplete", `{"type":"response.incomplete","sequence_number":5,"response":{"status":"incomplete"}}`, Failed, 0, "", "", ""},
	{"responses error", Responses, "error", `{"type":"error","sequence_number":5,"code":"x","message":"y"}`, Failed, 0, "", "", ""},
	{"anthropic start", Anthropic, "message_start", `{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"sse-latency-1","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}`, 0, 0, "", "", ""},
	{"anthropic block start", Anthropic, "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`, 0, 0, "", "", ""},
	{"anthropic ping", Anthropic, "ping", `{"type":"ping"}`, 0, 0, "", "", ""},
	{"anthropic token", Anthropic, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"vivi"},"pi_ts":24}`, HasContent, 24, "vivi", "", ""},
	{"anthropic block stop", Anthropic, "content_block_stop", `{"type":"content_block_stop","index":0}`, 0, 0, "", "", ""},
	{"anthropic message delta", Anthropic, "message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}`, Finish | Usage, 0, "", "", ""},
	{"anthropic stop", Anthropic, "message_stop", `{"type":"message_stop"}`, Terminal, 0, "", "", ""},
	{"anthropic error", Anthropic, "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, Failed, 0, "", "", ""},
}

// The events of the phases before the text, exactly as the encoders write
// them.
var scanPhaseExact = []scanCase{
	{"chat reasoning_content", Chat, "", `{"id":"chatcmpl-sse-latency-1","object":"chat.completion.chunk","created":1,"pi_ts":30,"model":"sse-latency-1","choices":[{"index":0,"delta":{"reasoning_content":"ANAN"},"finish_reason":null}]}`, HasReasoning, 30, "", "ANAN", ""},
	{"chat reasoning", Chat, "", `{"id":"chatcmpl-sse-latency-1","object":"chat.completion.chunk","created":1,"pi_ts":31,"model":"sse-latency-1","choices":[{"index":0,"delta":{"reasoning":"HUHU"},"finish_reason":null}]}`, HasReasoning, 31, "", "HUHU", ""},
	{"chat tool call open", Chat, "", `{"id":"chatcmpl-sse-latency-1","object":"chat.completion.chunk","created":1,"pi_ts":32,"model":"sse-latency-1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_sselatency_1","type":"function","function":{"name":"sse_latency_words","arguments":""}}]},"finish_reason":null}]}`, HasArguments, 32, "", "", ""},
	{"chat tool call arguments", Chat, "", `{"id":"chatcmpl-sse-latency-1","object":"chat.completion.chunk","created":1,"pi_ts":33,"model":"sse-latency-1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"words\":\"Anan"}}]},"finish_reason":null}]}`, HasArguments, 33, "", "", `{"words":"Anan`},
	{"chat finish tool_calls", Chat, "", `{"id":"chatcmpl-sse-latency-1","object":"chat.completion.chunk","created":1,"pi_ts":34,"model":"sse-latency-1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`, Finish, 34, "", "", ""},
	{"responses reasoning item added", Responses, "response.output_item.added", `{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"rs_sselatency_1","type":"reasoning","summary":[]}}`, 0, 0, "", "", ""},
	{"responses summary part added", Responses, "response.reasoning_summary_part.added", `{"type":"response.reasoning_summary_part.added","sequence_number":3,"item_id":"rs_sselatency_1","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}}`, 0, 0, "", "", ""},
	{"responses summary delta", Responses, "response.reasoning_summary_text.delta", `{"type":"response.reasoning_summary_text.delta","sequence_number":4,"item_id":"rs_sselatency_1","output_index":0,"summary_index":0,"delta":"ANAN","pi_ts":35}`, HasReasoning, 35, "", "ANAN", ""},
	{"responses reasoning text delta", Responses, "response.reasoning_text.delta", `{"type":"response.reasoning_text.delta","sequence_number":4,"item_id":"rs_sselatency_1","output_index":0,"content_index":0,"delta":"HUHU","pi_ts":36}`, HasReasoning, 36, "", "HUHU", ""},
	{"responses summary done", Responses, "response.reasoning_summary_text.done", `{"type":"response.reasoning_summary_text.done","sequence_number":5,"item_id":"rs_sselatency_1","output_index":0,"summary_index":0,"text":"ANAN"}`, 0, 0, "", "", ""},
	{"responses function call added", Responses, "response.output_item.added", `{"type":"response.output_item.added","sequence_number":8,"output_index":1,"item":{"id":"fc_sselatency_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_sselatency_1","name":"sse_latency_words"}}`, 0, 0, "", "", ""},
	{"responses arguments delta", Responses, "response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","sequence_number":9,"item_id":"fc_sselatency_1","output_index":1,"delta":"{\"words\":\"Anan","pi_ts":37}`, HasArguments, 37, "", "", `{"words":"Anan`},
	{"responses arguments done", Responses, "response.function_call_arguments.done", `{"type":"response.function_call_arguments.done","sequence_number":10,"item_id":"fc_sselatency_1","output_index":1,"arguments":"{\"words\":\"Anan\"}"}`, Finish, 0, "", "", ""},
	{"anthropic thinking start", Anthropic, "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`, 0, 0, "", "", ""},
	{"anthropic thinking delta", Anthropic, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"ANAN"},"pi_ts":38}`, HasReasoning, 38, "", "ANAN", ""},
	{"anthropic signature", Anthropic, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c3NlLWxhdGVuY3k="}}`, 0, 0, "", "", ""},
	{"anthropic tool_use start", Anthropic, "content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_sselatency_1","name":"sse_latency_words","input":{}}}`, 0, 0, "", "", ""},
	{"anthropic input_json_delta", Anthropic, "content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"words\":\"Anan"},"pi_ts":39}`, HasArguments, 39, "", "", `{"words":"Anan`},
	{"anthropic stop tool_use", Anthropic, "message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":3}}`, Finish | Usage, 0, "", "", ""},
}

// Phase events as gateways make them, and ones the client must refuse.
var scanPhaseVariants = []scanCase{
	{"chat reasoning null beside content", Chat, "", `{"choices":[{"delta":{"content":"anan","reasoning_content":null}}]}`, HasContent, 0, "anan", "", ""},
	{"chat merged phases", Chat, "", `{"choices":[{"delta":{"reasoning":"ANAN","content":"anan","tool_calls":[{"index":0,"function":{"arguments":"Huhu"}}]}}]}`, HasContent | HasReasoning | HasArguments, 0, "anan", "ANAN", "Huhu"},
	{"chat reasoning escaped and reordered", Chat, "", `{"choices":[{"finish_reason":null,"delta":{"reasoning_content":"\u0041NAN"}}],"pi_ts":4}`, HasReasoning, 4, "", "ANAN", ""},
	{"chat tool_calls null", Chat, "", `{"choices":[{"delta":{"content":"x","tool_calls":null}}]}`, HasContent, 0, "x", "", ""},
	{"chat reasoning number", Chat, "", `{"choices":[{"delta":{"reasoning_content":5}}]}`, Malformed, 0, "", "", ""},
	{"chat reasoning cut", Chat, "", `{"choices":[{"delta":{"reasoning_content":"AN`, Malformed, 0, "", "", ""},
	{"chat tool_calls object", Chat, "", `{"choices":[{"delta":{"tool_calls":{"index":0}}}]}`, Malformed, 0, "", "", ""},
	{"chat arguments object", Chat, "", `{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":{"words":"x"}}}]}}]}`, Malformed, 0, "", "", ""},
	{"chat top-level reasoning is not the delta's", Chat, "", `{"reasoning":{"effort":"high"},"arguments":5,"tool_calls":1,"choices":[{"delta":{"content":"anan"}}]}`, HasContent, 0, "anan", "", ""},
	{"chat legacy function_call arguments", Chat, "", `{"choices":[{"delta":{"function_call":{"arguments":"Anan"}}}]}`, HasArguments, 0, "", "", "Anan"},
	{"completions reasoning key is not read", Completions, "", `{"choices":[{"text":"anan","reasoning":5}]}`, HasContent, 0, "anan", "", ""},
	{"responses reasoning type from the event line", Responses, "response.reasoning_text.delta", `{"delta":"OBOB"}`, HasReasoning, 0, "", "OBOB", ""},
	{"responses reasoning without delta", Responses, "", `{"type":"response.reasoning_summary_text.delta","item_id":"rs"}`, Malformed, 0, "", "", ""},
	{"responses arguments delta number", Responses, "", `{"type":"response.function_call_arguments.delta","delta":12}`, Malformed, 0, "", "", ""},
	{"responses arguments cut", Responses, "", `{"type":"response.function_call_arguments.delta","delta":"{\"wo`, Malformed, 0, "", "", ""},
	{"responses escaped type", Responses, "", `{"type":"response.function_call_arguments.delta","delta":"Anan"}`, HasArguments, 0, "", "", "Anan"},
	{"anthropic thinking reordered, escaped", Anthropic, "", `{"delta":{"thinking":"\u0041NAN","type":"thinking_delta"},"index":0,"type":"content_block_delta"}`, HasReasoning, 0, "", "ANAN", ""},
	{"anthropic thinking_delta without thinking", Anthropic, "", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta"}}`, Malformed, 0, "", "", ""},
	{"anthropic input_json_delta null", Anthropic, "", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":null}}`, Malformed, 0, "", "", ""},
	{"anthropic thinking number", Anthropic, "", `{"type":"content_block_delta","index":0,"delta":{"thinking":7}}`, Malformed, 0, "", "", ""},
}

// What gateways make of them: fields reordered, spaces, escapes, no pi_ts,
// no "event:" line, nulls, other content-like fields.
var scanVariants = []scanCase{
	{"chat reordered, spaced, escaped", Chat, "", "{ \"choices\" : [ { \"finish_reason\" : null , \"delta\" : { \"content\" : \"\\u0061nan\" } } ] ,\n \"pi_ts\" : 5 }", HasContent, 5, "anan", "", ""},
	{"chat content null, then a string", Chat, "", `{"choices":[{"logprobs":{"content":[{"token":"x"}]},"delta":{"content":"anan","refusal":null}}],"usage":null}`, HasContent, 0, "anan", "", ""},
	{"chat null content", Chat, "", `{"choices":[{"delta":{"role":"assistant","content":null},"finish_reason":null}]}`, 0, 0, "", "", ""},
	{"chat empty finish reason", Chat, "", `{"choices":[{"delta":{"content":"x"},"finish_reason":""}]}`, HasContent, 0, "x", "", ""},
	{"chat content and finish in one", Chat, "", `{"choices":[{"delta":{"content":"obob"},"finish_reason":"stop"}],"usage":{"completion_tokens":3}}`, HasContent | Finish | Usage, 0, "obob", "", ""},
	{"chat reasoning content is not content", Chat, "", `{"choices":[{"delta":{"reasoning_content":"hmm"}}]}`, HasReasoning, 0, "", "hmm", ""},
	{"chat key-like text in a string", Chat, "", `{"choices":[{"delta":{"content":"a \"content\": \"b\""}}]}`, HasContent, 0, `a "content": "b"`, "", ""},
	{"chat pi_ts nested is not ours", Chat, "", `{"x":{"pi_ts":5},"choices":[]}`, 0, 0, "", "", ""},
	{"chat pi_ts float", Chat, "", `{"pi_ts":1.5e3}`, 0, 0, "", "", ""},
	{"chat error object", Chat, "", `{"error":{"message":"rate limited","type":"requests"}}`, Failed, 0, "", "", ""},
	{"chat error null", Chat, "", `{"error":null,"choices":[]}`, 0, 0, "", "", ""},
	{"chat done with spaces", Chat, "", ` [DONE] `, Terminal, 0, "", "", ""},
	{"chat escaped key", Chat, "", `{"choices":[{"delta":{"c\u006fntent":"anan"}}]}`, HasContent, 0, "anan", "", ""},
	{"completions reordered", Completions, "", `{"choices":[{"finish_reason":null,"index":0,"logprobs":{"text_offset":[0],"tokens":["a"]},"text":"an\u0061n"}],"model":"m"}`, HasContent, 0, "anan", "", ""},
	{"responses reordered, no event line", Responses, "", `{"content_index":0,"delta":"huhu","item_id":"m","output_index":0,"sequence_number":4,"type":"response.output_text.delta"}`, HasContent, 0, "huhu", "", ""},
	{"responses type from the event line", Responses, "response.output_text.delta", `{"delta":"huhu"}`, HasContent, 0, "huhu", "", ""},
	{"responses data type wins", Responses, "response.output_text.delta", `{"type":"response.output_text.done","delta":"huhu"}`, Finish, 0, "", "", ""},
	{"responses refusal is not content", Responses, "", `{"type":"response.refusal.delta","delta":"no"}`, 0, 0, "", "", ""},
	{"responses completed reordered", Responses, "", `{"response":{"usage":{"output_tokens":3},"output":[]},"sequence_number":9,"type":"response.completed"}`, Terminal | Usage, 0, "", "", ""},
	{"responses usage null", Responses, "", `{"type":"response.completed","response":{"usage":null}}`, Terminal, 0, "", "", ""},
	{"anthropic reordered, escaped", Anthropic, "", `{"delta":{"text":"\u0076ivi","type":"text_delta"},"index":0,"pi_ts":7,"type":"content_block_delta"}`, HasContent, 7, "vivi", "", ""},
	{"anthropic json delta is not content", Anthropic, "", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"text\":\"x\"}"}}`, HasArguments, 0, "", "", `{"text":"x"}`},
	{"anthropic message delta without stop", Anthropic, "", `{"type":"message_delta","delta":{"stop_reason":null},"usage":{"output_tokens":3}}`, Usage, 0, "", "", ""},
	{"anthropic usage of message_start does not count", Anthropic, "", `{"type":"message_start","message":{"usage":{"input_tokens":5}}}`, 0, 0, "", "", ""},
	{"not JSON", Chat, "", `hello`, 0, 0, "", "", ""},
	{"unterminated", Anthropic, "", `{"type":"content_block_delta","delta":{"text":"an`, 0, 0, "", "", ""},
	{"empty", Responses, "", ``, 0, 0, "", "", ""},
}

// allScanCases is every case of the tables above.
func allScanCases() []scanCase {
	var all []scanCase
	for _, cs := range [][]scanCase{scanExact, scanPhaseExact, scanVariants, scanPhaseVariants} {
		all = append(all, cs...)
	}
	return all
}

func TestScanEvent(t *testing.T) {
	for _, tc := range allScanCases() {
		checkScan(t, tc)
	}
}

func checkScan(t *testing.T, tc scanCase) {
	t.Helper()
	var event []byte
	if tc.event != "" {
		event = []byte(tc.event)
	}
	s := ScanEvent(tc.d, event, []byte(tc.payload))
	var got [NumPhases]string
	for p := range Phase(NumPhases) {
		raw, esc := s.Text(p)
		text, _ := AppendUnescaped(nil, raw)
		got[p] = string(text)
		if esc != (bytes.IndexByte(raw, '\\') >= 0) {
			t.Errorf("%s: %s escaped = %v for %q", tc.name, p, esc, raw)
		}
	}
	if s.Flags != tc.flags || s.PiTs != tc.piTs || got != [...]string{tc.reasoning, tc.arguments, tc.content} {
		t.Errorf("%s: ScanEvent(%s, %q, %.60q…) = flags %s, pi_ts %d, texts %q; want %s, %d, %q",
			tc.name, tc.d, tc.event, tc.payload, s.Flags, s.PiTs, got, tc.flags, tc.piTs, []string{tc.reasoning, tc.arguments, tc.content})
	}
}

// String lists the flags, for test messages.
func (f ScanFlags) String() string {
	var parts []string
	for i, n := range []string{"content", "finish", "usage", "terminal", "failed", "reasoning", "arguments", "malformed"} {
		if f&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "|")
}

// reserialise re-encodes a JSON payload the way a gateway might: keys
// sorted (encoding/json's map order), pi_ts dropped, a space after every
// ':' and ',', and with escape every letter of every string (keys too) as a
// \u escape.
func reserialise(t *testing.T, payload string, escape bool) string {
	t.Helper()
	var v any
	dec := json.NewDecoder(strings.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return payload // [DONE]
	}
	if m, ok := v.(map[string]any); ok {
		delete(m, "pi_ts")
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	in := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case in && c == '\\':
			out = append(out, c, b[i+1])
			i++
			continue
		case c == '"':
			in = !in
		case escape && in && c >= 'a' && c <= 'z':
			// Escape the letters of values and keys alike.
			out = fmt.Appendf(out, `\u%04x`, c)
			continue
		case !in && (c == ':' || c == ','):
			out = append(out, c, ' ')
			continue
		}
		out = append(out, c)
	}
	return string(out)
}

// TestScanReserialised: every exact event, re-serialised, scans the same
// but for pi_ts.
func TestScanReserialised(t *testing.T) {
	for _, escape := range []bool{false, true} {
		for _, tc := range append(append([]scanCase(nil), scanExact...), scanPhaseExact...) {
			tc.payload = reserialise(t, tc.payload, escape)
			tc.piTs = 0
			tc.name += fmt.Sprintf(" re-serialised (escapes %v)", escape)
			checkScan(t, tc)
			tc.event = "" // the type is in the JSON
			tc.name += " without event line"
			checkScan(t, tc)
		}
	}
}

// TestScanEncoders scans every event the server's encoders write for a
// three-token answer: each token once with its pi_ts, one finish, usage,
// the terminal event last, no failure.
func TestScanEncoders(t *testing.T) {
	const ts = 1_700_000_000_000_000_001
	for _, d := range Dialects {
		e := NewEncoder(d, Answer{No: 1, Tokens: 3, IncludeUsage: true})
		var events [][]byte
		for i := 0; i < e.StartEvents(); i++ {
			events = append(events, e.AppendStart(nil, i, ts))
		}
		for k := 0; k < 3; k++ {
			events = append(events, e.AppendToken(nil, k, ts+int64(k)))
		}
		for i := 0; i < e.EndEvents(); i++ {
			events = append(events, e.AppendEnd(nil, i, ts))
		}
		var text []byte
		var finishes, usages, tokens int
		for i, ev := range events {
			name, data := splitEvent(ev)
			s := ScanEvent(d, name, data)
			if s.Has(HasContent) && len(s.Content) > 0 {
				if s.PiTs != ts+int64(tokens) {
					t.Errorf("%s: token event %q has pi_ts %d, want %d", d, ev, s.PiTs, ts+int64(tokens))
				}
				tokens++
				text, _ = AppendUnescaped(text, s.Content)
			}
			if s.Has(Finish) {
				finishes++
			}
			if s.Has(Usage) {
				usages++
			}
			if s.Has(Failed) || s.Has(Terminal) != (i == len(events)-1) {
				t.Errorf("%s: event %d of %d %q scans as %s", d, i, len(events), ev, s.Flags)
			}
		}
		if string(text) != "ananhuhuobob" || tokens != 3 || finishes != 1 || usages != 1 {
			t.Errorf("%s: text %q in %d events, %d finish, %d usage; want ananhuhuobob in 3, 1, 1", d, text, tokens, finishes, usages)
		}
	}
}

// splitEvent returns the "event:" and "data:" values of one SSE event.
func splitEvent(ev []byte) (name, data []byte) {
	for _, line := range bytes.Split(ev, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("event: ")); ok {
			name = v
		}
		if v, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			data = v
		}
	}
	return name, data
}

func TestEventDescription(t *testing.T) {
	tests := []struct{ event, payload, want string }{
		{"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "error: overloaded_error: Overloaded"},
		{"", `{"type":"response.failed","response":{"error":{"code":"server_error","message":"b\u006fom"}}}`, "response.failed: boom"},
		{"", `{"error":{"message":"quota","type":"insufficient_quota"}}`, "error: insufficient_quota: quota"},
		{"response.incomplete", `not json`, "response.incomplete"},
		{"", ``, "error"},
		{"", `{"type":"error","message":"` + strings.Repeat("x", 200) + `"}`, "error: " + strings.Repeat("x", 120) + "..."},
	}
	for _, tt := range tests {
		if got := EventDescription([]byte(tt.event), []byte(tt.payload)); got != tt.want {
			t.Errorf("EventDescription(%q, %q) = %q, want %q", tt.event, tt.payload, got, tt.want)
		}
	}
}

// FuzzScanEvent checks that no payload makes the scanner fail, and that what
// it returns is coherent: each phase's text is set exactly with its flag, is
// a piece of the payload without an unescaped quote, its Escaped field says
// whether it holds a backslash, and in a valid JSON payload it resolves as
// encoding/json would.
func FuzzScanEvent(f *testing.F) {
	for _, tc := range allScanCases() {
		f.Add(uint8(tc.d), tc.event, []byte(tc.payload))
	}
	for d := range Dialects { // the events of a server with an instance id
		e := NewEncoder(Dialects[d], Answer{No: 1, Tokens: 2, Instance: NewInstanceField("srv-a")})
		name, data := splitEvent(e.AppendToken(nil, 1, encTs))
		f.Add(uint8(d), string(name), data)
	}
	f.Fuzz(func(t *testing.T, d uint8, event string, payload []byte) {
		dialect := Dialect(int(d) % len(Dialects))
		s := ScanEvent(dialect, []byte(event), payload)
		if s.PiTs < 0 {
			t.Errorf("pi_ts %d < 0", s.PiTs)
		}
		if s.Instance != nil && !bytes.Contains(payload, s.Instance) {
			t.Errorf("instance %q is not in the payload", s.Instance)
		}
		for p := range Phase(NumPhases) {
			text, escaped := s.Text(p)
			if s.Flags&phaseFlag(p) == 0 {
				if len(text) != 0 {
					t.Errorf("%s text %q without the flag", p, text)
				}
				continue
			}
			checkScannedText(t, p, payload, text, escaped)
		}
	})
}

// checkScannedText checks one phase's text found in payload.
func checkScannedText(t *testing.T, p Phase, payload, text []byte, escaped bool) {
	t.Helper()
	if !bytes.Contains(payload, text) {
		t.Errorf("%s text %q is not in the payload", p, text)
	}
	if escaped != (bytes.IndexByte(text, '\\') >= 0) {
		t.Errorf("%s: escaped = %v for %q", p, escaped, text)
	}
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\\':
			i++
		case '"':
			t.Errorf("unescaped quote in %s text %q", p, text)
		}
	}
	// A valid JSON payload: the resolved text is a JSON string value.
	if json.Valid(payload) {
		var want string
		if err := json.Unmarshal(append(append([]byte{'"'}, text...), '"'), &want); err == nil {
			got, ok := AppendUnescaped(nil, text)
			if !ok || (string(got) != want && utf8.Valid(text)) {
				t.Errorf("%s text %q resolves to %q (ok %v), encoding/json says %q", p, text, got, ok, want)
			}
		}
	}
}

// BenchmarkScanEvent scans the server's token events: the text ones of
// each dialect (the names the benchmark had before the phases), then the
// reasoning and tool-call ones.
func BenchmarkScanEvent(b *testing.B) {
	for _, tc := range append(append([]scanCase(nil), scanExact...), scanPhaseExact...) {
		var name string
		switch tc.flags {
		case HasContent:
			name = tc.d.String()
		case HasReasoning, HasArguments:
			name = tc.d.String() + "/" + strings.ReplaceAll(tc.name, " ", "_")
		default:
			continue
		}
		b.Run(name, func(b *testing.B) {
			payload, event := []byte(tc.payload), []byte(tc.event)
			b.ReportAllocs()
			for b.Loop() {
				if ScanEvent(tc.d, event, payload).Flags != tc.flags {
					b.Fatal("not scanned")
				}
			}
		})
	}
}
