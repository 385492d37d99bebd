package api

// The client's scanner of streamed events, for every dialect. It runs once
// per SSE data payload, on the per-token path, so it does not decode the
// JSON: one pass over the bytes finds the object keys (a string followed by
// ':'), the depth they sit at, and the few values a dialect needs — the
// text of each phase (reasoning, tool-call arguments, content), pi_ts, the
// event type, whether a finish reason, usage or an error is present. Field
// order, spacing, escapes and unknown fields do not matter, so events
// re-serialised by a gateway scan like the server's. Malformed input never
// fails the scan; it just finds less — except that a reasoning or
// tool-call event whose text cannot be read is flagged Malformed.

// ScanFlags say what an event carries.
type ScanFlags uint8

// The flags of a scanned event.
const (
	// HasContent: the event carries a content string (Scanned.Content,
	// possibly empty): chat delta.content, completions text, responses
	// output_text.delta, anthropic text_delta.
	HasContent ScanFlags = 1 << iota
	// Finish: the event ends the answer: a non-empty finish_reason
	// (chat, completions), a message_delta with a stop_reason; in Responses
	// the end of its text or of its tool call (response.output_text.done,
	// response.function_call_arguments.done: one answer may have both).
	Finish
	// Usage: the event carries a usage object (a chat or completions chunk,
	// response.completed, message_delta).
	Usage
	// Terminal: the stream's last event: [DONE], response.completed,
	// message_stop.
	Terminal
	// Failed: the stream ends in failure: an error event,
	// response.failed or response.incomplete (an "error" object in a chat or
	// completions chunk).
	Failed
	// HasReasoning: the event carries reasoning text (Scanned.Reasoning,
	// possibly empty): chat delta.reasoning_content or delta.reasoning,
	// responses reasoning_summary_text.delta or reasoning_text.delta,
	// anthropic thinking_delta.
	HasReasoning
	// HasArguments: the event carries tool-call argument text
	// (Scanned.Arguments, possibly empty): chat
	// delta.tool_calls[].function.arguments, responses
	// function_call_arguments.delta, anthropic input_json_delta.
	HasArguments
	// Malformed: a reasoning or tool-call event whose text cannot be read:
	// the field is there but is not a (terminated) string or null, or an
	// event of that type lacks it.
	Malformed
)

// Scanned is what ScanEvent found in one data payload. The texts are as
// they are in the payload, between their quotes, escapes unresolved
// (sub-slices of the payload); when the matching Escaped field is true,
// resolve them with AppendUnescaped before comparing.
type Scanned struct {
	Flags ScanFlags
	// PiTs is the event's emission stamp (a top-level "pi_ts"), 0 if absent
	// or not a positive integer.
	PiTs int64
	// Instance is the server instance that emitted the event (a top-level
	// "pi_instance" string, escapes unresolved), nil if absent.
	Instance []byte
	// Content is the visible text (HasContent).
	Content []byte
	Escaped bool
	// Reasoning is the reasoning text (HasReasoning).
	Reasoning        []byte
	ReasoningEscaped bool
	// Arguments is the tool-call argument text (HasArguments).
	Arguments        []byte
	ArgumentsEscaped bool
}

// Has reports whether all flags f are set.
func (s Scanned) Has(f ScanFlags) bool { return s.Flags&f == f }

// Text returns the text of phase p the event carries (nil if none) and
// whether it holds an escape.
func (s *Scanned) Text(p Phase) (raw []byte, escaped bool) {
	switch p {
	case PhaseReasoning:
		return s.Reasoning, s.ReasoningEscaped
	case PhaseToolCall:
		return s.Arguments, s.ArgumentsEscaped
	}
	return s.Content, s.Escaped
}

// set records a text of phase p.
func (s *Scanned) set(p Phase, raw []byte, escaped bool) {
	switch p {
	case PhaseReasoning:
		s.Flags |= HasReasoning
		s.Reasoning, s.ReasoningEscaped = raw, escaped
	case PhaseToolCall:
		s.Flags |= HasArguments
		s.Arguments, s.ArgumentsEscaped = raw, escaped
	default:
		s.Flags |= HasContent
		s.Content, s.Escaped = raw, escaped
	}
}

// phaseFlag is the flag of phase p's text.
func phaseFlag(p Phase) ScanFlags {
	switch p {
	case PhaseReasoning:
		return HasReasoning
	case PhaseToolCall:
		return HasArguments
	}
	return HasContent
}

// ScanEvent scans one SSE data payload of dialect d. event is the value of
// the SSE "event:" field of the same event (nil if none): Responses and
// Anthropic events carry their type in the JSON, and the field is used only
// when the JSON has none (a gateway that dropped it).
func ScanEvent(d Dialect, event, payload []byte) Scanned {
	payload = trimJSONSpace(payload)
	switch d {
	case Responses:
		return scanResponses(payload, event)
	case Anthropic:
		return scanAnthropic(payload, event)
	case Completions:
		return scanOpenAI(payload, "text", false)
	}
	return scanOpenAI(payload, "content", true)
}

