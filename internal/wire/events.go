package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"
)

// EventReader interprets a Server-Sent Events stream as the WHATWG HTML
// specification does ("Interpreting an event stream",
// https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation),
// as its bytes arrive: it strips one UTF-8 byte order mark at the start of
// the stream, splits lines (LineSplitter), decodes them as UTF-8 (each
// ill-formed sequence becomes U+FFFD), and gathers the fields of each event
// until the blank line that dispatches it:
//
//   - a line starting with ':' is a comment;
//   - otherwise the field name is what comes before the first ':' (the whole
//     line when there is none, with an empty value), and the value what
//     comes after it, one leading space removed;
//   - "data" appends its value to the event's data, the values of several
//     data lines joined with '\n'; "event" sets the event's type (a bare
//     "event" line sets it back to the default, "message"); "id" sets the
//     last event ID unless its value holds a NUL, and the ID persists from
//     event to event; "retry" sets the reconnection time when its value is
//     ASCII digits only; any other field is ignored;
//   - a blank line dispatches the event when it has data (an empty data
//     line counts), then empties the data and the type; without data it
//     dispatches nothing;
//   - the data of an event whose blank line has not arrived when the stream
//     ends is never dispatched.
//
// A byte order mark anywhere but at the very start is data (a line that
// starts with one names an unknown field).
//
// What the framing looked like is counted (Framing), for a gateway that
// re-frames the stream to be described as one.
//
// The reader does not allocate in steady state: an event whose only data
// line arrived within the same Feed as its blank line is returned as a
// sub-slice of that feed; other data is gathered in an internal buffer that
// is reused. The data of one event is bounded by MaxEventBytes, each line
// by MaxLineBytes; past either the reader stops with an error. The zero
// value is ready to use.
type EventReader struct {
	err     error // sticky
	bomDone bool  // the start of the stream has been decided
	viewing bool  // the event's data is view
	fields  bool  // the event has a field line
	idSet   bool  // an id field has set id since the last blank line
	bomSeen int   // bytes of a leading byte order mark matched so far
	lines   LineSplitter

	// The event being gathered: the specification's data buffer (without
	// its trailing '\n'), held in view while it is a single data line
	// still in the caller's feed, else in data; its data lines.
	data      []byte
	view      []byte
	dataLines int
	ev        Event  // the event Next returned last
	typ       []byte // the event type buffer
	changes   int    // counts, last event IDs and retries taken, bare CRs aside (Changed)
	seen      int    // changes and bare CRs as of the last Changed

	id       []byte // the last event ID buffer
	lastID   []byte // the last event ID string: id as of the last blank line
	retry    int64  // the reconnection time, ms (Framing.RetryFields > 0)
	fix      []byte // a line repaired of ill-formed UTF-8
	framing  Framing
	comments int
}

// Event is one dispatched event. Its slices are valid until the next call
// of Next or Feed on the reader that returned it. Its last event ID is
// the reader's LastEventID until then.
type Event struct {
	// Type is the event's type, empty for the default type ("message").
	Type []byte
	// Data is the event's data: its data lines' values joined with '\n'.
	Data []byte
}

// Framing counts what the framing of an event stream looked like, beyond
// what every stream has (lines, data, blank lines). A stream written as
// this tool's server writes it, one data line per event, counts zero in
// every field.
type Framing struct {
	// BOMs is 1 when the stream began with a UTF-8 byte order mark (which
	// was stripped), else 0.
	BOMs int
	// MultiLineEvents counts the dispatched events whose data came on two
	// or more data lines.
	MultiLineEvents int
	// NoDataBlocks counts the blocks of field lines that a blank line ended
	// without any data line ("event: x", "id: 1" or "retry: 10" alone):
	// the specification dispatches nothing for them. Comment lines alone
	// make no block.
	NoDataBlocks int
	// BareCRLines counts the lines that ended in a bare '\r' (CR-only line
	// endings).
	BareCRLines int
	// InvalidUTF8 counts the ill-formed UTF-8 sequences of the lines read,
	// each replaced by U+FFFD (one per maximal subpart, as the WHATWG
	// Encoding Standard's decoder does).
	InvalidUTF8 int
	// IDFields counts the id fields that set the last event ID (those
	// without a NUL).
	IDFields int
	// RetryFields counts the retry fields that set the reconnection time
	// (ASCII digits only).
	RetryFields int
}

// utf8BOM is the byte order mark a stream may start with.
var utf8BOM = [...]byte{0xEF, 0xBB, 0xBF}

// Feed gives the reader the next bytes of the stream. As with
// LineSplitter.Feed, the reader keeps p until Next has returned ok ==
// false, and Feed is meant to be called only then.
func (d *EventReader) Feed(p []byte) {
	if d.err != nil || d.viewing || !d.bomDone {
		d.feedStart(p)
		return
	}
	d.lines.Feed(p)
}

