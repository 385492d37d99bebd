package wire

import (
	"bytes"
	"strconv"
)

// LineSplitter splits a Server-Sent Events stream into lines as its bytes
// arrive. Lines end, as the SSE specification says, in "\r\n", "\n" or a
// bare "\r". A '\r' that ends the bytes fed so far ends its line at once;
// a '\n' that starts the next feed is then the rest of a "\r\n" and is
// dropped.
//
// A line that arrives whole within one Feed is returned as a sub-slice of
// that feed, without copying; only the incomplete tail of a feed is copied,
// into an internal buffer that is reused and never holds more than
// MaxLineBytes+1 bytes (unless Feed is called before the previous feed was
// drained). A line longer than MaxLineBytes stops the splitter with
// ErrLineTooLong. The zero value is ready to use.
//
// The splitter counts the lines that ended in a bare '\r' (BareCRs): a
// fact about the stream's framing, not needed to split it.
type LineSplitter struct {
	pending []byte // the unread part of the last Feed; the caller's memory
	carry   []byte // carry[off:] holds a line begun in earlier feeds
	off     int
	stale   bool  // carry holds a line already returned: clear before reuse
	scan    bool  // carry may hold whole lines (after an early Feed)
	skipLF  bool  // the last line ended in a '\r' that ended the bytes fed: a '\n' next is its "\r\n"'s
	fed     bool  // the line returned last is a sub-slice of the feed, not of carry
	bareCRs int   // lines ended by a '\r' not followed by '\n'
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
	line, _, ok = s.next()
	return line, ok
}

// next is Next, and also says whether the line is a sub-slice of the bytes
// last fed (inFeed): such a line stays valid, unlike one gathered in
// carry, until the caller modifies those bytes — through later calls of
// next on the same feed.
func (s *LineSplitter) next() (line []byte, inFeed, ok bool) {
	line, ok = s.nextLine()
	return line, ok && s.fed, ok
}

// nextLine finds the next line and sets fed.
func (s *LineSplitter) nextLine() (line []byte, ok bool) {
	s.fed = false
	if s.err != nil {
		return nil, false
	}
	s.release()
	if s.off < len(s.carry) {
		// Only an early Feed can leave whole lines in carry; otherwise
		// it holds no line end and is not searched again.
		if s.scan {
			s.dropLF(&s.carry, s.off)
			if i, n := s.eol(s.carry[s.off:]); i >= 0 {
				line = s.carry[s.off : s.off+i]
				s.off += i + n
				return s.emit(line)
			}
			s.scan = false
		}
		i, n := s.eol(s.pending)
		if i < 0 {
			return s.hold()
		}
		if len(s.carry)-s.off+i > MaxLineBytes+1 {
			s.err = ErrLineTooLong
			return nil, false
		}
		s.carry = append(s.carry, s.pending[:i]...)
		s.pending = s.pending[i+n:]
		s.stale = true
		return s.emit(s.carry[s.off:])
	}
	s.dropLF(&s.pending, 0)
	i, n := s.eol(s.pending)
	if i < 0 {
		return s.hold()
	}
	line, s.pending = s.pending[:i], s.pending[i+n:]
	s.fed = true
	return s.emit(line)
}

// eol returns where the first line end of b is and its length (2 for
// "\r\n", else 1), or -1 when b holds none. A '\r' that ends b ends its
// line, and sets skipLF: the '\n' that may start the bytes after b is
// its "\r\n"'s (dropLF). Two IndexByte calls keep the common case —
// lines ending in '\n' alone — about as fast as one.
func (s *LineSplitter) eol(b []byte) (i, n int) {
	i = bytes.IndexByte(b, '\n')
	in := b
	if i >= 0 {
		in = b[:i]
	}
	j := bytes.IndexByte(in, '\r')
	switch {
	case j < 0:
		return i, 1
	case j+1 < len(b) && b[j+1] == '\n':
		return j, 2
	case j+1 == len(b):
		s.skipLF = true // bare or not: dropLF tells, from the next byte
	default:
		s.bareCRs++
	}
	return j, 1
}

// dropLF drops the '\n' at (*b)[off] when it completes the "\r\n" of the
// line returned last; any other byte there makes that line's '\r' a bare
// one.
func (s *LineSplitter) dropLF(b *[]byte, off int) {
	if !s.skipLF || len(*b) <= off {
		return
	}
	s.skipLF = false
	switch {
	case (*b)[off] != '\n':
		s.bareCRs++
	case off == 0:
		*b = (*b)[1:]
	default:
		*b = append((*b)[:off], (*b)[off+1:]...)
	}
}

// Err returns ErrLineTooLong once a line has exceeded MaxLineBytes, and nil
// before that.
func (s *LineSplitter) Err() error { return s.err }

// BareCRs returns how many lines so far ended in a bare '\r' (one not
// followed by '\n'). A '\r' that ends the bytes fed so far is counted once
// the next byte has arrived.
func (s *LineSplitter) BareCRs() int { return s.bareCRs }

// Reset discards all state, keeping the internal buffer for reuse.
func (s *LineSplitter) Reset() {
	*s = LineSplitter{carry: s.carry[:0]}
}

// emit returns a complete line, enforcing the limit.
func (s *LineSplitter) emit(line []byte) ([]byte, bool) {
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
// "data:" without the one leading space the specification removes, as a
// sub-slice of line, and ok == true. A line that is exactly "data" is a
// data field with an empty value. Any other line (another field such as
// "event:" or "id:", a ":" comment, an empty line) gives ok == false.
//
// It reads one line; an event's data, which may span several data lines,
// is EventReader's to assemble.
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
	if len(rest) > 0 && rest[0] == ' ' {
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
