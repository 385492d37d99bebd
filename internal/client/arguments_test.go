package client

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/api"
)

// args returns the arguments text of a tool call of n tokens.
func args(n int) string { return string(api.AppendArguments(nil, n)) }

// TestArgMatcher follows argument deltas as they arrive — one token per
// delta, merged, split, re-serialised with spaces — and what is wrong with
// the ones that differ.
func TestArgMatcher(t *testing.T) {
	type step struct {
		text     string
		first, n int
		whole    bool
	}
	tests := []struct {
		name    string
		expect  int
		steps   []step
		problem string // "" for none
	}{
		{"one token per delta", 3, []step{{`{"words":"Anan`, 0, 1, true}, {"Huhu", 1, 1, true}, {`Obob"}`, 2, 1, true}}, ""},
		{"one delta", 3, []step{{args(3), 0, 3, false}}, ""},
		{"one token in all", 1, []step{{`{"words":"Anan"}`, 0, 1, true}}, ""},
		{"split everywhere", 2, []step{{`{"wo`, 0, 0, false}, {`rds":"An`, 0, 0, false}, {`anHu`, 0, 1, false}, {`hu"`, 1, 1, false}, {`}`, 2, 0, false}}, ""},
		{"envelope on its own", 2, []step{{`{"words":"`, 0, 0, false}, {"Anan", 0, 1, true}, {"Huhu", 1, 1, true}, {`"}`, 2, 0, false}}, ""},
		{"re-serialised with spaces", 2, []step{{` { "words" : "AnanHuhu" } `, 0, 2, false}}, ""},
		{"a newline before the closing brace", 1, []step{{"{\"words\":\"Anan\"\n}\n", 0, 1, true}}, ""},
		{"not closed", 2, []step{{`{"words":"AnanHuhu`, 0, 2, false}}, `arguments not closed ("\"}" missing): not valid JSON`},
		{"brace missing", 2, []step{{`{"words":"AnanHuhu"`, 0, 2, false}}, `arguments not closed ("\"}" missing): not valid JSON`},
		{"nothing", 3, nil, "3 tokens missing (first: token 0)"},
		{"another key", 2, []step{{`{"text":"AnanHuhu"}`, 0, 0, false}}, `arguments do not start with "{\"words\":\"" ("text\":\"AnanHuhu\"}" at byte 2)`},
		{"space inside the key", 1, []step{{`{"wo rds":"Anan"}`, 0, 0, false}}, `arguments do not start with "{\"words\":\"" (" rds\":\"Anan\"}" at byte 4)`},
		{"a token missing", 3, []step{{`{"words":"Anan`, 0, 1, true}, {`Obob"}`, 1, 0, false}}, "1 token missing (first: token 1)"},
		{"words of another phase", 2, []step{{`{"words":"ANANHUHU"}`, 0, 0, false}}, `corrupted content at token 0 ("ANAN")`},
		{"bytes after the object", 1, []step{{`{"words":"Anan"}`, 0, 1, true}, {`,"x":1}`, 1, 0, false}}, `unexpected arguments text (",\"x\":1}" at byte 16)`},
		{"a second key", 1, []step{{`{"words":"Anan","x":1}`, 0, 1, false}}, `unexpected arguments text (",\"x\":1}" at byte 15)`},
		{"more words than emitted", 1, []step{{`{"words":"AnanHuhu"}`, 0, 1, false}}, "4 bytes of unexpected content after token 0"},
	}
	for _, tt := range tests {
		a := newArgMatcher(tt.expect)
		for i, s := range tt.steps {
			first, n, whole := a.feed([]byte(s.text))
			if first != s.first || n != s.n || whole != s.whole {
				t.Errorf("%s: step %d feed(%q) = %d, %d, %v; want %d, %d, %v", tt.name, i, s.text, first, n, whole, s.first, s.n, s.whole)
			}
		}
		if got := a.problem(); got != tt.problem {
			t.Errorf("%s: problem() = %q, want %q", tt.name, got, tt.problem)
		}
	}
}

// FuzzArgMatcher feeds arbitrary argument text, cut arbitrarily: the
// tokens recognised are counted in order, the exact arguments have no
// problem, and arguments without a problem are the JSON object the server
// emitted, whatever spacing a gateway put in it.
func FuzzArgMatcher(f *testing.F) {
	f.Add(uint8(3), []byte(args(3)), []byte{5, 9, 2})
	f.Add(uint8(2), []byte(` { "words" : "AnanHuhu" } `), []byte{1})
	f.Add(uint8(2), []byte(`{"words":"AnanHuhu","x":1}`), []byte{12})
	f.Add(uint8(1), []byte(`{"words":"An"an"}`), []byte{})
	f.Add(uint8(30), []byte(args(30)), []byte{200, 3})
	f.Fuzz(func(t *testing.T, expect uint8, content, cuts []byte) {
		a := newArgMatcher(int(expect))
		tokens := 0
		rest := content
		feed := func(b []byte) {
			first, n, _ := a.feed(b)
			if first != tokens || n < 0 {
				t.Fatalf("feed returned tokens %d+%d after %d", first, n, tokens)
			}
			tokens += n
		}
		for _, c := range cuts {
			k := min(int(c), len(rest))
			feed(rest[:k])
			rest = rest[k:]
		}
		feed(rest)
		if a.received != int64(len(content)) {
			t.Errorf("received %d bytes of %d", a.received, len(content))
		}
		p := a.problem()
		if string(content) == args(int(expect)) && expect > 0 && p != "" {
			t.Errorf("the exact arguments of %d tokens: problem %q", expect, p)
		}
		if p != "" || expect == 0 {
			return
		}
		var v map[string]any
		if err := json.Unmarshal(content, &v); err != nil || len(v) != 1 || v["words"] != strings.TrimSuffix(strings.TrimPrefix(args(int(expect)), api.ArgumentsPrefix), api.ArgumentsSuffix) {
			t.Errorf("arguments %q pass, but are not the emitted object (%v, %v)", content, v, err)
		}
		if tokens != int(expect) {
			t.Errorf("arguments %q pass with %d of %d tokens recognised", content, tokens, expect)
		}
	})
}
