package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Faults are the upstream faults the dummy server injects into one answer,
// so that what a gateway does with a broken or unusual upstream can be
// tested: a cut connection, an error status, a stall, events written a
// byte at a time, split across writes (inside a UTF-8 character too),
// oversized, with other line endings or comments between them, or framed
// in other spec-valid ways (a byte order mark, several data lines, the
// event line after the data). Each is a hint (see Hints): a pi_* JSON
// field, a key of the HintHeader header and of the prompt marker; a server
// may also apply some to every answer (server.Config.Faults, the --fault
// flag). A nil or zero field is unset.
//
//	JSON field           header/marker key  value
//	pi_cut_after         cut_after          K: the connection is closed (HTTP/2: the stream reset) after K tokens, all phases
//	pi_no_terminal       no_terminal        1: the body ends cleanly after the tokens, without the end events
//	pi_status            status             N in 400..599: the answer is that status and an error body in the dialect's shape
//	pi_stall_after       stall_after        K: token K and the ones after it are pi_stall_ms late
//	pi_stall_ms          stall_ms           S: the stall (ms)
//	pi_trickle           trickle            1: every event is written one byte per write
//	pi_event_bytes       event_bytes        B: the event of the first token is padded to B bytes (a "pi_pad" field)
//	pi_split             split              offsets in each event ("5,17"), "utf8" (inside its first multi-byte character), or "none"
//	pi_split_gap_ms      split_gap_ms       the pause between the pieces of a split or trickled event (ms; default 1)
//	pi_line_end          line_end           "lf", "crlf" or "cr": the SSE line ending
//	pi_comments          comments           1: an SSE comment line before every event
//	pi_text              text               "ascii" or "utf8": the text tokens' words (see AppendText)
//	pi_bom               bom                1: the body starts with a UTF-8 byte order mark
//	pi_multiline_data    multiline_data     N: each JSON payload is written over N data lines (cut between JSON tokens)
//	pi_event_after_data  event_after_data   1: each event's "event:" line comes after its data ("event: message" for a dialect without one)
//	pi_write_bytes       write_bytes        B: the body after the first write is coalesced into writes of B bytes (0: off)
type Faults struct {
	CutAfter   *int64
	NoTerminal *bool
	Status     *int64
	StallAfter *int64
	StallMs    *float64
	Trickle    *bool
	EventBytes *int64
	// Split holds byte offsets into each event at which it is cut into
	// separate writes (HTTP/1.1: separate chunks); SplitInChar stands for
	// the middle of the event's first multi-byte UTF-8 character. nil is
	// unset; empty is no split.
	Split      []int
	SplitGapMs *float64
	LineEnd    LineEnd
	Comments   *bool
	Text       TextWords
	// The SSE framings a client must read as the specification does: a
	// byte order mark before the first event, each JSON payload over
	// MultilineData data lines, the event line after the data.
	BOM            *bool
	MultilineData  *int64
	EventAfterData *bool
	// WriteBytes coalesces the events into writes of this many bytes,
	// cut wherever the count falls (inside an event too), as an upstream
	// that buffers its output does; the stream's first write (its head
	// and start events) and its last (the rest, with the end) go as they
	// are. 0 is off.
	WriteBytes *int64
}

// SplitInChar, in Faults.Split, is the offset just after the leading byte
// of the event's first multi-byte UTF-8 character ("split=utf8").
const SplitInChar = -1

// LineEnd is the line ending of the SSE events (Faults.LineEnd).
type LineEnd uint8

// The line endings. LineEndDefault is unset: the server's "\n".
const (
	LineEndDefault LineEnd = iota
	LineEndLF
	LineEndCRLF
	LineEndCR
)

var lineEndNames = [...]string{LineEndDefault: "", LineEndLF: "lf", LineEndCRLF: "crlf", LineEndCR: "cr"}

// String returns "lf", "crlf", "cr", or "" when unset.
func (e LineEnd) String() string {
	if int(e) < len(lineEndNames) {
		return lineEndNames[e]
	}
	return ""
}

// TextWords are the words of the text tokens (Faults.Text).
type TextWords uint8

// The words. TextDefault is unset: ASCII.
const (
	TextDefault TextWords = iota
	TextASCII             // the reference's "anan huhu …"
	TextUTF8              // two 2-byte characters per token (AppendText)
)

