package wire

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// WebSocket framing (RFC 6455), in both directions and without sockets:
// WSReader takes the bytes of a connection as they arrive and hands back
// whole messages — data messages reassembled from their frames, control
// frames as they come — and the Append functions build frames. Both sides
// use them: the client reads the server's unmasked frames and masks its
// own, the server the other way round. No extension is ever negotiated
// (permessage-deflate in particular), so the reserved bits must be 0.

// WebSocket opcodes (RFC 6455 §5.2).
const (
	WSContinuation byte = 0x0
	WSText         byte = 0x1
	WSBinary       byte = 0x2
	WSClose        byte = 0x8
	WSPing         byte = 0x9
	WSPong         byte = 0xA
)

// WebSocket close status codes (RFC 6455 §7.4.1) the tool sends or names.
const (
	WSCloseNormal        = 1000
	WSCloseGoingAway     = 1001
	WSCloseProtocolError = 1002
	WSCloseUnsupported   = 1003 // a data type the endpoint cannot take (binary, for the Responses API)
	WSCloseNoStatus      = 1005 // never sent: what ParseWSClose returns for a close frame without a code
	WSCloseBadData       = 1007 // a text message that is not UTF-8
	WSClosePolicy        = 1008
	WSCloseTooBig        = 1009
	WSCloseInternalError = 1011
)

// WebSocket limits.
const (
	// MaxWSControlPayload bounds the payload of a control frame (close,
	// ping, pong), as RFC 6455 §5.5 does.
	MaxWSControlPayload = 125

	// MaxWSMessageBytes is WSReader's default bound on a data message: the
	// payload of all its frames together. It is MaxLineBytes, the bound on
	// one SSE line: a Responses event is one line over SSE and one message
	// over WebSocket.
	MaxWSMessageBytes = MaxLineBytes

	// maxWSHeader is the longest frame header: 2 bytes, an 8-byte length,
	// a 4-byte masking key.
	maxWSHeader = 14
)

// WebSocket errors of WSReader (wrapped with detail; test with errors.Is).
var (
	// ErrWSProtocol means the peer broke RFC 6455: reserved bits set, an
	// unknown opcode, a fragmented or oversized control frame, a frame
	// masked the wrong way for its direction, a continuation without a
	// message or a new message inside a fragmented one, a length with its
	// top bit set, a malformed close payload.
	ErrWSProtocol = errors.New("websocket protocol error")

	// ErrWSTooLarge means a data message exceeded the reader's bound.
	ErrWSTooLarge = errors.New("websocket message too large")

	// ErrWSBadUTF8 means a text message or a close reason is not UTF-8.
	ErrWSBadUTF8 = errors.New("websocket text is not valid UTF-8")
)

// WSCloseCode returns the close status code an endpoint sends when its peer
// made WSReader fail with err: 1009 for a message too large, 1007 for bad
// UTF-8, else 1002 (a protocol error).
func WSCloseCode(err error) int {
	switch {
	case errors.Is(err, ErrWSTooLarge):
		return WSCloseTooBig
	case errors.Is(err, ErrWSBadUTF8):
		return WSCloseBadData
	}
	return WSCloseProtocolError
}

// WSMessage is what WSReader.Next completed: a data message (WSText or
// WSBinary, every frame of it) or a control frame (WSClose, WSPing,
// WSPong). An Op of 0 means none: feed more bytes.
type WSMessage struct {
	Op      byte
	Payload []byte
}

// WSReader parses the frames of one direction of a WebSocket connection
// incrementally: Next takes whatever bytes arrived and returns each
// message as it completes. It accepts input split at any byte, fragmented
// data messages with control frames between their fragments, and lengths
// in any of the three encodings; it checks everything RFC 6455 asks a
// receiver to check without an extension (see ErrWSProtocol), text
// messages and close reasons for UTF-8, and bounds a data message by
// MaxMessage. The zero value reads a client's view of a server (frames
// must be unmasked) with MaxWSMessageBytes.
type WSReader struct {
	// Masked says the frames must be masked: the server reading a client.
	// A client reading a server wants them unmasked.
	Masked bool
	// MaxMessage bounds a data message's payload; 0 means
	// MaxWSMessageBytes.
	MaxMessage int

	head    [maxWSHeader]byte // the header of the next frame, as it arrives
	headN   int
	inFrame bool // the header is complete: payload bytes follow
	fin     bool // the frame's FIN bit
	op      byte // the frame's opcode
	masked  bool // the frame is masked, with key
	key     [4]byte
	left    int64 // payload bytes of the frame still to come
	pos     int   // payload bytes of the frame seen: the position in the key

	msgOp  byte   // the data message in progress (its first frame's opcode), 0 if none
	msgLen int    // its payload so far
	buf    []byte // its payload when it is copied: masked, or spread over frames or inputs
	ctl    [MaxWSControlPayload]byte
	ctlN   int
	err    error // sticky
}