// feedStart is Feed for the start of the stream, a failed reader, or data
// held in the caller's previous feed.
func (d *EventReader) feedStart(p []byte) {
	if d.err != nil {
		return
	}
	d.keep()
	if !d.bomDone {
		p = d.sniff(p)
	}
	d.lines.Feed(p)
}

// sniff strips the byte order mark from the start of the stream, p its
// next bytes, also when the mark arrives in pieces. Bytes that started
// like one and turned out not to be are fed as data.
func (d *EventReader) sniff(p []byte) []byte {
	for len(p) > 0 {
		if p[0] != utf8BOM[d.bomSeen] {
			d.bomDone = true
			if d.bomSeen > 0 {
				d.lines.Feed(utf8BOM[:d.bomSeen])
			}
			return p
		}
		p = p[1:]
		if d.bomSeen++; d.bomSeen == len(utf8BOM) {
			d.bomDone = true
			d.framing.BOMs = 1
			d.changes++
			return p
		}
	}
	return p
}

// Next returns the next event the stream dispatches (the reader's own:
// valid until the next call of Next or Feed) and ok == true, or ok ==
// false when the bytes fed so far dispatch no further event (feed more)
// or when the reader has failed (see Err).
func (d *EventReader) Next() (ev *Event, ok bool) {
	if d.err != nil {
		return nil, false
	}
	for {
		line, inFeed, ok := d.lines.next()
		if !ok {
			break
		}
		if len(line) == 0 {
			if d.dispatch() {
				return &d.ev, true
			}
			continue
		}
		if !ascii(line) && !utf8.Valid(line) {
			var n int
			d.fix, n = appendValidUTF8(d.fix[:0], line)
			d.framing.InvalidUTF8 += n
			d.changes++
			line, inFeed = d.fix, false
		}
		if d.dataLines == 0 && inFeed && len(line) > 4 && line[4] == ':' && string(line[:4]) == "data" {
			// An event's first data line, in the feed: the common case,
			// kept where it is (appendData's first case; a line, at most
			// MaxLineBytes, is within MaxEventBytes).
			v := line[5:]
			if len(v) > 0 && v[0] == ' ' {
				v = v[1:]
			}
			d.view, d.viewing, d.dataLines, d.fields = v, true, 1, true
			continue
		}
		if !d.field(line, inFeed) {
			return nil, false
		}
	}
	d.keep()
	if err := d.lines.Err(); err != nil {
		d.err = err
	}
	return nil, false
}

// field processes one line that is not blank.
func (d *EventReader) field(line []byte, inFeed bool) bool {
	if line[0] == ':' {
		d.comments++
		d.changes++
		return true
	}
	if len(line) > 4 && line[4] == ':' && string(line[:4]) == "data" { // most lines
		value := line[5:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		d.fields = true
		return d.appendData(value, inFeed)
	}
	name, value := line, line[len(line):]
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	d.fields = true
	switch string(name) {
	case "data":
		return d.appendData(value, inFeed)
	case "event":
		d.typ = append(d.typ[:0], value...)
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			d.id, d.idSet = append(d.id[:0], value...), true
			d.framing.IDFields++
			d.changes++
		}
	case "retry":
		if ms, ok := parseRetry(value); ok {
			d.retry = ms
			d.framing.RetryFields++
			d.changes++
		}
	}
	return true
}

// appendData adds the value of one data line to the event's data.
func (d *EventReader) appendData(v []byte, inFeed bool) bool {
	d.dataLines++
	size := len(v)
	if d.dataLines > 1 {
		d.keep()
		size += len(d.data) + 1
	}
	if size > MaxEventBytes {
		d.err = fmt.Errorf("%w: its data lines join to more than %d bytes before the blank line that ends it",
			ErrEventTooLarge, MaxEventBytes)
		return false
	}
	switch {
	case d.dataLines > 1:
		d.data = append(d.data, '\n')
		d.data = append(d.data, v...)
	case inFeed:
		d.view, d.viewing = v, true
	default:
		d.data = append(d.data[:0], v...)
	}
	return true
}

// keep copies the event's data out of the caller's feed, before the caller
// may reuse it.
func (d *EventReader) keep() {
	if d.viewing {
		d.data = append(d.data[:0], d.view...)
		d.viewing = false
	}
}

