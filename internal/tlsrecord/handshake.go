package tlsrecord

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"sync"
)

// BoundedConn is a net.Conn whose Read never returns bytes past the end of
// the current TLS record: it reads a record's header, then at most the
// rest of its body. A tls.Conn on it has, once its handshake is done,
// read exactly the records it processed.
type BoundedConn struct {
	net.Conn
	hdr  [HeaderLen]byte
	hdrN int  // bytes of hdr read
	left int  // body bytes of the current record not yet read
	free bool // Unbound: reads go straight to Conn
}

// Unbound makes the reads that follow go straight to the connection, for
// a tls.Conn that carries on after its handshake (TLS 1.2, HTTP/2): the
// bound is only needed up to the handshake's end, and costs a read per
// record header. It must not be called while a Read is in progress.
func (b *BoundedConn) Unbound() { b.free = true }

// Read reads at most to the end of the current record's header or body.
func (b *BoundedConn) Read(p []byte) (int, error) {
	if b.free {
		return b.Conn.Read(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if b.left > 0 {
		n, err := b.Conn.Read(p[:min(len(p), b.left)])
		b.left -= n
		return n, err
	}
	n, err := b.Conn.Read(b.hdr[b.hdrN:min(HeaderLen, b.hdrN+len(p))])
	copy(p, b.hdr[b.hdrN:b.hdrN+n])
	b.hdrN += n
	if b.hdrN == HeaderLen {
		b.hdrN, b.left = 0, int(b.hdr[3])<<8|int(b.hdr[4])
	}
	return n, err
}

// AtBoundary reports whether the reads so far ended on a record boundary.
func (b *BoundedConn) AtBoundary() bool { return b.hdrN == 0 && b.left == 0 }

// keyLog takes the traffic secrets crypto/tls logs for one connection.
type keyLog struct {
	mu             sync.Mutex
	client, server []byte
	next           io.Writer // the configuration's own KeyLogWriter, if any
}

func (k *keyLog) Write(line []byte) (int, error) {
	if k.next != nil {
		k.next.Write(line)
	}
	f := bytes.Fields(line)
	if len(f) != 3 {
		return len(line), nil
	}
	secret, err := hex.DecodeString(string(f[2]))
	if err != nil {
		return len(line), nil
	}
	k.mu.Lock()
	switch string(f[0]) {
	case "CLIENT_TRAFFIC_SECRET_0":
		k.client = secret
	case "SERVER_TRAFFIC_SECRET_0":
		k.server = secret
	}
	k.mu.Unlock()
	return len(line), nil
}

// errNoSecrets: crypto/tls logged no traffic secrets (it always does for
// TLS 1.3 when KeyLogWriter is set).
var errNoSecrets = errors.New("the handshake logged no traffic secrets")

// Client runs a TLS client handshake with cfg over raw, and returns the
// tls.Conn and, when the connection can go on in the record layer (TLS 1.3,
// a suite the package has), its Conn; when it cannot, the Conn is nil and
// why says so, and the tls.Conn carries the connection. A failed handshake
// is err. cfg is not changed (a clone takes the key log).
//
// Once Client has returned a Conn, the tls.Conn must not be used again
// (nor closed: that would write a close_notify out of sequence): the
// caller reads and writes raw itself.
func Client(ctx context.Context, raw net.Conn, cfg *tls.Config) (tc *tls.Conn, rl *Conn, why string, err error) {
	return client(ctx, raw, cfg, gate())
}

// client is Client with the handshake gate g.
func client(ctx context.Context, raw net.Conn, cfg *tls.Config, g *handshakeGate) (tc *tls.Conn, rl *Conn, why string, err error) {
	cfg = cfg.Clone()
	kl := &keyLog{next: cfg.KeyLogWriter}
	cfg.KeyLogWriter = kl
	gc := newGatedConn(raw, g)
	b := &BoundedConn{Conn: gc}
	tc = tls.Client(b, cfg)
	if err := handshake(ctx, gc, tc.HandshakeContext); err != nil {
		return nil, nil, "", err
	}
	rl, why = fromState(tc.ConnectionState(), b, kl, false)
	return tc, rl, why, nil
}

// Server is Client's counterpart for a tls.Server handshake; cfg should
// set SessionTicketsDisabled, else the tickets crypto/tls sends after the
// handshake take the first sequence numbers that the Conn then reuses.
// Both hold a place in the process's handshake gate while they compute
// (see handshakeGate).
func Server(ctx context.Context, raw net.Conn, cfg *tls.Config) (tc *tls.Conn, rl *Conn, why string, err error) {
	cfg = cfg.Clone()
	kl := &keyLog{next: cfg.KeyLogWriter}
	cfg.KeyLogWriter = kl
	gc := newGatedConn(raw, gate())
	b := &BoundedConn{Conn: gc}
	tc = tls.Server(b, cfg)
	if err := handshake(ctx, gc, tc.HandshakeContext); err != nil {
		return nil, nil, "", err
	}
	if !cfg.SessionTicketsDisabled {
		return tc, nil, "session tickets are enabled", nil
	}
	rl, why = fromState(tc.ConnectionState(), b, kl, true)
	return tc, rl, why, nil
}

// fromState builds the record layer of a finished handshake, or says why
// it cannot.
func fromState(cs tls.ConnectionState, b *BoundedConn, kl *keyLog, server bool) (*Conn, string) {
	if why := Unsupported(cs); why != "" {
		return nil, why
	}
	if !b.AtBoundary() {
		return nil, "the handshake ended inside a record"
	}
	kl.mu.Lock()
	in, out := kl.server, kl.client
	kl.mu.Unlock()
	if server {
		in, out = out, in
	}
	if in == nil || out == nil {
		return nil, errNoSecrets.Error()
	}
	rl, err := New(cs.CipherSuite, in, out)
	if err != nil {
		return nil, err.Error()
	}
	return rl, ""
}
