package client

import (
	"bytes"
	"strconv"

	"github.com/sse-latency/sse-latency/internal/api"
)

// problem returns what is wrong with the content of a stream that has
// ended, as the detail of a result.Integrity failure, or "" when it is the
// expected text. It runs once per request; its work is bounded by the
// content kept. Only the first problem is reported:
//
//	N tokens missing (first: token F)     the text stops early, or skips tokens
//	token K duplicated                    token K arrives again after itself
//	tokens out of order from token K      another valid token where K belongs
//	corrupted content at token K ("xy")   text that is no token at all
//	N bytes of unexpected content after token L
func (m *matcher) problem() string {
	want := m.expect / api.TokenLen // 0: unknown
	if !m.diverged {
		switch {
		case want > 0 && m.pos < m.expect:
			return missing(want-m.pos/api.TokenLen, m.pos/api.TokenLen)
		case m.pos%api.TokenLen != 0: // unknown length, the last token cut short
			return missing(1, m.pos/api.TokenLen)
		}
		return ""
	}
	e := m.from / api.TokenLen // the token expected next
	b := m.rest
	for len(b) > 0 {
		if want > 0 && e >= want {
			return strconv.FormatInt(int64(len(b))+m.dropped, 10) + " bytes of unexpected content after token " + strconv.Itoa(want-1)
		}
		if len(b) < api.TokenLen { // the stream ends inside a token
			if bytes.Equal(b, m.tokenText(e)[:len(b)]) {
				return missing(max(want-e, 1), e)
			}
			return corrupted(e, b)
		}
		c := b[:api.TokenLen]
		if bytes.Equal(c, m.tokenText(e)) {
			e++
			b = b[api.TokenLen:]
			continue
		}
		r, ok := m.residue(c)
		switch {
		case !ok:
			return corrupted(e, c)
		case e > 0 && r == (e-1)%periodTokens:
			return "token " + strconv.Itoa(e-1) + " duplicated"
		}
		// c is token e+k (mod 26): tokens were skipped if the text goes on
		// in order from there, else they came out of order.
		k := (r - e%periodTokens + periodTokens) % periodTokens
		if next := b[api.TokenLen:]; len(next) >= api.TokenLen && !bytes.Equal(next[:api.TokenLen], m.tokenText(e+k+1)) {
			return "tokens out of order from token " + strconv.Itoa(e)
		}
		// The text only tells k modulo 26; the length tells the rest when
		// it is known and nothing else is wrong.
		if want > 0 && m.dropped == 0 {
			if gap := (want - e) - len(b)/api.TokenLen; gap > k && (gap-k)%periodTokens == 0 {
				k = gap
			}
		}
		return missing(k, e)
	}
	if want > 0 && e < want {
		return missing(want-e, e)
	}
	if m.dropped > 0 {
		return strconv.FormatInt(m.dropped, 10) + " bytes of unexpected content after token " + strconv.Itoa(e-1)
	}
	return ""
}

// tokenText returns the text of token i of m's phase, from its period
// table.
func (m *matcher) tokenText(i int) []byte {
	o := (i % periodTokens) * api.TokenLen
	return m.words[o : o+api.TokenLen]
}

// residue tells which token text of m's phase c is: the r in 0..25 with
// tokenText(r) == c, or false if c is no token of the phase. The first
// letter of token r is the (7r mod 26)th of the alphabet, in either case,
// and 15 is the inverse of 7 modulo 26.
func (m *matcher) residue(c []byte) (int, bool) {
	if len(c) != api.TokenLen {
		return 0, false
	}
	first := c[0] | 0x20 // ASCII lower case
	if first < 'a' || first > 'z' {
		return 0, false
	}
	r := 15 * int(first-'a') % periodTokens
	return r, bytes.Equal(c, m.tokenText(r))
}

func missing(n, first int) string {
	s := " tokens missing (first: token "
	if n == 1 {
		s = " token missing (first: token "
	}
	return strconv.Itoa(n) + s + strconv.Itoa(first) + ")"
}

func corrupted(at int, text []byte) string {
	return "corrupted content at token " + strconv.Itoa(at) + " (" + strconv.Quote(string(text)) + ")"
}
