package api

import "strconv"

// anthropicEncoder is the Encoder of the Anthropic Messages API
// (POST /v1/messages), with the events Anthropic sends for one text answer:
// message_start, content_block_start, ping, one content_block_delta
// (text_delta, stamped with pi_ts) per token, content_block_stop,
// message_delta with the stop reason and usage, message_stop. Every event is
// "event: <type>" + "data: <json>"; there is no [DONE].
type anthropicEncoder struct {
	a     Answer
	id    []byte // msg_sselatency_<no>
	model []byte // JSON string literal
}

func newAnthropicEncoder(a Answer) *anthropicEncoder {
	return &anthropicEncoder{
		a:     a,
		id:    strconv.AppendUint([]byte("msg_sselatency_"), a.No, 10),
		model: modelLiteral(a.Model),
	}
}

// Events without a variable part.
const (
	anthropicBlockStart = "event: content_block_start\ndata: " +
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + sseEnd
	anthropicPing      = "event: ping\ndata: " + `{"type":"ping"}` + sseEnd
	anthropicBlockStop = "event: content_block_stop\ndata: " +
		`{"type":"content_block_stop","index":0}` + sseEnd
	anthropicMessageStop = "event: message_stop\ndata: " + `{"type":"message_stop"}` + sseEnd
	anthropicDeltaHead   = "event: content_block_delta\ndata: " +
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`
)

func (e *anthropicEncoder) StartEvents() int { return 3 }

func (e *anthropicEncoder) AppendStart(dst []byte, i int, _ int64) []byte {
	switch i {
	case 0:
		dst = appendEventHead(dst, "message_start")
		dst = append(dst, `{"type":"message_start","message":{"id":"`...)
		dst = append(dst, e.id...)
		dst = append(dst, `","type":"message","role":"assistant","content":[],"model":`...)
		dst = append(dst, e.model...)
		dst = append(dst, `,"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":`...)
		dst = strconv.AppendInt(dst, PromptTokens, 10)
		return append(dst, `,"output_tokens":1}}}`+sseEnd...)
	case 1:
		return append(dst, anthropicBlockStart...)
	case 2:
		return append(dst, anthropicPing...)
	}
	return dst
}

func (e *anthropicEncoder) AppendToken(dst []byte, k int, ts int64) []byte {
	dst = append(dst, anthropicDeltaHead...)
	dst = AppendToken(dst, k)
	dst = append(dst, `"},"pi_ts":`...)
	dst = strconv.AppendInt(dst, ts, 10)
	return append(dst, "}"+sseEnd...)
}

func (e *anthropicEncoder) EndEvents() int { return 3 }

func (e *anthropicEncoder) AppendEnd(dst []byte, i int, _ int64) []byte {
	switch i {
	case 0:
		return append(dst, anthropicBlockStop...)
	case 1:
		dst = appendEventHead(dst, "message_delta")
		dst = append(dst, `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":`...)
		dst = strconv.AppendInt(dst, int64(e.a.Tokens), 10)
		return append(dst, `}}`+sseEnd...)
	case 2:
		return append(dst, anthropicMessageStop...)
	}
	return dst
}

func (e *anthropicEncoder) AppendBody(dst []byte) []byte {
	dst = append(dst, `{"id":"`...)
	dst = append(dst, e.id...)
	dst = append(dst, `","type":"message","role":"assistant","model":`...)
	dst = append(dst, e.model...)
	dst = append(dst, `,"content":[{"type":"text","text":"`...)
	dst = appendAllTokens(dst, e.a.Tokens)
	dst = append(dst, `"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":`...)
	dst = strconv.AppendInt(dst, PromptTokens, 10)
	dst = append(dst, `,"output_tokens":`...)
	dst = strconv.AppendInt(dst, int64(e.a.Tokens), 10)
	return append(dst, `}}`...)
}
