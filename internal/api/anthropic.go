package api

import "strconv"

// anthropicEncoder is the Encoder of the Anthropic Messages API
// (POST /v1/messages), with the events Anthropic sends: message_start; one
// content block per phase — a thinking block (thinking_delta events, then a
// signature_delta before its content_block_stop), a tool_use block
// (input_json_delta events), a text block (text_delta events) — each opened
// by content_block_start and closed by content_block_stop, with a ping after
// the first block's start; message_delta with the stop reason ("tool_use"
// when there is a tool call, else "end_turn") and the usage; message_stop.
// Every delta carries pi_ts. Every event is "event: <type>" + "data:
// <json>"; there is no [DONE].
type anthropicEncoder struct {
	a     Answer
	id    []byte // msg_sselatency_<no>
	model []byte // JSON string literal
	// deltaHead is, by phase, its delta event up to the token text: the
	// per-token path appends it in one piece.
	deltaHead [NumPhases][]byte
	*phased
}

func newAnthropicEncoder(a Answer) *anthropicEncoder {
	e := &anthropicEncoder{
		a:     a,
		id:    strconv.AppendUint([]byte("msg_sselatency_"), a.No, 10),
		model: modelLiteral(a.Model),
	}
	e.phased = newPhased(e, a)
	for p, delta := range [NumPhases]string{
		PhaseReasoning: `,"delta":{"type":"thinking_delta","thinking":"`,
		PhaseToolCall:  `,"delta":{"type":"input_json_delta","partial_json":"`,
		PhaseText:      `,"delta":{"type":"text_delta","text":"`,
	} {
		e.deltaHead[p] = append(blockHead(nil, "content_block_delta", e.slot[p]), delta...)
	}
	return e
}

// AnthropicSignature is the signature of every thinking block (base64, as
// Anthropic's; clients keep it opaque).
const AnthropicSignature = "c3NlLWxhdGVuY3k="

// Events without a variable part.
const (
	anthropicPing        = "event: ping\ndata: " + `{"type":"ping"}` + sseEnd
	anthropicMessageStop = "event: message_stop\ndata: " + `{"type":"message_stop"}` + sseEnd
)

// blockHead appends `event: <typ>\ndata: {"type":"<typ>","index":<slot>`.
func blockHead(dst []byte, typ string, slot int) []byte {
	dst = appendEventHead(dst, typ)
	dst = append(dst, `{"type":"`...)
	dst = append(dst, typ...)
	dst = append(dst, `","index":`...)
	return strconv.AppendInt(dst, int64(slot), 10)
}

// appendToolID appends the id of the answer's tool_use block.
func appendToolID(dst []byte, no uint64) []byte {
	dst = append(dst, "toolu_sselatency_"...)
	return strconv.AppendUint(dst, no, 10)
}

