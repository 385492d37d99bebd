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
}

// The server's events, exactly as the task's wire formats give them.
var scanExact = []scanCase{
	{"chat role", Chat, "", `{"id":"chatcmpl-sse-latency-1","object":"chat.completion.chunk","created":1,"pi_ts":17,"model":"sse-latency-1","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}`, 0, 17, ""},
	{"chat token", Chat, "", `{"id":"chatcmpl-sse-latency-1","object":"chat.completion.chunk","created":1,"pi_ts":1700000000123456789,"model":"sse-latency-1","choices":[{"index":0,"delta":{"content":"anan"},"finish_reason":null}]}`, HasContent, 1700000000123456789, "anan"},
	{"chat finish", Chat, "", `{"id":"chatcmpl-sse-latency-1","object":"chat.completion.chunk","created":1,"pi_ts":18,"model":"sse-latency-1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, Finish, 18, ""},
	{"chat usage", Chat, "", `{"id":"chatcmpl-sse-latency-1","object":"chat.completion.chunk","created":1,"pi_ts":19,"model":"sse-latency-1","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`, Usage, 19, ""},
	{"chat done", Chat, "", `[DONE]`, Terminal, 0, ""},
	{"completions token", Completions, "", `{"id":"cmpl-sse-latency-1","object":"text_completion","created":1,"pi_ts":20,"model":"sse-latency-1","choices":[{"text":"huhu","index":0,"logprobs":null,"finish_reason":null}]}`, HasContent, 20, "huhu"},
	{"completions finish", Completions, "", `{"id":"cmpl-sse-latency-1","object":"text_completion","created":1,"pi_ts":21,"model":"sse-latency-1","choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"stop"}]}`, HasContent | Finish, 21, ""},
	{"completions usage", Completions, "", `{"id":"cmpl-sse-latency-1","object":"text_completion","created":1,"pi_ts":22,"model":"sse-latency-1","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`, Usage, 22, ""},
	{"completions done", Completions, "", `[DONE]`, Terminal, 0, ""},
	{"responses created", Responses, "response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"r","object":"response","status":"in_progress","output":[],"usage":null}}`, 0, 0, ""},
	{"responses part added", Responses, "response.content_part.added", `{"type":"response.content_part.added","sequence_number":3,"item_id":"m","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}`, 0, 0, ""},
	{"responses token", Responses, "response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"obob","logprobs":[],"pi_ts":23}`, HasContent, 23, "obob"},
	{"responses text done", Responses, "response.output_text.done", `{"type":"response.output_text.done","sequence_number":7,"item_id":"m","output_index":0,"content_index":0,"text":"ananhuhuobob","logprobs":[]}`, Finish, 0, ""},
	{"responses item done", Responses, "response.output_item.done", `{"type":"response.output_item.done","sequence_number":9,"output_index":0,"item":{"id":"m","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"ananhuhuobob","annotations":[]}]}}`, 0, 0, ""},
	{"responses completed", Responses, "response.completed", `{"type":"response.completed","sequence_number":10,"response":{"id":"r","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"ananhuhuobob"}]}],"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}}`, Terminal | Usage, 0, ""},
	{"responses failed", Responses, "response.failed", `{"type":"response.failed","sequence_number":5,"response":{"status":"failed","error":{"code":"server_error","message":"boom"}}}`, Failed, 0, ""},
	{"responses incomplete", Responses, "response.incomplete", `{"type":"response.incomplete","sequence_number":5,"response":{"status":"incomplete"}}`, Failed, 0, ""},
	{"responses error", Responses, "error", `{"type":"error","sequence_number":5,"code":"x","message":"y"}`, Failed, 0, ""},
	{"anthropic start", Anthropic, "message_start", `{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"sse-latency-1","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}`, 0, 0, ""},
	{"anthropic block start", Anthropic, "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`, 0, 0, ""},
	{"anthropic ping", Anthropic, "ping", `{"type":"ping"}`, 0, 0, ""},
	{"anthropic token", Anthropic, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"vivi"},"pi_ts":24}`, HasContent, 24, "vivi"},
	{"anthropic block stop", Anthropic, "content_block_stop", `{"type":"content_block_stop","index":0}`, 0, 0, ""},
	{"anthropic message delta", Anthropic, "message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}`, Finish | Usage, 0, ""},
	{"anthropic stop", Anthropic, "message_stop", `{"type":"message_stop"}`, Terminal, 0, ""},
	{"anthropic error", Anthropic, "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, Failed, 0, ""},
}

// What gateways make of them: fields reordered, spaces, escapes, no pi_ts,
// no "event:" line, nulls, other content-like fields.
var scanVariants = []scanCase{
	{"chat reordered, spaced, escaped", Chat, "", "{ \"choices\" : [ { \"finish_reason\" : null , \"delta\" : { \"content\" : \"\\u0061nan\" } } ] ,\n \"pi_ts\" : 5 }", HasContent, 5, "anan"},
	{"chat content null, then a string", Chat, "", `{"choices":[{"logprobs":{"content":[{"token":"x"}]},"delta":{"content":"anan","refusal":null}}],"usage":null}`, HasContent, 0, "anan"},
	{"chat null content", Chat, "", `{"choices":[{"delta":{"role":"assistant","content":null},"finish_reason":null}]}`, 0, 0, ""},
	{"chat empty finish reason", Chat, "", `{"choices":[{"delta":{"content":"x"},"finish_reason":""}]}`, HasContent, 0, "x"},
	{"chat content and finish in one", Chat, "", `{"choices":[{"delta":{"content":"obob"},"finish_reason":"stop"}],"usage":{"completion_tokens":3}}`, HasContent | Finish | Usage, 0, "obob"},
	{"chat reasoning content is not content", Chat, "", `{"choices":[{"delta":{"reasoning_content":"hmm"}}]}`, 0, 0, ""},
	{"chat key-like text in a string", Chat, "", `{"choices":[{"delta":{"content":"a \"content\": \"b\""}}]}`, HasContent, 0, `a "content": "b"`},
	{"chat pi_ts nested is not ours", Chat, "", `{"x":{"pi_ts":5},"choices":[]}`, 0, 0, ""},
	{"chat pi_ts float", Chat, "", `{"pi_ts":1.5e3}`, 0, 0, ""},
	{"chat error object", Chat, "", `{"error":{"message":"rate limited","type":"requests"}}`, Failed, 0, ""},
	{"chat error null", Chat, "", `{"error":null,"choices":[]}`, 0, 0, ""},
	{"chat done with spaces", Chat, "", ` [DONE] `, Terminal, 0, ""},
	{"chat escaped key", Chat, "", `{"choices":[{"delta":{"c\u006fntent":"anan"}}]}`, HasContent, 0, "anan"},
	{"completions reordered", Completions, "", `{"choices":[{"finish_reason":null,"index":0,"logprobs":{"text_offset":[0],"tokens":["a"]},"text":"an\u0061n"}],"model":"m"}`, HasContent, 0, "anan"},
	{"responses reordered, no event line", Responses, "", `{"content_index":0,"delta":"huhu","item_id":"m","output_index":0,"sequence_number":4,"type":"response.output_text.delta"}`, HasContent, 0, "huhu"},
	{"responses type from the event line", Responses, "response.output_text.delta", `{"delta":"huhu"}`, HasContent, 0, "huhu"},
	{"responses data type wins", Responses, "response.output_text.delta", `{"type":"response.output_text.done","delta":"huhu"}`, Finish, 0, ""},
	{"responses refusal is not content", Responses, "", `{"type":"response.refusal.delta","delta":"no"}`, 0, 0, ""},
	{"responses completed reordered", Responses, "", `{"response":{"usage":{"output_tokens":3},"output":[]},"sequence_number":9,"type":"response.completed"}`, Terminal | Usage, 0, ""},
	{"responses usage null", Responses, "", `{"type":"response.completed","response":{"usage":null}}`, Terminal, 0, ""},
	{"anthropic reordered, escaped", Anthropic, "", `{"delta":{"text":"\u0076ivi","type":"text_delta"},"index":0,"pi_ts":7,"type":"content_block_delta"}`, HasContent, 7, "vivi"},
	{"anthropic json delta is not content", Anthropic, "", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"text\":\"x\"}"}}`, 0, 0, ""},
	{"anthropic message delta without stop", Anthropic, "", `{"type":"message_delta","delta":{"stop_reason":null},"usage":{"output_tokens":3}}`, Usage, 0, ""},
	{"anthropic usage of message_start does not count", Anthropic, "", `{"type":"message_start","message":{"usage":{"input_tokens":5}}}`, 0, 0, ""},
	{"not JSON", Chat, "", `hello`, 0, 0, ""},
	{"unterminated", Anthropic, "", `{"type":"content_block_delta","delta":{"text":"an`, 0, 0, ""},
	{"empty", Responses, "", ``, 0, 0, ""},
}

func TestScanEvent(t *testing.T) {
	for _, tc := range append(append([]scanCase(nil), scanExact...), scanVariants...) {
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
	got, _ := AppendUnescaped(nil, s.Content)
	if s.Flags != tc.flags || s.PiTs != tc.piTs || string(got) != tc.content {
		t.Errorf("%s: ScanEvent(%s, %q, %.60q…) = flags %s, pi_ts %d, content %q; want %s, %d, %q",
			tc.name, tc.d, tc.event, tc.payload, s.Flags, s.PiTs, got, tc.flags, tc.piTs, tc.content)
	}
	if s.Escaped != (bytes.IndexByte(s.Content, '\\') >= 0) {
		t.Errorf("%s: Escaped = %v for content %q", tc.name, s.Escaped, s.Content)
	}
}

// String lists the flags, for test messages.
func (f ScanFlags) String() string {
	var parts []string
	for i, n := range []string{"content", "finish", "usage", "terminal", "failed"} {
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
		for _, tc := range scanExact {
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
// it returns is coherent: the content is a piece of the payload without an
// unescaped quote, Escaped says whether it holds a backslash.
func FuzzScanEvent(f *testing.F) {
	for _, tc := range append(append([]scanCase(nil), scanExact...), scanVariants...) {
		f.Add(uint8(tc.d), tc.event, []byte(tc.payload))
	}
	f.Fuzz(func(t *testing.T, d uint8, event string, payload []byte) {
		dialect := Dialect(int(d) % len(Dialects))
		s := ScanEvent(dialect, []byte(event), payload)
		if s.PiTs < 0 {
			t.Errorf("pi_ts %d < 0", s.PiTs)
		}
		if s.Flags&HasContent == 0 {
			if len(s.Content) != 0 {
				t.Errorf("content %q without the flag", s.Content)
			}
			return
		}
		if !bytes.Contains(payload, s.Content) {
			t.Errorf("content %q is not in the payload", s.Content)
		}
		if s.Escaped != (bytes.IndexByte(s.Content, '\\') >= 0) {
			t.Errorf("Escaped = %v for %q", s.Escaped, s.Content)
		}
		for i := 0; i < len(s.Content); i++ {
			switch s.Content[i] {
			case '\\':
				i++
			case '"':
				t.Errorf("unescaped quote in content %q", s.Content)
			}
		}
		// A valid JSON payload: the resolved content is a JSON string value.
		if json.Valid(payload) {
			var want string
			if err := json.Unmarshal(append(append([]byte{'"'}, s.Content...), '"'), &want); err == nil {
				got, ok := AppendUnescaped(nil, s.Content)
				if !ok || (string(got) != want && utf8.Valid(s.Content)) {
					t.Errorf("content %q resolves to %q (ok %v), encoding/json says %q", s.Content, got, ok, want)
				}
			}
		}
	})
}

func BenchmarkScanEvent(b *testing.B) {
	for _, tc := range scanExact {
		if tc.flags != HasContent {
			continue
		}
		b.Run(tc.d.String(), func(b *testing.B) {
			payload, event := []byte(tc.payload), []byte(tc.event)
			b.ReportAllocs()
			for b.Loop() {
				if ScanEvent(tc.d, event, payload).Flags != HasContent {
					b.Fatal("no content")
				}
			}
		})
	}
}
