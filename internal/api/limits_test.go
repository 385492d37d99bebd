package api

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestLimitsResolve(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	f64 := func(v float64) *float64 { return &v }
	lim := Limits{MaxTokens: 100, MaxDelay: time.Second}
	tests := []struct {
		name                 string
		json, header, prompt Hints
		lim                  Limits
		want                 Hints
		wantErr              string // "" for no error
		below                bool   // the error is ErrHintBelowMinimum, not ErrHintAboveLimit
	}{
		{name: "none", lim: lim},
		{name: "at the caps", lim: lim,
			json: Hints{Tokens: i64(100), ThinkMs: f64(1000), DelayMs: f64(1000)},
			want: Hints{Tokens: i64(100), ThinkMs: f64(1000), DelayMs: f64(1000)}},
		{name: "channels merge in order", lim: lim,
			json:   Hints{ID: "j", Tokens: i64(1)},
			header: Hints{ID: "h", Tokens: i64(2), ThinkMs: f64(2)},
			prompt: Hints{Tokens: i64(3), ThinkMs: f64(3), DelayMs: f64(3)},
			want:   Hints{ID: "j", Tokens: i64(1), ThinkMs: f64(2), DelayMs: f64(3)}},
		{name: "overridden values are not checked", lim: lim,
			json:   Hints{Tokens: i64(5)},
			header: Hints{Tokens: i64(1 << 30), ThinkMs: f64(1)},
			prompt: Hints{ThinkMs: f64(1e9), DelayMs: f64(2)},
			want:   Hints{Tokens: i64(5), ThinkMs: f64(1), DelayMs: f64(2)}},
		{name: "json tokens", lim: lim, json: Hints{Tokens: i64(101)},
			wantErr: "pi_tokens 101 in the JSON body; the limit is 100"},
		{name: "header tokens", lim: lim, header: Hints{Tokens: i64(101)},
			wantErr: "tokens=101 in the X-SSE-Latency header; the limit is 100"},
		{name: "prompt tokens", lim: lim, prompt: Hints{Tokens: i64(101)},
			wantErr: "tokens=101 in the prompt marker; the limit is 100"},
		{name: "json think", lim: lim, json: Hints{ThinkMs: f64(1000.5)},
			wantErr: "pi_think_ms 1000.5 in the JSON body; the limit is 1000 ms (1s)"},
		{name: "json delay", lim: lim, json: Hints{DelayMs: f64(2e3)},
			wantErr: "pi_delay_ms 2000 in the JSON body; the limit is 1000 ms (1s)"},
		{name: "header think", lim: lim, header: Hints{ThinkMs: f64(1e300)},
			wantErr: "think=1e+300 in the X-SSE-Latency header; the limit is 1000 ms (1s)"},
		{name: "prompt delay", lim: lim, prompt: Hints{DelayMs: f64(5000)},
			wantErr: "delay=5000 in the prompt marker; the limit is 1000 ms (1s)"},
		{name: "phases merge and stay under the cap", lim: lim,
			json:   Hints{Reasoning: i64(100)},
			header: Hints{Reasoning: i64(1 << 30), ToolCall: i64(7)},
			prompt: Hints{ToolCall: i64(8)},
			want:   Hints{Reasoning: i64(100), ToolCall: i64(7)}},
		{name: "json reasoning", lim: lim, json: Hints{Reasoning: i64(101)},
			wantErr: "pi_reasoning_tokens 101 in the JSON body; the limit is 100"},
		{name: "json tool call", lim: lim, json: Hints{ToolCall: i64(1000)},
			wantErr: "pi_tool_call_tokens 1000 in the JSON body; the limit is 100"},
		{name: "header reasoning", lim: lim, header: Hints{Reasoning: i64(101)},
			wantErr: "reasoning=101 in the X-SSE-Latency header; the limit is 100"},
		{name: "prompt tool call", lim: lim, prompt: Hints{ToolCall: i64(101)},
			wantErr: "tool_call=101 in the prompt marker; the limit is 100"},
		{name: "heartbeats at the bounds and off", lim: lim,
			json:   Hints{HeartbeatMs: f64(MinHeartbeatMs)},
			header: Hints{HeartbeatMs: f64(1)}, // overridden: not checked
			want:   Hints{HeartbeatMs: f64(MinHeartbeatMs)}},
		{name: "heartbeat at the cap", lim: lim, prompt: Hints{HeartbeatMs: f64(1000)}, want: Hints{HeartbeatMs: f64(1000)}},
		{name: "heartbeat 0 is none", lim: lim, header: Hints{HeartbeatMs: f64(0)}, want: Hints{HeartbeatMs: f64(0)}},
		{name: "json heartbeat too long", lim: lim, json: Hints{HeartbeatMs: f64(1001)},
			wantErr: "pi_heartbeat_ms 1001 in the JSON body; the limit is 1000 ms (1s)"},
		{name: "json heartbeat too short", lim: lim, json: Hints{HeartbeatMs: f64(0.5)}, below: true,
			wantErr: "pi_heartbeat_ms 0.5 in the JSON body; the minimum is 10 ms (0: no heartbeats)"},
		{name: "header heartbeat too short", lim: Limits{}, header: Hints{HeartbeatMs: f64(9.99)}, below: true,
			wantErr: "heartbeat=9.99 in the X-SSE-Latency header; the minimum is 10 ms"},
		{name: "prompt heartbeat too long", lim: lim, prompt: Hints{HeartbeatMs: f64(5000)},
			wantErr: "heartbeat=5000 in the prompt marker; the limit is 1000 ms (1s)"},
		{name: "no caps", lim: Limits{},
			json: Hints{Tokens: i64(1 << 31), ThinkMs: f64(1e300), DelayMs: f64(1e300)},
			want: Hints{Tokens: i64(1 << 31), ThinkMs: f64(1e300), DelayMs: f64(1e300)}},
	}
	for _, tt := range tests {
		got, err := tt.lim.Resolve(tt.json, tt.header, tt.prompt)
		if tt.wantErr != "" {
			want := ErrHintAboveLimit
			if tt.below {
				want = ErrHintBelowMinimum
			}
			if err == nil || !errors.Is(err, want) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: %+v.Resolve error %v, want %v containing %q", tt.name, tt.lim, err, want, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %+v.Resolve error %v, want none", tt.name, tt.lim, err)
			continue
		}
		if !hintsEqual(got, tt.want) {
			t.Errorf("%s: %+v.Resolve = %s, want %s", tt.name, tt.lim, got.HeaderValue(), tt.want.HeaderValue())
		}
	}
}

