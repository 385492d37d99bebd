package api

import "strconv"

// responsesStart is the number of events before the first token of a
// Responses stream; token k has sequence_number responsesStart+k.
const responsesStart = 4

// responsesEncoder is the Encoder of the OpenAI Responses API
// (POST /v1/responses), with the events OpenAI sends for one text answer:
// response.created, response.in_progress, response.output_item.added,
// response.content_part.added, one response.output_text.delta per token
// (stamped with pi_ts), response.output_text.done, response.content_part.done,
// response.output_item.done and response.completed with the usage. Every
// event is "event: <type>" + "data: <json>", its sequence_number counting from
// 0 across the stream; there is no [DONE].
type responsesEncoder struct {
	a     Answer
	resp  []byte // resp_sselatency_<no>
	msg   []byte // msg_sselatency_<no>
	model []byte // JSON string literal
}

func newResponsesEncoder(a Answer) *responsesEncoder {
	return &responsesEncoder{
		a:     a,
		resp:  strconv.AppendUint([]byte("resp_sselatency_"), a.No, 10),
		msg:   strconv.AppendUint([]byte("msg_sselatency_"), a.No, 10),
		model: modelLiteral(a.Model),
	}
}

// open appends `event: <typ>\ndata: {"type":"<typ>","sequence_number":<seq>`.
func (e *responsesEncoder) open(dst []byte, typ string, seq int) []byte {
	dst = appendEventHead(dst, typ)
	dst = append(dst, `{"type":"`...)
	dst = append(dst, typ...)
	dst = append(dst, `","sequence_number":`...)
	return strconv.AppendInt(dst, int64(seq), 10)
}

// itemRef appends `,"item_id":"<msg>","output_index":0,"content_index":0`.
func (e *responsesEncoder) itemRef(dst []byte) []byte {
	dst = append(dst, `,"item_id":"`...)
	dst = append(dst, e.msg...)
	return append(dst, `","output_index":0,"content_index":0`...)
}

// appendResponse appends the response object: in progress (no output, usage
// null) or completed (the message and the usage).
func (e *responsesEncoder) appendResponse(dst []byte, completed bool) []byte {
	dst = append(dst, `{"id":"`...)
	dst = append(dst, e.resp...)
	dst = append(dst, `","object":"response","created_at":`...)
	dst = strconv.AppendInt(dst, e.a.Created, 10)
	if !completed {
		dst = append(dst, `,"status":"in_progress","model":`...)
		dst = append(dst, e.model...)
		return append(dst, `,"output":[],"usage":null}`...)
	}
	dst = append(dst, `,"status":"completed","model":`...)
	dst = append(dst, e.model...)
	dst = append(dst, `,"output":[`...)
	dst = e.appendItem(dst, true)
	dst = append(dst, `],"usage":{"input_tokens":`...)
	dst = strconv.AppendInt(dst, PromptTokens, 10)
	dst = append(dst, `,"input_tokens_details":{"cached_tokens":0},"output_tokens":`...)
	dst = strconv.AppendInt(dst, int64(e.a.Tokens), 10)
	dst = append(dst, `,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(e.a.Tokens)+PromptTokens, 10)
	return append(dst, `}}`...)
}

// appendItem appends the output message item: in progress and empty, or
// completed with the whole text.
func (e *responsesEncoder) appendItem(dst []byte, completed bool) []byte {
	dst = append(dst, `{"id":"`...)
	dst = append(dst, e.msg...)
	if !completed {
		return append(dst, `","type":"message","status":"in_progress","role":"assistant","content":[]}`...)
	}
	dst = append(dst, `","type":"message","status":"completed","role":"assistant","content":[`...)
	dst = e.appendPart(dst, true)
	return append(dst, `]}`...)
}

// appendPart appends the output_text content part, empty or with the whole
// text.
func (e *responsesEncoder) appendPart(dst []byte, full bool) []byte {
	dst = append(dst, `{"type":"output_text","text":"`...)
	if full {
		dst = appendAllTokens(dst, e.a.Tokens)
	}
	return append(dst, `","annotations":[]}`...)
}

func (e *responsesEncoder) StartEvents() int { return responsesStart }

func (e *responsesEncoder) AppendStart(dst []byte, i int, _ int64) []byte {
	switch i {
	case 0, 1:
		typ := "response.created"
		if i == 1 {
			typ = "response.in_progress"
		}
		dst = e.open(dst, typ, i)
		dst = append(dst, `,"response":`...)
		dst = e.appendResponse(dst, false)
	case 2:
		dst = e.open(dst, "response.output_item.added", i)
		dst = append(dst, `,"output_index":0,"item":`...)
		dst = e.appendItem(dst, false)
	case 3:
		dst = e.open(dst, "response.content_part.added", i)
		dst = e.itemRef(dst)
		dst = append(dst, `,"part":`...)
		dst = e.appendPart(dst, false)
	default:
		return dst
	}
	return append(dst, "}"+sseEnd...)
}

func (e *responsesEncoder) AppendToken(dst []byte, k int, ts int64) []byte {
	dst = e.open(dst, "response.output_text.delta", responsesStart+k)
	dst = e.itemRef(dst)
	dst = append(dst, `,"delta":"`...)
	dst = AppendToken(dst, k)
	dst = append(dst, `","logprobs":[],"pi_ts":`...)
	dst = strconv.AppendInt(dst, ts, 10)
	return append(dst, "}"+sseEnd...)
}

func (e *responsesEncoder) EndEvents() int { return 4 }

func (e *responsesEncoder) AppendEnd(dst []byte, i int, _ int64) []byte {
	seq := responsesStart + e.a.Tokens + i
	switch i {
	case 0:
		dst = e.open(dst, "response.output_text.done", seq)
		dst = e.itemRef(dst)
		dst = append(dst, `,"text":"`...)
		dst = appendAllTokens(dst, e.a.Tokens)
		dst = append(dst, `","logprobs":[]`...)
	case 1:
		dst = e.open(dst, "response.content_part.done", seq)
		dst = e.itemRef(dst)
		dst = append(dst, `,"part":`...)
		dst = e.appendPart(dst, true)
	case 2:
		dst = e.open(dst, "response.output_item.done", seq)
		dst = append(dst, `,"output_index":0,"item":`...)
		dst = e.appendItem(dst, true)
	case 3:
		dst = e.open(dst, "response.completed", seq)
		dst = append(dst, `,"response":`...)
		dst = e.appendResponse(dst, true)
	default:
		return dst
	}
	return append(dst, "}"+sseEnd...)
}

func (e *responsesEncoder) AppendBody(dst []byte) []byte { return e.appendResponse(dst, true) }