// scanOpenAI scans a Chat Completions or legacy Completions chunk, whose
// content string is under contentKey ("content", "text") somewhere in
// choices[0]; with phases (Chat), also the reasoning ("reasoning_content"
// or "reasoning") and the tool-call arguments ("arguments", in
// "tool_calls"). The first string of each kind counts.
func scanOpenAI(p []byte, contentKey string, phases bool) Scanned {
	var s Scanned
	if string(p) == Done {
		s.Flags = Terminal
		return s
	}
	k := keyScanner{b: p}
	for {
		key, depth, ok := k.next()
		if !ok {
			return s
		}
		switch string(key) {
		case contentKey:
			if s.Flags&HasContent == 0 {
				if raw, esc, ok := k.stringValue(); ok {
					s.set(PhaseText, raw, esc)
				}
			}
		case "finish_reason":
			if k.nonEmptyString() {
				s.Flags |= Finish
			}
		case "usage":
			if k.peek() == '{' {
				s.Flags |= Usage
			}
		case "pi_ts":
			if depth == 1 {
				s.setPiTs(&k)
			}
		case InstanceKey:
			if depth == 1 {
				s.setInstance(&k)
			}
		case "error":
			if depth != 1 {
				break
			}
			if c := k.peek(); c == '{' || c == '"' {
				s.Flags |= Failed
			}
		// The phases sit in a choice's delta: {"choices":[{"delta":{…
		// (depth 4), the arguments deeper, in "tool_calls" (or the legacy
		// "function_call"); a top-level field of the same name is not
		// theirs.
		case "reasoning_content", "reasoning":
			if phases && depth >= 4 {
				s.phaseString(&k, PhaseReasoning)
			}
		case "arguments":
			if phases && depth >= 5 {
				s.phaseString(&k, PhaseToolCall)
			}
		case "tool_calls":
			if c := k.peek(); phases && depth >= 4 && c != '[' && c != 'n' {
				s.Flags |= Malformed
			}
		}
	}
}

// phaseString records the value at k's position as the text of phase p
// (reasoning or tool-call arguments), unless one was found already: a
// string is the text, null is nothing, anything else is Malformed.
func (s *Scanned) phaseString(k *keyScanner, p Phase) {
	if s.Flags&phaseFlag(p) != 0 {
		return
	}
	switch raw, esc, kind := k.stringOrNull(); kind {
	case valueString:
		s.set(p, raw, esc)
	case valueOther:
		s.Flags |= Malformed
	}
}

// typedScan is what one pass over a Responses or Anthropic event finds:
// their top-level "type" decides what the other keys mean, and may come
// after them.
type typedScan struct {
	s                 Scanned
	typ               []byte // the type, escapes unresolved (see name)
	typEscaped        bool
	typed             bool
	stopped, usage1   bool // a non-empty stop_reason at depth 2; usage at depth 1
	usage             bool // usage at any depth
	delta             value
	text, think, json value  // depth 2: text, thinking, partial_json
	deltaType         []byte // depth 2 "type" (an Anthropic delta's)
}

// value is a string value found by the scan.
type value struct {
	raw     []byte
	escaped bool
	kind    valueKind // valueAbsent when the key was not seen
}

// scan walks a Responses or Anthropic event once.
func (t *typedScan) scan(p, event []byte) {
	k := keyScanner{b: p}
	for {
		key, depth, ok := k.next()
		if !ok {
			break
		}
		switch {
		case depth == 1 && !t.typed && string(key) == "type":
			if raw, esc, ok := k.stringValue(); ok {
				t.typ, t.typEscaped, t.typed = raw, esc, true
			}
		case depth == 1 && string(key) == "delta":
			t.delta.take(&k)
		case depth == 2 && string(key) == "text":
			t.text.take(&k)
		case depth == 2 && string(key) == "thinking":
			t.think.take(&k)
		case depth == 2 && string(key) == "partial_json":
			t.json.take(&k)
		case depth == 2 && string(key) == "type" && t.deltaType == nil:
			t.deltaType, _, _ = k.stringValue()
		case depth == 2 && string(key) == "stop_reason":
			t.stopped = t.stopped || k.nonEmptyString()
		case string(key) == "usage":
			if k.peek() == '{' {
				t.usage = true
				t.usage1 = t.usage1 || depth == 1
			}
		case depth == 1 && string(key) == "pi_ts":
			t.s.setPiTs(&k)
		case depth == 1 && string(key) == InstanceKey:
			t.s.setInstance(&k)
		}
	}
	if !t.typed {
		t.typ = event
	}
}

