package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// ChatPath is the Chat Completions endpoint.
const ChatPath = "/v1/chat/completions"

// ChatPrompt is the user message the client sends (SPEC §4).
const ChatPrompt = "Say 4-letter words"

// ErrBadHint reports a pi_* field that is present but not a number.
var ErrBadHint = errors.New("api: bad pi_* hint")

func floatHint(name string, raw json.RawMessage) (*float64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return nil, fmt.Errorf("%w: %s must be a number, got %.40s", ErrBadHint, name, raw)
	}
	if v < 0 {
		v = 0
	}
	return &v, nil
}

func intHint(name string, raw json.RawMessage) (*int64, error) {
	f, err := floatHint(name, raw)
	if f == nil || err != nil {
		return nil, err
	}
	if *f > math.MaxInt32 {
		return nil, fmt.Errorf("%w: %s too large: %.40s", ErrBadHint, name, raw)
	}
	v := int64(*f)
	return &v, nil
}

// ChatChunk builds the chunk objects of one streamed chat completion, in the
// field order of SPEC §3: id, object, created, pi_ts, model, choices —
// with pi_instance after pi_ts when the server has an instance id
// (WithInstance).
// It appends into caller-owned buffers and does not allocate.
type ChatChunk struct {
	ID       []byte        // e.g. chatcmpl-sse-latency-42
	model    []byte        // JSON string literal; nil means Model
	instance InstanceField // after pi_ts; nil: none
}

// NewChatChunk returns a builder for the stream with the given number.
func NewChatChunk(streamNo uint64) ChatChunk {
	return ChatChunk{ID: strconv.AppendUint([]byte("chatcmpl-sse-latency-"), streamNo, 10)}
}

// WithModel returns the builder reporting model ("" means Model).
func (c ChatChunk) WithModel(model string) ChatChunk {
	c.model = modelLiteral(model)
	return c
}

// WithInstance returns the builder whose chunks name the server instance
// after pi_ts (f nil: none, the reference's field order).
func (c ChatChunk) WithInstance(f InstanceField) ChatChunk {
	c.instance = f
	return c
}

func (c ChatChunk) appendModel(dst []byte) []byte {
	if c.model == nil {
		return append(dst, `"`+Model+`"`...)
	}
	return append(dst, c.model...)
}

// prefix appends the fields every chunk shares, up to the model.
func (c ChatChunk) prefix(dst []byte, piTs int64) []byte {
	dst = append(dst, `{"id":"`...)
	dst = append(dst, c.ID...)
	dst = append(dst, `","object":"chat.completion.chunk","created":`...)
	dst = strconv.AppendInt(dst, piTs/1e9, 10)
	dst = append(dst, `,"pi_ts":`...)
	dst = strconv.AppendInt(dst, piTs, 10)
	dst = append(dst, c.instance...)
	dst = append(dst, `,"model":`...)
	return c.appendModel(dst)
}

func (c ChatChunk) head(dst []byte, piTs int64) []byte {
	dst = c.prefix(dst, piTs)
	return append(dst, `,"choices":[{"index":0,"delta":`...)
}

// AppendRole appends the first chunk: the assistant role, no content.
func (c ChatChunk) AppendRole(dst []byte, piTs int64) []byte {
	dst = c.head(dst, piTs)
	return append(dst, `{"role":"assistant"},"finish_reason":null}]}`...)
}

// AppendToken appends the chunk carrying text token i.
func (c ChatChunk) AppendToken(dst []byte, piTs int64, i int) []byte {
	dst = c.head(dst, piTs)
	dst = append(dst, `{"content":"`...)
	dst = AppendToken(dst, i)
	return append(dst, `"},"finish_reason":null}]}`...)
}

// AppendFinish appends the last chunk: empty delta, finish_reason "stop".
func (c ChatChunk) AppendFinish(dst []byte, piTs int64) []byte {
	return c.appendFinish(dst, piTs, "stop")
}

