package server

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/sse-latency/sse-latency/internal/tlsrecord"
)

// recordConn is an HTTP/1.1 or HTTP/2 connection over TLS 1.3 after its crypto/tls
// handshake (tlsrecord.Server), carried on by the record layer over the
// TCP socket: so that it has a file descriptor, and the shard writes its
// tokens as it writes plain ones — sealed (tlsrecord.Conn.Seal) right after
// their pi_ts and written with the same non-blocking write(2), with no
// goroutine per token (h1conn.tryWrite, h2Response.tryWrite). Reads, by
// the connection's goroutine, open the records (Open).
//
// The two directions share the record layer's state (a peer's KeyUpdate,
// read by Open, asks for ours, which Seal puts before the next
// application data, in order with the tokens): mu guards it. An HTTP/1.1
// connection has one owner at a time (h1conn), so the lock is not
// contended but where a reader and a writer do overlap (waitUntil's
// watcher); on HTTP/2 the reader goroutine opens while writers seal, one
// at a time (h2conn's write lock, which also guards the write side's
// fields here).
type recordConn struct {
	net.Conn // the TCP connection

	mu sync.Mutex
	rl *tlsrecord.Conn // guarded by mu

	// Read side, owned by the reader.
	plain []byte // opened application data Read has not returned yet
	rerr  error  // the error that ended the read side, once plain is empty

	// Write side, owned by the writer (the connection's owner).
	wbuf   []byte // the records being written
	unsent []byte // sealed bytes a non-blocking write left (tryWrite): written first by the next Write
	broken bool   // a write failed or left the records cut: no close_notify at Close
}

// The interfaces a recordConn meets: a net.Conn with the socket's
// descriptor for the shard's direct writes.
var (
	_ net.Conn     = (*recordConn)(nil)
	_ syscall.Conn = (*recordConn)(nil)
)

// closeNotifyTimeout bounds the write of the close_notify alert at Close
// (crypto/tls's own bound).
const closeNotifyTimeout = 5 * time.Second

// recordReadBytes is how much one socket read of a recordConn takes: a
// request fits, with its records' overhead.
const recordReadBytes = 4 << 10

// recordReads holds the socket read buffers of recordConn.Read, taken for
// one read only: thousands of idle connections hold none.
var recordReads = sync.Pool{New: func() any { b := make([]byte, recordReadBytes); return &b }}

// serverTLS returns the configuration the server's TLS handshakes use:
// cfg with its ALPN protocols and without session tickets (crypto/tls
// sends them after the handshake, taking the first sequence numbers the
// record layer must start from).
func serverTLS(cfg *tls.Config, protos []string) *tls.Config {
	tc := cfg.Clone()
	tc.NextProtos = protos
	tc.SessionTicketsDisabled = true
	return tc
}

// handshakeTLS runs the TLS handshake of the accepted connection raw
// within Config.ReadHeaderTimeout and returns the connection to serve:
// a recordConn on TLS 1.3 with a suite the record layer has (HTTP/1.1 and
// HTTP/2), else the tls.Conn (TLS 1.2), which carries on as before. It
// returns nil when the handshake failed, raw being released. The returned
// connection takes raw's place among the open ones (Server.conns).
func (s *Server) handshakeTLS(raw net.Conn) (c net.Conn, h2 bool) {
	defer s.recoverPanic(raw)
	raw.SetDeadline(time.Now().Add(s.cfg.ReadHeaderTimeout))
	tc, rl, why, err := tlsrecord.Server(context.Background(), raw, s.cfg.TLS)
	if err != nil {
		s.logf("server: %s: TLS handshake: %v", describe(raw), err)
		s.release(raw)
		return nil, false
	}
	raw.SetDeadline(time.Time{})
	cs := tc.ConnectionState()
	h2 = cs.NegotiatedProtocol == "h2"
	switch {
	case rl != nil:
		c = &recordConn{Conn: raw, rl: rl}
	default:
		if b, ok := tc.NetConn().(*tlsrecord.BoundedConn); ok {
			b.Unbound() // crypto/tls carries on: reads need no bound now
		}
		c = tc
		if !h2 {
			s.tlsFallbacks.Add(1)
			s.logf("server: %s: TLS HTTP/1.1 on crypto/tls, tokens written by the connection's goroutine: %s", describe(raw), why)
		}
	}
	s.mu.Lock()
	if sock, ok := s.conns[raw]; ok {
		delete(s.conns, raw)
		s.conns[c] = sock
	}
	s.mu.Unlock()
	return c, h2
}

// SyscallConn is the TCP socket's: the shard writes sealed records on it
// (h1conn.tryWrite), the connection's goroutine waits on it for readability.
func (rc *recordConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := rc.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("the connection has no file descriptor")
	}
	return sc.SyscallConn()
}

