package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"strings"
	"time"
)

// selfSignedValidity is how long a SelfSignedTLS certificate is valid (from
// an hour before it was made, to tolerate clock skew).
const selfSignedValidity = 365 * 24 * time.Hour

// SelfSignedTLS returns a server TLS configuration with a new, in-memory
// ECDSA P-256 certificate, signed by its own key, valid for 127.0.0.1, ::1,
// localhost and the given hosts (names or IP addresses; a port or the
// brackets of an IPv6 address are dropped, empty names ignored), and the
// SHA-256 fingerprint of the certificate, as uppercase hex pairs separated
// by colons (what openssl x509 -fingerprint -sha256 prints), for the user
// to check or pin. The certificate may also act as its own root.
func SelfSignedTLS(hosts ...string) (*tls.Config, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", fmt.Errorf("self-signed certificate: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, "", fmt.Errorf("self-signed certificate: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"sse-latency"}, CommonName: "sse-latency self-signed"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(selfSignedValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	addSANs(tmpl, append([]string{"127.0.0.1", "::1", "localhost"}, hosts...))
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, "", fmt.Errorf("self-signed certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, "", fmt.Errorf("self-signed certificate: %w", err)
	}
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}},
	}
	return cfg, Fingerprint(der), nil
}

// addSANs puts each distinct host among the certificate's IP addresses or
// DNS names.
func addSANs(c *x509.Certificate, hosts []string) {
	seen := make(map[string]bool)
	for _, h := range hosts {
		if host, _, err := net.SplitHostPort(h); err == nil {
			h = host
		}
		h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			if !seen[ip.String()] {
				seen[ip.String()] = true
				c.IPAddresses = append(c.IPAddresses, ip)
			}
			continue
		}
		if h = strings.ToLower(h); !seen[h] {
			seen[h] = true
			c.DNSNames = append(c.DNSNames, h)
		}
	}
}

// Fingerprint is the SHA-256 digest of a DER certificate as uppercase hex
// pairs separated by colons ("AB:01:…").
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	var b strings.Builder
	for i, c := range sum {
		if i > 0 {
			b.WriteByte(':')
		}
		fmt.Fprintf(&b, "%02X", c)
	}
	return b.String()
}

// LoadTLS returns a server TLS configuration with the certificate chain and
// private key of PEM files (--tls-cert, --tls-key).
func LoadTLS(certFile, keyFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading TLS certificate: %w", err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}, nil
}