// hintsEqual compares two Hints by value.
func hintsEqual(a, b Hints) bool {
	return a.ID == b.ID && eqPtr(a.Tokens, b.Tokens) && eqPtr(a.ThinkMs, b.ThinkMs) && eqPtr(a.DelayMs, b.DelayMs) &&
		eqPtr(a.Reasoning, b.Reasoning) && eqPtr(a.ToolCall, b.ToolCall) && eqPtr(a.HeartbeatMs, b.HeartbeatMs) &&
		reflect.DeepEqual(a.Faults, b.Faults)
}

func eqPtr[T comparable](a, b *T) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func TestCheckPhases(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	tests := []struct {
		d       Dialect
		h       Hints
		wantErr string
	}{
		{Completions, Hints{}, ""},
		{Completions, Hints{Tokens: i64(5), Reasoning: i64(0), ToolCall: i64(0)}, ""},
		{Completions, Hints{Reasoning: i64(3)}, "pi_reasoning_tokens 3 cannot be served on /completions"},
		{Completions, Hints{ToolCall: i64(1)}, "pi_tool_call_tokens 1 cannot be served on /completions"},
		{Chat, Hints{Reasoning: i64(3), ToolCall: i64(4)}, ""},
		{Responses, Hints{Reasoning: i64(3)}, ""},
		{Anthropic, Hints{ToolCall: i64(4)}, ""},
	}
	for _, tt := range tests {
		err := CheckPhases(tt.d, tt.h)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("CheckPhases(%s, {%s}) = %v, want nil", tt.d, tt.h.HeaderValue(), err)
			}
			continue
		}
		if !errors.Is(err, ErrTextOnly) || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("CheckPhases(%s, {%s}) = %v, want ErrTextOnly containing %q", tt.d, tt.h.HeaderValue(), err, tt.wantErr)
		}
	}
}