var textNames = [...]string{TextDefault: "", TextASCII: "ascii", TextUTF8: "utf8"}

// String returns "ascii", "utf8", or "" when unset.
func (w TextWords) String() string {
	if int(w) < len(textNames) {
		return textNames[w]
	}
	return ""
}

// Caps of the fault hints (besides Limits.MaxTokens for the token counts
// and Limits.MaxDelay for the stall): past one, the server answers 400
// naming the hint.
const (
	MinFaultStatus  = 400
	MaxFaultStatus  = 599
	MaxEventBytes   = 1 << 20 // the padded event: it is built in memory
	MaxWriteBytes   = 1 << 20 // the coalesced writes: held in memory per stream
	MaxSplitOffsets = 16
	MaxSplitGap     = time.Second
	MaxDataLines    = 64 // multiline_data: the data lines one payload is written over
)

// DefaultSplitGap is the pause between the pieces of a split or trickled
// event when split_gap_ms is not given: long enough that a gateway reads
// them separately, short enough for a stream of a few tokens.
const DefaultSplitGap = time.Millisecond

// Empty reports whether no fault is set.
func (f Faults) Empty() bool {
	return f.CutAfter == nil && f.NoTerminal == nil && f.Status == nil && f.StallAfter == nil && f.StallMs == nil &&
		f.Trickle == nil && f.EventBytes == nil && f.Split == nil && f.SplitGapMs == nil && f.LineEnd == LineEndDefault &&
		f.Comments == nil && f.Text == TextDefault && f.BOM == nil && f.MultilineData == nil && f.EventAfterData == nil &&
		f.WriteBytes == nil
}

// Merge fills the faults f lacks from o (f wins where both have one).
func (f Faults) Merge(o Faults) Faults {
	or(&f.CutAfter, o.CutAfter)
	or(&f.NoTerminal, o.NoTerminal)
	or(&f.Status, o.Status)
	or(&f.StallAfter, o.StallAfter)
	or(&f.StallMs, o.StallMs)
	or(&f.Trickle, o.Trickle)
	or(&f.EventBytes, o.EventBytes)
	if f.Split == nil {
		f.Split = o.Split
	}
	or(&f.SplitGapMs, o.SplitGapMs)
	if f.LineEnd == LineEndDefault {
		f.LineEnd = o.LineEnd
	}
	or(&f.Comments, o.Comments)
	if f.Text == TextDefault {
		f.Text = o.Text
	}
	or(&f.BOM, o.BOM)
	or(&f.MultilineData, o.MultilineData)
	or(&f.EventAfterData, o.EventAfterData)
	or(&f.WriteBytes, o.WriteBytes)
	return f
}

func or[T any](dst **T, v *T) {
	if *dst == nil {
		*dst = v
	}
}

// On reports whether a flag fault is set and true.
func On(b *bool) bool { return b != nil && *b }

// UTF8 reports whether the text tokens are the UTF-8 words.
func (f Faults) UTF8() bool { return f.Text == TextUTF8 }

// SplitGap is the pause between the pieces of a split or trickled event
// (DefaultSplitGap when split_gap_ms is not set).
func (f Faults) SplitGap() time.Duration {
	if f.SplitGapMs == nil {
		return DefaultSplitGap
	}
	return time.Duration(math.Round(*f.SplitGapMs * float64(time.Millisecond)))
}

// faultKeys are the keys of the faults in the header and the prompt marker,
// in the order they are written; the JSON field is "pi_" and the key.
var faultKeys = [...]string{"cut_after", "no_terminal", "status", "stall_after", "stall_ms", "trickle",
	"event_bytes", "split", "split_gap_ms", "line_end", "comments", "text", "bom", "multiline_data", "event_after_data", "write_bytes"}

// set records one key=value fault of the header or the prompt marker if
// the value is valid; it reports whether k is a fault's key. A malformed
// value is ignored, as for the other hints.
func (f *Faults) set(k, v string) bool {
	err := f.parse(k, v)
	return !errors.Is(err, errUnknownFault)
}

var errUnknownFault = errors.New("unknown fault")

