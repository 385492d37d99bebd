package api

import "strconv"

// responsesEncoder is the Encoder of the OpenAI Responses API
// (POST /v1/responses), with the events OpenAI sends: response.created and
// response.in_progress; then one output item per phase, in order —
//
//   - reasoning: response.output_item.added (a reasoning item), then with
//     ReasoningContent a summary part (response.reasoning_summary_part.added,
//     one response.reasoning_summary_text.delta per token,
//     response.reasoning_summary_text.done, response.reasoning_summary_part.done),
//     with ReasoningPlain a reasoning_text content part
//     (response.content_part.added, response.reasoning_text.delta…,
//     response.reasoning_text.done, response.content_part.done), then
//     response.output_item.done;
//   - the tool call: response.output_item.added (a function_call item), one
//     response.function_call_arguments.delta per token,
//     response.function_call_arguments.done, response.output_item.done;
//   - the text: response.output_item.added (a message),
//     response.content_part.added, one response.output_text.delta per token,
//     response.output_text.done, response.content_part.done,
//     response.output_item.done;
//
// then response.completed with the whole output and the usage. Every delta
// is stamped with pi_ts. Every event is "event: <type>" + "data: <json>",
// its sequence_number counting from 0 across the stream; there is no
// [DONE].
type responsesEncoder struct {
	a     Answer
	resp  []byte // resp_sselatency_<no>
	rs    []byte // rs_sselatency_<no>: the reasoning item
	fc    []byte // fc_sselatency_<no>: the function call item
	msg   []byte // msg_sselatency_<no>: the message item
	model []byte // JSON string literal
	// By phase, its delta event up to the sequence number, and from there
	// to the token text: the per-token path appends each in one piece.
	deltaHead, deltaRef [NumPhases][]byte
	*phased
}

func newResponsesEncoder(a Answer) *responsesEncoder {
	e := &responsesEncoder{
		a:     a,
		resp:  strconv.AppendUint([]byte("resp_sselatency_"), a.No, 10),
		rs:    strconv.AppendUint([]byte("rs_sselatency_"), a.No, 10),
		fc:    strconv.AppendUint([]byte("fc_sselatency_"), a.No, 10),
		msg:   strconv.AppendUint([]byte("msg_sselatency_"), a.No, 10),
		model: modelLiteral(a.Model),
	}
	e.phased = newPhased(e, a)
	for p := PhaseReasoning; p < NumPhases; p++ {
		typ := e.deltaEvent(p, false)
		e.deltaHead[p] = append(appendEventHead(nil, typ), `{"type":"`+typ+`","sequence_number":`...)
		e.deltaRef[p] = append(e.partRef(nil, p, e.slot[p]), `,"delta":"`...)
	}
	return e
}

// summary reports whether the reasoning is a summary (else reasoning text).
func (e *responsesEncoder) summary() bool { return e.a.ReasoningField == ReasoningContent }

// open appends `event: <typ>\ndata: {"type":"<typ>","sequence_number":<seq>`.
func (e *responsesEncoder) open(dst []byte, typ string, seq int) []byte {
	dst = appendEventHead(dst, typ)
	dst = append(dst, `{"type":"`...)
	dst = append(dst, typ...)
	dst = append(dst, `","sequence_number":`...)
	return strconv.AppendInt(dst, int64(seq), 10)
}

// itemRef appends `,"item_id":"<id>","output_index":<slot>`.
func itemRef(dst, id []byte, slot int) []byte {
	dst = append(dst, `,"item_id":"`...)
	dst = append(dst, id...)
	dst = append(dst, `","output_index":`...)
	return strconv.AppendInt(dst, int64(slot), 10)
}

// partRef appends the item reference of phase p's item and the index of
// its part: `,"summary_index":0` or `,"content_index":0`, none for a tool
// call.
func (e *responsesEncoder) partRef(dst []byte, p Phase, slot int) []byte {
	switch p {
	case PhaseReasoning:
		dst = itemRef(dst, e.rs, slot)
		if e.summary() {
			return append(dst, `,"summary_index":0`...)
		}
	case PhaseToolCall:
		return itemRef(dst, e.fc, slot)
	default:
		dst = itemRef(dst, e.msg, slot)
	}
	return append(dst, `,"content_index":0`...)
}

