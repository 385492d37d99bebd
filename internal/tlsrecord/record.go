package tlsrecord

import (
	"crypto/tls"
	"errors"
	"fmt"
)

// Record layer constants (RFC 8446 section 5).
const (
	// HeaderLen is the length of a record header: type, legacy version,
	// length.
	HeaderLen = 5
	// MaxPlaintext is the most application data one record carries.
	MaxPlaintext = 1 << 14
	// MaxCiphertext is the largest record body a TLS 1.3 peer may send
	// (2^14 + 256).
	MaxCiphertext = MaxPlaintext + 256

	typeChangeCipherSpec = 20
	typeAlert            = 21
	typeHandshake        = 22
	typeApplicationData  = 23

	// tagLen is the AEAD tag length of every TLS 1.3 suite.
	tagLen = 16

	// handshake message types after the handshake
	msgNewSessionTicket = 4
	msgKeyUpdate        = 24

	// maxHandshakeMsg bounds a post-handshake message (a NewSessionTicket
	// is a few hundred bytes).
	maxHandshakeMsg = 1 << 16

	alertCloseNotify = 0
)

// The reader's named errors.
var (
	// ErrBadRecordMAC: a record failed authentication (tampered, or keys
	// out of step).
	ErrBadRecordMAC = errors.New("tls record: authentication failed (bad record MAC)")
	// ErrRecordOverflow: a record header announces more than MaxCiphertext.
	ErrRecordOverflow = errors.New("tls record: record longer than 2^14+256 bytes")
	// ErrShortRecord: a protected record too short to hold a tag and a
	// content type.
	ErrShortRecord = errors.New("tls record: record too short")
	// ErrRecordType: an outer record type other than application_data
	// after the handshake.
	ErrRecordType = errors.New("tls record: unexpected record type after the handshake")
	// ErrRecordVersion: a record header whose legacy version is not 0x0303.
	ErrRecordVersion = errors.New("tls record: bad record version")
	// ErrTruncated: the stream ended inside a record.
	ErrTruncated = errors.New("tls record: stream ended inside a record")
	// ErrHandshakeMessage: a post-handshake message other than
	// NewSessionTicket and KeyUpdate, or a malformed one.
	ErrHandshakeMessage = errors.New("tls record: unexpected post-handshake message")
	// ErrAfterClose: data after the peer's close_notify.
	ErrAfterClose = errors.New("tls record: data after close_notify")
	// ErrNoContentType: a record whose plaintext is all padding.
	ErrNoContentType = errors.New("tls record: record without a content type")
)

// AlertError is a fatal alert the peer sent: the tls.AlertError it names.
type AlertError struct{ Alert tls.AlertError }

func (e *AlertError) Error() string {
	return fmt.Sprintf("tls record: the peer sent the alert %q", e.Alert.Error())
}

// Unwrap returns the tls.AlertError.
func (e *AlertError) Unwrap() error { return e.Alert }

// Header is a parsed record header.
type Header struct {
	Type    uint8
	Version uint16
	Length  int // length of the body that follows
}

// ParseHeader parses the record header at the start of p, and checks what
// the protected records of TLS 1.3 allow: application_data (or, when
// handshake is true, any type), version 0x0303, length at most
// MaxCiphertext. It returns ok false when p holds less than HeaderLen
// bytes.
func ParseHeader(p []byte) (h Header, ok bool, err error) {
	if len(p) < HeaderLen {
		return Header{}, false, nil
	}
	h = Header{Type: p[0], Version: uint16(p[1])<<8 | uint16(p[2]), Length: int(p[3])<<8 | int(p[4])}
	switch {
	case h.Type != typeApplicationData:
		return h, true, fmt.Errorf("%w (type %d)", ErrRecordType, h.Type)
	case h.Version != tls.VersionTLS12:
		return h, true, fmt.Errorf("%w (0x%04x)", ErrRecordVersion, h.Version)
	case h.Length > MaxCiphertext:
		return h, true, fmt.Errorf("%w (%d)", ErrRecordOverflow, h.Length)
	case h.Length < tagLen+1:
		return h, true, fmt.Errorf("%w (%d bytes)", ErrShortRecord, h.Length)
	}
	return h, true, nil
}
