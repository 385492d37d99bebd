package api

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestParseServerRequest(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	f64 := func(v float64) *float64 { return &v }
	tests := []struct {
		body    string
		want    ServerRequest
		wantErr string
	}{
		{``, ServerRequest{}, ""},
		{` `, ServerRequest{}, ""},
		{`{"stream":true}`, ServerRequest{Stream: true}, ""},
		{`{"model":"gpt-4o","stream":false}`, ServerRequest{Model: "gpt-4o"}, ""},
		{`{"model":null}`, ServerRequest{}, ""},
		{`{"model":"a\"b"}`, ServerRequest{Model: `a"b`}, ""},
		{`{"stream":true,"stream_options":{"include_usage":true}}`, ServerRequest{Stream: true, IncludeUsage: true}, ""},
		{`{"stream_options":{"include_usage":false}}`, ServerRequest{}, ""},
		{`{"stream_options":null}`, ServerRequest{}, ""},
		{`{"stream_options":{}}`, ServerRequest{}, ""},
		// The client's bodies, one per dialect.
		{`{"model":"sse-latency-1","stream":true,"messages":[{"role":"user","content":"Say 4-letter words [sse-latency id=gw-3 tokens=200]"}],"pi_id":"gw-3","pi_tokens":200}`,
			ServerRequest{Stream: true, Model: "sse-latency-1", Hints: Hints{ID: "gw-3", Tokens: i64(200)}}, ""},
		{`{"model":"m","stream":true,"prompt":"Say 4-letter words","pi_think_ms":1.5,"pi_delay_ms":0.25}`,
			ServerRequest{Stream: true, Model: "m", Hints: Hints{ThinkMs: f64(1.5), DelayMs: f64(0.25)}}, ""},
		{`{"model":"m","stream":true,"input":"Say 4-letter words","pi_id":"a.b_c-9"}`,
			ServerRequest{Stream: true, Model: "m", Hints: Hints{ID: "a.b_c-9"}}, ""},
		{`{"model":"m","stream":true,"max_tokens":4096,"messages":[{"role":"user","content":"x"}],"pi_tokens":-3}`,
			ServerRequest{Stream: true, Model: "m", Hints: Hints{Tokens: i64(0)}}, ""},
		// Only the JSON fields: the header and the prompt are the server's.
		{`{"messages":[{"role":"user","content":"[sse-latency id=p tokens=4]"}]}`, ServerRequest{}, ""},
		{`{"pi_id":null,"pi_tokens":null}`, ServerRequest{}, ""},
		{`{"pi_id":""}`, ServerRequest{}, "pi_id must be a string"},
		{`{"pi_id":"has space"}`, ServerRequest{}, "pi_id must be a string"},
		{`{"pi_id":7}`, ServerRequest{}, "pi_id must be a string"},
		{`{"pi_id":"` + strings.Repeat("x", MaxIDLen+1) + `"}`, ServerRequest{}, "pi_id must be a string"},
		{`{"pi_tokens":"x"}`, ServerRequest{}, "pi_tokens must be a number"},
		{`{"pi_think_ms":[]}`, ServerRequest{}, "pi_think_ms must be a number"},
		{`{"pi_delay_ms":true}`, ServerRequest{}, "pi_delay_ms must be a number"},
		{`{"pi_tokens":1e12}`, ServerRequest{}, "pi_tokens too large"},
		{`{"stream":true,"pi_reasoning_tokens":50,"pi_tool_call_tokens":20.7}`,
			ServerRequest{Stream: true, Hints: Hints{Reasoning: i64(50), ToolCall: i64(20)}}, ""},
		{`{"pi_reasoning_tokens":-4,"pi_tool_call_tokens":null}`, ServerRequest{Hints: Hints{Reasoning: i64(0)}}, ""},
		{`{"pi_reasoning_tokens":"many"}`, ServerRequest{}, "pi_reasoning_tokens must be a number"},
		{`{"pi_tool_call_tokens":{}}`, ServerRequest{}, "pi_tool_call_tokens must be a number"},
		{`{"pi_tool_call_tokens":3e9}`, ServerRequest{}, "pi_tool_call_tokens too large"},
		{`{"pi_heartbeat_ms":500}`, ServerRequest{Hints: Hints{HeartbeatMs: f64(500)}}, ""},
		{`{"pi_heartbeat_ms":-1}`, ServerRequest{Hints: Hints{HeartbeatMs: f64(0)}}, ""},
		{`{"pi_heartbeat_ms":"often"}`, ServerRequest{}, "pi_heartbeat_ms must be a number"},
		{`{"stream":"yes"}`, ServerRequest{}, "invalid JSON body"},
		{`{"model":5}`, ServerRequest{}, "invalid JSON body"},
		{`{"stream_options":{"include_usage":1}}`, ServerRequest{}, "invalid JSON body"},
		{`{"stream":`, ServerRequest{}, "invalid JSON body"},
		{`[1,2]`, ServerRequest{}, "invalid JSON body"},
	}
	for _, tt := range tests {
		got, err := ParseServerRequest([]byte(tt.body))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseServerRequest(%s) error %v, want one containing %q", tt.body, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !sameServerRequest(got, tt.want) {
			t.Errorf("ParseServerRequest(%s) = %+v, %v; want %+v", tt.body, got, err, tt.want)
		}
	}
}

