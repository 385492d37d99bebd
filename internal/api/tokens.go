// Package api holds what travels inside the HTTP frames: the request bodies
// the client sends, the events the server streams (stamped with pi_ts), the
// tolerant scanner the client applies to every received event, the hints
// that carry a request's parameters through gateways, and the deterministic
// token text both sides agree on.
//
// Four dialects: OpenAI Chat Completions (the reference's), legacy
// Completions, Responses, and Anthropic Messages; each has its own file.
package api

// Model is the model name the dummy server serves and the client asks for.
const Model = "sse-latency-1"

// TokenLen is the number of letters in every token.
const TokenLen = 4

const alphabet = "abcdefghijklmnopqrstuvwxyz"

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
