package server

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/evloop"
)

// selfSigned returns SelfSignedTLS's configuration and a pool trusting its
// certificate.
func selfSigned(t *testing.T, hosts ...string) (*tls.Config, *x509.CertPool, string) {
	t.Helper()
	cfg, fp, err := SelfSignedTLS(hosts...)
	if err != nil {
		t.Fatalf("SelfSignedTLS: %v", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cfg.Certificates[0].Leaf)
	return cfg, roots, fp
}

func TestSelfSignedTLS(t *testing.T) {
	cfg, _, fp := selfSigned(t, "gw.example", "10.1.2.3", "[2001:db8::1]:8443", "LOCALHOST", "")
	if len(cfg.Certificates) != 1 || cfg.Certificates[0].Leaf == nil {
		t.Fatalf("SelfSignedTLS config has %d certificates, want 1 with its Leaf", len(cfg.Certificates))
	}
	leaf := cfg.Certificates[0].Leaf
	sum := sha256.Sum256(cfg.Certificates[0].Certificate[0])
	want := strings.ToUpper(hex.EncodeToString(sum[:]))
	if got := strings.ReplaceAll(fp, ":", ""); got != want || len(fp) != 32*3-1 {
		t.Errorf("fingerprint %s, want the SHA-256 of the leaf %s as colon-separated pairs", fp, want)
	}
	for _, host := range []string{"127.0.0.1", "::1", "localhost", "gw.example", "10.1.2.3", "2001:db8::1"} {
		if err := leaf.VerifyHostname(host); err != nil {
			t.Errorf("certificate not valid for %s: %v", host, err)
		}
	}
	if err := leaf.VerifyHostname("other.example"); err == nil {
		t.Error("certificate valid for other.example, want only the hosts given")
	}
	if n := len(leaf.DNSNames) + len(leaf.IPAddresses); n != 6 {
		t.Errorf("certificate names %v %v, want the 6 distinct ones", leaf.DNSNames, leaf.IPAddresses)
	}
	if pub, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
		t.Errorf("public key %T, want ECDSA P-256", leaf.PublicKey)
	}
	if !leaf.NotAfter.After(time.Now().Add(24 * time.Hour)) {
		t.Errorf("certificate expires %v, want it valid for longer than a day", leaf.NotAfter)
	}
}

// startTLSServer starts a server speaking TLS with cfg (HTTP/2 as asked).
func startTLSServer(t *testing.T, tlsCfg *tls.Config, h2 bool, reg *emission.Registry) *Server {
	t.Helper()
	return startTLSServerOn(t, evloop.Auto, tlsCfg, h2, reg)
}

func startTLSServerOn(t *testing.T, e evloop.Engine, tlsCfg *tls.Config, h2 bool, reg *emission.Registry) *Server {
	t.Helper()
	return startServer(t, Config{Tokens: 5, DelayMs: 0.1, TLS: tlsCfg, HTTP2: h2, Emissions: reg, Engine: e})
}

// TestTLSHTTP1 streams over HTTP/1.1 on TLS with a crypto/tls client, two
// streams on one persistent connection, and checks the events, the
// negotiated protocol, the server certificate, and that each token was
// recorded once, with the pi_ts it carried (the goroutine write path of a
// connection without a file descriptor).
func TestTLSHTTP1(t *testing.T) { forEngines(t, testTLSHTTP1) }

func testTLSHTTP1(t *testing.T, e evloop.Engine) {
	tlsCfg, roots, fp := selfSigned(t)
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprint("HTTP2=", h2), func(t *testing.T) {
			reg := emission.New()
			srv := startTLSServerOn(t, e, tlsCfg, h2, reg)
			c, err := tls.Dial("tcp", srv.Addr().String(), &tls.Config{RootCAs: roots, ServerName: "127.0.0.1",
				NextProtos: []string{"http/1.1"}})
			if err != nil {
				t.Fatalf("TLS dial: %v", err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			cs := c.ConnectionState()
			if cs.NegotiatedProtocol != "http/1.1" {
				t.Errorf("negotiated %q, want http/1.1", cs.NegotiatedProtocol)
			}
			if got := Fingerprint(cs.PeerCertificates[0].Raw); got != fp {
				t.Errorf("server certificate fingerprint %s, want %s", got, fp)
			}
			r := bufio.NewReader(c)
			steps := []kaStep{streamStep(api.Chat, 6, "t1"), streamStep(api.Anthropic, 3, "t2")}
			for i, st := range steps {
				send(t, c, st.req)
				checkStep(t, r, fmt.Sprint("TLS request ", i), st, true)
				if times := reg.Take(st.id); times == nil || times.Len() != st.n {
					t.Errorf("registry entry of %s = %v, want %d times", st.id, times, st.n)
				}
			}
			if got := srv.Lateness().N(); got != 6+3 {
				t.Errorf("Lateness().N() = %d, want one sample per token (9)", got)
			}
		})
	}
}

