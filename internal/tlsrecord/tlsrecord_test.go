package tlsrecord

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	certOnce sync.Once
	testCert tls.Certificate
)

// cert is a self-signed certificate for 127.0.0.1, made once.
func cert(t testing.TB) tls.Certificate {
	t.Helper()
	certOnce.Do(func() {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(1),
			Subject:      pkix.Name{CommonName: "tlsrecord test"},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(time.Hour),
			IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			panic(err)
		}
		testCert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	})
	return testCert
}

// pair is a client record layer on one end of a loopback TCP connection
// and a crypto/tls server on the other.
type pair struct {
	raw    net.Conn  // the client's socket, read and written by the test
	rl     *Conn     // the client's record layer
	srv    *tls.Conn // the server
	client *tls.Conn // the client's tls.Conn (not to be used after the handshake)
	secret [2][]byte // the client's and the server's traffic secrets
	suite  uint16
}

// newPair hands a bound listener to a crypto/tls server with cfg and
// connects a record-layer client to it.
func newPair(t *testing.T, srvCfg *tls.Config, cliCfg *tls.Config) *pair {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	srvCfg.Certificates = []tls.Certificate{cert(t)}
	accepted := make(chan *tls.Conn, 1)
	hsErr := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			hsErr <- err
			return
		}
		tc := tls.Server(c, srvCfg)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			hsErr <- err
			return
		}
		accepted <- tc
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	raw.SetDeadline(time.Now().Add(10 * time.Second))
	if cliCfg == nil {
		// A session cache: crypto/tls servers send tickets only to
		// clients that can use them.
		cliCfg = &tls.Config{InsecureSkipVerify: true, ClientSessionCache: tls.NewLRUClientSessionCache(1)}
	}
	var kl keyLog
	cliCfg.KeyLogWriter = &kl
	tc, rl, why, err := Client(context.Background(), raw, cliCfg)
	if err != nil {
		t.Fatalf("Client handshake: %v", err)
	}
	p := &pair{raw: raw, rl: rl, client: tc, secret: [2][]byte{kl.client, kl.server}, suite: tc.ConnectionState().CipherSuite}
	select {
	case p.srv = <-accepted:
	case err := <-hsErr:
		t.Fatalf("server handshake: %v", err)
	}
	t.Cleanup(func() { p.srv.Close() })
	p.srv.SetDeadline(time.Now().Add(10 * time.Second))
	if rl == nil {
		t.Logf("not offloaded: %s", why)
	}
	return p
}