// appendFinish appends the last chunk with the given finish_reason.
func (c ChatChunk) appendFinish(dst []byte, piTs int64, reason string) []byte {
	dst = c.head(dst, piTs)
	dst = append(dst, `{},"finish_reason":"`...)
	dst = append(dst, reason...)
	return append(dst, `"}]}`...)
}

// AppendUsage appends the chunk a stream with stream_options.include_usage
// ends with, as OpenAI sends it: no choices, and the usage of tokens
// completion tokens.
func (c ChatChunk) AppendUsage(dst []byte, piTs int64, tokens int) []byte {
	return c.appendUsage(dst, piTs, PromptUsage{}, tokens, 0)
}

func (c ChatChunk) appendUsage(dst []byte, piTs int64, p PromptUsage, tokens, reasoning int) []byte {
	dst = c.prefix(dst, piTs)
	dst = append(dst, `,"choices":[],"usage":`...)
	dst = appendOpenAIUsage(dst, p, tokens, reasoning)
	return append(dst, '}')
}

// Done is the payload of the SSE event that ends a stream.
const Done = "[DONE]"

// AppendChatCompletion appends the non-streaming response: one
// chat.completion object whose message holds the same tokens a stream would.
func AppendChatCompletion(dst []byte, streamNo uint64, created int64, tokens int) []byte {
	return appendChatCompletion(dst, Answer{No: streamNo, Created: created, Tokens: tokens}, []byte(`"`+Model+`"`))
}

