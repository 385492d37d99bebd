package api

import (
	"encoding/json"
	"strconv"
)

// Answer describes one response of the dummy server: everything an Encoder
// needs to know besides the clock.
type Answer struct {
	No           uint64 // stream number: makes the response ids unique
	Model        string // model to report (the request's); "" means Model
	Tokens       int    // number of tokens in the answer
	Created      int64  // Unix seconds: Responses' created_at, non-streaming bodies' created
	IncludeUsage bool   // Chat and Completions streams: send the usage chunk (stream_options.include_usage)
}

// An Encoder produces the bytes of one answer in one dialect: the SSE events
// of a stream — the events sent before the first token, one event per token,
// the events after the last token — and the body of a non-streaming answer.
//
// Every Append method appends one whole SSE event ("data: …\n\n" or
// "event: …\ndata: …\n\n"), ready to be framed in its own HTTP chunk, and
// returns the extended slice. ts is the emission instant (process-clock epoch
// nanoseconds): the events that have room for an extra field carry it as
// "pi_ts". An index out of range appends nothing. AppendToken is on the
// per-token path: it does not allocate when dst has room.
//
// Every dialect streams the same tokens (AppendToken of package api) and
// reports PromptTokens input tokens and Answer.Tokens output tokens.
type Encoder interface {
	// StartEvents is the number of events sent before the first token.
	StartEvents() int
	// AppendStart appends start event i, 0 <= i < StartEvents().
	AppendStart(dst []byte, i int, ts int64) []byte
	// AppendToken appends the event carrying token k, stamped with ts.
	AppendToken(dst []byte, k int, ts int64) []byte
	// EndEvents is the number of events sent after the last token.
	EndEvents() int
	// AppendEnd appends end event i, 0 <= i < EndEvents(). The end events
	// describe the whole answer (all Answer.Tokens tokens).
	AppendEnd(dst []byte, i int, ts int64) []byte
	// AppendBody appends the JSON body of the non-streaming answer.
	AppendBody(dst []byte) []byte
}

// NewEncoder returns the encoder of answer a in dialect d (Chat for an
// unknown dialect).
func NewEncoder(d Dialect, a Answer) Encoder {
	switch d {
	case Completions:
		return newCompletionsEncoder(a)
	case Responses:
		return newResponsesEncoder(a)
	case Anthropic:
		return newAnthropicEncoder(a)
	}
	return newChatEncoder(a)
}

// SSE framing of the encoders' events.
const (
	sseData  = "data: "
	sseEvent = "event: "
	sseEnd   = "\n\n"
)

// appendEventHead opens an SSE event with an event name: "event: <name>\ndata: ".
func appendEventHead(dst []byte, name string) []byte {
	dst = append(dst, sseEvent...)
	dst = append(dst, name...)
	return append(dst, "\n"+sseData...)
}

// modelLiteral is the JSON string literal, quotes included, of the model to
// report.
func modelLiteral(model string) []byte {
	if model == "" {
		model = Model
	}
	b, err := json.Marshal(model)
	if err != nil { // cannot happen for a string
		return []byte(`"` + Model + `"`)
	}
	return b
}

// appendAllTokens appends the text of tokens 0..n-1.
func appendAllTokens(dst []byte, n int) []byte {
	for i := 0; i < n; i++ {
		dst = AppendToken(dst, i)
	}
	return dst
}

// appendOpenAIUsage appends the usage object of Chat and Completions.
func appendOpenAIUsage(dst []byte, tokens int) []byte {
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, PromptTokens, 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, int64(tokens), 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(tokens)+PromptTokens, 10)
	return append(dst, '}')
}