// parse sets the fault k from its textual value v.
func (f *Faults) parse(k, v string) error {
	count := func(dst **int64) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > math.MaxInt32 {
			return fmt.Errorf("%s=%s: want a whole number from 0 to %d", k, v, math.MaxInt32)
		}
		*dst = &n
		return nil
	}
	millis := func(dst **float64) error {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return fmt.Errorf("%s=%s: want a non-negative number of milliseconds", k, v)
		}
		x = math.Abs(x) // -0 reads back as 0, not "-0"
		*dst = &x
		return nil
	}
	flag := func(dst **bool) error {
		switch strings.ToLower(v) {
		case "1", "true", "yes", "on":
			b := true
			*dst = &b
		case "0", "false", "no", "off":
			b := false
			*dst = &b
		default:
			return fmt.Errorf("%s=%s: want 1 or 0", k, v)
		}
		return nil
	}
	switch k {
	case "cut_after":
		return count(&f.CutAfter)
	case "no_terminal":
		return flag(&f.NoTerminal)
	case "status":
		return count(&f.Status)
	case "stall_after":
		return count(&f.StallAfter)
	case "stall_ms":
		return millis(&f.StallMs)
	case "trickle":
		return flag(&f.Trickle)
	case "event_bytes":
		return count(&f.EventBytes)
	case "split":
		s, err := parseSplit(v)
		if err != nil {
			return fmt.Errorf("split=%s: %w", v, err)
		}
		f.Split = s
	case "split_gap_ms":
		return millis(&f.SplitGapMs)
	case "line_end":
		for e, name := range lineEndNames {
			if name != "" && strings.EqualFold(v, name) {
				f.LineEnd = LineEnd(e)
				return nil
			}
		}
		return fmt.Errorf("line_end=%s: want lf, crlf or cr", v)
	case "comments":
		return flag(&f.Comments)
	case "text":
		for w, name := range textNames {
			if name != "" && strings.EqualFold(v, name) {
				f.Text = TextWords(w)
				return nil
			}
		}
		return fmt.Errorf("text=%s: want ascii or utf8", v)
	case "bom":
		return flag(&f.BOM)
	case "multiline_data":
		return count(&f.MultilineData)
	case "event_after_data":
		return flag(&f.EventAfterData)
	case "write_bytes":
		return count(&f.WriteBytes)
	default:
		return errUnknownFault
	}
	return nil
}

// parseSplit reads a split value: "none", or a comma-separated list of
// byte offsets and "utf8" (SplitInChar).
func parseSplit(v string) ([]int, error) {
	if strings.EqualFold(v, "none") {
		return []int{}, nil
	}
	parts := strings.Split(v, ",")
	if len(parts) > MaxSplitOffsets {
		return nil, fmt.Errorf("%d offsets: at most %d", len(parts), MaxSplitOffsets)
	}
	out := make([]int, 0, len(parts))
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if strings.EqualFold(p, "utf8") {
			out = append(out, SplitInChar)
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > MaxEventBytes {
			return nil, fmt.Errorf("offset %q: want utf8 or a byte offset from 1 to %d", p, MaxEventBytes)
		}
		out = append(out, n)
	}
	return out, nil
}

// ParseFaults reads a fault specification in the syntax of the HintHeader
// header ("cut_after=5; status=429"), strictly: an unknown key or a
// malformed value is an error naming it. Later keys override earlier
// ones.
func ParseFaults(spec string) (Faults, error) {
	var f Faults
	for _, part := range strings.Split(spec, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return f, fmt.Errorf("%q: want key=value (keys: %s)", part, strings.Join(faultKeys[:], ", "))
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if err := f.parse(k, v); err != nil {
			if errors.Is(err, errUnknownFault) {
				return f, fmt.Errorf("unknown fault %q (keys: %s)", k, strings.Join(faultKeys[:], ", "))
			}
			return f, err
		}
	}
	return f, nil
}

// values returns the textual value of each set fault, by key, in the
// order of faultKeys ("" for an unset one).
func (f Faults) values() [len(faultKeys)]string {
	var v [len(faultKeys)]string
	num := func(p *int64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatInt(*p, 10)
	}
	ms := func(p *float64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatFloat(*p, 'f', -1, 64)
	}
	flag := func(p *bool) string {
		switch {
		case p == nil:
			return ""
		case *p:
			return "1"
		}
		return "0"
	}
	v[0], v[1], v[2], v[3], v[4], v[5], v[6] = num(f.CutAfter), flag(f.NoTerminal), num(f.Status), num(f.StallAfter),
		ms(f.StallMs), flag(f.Trickle), num(f.EventBytes)
	if f.Split != nil {
		v[7] = splitString(f.Split)
	}
	v[8], v[9], v[10], v[11] = ms(f.SplitGapMs), f.LineEnd.String(), flag(f.Comments), f.Text.String()
	v[12], v[13], v[14] = flag(f.BOM), num(f.MultilineData), flag(f.EventAfterData)
	v[15] = num(f.WriteBytes)
	return v
}