// buffered reports whether Read has opened bytes to return without
// reading the socket.
func (rc *recordConn) buffered() bool { return len(rc.plain) > 0 }

// Read returns the application data of the records read from the socket:
// what an earlier read opened first, else one socket read at a time until
// a record completes. A bad record or an alert of the peer is an error
// (the connection is unusable after it); its close_notify, or the end of
// the socket on a record boundary, is io.EOF.
func (rc *recordConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for len(rc.plain) == 0 {
		if rc.rerr != nil {
			return 0, rc.rerr
		}
		bp := recordReads.Get().(*[]byte)
		n, err := rc.Conn.Read(*bp)
		if n > 0 {
			rc.mu.Lock()
			var oerr error
			rc.plain, oerr = rc.rl.Open(rc.plain[:0], (*bp)[:n])
			rc.mu.Unlock()
			rc.rerr = oerr
		}
		recordReads.Put(bp)
		if err != nil && rc.rerr == nil {
			if errors.Is(err, io.EOF) {
				rc.mu.Lock()
				err = rc.rl.AtEOF()
				rc.mu.Unlock()
			}
			if !isTimeout(err) {
				rc.rerr = err // after the data opened before it
			} else if len(rc.plain) == 0 {
				return 0, err // a deadline may be set again
			}
		}
	}
	n := copy(p, rc.plain)
	rc.plain = rc.plain[:copy(rc.plain, rc.plain[n:])]
	if len(rc.plain) == 0 && cap(rc.plain) > recordReadBytes {
		rc.plain = nil // a large body's buffer is not kept for the stream
	}
	return n, nil
}

// seal puts b into sealed records in rc.wbuf, after what the peer's
// KeyUpdate asks for.
func (rc *recordConn) seal(b []byte) []byte {
	rc.mu.Lock()
	rc.wbuf = rc.rl.Seal(rc.wbuf[:0], b)
	rc.mu.Unlock()
	return rc.wbuf
}

// Write writes b in records, blocking up to the write deadline, after the
// sealed bytes a non-blocking write left (with an empty b, it writes only
// those).
func (rc *recordConn) Write(b []byte) (int, error) {
	if len(rc.unsent) > 0 {
		n, err := rc.Conn.Write(rc.unsent)
		rc.unsent = rc.unsent[n:]
		if err != nil {
			rc.broken = true
			return 0, err
		}
		rc.unsent = nil
	}
	if len(b) == 0 {
		return 0, nil
	}
	if _, err := rc.Conn.Write(rc.seal(b)); err != nil {
		rc.broken = true
		return 0, err
	}
	rc.shrink()
	return len(b), nil
}

// waiting reports whether sealed bytes of an earlier non-blocking write
// wait in rc.unsent: a new one must wait for the Write that sends them.
func (rc *recordConn) waiting() bool { return len(rc.unsent) > 0 }

// wrote takes the result n, err of the non-blocking write of out, the
// records sealing b (h1conn.tryWrite), and returns it counted in b's
// bytes: len(b) once the records are sealed, with errAgain when the
// socket did not take them all — the rest waits in rc.unsent for the next
// Write: their sequence numbers are spent, so they go as they are, before
// anything sealed later.
func (rc *recordConn) wrote(b, out []byte, n int, err error) (int, error) {
	n = max(n, 0)
	switch {
	case n == len(out) && err == nil:
		rc.shrink()
		return len(b), nil
	case err == nil || errors.Is(err, errAgain):
		rc.unsent = append([]byte(nil), out[n:]...)
		return len(b), errAgain
	}
	rc.broken = true
	return 0, err
}

// shrink drops a write buffer that grew for a large write.
func (rc *recordConn) shrink() {
	if cap(rc.wbuf) > 2*recordReadBytes {
		rc.wbuf = nil
	}
}

// Close sends a close_notify, when the records written so far are whole,
// and closes the socket.
func (rc *recordConn) Close() error {
	rc.closeNotify()
	return rc.Conn.Close()
}

// CloseWrite sends a close_notify and shuts the socket's writing side (the
// lingering close after an error answer: h1conn.lingerClose).
func (rc *recordConn) CloseWrite() error {
	rc.closeNotify()
	cw, ok := rc.Conn.(interface{ CloseWrite() error })
	if !ok {
		return errors.New("the connection cannot close its writing side alone")
	}
	return cw.CloseWrite()
}

// closeNotify writes the close_notify alert once, unless a write failed
// or left its records cut (the peer could not open what follows).
func (rc *recordConn) closeNotify() {
	if rc.broken || len(rc.unsent) > 0 {
		return
	}
	rc.broken = true // once
	rc.mu.Lock()
	alert := rc.rl.SealAlert(nil, 0)
	rc.mu.Unlock()
	rc.Conn.SetWriteDeadline(time.Now().Add(closeNotifyTimeout))
	rc.Conn.Write(alert)
}
