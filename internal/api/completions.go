package api

import "strconv"

// completionsEncoder is the Encoder of the legacy OpenAI Completions API
// (POST /v1/completions): one text_completion chunk per token (no role
// chunk), a finish chunk, the usage chunk when asked for, then [DONE]. Chunks
// follow the field order of the chat chunks: id, object, created, pi_ts,
// model, choices. The legacy API has neither reasoning nor tool calls: the
// encoder drops Answer.Reasoning and Answer.ToolCall (the server refuses
// hints that ask for them, see CheckPhases).
type completionsEncoder struct {
	a     Answer
	id    []byte // cmpl-sse-latency-<no>
	model []byte // JSON string literal
}

func newCompletionsEncoder(a Answer) *completionsEncoder {
	a.Reasoning, a.ToolCall = 0, 0
	return &completionsEncoder{
		a:     a,
		id:    strconv.AppendUint([]byte("cmpl-sse-latency-"), a.No, 10),
		model: modelLiteral(a.Model),
	}
}

// prefix appends `data: {"id":…,"object":"text_completion","created":…,
// "pi_ts":…,"model":…` — the fields every chunk shares.
func (e *completionsEncoder) prefix(dst []byte, ts int64) []byte {
	dst = append(dst, sseData+`{"id":"`...)
	dst = append(dst, e.id...)
	dst = append(dst, `","object":"text_completion","created":`...)
	dst = strconv.AppendInt(dst, ts/1e9, 10)
	dst = append(dst, `,"pi_ts":`...)
	dst = strconv.AppendInt(dst, ts, 10)
	dst = append(dst, e.a.Instance...)
	dst = append(dst, `,"model":`...)
	return append(dst, e.model...)
}

func (e *completionsEncoder) StartEvents() int { return 0 }

func (e *completionsEncoder) AppendStart(dst []byte, _ int, _ int64) []byte { return dst }

func (e *completionsEncoder) AppendToken(dst []byte, k int, ts int64) []byte {
	if k < 0 || k >= e.a.Tokens {
		return dst
	}
	dst = e.prefix(dst, ts)
	dst = append(dst, `,"choices":[{"text":"`...)
	dst = e.a.appendText(dst, k)
	return append(dst, `","index":0,"logprobs":null,"finish_reason":null}]}`+sseEnd...)
}

func (e *completionsEncoder) EndEvents() int {
	if e.a.IncludeUsage {
		return 3
	}
	return 2
}

func (e *completionsEncoder) AppendEnd(dst []byte, i int, ts int64) []byte {
	switch {
	case i < 0 || i >= e.EndEvents():
		return dst
	case i == 0:
		dst = e.prefix(dst, ts)
		return append(dst, `,"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"stop"}]}`+sseEnd...)
	case i == 1 && e.a.IncludeUsage:
		dst = e.prefix(dst, ts)
		dst = append(dst, `,"choices":[],"usage":`...)
		dst = appendOpenAIUsage(dst, e.a.Prompt, e.a.Tokens, 0)
		return append(dst, "}"+sseEnd...)
	}
	return append(dst, sseData+Done+sseEnd...)
}

func (e *completionsEncoder) AppendBody(dst []byte) []byte {
	dst = append(dst, `{"id":"`...)
	dst = append(dst, e.id...)
	dst = append(dst, `","object":"text_completion","created":`...)
	dst = strconv.AppendInt(dst, e.a.Created, 10)
	dst = append(dst, `,"model":`...)
	dst = append(dst, e.model...)
	dst = append(dst, `,"choices":[{"text":"`...)
	dst = e.a.appendAllText(dst)
	dst = append(dst, `","index":0,"logprobs":null,"finish_reason":"stop"}],"usage":`...)
	dst = appendOpenAIUsage(dst, e.a.Prompt, e.a.Tokens, 0)
	return append(dst, '}')
}
