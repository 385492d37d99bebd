package api

import (
	"fmt"
	"strconv"
)

// ReasoningField is how Chat and Responses carry the reasoning tokens; both
// shapes of each exist in the wild. Anthropic has one shape (thinking
// blocks) and Completions none.
type ReasoningField uint8

// The reasoning shapes, named by their Chat delta field.
const (
	// ReasoningContent: Chat delta.reasoning_content (DeepSeek, vLLM
	// before 0.10, SGLang), Responses reasoning summaries
	// (response.reasoning_summary_text.delta: OpenAI's own models).
	ReasoningContent ReasoningField = iota
	// ReasoningPlain: Chat delta.reasoning (OpenRouter, recent vLLM,
	// Ollama), Responses reasoning text (response.reasoning_text.delta:
	// open-weight models such as gpt-oss, served by vLLM and others).
	ReasoningPlain
)

var reasoningFieldNames = [...]string{ReasoningContent: "reasoning_content", ReasoningPlain: "reasoning"}

// String returns the --reasoning-field name.
func (f ReasoningField) String() string {
	if int(f) < len(reasoningFieldNames) {
		return reasoningFieldNames[f]
	}
	return "reasoning_field(" + strconv.Itoa(int(f)) + ")"
}

// ParseReasoningField maps a --reasoning-field name to its shape.
func ParseReasoningField(s string) (ReasoningField, error) {
	for i, n := range reasoningFieldNames {
		if s == n {
			return ReasoningField(i), nil
		}
	}
	return 0, fmt.Errorf("unknown reasoning field %q (want reasoning_content or reasoning)", s)
}

// Total is the number of tokens of the answer, all phases.
func (a Answer) Total() int { return max(a.Reasoning, 0) + max(a.ToolCall, 0) + max(a.Tokens, 0) }

// count returns the number of tokens of phase p.
func (a Answer) count(p Phase) int {
	switch p {
	case PhaseReasoning:
		return max(a.Reasoning, 0)
	case PhaseToolCall:
		return max(a.ToolCall, 0)
	}
	return max(a.Tokens, 0)
}

// has reports whether the answer has phase p: reasoning and the tool call
// when they have tokens; the text when it has tokens or there is no tool
// call (an answer ends with text or a call, as a model's turn does, so an
// empty answer is an empty text, as before phases existed).
func (a Answer) has(p Phase) bool {
	switch p {
	case PhaseReasoning:
		return a.Reasoning > 0
	case PhaseToolCall:
		return a.ToolCall > 0
	}
	return a.Tokens > 0 || a.ToolCall <= 0
}

// Locate returns the phase of token k (numbered across the phases, see
// Encoder) and its index within that phase.
func (a Answer) Locate(k int) (p Phase, j int) {
	return LocateToken(k, a.Reasoning, a.ToolCall)
}

// LocateToken returns the phase of token k of an answer of reasoning
// reasoning tokens and toolCall argument tokens before its text, and its
// index within that phase.
func LocateToken(k, reasoning, toolCall int) (p Phase, j int) {
	reasoning, toolCall = max(reasoning, 0), max(toolCall, 0)
	switch {
	case k < reasoning:
		return PhaseReasoning, k
	case k < reasoning+toolCall:
		return PhaseToolCall, k - reasoning
	}
	return PhaseText, k - reasoning - toolCall
}

// phaseEvents is what a dialect knows of its events; phased lays them out
// in a stream. seq is the event's position in the stream, from 0 (the
// Responses sequence_number); slot the phase's position among the answer's
// phases (the Responses output_index, the Anthropic content block index).
type phaseEvents interface {
	// Events before the first phase opens (response.created, message_start,
	// the role chunk…).
	headEvents() int
	appendHead(dst []byte, i, seq int, ts int64) []byte
	// Events after the first phase opened, before its first token
	// (Anthropic's ping).
	leadEvents() int
	appendLead(dst []byte, i, seq int) []byte
	// Events that open and close phase p.
	openEvents(p Phase) int
	appendOpen(dst []byte, p Phase, i, seq, slot int, ts int64) []byte
	closeEvents(p Phase) int
	appendClose(dst []byte, p Phase, i, seq, slot int, ts int64) []byte
	// appendDelta appends the event of token j of phase p.
	appendDelta(dst []byte, p Phase, j, seq, slot int, ts int64) []byte
	// Events after the last phase closed.
	tailEvents() int
	appendTail(dst []byte, i, seq int, ts int64) []byte
	// appendBody appends the non-streaming answer.
	appendBody(dst []byte) []byte
}

// The dialects whose events the phased encoder frames.
var (
	_ phaseEvents = (*anthropicEncoder)(nil)
	_ phaseEvents = (*chatEncoder)(nil)
	_ phaseEvents = (*responsesEncoder)(nil)
)