func sameServerRequest(a, b ServerRequest) bool {
	return a.Stream == b.Stream && a.Model == b.Model && a.IncludeUsage == b.IncludeUsage && hintsEqual(a.Hints, b.Hints)
}

func FuzzParseServerRequest(f *testing.F) {
	f.Add([]byte(`{"model":"sse-latency-1","stream":true,"messages":[{"role":"user","content":"Say 4-letter words"}],"pi_id":"gw-3","pi_tokens":200}`))
	f.Add([]byte(`{"stream":true,"stream_options":{"include_usage":true},"pi_think_ms":1e308,"pi_delay_ms":-0}`))
	f.Add([]byte(`{"pi_tokens":2147483647.9,"pi_id":"x\u0020y"}`))
	f.Add([]byte(`{"stream":true,"pi_reasoning_tokens":3,"pi_tool_call_tokens":2,"tools":[{"type":"function"}]}`))
	f.Add([]byte(`{"stream":true,"pi_cut_after":3,"pi_split":[5,"x"],"pi_trickle":1,"pi_line_end":"crlf","pi_text":"utf8","pi_status":529}`))
	f.Add([]byte(`{"pi_split":"utf8,7","pi_stall_ms":1e400,"pi_comments":"yes","pi_event_bytes":-1,"pi_no_terminal":null}`))
	// Valid faults, every field set, so that the round trip below runs from the seeds.
	f.Add([]byte(`{"pi_cut_after":3,"pi_no_terminal":false,"pi_status":529,"pi_stall_after":2,"pi_stall_ms":0.5,"pi_trickle":true,"pi_event_bytes":65536,"pi_split":[5,17],"pi_split_gap_ms":2,"pi_line_end":"CRLF","pi_comments":1,"pi_text":"utf8","pi_write_bytes":16384}`))
	f.Add([]byte(`{"pi_split":"utf8, 3","pi_line_end":"cr","pi_stall_ms":-0,"pi_cut_after":-0}`))
	f.Add([]byte(`{"pi_split":[],"pi_text":"ASCII","pi_status":429,"pi_trickle":0}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := ParseServerRequest(body)
		if err != nil {
			return
		}
		h := req.Hints
		if h.ID != "" && !ValidID(h.ID) {
			t.Fatalf("accepted invalid id %q from %q", h.ID, body)
		}
		checkHints(t, "ParseServerRequest("+string(body)+")", h)
		// Its faults read back from their JSON fields.
		if back, err := ParseServerRequest(append(h.Faults.appendJSON([]byte(`{"x":0`)), '}')); err != nil || !reflect.DeepEqual(back.Hints.Faults, h.Faults) {
			t.Fatalf("faults %q of %q: their JSON reads back as %q, %v", h.Faults, body, back.Hints.Faults, err)
		}
		// Whatever model it names, every dialect's answer stays valid.
		for _, d := range Dialects {
			e := NewEncoder(d, Answer{Model: req.Model, Tokens: 1, Reasoning: 1, ToolCall: 1})
			for i := range e.StartEvents() {
				checkSSEEvent(t, d.String(), string(e.AppendStart(nil, i, 1)))
			}
			if !json.Valid(e.AppendBody(nil)) {
				t.Fatalf("%v: body for model %q is not JSON", d, req.Model)
			}
		}
	})
}
