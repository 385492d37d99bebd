package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/server"
	"github.com/sse-latency/sse-latency/internal/tlsrecord"
)

// seen is what an in-process net/http server saw of each request.
type seen struct {
	mu      sync.Mutex
	protos  []string // r.Proto
	remotes []string // r.RemoteAddr: one per client connection
	auth    []string // Authorization, x-api-key
	sni     []string // ServerName of each TLS handshake
	ua      []string // User-Agent
}

func (s *seen) get() seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return seen{protos: append([]string(nil), s.protos...), remotes: append([]string(nil), s.remotes...),
		auth: append([]string(nil), s.auth...), sni: append([]string(nil), s.sni...), ua: append([]string(nil), s.ua...)}
}

// sseHandler streams a chat response of n tokens, flushing each event, and
// notes what it saw in s.
func sseHandler(n int, s *seen) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		s.mu.Lock()
		s.protos = append(s.protos, r.Proto)
		s.remotes = append(s.remotes, r.RemoteAddr)
		s.auth = append(s.auth, r.Header.Get("Authorization")+r.Header.Get("X-Api-Key"))
		s.ua = append(s.ua, r.Header.Get("User-Agent"))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		io.WriteString(w, chatRole)
		f.Flush()
		for i := range n {
			io.WriteString(w, chatTok(clock.Real.Now(), api.Token(i)))
			f.Flush()
			time.Sleep(time.Millisecond)
		}
		io.WriteString(w, chatFinish+done)
	}
}

// tlsServer starts an in-process HTTPS server (HTTP/2 too when h2) with
// httptest's self-signed certificate, for 127.0.0.1 and example.com; it
// notes the SNI of every handshake. It returns the server's address and a
// pool that trusts it.
func tlsServer(t *testing.T, h2 bool, n int, s *seen) (addr string, roots *x509.CertPool) {
	t.Helper()
	srv := httptest.NewUnstartedServer(sseHandler(n, s))
	srv.EnableHTTP2 = h2
	srv.TLS = &tls.Config{GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		s.mu.Lock()
		s.sni = append(s.sni, hello.ServerName)
		s.mu.Unlock()
		return nil, nil
	}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots = x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	return srv.Listener.Addr().String(), roots
}

// sessionRecs sends n requests with o through one session.
func sessionRecs(t *testing.T, o Options, n int) []*result.Request {
	t.Helper()
	o.Timeout = 10 * time.Second
	o.Tokens = -1
	s := New(o).NewSession()
	defer s.Close()
	var recs []*result.Request
	for i := range n {
		rec := &result.Request{Batch: "gw", Index: i}
		s.Do(context.Background(), rec)
		recs = append(recs, rec)
	}
	return recs
}

func TestTLS(t *testing.T) {
	const tokens = 5
	tests := []struct {
		name    string
		o       func(roots *x509.CertPool) Options
		wantSNI string
	}{
		{"ServerName set", func(roots *x509.CertPool) Options {
			return Options{TLS: &tls.Config{RootCAs: roots, ServerName: "example.com"}}
		}, "example.com"},
		{"ServerName from the Host header", func(roots *x509.CertPool) Options {
			return Options{TLS: &tls.Config{RootCAs: roots}, Host: "example.com:8443"}
		}, "example.com"},
		{"insecure, https scheme", func(*x509.CertPool) Options {
			return Options{TLS: &tls.Config{InsecureSkipVerify: true}, Scheme: "https", Host: "gw.example"}
		}, "gw.example"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s seen
			addr, roots := tlsServer(t, false, tokens, &s)
			o := tt.o(roots)
			o.Addr, o.ExpectTokens, o.KeepAlive = addr, tokens, true
			recs := sessionRecs(t, o, 2)
			for i, r := range recs {
				if !r.OK() || len(r.Tokens) != tokens || r.Proto != ProtoHTTP1 || r.Reused != (i > 0) || r.ConnID != 1 {
					t.Errorf("request %d: %q, %d tokens, proto %q, reused %v, conn %d; want ok, %d tokens, HTTP/1.1 on connection 1",
						i, r.Failure.Error(), len(r.Tokens), r.Proto, r.Reused, r.ConnID, tokens)
				}
			}
			if r := recs[0]; r.TLSDone == 0 || r.Connected == 0 || r.TLSDone < r.Connected || r.Sent < r.TLSDone {
				t.Errorf("connected %d, TLS done %d, sent %d: want all set, in that order", r.Connected, r.TLSDone, r.Sent)
			}
			if r := recs[1]; r.TLSDone != 0 || r.Connected != 0 {
				t.Errorf("the reused connection: connected %d, TLS done %d, want 0 (no such phase)", r.Connected, r.TLSDone)
			}
			if got := s.get(); len(got.sni) != 1 || got.sni[0] != tt.wantSNI {
				t.Errorf("SNI %q, want one handshake naming %q", got.sni, tt.wantSNI)
			}
		})
	}
}

