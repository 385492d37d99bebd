package client

import "github.com/sse-latency/sse-latency/internal/api"

// periodTokens is the period of the token texts: token i and token i+26
// are the same four letters (api.AppendPhaseToken), so the text of a phase
// repeats every periodBytes bytes.
const (
	periodTokens = 26
	periodBytes  = periodTokens * api.TokenLen
)

// words is one period of a phase's text: its tokens 0..25.
type words [periodBytes]byte

// phaseWords holds the words of each phase (api.Phase): ANAN…, Anan…,
// anan….
var phaseWords = func() (w [api.NumPhases]words) {
	for p := range api.Phase(api.NumPhases) {
		b := w[p][:0]
		for i := 0; i < periodTokens; i++ {
			b = api.AppendPhaseToken(b, p, i)
		}
	}
	return w
}()

// utf8Words is one period of the text in the UTF-8 words (api.TextUTF8).
var utf8Words = func() (w words) {
	b := w[:0]
	for i := 0; i < periodTokens; i++ {
		b = api.AppendText(b, api.TextUTF8, i)
	}
	return w
}()

// Bounds on the content kept once it differs from the expected text, for the
// analysis at the end of the request: the rest of the expected text plus
// extraContentBytes, or unknownContentBytes when the length is not known.
// Further bytes are only counted.
const (
	extraContentBytes   = 4 << 10
	unknownContentBytes = 64 << 10
)

// matcher follows the content of one response against the text the server
// emits. While the content matches, its work per content byte is one
// compare and one increment: pos says how many bytes of the expected text
// have arrived, so pos/4 tokens are complete. At the first byte that does
// not match it stops recognising tokens and keeps the rest of the content
// (bounded) for problem, which runs once, when the stream ends.
type matcher struct {
	words    *words // the phase's token texts
	expect   int    // bytes of content expected (4 per token); <= 0: unknown
	pos      int    // bytes of the expected text received, in order
	phase    int    // pos mod periodBytes
	received int64  // content bytes received in all

	diverged bool
	from     int    // the token boundary at or before the first unexpected byte
	rest     []byte // the content from there on, at most limit bytes
	limit    int
	dropped  int64 // content bytes beyond limit
}

// newMatcher returns the matcher of the visible text of expectTokens
// tokens (<= 0: unknown).
func newMatcher(expectTokens int) matcher { return newPhaseMatcher(api.PhaseText, expectTokens) }

// newTextMatcher returns the matcher of the visible text of expectTokens
// tokens in words w.
func newTextMatcher(expectTokens int, w api.TextWords) matcher {
	m := newMatcher(expectTokens)
	if w == api.TextUTF8 {
		m.words = &utf8Words
	}
	return m
}

// newPhaseMatcher returns the matcher of phase p's text of expectTokens
// tokens (<= 0: unknown).
func newPhaseMatcher(p api.Phase, expectTokens int) matcher {
	return matcher{words: &phaseWords[p], expect: max(expectTokens, 0) * api.TokenLen}
}

// feed takes the content text of one event. It returns the tokens the text
// completed, first..first+n-1, and whole: the text was exactly one whole
// token (aligned on a token boundary, all of it expected), the case in which
// the event's own pi_ts is that token's emission time.
func (m *matcher) feed(text []byte) (first, n int, whole bool) {
	m.received += int64(len(text))
	start := m.pos
	if !m.diverged {
		w := m.words
		for i, c := range text {
			if (m.expect > 0 && m.pos >= m.expect) || c != w[m.phase] {
				m.diverge()
				m.keep(text[i:])
				break
			}
			m.pos++
			if m.phase++; m.phase == periodBytes {
				m.phase = 0
			}
		}
	} else {
		m.keep(text)
	}
	first = start / api.TokenLen
	n = m.pos/api.TokenLen - first
	whole = start%api.TokenLen == 0 && len(text) == api.TokenLen && m.pos == start+api.TokenLen
	return first, n, whole
}

// diverge starts keeping the content, from the start of the token in which
// the first unexpected byte arrived.
func (m *matcher) diverge() {
	m.diverged = true
	m.from = m.pos - m.pos%api.TokenLen
	m.limit = unknownContentBytes
	if m.expect > 0 {
		m.limit = max(m.expect-m.from, 0) + extraContentBytes
	}
	// The part of that token that did arrive as expected.
	for p := m.from; p < m.pos; p++ {
		m.rest = append(m.rest, m.words[p%periodBytes])
	}
}

// keep appends unexpected content to rest, up to the limit.
func (m *matcher) keep(b []byte) {
	room := m.limit - len(m.rest)
	if room < len(b) {
		m.dropped += int64(len(b) - max(room, 0))
		b = b[:max(room, 0)]
	}
	m.rest = append(m.rest, b...)
}