// dispatch ends the event at a blank line: it sets the last event ID
// string, makes the event the one Next returns when it has data, and
// empties the data and the type either way.
func (d *EventReader) dispatch() bool {
	if d.idSet {
		d.lastID, d.idSet = append(d.lastID[:0], d.id...), false
		d.changes++
	}
	lines := d.dataLines
	if lines == 0 {
		if d.fields {
			d.framing.NoDataBlocks++
			d.changes++
			d.fields = false
		}
		d.typ = d.typ[:0]
		return false
	}
	d.ev.Type = d.typ
	if d.viewing {
		d.ev.Data, d.viewing = d.view, false
	} else {
		d.ev.Data = d.data
	}
	d.typ, d.data, d.dataLines, d.fields = d.typ[:0], d.data[:0], 0, false
	if lines > 1 {
		d.framing.MultiLineEvents++
		d.changes++
	}
	return true
}

// Reset discards all state, keeping the internal buffers for reuse (for
// the next response on a connection).
func (d *EventReader) Reset() {
	d.lines.Reset()
	*d = EventReader{lines: d.lines, data: d.data[:0], typ: d.typ[:0], id: d.id[:0], lastID: d.lastID[:0], fix: d.fix[:0]}
}

// Err returns the error that stopped the reader, nil before: ErrLineTooLong
// or ErrEventTooLarge (wrapped, saying the limit).
func (d *EventReader) Err() error { return d.err }

// Framing returns the framing counts of the stream so far.
func (d *EventReader) Framing() Framing {
	f := d.framing
	f.BareCRLines = d.lines.BareCRs()
	return f
}

// Changed reports whether Framing, Comments, LastEventID or Retry may
// return something new since the last call of Changed (or since the
// start): a caller that copies them can skip the copy when nothing
// changed, as for a stream written one data line per event.
func (d *EventReader) Changed() bool {
	n := d.changes + d.lines.bareCRs
	if n == d.seen {
		return false
	}
	d.seen = n
	return true
}

// Comments returns the number of comment lines read so far.
func (d *EventReader) Comments() int { return d.comments }

// LastEventID returns the last event ID string: the value of the last id
// field before the last blank line (empty when none), the one a client
// would send again in Last-Event-ID, and the ID of the event Next has
// just returned (it persists from event to event until an id field
// changes it); valid until the next call of Next or Feed.
func (d *EventReader) LastEventID() []byte { return d.lastID }

// Retry returns the reconnection time the last valid retry field set, in
// milliseconds, and ok == false when none did.
func (d *EventReader) Retry() (ms int64, ok bool) { return d.retry, d.framing.RetryFields > 0 }

// parseRetry reads a retry value: ASCII digits only, at least one, in
// base ten; a value past math.MaxInt64 saturates.
func parseRetry(v []byte) (int64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (math.MaxInt64-9)/10 {
			n = math.MaxInt64
		} else {
			n = n*10 + int64(c-'0')
		}
	}
	return n, true
}

// ascii reports whether b is all ASCII, eight bytes at a time: the common
// case, checked before the full UTF-8 validation.
func ascii(b []byte) bool {
	const high = 0x8080808080808080
	if len(b) < 8 {
		for _, c := range b {
			if c >= 0x80 {
				return false
			}
		}
		return true
	}
	last := binary.LittleEndian.Uint64(b[len(b)-8:]) // the tail, overlapping
	for len(b) >= 32 {
		_ = b[31] // one bounds check for the four loads
		x := binary.LittleEndian.Uint64(b) | binary.LittleEndian.Uint64(b[8:]) |
			binary.LittleEndian.Uint64(b[16:]) | binary.LittleEndian.Uint64(b[24:])
		if x&high != 0 {
			return false
		}
		b = b[32:]
	}
	for len(b) >= 8 {
		last |= binary.LittleEndian.Uint64(b)
		b = b[8:]
	}
	return last&high == 0
}

// appendValidUTF8 appends b to dst with each maximal subpart of an
// ill-formed UTF-8 sequence replaced by U+FFFD, as the WHATWG Encoding
// Standard's UTF-8 decoder replaces them, and returns the count of
// replacements.
func appendValidUTF8(dst, b []byte) ([]byte, int) {
	n := 0
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r != utf8.RuneError || size > 1 { // a valid rune (U+FFFD itself included)
			dst, b = append(dst, b[:size]...), b[size:]
			continue
		}
		dst, b = append(dst, "\uFFFD"...), b[maximalSubpart(b):]
		n++
	}
	return dst, n
}

// maximalSubpart returns the length of the maximal subpart of the
// ill-formed sequence b starts with: its lead byte and the continuation
// bytes that could still have completed it (at least 1).
func maximalSubpart(b []byte) int {
	lo, hi := byte(0x80), byte(0xBF) // the range of the next continuation byte
	var need int
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c == 0xED:
		need, hi = 2, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case c == 0xF4:
		need, hi = 3, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	default:
		return 1
	}
	i := 1
	for ; i <= need && i < len(b) && b[i] >= lo && b[i] <= hi; i++ {
		lo, hi = 0x80, 0xBF
	}
	return i
}