// name returns the event's type, its escapes resolved into buf if it has
// any (buf is the caller's: a type is short).
func (t *typedScan) name(buf []byte) []byte {
	if !t.typEscaped {
		return t.typ
	}
	out, _ := AppendUnescaped(buf, t.typ)
	return out
}

// take records the value at k's position, once.
func (v *value) take(k *keyScanner) {
	if v.kind == valueAbsent {
		v.raw, v.escaped, v.kind = k.stringOrNull()
	}
}

// phase sets the text of phase p from v: a string is the text; anything
// but a string makes a reasoning or tool-call event Malformed.
func (t *typedScan) phase(p Phase, v value) {
	switch {
	case v.kind == valueString:
		t.s.set(p, v.raw, v.escaped)
	case p != PhaseText:
		t.s.Flags |= Malformed
	}
}

// scanResponses scans a Responses event: the "delta" of
// response.output_text.delta, of the reasoning deltas
// (response.reasoning_summary_text.delta, response.reasoning_text.delta) and
// of response.function_call_arguments.delta.
func scanResponses(p, event []byte) Scanned {
	var t typedScan
	var buf [48]byte
	t.scan(p, event)
	switch string(t.name(buf[:0])) {
	case "response.output_text.delta":
		t.phase(PhaseText, t.delta)
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		t.phase(PhaseReasoning, t.delta)
	case "response.function_call_arguments.delta":
		t.phase(PhaseToolCall, t.delta)
	case "response.output_text.done", "response.function_call_arguments.done":
		t.s.Flags |= Finish
	case "response.completed":
		t.s.Flags |= Terminal
		if t.usage {
			t.s.Flags |= Usage
		}
	case "response.failed", "response.incomplete", "error":
		t.s.Flags |= Failed
	}
	return t.s
}

// scanAnthropic scans an Anthropic event: the delta of a
// content_block_delta is text ("text"), thinking ("thinking") or tool input
// ("partial_json"), by its key; a thinking_delta or input_json_delta
// without its string is Malformed.
func scanAnthropic(p, event []byte) Scanned {
	var t typedScan
	var buf [48]byte
	t.scan(p, event)
	switch string(t.name(buf[:0])) {
	case "content_block_delta":
		switch {
		case t.text.kind != valueAbsent:
			t.phase(PhaseText, t.text)
		case t.think.kind != valueAbsent || string(t.deltaType) == "thinking_delta":
			t.phase(PhaseReasoning, t.think)
		case t.json.kind != valueAbsent || string(t.deltaType) == "input_json_delta":
			t.phase(PhaseToolCall, t.json)
		}
	case "message_delta":
		if t.stopped {
			t.s.Flags |= Finish
		}
		if t.usage1 {
			t.s.Flags |= Usage
		}
	case "message_stop":
		t.s.Flags |= Terminal
	case "error":
		t.s.Flags |= Failed
	}
	return t.s
}

// setPiTs records the integer at k's position as pi_ts, once.
func (s *Scanned) setPiTs(k *keyScanner) {
	if s.PiTs == 0 {
		s.PiTs = k.intValue()
	}
}

// setInstance records the string at k's position as the instance, once.
func (s *Scanned) setInstance(k *keyScanner) {
	if s.Instance == nil {
		if raw, _, ok := k.stringValue(); ok {
			s.Instance = raw
		}
	}
}

// EventDescription names a failed end for its failure text: the event's
// type (or "error"), and the first "message" string in it, e.g.
// `error: overloaded_error: Overloaded`. It is not on the per-token path and
// allocates.
func EventDescription(event, payload []byte) string {
	payload = trimJSONSpace(payload)
	var typ, errType, msg []byte
	k := keyScanner{b: payload}
	for {
		key, depth, ok := k.next()
		if !ok {
			break
		}
		switch {
		case string(key) == "type" && depth == 1 && typ == nil:
			typ, _, _ = k.stringValue()
		case string(key) == "type" && depth > 1 && errType == nil:
			errType, _, _ = k.stringValue()
		case string(key) == "error" && depth == 1 && typ == nil:
			typ = []byte("error")
		case string(key) == "message" && msg == nil:
			if raw, _, ok := k.stringValue(); ok {
				msg, _ = AppendUnescaped(nil, raw)
			}
		}
	}
	if typ == nil {
		typ = event
	}
	out := string(typ)
	if out == "" {
		out = "error"
	}
	if len(errType) > 0 && string(errType) != out {
		out += ": " + string(errType)
	}
	if len(msg) > 0 {
		const maxMsg = 120
		if len(msg) > maxMsg {
			msg = append(msg[:maxMsg:maxMsg], "..."...)
		}
		out += ": " + string(msg)
	}
	return out
}