// stopReason is "tool_use" for an answer with a tool call, else
// "end_turn".
func (e *anthropicEncoder) stopReason() string {
	if e.a.ToolCall > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func (e *anthropicEncoder) headEvents() int { return 1 }

func (e *anthropicEncoder) appendHead(dst []byte, _, _ int, _ int64) []byte {
	dst = appendEventHead(dst, "message_start")
	dst = append(dst, `{"type":"message_start","message":{"id":"`...)
	dst = append(dst, e.id...)
	dst = append(dst, `","type":"message","role":"assistant","content":[],"model":`...)
	dst = append(dst, e.model...)
	dst = append(dst, `,"stop_reason":null,"stop_sequence":null,"usage":`...)
	dst = AppendUsage(dst, Anthropic, UsageStart, e.a.Usage())
	return append(dst, `}}`+sseEnd...)
}

func (e *anthropicEncoder) leadEvents() int { return 1 }

func (e *anthropicEncoder) appendLead(dst []byte, _, _ int) []byte {
	return append(dst, anthropicPing...)
}

func (e *anthropicEncoder) openEvents(Phase) int { return 1 }

func (e *anthropicEncoder) appendOpen(dst []byte, p Phase, _, _, slot int, _ int64) []byte {
	dst = blockHead(dst, "content_block_start", slot)
	switch p {
	case PhaseReasoning:
		dst = append(dst, `,"content_block":{"type":"thinking","thinking":"","signature":""}}`...)
	case PhaseToolCall:
		dst = append(dst, `,"content_block":{"type":"tool_use","id":"`...)
		dst = appendToolID(dst, e.a.No)
		dst = append(dst, `","name":"`+ToolName+`","input":{}}}`...)
	default:
		dst = append(dst, `,"content_block":{"type":"text","text":""}}`...)
	}
	return append(dst, sseEnd...)
}

func (e *anthropicEncoder) appendDelta(dst []byte, p Phase, j, _, _ int, ts int64) []byte {
	dst = append(dst, e.deltaHead[p]...)
	if p == PhaseToolCall {
		dst = appendArgumentDeltaJSON(dst, j, e.a.ToolCall)
	} else if p == PhaseText {
		dst = e.a.appendText(dst, j)
	} else {
		dst = AppendPhaseToken(dst, p, j)
	}
	dst = append(dst, `"},"pi_ts":`...)
	dst = strconv.AppendInt(dst, ts, 10)
	dst = append(dst, e.a.Instance...)
	return append(dst, "}"+sseEnd...)
}

func (e *anthropicEncoder) closeEvents(p Phase) int {
	if p == PhaseReasoning {
		return 2
	}
	return 1
}

func (e *anthropicEncoder) appendClose(dst []byte, p Phase, i, _, slot int, _ int64) []byte {
	if p == PhaseReasoning && i == 0 {
		dst = blockHead(dst, "content_block_delta", slot)
		return append(dst, `,"delta":{"type":"signature_delta","signature":"`+AnthropicSignature+`"}}`+sseEnd...)
	}
	dst = blockHead(dst, "content_block_stop", slot)
	return append(dst, "}"+sseEnd...)
}

func (e *anthropicEncoder) tailEvents() int { return 2 }

func (e *anthropicEncoder) appendTail(dst []byte, i, _ int, _ int64) []byte {
	if i == 1 {
		return append(dst, anthropicMessageStop...)
	}
	dst = appendEventHead(dst, "message_delta")
	dst = append(dst, `{"type":"message_delta","delta":{"stop_reason":"`...)
	dst = append(dst, e.stopReason()...)
	dst = append(dst, `","stop_sequence":null},"usage":`...)
	dst = AppendUsage(dst, Anthropic, UsageDelta, e.a.Usage())
	return append(dst, `}`+sseEnd...)
}

// appendBody appends the message: its content blocks (thinking with its
// signature, tool_use with its input object, text), stop reason and usage.
func (e *anthropicEncoder) appendBody(dst []byte) []byte {
	dst = append(dst, `{"id":"`...)
	dst = append(dst, e.id...)
	dst = append(dst, `","type":"message","role":"assistant","model":`...)
	dst = append(dst, e.model...)
	dst = append(dst, `,"content":[`...)
	for q := 0; q < e.np; q++ {
		if q > 0 {
			dst = append(dst, ',')
		}
		switch p := e.ps[q]; p {
		case PhaseReasoning:
			dst = append(dst, `{"type":"thinking","thinking":"`...)
			dst = appendPhaseTokens(dst, p, e.a.Reasoning)
			dst = append(dst, `","signature":"`+AnthropicSignature+`"}`...)
		case PhaseToolCall:
			dst = append(dst, `{"type":"tool_use","id":"`...)
			dst = appendToolID(dst, e.a.No)
			dst = append(dst, `","name":"`+ToolName+`","input":`...)
			dst = AppendArguments(dst, e.a.ToolCall)
			dst = append(dst, '}')
		default:
			dst = append(dst, `{"type":"text","text":"`...)
			dst = e.a.appendAllText(dst)
			dst = append(dst, `"}`...)
		}
	}
	dst = append(dst, `],"stop_reason":"`...)
	dst = append(dst, e.stopReason()...)
	dst = append(dst, `","stop_sequence":null,"usage":`...)
	dst = AppendUsage(dst, Anthropic, UsageDelta, e.a.Usage())
	return append(dst, '}')
}
