// Package wire is the framing layer of sse-latency, in both directions and
// without sockets or clocks: it parses HTTP/1.1 request and response heads,
// decodes and encodes the chunked transfer coding, splits Server-Sent
// Events lines and interprets them as the WHATWG specification does
// (EventReader), writes them, and reads and writes WebSocket frames (ws.go).
//
// The body parsers, ChunkedDecoder, LineSplitter, EventReader and
// WSReader, are incremental in the style of net/http's chunked.go: each is
// fed whatever bytes a Read returned, hands back what it could complete,
// and keeps its state until the next feed. None blocks, and none
// allocates per event or per line in steady state: results are sub-slices
// of the caller's input or of one small internal buffer, valid only until
// the next call (each method documents exactly how long).
//
// The head parsers, ParseResponseHead and ParseRequestHead, are stateless:
// they are given all bytes received so far and answer "need more"
// (n == 0, err == nil) until the blank line that ends the head has arrived.
// They copy the head once, so their results stay valid after the caller
// reuses its buffer.
//
// Memory is bounded by the named Max* constants, and every way the input can
// be wrong has a named error that callers can test with errors.Is.
package wire

import "errors"

// Limits. Each bounds the memory or the work one peer can make the other
// spend on framing.
const (
	// MaxHeadBytes bounds an HTTP request or response head, from the first
	// byte of the start line through the blank line that ends it.
	MaxHeadBytes = 64 << 10

	// MaxChunkSizeLine bounds one chunk-size line of the chunked coding,
	// extensions included, line ending excluded.
	MaxChunkSizeLine = 4096

	// MaxChunkSize bounds the size a single chunk may declare.
	MaxChunkSize = 1 << 30

	// MaxTrailerBytes bounds the trailer section after the last chunk,
	// line endings included.
	MaxTrailerBytes = 64 << 10

	// MaxLineBytes bounds one Server-Sent Events line, line ending excluded.
	// It is also the most a LineSplitter buffers in normal use (plus one
	// byte for a pending '\r').
	MaxLineBytes = 1 << 20

	// MaxEventBytes bounds the data of one Server-Sent Event: the values
	// of its data lines joined, as an EventReader gathers them until the
	// blank line that ends the event (a stream that never sends one stops
	// there).
	MaxEventBytes = 1 << 20
)

// Errors returned by the parsers. They are often wrapped with detail; test
// for them with errors.Is.
var (
	// ErrHeadTooLarge means a head did not end within MaxHeadBytes.
	ErrHeadTooLarge = errors.New("wire: head too large")

	// ErrBadStatusLine means a response did not start with
	// "HTTP/x.y NNN".
	ErrBadStatusLine = errors.New("wire: malformed status line")

	// ErrBadRequestLine means a request did not start with
	// "METHOD target HTTP/x.y".
	ErrBadRequestLine = errors.New("wire: malformed request line")

	// ErrBadHeader means a header field line is malformed: no colon, an
	// empty or invalid name, whitespace before the colon, an obsolete
	// folded continuation line, a control byte in the value, or a
	// duplicated Host.
	ErrBadHeader = errors.New("wire: malformed header field")

	// ErrBadContentLength means a Content-Length value is not a
	// non-negative decimal integer that fits in an int64, or that several
	// Content-Length fields disagree.
	ErrBadContentLength = errors.New("wire: bad Content-Length")

	// ErrMalformedChunk means the chunked coding is broken: a bad hex
	// size, a size line longer than MaxChunkSizeLine, a bare CR, or data
	// not followed by a line ending.
	ErrMalformedChunk = errors.New("wire: malformed chunked encoding")

	// ErrChunkTooLarge means a chunk declared a size above MaxChunkSize.
	ErrChunkTooLarge = errors.New("wire: chunk too large")

	// ErrTrailerTooLarge means the trailer section after the last chunk
	// exceeded MaxTrailerBytes.
	ErrTrailerTooLarge = errors.New("wire: chunked trailer too large")

	// ErrLineTooLong means a Server-Sent Events line exceeded MaxLineBytes.
	ErrLineTooLong = errors.New("wire: SSE line too long")

	// ErrEventTooLarge means the data of a Server-Sent Event exceeded
	// MaxEventBytes before the blank line that ends it.
	ErrEventTooLarge = errors.New("wire: SSE event too large")
)
