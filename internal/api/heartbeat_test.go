package api

import (
	"strings"
	"testing"
)

func TestAppendHeartbeat(t *testing.T) {
	for _, tt := range []struct {
		d     Dialect
		want  string
		start int
	}{
		{Chat, ": ping\n\n", 0},
		{Completions, ": ping\n\n", 0},
		{Responses, ": ping\n\n", 0},
		{Anthropic, "event: ping\ndata: {\"type\":\"ping\"}\n\n", 1},
	} {
		if got := string(AppendHeartbeat([]byte("x"), tt.d)); got != "x"+tt.want {
			t.Errorf("AppendHeartbeat(x, %s) = %q, want %q", tt.d, got, "x"+tt.want)
		}
		if got := StartHeartbeats(tt.d); got != tt.start {
			t.Errorf("StartHeartbeats(%s) = %d, want %d", tt.d, got, tt.start)
		}
		// A client scanning the heartbeat's data (Anthropic's only) finds
		// nothing in it: no text, no end, nothing malformed.
		for _, line := range strings.Split(tt.want, "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				if s := ScanEvent(tt.d, []byte("ping"), []byte(data)); s.Flags != 0 {
					t.Errorf("ScanEvent(%s, ping, %s) flags %b, want none", tt.d, data, s.Flags)
				}
			}
		}
	}
	// Anthropic's heartbeat is the ping its streams already carry after
	// their first block's start.
	var start []byte
	enc := NewEncoder(Anthropic, Answer{Tokens: 1})
	for i := range enc.StartEvents() {
		start = enc.AppendStart(start, i, 1)
	}
	if strings.Count(string(start), AnthropicHeartbeat) != StartHeartbeats(Anthropic) {
		t.Errorf("Anthropic start events %q hold %d heartbeats, StartHeartbeats says %d",
			start, strings.Count(string(start), AnthropicHeartbeat), StartHeartbeats(Anthropic))
	}
}