// appendResponse appends the response object: in progress (no output, usage
// null) or completed (every item and the usage).
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
	for q := 0; q < e.np; q++ {
		if q > 0 {
			dst = append(dst, ',')
		}
		dst = e.appendItem(dst, e.ps[q], true)
	}
	dst = append(dst, `],"usage":`...)
	dst = AppendUsage(dst, Responses, UsageCompleted, e.a.Usage())
	return append(dst, '}')
}

// appendItem appends the output item of phase p: in progress and empty, or
// completed with its whole text.
func (e *responsesEncoder) appendItem(dst []byte, p Phase, completed bool) []byte {
	switch p {
	case PhaseReasoning:
		dst = append(dst, `{"id":"`...)
		dst = append(dst, e.rs...)
		dst = append(dst, `","type":"reasoning","summary":[`...)
		if e.summary() {
			if completed {
				dst = e.appendPart(dst, p, true)
			}
			return append(dst, `]}`...)
		}
		dst = append(dst, `],"content":[`...)
		if completed {
			dst = e.appendPart(dst, p, true)
		}
		return append(dst, `]}`...)
	case PhaseToolCall:
		dst = append(dst, `{"id":"`...)
		dst = append(dst, e.fc...)
		if completed {
			dst = append(dst, `","type":"function_call","status":"completed","arguments":"`...)
			dst = appendArgumentsJSON(dst, e.a.ToolCall)
		} else {
			dst = append(dst, `","type":"function_call","status":"in_progress","arguments":"`...)
		}
		dst = append(dst, `","call_id":"`...)
		dst = appendCallID(dst, e.a.No)
		return append(dst, `","name":"`+ToolName+`"}`...)
	}
	dst = append(dst, `{"id":"`...)
	dst = append(dst, e.msg...)
	if !completed {
		return append(dst, `","type":"message","status":"in_progress","role":"assistant","content":[]}`...)
	}
	dst = append(dst, `","type":"message","status":"completed","role":"assistant","content":[`...)
	dst = e.appendPart(dst, p, true)
	return append(dst, `]}`...)
}

// appendPart appends the part of phase p's item (summary_text,
// reasoning_text or output_text), empty or with the whole text.
func (e *responsesEncoder) appendPart(dst []byte, p Phase, full bool) []byte {
	switch {
	case p == PhaseReasoning && e.summary():
		dst = append(dst, `{"type":"summary_text","text":"`...)
	case p == PhaseReasoning:
		dst = append(dst, `{"type":"reasoning_text","text":"`...)
	default:
		dst = append(dst, `{"type":"output_text","text":"`...)
	}
	switch {
	case full && p == PhaseText:
		dst = e.a.appendAllText(dst)
	case full:
		dst = appendPhaseTokens(dst, p, e.a.count(p))
	}
	if p == PhaseReasoning {
		return append(dst, `"}`...)
	}
	return append(dst, `","annotations":[]}`...)
}

func (e *responsesEncoder) headEvents() int { return 2 }

func (e *responsesEncoder) appendHead(dst []byte, i, seq int, _ int64) []byte {
	typ := "response.created"
	if i == 1 {
		typ = "response.in_progress"
	}
	dst = e.open(dst, typ, seq)
	dst = append(dst, `,"response":`...)
	dst = e.appendResponse(dst, false)
	return append(dst, "}"+sseEnd...)
}

func (e *responsesEncoder) leadEvents() int                        { return 0 }
func (e *responsesEncoder) appendLead(dst []byte, _, _ int) []byte { return dst }

func (e *responsesEncoder) openEvents(p Phase) int {
	if p == PhaseToolCall {
		return 1
	}
	return 2
}

// partEvent names the event that adds (done: completes) phase p's part.
func (e *responsesEncoder) partEvent(p Phase, done bool) string {
	switch {
	case p == PhaseReasoning && e.summary() && done:
		return "response.reasoning_summary_part.done"
	case p == PhaseReasoning && e.summary():
		return "response.reasoning_summary_part.added"
	case done:
		return "response.content_part.done"
	}
	return "response.content_part.added"
}

