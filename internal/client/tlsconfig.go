package client

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// TLSConfig returns the client TLS configuration for a gateway reached by
// TLS: serverName for SNI and verification, verification skipped when
// insecure, and, when caFile is set, the CAs of that PEM file as the only
// roots (else the system's).
func TLSConfig(serverName string, insecure bool, caFile string) (*tls.Config, error) {
	tc := &tls.Config{ServerName: serverName, InsecureSkipVerify: insecure}
	if caFile == "" {
		return tc, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no PEM certificate in %s", caFile)
	}
	tc.RootCAs = pool
	return tc, nil
}
