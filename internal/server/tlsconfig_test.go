package server

import (
	"path/filepath"
	"testing"
)

// TestTLSConfig: plain TCP without settings, a new certificate with its
// fingerprint for selfSigned, the files' certificate otherwise.
func TestTLSConfig(t *testing.T) {
	if tc, fp, err := TLSConfig("", "", false); tc != nil || fp != "" || err != nil {
		t.Errorf("TLSConfig(no settings) = %v, %q, %v; want nil, \"\", nil", tc, fp, err)
	}
	tc, fp, err := TLSConfig("", "", true)
	if err != nil || tc == nil || len(tc.Certificates) != 1 || fp != Fingerprint(tc.Certificates[0].Certificate[0]) {
		t.Fatalf("TLSConfig(self-signed) = %v, %q, %v; want a certificate and its fingerprint", tc, fp, err)
	}
	dir := t.TempDir()
	certFile, keyFile := writeKeyPair(t, tc, dir)
	files, fp2, err := TLSConfig(certFile, keyFile, false)
	if err != nil || fp2 != "" || len(files.Certificates) != 1 || Fingerprint(files.Certificates[0].Certificate[0]) != fp {
		t.Errorf("TLSConfig(%s, %s) = %v, %q, %v; want the file's certificate, no fingerprint", certFile, keyFile, files, fp2, err)
	}
	if _, _, err := TLSConfig(filepath.Join(dir, "none.pem"), keyFile, false); err == nil {
		t.Errorf("TLSConfig(a missing certificate) = nil error, want one")
	}
}