func splitString(s []int) string {
	if len(s) == 0 {
		return "none"
	}
	parts := make([]string, len(s))
	for i, o := range s {
		if o == SplitInChar {
			parts[i] = "utf8"
		} else {
			parts[i] = strconv.Itoa(o)
		}
	}
	return strings.Join(parts, ",")
}

// String returns the faults that are set in the header's syntax
// ("cut_after=5; status=429"), "" when none is.
func (f Faults) String() string { return string(f.appendPairs(nil, "; ", true)) }

// appendPairs appends "key=value" for each fault that is set, separated by
// sep (first: no separator before the first).
func (f Faults) appendPairs(dst []byte, sep string, first bool) []byte {
	for i, v := range f.values() {
		if v == "" {
			continue
		}
		if !first {
			dst = append(dst, sep...)
		}
		first = false
		dst = append(dst, faultKeys[i]...)
		dst = append(dst, '=')
		dst = append(dst, v...)
	}
	return dst
}

// appendJSON appends the JSON fields of the faults that are set:
// `,"pi_cut_after":5,"pi_split":"utf8"` (flags as true/false, the split,
// line ending and words as strings).
func (f Faults) appendJSON(dst []byte) []byte {
	for i, v := range f.values() {
		if v == "" {
			continue
		}
		dst = append(dst, `,"pi_`...)
		dst = append(dst, faultKeys[i]...)
		dst = append(dst, `":`...)
		switch faultKeys[i] {
		case "no_terminal", "trickle", "comments", "bom", "event_after_data":
			dst = strconv.AppendBool(dst, v == "1")
		case "split", "line_end", "text":
			dst = AppendJSONString(dst, v)
		default:
			dst = append(dst, v...)
		}
	}
	return dst
}

// faultFields are the pi_* fault fields of a JSON request body, embedded
// in ParseServerRequest's decoding.
type faultFields struct {
	PiCutAfter   json.RawMessage `json:"pi_cut_after"`
	PiNoTerminal json.RawMessage `json:"pi_no_terminal"`
	PiStatus     json.RawMessage `json:"pi_status"`
	PiStallAfter json.RawMessage `json:"pi_stall_after"`
	PiStallMs    json.RawMessage `json:"pi_stall_ms"`
	PiTrickle    json.RawMessage `json:"pi_trickle"`
	PiEventBytes json.RawMessage `json:"pi_event_bytes"`
	PiSplit      json.RawMessage `json:"pi_split"`
	PiSplitGapMs json.RawMessage `json:"pi_split_gap_ms"`
	PiLineEnd    json.RawMessage `json:"pi_line_end"`
	PiComments   json.RawMessage `json:"pi_comments"`
	PiText       json.RawMessage `json:"pi_text"`

	PiBOM            json.RawMessage `json:"pi_bom"`
	PiMultilineData  json.RawMessage `json:"pi_multiline_data"`
	PiEventAfterData json.RawMessage `json:"pi_event_after_data"`
	PiWriteBytes     json.RawMessage `json:"pi_write_bytes"`
}

// faults decodes the fault fields: numbers (not booleans) where the
// textual form is a number, true/false (or 1/0) for the flags, strings for the line ending
// and the words, a string or an array of numbers for the split. null is
// unset. A value of the wrong type or out of its range wraps ErrBadHint,
// naming the field.
func (ff *faultFields) faults() (Faults, error) {
	var f Faults
	for i, raw := range [...]json.RawMessage{ff.PiCutAfter, ff.PiNoTerminal, ff.PiStatus, ff.PiStallAfter, ff.PiStallMs,
		ff.PiTrickle, ff.PiEventBytes, ff.PiSplit, ff.PiSplitGapMs, ff.PiLineEnd, ff.PiComments, ff.PiText,
		ff.PiBOM, ff.PiMultilineData, ff.PiEventAfterData, ff.PiWriteBytes} {
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		k := faultKeys[i]
		v, err := jsonFaultValue(k, raw)
		if err == nil {
			err = f.parse(k, v)
		}
		if err != nil {
			return f, fmt.Errorf("%w: pi_%s: %.80s", ErrBadHint, k, jsonFaultError(err, raw))
		}
	}
	return f, nil
}