// Partial reports whether r is inside a frame or a fragmented message:
// the bytes fed so far do not end at a message boundary.
func (r *WSReader) Partial() bool { return r.headN > 0 || r.inFrame || r.msgOp != 0 }

// Next parses in, which continues the input of previous calls, up to and
// including the next complete message. It returns that message and the
// number of bytes of in it consumed; call it again with in[used:] while
// that is non-empty and err is nil. When in holds no complete message, m.Op
// is 0 and used is len(in): the partial frame is remembered.
//
// m.Payload is valid until the next call. It is a sub-slice of in when the
// message is one unmasked frame that arrived whole in this input (no copy:
// the client's usual case); otherwise it is the reader's own buffer
// (unmasked). Errors (ErrWSProtocol, ErrWSTooLarge, ErrWSBadUTF8, wrapped)
// are sticky; used then stops at the offending frame.
func (r *WSReader) Next(in []byte) (m WSMessage, used int, err error) {
	if r.err != nil {
		return WSMessage{}, 0, r.err
	}
	i := 0
	for i < len(in) || r.inFrame {
		if !r.inFrame {
			start := i
			i += r.gatherHead(in[i:])
			if !r.inFrame {
				if r.err != nil {
					return WSMessage{}, start, r.err
				}
				return WSMessage{}, len(in), nil
			}
		}
		n := int(min(r.left, int64(len(in)-i)))
		chunk := in[i : i+n]
		// One unmasked frame that is the whole message, all of it here:
		// its payload is returned in place.
		direct := (r.op == WSText || r.op == WSBinary) && r.fin && !r.masked && r.pos == 0 && int64(n) == r.left
		if !direct {
			r.take(chunk)
		}
		i += n
		r.left -= int64(n)
		if r.left > 0 {
			return WSMessage{}, len(in), nil
		}
		r.inFrame = false
		switch r.op {
		case WSClose, WSPing, WSPong:
			m = WSMessage{Op: r.op, Payload: r.ctl[:r.ctlN]}
			if r.op == WSClose {
				if err := checkClose(m.Payload); err != nil {
					r.err = err
					return WSMessage{}, i, err
				}
			}
			return m, i, nil
		}
		if !r.fin {
			continue
		}
		m = WSMessage{Op: r.msgOp, Payload: r.buf}
		if direct {
			m.Payload = chunk
		}
		r.msgOp, r.msgLen = 0, 0
		if cap(r.buf) > maxKeptBuffer {
			r.buf = nil // the payload stays valid; the next message starts small
		} else {
			r.buf = r.buf[:0]
		}
		if m.Op == WSText && !utf8.Valid(m.Payload) {
			r.err = ErrWSBadUTF8
			return WSMessage{}, i, r.err
		}
		return m, i, nil
	}
	return WSMessage{}, len(in), nil
}

// maxKeptBuffer is the largest message buffer a reader keeps for the next
// message; a larger one (a long message) goes with its message.
const maxKeptBuffer = 64 << 10

// gatherHead takes header bytes from in until the frame header is
// complete (then checks it and sets up the frame) and returns how many it
// took. On a bad header r.err is set.
func (r *WSReader) gatherHead(in []byte) int {
	i := 0
	for {
		need := 2
		if r.headN >= 2 {
			need = wsHeaderLen(r.head[0], r.head[1])
		}
		if r.headN == need {
			r.err = r.startFrame()
			return i
		}
		if i == len(in) {
			return i
		}
		c := copy(r.head[r.headN:need], in[i:])
		r.headN += c
		i += c
	}
}

// wsHeaderLen is the length of a frame header from its first two bytes.
func wsHeaderLen(b0, b1 byte) int {
	n := 2
	switch b1 & 0x7f {
	case 126:
		n += 2
	case 127:
		n += 8
	}
	if b1&0x80 != 0 {
		n += 4
	}
	return n
}

