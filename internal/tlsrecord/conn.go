package tlsrecord

import (
	"crypto/tls"
	"fmt"
	"io"
	"slices"
)

// Conn is the record layer of one TLS 1.3 connection after its handshake:
// it opens the records read from the socket (in) and seals what is
// written to it (out). It does no I/O and is not safe for concurrent use:
// its event loop owns it.
type Conn struct {
	in, out half

	pending []byte // bytes of an incomplete record, kept from one Open to the next
	hs      []byte // an incomplete post-handshake message
	closed  bool   // the peer sent close_notify
	reply   bool   // the peer asked for a KeyUpdate: ours goes before the next data
	tickets int    // NewSessionTicket messages skipped
	updates int    // KeyUpdates followed
}

// New returns the record layer of a connection of the TLS 1.3 cipher
// suite id whose peer writes under the traffic secret inSecret and which
// writes under outSecret (for a client: SERVER_TRAFFIC_SECRET_0 and
// CLIENT_TRAFFIC_SECRET_0), both directions at sequence number 0.
func New(id uint16, inSecret, outSecret []byte) (*Conn, error) {
	s := suiteByID(id)
	if s == nil {
		return nil, fmt.Errorf("tls record: cipher suite %s is not a TLS 1.3 suite the package has", tls.CipherSuiteName(id))
	}
	c := &Conn{}
	if err := c.in.setSecret(s, inSecret); err != nil {
		return nil, err
	}
	if err := c.out.setSecret(s, outSecret); err != nil {
		return nil, err
	}
	return c, nil
}

// Tickets returns how many NewSessionTicket messages the reader skipped.
func (c *Conn) Tickets() int { return c.tickets }

// KeyUpdates returns how many KeyUpdates of the peer the reader followed.
func (c *Conn) KeyUpdates() int { return c.updates }

// Pending returns how many bytes of an incomplete record Open holds.
func (c *Conn) Pending() int { return len(c.pending) }

// Closed reports whether the peer sent close_notify.
func (c *Conn) Closed() bool { return c.closed }

// AtEOF returns the error of a stream that ends here (the socket read
// returned 0): io.EOF after close_notify or on a record boundary, else
// ErrTruncated.
func (c *Conn) AtEOF() error {
	if len(c.pending) > 0 || len(c.hs) > 0 {
		return ErrTruncated
	}
	return io.EOF
}

// Open takes the next bytes p read from the socket and appends to dst the
// application data of every record they complete; the bytes of a record
// not yet complete wait in the Conn for the next call. After the peer's
// close_notify it returns io.EOF (with the data before it appended); a
// bad record or an alert is an error, after which the Conn is unusable.
func (c *Conn) Open(dst, p []byte) ([]byte, error) {
	if c.closed {
		if len(p) > 0 {
			return dst, ErrAfterClose
		}
		return dst, io.EOF
	}
	if len(c.pending) > 0 {
		// Complete the kept record first, from as few of p's bytes as it
		// needs; the rest is opened in place.
		need := HeaderLen - len(c.pending)
		if need > 0 {
			k := min(need, len(p))
			c.pending = append(c.pending, p[:k]...)
			p = p[k:]
			if len(c.pending) < HeaderLen {
				return dst, nil
			}
		}
		h, _, err := ParseHeader(c.pending)
		if err != nil {
			return dst, err
		}
		k := min(HeaderLen+h.Length-len(c.pending), len(p))
		c.pending = append(c.pending, p[:k]...)
		p = p[k:]
		if len(c.pending) < HeaderLen+h.Length {
			return dst, nil
		}
		rec := c.pending
		c.pending = c.pending[:0]
		if dst, err = c.openRecord(dst, rec); err != nil || c.closed {
			return dst, c.tail(err, p)
		}
	}
	for len(p) > 0 {
		h, ok, err := ParseHeader(p)
		if err != nil {
			return dst, err
		}
		if !ok || len(p) < HeaderLen+h.Length {
			c.pending = append(c.pending[:0], p...)
			return dst, nil
		}
		if dst, err = c.openRecord(dst, p[:HeaderLen+h.Length]); err != nil || c.closed {
			return dst, c.tail(err, p[HeaderLen+h.Length:])
		}
		p = p[HeaderLen+h.Length:]
	}
	return dst, nil
}

// tail is Open's error once a record ended the stream or failed: err, or
// for a close_notify io.EOF, ErrAfterClose when bytes followed it.
func (c *Conn) tail(err error, rest []byte) error {
	switch {
	case err != nil:
		return err
	case len(rest) > 0:
		return ErrAfterClose
	}
	return io.EOF
}