// appendChatCompletion appends the chat.completion object of answer a: the
// message's reasoning (a.ReasoningField's key), its content (null when the
// answer is a tool call without text) and its tool call, as OpenAI-style
// servers return them.
func appendChatCompletion(dst []byte, a Answer, model []byte) []byte {
	dst = append(dst, `{"id":"chatcmpl-sse-latency-`...)
	dst = strconv.AppendUint(dst, a.No, 10)
	dst = append(dst, `","object":"chat.completion","created":`...)
	dst = strconv.AppendInt(dst, a.Created, 10)
	dst = append(dst, `,"model":`...)
	dst = append(dst, model...)
	dst = append(dst, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if a.has(PhaseText) {
		dst = append(dst, '"')
		dst = a.appendAllText(dst)
		dst = append(dst, '"')
	} else {
		dst = append(dst, "null"...)
	}
	if a.Reasoning > 0 {
		dst = append(dst, ',', '"')
		dst = append(dst, a.ReasoningField.String()...)
		dst = append(dst, `":"`...)
		dst = appendPhaseTokens(dst, PhaseReasoning, a.Reasoning)
		dst = append(dst, '"')
	}
	if a.ToolCall > 0 {
		dst = append(dst, `,"tool_calls":[{"id":"`...)
		dst = appendCallID(dst, a.No)
		dst = append(dst, `","type":"function","function":{"name":"`+ToolName+`","arguments":"`...)
		dst = appendArgumentsJSON(dst, a.ToolCall)
		dst = append(dst, `"}}]`...)
	}
	dst = append(dst, `},"finish_reason":"`...)
	dst = append(dst, chatFinishReason(a)...)
	dst = append(dst, `"}],"usage":`...)
	dst = appendOpenAIUsage(dst, a.Prompt, a.Total(), a.Reasoning)
	return append(dst, '}')
}

// chatFinishReason is "tool_calls" for an answer with a tool call, text or
// not (as OpenAI, vLLM and the others report a turn that calls a tool),
// else "stop".
func chatFinishReason(a Answer) string {
	if a.ToolCall > 0 {
		return "tool_calls"
	}
	return "stop"
}

// appendCallID appends the id of the answer's tool call.
func appendCallID(dst []byte, no uint64) []byte {
	dst = append(dst, "call_sselatency_"...)
	return strconv.AppendUint(dst, no, 10)
}

// chatEncoder is the Encoder of Chat Completions (SPEC §3): a role chunk,
// one chunk per token — the reasoning as delta.reasoning_content (or
// delta.reasoning), the tool call as delta.tool_calls (a first chunk with
// its id, type and name and empty arguments, then one per argument token),
// the text as delta.content — a finish chunk, the usage chunk when asked
// for, [DONE].
type chatEncoder struct {
	a     Answer
	chunk ChatChunk
	*phased
}

func newChatEncoder(a Answer) *chatEncoder {
	e := &chatEncoder{a: a, chunk: NewChatChunk(a.No).WithModel(a.Model).WithInstance(a.Instance)}
	e.phased = newPhased(e, a)
	return e
}

func (e *chatEncoder) headEvents() int { return 1 }

func (e *chatEncoder) appendHead(dst []byte, _, _ int, ts int64) []byte {
	dst = append(dst, sseData...)
	dst = e.chunk.AppendRole(dst, ts)
	return append(dst, sseEnd...)
}

func (e *chatEncoder) leadEvents() int                                              { return 0 }
func (e *chatEncoder) appendLead(dst []byte, _, _ int) []byte                       { return dst }
func (e *chatEncoder) closeEvents(Phase) int                                        { return 0 }
func (e *chatEncoder) appendClose(dst []byte, _ Phase, _, _, _ int, _ int64) []byte { return dst }

func (e *chatEncoder) openEvents(p Phase) int {
	if p == PhaseToolCall {
		return 1
	}
	return 0
}

// appendOpen appends the first tool-call chunk: the call's index, id, type
// and name, with empty arguments.
func (e *chatEncoder) appendOpen(dst []byte, p Phase, _, _, _ int, ts int64) []byte {
	if p != PhaseToolCall {
		return dst
	}
	dst = append(dst, sseData...)
	dst = e.chunk.head(dst, ts)
	dst = append(dst, `{"tool_calls":[{"index":0,"id":"`...)
	dst = appendCallID(dst, e.a.No)
	dst = append(dst, `","type":"function","function":{"name":"`+ToolName+`","arguments":""}}]},"finish_reason":null}]}`+sseEnd...)
	return dst
}

func (e *chatEncoder) appendDelta(dst []byte, p Phase, j, _, _ int, ts int64) []byte {
	dst = append(dst, sseData...)
	dst = e.chunk.head(dst, ts)
	switch p {
	case PhaseReasoning:
		dst = append(dst, '{', '"')
		dst = append(dst, e.a.ReasoningField.String()...)
		dst = append(dst, `":"`...)
		dst = AppendPhaseToken(dst, PhaseReasoning, j)
		dst = append(dst, `"}`...)
	case PhaseToolCall:
		dst = append(dst, `{"tool_calls":[{"index":0,"function":{"arguments":"`...)
		dst = appendArgumentDeltaJSON(dst, j, e.a.ToolCall)
		dst = append(dst, `"}}]}`...)
	default:
		dst = append(dst, `{"content":"`...)
		dst = e.a.appendText(dst, j)
		dst = append(dst, `"}`...)
	}
	return append(dst, `,"finish_reason":null}]}`+sseEnd...)
}

func (e *chatEncoder) tailEvents() int {
	if e.a.IncludeUsage {
		return 3
	}
	return 2
}

func (e *chatEncoder) appendTail(dst []byte, i, _ int, ts int64) []byte {
	dst = append(dst, sseData...)
	switch {
	case i == 0:
		dst = e.chunk.appendFinish(dst, ts, chatFinishReason(e.a))
	case i == 1 && e.a.IncludeUsage:
		dst = e.chunk.appendUsage(dst, ts, e.a.Prompt, e.a.Total(), e.a.Reasoning)
	default:
		dst = append(dst, Done...)
	}
	return append(dst, sseEnd...)
}

func (e *chatEncoder) appendBody(dst []byte) []byte {
	return appendChatCompletion(dst, e.a, e.chunk.appendModel(nil))
}

// PromptTokens is the prompt size the server reports in usage objects.
const PromptTokens = 5