// keyScanner walks a JSON text and stops at every object key. Strings are
// skipped with their escapes, so a key-like text inside a string value is
// never taken for a key; containers are only counted, for the depth.
type keyScanner struct {
	b     []byte
	i     int
	depth int
	kbuf  [24]byte // an escaped key, resolved (the longest we look for, reasoning_content, has 17 bytes)
}

// next advances to the next object key and returns it (escapes resolved
// when it is short), the depth of the object that holds it (1 for the
// top-level object) and ok; the scanner is then at the key's value. ok is
// false at the end of the text. The key is only valid until the next call.
func (k *keyScanner) next() (key []byte, depth int, ok bool) {
	b := k.b
	for k.i < len(b) {
		c := b[k.i]
		switch c {
		case '{', '[':
			k.depth++
			k.i++
		case '}', ']':
			k.depth--
			k.i++
		case '"':
			start := k.i + 1
			end, esc := stringEnd(b, start)
			if end < 0 {
				k.i = len(b)
				return nil, 0, false
			}
			j := skipJSONSpace(b, end+1)
			if j >= len(b) || b[j] != ':' {
				k.i = end + 1 // a string value
				continue
			}
			k.i = skipJSONSpace(b, j+1)
			raw := b[start:end]
			if esc {
				if out, ok := AppendUnescaped(k.kbuf[:0], raw); ok && len(out) <= len(k.kbuf) {
					raw = out
				}
			}
			return raw, k.depth, true
		default:
			k.i++
		}
	}
	return nil, 0, false
}

// peek returns the first byte of the value at the scanner's position, or 0.
func (k *keyScanner) peek() byte {
	if k.i < len(k.b) {
		return k.b[k.i]
	}
	return 0
}

// stringValue returns the string value at the scanner's position — its raw
// bytes between the quotes and whether they hold an escape — and moves past
// it; ok is false if the value is not a (terminated) string.
func (k *keyScanner) stringValue() (raw []byte, escaped, ok bool) {
	if k.peek() != '"' {
		return nil, false, false
	}
	end, esc := stringEnd(k.b, k.i+1)
	if end < 0 {
		k.i = len(k.b)
		return nil, false, false
	}
	raw = k.b[k.i+1 : end]
	k.i = end + 1
	return raw, esc, true
}

// valueKind says what stringOrNull found.
type valueKind uint8

const (
	valueAbsent valueKind = iota // (the key was not seen)
	valueString                  // a terminated string
	valueNull                    // null
	valueOther                   // anything else: a number, an object, a string cut short…
)

// stringOrNull reads the value at the scanner's position: a string (its raw
// bytes and whether they hold an escape, the scanner then past it), null,
// or something else.
func (k *keyScanner) stringOrNull() (raw []byte, escaped bool, kind valueKind) {
	if raw, escaped, ok := k.stringValue(); ok {
		return raw, escaped, valueString
	}
	if b := k.b[k.i:]; len(b) >= 4 && string(b[:4]) == "null" {
		return nil, false, valueNull
	}
	return nil, false, valueOther
}

// nonEmptyString reports whether the value at the scanner's position is a
// non-empty string (finish_reason and stop_reason are null, or sometimes "",
// until the end), and moves past it.
func (k *keyScanner) nonEmptyString() bool {
	raw, _, ok := k.stringValue()
	return ok && len(raw) > 0
}

// intValue reads a positive decimal integer at the scanner's position; 0 if
// there is none, it overflows or it has a fraction or exponent.
func (k *keyScanner) intValue() int64 {
	const maxInt64 = 1<<63 - 1
	var v int64
	i := k.i
	for ; i < len(k.b); i++ {
		c := k.b[i]
		if c < '0' || c > '9' {
			break
		}
		if v > (maxInt64-9)/10 {
			return 0
		}
		v = v*10 + int64(c-'0')
	}
	if i == k.i || i < len(k.b) && (k.b[i] == '.' || k.b[i] == 'e' || k.b[i] == 'E') {
		return 0
	}
	k.i = i
	return v
}

// stringEnd returns the index of the quote that closes the string whose
// contents start at b[start], and whether it holds a backslash; -1 if it is
// not closed.
func stringEnd(b []byte, start int) (end int, escaped bool) {
	for i := start; i < len(b); i++ {
		switch b[i] {
		case '"':
			return i, escaped
		case '\\':
			escaped = true
			i++
		}
	}
	return -1, escaped
}

// skipJSONSpace returns the index of the first non-whitespace byte of b at
// or after i.
func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && isJSONSpace(b[i]) {
		i++
	}
	return i
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// trimJSONSpace drops the whitespace around b.
func trimJSONSpace(b []byte) []byte {
	for len(b) > 0 && isJSONSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isJSONSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}
