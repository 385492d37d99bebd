package failures

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// ExampleBytes bounds an example message (Sanitize): the status line and
// the start of an error body are enough to name a failure, and a hostile
// gateway's text must not fill a report.
const ExampleBytes = 240

// Sanitize returns s as a report may print it: invalid UTF-8 bytes,
// control characters (terminal escapes among them) and the invisible
// formatting runes that reorder or hide text (U+202E and the like) are
// dropped, every run of white space becomes one space, leading and
// trailing spaces go, and the result is cut, at a rune boundary, to at
// most ExampleBytes bytes ending in "...".
func Sanitize(s string) string {
	var b strings.Builder
	space := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size <= 1:
			continue
		case unicode.IsSpace(r):
			space = true
			continue
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || !unicode.IsPrint(r):
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
		if b.Len() > 4*ExampleBytes { // enough to know it is cut
			break
		}
	}
	out := b.String()
	if len(out) <= ExampleBytes {
		return out
	}
	cut := ExampleBytes - len("...")
	for cut > 0 && !utf8.RuneStart(out[cut]) {
		cut--
	}
	return strings.TrimRight(out[:cut], " ") + "..."
}

// Clean reports whether s is what Sanitize leaves unchanged.
func Clean(s string) bool { return Sanitize(s) == s }
