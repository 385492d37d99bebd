package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/evloop"
)

// sseEvent is one event of a stream, as the tests read it.
type sseEvent struct {
	name string // the event: field; "" when absent
	data string
	obj  any // data decoded with json.Number; nil for [DONE]
}

// parseEvents reads each HTTP chunk of a stream as exactly one SSE event.
func parseEvents(t *testing.T, chunks []string) []sseEvent {
	t.Helper()
	var evs []sseEvent
	for i, c := range chunks {
		body, ok := strings.CutSuffix(c, "\n\n")
		if !ok || strings.Contains(body, "\n\n") {
			t.Fatalf("chunk %d = %q: not exactly one SSE event", i, c)
		}
		var ev sseEvent
		lines := strings.Split(body, "\n")
		if len(lines) == 2 {
			name, ok := strings.CutPrefix(lines[0], "event: ")
			if !ok {
				t.Fatalf("chunk %d = %q: first of two lines is not event:", i, c)
			}
			ev.name, lines = name, lines[1:]
		}
		data, ok := strings.CutPrefix(lines[0], "data: ")
		if len(lines) != 1 || !ok {
			t.Fatalf("chunk %d = %q: want [event: line] and one data: line", i, c)
		}
		ev.data = data
		if data != api.Done {
			d := json.NewDecoder(strings.NewReader(data))
			d.UseNumber()
			if err := d.Decode(&ev.obj); err != nil {
				t.Fatalf("chunk %d data %q: %v", i, data, err)
			}
		}
		evs = append(evs, ev)
	}
	return evs
}