func TestTLSFailures(t *testing.T) {
	var s seen
	addr, _ := tlsServer(t, false, 1, &s)
	recs := sessionRecs(t, Options{Addr: addr, TLS: &tls.Config{ServerName: "example.com"}}, 1)
	if got := recs[0].Failure.Error(); !strings.HasPrefix(got, "connect(): TLS handshake: tls: failed to verify certificate") {
		t.Errorf("an untrusted certificate: %q, want connect(): TLS handshake: tls: failed to verify certificate…", got)
	}
	if r := recs[0]; r.Connected == 0 || r.TLSDone != 0 || r.Sent != 0 {
		t.Errorf("connected %d, TLS done %d, sent %d: want connected only", r.Connected, r.TLSDone, r.Sent)
	}
}

// h2cServer starts an in-process server that speaks HTTP/1.1 and HTTP/2
// with prior knowledge on plain TCP.
func h2cServer(t *testing.T, n int, s *seen) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(sseHandler(n, s))
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = p
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

func TestHTTP2(t *testing.T) {
	const tokens = 20
	for _, tt := range []struct {
		name      string
		proto     string
		keepAlive bool
	}{
		{"h2", ProtoH2, true}, {"h2", ProtoH2, false}, {"h2c", ProtoH2C, true}, {"h2c", ProtoH2C, false},
	} {
		t.Run(tt.name+map[bool]string{true: " keep-alive", false: ""}[tt.keepAlive], func(t *testing.T) {
			var s seen
			o := Options{ExpectTokens: tokens, KeepAlive: tt.keepAlive, APIKey: "sk-h2", IncludeUsage: false}
			if tt.proto == ProtoH2 {
				addr, roots := tlsServer(t, true, tokens, &s)
				o.Addr, o.TLS, o.HTTP2 = addr, &tls.Config{RootCAs: roots, ServerName: "example.com"}, true
			} else {
				o.Addr, o.H2C = h2cServer(t, tokens, &s), true
			}
			recs := sessionRecs(t, o, 3)
			for i, r := range recs {
				wantReused := tt.keepAlive && i > 0
				wantConn := int64(1)
				if !tt.keepAlive {
					wantConn = int64(i + 1)
				}
				if !r.OK() || len(r.Tokens) != tokens || r.Proto != tt.proto || r.Reused != wantReused || r.ConnID != wantConn {
					t.Fatalf("request %d: %q, %d tokens, proto %q, reused %v, conn %d; want ok, %d tokens, %s, reused %v, conn %d",
						i, r.Failure.Error(), len(r.Tokens), r.Proto, r.Reused, r.ConnID, tokens, tt.proto, wantReused, wantConn)
				}
				if r.Sent < r.Start || r.HeadAt < r.Sent || r.Tokens[0].Arrived < r.HeadAt || r.Sent == 0 {
					t.Errorf("request %d: start %d sent %d head %d first token %d: want in that order, sent set", i, r.Start, r.Sent, r.HeadAt, r.Tokens[0].Arrived)
				}
				if r.ByPiTs != tokens || r.Reads < 2 {
					t.Errorf("request %d: %d tokens by pi_ts in %d reads, want %d in several", i, r.ByPiTs, r.Reads, tokens)
				}
				if (r.TLSDone != 0) != (tt.proto == ProtoH2 && !wantReused) {
					t.Errorf("request %d: TLS done %d", i, r.TLSDone)
				}
			}
			got := s.get()
			distinct := map[string]bool{}
			for _, ra := range got.remotes {
				distinct[ra] = true
			}
			wantConns := 3
			if tt.keepAlive {
				wantConns = 1
			}
			if len(distinct) != wantConns || got.protos[0] != "HTTP/2.0" {
				t.Errorf("the server saw %v over %d connections, want HTTP/2.0 over %d", got.protos, len(distinct), wantConns)
			}
			if got.auth[0] != "Bearer sk-h2" || got.ua[0] != "" {
				t.Errorf("the server saw Authorization %q, User-Agent %q; want Bearer sk-h2 and none", got.auth[0], got.ua[0])
			}
		})
	}
}