// startFrame checks the complete header in r.head and prepares for its
// payload.
func (r *WSReader) startFrame() error {
	h := r.head[:r.headN]
	r.headN = 0
	b0, b1 := h[0], h[1]
	fin, op, masked := b0&0x80 != 0, b0&0x0f, b1&0x80 != 0
	if b0&0x70 != 0 {
		return fmt.Errorf("%w: reserved bits set (no extension was negotiated)", ErrWSProtocol)
	}
	var length int64
	p := 2
	switch l := b1 & 0x7f; l {
	case 126:
		length = int64(binary.BigEndian.Uint16(h[2:]))
		p += 2
	case 127:
		u := binary.BigEndian.Uint64(h[2:])
		if u>>63 != 0 {
			return fmt.Errorf("%w: payload length with its most significant bit set", ErrWSProtocol)
		}
		length = int64(u)
		p += 8
	default:
		length = int64(l)
	}
	switch {
	case masked != r.Masked && r.Masked:
		return fmt.Errorf("%w: unmasked frame from the client", ErrWSProtocol)
	case masked != r.Masked:
		return fmt.Errorf("%w: masked frame from the server", ErrWSProtocol)
	}
	switch op {
	case WSClose, WSPing, WSPong:
		if !fin {
			return fmt.Errorf("%w: fragmented control frame (opcode 0x%x)", ErrWSProtocol, op)
		}
		if length > MaxWSControlPayload {
			return fmt.Errorf("%w: control frame (opcode 0x%x) with a payload of %d bytes, more than %d",
				ErrWSProtocol, op, length, MaxWSControlPayload)
		}
		r.ctlN = 0
	case WSContinuation:
		if r.msgOp == 0 {
			return fmt.Errorf("%w: continuation frame without a message to continue", ErrWSProtocol)
		}
	case WSText, WSBinary:
		if r.msgOp != 0 {
			return fmt.Errorf("%w: new data frame inside a fragmented message", ErrWSProtocol)
		}
		r.msgOp = op
	default:
		return fmt.Errorf("%w: unknown opcode 0x%x", ErrWSProtocol, op)
	}
	if op < WSClose {
		if limit := r.limit(); length > int64(limit-r.msgLen) {
			return fmt.Errorf("%w: more than %d bytes", ErrWSTooLarge, limit)
		}
		r.msgLen += int(length)
	}
	r.fin, r.op, r.masked, r.left, r.pos = fin, op, masked, length, 0
	if masked {
		copy(r.key[:], h[p:p+4])
	}
	r.inFrame = true
	return nil
}

// limit is the bound on a data message.
func (r *WSReader) limit() int {
	if r.MaxMessage > 0 {
		return r.MaxMessage
	}
	return MaxWSMessageBytes
}

// take copies payload bytes of the current frame, unmasked, where they
// belong: the control payload or the message buffer.
func (r *WSReader) take(chunk []byte) {
	var dst []byte
	if r.op >= WSClose {
		dst = r.ctl[r.ctlN : r.ctlN+len(chunk)]
		r.ctlN += len(chunk)
		copy(dst, chunk)
	} else {
		at := len(r.buf)
		r.buf = append(r.buf, chunk...)
		dst = r.buf[at:]
	}
	if r.masked {
		for j := range dst {
			dst[j] ^= r.key[(r.pos+j)&3]
		}
	}
	r.pos += len(chunk)
}

// checkClose checks a close frame's payload: empty, or a code that may be
// sent and a UTF-8 reason.
func checkClose(p []byte) error {
	switch {
	case len(p) == 0:
		return nil
	case len(p) == 1:
		return fmt.Errorf("%w: close frame with a 1-byte payload", ErrWSProtocol)
	}
	if code := int(binary.BigEndian.Uint16(p)); !validCloseCode(code) {
		return fmt.Errorf("%w: close code %d may not be sent", ErrWSProtocol, code)
	}
	if !utf8.Valid(p[2:]) {
		return fmt.Errorf("%w (close reason)", ErrWSBadUTF8)
	}
	return nil
}

