package api

import (
	"strconv"
)

// RequestBody describes the streaming request body the client sends, in any
// dialect.
type RequestBody struct {
	Model string // "" means Model
	// Hints travel as the JSON fields pi_id, pi_tokens, pi_think_ms,
	// pi_delay_ms, pi_reasoning_tokens, pi_tool_call_tokens and
	// pi_heartbeat_ms (those set)
	// and as the prompt marker (when any is set). A positive Reasoning or
	// ToolCall also adds what the dialect's real API wants before it
	// streams reasoning or calls a tool (appendPhaseFields), for gateways
	// that look.
	Hints Hints
	// IncludeUsage asks a Chat or Completions stream for its usage chunk
	// ("stream_options":{"include_usage":true}). The other dialects always
	// send usage; for them it adds nothing to the body.
	IncludeUsage bool
	// PromptBytes, when larger than the prompt without it, pads the prompt
	// text to that many bytes (--prompt-bytes; see AppendPaddedPrompt): a
	// large conversation for the gateway to read, which the server reads
	// and ignores. At most MaxPromptBytes.
	PromptBytes int
	// Blocks, when set, lays the prompt of PromptBytes bytes out in blocks
	// of BlockBytes, block j's words chosen by Blocks[j]
	// (AppendBlockPrompt): a trace's prefix blocks, shared between the
	// requests that share them.
	Blocks     []uint64
	BlockBytes int
}

// MaxPromptBytes is the largest prompt RequestBody.PromptBytes asks for:
// 4 MiB, about the text of a one-million-token context. The server's body
// limit (server.MaxBodyBytes) leaves room for it and the JSON around it.
const MaxPromptBytes = 4 << 20

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

// AppendPaddedPrompt appends the prompt text padded to size bytes:
// ChatPrompt, filler words (" anan huhu obob …", the text tokens' words,
// cut to fit), then a space and the hints' PromptMarker when any hint is
// set — the marker last, where a gateway that truncates long
// prompts from the front keeps it. The text is ASCII that JSON does not
// escape, so a body carrying it grows by exactly its length. A size no
// larger than the unpadded prompt (AppendPrompt) adds no filler; a size
// above MaxPromptBytes counts as MaxPromptBytes.
func AppendPaddedPrompt(dst []byte, h Hints, size int) []byte {
	marker := ""
	if !h.Empty() {
		marker = " " + h.PromptMarker()
	}
	dst = append(dst, ChatPrompt...)
	if fill := min(size, MaxPromptBytes) - len(ChatPrompt) - len(marker); fill > 0 {
		end := len(dst) + fill
		for i := 0; len(dst) < end; i++ {
			dst = AppendToken(append(dst, ' '), i)
		}
		dst = dst[:end]
	}
	return append(dst, marker...)
}

// AppendRequestBody appends the JSON body of a streaming request of dialect
// d:
//
//	chat         {"model":M,"stream":true[,"stream_options":{"include_usage":true}],"messages":[{"role":"user","content":P}]<pi>}
//	completions  {"model":M,"stream":true[,"stream_options":{"include_usage":true}],"prompt":P<pi>}
//	responses    {"model":M,"stream":true,"input":P<pi>}
//	anthropic    {"model":M,"stream":true,"max_tokens":4096,"messages":[{"role":"user","content":P}]<pi>}
//
// where P is the prompt (AppendPrompt, or AppendPaddedPrompt for a
// PromptBytes above its length) and <pi> the dialect's reasoning and
// tool fields when the hints ask for those phases (appendPhaseFields),
// then the hint fields that are set, in the order pi_id, pi_tokens,
// pi_think_ms, pi_delay_ms, pi_reasoning_tokens, pi_tool_call_tokens,
// pi_heartbeat_ms, pi_cached_tokens, then the faults' (Faults).
// Without hints or options a chat body is byte for byte the reference's
// (SPEC §4).
func AppendRequestBody(dst []byte, d Dialect, r RequestBody) []byte {
	return appendBody(dst, d, r, false)
}

// AppendResponseCreate appends the response.create message of the
// Responses API's WebSocket mode: the Responses body of
// AppendRequestBody, typed, without "stream" (implicit over WebSocket):
//
//	{"type":"response.create","model":M,"input":P<pi>}
func AppendResponseCreate(dst []byte, r RequestBody) []byte {
	return appendBody(dst, Responses, r, true)
}