// mirror is a record layer with the server's keys, at sequence 0: it
// hand-seals what the server could send (when the server sent nothing
// under its application keys) and opens what the client sends.
func (p *pair) mirror(t *testing.T) *Conn {
	t.Helper()
	m, err := New(p.suite, p.secret[0], p.secret[1])
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// readUntil reads the client's socket, opening what comes, until the
// plaintext holds want bytes or Open fails; chunk bounds each read (to
// split records across reads).
func (p *pair) readUntil(t *testing.T, want, chunk int) ([]byte, error) {
	t.Helper()
	var pt []byte
	buf := make([]byte, chunk)
	for len(pt) < want {
		n, err := p.raw.Read(buf)
		if n > 0 {
			var oerr error
			if pt, oerr = p.rl.Open(pt, buf[:n]); oerr != nil {
				return pt, oerr
			}
		}
		if err == io.EOF {
			return pt, p.rl.AtEOF()
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
	}
	return pt, nil
}

// readAll reads the client's socket until Open or the stream ends it.
func (p *pair) readAll(t *testing.T) ([]byte, error) {
	return p.readUntil(t, 1<<30, 4096)
}

func serverWrites(t *testing.T, srv *tls.Conn, msgs ...string) {
	t.Helper()
	for _, m := range msgs {
		if _, err := srv.Write([]byte(m)); err != nil {
			t.Errorf("server write: %v", err)
		}
	}
}

// TestAgainstCryptoTLS drives the record layer against a crypto/tls server
// on loopback: records the server writes are opened by ours, records ours
// seals are read by the server.
func TestAgainstCryptoTLS(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 3000) // 48000 bytes: 3 records
	tests := []struct {
		name  string
		cfg   func() *tls.Config
		chunk int // bytes per socket read on the client
		run   func(t *testing.T, p *pair)
	}{
		{"server data, session tickets skipped", func() *tls.Config { return &tls.Config{} }, 4096, func(t *testing.T, p *pair) {
			serverWrites(t, p.srv, "hello ", "world", big)
			want := "hello world" + big
			got, err := p.readUntil(t, len(want), 4096)
			if err != nil || string(got) != want {
				t.Fatalf("Open = %d bytes, %v; want the server's %d bytes", len(got), err, len(want))
			}
			if p.rl.Tickets() == 0 {
				t.Errorf("Tickets() = 0: crypto/tls sends a NewSessionTicket after the handshake")
			}
		}},
		{"records split across reads of 7 bytes", func() *tls.Config { return &tls.Config{} }, 7, func(t *testing.T, p *pair) {
			serverWrites(t, p.srv, "a", "bc", "def")
			got, err := p.readUntil(t, 6, 7)
			if err != nil || string(got) != "abcdef" {
				t.Fatalf("Open = %q, %v; want \"abcdef\"", got, err)
			}
		}},
		{"sealed by us, read by crypto/tls", func() *tls.Config { return &tls.Config{} }, 4096, func(t *testing.T, p *pair) {
			out := p.rl.Seal(nil, []byte("GET / HTTP/1.1\r\n\r\n"))
			out = p.rl.Seal(out, []byte(big))
			if _, err := p.raw.Write(out); err != nil {
				t.Fatal(err)
			}
			want := "GET / HTTP/1.1\r\n\r\n" + big
			got := make([]byte, len(want))
			if _, err := io.ReadFull(p.srv, got); err != nil || string(got) != want {
				t.Fatalf("server read %d bytes, %v; want our %d", len(got), err, len(want))
			}
		}},
		{"close_notify is EOF", func() *tls.Config { return &tls.Config{} }, 4096, func(t *testing.T, p *pair) {
			serverWrites(t, p.srv, "last")
			p.srv.CloseWrite()
			got, err := p.readAll(t)
			if !errors.Is(err, io.EOF) || string(got) != "last" {
				t.Fatalf("Open = %q, %v; want \"last\", io.EOF", got, err)
			}
			if !p.rl.Closed() {
				t.Error("Closed() = false after close_notify")
			}
		}},
		{"we ask for a KeyUpdate, crypto/tls updates", func() *tls.Config { return &tls.Config{} }, 4096, func(t *testing.T, p *pair) {
			out := p.rl.SealKeyUpdate(nil, true)
			out = p.rl.Seal(out, []byte("ping"))
			if _, err := p.raw.Write(out); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 4)
			if _, err := io.ReadFull(p.srv, got); err != nil || string(got) != "ping" {
				t.Fatalf("server read %q, %v; want \"ping\" under the updated key", got, err)
			}
			serverWrites(t, p.srv, "pong") // after its own KeyUpdate, which crypto/tls sends when asked
			pt, err := p.readUntil(t, 4, 4096)
			if err != nil || string(pt) != "pong" {
				t.Fatalf("Open = %q, %v; want \"pong\"", pt, err)
			}
			if p.rl.KeyUpdates() != 1 {
				t.Errorf("KeyUpdates() = %d, want 1 (crypto/tls's answer)", p.rl.KeyUpdates())
			}
		}},
		{"hand-sealed KeyUpdate asks for ours", func() *tls.Config { return &tls.Config{SessionTicketsDisabled: true} }, 4096, func(t *testing.T, p *pair) {
			m := p.mirror(t)
			in := m.Seal(nil, []byte("one"))
			in = m.SealKeyUpdate(in, true)
			in = m.Seal(in, []byte("two"))
			pt, err := p.rl.Open(nil, in)
			if err != nil || string(pt) != "onetwo" || p.rl.KeyUpdates() != 1 {
				t.Fatalf("Open = %q, %v, %d updates; want \"onetwo\", 1 update", pt, err, p.rl.KeyUpdates())
			}
			// Our next data goes after our own KeyUpdate, which
			// crypto/tls follows.
			if _, err := p.raw.Write(p.rl.Seal(nil, []byte("three"))); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 5)
			if _, err := io.ReadFull(p.srv, got); err != nil || string(got) != "three" {
				t.Fatalf("server read %q, %v; want \"three\"", got, err)
			}
		}},
		{"bad MAC", func() *tls.Config { return &tls.Config{SessionTicketsDisabled: true} }, 4096, func(t *testing.T, p *pair) {
			in := p.mirror(t).Seal(nil, []byte("tampered"))
			in[HeaderLen+2] ^= 1
			if _, err := p.rl.Open(nil, in); !errors.Is(err, ErrBadRecordMAC) {
				t.Fatalf("Open(a flipped bit) = %v, want ErrBadRecordMAC", err)
			}
		}},
		{"truncated record", func() *tls.Config { return &tls.Config{SessionTicketsDisabled: true} }, 4096, func(t *testing.T, p *pair) {
			in := p.mirror(t).Seal(nil, []byte("cut short"))
			if pt, err := p.rl.Open(nil, in[:len(in)-1]); err != nil || len(pt) != 0 {
				t.Fatalf("Open(all but the last byte) = %q, %v; want nothing yet", pt, err)
			}
			if err := p.rl.AtEOF(); !errors.Is(err, ErrTruncated) {
				t.Fatalf("AtEOF() = %v, want ErrTruncated", err)
			}
		}},
		{"oversized record", func() *tls.Config { return &tls.Config{SessionTicketsDisabled: true} }, 4096, func(t *testing.T, p *pair) {
			n := MaxCiphertext + 1
			hdr := []byte{typeApplicationData, 3, 3, byte(n >> 8), byte(n)}
			if _, err := p.rl.Open(nil, hdr); !errors.Is(err, ErrRecordOverflow) {
				t.Fatalf("Open(a header of 2^14+257 bytes) = %v, want ErrRecordOverflow", err)
			}
		}},
		{"fatal alert", func() *tls.Config { return &tls.Config{SessionTicketsDisabled: true} }, 4096, func(t *testing.T, p *pair) {
			in := p.mirror(t).SealAlert(nil, 80) // internal_error
			_, err := p.rl.Open(nil, in)
			var ae *AlertError
			if !errors.As(err, &ae) || ae.Alert != 80 {
				t.Fatalf("Open(an internal_error alert) = %v, want an AlertError of 80", err)
			}
		}},
		{"data after close_notify", func() *tls.Config { return &tls.Config{SessionTicketsDisabled: true} }, 4096, func(t *testing.T, p *pair) {
			m := p.mirror(t)
			in := m.SealAlert(nil, alertCloseNotify)
			in = m.Seal(in, []byte("late"))
			if _, err := p.rl.Open(nil, in); !errors.Is(err, ErrAfterClose) {
				t.Fatalf("Open(close_notify, data) = %v, want ErrAfterClose", err)
			}
		}},
		{"unexpected post-handshake message", func() *tls.Config { return &tls.Config{SessionTicketsDisabled: true} }, 4096, func(t *testing.T, p *pair) {
			m := p.mirror(t)
			in := m.seal(nil, typeHandshake, []byte{13, 0, 0, 1, 0}) // certificate_request
			if _, err := p.rl.Open(nil, in); !errors.Is(err, ErrHandshakeMessage) {
				t.Fatalf("Open(a CertificateRequest) = %v, want ErrHandshakeMessage", err)
			}
		}},
		{"plaintext record after the handshake", func() *tls.Config { return &tls.Config{SessionTicketsDisabled: true} }, 4096, func(t *testing.T, p *pair) {
			if _, err := p.rl.Open(nil, []byte{typeHandshake, 3, 3, 0, 1, 0}); !errors.Is(err, ErrRecordType) {
				t.Fatalf("Open(a plaintext handshake record) = %v, want ErrRecordType", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPair(t, tt.cfg(), nil)
			if p.rl == nil {
				t.Fatal("TLS 1.3 with crypto/tls's defaults was not offloaded")
			}
			tt.run(t, p)
		})
	}
}

// TestSuites: every TLS 1.3 suite crypto/tls negotiates (a client without
// AES hardware preference may still be offered ChaCha20 by the server's
// order, which crypto/tls decides; each suite is forced through New with
// the secrets of a real handshake is not possible, so the suites are
// checked by sealing and opening with each).
func TestSuites(t *testing.T) {
	for _, s := range suites {
		t.Run(tls.CipherSuiteName(s.id), func(t *testing.T) {
			a, b := bytes.Repeat([]byte{1}, s.hash().Size()), bytes.Repeat([]byte{2}, s.hash().Size())
			w, err := New(s.id, b, a)
			if err != nil {
				t.Fatal(err)
			}
			r, err := New(s.id, a, b)
			if err != nil {
				t.Fatal(err)
			}
			in := w.Seal(nil, []byte("x"))
			in = w.SealKeyUpdate(in, false)
			in = w.Seal(in, []byte("y"))
			if pt, err := r.Open(nil, in); err != nil || string(pt) != "xy" {
				t.Fatalf("Open = %q, %v; want \"xy\"", pt, err)
			}
		})
	}
	if _, err := New(tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, nil, nil); err == nil {
		t.Error("New(a TLS 1.2 suite) = nil error")
	}
}

// TestTLS12NotOffloaded: a server capped at TLS 1.2 leaves the connection
// to the tls.Conn, with the reason.
func TestTLS12NotOffloaded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		tc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert(t)}, MaxVersion: tls.VersionTLS12})
		tc.SetDeadline(time.Now().Add(10 * time.Second))
		tc.Write([]byte("hi"))
		tc.Close()
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(10 * time.Second))
	tc, rl, why, err := Client(context.Background(), raw, &tls.Config{InsecureSkipVerify: true})
	if err != nil || rl != nil || !strings.Contains(why, "TLS 1.2") {
		t.Fatalf("Client(TLS 1.2) = %v, %q, %v; want no record layer, a reason naming TLS 1.2", rl, why, err)
	}
	if b, err := io.ReadAll(tc); string(b) != "hi" {
		t.Fatalf("the tls.Conn read %q, %v; want \"hi\"", b, err)
	}
}

// TestBoundedConnUnbound checks that a BoundedConn reads a record's header
// alone, and after Unbound everything a read returns.
func TestBoundedConnUnbound(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	recs := []byte{23, 3, 3, 0, 2, 'h', 'i', 23, 3, 3, 0, 1, '!'}
	go a.Write(recs)
	bc := &BoundedConn{Conn: b}
	buf := make([]byte, 64)
	n, err := bc.Read(buf)
	if err != nil || n != HeaderLen {
		t.Fatalf("bounded Read = %d, %v; want the %d bytes of the header", n, err, HeaderLen)
	}
	bc.Unbound()
	n, err = bc.Read(buf) // net.Pipe: what is left of the one write
	if err != nil {
		t.Fatalf("Read after Unbound: %v", err)
	}
	if got := buf[:n]; string(got) != string(recs[HeaderLen:]) {
		t.Errorf("one read after Unbound got %q, want %q (past the record's end)", got, recs[HeaderLen:])
	}
}
