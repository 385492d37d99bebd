package server

import "crypto/tls"

// TLSConfig returns the server's TLS configuration for its settings: with
// selfSigned, a new in-memory certificate (SelfSignedTLS) and its SHA-256
// fingerprint; with a certificate file, that certificate and keyFile's key
// (LoadTLS) and no fingerprint; with neither, nil: the server speaks plain
// TCP.
func TLSConfig(certFile, keyFile string, selfSigned bool) (*tls.Config, string, error) {
	switch {
	case selfSigned:
		return SelfSignedTLS()
	case certFile != "":
		tc, err := LoadTLS(certFile, keyFile)
		return tc, "", err
	}
	return nil, "", nil
}
