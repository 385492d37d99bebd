package client

import (
	"crypto/tls"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTLSConfig handshakes with a real TLS server (httptest, whose
// certificate is for example.com and 127.0.0.1) with the configurations
// TLSConfig gives.
func TestTLSConfig(t *testing.T) {
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	defer ts.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := ts.Listener.Addr().String()
	tests := []struct {
		name       string
		serverName string
		insecure   bool
		ca         string
		handshake  string // "" : succeeds; else in its error
	}{
		{"trusted CA", "example.com", false, ca, ""},
		{"trusted CA, IP address", "127.0.0.1", false, ca, ""},
		{"another name", "other.example", false, ca, "certificate is valid for"},
		{"system roots", "example.com", false, "", "certificate signed by unknown authority"},
		{"insecure", "other.example", true, "", ""},
	}
	for _, tt := range tests {
		tc, err := TLSConfig(tt.serverName, tt.insecure, tt.ca)
		if err != nil {
			t.Fatalf("%s: TLSConfig: %v", tt.name, err)
		}
		if tc.ServerName != tt.serverName || tc.InsecureSkipVerify != tt.insecure {
			t.Errorf("%s: ServerName %q, insecure %v", tt.name, tc.ServerName, tc.InsecureSkipVerify)
		}
		c, err := tls.Dial("tcp", addr, tc)
		switch {
		case tt.handshake == "" && err != nil:
			t.Errorf("%s: handshake: %v, want success", tt.name, err)
		case tt.handshake != "" && (err == nil || !strings.Contains(err.Error(), tt.handshake)):
			t.Errorf("%s: handshake: %v, want an error containing %q", tt.name, err, tt.handshake)
		}
		if err == nil {
			c.Close()
		}
	}
	for _, bad := range []struct{ file, want string }{
		{notPEM, "no PEM certificate in " + notPEM},
		{filepath.Join(dir, "none.pem"), "no such file or directory"},
	} {
		if _, err := TLSConfig("example.com", false, bad.file); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("TLSConfig(CA file %s) = %v, want an error containing %q", bad.file, err, bad.want)
		}
	}
}
