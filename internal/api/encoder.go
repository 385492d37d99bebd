package api

import (
	"encoding/json"
)

// Answer describes one response of the dummy server: everything an Encoder
// needs to know besides the clock.
type Answer struct {
	No           uint64 // stream number: makes the response ids unique
	Model        string // model to report (the request's); "" means Model
	Tokens       int    // number of text tokens in the answer
	Created      int64  // Unix seconds: Responses' created_at, non-streaming bodies' created
	IncludeUsage bool   // Chat and Completions streams: send the usage chunk (stream_options.include_usage)

	// The phases before the text (see Phase): Reasoning reasoning tokens,
	// then one tool call of ToolCall argument tokens. Completions carries
	// text only: its encoder ignores both.
	Reasoning int
	ToolCall  int
	// ReasoningField says how Chat and Responses carry the reasoning.
	ReasoningField ReasoningField
	// Text is the words of the text tokens (AppendText): ASCII, the
	// reference's, unless TextUTF8.
	Text TextWords
	// Instance names the server instance in every event that carries
	// pi_ts, right after it (NewInstanceField); nil: no such field.
	Instance InstanceField
	// Prompt is the prompt's accounting the usage objects report
	// (AppendUsage): its tokens and the prefix cache's figures.
	Prompt PromptUsage
}

// appendText appends the text of text token j in a's words.
func (a *Answer) appendText(dst []byte, j int) []byte { return AppendText(dst, a.Text, j) }

// appendAllText appends the text of a's text tokens, all of them.
func (a *Answer) appendAllText(dst []byte) []byte {
	for j := 0; j < a.Tokens; j++ {
		dst = a.appendText(dst, j)
	}
	return dst
}

// An Encoder produces the bytes of one answer in one dialect: the SSE events
// of a stream — the events sent before the first token, one event per token,
// the events after the last token — and the body of a non-streaming answer.
//
// Every Append method appends whole SSE events ("data: …\n\n" or
// "event: …\ndata: …\n\n"), ready to be framed in one HTTP chunk, and
// returns the extended slice: AppendStart and AppendEnd one event each,
// AppendToken one — preceded, for the first token of a phase, by the events
// that close the previous phase and open this one (a thinking block's
// signature and stop, a tool call's output item…). ts is the emission
// instant (process-clock epoch nanoseconds): the token events carry it as
// "pi_ts" (so do all Chat and Completions chunks), followed by
// Answer.Instance when the server has an instance id. An index out of range
// appends nothing. AppendToken is on the per-token path: it does not
// allocate when dst has room (a phase's opening events may grow it once).
//
// Tokens are numbered across the phases, in streaming order (Answer.Locate):
// the Reasoning tokens first, then the ToolCall argument tokens, then the
// Tokens text tokens; Answer.Total in all. Every dialect streams the same
// texts (AppendPhaseToken, AppendArgumentDelta) and reports Answer.Prompt
// input tokens (AppendUsage) and Answer.Total output tokens (the reasoning tokens among
// them where the usage object has a field for them).
type Encoder interface {
	// StartEvents is the number of events sent before the first token.
	StartEvents() int
	// AppendStart appends start event i, 0 <= i < StartEvents().
	AppendStart(dst []byte, i int, ts int64) []byte
	// AppendToken appends the event carrying token k (0 <= k <
	// Answer.Total()), stamped with ts, after the events that open its
	// phase when it is the phase's first.
	AppendToken(dst []byte, k int, ts int64) []byte
	// EndEvents is the number of events sent after the last token.
	EndEvents() int
	// AppendEnd appends end event i, 0 <= i < EndEvents(). The end events
	// close the last phase and describe the whole answer.
	AppendEnd(dst []byte, i int, ts int64) []byte
	// AppendBody appends the JSON body of the non-streaming answer.
	AppendBody(dst []byte) []byte
}

// The encoders of the dialects.
var (
	_ Encoder = (*completionsEncoder)(nil)
	_ Encoder = (*phased)(nil)
)

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

// appendOpenAIUsage appends the usage object of Chat and Completions
// (AppendUsage's): tokens completion tokens, reasoning of them reasoning
// tokens, the prompt p.
func appendOpenAIUsage(dst []byte, p PromptUsage, tokens, reasoning int) []byte {
	return AppendUsage(dst, Chat, UsageChunk, TokenUsage{Prompt: p, Output: tokens, Reasoning: reasoning})
}
