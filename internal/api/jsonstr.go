package api

import "unicode/utf8"

// JSON string helpers of the client: AppendJSONString quotes the texts it
// puts in request bodies, AppendUnescaped resolves the escapes a gateway may
// have put in a content string ("\u0061nan") before the client compares it
// with the text that was emitted. Both append into the caller's buffer and
// allocate only when it has no room.

// AppendJSONString appends s as a JSON string literal, quotes included,
// escaping what JSON requires: '"', '\\' and the control characters. Other
// bytes, invalid UTF-8 included, are copied as they are.
func AppendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendUnescaped appends the text of a JSON string to dst: raw is what lies
// between the quotes, escapes unresolved. \uXXXX escapes become UTF-8,
// surrogate pairs included; a lone surrogate becomes U+FFFD, as
// encoding/json decodes it. ok is false when raw holds an invalid escape (or
// ends inside one); such an escape is copied as it is, so that the content
// comparison reports it as corrupted rather than losing bytes.
func AppendUnescaped(dst, raw []byte) (out []byte, ok bool) {
	ok = true
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			// Copy the run up to the next backslash at once.
			j := i + 1
			for j < len(raw) && raw[j] != '\\' {
				j++
			}
			dst = append(dst, raw[i:j]...)
			i = j
			continue
		}
		if i+1 >= len(raw) {
			dst = append(dst, c)
			return dst, false
		}
		switch e := raw[i+1]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, n := unicodeEscape(raw[i:])
			if n == 0 {
				dst = append(dst, raw[i:i+2]...)
				ok = false
				i += 2
				continue
			}
			dst = utf8.AppendRune(dst, r)
			i += n
			continue
		default:
			dst = append(dst, raw[i:i+2]...)
			ok = false
		}
		i += 2
	}
	return dst, ok
}

// unicodeEscape decodes the \uXXXX escape at the start of b, with the low
// half of a surrogate pair if one follows, and returns the rune and the
// bytes used; n == 0 when b does not start with a valid \uXXXX.
func unicodeEscape(b []byte) (r rune, n int) {
	r1, ok := hex4(b)
	if !ok {
		return 0, 0
	}
	if r1 < 0xd800 || r1 > 0xdfff {
		return r1, 6
	}
	if r1 <= 0xdbff {
		if r2, ok := hex4(b[6:]); ok && r2 >= 0xdc00 && r2 <= 0xdfff {
			return 0x10000 + (r1-0xd800)<<10 + (r2 - 0xdc00), 12
		}
	}
	return utf8.RuneError, 6
}

// hex4 reads "\uXXXX" at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
