// Package api holds what travels inside the HTTP frames: the request bodies
// the client sends, the events the server streams (stamped with pi_ts), the
// tolerant scanner the client applies to every received event, the hints
// that carry a request's parameters through gateways, and the deterministic
// token text both sides agree on.
//
// Four dialects: OpenAI Chat Completions (the reference's), legacy
// Completions, Responses, and Anthropic Messages; each has its own file.
//
// An answer has up to three phases, streamed in this order: reasoning
// tokens (the think phase), the argument tokens of one tool call, then the
// visible text (phases.go). Each phase has its own word shapes, so that its
// text is told apart by content alone.
package api

import "fmt"

// Model is the model name the dummy server serves and the client asks for.
const Model = "sse-latency-1"

// TokenLen is the number of letters in every token, in every phase.
const TokenLen = 4

const (
	alphabet = "abcdefghijklmnopqrstuvwxyz"
	upper    = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
)

// AppendToken appends the text of token i (from 0): letter j (0..3) is
// alphabet[(7i + 13j) mod 26], as the reference tool emits it (SPEC §3).
func AppendToken(dst []byte, i int) []byte {
	base := (7 * (i % 26)) % 26
	for j := 0; j < TokenLen; j++ {
		dst = append(dst, alphabet[(base+13*j)%26])
	}
	return dst
}

// Token returns the text of token i.
func Token(i int) string { return string(AppendToken(make([]byte, 0, TokenLen), i)) }

// AppendText appends the text of text token i in words w. The UTF-8 words
// (TextUTF8, the text=utf8 hint) are TokenLen bytes too: two 2-byte
// characters, the Cyrillic letters U+0430+x of the first two letters x of
// the ASCII token ("anan" is "ан", D0 B0 D0 BD), so that an event split
// inside a character tests a gateway's UTF-8 handling while the tokens
// keep their length and their period.
func AppendText(dst []byte, w TextWords, i int) []byte {
	if w != TextUTF8 {
		return AppendToken(dst, i)
	}
	base := (7 * (i % 26)) % 26
	for _, x := range [2]int{base, (base + 13) % 26} {
		r := 0x430 + x
		dst = append(dst, byte(0xC0|r>>6), byte(0x80|r&0x3F))
	}
	return dst
}

// Phase is a part of an answer. The server streams the phases in the order
// of their values: reasoning, then the tool call, then the text.
type Phase uint8

// The phases of an answer.
const (
	PhaseReasoning Phase = iota // reasoning tokens, during the think time
	PhaseToolCall               // the argument tokens of one tool call
	PhaseText                   // the visible text (the reference's tokens)
	NumPhases      = 3
)

var phaseNames = [...]string{PhaseReasoning: "reasoning", PhaseToolCall: "tool_call", PhaseText: "text"}

// String returns the phase's snake_case name.
func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("phase(%d)", int(p))
}

// AppendPhaseToken appends the text of token i of phase p. The three phases
// use the same letters in three shapes, so that text moved from one phase to
// another (a gateway that turns reasoning into content) shows as corrupted:
//
//	text       anan huhu obob …  lower case (AppendToken, the reference's)
//	reasoning  ANAN HUHU OBOB …  upper case
//	tool call  Anan Huhu Obob …  capitalised
func AppendPhaseToken(dst []byte, p Phase, i int) []byte {
	n := len(dst)
	dst = AppendToken(dst, i)
	switch p {
	case PhaseReasoning:
		for j := n; j < len(dst); j++ {
			dst[j] -= 'a' - 'A'
		}
	case PhaseToolCall:
		dst[n] -= 'a' - 'A'
	}
	return dst
}

// PhaseToken returns the text of token i of phase p.
func PhaseToken(p Phase, i int) string {
	return string(AppendPhaseToken(make([]byte, 0, TokenLen), p, i))
}

// The tool call. Its arguments are the JSON object
// {"words":"<the tool-call tokens>"}: the first argument delta carries
// ArgumentsPrefix and the first token, the last one the last token and
// ArgumentsSuffix, the others one token each, so that the accumulated deltas
// are valid JSON exactly when all have arrived (the SDKs parse them).
const (
	ToolName        = "sse_latency_words"
	ArgumentsPrefix = `{"words":"`
	ArgumentsSuffix = `"}`
)

// AppendArgumentDelta appends argument delta j of a tool call of n tokens,
// unescaped: [ArgumentsPrefix] token j [ArgumentsSuffix].
func AppendArgumentDelta(dst []byte, j, n int) []byte {
	return appendArgumentDelta(dst, j, n, ArgumentsPrefix, ArgumentsSuffix)
}

// AppendArguments appends the whole arguments of a tool call of n tokens,
// unescaped.
func AppendArguments(dst []byte, n int) []byte {
	for j := 0; j < n; j++ {
		dst = AppendArgumentDelta(dst, j, n)
	}
	return dst
}

// The forms of the argument prefix and suffix inside a JSON string.
const (
	argumentsPrefixJSON = `{\"words\":\"`
	argumentsSuffixJSON = `\"}`
)

// appendArgumentDeltaJSON is AppendArgumentDelta escaped for a JSON string.
func appendArgumentDeltaJSON(dst []byte, j, n int) []byte {
	return appendArgumentDelta(dst, j, n, argumentsPrefixJSON, argumentsSuffixJSON)
}

// appendArgumentsJSON is AppendArguments escaped for a JSON string.
func appendArgumentsJSON(dst []byte, n int) []byte {
	for j := 0; j < n; j++ {
		dst = appendArgumentDeltaJSON(dst, j, n)
	}
	return dst
}

// appendArgumentDelta appends argument delta j of a tool call of n tokens
// with the envelope's prefix and suffix in the given form.
func appendArgumentDelta(dst []byte, j, n int, prefix, suffix string) []byte {
	if j == 0 {
		dst = append(dst, prefix...)
	}
	dst = AppendPhaseToken(dst, PhaseToolCall, j)
	if j == n-1 {
		dst = append(dst, suffix...)
	}
	return dst
}

// appendPhaseTokens appends the text of tokens 0..n-1 of phase p (reasoning
// or text; no JSON escaping is needed).
func appendPhaseTokens(dst []byte, p Phase, n int) []byte {
	for i := 0; i < n; i++ {
		dst = AppendPhaseToken(dst, p, i)
	}
	return dst
}
