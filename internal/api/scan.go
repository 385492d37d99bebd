package api

// The client's scanner of streamed events, for every dialect. It runs once
// per SSE data payload, on the per-token path, so it does not decode the
// JSON: one pass over the bytes finds the object keys (a string followed by
// ':'), the depth they sit at, and the few values a dialect needs — the
// content string, pi_ts, the event type, whether a finish reason, usage or
// an error is present. Field order, spacing, escapes and unknown fields do
// not matter, so events re-serialised by a gateway scan like the server's.
// Malformed input never fails the scan; it just finds less.

// ScanFlags say what an event carries.
type ScanFlags uint8

// The flags of a scanned event.
const (
	// HasContent: the event carries a content string (Scanned.Content,
	// possibly empty): chat delta.content, completions text, responses
	// output_text.delta, anthropic text_delta.
	HasContent ScanFlags = 1 << iota
	// Finish: the event ends the answer's text: a non-empty finish_reason
	// (chat, completions), response.output_text.done, a message_delta with
	// a stop_reason.
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
)

// Scanned is what ScanEvent found in one data payload.
type Scanned struct {
	Flags ScanFlags
	// PiTs is the event's emission stamp (a top-level "pi_ts"), 0 if absent
	// or not a positive integer.
	PiTs int64
	// Content is the content string as it is in the payload, between its
	// quotes, escapes unresolved (a sub-slice of the payload); see Escaped.
	Content []byte
	// Escaped reports that Content holds a backslash: resolve it with
	// AppendUnescaped before comparing.
	Escaped bool
}

// Has reports whether all flags f are set.
func (s Scanned) Has(f ScanFlags) bool { return s.Flags&f == f }

// ScanEvent scans one SSE data payload of dialect d. event is the value of
// the SSE "event:" field of the same event (nil if none): Responses and
// Anthropic events carry their type in the JSON, and the field is used only
// when the JSON has none (a gateway that dropped it).
func ScanEvent(d Dialect, event, payload []byte) Scanned {
	payload = trimJSONSpace(payload)
	switch d {
	case Responses:
		return scanTyped(payload, event, responsesRules)
	case Anthropic:
		return scanTyped(payload, event, anthropicRules)
	case Completions:
		return scanOpenAI(payload, "text")
	}
	return scanOpenAI(payload, "content")
}

// scanOpenAI scans a Chat Completions or legacy Completions chunk, whose
// content string is under contentKey ("content", "text") somewhere in
// choices[0].
func scanOpenAI(p []byte, contentKey string) Scanned {
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
				s.setContent(&k)
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
		case "error":
			if depth != 1 {
				break
			}
			if c := k.peek(); c == '{' || c == '"' {
				s.Flags |= Failed
			}
		}
	}
}

// typedRules say how a dialect whose events carry a "type" maps them.
type typedRules struct {
	contentKey   string // key of the content string
	contentDepth int    // the depth it sits at
	contentType  string // the type of the events that carry content
	finishKey    string // key at depth 2 whose non-empty string makes finishType a finish ("" : always)
	finishType   string
	terminalType string
	usageDepth   int // depth of the usage object; 0 = any
	usageType    string
	failedTypes  [3]string
}

var (
	responsesRules = &typedRules{
		contentKey: "delta", contentDepth: 1, contentType: "response.output_text.delta",
		finishType:   "response.output_text.done",
		terminalType: "response.completed",
		usageType:    "response.completed",
		failedTypes:  [3]string{"response.failed", "response.incomplete", "error"},
	}
	anthropicRules = &typedRules{
		contentKey: "text", contentDepth: 2, contentType: "content_block_delta",
		finishKey: "stop_reason", finishType: "message_delta",
		terminalType: "message_stop",
		usageDepth:   1, usageType: "message_delta",
		failedTypes: [3]string{"error"},
	}
)

// scanTyped scans a Responses or Anthropic event: its top-level "type"
// decides what the other keys mean, and may come after them.
func scanTyped(p, event []byte, r *typedRules) Scanned {
	var (
		s                     Scanned
		typ                   []byte
		content               []byte
		hasContent, escaped   bool
		stopped, usage, typed bool
		tbuf                  [48]byte // an escaped type, resolved
	)
	k := keyScanner{b: p}
	for {
		key, depth, ok := k.next()
		if !ok {
			break
		}
		switch {
		case depth == 1 && !typed && string(key) == "type":
			if raw, esc, ok := k.stringValue(); ok {
				typ, typed = raw, true
				if esc {
					typ, _ = AppendUnescaped(tbuf[:0], raw)
				}
			}
		case depth == r.contentDepth && !hasContent && string(key) == r.contentKey:
			content, escaped, hasContent = k.stringValue()
		case depth == 2 && r.finishKey != "" && string(key) == r.finishKey:
			stopped = stopped || k.nonEmptyString()
		case (r.usageDepth == 0 || depth == r.usageDepth) && string(key) == "usage":
			usage = usage || k.peek() == '{'
		case depth == 1 && string(key) == "pi_ts":
			s.setPiTs(&k)
		}
	}
	if !typed {
		typ = event
	}
	switch {
	case string(typ) == r.contentType:
		if hasContent {
			s.Flags |= HasContent
			s.Content, s.Escaped = content, escaped
		}
	case string(typ) == r.finishType:
		if r.finishKey == "" || stopped {
			s.Flags |= Finish
		}
	case string(typ) == r.terminalType:
		s.Flags |= Terminal
	case len(typ) > 0 && (string(typ) == r.failedTypes[0] || string(typ) == r.failedTypes[1] || string(typ) == r.failedTypes[2]):
		s.Flags |= Failed
	}
	if usage && string(typ) == r.usageType {
		s.Flags |= Usage
	}
	return s
}

// setContent records the string value at k's position as the content.
func (s *Scanned) setContent(k *keyScanner) {
	if raw, esc, ok := k.stringValue(); ok {
		s.Flags |= HasContent
		s.Content, s.Escaped = raw, esc
	}
}

// setPiTs records the integer at k's position as pi_ts, once.
func (s *Scanned) setPiTs(k *keyScanner) {
	if s.PiTs == 0 {
		s.PiTs = k.intValue()
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
	kbuf  [16]byte // an escaped key, resolved
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
