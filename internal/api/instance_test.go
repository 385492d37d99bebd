package api

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestInstanceField: with an instance id, every event of every dialect
// that carries pi_ts carries pi_instance right after it, stays valid JSON
// and scans back to the id; without one, no event names an instance. The
// phases' tokens are covered, the start and end events too.
func TestInstanceField(t *testing.T) {
	const id = "srv-a.0_1"
	for _, d := range Dialects {
		for _, inst := range []InstanceField{nil, NewInstanceField(id)} {
			a := Answer{No: 3, Tokens: 3, Reasoning: 2, ToolCall: 2, IncludeUsage: true, Instance: inst}
			e := NewEncoder(d, a)
			var events [][]byte
			for i := range e.StartEvents() {
				events = append(events, e.AppendStart(nil, i, encTs))
			}
			for k := range a.Total() {
				// AppendToken may append the events that open a phase
				// before the token's: split them.
				for _, ev := range bytes.SplitAfter(e.AppendToken(nil, k, encTs), []byte("\n\n")) {
					if len(ev) > 0 {
						events = append(events, ev)
					}
				}
			}
			for i := range e.EndEvents() {
				events = append(events, e.AppendEnd(nil, i, encTs))
			}
			stamped := 0
			for _, ev := range events {
				name, data := splitEvent(ev)
				if string(data) == Done {
					continue
				}
				if !json.Valid(data) {
					t.Fatalf("%s, instance %q: event %q is not valid JSON", d, inst, ev)
				}
				s := ScanEvent(d, name, data)
				hasTs := bytes.Contains(data, []byte(`"pi_ts":`))
				switch {
				case inst == nil && s.Instance != nil:
					t.Errorf("%s without instance: event %q names instance %q", d, ev, s.Instance)
				case inst != nil && hasTs && string(s.Instance) != id:
					t.Errorf("%s: event %q scans to instance %q, want %q", d, ev, s.Instance, id)
				case inst != nil && hasTs && !strings.Contains(string(data), `,"pi_instance":"`+id+`"`):
					t.Errorf("%s: event %q: pi_instance is not right after pi_ts", d, ev)
				case !hasTs && s.Instance != nil:
					t.Errorf("%s: event %q names an instance without pi_ts", d, ev)
				}
				if hasTs {
					stamped++
				}
			}
			want := a.Total()
			if d == Completions { // text only
				want = a.Tokens
			}
			if stamped < want {
				t.Errorf("%s: %d events carry pi_ts, want at least the %d tokens'", d, stamped, want)
			}
		}
	}
}

// TestScanInstance: pi_instance counts at the top level only, and only as
// a string.
func TestScanInstance(t *testing.T) {
	for _, tc := range []struct {
		payload, want string
		found         bool
	}{
		{`{"pi_ts":1,"pi_instance":"a","choices":[{"delta":{"content":"anan"}}]}`, "a", true},
		{`{"choices":[{"delta":{"content":"anan","pi_instance":"x"}}]}`, "", false},
		{`{"pi_instance":12,"choices":[]}`, "", false},
		{`{"pi_instance":"b","pi_instance":"c"}`, "b", true},
	} {
		s := ScanEvent(Chat, nil, []byte(tc.payload))
		if (s.Instance != nil) != tc.found || string(s.Instance) != tc.want {
			t.Errorf("ScanEvent(chat, %s): instance %q (found %v), want %q (%v)", tc.payload, s.Instance, s.Instance != nil, tc.want, tc.found)
		}
	}
}