// validCloseCode reports whether an endpoint may send code (RFC 6455
// §7.4: 1000-1003, 1007-1014, and 3000-4999 for applications).
func validCloseCode(code int) bool {
	switch {
	case code >= 1000 && code <= 1003, code >= 1007 && code <= 1014:
		return true
	}
	return code >= 3000 && code <= 4999
}

// ParseWSClose returns the status code and reason of a close frame's
// payload as WSReader checked it: WSCloseNoStatus and "" for an empty one.
func ParseWSClose(p []byte) (code int, reason string) {
	if len(p) < 2 {
		return WSCloseNoStatus, ""
	}
	return int(binary.BigEndian.Uint16(p)), string(p[2:])
}

// AppendWSHeader appends the header of a final (FIN) frame of opcode op
// whose payload has n bytes; with key non-nil the frame is masked with it
// (the caller masks the payload: MaskWS). Server frames go unmasked.
func AppendWSHeader(dst []byte, op byte, n int, key *[4]byte) []byte {
	var maskBit byte
	if key != nil {
		maskBit = 0x80
	}
	dst = append(dst, 0x80|op)
	switch {
	case n < 126:
		dst = append(dst, maskBit|byte(n))
	case n <= 0xffff:
		dst = append(dst, maskBit|126)
		dst = binary.BigEndian.AppendUint16(dst, uint16(n))
	default:
		dst = append(dst, maskBit|127)
		dst = binary.BigEndian.AppendUint64(dst, uint64(n))
	}
	if key != nil {
		dst = append(dst, key[:]...)
	}
	return dst
}

// MaskWS masks (or unmasks) p in place with key, p starting at position 0
// of the frame's payload.
func MaskWS(p []byte, key [4]byte) {
	for i := range p {
		p[i] ^= key[i&3]
	}
}

// AppendWSFrame appends a whole final frame of opcode op carrying payload,
// masked with *key when key is non-nil.
func AppendWSFrame(dst []byte, op byte, payload []byte, key *[4]byte) []byte {
	dst = AppendWSHeader(dst, op, len(payload), key)
	at := len(dst)
	dst = append(dst, payload...)
	if key != nil {
		MaskWS(dst[at:], *key)
	}
	return dst
}

// AppendWSClose appends a close frame with status code and reason (cut at
// a UTF-8 boundary to fit a control frame), masked with *key when key is
// non-nil.
func AppendWSClose(dst []byte, code int, reason string, key *[4]byte) []byte {
	var p [MaxWSControlPayload]byte
	binary.BigEndian.PutUint16(p[:], uint16(code))
	n := 2 + copy(p[2:], reason)
	for n > 2 && !utf8.Valid(p[2:n]) {
		n--
	}
	return AppendWSFrame(dst, WSClose, p[:n], key)
}

// wsGUID is the fixed string of RFC 6455 §1.3 that Sec-WebSocket-Accept
// hashes after the key.
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// WSAccept returns the Sec-WebSocket-Accept value that answers the
// Sec-WebSocket-Key key: base64(SHA-1(key + the RFC's GUID)).
func WSAccept(key string) string {
	h := sha1.Sum([]byte(key + wsGUID))
	return base64.StdEncoding.EncodeToString(h[:])
}

// ValidWSKey reports whether key is a valid Sec-WebSocket-Key: the base64
// encoding of 16 bytes.
func ValidWSKey(key string) bool {
	b, err := base64.StdEncoding.DecodeString(key)
	return err == nil && len(b) == 16
}

// HasFieldToken reports whether a field named name (any case; every such
// field counts) lists token (any case) in its comma-separated value:
// "Connection: keep-alive, Upgrade" has the token "upgrade".
func HasFieldToken(fields []Field, name, token string) bool {
	for _, f := range fields {
		if asciiEqualFold(f.Name, name) && hasToken(f.Value, token) {
			return true
		}
	}
	return false
}

// WSCloseText describes a close frame's payload for an error message:
// "close 1001" or `close 1011 "reason"` (the reason quoted as Go quotes
// it, at most 64 bytes).
func WSCloseText(p []byte) string {
	code, reason := ParseWSClose(p)
	if code == WSCloseNoStatus {
		return "close without a status code"
	}
	if reason == "" {
		return fmt.Sprintf("close %d", code)
	}
	if len(reason) > 64 {
		reason = strings.ToValidUTF8(reason[:64], "") + "..."
	}
	return fmt.Sprintf("close %d %q", code, reason)
}