// jsonFaultValue returns the textual form of a JSON fault value.
func jsonFaultValue(k string, raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch k {
		case "split", "line_end", "text":
			return s, nil
		}
		return "", errors.New("a string where a number or a boolean is wanted")
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		switch k {
		case "cut_after", "status", "stall_after", "stall_ms", "event_bytes", "split_gap_ms", "multiline_data", "write_bytes":
			// A count or a duration: true is not "1 token" or "1 ms".
			return "", errors.New("a boolean where a number is wanted")
		}
		if b {
			return "1", nil
		}
		return "0", nil
	}
	if k == "split" {
		var offs []json.Number
		if err := json.Unmarshal(raw, &offs); err != nil {
			return "", errors.New(`want "utf8", "none", "5,17" or an array of byte offsets`)
		}
		parts := make([]string, len(offs))
		for i, o := range offs {
			parts[i] = o.String()
		}
		if len(parts) == 0 {
			return "none", nil
		}
		return strings.Join(parts, ","), nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return "", errors.New("want a number")
	}
	return n.String(), nil
}

func jsonFaultError(err error, raw json.RawMessage) string {
	return fmt.Sprintf("%v (got %.40s)", err, raw)
}

// resolveFaults merges the faults of the three channels in their order (as
// Resolve does the other hints) and checks each value it takes against
// the caps: l.MaxTokens for cut_after and stall_after, l.MaxDelay for
// stall_ms, the Max* constants and the status range for the others. The
// error wraps ErrHintAboveLimit and names the hint as its channel spells
// it.
func (l Limits) resolveFaults(json, header, prompt Faults) (Faults, error) {
	var f Faults
	for src, c := range [...]Faults{json, header, prompt} {
		if err := l.checkFaults(HintSource(src), f, c); err != nil {
			return f, err
		}
		f = f.Merge(c)
	}
	return f, nil
}

// CheckFaults checks f, a server's own faults (the --fault flag), against
// the caps a request's hints have; the error names the fault by its key.
func (l Limits) CheckFaults(f Faults) error { return l.checkFaults(FromServer, Faults{}, f) }

// checkFaults checks the faults of c that have does not set against the
// caps, and returns the first one past its cap.
func (l Limits) checkFaults(src HintSource, have, c Faults) error {
	maxMs := float64(l.MaxDelay) / float64(time.Millisecond)
	count := func(key string, have, v *int64, limit int64) error {
		if have == nil && v != nil && limit > 0 && *v > limit {
			return hintErr(src, key, strconv.FormatInt(*v, 10), strconv.FormatInt(limit, 10))
		}
		return nil
	}
	checks := []error{
		count("cut_after", have.CutAfter, c.CutAfter, l.MaxTokens),
		count("stall_after", have.StallAfter, c.StallAfter, l.MaxTokens),
		count("event_bytes", have.EventBytes, c.EventBytes, MaxEventBytes),
		count("multiline_data", have.MultilineData, c.MultilineData, MaxDataLines),
		count("write_bytes", have.WriteBytes, c.WriteBytes, MaxWriteBytes),
	}
	if have.Status == nil && c.Status != nil && (*c.Status < MinFaultStatus || *c.Status > MaxFaultStatus) {
		checks = append(checks, hintErr(src, "status", strconv.FormatInt(*c.Status, 10),
			fmt.Sprintf("%d to %d", MinFaultStatus, MaxFaultStatus)))
	}
	if have.StallMs == nil && c.StallMs != nil && l.MaxDelay > 0 && *c.StallMs > maxMs {
		checks = append(checks, hintErr(src, "stall_ms", formatMs(*c.StallMs), formatMs(maxMs)+" ms ("+l.MaxDelay.String()+")"))
	}
	gapMs := float64(MaxSplitGap) / float64(time.Millisecond)
	if have.SplitGapMs == nil && c.SplitGapMs != nil && *c.SplitGapMs > gapMs {
		checks = append(checks, hintErr(src, "split_gap_ms", formatMs(*c.SplitGapMs), formatMs(gapMs)+" ms ("+MaxSplitGap.String()+")"))
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	return nil
}