// appendBody appends the body of AppendRequestBody, or with create the
// message of AppendResponseCreate.
func appendBody(dst []byte, d Dialect, r RequestBody, create bool) []byte {
	model := r.Model
	if model == "" {
		model = Model
	}
	dst = append(dst, '{')
	if create {
		dst = append(dst, `"type":"response.create",`...)
	}
	dst = append(dst, `"model":`...)
	dst = AppendJSONString(dst, model)
	if !create {
		dst = append(dst, `,"stream":true`...)
	}
	if r.IncludeUsage && (d == Chat || d == Completions) {
		dst = append(dst, `,"stream_options":{"include_usage":true}`...)
	}
	var prompt [128]byte
	p := AppendPrompt(prompt[:0], r.Hints)
	if r.Blocks != nil {
		p = AppendBlockPrompt(make([]byte, 0, min(r.PromptBytes, MaxPromptBytes)+len(p)), r.Hints, r.PromptBytes, r.Blocks, r.BlockBytes)
	} else if r.PromptBytes > len(p) {
		p = AppendPaddedPrompt(make([]byte, 0, min(r.PromptBytes, MaxPromptBytes)), r.Hints, r.PromptBytes)
	}
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
	dst = appendPhaseFields(dst, d, h)
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
	if h.Reasoning != nil {
		dst = append(dst, `,"pi_reasoning_tokens":`...)
		dst = strconv.AppendInt(dst, *h.Reasoning, 10)
	}
	if h.ToolCall != nil {
		dst = append(dst, `,"pi_tool_call_tokens":`...)
		dst = strconv.AppendInt(dst, *h.ToolCall, 10)
	}
	if h.HeartbeatMs != nil {
		dst = append(dst, `,"pi_heartbeat_ms":`...)
		dst = strconv.AppendFloat(dst, *h.HeartbeatMs, 'f', -1, 64)
	}
	if h.Cached != nil {
		dst = append(dst, `,"pi_cached_tokens":`...)
		if *h.Cached < 0 {
			dst = append(dst, `"none"`...)
		} else {
			dst = strconv.AppendInt(dst, *h.Cached, 10)
		}
	}
	dst = h.Faults.appendJSON(dst)
	return append(dst, '}')
}

// The request fields with which each dialect's real API asks for reasoning
// and declares the tool the answer calls: a gateway that routes or
// translates requests by what they ask for sees a reasoning, tool-using
// request. The server ignores them (the pi_* hints decide).
const (
	toolSchema = `{"type":"object","properties":{"words":{"type":"string"}},"required":["words"]}`
	toolDesc   = `"description":"Receives the words sse-latency streams as tool-call arguments"`

	chatReasoning      = `,"reasoning_effort":"medium"`
	chatTools          = `,"tools":[{"type":"function","function":{"name":"` + ToolName + `",` + toolDesc + `,"parameters":` + toolSchema + `}}]`
	responsesReasoning = `,"reasoning":{"effort":"medium","summary":"auto"}`
	responsesTools     = `,"tools":[{"type":"function","name":"` + ToolName + `",` + toolDesc + `,"parameters":` + toolSchema + `}]`
	// AnthropicThinkingBudget is the budget_tokens of an Anthropic request
	// that asks for thinking (at least 1024, below AnthropicMaxTokens).
	AnthropicThinkingBudget = 1024
	anthropicTools          = `,"tools":[{"name":"` + ToolName + `",` + toolDesc + `,"input_schema":` + toolSchema + `}]`
)

// appendPhaseFields appends the dialect's reasoning request (when h asks
// for reasoning tokens) and tool declaration (when h asks for a tool call):
//
//	chat       "reasoning_effort":"medium"  "tools":[{"type":"function","function":{…}}]
//	responses  "reasoning":{"effort":"medium","summary":"auto"}  "tools":[{"type":"function",…}]
//	anthropic  "thinking":{"type":"enabled","budget_tokens":1024}  "tools":[{"name":…,"input_schema":…}]
//
// Completions has neither.
func appendPhaseFields(dst []byte, d Dialect, h Hints) []byte {
	reasoning := h.Reasoning != nil && *h.Reasoning > 0
	tools := h.ToolCall != nil && *h.ToolCall > 0
	switch d {
	case Chat:
		if reasoning {
			dst = append(dst, chatReasoning...)
		}
		if tools {
			dst = append(dst, chatTools...)
		}
	case Responses:
		if reasoning {
			dst = append(dst, responsesReasoning...)
		}
		if tools {
			dst = append(dst, responsesTools...)
		}
	case Anthropic:
		if reasoning {
			dst = append(dst, `,"thinking":{"type":"enabled","budget_tokens":`...)
			dst = strconv.AppendInt(dst, AnthropicThinkingBudget, 10)
			dst = append(dst, '}')
		}
		if tools {
			dst = append(dst, anthropicTools...)
		}
	}
	return dst
}