// TestHTTP2Fallback: a server that does not offer h2 gets HTTP/1.1 over
// TLS, and rec.Proto says so.
func TestHTTP2Fallback(t *testing.T) {
	var s seen
	addr, roots := tlsServer(t, false, 3, &s)
	recs := sessionRecs(t, Options{Addr: addr, TLS: &tls.Config{RootCAs: roots, ServerName: "example.com"}, HTTP2: true, ExpectTokens: 3}, 1)
	if r := recs[0]; !r.OK() || r.Proto != ProtoHTTP1 {
		t.Errorf("%q over %q, want ok over HTTP/1.1", r.Failure.Error(), r.Proto)
	}
}

// TestHTTP2Timeout: the request's own deadline ends an HTTP/2 stream as a
// timeout, and cancelling the context as an interruption.
func TestHTTP2Timeout(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = p
	srv.Start()
	defer srv.Close()
	defer close(block)
	q := New(Options{Addr: srv.Listener.Addr().String(), H2C: true, Timeout: 200 * time.Millisecond, Tokens: -1})
	rec := &result.Request{}
	q.Do(context.Background(), rec)
	if got := rec.Failure.Error(); got != "timeout after 200ms" || rec.Proto != ProtoH2C {
		t.Errorf("a silent h2c stream: %q over %q, want timeout after 200ms over h2c", got, rec.Proto)
	}
	q.Timeout = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	rec = &result.Request{}
	q.Do(ctx, rec)
	if rec.Failure.Kind != result.Interrupted {
		t.Errorf("a cancelled h2c stream: %q, want interrupted", rec.Failure.Error())
	}
}

// TestTLS12FallsBack: a server that stops at TLS 1.2 is measured all the
// same, over HTTP/1.1 and over h2 (ALPN); on the event loops, whose
// record layer speaks TLS 1.3, the first request ends on the goroutine
// engine (on the connection it made: the later ones reuse it) and the
// Request says why.
func TestTLS12FallsBack(t *testing.T) {
	const tokens = 5
	for _, proto := range []string{ProtoHTTP1, ProtoH2} {
		t.Run(proto, func(t *testing.T) {
			var s seen
			srv := httptest.NewUnstartedServer(sseHandler(tokens, &s))
			srv.TLS = &tls.Config{MaxVersion: tls.VersionTLS12}
			srv.EnableHTTP2 = proto == ProtoH2
			srv.StartTLS()
			t.Cleanup(srv.Close)
			q := New(Options{Addr: srv.Listener.Addr().String(), TLS: &tls.Config{InsecureSkipVerify: true}, HTTP2: proto == ProtoH2,
				ExpectTokens: tokens, KeepAlive: true, Timeout: 10 * time.Second, Tokens: -1})
			sess := q.NewSession()
			defer sess.Close()
			for i := range 3 {
				rec := &result.Request{Batch: "gw", Index: i}
				sess.Do(context.Background(), rec)
				if rec.Failure.Kind != result.OK || len(rec.Tokens) != tokens || rec.Proto != proto || rec.ConnID != 1 || rec.Reused != (i > 0) {
					t.Fatalf("request %d over TLS 1.2: %q, %d tokens, proto %q, connection %d, reused %v; want ok, %d tokens, %s, connection 1, reused %v",
						i, rec.Failure.Error(), len(rec.Tokens), rec.Proto, rec.ConnID, rec.Reused, tokens, proto, i > 0)
				}
			}
			e, _ := q.ResolveEngine()
			note := q.TLSFallback()
			if e.OnLoops() != (note != "") || (note != "" && !strings.Contains(note, "TLS 1.2")) {
				t.Errorf("engine %s: TLSFallback() = %q; want a note naming TLS 1.2 exactly on the event loops", e, note)
			}
		})
	}
}

