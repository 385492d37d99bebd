package client

import (
	"strings"
	"testing"
)

// maskedNames are header names whose values Redact masks, each with how
// its value is written: after a scheme word, as a cookie, or whole.
var maskedNames = []struct {
	name string
	form byte // 's': "<scheme> <secret>", 'c': "<cookie>=<secret>", 'w': "<secret>"
}{
	{"Authorization", 's'}, {"Proxy-Authorization", 's'}, {"Cookie", 'c'}, {"Set-Cookie", 'c'},
	{"x-api-key", 'w'}, {"api-key", 'w'}, {"X-Goog-Api-Key", 'w'}, {"X-Auth-Token", 'w'},
	{"X-Client-Secret", 'w'}, {"OPENAI_API_KEY", 'w'}, {"Authorization", 'w'},
}

// FuzzRedact: Redact never panics on any line, and never prints the secret
// of a masked field, whatever the secret, the case of the name, the spaces
// around the colon, or a missing colon.
func FuzzRedact(f *testing.F) {
	f.Add("Authorization: Bearer sk-123", uint8(0), uint8(0), "Bearer", "sk-123", true, " ")
	f.Add("Cookie: session=abc; theme=dark", uint8(2), uint8(1), "session", "abc", true, "")
	f.Add("x-api-key:sk", uint8(4), uint8(2), "", "sk-ant-1", false, "\t")
	f.Add("nonsense", uint8(9), uint8(3), "", "a:b c", false, " ")
	f.Add("X-SSE-Latency: id=a; tokens=3", uint8(7), uint8(4), "Basic", "dXNlcjpwYXNz", true, "  ")
	f.Fuzz(func(t *testing.T, line string, which, caseBits uint8, word, secret string, colon bool, space string) {
		_ = Redact(line) // any line: no panic

		m := maskedNames[int(which)%len(maskedNames)]
		name := []byte(m.name)
		for i := range name {
			if caseBits&(1<<(i%8)) != 0 {
				name[i] ^= 0x20 * byte(boolInt(name[i] >= 'a' && name[i] <= 'z' || name[i] >= 'A' && name[i] <= 'Z'))
			}
		}
		if strings.Trim(space, " \t") != "" || !isWord(word) || (m.form == 's' && word == "") || (m.form == 'c' && strings.ContainsRune(secret, ';')) {
			return
		}
		secret = strings.TrimSpace(secret)
		if !colon && strings.HasPrefix(secret, ":") {
			return // "name :x" has its colon: the secret is "x"
		}
		if m.form == 'w' && strings.HasSuffix(m.name, "Authorization") && strings.ContainsAny(secret, " \t") {
			return // its first word is a scheme, kept
		}
		value := secret
		switch m.form {
		case 's':
			value = word + " " + secret
		case 'c':
			value = word + "=" + secret
		}
		sep := ":" + space
		if !colon {
			sep = " " + space
		}
		in := string(name) + sep + value
		out := Redact(in)
		// The secret must be gone: each byte of it that occurs nowhere
		// else on the line (the name, the kept word, the mask) is absent
		// from the output.
		kept := string(name) + sep + word + " =" + Redacted
		for i := 0; i < len(secret); i++ {
			if !strings.Contains(kept, secret[i:i+1]) && strings.Contains(out, secret[i:i+1]) {
				t.Fatalf("Redact(%q) = %q: byte %q of the secret %q is still there", in, out, secret[i], secret)
			}
		}
		if secret != "" && !strings.Contains(out, Redacted) {
			t.Fatalf("Redact(%q) = %q: no %s", in, out, Redacted)
		}
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// isWord reports whether s is a scheme or cookie name: letters, digits,
// '-' and '_' only.
func isWord(s string) bool {
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
