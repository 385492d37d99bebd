package wire

import (
	"bytes"
	"strconv"
)

// LineSplitter splits a Server-Sent Events stream into lines as its bytes
// arrive. Lines end in "\n"; one '\r' before the '\n' is dropped, so "\r\n"
// endings work too. (A bare '\r' is not a line ending here, although the
// SSE specification allows it.)
//
// A line that arrives whole within one Feed is returned as a sub-slice of
// that feed, without copying; only the incomplete tail of a feed is copied,
// into an internal buffer that is reused and never holds more than
// MaxLineBytes+1 bytes (unless Feed is called before the previous feed was
// drained). A line longer than MaxLineBytes stops the splitter with
// ErrLineTooLong. The zero value is ready to use.
type LineSplitter struct {
	pending []byte // the unread part of the last Feed; the caller's memory
	carry   []byte // carry[off:] holds a line begun in earlier feeds
	off     int
	stale   bool  // carry holds a line already returned: clear before reuse
	scan    bool  // carry may hold whole lines (after an early Feed)
	err     error // sticky
}

// Feed gives the splitter the next bytes of the stream. The splitter keeps
// p, so the caller must not modify it until Next has returned ok == false.
// Feed is meant to be called once Next has returned every line of the
// previous feed; if it is called earlier, the unread bytes are copied so
// that no line is lost.
func (s *LineSplitter) Feed(p []byte) {
	if s.err != nil {
		return
	}
	s.release()
	if len(s.pending) > 0 {
		s.compact()
		s.carry = append(s.carry, s.pending...)
		s.scan = true
	}
	s.pending = p
}

// Next returns the next complete line, without its line ending, and
// ok == true; or ok == false when the bytes fed so far hold no further
// complete line (feed more), or when the splitter has failed (see Err). The
// line is valid until the next call to Next, Feed or Reset, and only while
// the caller leaves the fed bytes unmodified.
func (s *LineSplitter) Next() (line []byte, ok bool) {
	if s.err != nil {
		return nil, false
	}
	s.release()
	if s.off < len(s.carry) {
		// Only an early Feed can leave whole lines in carry; otherwise
		// it holds no '\n' and is not searched again.
		if s.scan {
			if i := bytes.IndexByte(s.carry[s.off:], '\n'); i >= 0 {
				line = s.carry[s.off : s.off+i]
				s.off += i + 1
				return s.emit(line)
			}
			s.scan = false
		}
		i := bytes.IndexByte(s.pending, '\n')
		if i < 0 {
			return s.hold()
		}
		if len(s.carry)-s.off+i > MaxLineBytes+1 {
			s.err = ErrLineTooLong
			return nil, false
		}
		s.carry = append(s.carry, s.pending[:i]...)
		s.pending = s.pending[i+1:]
		s.stale = true
		return s.emit(s.carry[s.off:])
	}
	i := bytes.IndexByte(s.pending, '\n')
	if i < 0 {
		return s.hold()
	}
	line, s.pending = s.pending[:i], s.pending[i+1:]
	return s.emit(line)
}

// Err returns ErrLineTooLong once a line has exceeded MaxLineBytes, and nil
// before that.
func (s *LineSplitter) Err() error { return s.err }

// Reset discards all state, keeping the internal buffer for reuse.
func (s *LineSplitter) Reset() {
	*s = LineSplitter{carry: s.carry[:0]}
}

// emit drops one trailing '\r' from a complete line and enforces the limit.
func (s *LineSplitter) emit(line []byte) ([]byte, bool) {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(line) > MaxLineBytes {
		s.err = ErrLineTooLong
		return nil, false
	}
	return line, true
}

// hold copies the incomplete tail of the current feed into carry.
func (s *LineSplitter) hold() ([]byte, bool) {
	if len(s.carry)-s.off+len(s.pending) > MaxLineBytes+1 {
		s.err = ErrLineTooLong
		return nil, false
	}
	s.compact()
	s.carry = append(s.carry, s.pending...)
	s.pending = nil
	return nil, false
}

// release empties carry once the line it held has been returned.
func (s *LineSplitter) release() {
	if s.stale {
		s.carry, s.off, s.stale = s.carry[:0], 0, false
	}
}

// compact moves carry[off:] to the start of carry.
func (s *LineSplitter) compact() {
	if s.off > 0 {
		s.carry = s.carry[:copy(s.carry, s.carry[s.off:])]
		s.off = 0
	}
}

// DataPayload returns the value of an SSE "data" field line: the bytes after
// "data:" with leading spaces and tabs skipped, as a sub-slice of line, and
// ok == true. A line that is exactly "data" is a data field with an empty
// value. Any other line (another field such as "event:" or "id:", a ":"
// comment, an empty line) gives ok == false.
//
// The SSE specification removes only one leading space; this tool's
// payloads are JSON, where the difference does not matter.
func DataPayload(line []byte) (payload []byte, ok bool) {
	const field = "data"
	if len(line) < len(field) || string(line[:len(field)]) != field {
		return nil, false
	}
	rest := line[len(field):]
	if len(rest) == 0 {
		return rest, true
	}
	if rest[0] != ':' {
		return nil, false
	}
	rest = rest[1:]
	for len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t') {
		rest = rest[1:]
	}
	return rest, true
}

// sseDataPrefix and sseEventEnd frame one SSE data event.
const (
	sseDataPrefix = "data: "
	sseEventEnd   = "\n\n"
)

// AppendSSEData appends one SSE event carrying payload, "data: <payload>\n\n",
// to dst and returns the extended slice. The payload must not contain '\r'
// or '\n' (compact JSON does not), since those would end the line early.
func AppendSSEData(dst, payload []byte) []byte {
	dst = append(dst, sseDataPrefix...)
	dst = append(dst, payload...)
	return append(dst, sseEventEnd...)
}

// AppendChunkedSSEData appends one HTTP chunk whose data is exactly the SSE
// event AppendSSEData would write, in a single pass without an intermediate
// copy: "<hex length>\r\ndata: <payload>\n\n\r\n". The same restriction on
// payload applies.
func AppendChunkedSSEData(dst, payload []byte) []byte {
	n := len(sseDataPrefix) + len(payload) + len(sseEventEnd)
	dst = strconv.AppendUint(dst, uint64(n), 16)
	dst = append(dst, '\r', '\n')
	dst = AppendSSEData(dst, payload)
	return append(dst, '\r', '\n')
}
