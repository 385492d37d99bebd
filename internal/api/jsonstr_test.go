package api

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAppendUnescaped(t *testing.T) {
	tests := []struct {
		raw, want string
		ok        bool
	}{
		{`anan`, "anan", true},
		{`\u0061nan`, "anan", true},
		{`\u0041\u00e9\u20AC`, "Aé€", true},
		{`\ud83d\ude00!`, "😀!", true},
		{`\"\\\/\b\f\n\r\t`, "\"\\/\b\f\n\r\t", true},
		{`\ud800x`, "\uFFFDx", true},           // lone high surrogate
		{`\udc00`, "\uFFFD", true},             // lone low surrogate
		{`\ud800\u0041`, "\uFFFDA", true},      // high surrogate, then no low one
		{`\ud800\ud800`, "\uFFFD\uFFFD", true}, // two high ones
		{`a\qb`, `a\qb`, false},                // unknown escape: kept
		{`a\u12`, `a\u12`, false},              // short \u: kept
		{`a\u12zz`, `a\u12zz`, false},
		{`ab\`, `ab\`, false}, // ends inside an escape
		{``, "", true},
	}
	for _, tt := range tests {
		got, ok := AppendUnescaped([]byte("x"), []byte(tt.raw))
		if string(got) != "x"+tt.want || ok != tt.ok {
			t.Errorf("AppendUnescaped(%q) = %q, %v; want %q, %v", tt.raw, got[1:], ok, tt.want, tt.ok)
		}
	}
}

func TestAppendUnescapedDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 64)
	raw := []byte(`\u0061n\u0061n \ud83d\ude00`)
	if n := testing.AllocsPerRun(100, func() { buf, _ = AppendUnescaped(buf[:0], raw) }); n != 0 {
		t.Errorf("AppendUnescaped into a buffer with room: %v allocations, want 0", n)
	}
}

func TestAppendJSONString(t *testing.T) {
	tests := []struct{ s, want string }{
		{"Say 4-letter words", `"Say 4-letter words"`},
		{`a"b\c`, `"a\"b\\c"`},
		{"tab\tnl\ncr\rnul\x00", `"tab\tnl\ncr\rnul\u0000"`},
		{"é", `"é"`},
	}
	for _, tt := range tests {
		if got := string(AppendJSONString(nil, tt.s)); got != tt.want {
			t.Errorf("AppendJSONString(%q) = %s, want %s", tt.s, got, tt.want)
		}
	}
}

// FuzzAppendUnescaped compares the unescaper with encoding/json on every
// string body that encoding/json accepts, and round-trips AppendJSONString.
func FuzzAppendUnescaped(f *testing.F) {
	for _, s := range []string{`anan`, `\u0061nan`, `\ud83d\ude00`, `\ud800`, `\"\\\/\b\f\n\r\t`, `a\qb`, `\u12`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, ok := AppendUnescaped(nil, []byte(raw))
		var want string
		if err := json.Unmarshal([]byte(`"`+raw+`"`), &want); err == nil && utf8.ValidString(raw) {
			if !ok || string(got) != want {
				t.Errorf("AppendUnescaped(%q) = %q, %v; encoding/json says %q", raw, got, ok, want)
			}
		}
		if !ok && !strings.Contains(raw, `\`) {
			t.Errorf("AppendUnescaped(%q) not ok without any escape", raw)
		}
		if utf8.ValidString(raw) {
			var back string
			if err := json.Unmarshal(AppendJSONString(nil, raw), &back); err != nil || back != raw {
				t.Errorf("AppendJSONString(%q) = %s: decodes to %q, %v", raw, AppendJSONString(nil, raw), back, err)
			}
		}
	})
}