// TestTLSBadRecord: a record that fails authentication in the middle of a
// stream is a named receive error, on every engine, with the bytes
// before it kept.
func TestTLSBadRecord(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	cfg, _, err := server.SelfSignedTLS()
	if err != nil {
		t.Fatal(err)
	}
	cfg.SessionTicketsDisabled = true
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		tc, rl, why, err := tlsrecord.Server(context.Background(), c, cfg)
		if err != nil || rl == nil {
			t.Errorf("server handshake: %v %s", err, why)
			return
		}
		_ = tc
		buf := make([]byte, 4096)
		var req []byte
		for !strings.Contains(string(req), "\r\n\r\n") {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			if req, err = rl.Open(req, buf[:n]); err != nil {
				t.Errorf("server: %v", err)
				return
			}
		}
		head := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
		out := rl.Seal(nil, []byte(head+chatRole+chatTok(clock.Real.Now(), "a")))
		bad := rl.Seal(nil, []byte(chatTok(clock.Real.Now(), "b")))
		bad[len(bad)-1] ^= 0x80
		c.Write(append(out, bad...))
		io.Copy(io.Discard, c)
	}()
	recs := sessionRecs(t, Options{Addr: ln.Addr().String(), TLS: &tls.Config{InsecureSkipVerify: true}}, 1)
	r := recs[0]
	if r.Failure.Kind != result.RecvError || !strings.Contains(r.Failure.Error(), "MAC") || r.Bytes == 0 {
		t.Errorf("a tampered record: %q, %d tokens (%d bytes, %d reads); want a recv error naming the bad MAC, the bytes before it counted", r.Failure.Error(), len(r.Tokens), r.Bytes, r.Reads)
	}
}

// TestTLSHandshakeStalls: a server that accepts the connection and never
// answers the ClientHello holds the handshake: the request's timeout ends
// it as a timeout, a cancelled context as an interruption, on every
// engine (on the event loops the handshake runs on a goroutine of its
// own, which must end by itself).
func TestTLSHandshakeStalls(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	defer func() {
		for {
			select {
			case c := <-accepted:
				c.Close()
			default:
				return
			}
		}
	}()
	q := New(Options{Addr: ln.Addr().String(), TLS: &tls.Config{InsecureSkipVerify: true}, Timeout: 200 * time.Millisecond, Tokens: -1})
	rec := &result.Request{}
	q.Do(context.Background(), rec)
	if got := rec.Failure.Error(); got != "timeout after 200ms" || rec.Connected == 0 || rec.TLSDone != 0 {
		t.Errorf("a stalled handshake: %q, connected %d, TLS done %d; want timeout after 200ms, connected, no TLS", got, rec.Connected, rec.TLSDone)
	}
	q.Timeout = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec = &result.Request{}
	ended := make(chan struct{})
	go func() {
		q.Do(ctx, rec)
		close(ended)
	}()
	(<-accepted).Close() // the first request's connection
	second := <-accepted // the handshake is under way
	cancel()
	<-ended
	second.Close()
	if rec.Failure.Kind != result.Interrupted {
		t.Errorf("a cancelled handshake: %q, want interrupted", rec.Failure.Error())
	}
}