func (e *responsesEncoder) appendOpen(dst []byte, p Phase, i, seq, slot int, _ int64) []byte {
	if i == 0 {
		dst = e.open(dst, "response.output_item.added", seq)
		dst = append(dst, `,"output_index":`...)
		dst = strconv.AppendInt(dst, int64(slot), 10)
		dst = append(dst, `,"item":`...)
		dst = e.appendItem(dst, p, false)
	} else {
		dst = e.open(dst, e.partEvent(p, false), seq)
		dst = e.partRef(dst, p, slot)
		dst = append(dst, `,"part":`...)
		dst = e.appendPart(dst, p, false)
	}
	return append(dst, "}"+sseEnd...)
}

// deltaEvent names the delta and done events of phase p.
func (e *responsesEncoder) deltaEvent(p Phase, done bool) string {
	switch {
	case p == PhaseReasoning && e.summary() && done:
		return "response.reasoning_summary_text.done"
	case p == PhaseReasoning && e.summary():
		return "response.reasoning_summary_text.delta"
	case p == PhaseReasoning && done:
		return "response.reasoning_text.done"
	case p == PhaseReasoning:
		return "response.reasoning_text.delta"
	case p == PhaseToolCall && done:
		return "response.function_call_arguments.done"
	case p == PhaseToolCall:
		return "response.function_call_arguments.delta"
	case done:
		return "response.output_text.done"
	}
	return "response.output_text.delta"
}

func (e *responsesEncoder) appendDelta(dst []byte, p Phase, j, seq, _ int, ts int64) []byte {
	dst = append(dst, e.deltaHead[p]...)
	dst = strconv.AppendInt(dst, int64(seq), 10)
	dst = append(dst, e.deltaRef[p]...)
	switch p {
	case PhaseToolCall:
		dst = appendArgumentDeltaJSON(dst, j, e.a.ToolCall)
		dst = append(dst, '"')
	case PhaseReasoning:
		dst = AppendPhaseToken(dst, p, j)
		dst = append(dst, '"')
	default:
		dst = e.a.appendText(dst, j)
		dst = append(dst, `","logprobs":[]`...)
	}
	dst = append(dst, `,"pi_ts":`...)
	dst = strconv.AppendInt(dst, ts, 10)
	dst = append(dst, e.a.Instance...)
	return append(dst, "}"+sseEnd...)
}

func (e *responsesEncoder) closeEvents(p Phase) int {
	if p == PhaseToolCall {
		return 2
	}
	return 3
}

func (e *responsesEncoder) appendClose(dst []byte, p Phase, i, seq, slot int, _ int64) []byte {
	last := e.closeEvents(p) - 1
	switch {
	case i == 0:
		dst = e.open(dst, e.deltaEvent(p, true), seq)
		dst = e.partRef(dst, p, slot)
		switch p {
		case PhaseToolCall:
			dst = append(dst, `,"arguments":"`...)
			dst = appendArgumentsJSON(dst, e.a.ToolCall)
			dst = append(dst, '"')
		case PhaseReasoning:
			dst = append(dst, `,"text":"`...)
			dst = appendPhaseTokens(dst, p, e.a.Reasoning)
			dst = append(dst, '"')
		default:
			dst = append(dst, `,"text":"`...)
			dst = e.a.appendAllText(dst)
			dst = append(dst, `","logprobs":[]`...)
		}
	case i < last:
		dst = e.open(dst, e.partEvent(p, true), seq)
		dst = e.partRef(dst, p, slot)
		dst = append(dst, `,"part":`...)
		dst = e.appendPart(dst, p, true)
	case i == last:
		dst = e.open(dst, "response.output_item.done", seq)
		dst = append(dst, `,"output_index":`...)
		dst = strconv.AppendInt(dst, int64(slot), 10)
		dst = append(dst, `,"item":`...)
		dst = e.appendItem(dst, p, true)
	default:
		return dst
	}
	return append(dst, "}"+sseEnd...)
}

func (e *responsesEncoder) tailEvents() int { return 1 }

func (e *responsesEncoder) appendTail(dst []byte, _, seq int, _ int64) []byte {
	dst = e.open(dst, "response.completed", seq)
	dst = append(dst, `,"response":`...)
	dst = e.appendResponse(dst, true)
	return append(dst, "}"+sseEnd...)
}

func (e *responsesEncoder) appendBody(dst []byte) []byte { return e.appendResponse(dst, true) }
