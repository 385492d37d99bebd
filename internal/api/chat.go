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
// field order of SPEC §3: id, object, created, pi_ts, model, choices.
// It appends into caller-owned buffers and does not allocate.
type ChatChunk struct {
	ID    []byte // e.g. chatcmpl-sse-latency-42
	model []byte // JSON string literal; nil means Model
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

// AppendToken appends the chunk carrying token i.
func (c ChatChunk) AppendToken(dst []byte, piTs int64, i int) []byte {
	dst = c.head(dst, piTs)
	dst = append(dst, `{"content":"`...)
	dst = AppendToken(dst, i)
	return append(dst, `"},"finish_reason":null}]}`...)
}

// AppendFinish appends the last chunk: empty delta, finish_reason "stop".
func (c ChatChunk) AppendFinish(dst []byte, piTs int64) []byte {
	dst = c.head(dst, piTs)
	return append(dst, `{},"finish_reason":"stop"}]}`...)
}

// AppendUsage appends the chunk a stream with stream_options.include_usage
// ends with, as OpenAI sends it: no choices, and the usage of tokens
// completion tokens.
func (c ChatChunk) AppendUsage(dst []byte, piTs int64, tokens int) []byte {
	dst = c.prefix(dst, piTs)
	dst = append(dst, `,"choices":[],"usage":`...)
	dst = appendOpenAIUsage(dst, tokens)
	return append(dst, '}')
}

// Done is the payload of the SSE event that ends a stream.
const Done = "[DONE]"

// AppendChatCompletion appends the non-streaming response: one
// chat.completion object whose message holds the same tokens a stream would.
func AppendChatCompletion(dst []byte, streamNo uint64, created int64, tokens int) []byte {
	return appendChatCompletion(dst, streamNo, []byte(`"`+Model+`"`), created, tokens)
}

func appendChatCompletion(dst []byte, streamNo uint64, model []byte, created int64, tokens int) []byte {
	dst = append(dst, `{"id":"chatcmpl-sse-latency-`...)
	dst = strconv.AppendUint(dst, streamNo, 10)
	dst = append(dst, `","object":"chat.completion","created":`...)
	dst = strconv.AppendInt(dst, created, 10)
	dst = append(dst, `,"model":`...)
	dst = append(dst, model...)
	dst = append(dst, `,"choices":[{"index":0,"message":{"role":"assistant","content":"`...)
	dst = appendAllTokens(dst, tokens)
	dst = append(dst, `"},"finish_reason":"stop"}],"usage":`...)
	dst = appendOpenAIUsage(dst, tokens)
	return append(dst, '}')
}

// chatEncoder is the Encoder of Chat Completions (SPEC §3): a role chunk, one
// chunk per token, a finish chunk, the usage chunk when asked for, [DONE].
type chatEncoder struct {
	a     Answer
	chunk ChatChunk
}

func newChatEncoder(a Answer) *chatEncoder {
	return &chatEncoder{a: a, chunk: NewChatChunk(a.No).WithModel(a.Model)}
}

func (e *chatEncoder) StartEvents() int { return 1 }

func (e *chatEncoder) AppendStart(dst []byte, i int, ts int64) []byte {
	if i != 0 {
		return dst
	}
	dst = append(dst, sseData...)
	dst = e.chunk.AppendRole(dst, ts)
	return append(dst, sseEnd...)
}

func (e *chatEncoder) AppendToken(dst []byte, k int, ts int64) []byte {
	dst = append(dst, sseData...)
	dst = e.chunk.AppendToken(dst, ts, k)
	return append(dst, sseEnd...)
}

func (e *chatEncoder) EndEvents() int {
	if e.a.IncludeUsage {
		return 3
	}
	return 2
}

func (e *chatEncoder) AppendEnd(dst []byte, i int, ts int64) []byte {
	if i < 0 || i >= e.EndEvents() {
		return dst
	}
	dst = append(dst, sseData...)
	switch {
	case i == 0:
		dst = e.chunk.AppendFinish(dst, ts)
	case i == 1 && e.a.IncludeUsage:
		dst = e.chunk.AppendUsage(dst, ts, e.a.Tokens)
	default:
		dst = append(dst, Done...)
	}
	return append(dst, sseEnd...)
}

func (e *chatEncoder) AppendBody(dst []byte) []byte {
	return appendChatCompletion(dst, e.a.No, e.chunk.model, e.a.Created, e.a.Tokens)
}

// PromptTokens is the prompt size the server reports in usage objects.
const PromptTokens = 5