// jget returns the value at a dotted path ("choices.0.delta.content") of a
// decoded JSON value, and whether it exists.
func jget(v any, path string) (any, bool) {
	for _, p := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[p]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// jstr is the JSON of a decoded value (json.Number keeps its digits).
func jstr(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// wantEvent is what a test expects of one event: its SSE name, values at
// paths (as JSON), and, for the event of token k (k >= 0), a pi_ts.
type wantEvent struct {
	name   string
	fields map[string]string
	token  int  // -1: not a token event
	done   bool // data: [DONE]
}

func q(s string) string { return strconv.Quote(s) }

// allText is the text of tokens 0..n-1.
func allText(n int) string {
	var b strings.Builder
	for k := range n {
		b.WriteString(api.Token(k))
	}
	return b.String()
}

// wantEvents lists the events a stream of n tokens must consist of.
func wantEvents(d api.Dialect, n int, usage bool, model string) []wantEvent {
	var evs []wantEvent
	add := func(name string, token int, kv ...string) {
		f := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			f[kv[i]] = kv[i+1]
		}
		evs = append(evs, wantEvent{name: name, fields: f, token: token})
	}
	np, nt := strconv.Itoa(api.PromptTokens), strconv.Itoa(n)
	total := strconv.Itoa(n + api.PromptTokens)
	all := q(allText(n))
	switch d {
	case api.Chat, api.Completions:
		obj, content := `"chat.completion.chunk"`, "choices.0.delta.content"
		if d == api.Completions {
			obj, content = `"text_completion"`, "choices.0.text"
		} else {
			add("", -1, "object", obj, "model", model, "choices.0.delta.role", `"assistant"`, "choices.0.finish_reason", "null")
		}
		for k := range n {
			add("", k, "object", obj, "model", model, content, q(api.Token(k)), "choices.0.finish_reason", "null")
		}
		add("", -1, "object", obj, "model", model, "choices.0.finish_reason", `"stop"`)
		if usage {
			add("", -1, "object", obj, "model", model, "choices", "[]", "usage.prompt_tokens", np,
				"usage.completion_tokens", nt, "usage.total_tokens", total)
		}
		evs = append(evs, wantEvent{token: -1, done: true})
	case api.Responses:
		seq := 0
		ev := func(typ string, token int, kv ...string) {
			add(typ, token, append([]string{"type", q(typ), "sequence_number", strconv.Itoa(seq)}, kv...)...)
			seq++
		}
		ev("response.created", -1, "response.status", `"in_progress"`, "response.model", model, "response.output", "[]", "response.usage", "null")
		ev("response.in_progress", -1, "response.status", `"in_progress"`)
		ev("response.output_item.added", -1, "output_index", "0", "item.type", `"message"`, "item.role", `"assistant"`, "item.content", "[]")
		ev("response.content_part.added", -1, "content_index", "0", "part.type", `"output_text"`, "part.text", `""`)
		for k := range n {
			ev("response.output_text.delta", k, "output_index", "0", "content_index", "0", "delta", q(api.Token(k)))
		}
		ev("response.output_text.done", -1, "text", all)
		ev("response.content_part.done", -1, "part.text", all)
		ev("response.output_item.done", -1, "item.status", `"completed"`, "item.content.0.text", all)
		ev("response.completed", -1, "response.status", `"completed"`, "response.model", model,
			"response.output.0.content.0.text", all, "response.usage.input_tokens", np,
			"response.usage.output_tokens", nt, "response.usage.total_tokens", total)
	case api.Anthropic:
		add("message_start", -1, "type", `"message_start"`, "message.role", `"assistant"`, "message.model", model,
			"message.content", "[]", "message.usage.input_tokens", np)
		add("content_block_start", -1, "type", `"content_block_start"`, "index", "0", "content_block.type", `"text"`)
		add("ping", -1, "type", `"ping"`)
		for k := range n {
			add("content_block_delta", k, "type", `"content_block_delta"`, "index", "0",
				"delta.type", `"text_delta"`, "delta.text", q(api.Token(k)))
		}
		add("content_block_stop", -1, "type", `"content_block_stop"`, "index", "0")
		add("message_delta", -1, "type", `"message_delta"`, "delta.stop_reason", `"end_turn"`, "usage.output_tokens", nt)
		add("message_stop", -1, "type", `"message_stop"`)
	}
	return evs
}

// postRequest is a raw POST of body to path, with extra header lines.
func postRequest(path, body string, header ...string) string {
	h := ""
	for _, l := range header {
		h += l + "\r\n"
	}
	return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + h +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n" + body
}

// streamEvents posts a request and returns the events of the stream that
// answers it, checking the head and the chunked framing.
func streamEvents(t *testing.T, srv *Server, raw string) []sseEvent {
	t.Helper()
	h, b := splitResponse(t, exchange(t, srv, raw))
	if h != streamHead {
		t.Fatalf("response head = %q, want %q (body %q)", h, streamHead, b)
	}
	return parseEvents(t, dechunk(t, b))
}

// checkEvents compares a stream's events with the expected ones and returns
// the pi_ts of each token event, by token.
func checkEvents(t *testing.T, what string, got []sseEvent, want []wantEvent) []int64 {
	t.Helper()
	if len(got) != len(want) {
		names := make([]string, len(got))
		for i, ev := range got {
			names[i] = ev.name + " " + ev.data
		}
		t.Fatalf("%s: %d events, want %d:\n%s", what, len(got), len(want), strings.Join(names, "\n"))
	}
	var ts []int64
	for i, w := range want {
		ev := got[i]
		if ev.name != w.name {
			t.Errorf("%s: event %d is named %q, want %q", what, i, ev.name, w.name)
		}
		if w.done != (ev.data == api.Done) {
			t.Errorf("%s: event %d data %q, want [DONE]: %v", what, i, ev.data, w.done)
		}
		for path, val := range w.fields {
			v, ok := jget(ev.obj, path)
			if !ok || jstr(v) != val {
				t.Errorf("%s: event %d (%s) %s = %s, want %s", what, i, w.name, path, jstr(v), val)
			}
		}
		if w.token < 0 {
			continue
		}
		v, _ := jget(ev.obj, "pi_ts")
		n, ok := v.(json.Number)
		piTs, err := strconv.ParseInt(string(n), 10, 64)
		if !ok || err != nil || piTs <= 0 {
			t.Errorf("%s: event of token %d has pi_ts %s, want a positive integer", what, w.token, jstr(v))
		}
		if len(ts) > 0 && piTs < ts[len(ts)-1] {
			t.Errorf("%s: token %d pi_ts %d before token %d's %d", what, w.token, piTs, w.token-1, ts[len(ts)-1])
		}
		ts = append(ts, piTs)
	}
	return ts
}

// TestDialectStreams streams from every dialect, on its plain path and
// behind a gateway prefix, and checks the whole event sequence — names,
// sequence numbers, token texts in order, pi_ts on every token event, usage
// — and that the emission registry holds each token's pi_ts under the
// request's id.
func TestDialectStreams(t *testing.T) { forEngines(t, testDialectStreams) }

func testDialectStreams(t *testing.T, e evloop.Engine) {
	reg := emission.New()
	srv := startServer(t, Config{Tokens: 1000, DelayMs: 0.1, Emissions: reg, Engine: e})
	const n = 4
	hints := fmt.Sprintf(`"pi_tokens":%d,"pi_delay_ms":0.1`, n)
	tests := []struct {
		d     api.Dialect
		path  string
		body  string // without the closing brace and the hints
		model string // as JSON
		usage bool
	}{
		{api.Chat, "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}`, `"gpt-4o"`, true},
		{api.Chat, "/openai/v1/chat/completions?x=1", `{"stream":true,"messages":[]`, `"sse-latency-1"`, false},
		{api.Completions, "/v1/completions", `{"model":"m\"q","stream":true,"prompt":"hi","stream_options":{"include_usage":true}`, `"m\"q"`, true},
		{api.Completions, "/gw/v1/completions", `{"model":"m","stream":true,"prompt":"hi"`, `"m"`, false},
		{api.Responses, "/v1/responses", `{"model":"m","stream":true,"input":"hi"`, `"m"`, false},
		{api.Responses, "/api/openai/v1/responses", `{"model":"m","stream":true,"input":"hi","stream_options":{"include_usage":true}`, `"m"`, false},
		{api.Anthropic, "/v1/messages", `{"model":"claude","stream":true,"max_tokens":4096,"messages":[{"role":"user","content":"hi"}]`, `"claude"`, false},
		{api.Anthropic, "/gateway/prefix/v1/messages", `{"stream":true,"max_tokens":4096,"messages":[]`, `"sse-latency-1"`, false},
	}
	for i, tt := range tests {
		what := fmt.Sprintf("%v on %s", tt.d, tt.path)
		id := fmt.Sprintf("t-%d", i)
		body := tt.body + `,"pi_id":"` + id + `",` + hints + `}`
		evs := streamEvents(t, srv, postRequest(tt.path, body))
		ts := checkEvents(t, what, evs, wantEvents(tt.d, n, tt.usage, tt.model))
		times := reg.Take(id)
		if times == nil {
			t.Errorf("%s: the registry holds nothing for id %s", what, id)
			continue
		}
		if times.Len() != n {
			t.Errorf("%s: registry entry of %d tokens, want %d", what, times.Len(), n)
		}
		for k, want := range ts {
			if got := times.At(k); got != want {
				t.Errorf("%s: registry time of token %d = %d, want its pi_ts %d", what, k, got, want)
			}
		}
	}
	if reg.Len() != 0 {
		t.Errorf("registry holds %d entries after every one was taken", reg.Len())
	}
}

// TestEmissionsWithoutID checks that a stream without an id, or a server
// without a registry, records nothing and still streams.
func TestEmissionsWithoutID(t *testing.T) {
	reg := emission.New()
	srv := startServer(t, Config{Tokens: 2, DelayMs: 0.1, Emissions: reg})
	evs := streamEvents(t, srv, postRequest("/v1/chat/completions", `{"stream":true}`))
	checkEvents(t, "chat without id", evs, wantEvents(api.Chat, 2, false, `"sse-latency-1"`))
	if reg.Len() != 0 {
		t.Errorf("registry holds %d entries after a request without id, want 0", reg.Len())
	}
	bare := startServer(t, Config{Tokens: 2, DelayMs: 0.1})
	evs = streamEvents(t, bare, postRequest("/v1/messages", `{"stream":true,"pi_id":"x"}`))
	checkEvents(t, "anthropic without registry", evs, wantEvents(api.Anthropic, 2, false, `"sse-latency-1"`))
}

// TestHintPrecedence checks where each hint comes from: the JSON field,
// else the X-SSE-Latency header, else the prompt marker, field by field.
func TestHintPrecedence(t *testing.T) {
	reg := emission.New()
	srv := startServer(t, Config{Tokens: 5, DelayMs: 0.1, Emissions: reg})
	const hdr = api.HintHeader + ": "
	tests := []struct {
		name       string
		d          api.Dialect
		body       string
		header     []string
		wantTokens int
		wantID     string
	}{
		{"defaults", api.Chat, `{"stream":true}`, nil, 5, ""},
		{"json alone", api.Chat, `{"stream":true,"pi_id":"j","pi_tokens":2}`, nil, 2, "j"},
		{"header alone", api.Chat, `{"stream":true}`, []string{hdr + "id=h; tokens=3; delay=0.1"}, 3, "h"},
		{"prompt alone", api.Chat, `{"stream":true,"messages":[{"role":"user","content":"Say 4-letter words [sse-latency id=p tokens=4 delay=0.1]"}]}`, nil, 4, "p"},
		{"json over header and prompt", api.Chat, `{"stream":true,"pi_id":"j","pi_tokens":2,"messages":[{"role":"user","content":"[sse-latency id=p tokens=4]"}]}`,
			[]string{hdr + "id=h; tokens=3"}, 2, "j"},
		{"header over prompt", api.Completions, `{"stream":true,"prompt":"[sse-latency id=p tokens=4]"}`,
			[]string{hdr + "id=h; tokens=3"}, 3, "h"},
		{"field by field", api.Responses, `{"stream":true,"pi_tokens":1,"input":"[sse-latency id=p tokens=4]"}`,
			[]string{hdr + "tokens=3"}, 1, "p"},
		{"mangled header falls through", api.Anthropic, `{"stream":true,"messages":[{"role":"user","content":"[sse-latency id=p tokens=4]"}]}`,
			[]string{hdr + "id=bad id; tokens=many"}, 4, "p"},
		// Portkey rebuilds the body without the unknown pi_* fields: the
		// prompt marker still carries the count.
		{"portkey: marker without pi_tokens", api.Chat,
			`{"model":"sse-latency-1","stream":true,"messages":[{"role":"user","content":"Say 4-letter words [sse-latency id=gw-3 tokens=3]"}]}`,
			nil, 3, "gw-3"},
	}
	for _, tt := range tests {
		evs := streamEvents(t, srv, postRequest(tt.d.Path(), tt.body, tt.header...))
		ts := checkEvents(t, tt.name, evs, wantEvents(tt.d, tt.wantTokens, false, `"sse-latency-1"`))
		if tt.wantID == "" {
			if reg.Len() != 0 {
				t.Errorf("%s: registry holds %d entries, want none", tt.name, reg.Len())
			}
			continue
		}
		if reg.Len() != 1 {
			t.Errorf("%s: registry holds %d entries, want only %s", tt.name, reg.Len(), tt.wantID)
		}
		if times := reg.Take(tt.wantID); times == nil || times.Len() != len(ts) {
			t.Errorf("%s: registry entry for %s = %v, want %d times", tt.name, tt.wantID, times, len(ts))
		}
		for _, id := range []string{"j", "h", "p", "gw-3"} { // leave nothing for the next case
			reg.Take(id)
		}
	}
}

// TestDialectNonStreaming checks the one-object answer of every dialect to a
// request without "stream": true.
func TestDialectNonStreaming(t *testing.T) {
	srv := startServer(t, Config{Tokens: 1000, DelayMs: 0.01})
	const n = 3
	all, nt := q(allText(n)), strconv.Itoa(n)
	tests := []struct {
		path   string
		body   string
		fields map[string]string
	}{
		{"/v1/chat/completions", `{"model":"m","messages":[]}`, map[string]string{
			"object": `"chat.completion"`, "model": `"m"`, "choices.0.message.content": all,
			"choices.0.finish_reason": `"stop"`, "usage.completion_tokens": nt}},
		{"/x/v1/completions", `{"model":"m","stream":false,"prompt":"hi"}`, map[string]string{
			"object": `"text_completion"`, "model": `"m"`, "choices.0.text": all,
			"choices.0.finish_reason": `"stop"`, "usage.prompt_tokens": "5", "usage.completion_tokens": nt, "usage.total_tokens": "8"}},
		{"/v1/responses", `{"model":"m","input":"hi"}`, map[string]string{
			"object": `"response"`, "status": `"completed"`, "model": `"m"`, "output.0.type": `"message"`,
			"output.0.content.0.text": all, "usage.input_tokens": "5", "usage.output_tokens": nt}},
		{"/y/v1/messages", `{"model":"m","max_tokens":4096,"messages":[]}`, map[string]string{
			"type": `"message"`, "role": `"assistant"`, "model": `"m"`, "content.0.type": `"text"`, "content.0.text": all,
			"stop_reason": `"end_turn"`, "usage.input_tokens": "5", "usage.output_tokens": nt}},
	}
	for _, tt := range tests {
		body := strings.TrimSuffix(tt.body, "}") + `,"pi_tokens":` + nt + `}`
		h, b := splitResponse(t, exchange(t, srv, postRequest(tt.path, body)))
		if !strings.HasPrefix(h, "HTTP/1.1 200 OK\r\n") || !strings.Contains(h, "Content-Type: application/json\r\n") {
			t.Errorf("%s: head %q", tt.path, h)
			continue
		}
		var obj any
		d := json.NewDecoder(strings.NewReader(b))
		d.UseNumber()
		if err := d.Decode(&obj); err != nil {
			t.Errorf("%s: body %q: %v", tt.path, b, err)
			continue
		}
		for path, want := range tt.fields {
			if v, ok := jget(obj, path); !ok || jstr(v) != want {
				t.Errorf("%s: %s = %s, want %s", tt.path, path, jstr(v), want)
			}
		}
	}
}

// TestDialectErrors checks the errors of the dialect endpoints.
func TestDialectErrors(t *testing.T) {
	srv := startServer(t, Config{Tokens: 1, DelayMs: 0.1})
	tests := []struct {
		req        string
		wantStatus string
		wantBody   []string
	}{
		{"GET /v1/nope HTTP/1.1\r\nHost: x\r\n\r\n", "404 Not Found", []string{
			"unknown path /v1/nope", "POST /v1/chat/completions", "POST /v1/completions",
			"POST /v1/responses", "POST /v1/messages", "GET /v1/models"}},
		{"GET /gw/v1/messages HTTP/1.1\r\nHost: x\r\n\r\n", "405 Method Not Allowed", []string{"use POST"}},
		{"PUT /v1/responses HTTP/1.1\r\nHost: x\r\n\r\n", "405 Method Not Allowed", []string{"use POST"}},
		{"GET /v1/completions HTTP/1.1\r\nHost: x\r\n\r\n", "405 Method Not Allowed", []string{"use POST"}},
		{postRequest("/v1/responses", `{"stream":true,"pi_id":"no spaces please"}`), "400 Bad Request", []string{"pi_id must be"}},
		{postRequest("/v1/messages", `{"stream":true,"pi_think_ms":"soon"}`), "400 Bad Request", []string{"pi_think_ms must be a number"}},
		{postRequest("/v1/completions", `{"stream":"yes"}`), "400 Bad Request", []string{"invalid JSON body"}},
	}
	for _, tt := range tests {
		h, b := splitResponse(t, exchange(t, srv, tt.req))
		if !strings.HasPrefix(h, "HTTP/1.1 "+tt.wantStatus+"\r\n") {
			t.Errorf("%q: head %q, want status %s", tt.req, h, tt.wantStatus)
			continue
		}
		for _, w := range tt.wantBody {
			if !strings.Contains(b, w) {
				t.Errorf("%q: body %q lacks %q", tt.req, b, w)
			}
		}
		if !json.Valid([]byte(b)) {
			t.Errorf("%q: body %q is not JSON", tt.req, b)
		}
	}
}

// TestStreamWithoutUsageUnchanged pins that include_usage false leaves a
// chat stream as it was: no usage chunk, the finish chunk then [DONE].
func TestStreamWithoutUsageUnchanged(t *testing.T) {
	srv := startServer(t, Config{Tokens: 2, DelayMs: 0.1})
	for _, body := range []string{`{"stream":true}`, `{"stream":true,"stream_options":{"include_usage":false}}`} {
		evs := streamEvents(t, srv, postRequest("/v1/chat/completions", body))
		for _, ev := range evs {
			if bytes.Contains([]byte(ev.data), []byte(`"usage"`)) {
				t.Errorf("%s: event %q carries usage", body, ev.data)
			}
		}
		checkEvents(t, body, evs, wantEvents(api.Chat, 2, false, `"sse-latency-1"`))
	}
}