// phased is the Encoder of a dialect: it streams the dialect's events in
// order — head, the first phase's opening, lead, its tokens; for each
// following phase the previous one's closing, its opening and its tokens
// (sent with its first token); then the last phase's closing and the tail.
// A text phase without tokens that follows another phase opens in the end
// events.
type phased struct {
	ev phaseEvents
	a  Answer

	ps    [NumPhases]Phase // the answer's phases, in order
	np    int
	slot  [NumPhases]int // by phase: its position in ps
	first [NumPhases]int // by phase: the seq of its first token event
	// end is the seq of the first end event; lateOpen is true when the
	// last phase opens there (a text without tokens after another phase).
	end      int
	lateOpen bool
}

func newPhased(ev phaseEvents, a Answer) *phased {
	e := &phased{ev: ev, a: a}
	for p := PhaseReasoning; p < NumPhases; p++ {
		if a.has(p) {
			e.slot[p] = e.np
			e.ps[e.np] = p
			e.np++
		}
	}
	seq := ev.headEvents()
	for q := 0; q < e.np; q++ {
		p := e.ps[q]
		if q > 0 && a.count(p) == 0 { // only a text without tokens, last
			e.lateOpen = true
			break
		}
		if q > 0 {
			seq += ev.closeEvents(e.ps[q-1])
		}
		seq += ev.openEvents(p)
		if q == 0 {
			seq += ev.leadEvents()
		}
		e.first[p] = seq
		seq += a.count(p)
	}
	e.end = seq
	return e
}

func (e *phased) StartEvents() int {
	return e.ev.headEvents() + e.ev.openEvents(e.ps[0]) + e.ev.leadEvents()
}

func (e *phased) AppendStart(dst []byte, i int, ts int64) []byte {
	head, open := e.ev.headEvents(), e.ev.openEvents(e.ps[0])
	switch {
	case i < 0:
		return dst
	case i < head:
		return e.ev.appendHead(dst, i, i, ts)
	case i < head+open:
		return e.ev.appendOpen(dst, e.ps[0], i-head, i, 0, ts)
	case i < head+open+e.ev.leadEvents():
		return e.ev.appendLead(dst, i-head-open, i)
	}
	return dst
}

func (e *phased) AppendToken(dst []byte, k int, ts int64) []byte {
	if k < 0 || k >= e.a.Total() {
		return dst
	}
	p, j := e.a.Locate(k)
	slot := e.slot[p]
	if j == 0 && slot > 0 {
		dst = e.transition(dst, slot, e.first[p], ts)
	}
	return e.ev.appendDelta(dst, p, j, e.first[p]+j, slot, ts)
}

// transition appends the events that close phase ps[slot-1] and open
// ps[slot], whose first token event (or, for a late opening, whose next
// event) has sequence number next.
func (e *phased) transition(dst []byte, slot, next int, ts int64) []byte {
	prev, p := e.ps[slot-1], e.ps[slot]
	closing, open := e.ev.closeEvents(prev), e.ev.openEvents(p)
	seq := next - closing - open
	for i := 0; i < closing; i++ {
		dst = e.ev.appendClose(dst, prev, i, seq, slot-1, ts)
		seq++
	}
	for i := 0; i < open; i++ {
		dst = e.ev.appendOpen(dst, p, i, seq, slot, ts)
		seq++
	}
	return dst
}

// lateEvents is the number of end events that open a late text phase: the
// previous phase's closing and the text's opening.
func (e *phased) lateEvents() int {
	if !e.lateOpen {
		return 0
	}
	return e.ev.closeEvents(e.ps[e.np-2]) + e.ev.openEvents(PhaseText)
}

func (e *phased) EndEvents() int {
	return e.lateEvents() + e.ev.closeEvents(e.ps[e.np-1]) + e.ev.tailEvents()
}

func (e *phased) AppendEnd(dst []byte, i int, ts int64) []byte {
	late := e.lateEvents()
	last := e.ps[e.np-1]
	closing := e.ev.closeEvents(last)
	seq := e.end + i
	switch {
	case i < 0:
		return dst
	case i < late:
		prevClose := e.ev.closeEvents(e.ps[e.np-2])
		if i < prevClose {
			return e.ev.appendClose(dst, e.ps[e.np-2], i, seq, e.np-2, ts)
		}
		return e.ev.appendOpen(dst, last, i-prevClose, seq, e.np-1, ts)
	case i < late+closing:
		return e.ev.appendClose(dst, last, i-late, seq, e.np-1, ts)
	case i < late+closing+e.ev.tailEvents():
		return e.ev.appendTail(dst, i-late-closing, seq, ts)
	}
	return dst
}

func (e *phased) AppendBody(dst []byte) []byte { return e.ev.appendBody(dst) }
