package tlsrecord

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"hash"

	"golang.org/x/crypto/chacha20poly1305"
)

// suite is what a TLS 1.3 cipher suite takes to protect records.
type suite struct {
	id     uint16
	keyLen int
	hash   func() hash.Hash
	aead   func(key []byte) (cipher.AEAD, error)
}

func aesGCM(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// suites are the TLS 1.3 cipher suites (RFC 8446 B.4) the package has.
var suites = []suite{
	{tls.TLS_AES_128_GCM_SHA256, 16, sha256.New, aesGCM},
	{tls.TLS_AES_256_GCM_SHA384, 32, sha512.New384, aesGCM},
	{tls.TLS_CHACHA20_POLY1305_SHA256, chacha20poly1305.KeySize, sha256.New, chacha20poly1305.New},
}

func suiteByID(id uint16) *suite {
	for i := range suites {
		if suites[i].id == id {
			return &suites[i]
		}
	}
	return nil
}

// expandLabel is HKDF-Expand-Label (RFC 8446 section 7.1) with an empty
// context.
func expandLabel(h func() hash.Hash, secret []byte, label string, n int) ([]byte, error) {
	full := "tls13 " + label
	info := make([]byte, 0, 4+len(full))
	info = binary.BigEndian.AppendUint16(info, uint16(n))
	info = append(info, byte(len(full)))
	info = append(info, full...)
	info = append(info, 0) // context: empty
	return hkdf.Expand(h, secret, string(info), n)
}

// half is one direction of a connection: its traffic secret, the AEAD and
// IV derived from it, and the sequence number of its next record.
type half struct {
	s      *suite
	secret []byte
	aead   cipher.AEAD
	iv     [12]byte
	seq    uint64
	nonce  [12]byte
}

// setSecret installs a traffic secret and resets the sequence number.
func (h *half) setSecret(s *suite, secret []byte) error {
	key, err := expandLabel(s.hash, secret, "key", s.keyLen)
	if err != nil {
		return err
	}
	iv, err := expandLabel(s.hash, secret, "iv", 12)
	if err != nil {
		return err
	}
	a, err := s.aead(key)
	if err != nil {
		return err
	}
	h.s, h.secret, h.aead, h.seq = s, secret, a, 0
	copy(h.iv[:], iv)
	return nil
}

// update moves to the next traffic secret (a KeyUpdate, RFC 8446 7.2).
func (h *half) update() error {
	next, err := expandLabel(h.s.hash, h.secret, "traffic upd", h.s.hash().Size())
	if err != nil {
		return err
	}
	return h.setSecret(h.s, next)
}

// nextNonce is the nonce of the record numbered h.seq (RFC 8446 5.3), and
// moves the sequence on.
func (h *half) nextNonce() []byte {
	h.nonce = h.iv
	for i := range 8 {
		h.nonce[4+i] ^= byte(h.seq >> (56 - 8*i))
	}
	h.seq++
	return h.nonce[:]
}

// Unsupported returns why a connection in state cs cannot be carried by
// the record layer, "" when it can.
func Unsupported(cs tls.ConnectionState) string {
	if cs.Version != tls.VersionTLS13 {
		return fmt.Sprintf("%s negotiated, the loops' record layer speaks TLS 1.3", tls.VersionName(cs.Version))
	}
	if suiteByID(cs.CipherSuite) == nil {
		return "cipher suite " + tls.CipherSuiteName(cs.CipherSuite) + " is not in the loops' record layer"
	}
	return ""
}
