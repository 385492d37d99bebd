package wire

import (
	"fmt"
	"io"
	"strconv"
)

// LastChunk ends a chunked body: the zero-size chunk and an empty trailer
// section.
const LastChunk = "0\r\n\r\n"

// AppendChunk appends payload to dst as one chunk of the chunked transfer
// coding, "<lowercase hex length>\r\n<payload>\r\n", and returns the
// extended slice. An empty payload appends nothing, because a zero-size
// chunk would end the body; end it with LastChunk.
func AppendChunk(dst, payload []byte) []byte {
	if len(payload) == 0 {
		return dst
	}
	dst = strconv.AppendUint(dst, uint64(len(payload)), 16)
	dst = append(dst, '\r', '\n')
	dst = append(dst, payload...)
	return append(dst, '\r', '\n')
}

// ChunkedDecoder decodes the chunked transfer coding (RFC 9112 §7.1)
// incrementally and without copying: Next takes whatever bytes arrived and
// returns the body bytes among them as a sub-slice of its input.
//
// It accepts input split at any byte boundary, upper- and lowercase hex,
// chunk extensions (ignored), trailer fields (skipped) and, leniently, bare
// "\n" line endings. A bare "\r" is an error. The zero value is ready to
// use; Reset prepares it for another body.
type ChunkedDecoder struct {
	state   chunkState
	size    int64 // the size being parsed, then the data bytes left in the chunk
	line    int   // bytes of the current size line so far, line ending excluded
	trailer int   // bytes of the trailer section so far, line endings included
	err     error // sticky
}

// chunkState says where in the coding the next byte falls.
type chunkState uint8

const (
	stateSize        chunkState = iota // start of a size line: want a hex digit
	stateSizeDigits                    // in the hex digits of the size
	stateSizeBWS                       // whitespace after the size, before ';' or the line end
	stateExt                           // in chunk extensions, up to the line end
	stateSizeLF                        // after the '\r' ending a size line
	stateData                          // in chunk data, size bytes left
	stateDataEnd                       // after chunk data: want "\r\n" or "\n"
	stateDataLF                        // after the '\r' following chunk data
	stateTrailer                       // start of a trailer field line or of the final empty line
	stateTrailerLine                   // in a trailer field line
	stateTrailerLF                     // after the '\r' ending a trailer field line
	stateEndLF                         // after the '\r' of the final empty line
	stateDone                          // the body is complete
)

// Next decodes from in, which continues the input of previous calls, up to
// and including the next run of body bytes. It returns that run as data, a
// sub-slice of in (nil if in held only framing), and the number of bytes of
// in it consumed. Call it again with in[consumed:] while that is non-empty
// and err is nil; a call that returns no data and no error consumed all of
// in.
//
// When the last chunk and trailer section are complete, Next returns io.EOF
// and consumed stops right after them, so in[consumed:] is whatever follows
// the body (the next response on a persistent connection); later calls
// return (nil, 0, io.EOF). Data is non-empty only when err is nil.
//
// Other errors are ErrMalformedChunk, ErrChunkTooLarge and
// ErrTrailerTooLarge, possibly wrapped; they are sticky.
func (d *ChunkedDecoder) Next(in []byte) (data []byte, consumed int, err error) {
	if d.err != nil {
		return nil, 0, d.err
	}
	if d.state == stateDone {
		return nil, 0, io.EOF
	}
	for i := 0; i < len(in); i++ {
		if d.state == stateData {
			n := int(min(int64(len(in)-i), d.size))
			if d.size -= int64(n); d.size == 0 {
				d.state = stateDataEnd
			}
			return in[i : i+n], i + n, nil
		}
		if err := d.step(in[i]); err != nil {
			d.err = err
			return nil, i, err
		}
		if d.state == stateDone {
			return nil, i + 1, io.EOF
		}
	}
	return nil, len(in), nil
}

// Done reports whether the last chunk and the trailer section have been
// decoded.
func (d *ChunkedDecoder) Done() bool { return d.state == stateDone }

// Reset returns d to its zero state, ready for a new body.
func (d *ChunkedDecoder) Reset() { *d = ChunkedDecoder{} }

// step advances the state machine over one framing byte.
func (d *ChunkedDecoder) step(c byte) error {
	switch d.state {
	case stateSize, stateSizeDigits, stateSizeBWS, stateExt:
		if c != '\r' && c != '\n' {
			if d.line++; d.line > MaxChunkSizeLine {
				return fmt.Errorf("%w: size line longer than %d bytes", ErrMalformedChunk, MaxChunkSizeLine)
			}
		}
	case stateTrailer, stateTrailerLine, stateTrailerLF, stateEndLF:
		if d.trailer++; d.trailer > MaxTrailerBytes {
			return ErrTrailerTooLarge
		}
	}

	switch d.state {
	case stateSize:
		v, ok := unhex(c)
		if !ok {
			return fmt.Errorf("%w: invalid byte %q at start of chunk size", ErrMalformedChunk, c)
		}
		d.size, d.state = int64(v), stateSizeDigits
	case stateSizeDigits:
		if v, ok := unhex(c); ok {
			if d.size > (MaxChunkSize-int64(v))/16 {
				return fmt.Errorf("%w: size above %d bytes", ErrChunkTooLarge, MaxChunkSize)
			}
			d.size = d.size*16 + int64(v)
			return nil
		}
		return d.afterSize(c)
	case stateSizeBWS:
		return d.afterSize(c)
	case stateExt:
		switch c {
		case '\r':
			d.state = stateSizeLF
		case '\n':
			d.endSizeLine()
		}
	case stateSizeLF:
		if c != '\n' {
			return fmt.Errorf("%w: bare CR in chunk size line", ErrMalformedChunk)
		}
		d.endSizeLine()
	case stateDataEnd:
		switch c {
		case '\r':
			d.state = stateDataLF
		case '\n':
			d.state = stateSize
		default:
			return fmt.Errorf("%w: missing CRLF after chunk data", ErrMalformedChunk)
		}
	case stateDataLF:
		if c != '\n' {
			return fmt.Errorf("%w: missing CRLF after chunk data", ErrMalformedChunk)
		}
		d.state = stateSize
	case stateTrailer:
		switch c {
		case '\r':
			d.state = stateEndLF
		case '\n':
			d.state = stateDone
		default:
			d.state = stateTrailerLine
		}
	case stateTrailerLine:
		switch c {
		case '\r':
			d.state = stateTrailerLF
		case '\n':
			d.state = stateTrailer
		}
	case stateTrailerLF:
		if c != '\n' {
			return fmt.Errorf("%w: bare CR in trailer", ErrMalformedChunk)
		}
		d.state = stateTrailer
	case stateEndLF:
		if c != '\n' {
			return fmt.Errorf("%w: bare CR after last chunk", ErrMalformedChunk)
		}
		d.state = stateDone
	}
	return nil
}

// afterSize handles a byte after the hex digits of a size: optional
// whitespace, then extensions or the line end.
func (d *ChunkedDecoder) afterSize(c byte) error {
	switch c {
	case ' ', '\t':
		d.state = stateSizeBWS
	case ';':
		d.state = stateExt
	case '\r':
		d.state = stateSizeLF
	case '\n':
		d.endSizeLine()
	default:
		return fmt.Errorf("%w: invalid byte %q in chunk size", ErrMalformedChunk, c)
	}
	return nil
}

// endSizeLine starts the chunk data, or the trailer after the last chunk.
func (d *ChunkedDecoder) endSizeLine() {
	d.line = 0
	if d.size == 0 {
		d.state = stateTrailer
	} else {
		d.state = stateData
	}
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