// TestTLSPiTsIsWriteTime checks, on the goroutine write path, that each
// token's pi_ts is the registry's time for it — one stamp per token, taken
// where the token is written.
func TestTLSPiTsIsWriteTime(t *testing.T) {
	tlsCfg, roots, _ := selfSigned(t)
	reg := emission.New()
	srv := startTLSServer(t, tlsCfg, false, reg)
	c, err := tls.Dial("tcp", srv.Addr().String(), &tls.Config{RootCAs: roots, ServerName: "localhost"})
	if err != nil {
		t.Fatalf("TLS dial: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	send(t, c, postRequest("/v1/chat/completions", `{"stream":true,"pi_id":"ts","pi_tokens":4,"pi_delay_ms":1}`))
	h, b := recv(t, bufio.NewReader(c), "TLS stream")
	if h != streamHead {
		t.Fatalf("head %q, want %q", h, streamHead)
	}
	ts := checkEvents(t, "TLS chat", parseEvents(t, dechunk(t, b)), wantEvents(api.Chat, 4, false, `"sse-latency-1"`))
	times := reg.Take("ts")
	if times == nil {
		t.Fatal("registry holds nothing for id ts")
	}
	for k, want := range ts {
		if got := times.At(k); got != want {
			t.Errorf("registry time of token %d = %d, want its pi_ts %d", k, got, want)
		}
	}
}

// TestLoadTLS writes a certificate and key to PEM files and serves with
// LoadTLS's configuration.
func TestLoadTLS(t *testing.T) {
	gen, roots, fp := selfSigned(t)
	dir := t.TempDir()
	certFile, keyFile := writeKeyPair(t, gen, dir)

	cfg, err := LoadTLS(certFile, keyFile)
	if err != nil {
		t.Fatalf("LoadTLS(%s, %s): %v", certFile, keyFile, err)
	}
	srv := startTLSServer(t, cfg, true, nil)
	c, err := tls.Dial("tcp", srv.Addr().String(), &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("TLS dial: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if got := Fingerprint(c.ConnectionState().PeerCertificates[0].Raw); got != fp {
		t.Errorf("served certificate %s, want the one written to %s (%s)", got, certFile, fp)
	}
	st := streamStep(api.Responses, 2, "l1")
	send(t, c, st.req)
	checkStep(t, bufio.NewReader(c), "LoadTLS stream", st, true)

	for _, files := range [][2]string{{filepath.Join(dir, "none.pem"), keyFile}, {certFile, certFile}} {
		if _, err := LoadTLS(files[0], files[1]); err == nil {
			t.Errorf("LoadTLS(%s, %s) = nil error, want one", files[0], files[1])
		}
	}
}

// writeKeyPair writes the certificate and key of cfg to PEM files in dir.
func writeKeyPair(t *testing.T, cfg *tls.Config, dir string) (certFile, keyFile string) {
	t.Helper()
	keyDER, err := x509.MarshalPKCS8PrivateKey(cfg.Certificates[0].PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writePEM(t, certFile, "CERTIFICATE", cfg.Certificates[0].Certificate[0])
	writePEM(t, keyFile, "PRIVATE KEY", keyDER)
	return certFile, keyFile
}

func writePEM(t *testing.T, name, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(name, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestTLSPlainClient checks that a client speaking plain HTTP to a TLS
// server is dropped, not answered in clear text.
func TestTLSPlainClient(t *testing.T) {
	tlsCfg, _, _ := selfSigned(t)
	srv := startTLSServer(t, tlsCfg, true, nil)
	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	send(t, c, postRequest("/v1/chat/completions", `{"stream":true}`))
	r := bufio.NewReader(c)
	if line, _ := r.ReadString('\n'); strings.HasPrefix(line, "HTTP/") {
		t.Errorf("plain request to a TLS server answered %q", line)
	}
}