// openRecord opens one whole record (header and body) and appends its
// application data to dst, or handles what else it carries.
func (c *Conn) openRecord(dst, rec []byte) ([]byte, error) {
	start := len(dst)
	out, err := c.in.aead.Open(dst, c.in.nextNonce(), rec[HeaderLen:], rec[:HeaderLen])
	if err != nil {
		return dst, ErrBadRecordMAC
	}
	// The inner plaintext is content || type || zeros.
	i := len(out) - 1
	for i >= start && out[i] == 0 {
		i--
	}
	if i < start {
		return dst, ErrNoContentType
	}
	typ, body := out[i], out[start:i]
	switch typ {
	case typeApplicationData:
		if len(c.hs) > 0 { // RFC 8446 5.1: handshake messages are not interleaved
			return dst, fmt.Errorf("%w (a fragment, then application data)", ErrHandshakeMessage)
		}
		return out[:i], nil
	case typeHandshake:
		if len(body) == 0 {
			return dst, fmt.Errorf("%w (an empty record)", ErrHandshakeMessage)
		}
		return dst, c.handshake(body)
	case typeAlert:
		if len(body) != 2 {
			return dst, fmt.Errorf("tls record: malformed alert (%d bytes)", len(body))
		}
		if body[1] == alertCloseNotify {
			c.closed = true
			return dst, nil
		}
		return dst, &AlertError{Alert: tls.AlertError(body[1])}
	}
	return dst, fmt.Errorf("%w (inner type %d)", ErrRecordType, typ)
}

// handshake takes the bytes of post-handshake messages: NewSessionTicket
// is skipped, KeyUpdate followed, anything else an error.
func (c *Conn) handshake(p []byte) error {
	if len(c.hs) > 0 {
		c.hs = append(c.hs, p...)
		p = c.hs
	}
	for len(p) >= 4 {
		n := int(p[1])<<16 | int(p[2])<<8 | int(p[3])
		if n > maxHandshakeMsg {
			return fmt.Errorf("%w (a message of %d bytes)", ErrHandshakeMessage, n)
		}
		if len(p) < 4+n {
			break
		}
		typ, body := p[0], p[4:4+n]
		p = p[4+n:]
		switch typ {
		case msgNewSessionTicket:
			c.tickets++
		case msgKeyUpdate:
			// RFC 8446 4.6.3: the key changes at the end of the record,
			// which must be the last of the message.
			if len(body) != 1 || body[0] > 1 || len(p) > 0 {
				return fmt.Errorf("%w (a malformed KeyUpdate)", ErrHandshakeMessage)
			}
			if err := c.in.update(); err != nil {
				return err
			}
			c.updates++
			c.reply = c.reply || body[0] == 1
		default:
			return fmt.Errorf("%w (type %d)", ErrHandshakeMessage, typ)
		}
	}
	c.hs = append(c.hs[:0], p...)
	return nil
}

// Seal appends to dst the records that carry p (application data, in
// records of at most MaxPlaintext bytes), preceded by a KeyUpdate when the
// peer asked for one.
func (c *Conn) Seal(dst, p []byte) []byte {
	if c.reply {
		c.reply = false
		dst = c.SealKeyUpdate(dst, false)
	}
	for len(p) > 0 {
		n := min(len(p), MaxPlaintext)
		dst = c.seal(dst, typeApplicationData, p[:n])
		p = p[n:]
	}
	return dst
}

// SealKeyUpdate appends a KeyUpdate record (asking the peer to update its
// keys too when request is true) to dst, and moves the writing side to
// its next traffic secret.
func (c *Conn) SealKeyUpdate(dst []byte, request bool) []byte {
	msg := []byte{msgKeyUpdate, 0, 0, 1, 0}
	if request {
		msg[4] = 1
	}
	dst = c.seal(dst, typeHandshake, msg)
	if err := c.out.update(); err != nil {
		panic("tlsrecord: " + err.Error()) // hkdf.Expand fails only for lengths past 255 hash sizes
	}
	return dst
}

// SealAlert appends an alert record (close_notify: 0) to dst.
func (c *Conn) SealAlert(dst []byte, desc uint8) []byte {
	level := byte(2)
	if desc == alertCloseNotify {
		level = 1
	}
	return c.seal(dst, typeAlert, []byte{level, desc})
}

// seal appends one record of type typ carrying p to dst.
func (c *Conn) seal(dst []byte, typ uint8, p []byte) []byte {
	n := len(p) + 1 + tagLen
	dst = slices.Grow(dst, HeaderLen+n) // the tag goes in place
	dst = append(dst, typeApplicationData, 3, 3, byte(n>>8), byte(n))
	hdr := len(dst) - HeaderLen
	start := len(dst)
	dst = append(dst, p...)
	dst = append(dst, typ)
	sealed := c.out.aead.Seal(dst[start:start], c.out.nextNonce(), dst[start:], dst[hdr:start])
	return dst[:start+len(sealed)]
}
