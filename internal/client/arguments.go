package client

import (
	"strconv"

	"github.com/sse-latency/sse-latency/internal/api"
)

// argMatcher follows the argument text of the tool call against the one the
// server emits: the JSON object {"words":"<tokens>"} (api.AppendArguments).
// The envelope — api.ArgumentsPrefix before the words, api.ArgumentsSuffix
// after them — is checked byte by byte, JSON whitespace allowed between its
// tokens (a gateway that re-serialises the object may add some); the words
// go to a matcher of the tool-call phase, which recognises the tokens as
// the text matcher does. The arguments are held to exact JSON: a gateway
// that changes them changes what an agent would run.
type argMatcher struct {
	words    matcher
	state    argState
	pos      int   // bytes of the prefix or the suffix matched so far
	received int64 // argument bytes received in all

	// The first byte that does not fit, for the problem: its offset in the
	// argument text, the state it came in, and what followed it (bounded).
	badAt   int64
	badIn   argState
	badText []byte
}

// argState is where in the arguments the next byte belongs.
type argState uint8

const (
	argPrefix argState = iota // in api.ArgumentsPrefix
	argWords                  // in the words, until the closing quote
	argSuffix                 // in api.ArgumentsSuffix
	argDone                   // after it: only whitespace may follow
	argBad                    // a byte did not fit: the rest is not looked at
)

// badTextBytes bounds what the problem quotes of unexpected argument text.
const badTextBytes = 24

func newArgMatcher(expectTokens int) argMatcher {
	return argMatcher{words: newPhaseMatcher(api.PhaseToolCall, expectTokens)}
}

// spaceBefore reports whether JSON whitespace may come before byte i of
// the prefix ({"words":"), that is before one of its JSON tokens: '{', the
// key, ':' and the value's opening quote.
func spaceBefore(i int) bool { return i == 0 || i == 1 || i == 8 || i == 9 }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// feed takes the argument text of one event, unescaped. It returns the
// argument tokens the text completed, first..first+n-1, and whole: the
// event carried exactly one whole token besides envelope bytes, the case
// in which its pi_ts is that token's emission time.
func (a *argMatcher) feed(text []byte) (first, n int, whole bool) {
	first = a.words.pos / api.TokenLen
	for i := 0; i < len(text); {
		c := text[i]
		switch a.state {
		case argPrefix:
			switch {
			case c == api.ArgumentsPrefix[a.pos]:
				if a.pos++; a.pos == len(api.ArgumentsPrefix) {
					a.state, a.pos = argWords, 0
				}
			case isSpace(c) && spaceBefore(a.pos):
			default:
				a.fail(text[i:])
				return first, 0, false
			}
			i++
		case argWords:
			j := i
			for j < len(text) && text[j] != '"' {
				j++
			}
			if j > i { // the only words of this text: they end at the quote
				_, n, whole = a.words.feed(text[i:j])
			}
			if j < len(text) {
				a.state = argSuffix
			}
			a.received += int64(j - i)
			i = j
			continue
		case argSuffix:
			switch {
			case c == api.ArgumentsSuffix[a.pos]:
				if a.pos++; a.pos == len(api.ArgumentsSuffix) {
					a.state = argDone
				}
			case isSpace(c) && a.pos == 1: // between the closing quote and '}'
			default:
				a.fail(text[i:])
				return first, n, false
			}
			i++
		case argDone:
			if !isSpace(c) {
				a.fail(text[i:])
				return first, n, false
			}
			i++
		case argBad:
			a.received += int64(len(text) - i)
			return first, n, false
		}
		a.received++
	}
	return first, n, whole
}

// fail records unexpected argument text: the arguments are corrupted from
// there on.
func (a *argMatcher) fail(rest []byte) {
	a.badAt, a.badIn = a.received, a.state
	a.badText = append(a.badText, rest[:min(len(rest), badTextBytes)]...)
	a.received += int64(len(rest))
	a.state = argBad
}

// problem returns what is wrong with the arguments of a stream that has
// ended ("" when they are the expected JSON object), for an integrity
// detail after "tool call: ". Words missing, out of order or corrupted are
// told as for the text; then text where the envelope belongs, or an object
// left open.
func (a *argMatcher) problem() string {
	bad := " (" + strconv.Quote(string(a.badText)) + " at byte " + strconv.FormatInt(a.badAt, 10) + ")"
	if a.state == argBad && a.badIn == argPrefix {
		return "arguments do not start with " + strconv.Quote(api.ArgumentsPrefix) + bad
	}
	if p := a.words.problem(); p != "" {
		return p
	}
	switch a.state {
	case argBad:
		return "unexpected arguments text" + bad
	case argPrefix, argWords, argSuffix:
		return "arguments not closed (" + strconv.Quote(api.ArgumentsSuffix) + " missing): not valid JSON"
	}
	return ""
}
