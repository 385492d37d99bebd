// Package tlsrecord is a TLS 1.3 record layer that an event loop drives:
// after a crypto/tls handshake (done on a goroutine, off the per-token
// path), a Conn seals the application data the loop writes and opens the
// records the loop reads, in buffers the loop owns, with no goroutine and
// no lock.
//
// Client runs the handshake over a net.Conn whose reads never go past the
// end of the current record (record headers are plaintext), so that
// crypto/tls has consumed exactly the records it processed and holds
// nothing that the socket has not yet handed over: the application-data
// sequence numbers start at 0 on both sides. It takes the connection's
// traffic secrets from the key log crypto/tls writes
// (tls.Config.KeyLogWriter: CLIENT_TRAFFIC_SECRET_0,
// SERVER_TRAFFIC_SECRET_0) and derives the keys with HKDF-Expand-Label
// (RFC 8446 section 7). Only TLS 1.3 with TLS_AES_128_GCM_SHA256,
// TLS_AES_256_GCM_SHA384 or TLS_CHACHA20_POLY1305_SHA256 is offloaded;
// anything else (TLS 1.2 above all) is left to the tls.Conn, and Client
// says why.
//
// The reader skips post-handshake handshake messages (NewSessionTicket),
// follows a KeyUpdate (and, when the peer asks for it, sends its own before
// the next application data, as RFC 8446 section 4.6.3 requires), takes a
// close_notify alert as the end of the stream (io.EOF) and any other alert,
// a record that fails authentication, a malformed or oversized record, as
// a named error.
package tlsrecord
