package api

import "strconv"

// RequestBody describes the streaming request body the client sends, in any
// dialect.
type RequestBody struct {
	Model string // "" means Model
	// Hints travel as the JSON fields pi_id, pi_tokens, pi_think_ms and
	// pi_delay_ms (those set) and as the prompt marker (when any is set).
	Hints Hints
	// IncludeUsage asks a Chat or Completions stream for its usage chunk
	// ("stream_options":{"include_usage":true}). The other dialects always
	// send usage; for them it adds nothing to the body.
	IncludeUsage bool
}

// AnthropicMaxTokens is the max_tokens of an Anthropic request (the field is
// required there).
const AnthropicMaxTokens = 4096

// AppendPrompt appends the prompt text: ChatPrompt, then a space and the
// hints' PromptMarker when any hint is set.
func AppendPrompt(dst []byte, h Hints) []byte {
	dst = append(dst, ChatPrompt...)
	if !h.Empty() {
		dst = append(dst, ' ')
		dst = append(dst, h.PromptMarker()...)
	}
	return dst
}

// AppendRequestBody appends the JSON body of a streaming request of dialect
// d:
//
//	chat         {"model":M,"stream":true[,"stream_options":{"include_usage":true}],"messages":[{"role":"user","content":P}]<pi>}
//	completions  {"model":M,"stream":true[,"stream_options":{"include_usage":true}],"prompt":P<pi>}
//	responses    {"model":M,"stream":true,"input":P<pi>}
//	anthropic    {"model":M,"stream":true,"max_tokens":4096,"messages":[{"role":"user","content":P}]<pi>}
//
// where P is the prompt (AppendPrompt) and <pi> the hint fields that are set,
// in the order pi_id, pi_tokens, pi_think_ms, pi_delay_ms. Without hints or
// options a chat body is byte for byte the reference's (SPEC §4).
func AppendRequestBody(dst []byte, d Dialect, r RequestBody) []byte {
	model := r.Model
	if model == "" {
		model = Model
	}
	dst = append(dst, `{"model":`...)
	dst = AppendJSONString(dst, model)
	dst = append(dst, `,"stream":true`...)
	if r.IncludeUsage && (d == Chat || d == Completions) {
		dst = append(dst, `,"stream_options":{"include_usage":true}`...)
	}
	var prompt [128]byte
	p := AppendPrompt(prompt[:0], r.Hints)
	switch d {
	case Completions:
		dst = append(dst, `,"prompt":`...)
		dst = AppendJSONString(dst, string(p))
	case Responses:
		dst = append(dst, `,"input":`...)
		dst = AppendJSONString(dst, string(p))
	default: // Chat, Anthropic
		if d == Anthropic {
			dst = append(dst, `,"max_tokens":`...)
			dst = strconv.AppendInt(dst, AnthropicMaxTokens, 10)
		}
		dst = append(dst, `,"messages":[{"role":"user","content":`...)
		dst = AppendJSONString(dst, string(p))
		dst = append(dst, `}]`...)
	}
	h := r.Hints
	if h.ID != "" {
		dst = append(dst, `,"pi_id":`...)
		dst = AppendJSONString(dst, h.ID)
	}
	if h.Tokens != nil {
		dst = append(dst, `,"pi_tokens":`...)
		dst = strconv.AppendInt(dst, *h.Tokens, 10)
	}
	if h.ThinkMs != nil {
		dst = append(dst, `,"pi_think_ms":`...)
		dst = strconv.AppendFloat(dst, *h.ThinkMs, 'f', -1, 64)
	}
	if h.DelayMs != nil {
		dst = append(dst, `,"pi_delay_ms":`...)
		dst = strconv.AppendFloat(dst, *h.DelayMs, 'f', -1, 64)
	}
	return append(dst, '}')
}
