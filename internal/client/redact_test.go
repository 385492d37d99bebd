package client

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Authorization: Bearer sk-123", "Authorization: Bearer REDACTED"},
		{"authorization:Basic dXNlcjpwYXNz", "authorization:Basic REDACTED"},
		{"Authorization: sk-no-scheme", "Authorization: REDACTED"},
		{"Proxy-Authorization: Basic abc", "Proxy-Authorization: Basic REDACTED"},
		{"x-api-key: sk-ant-1", "x-api-key: REDACTED"},
		{"X-API-Key:sk", "X-API-Key:REDACTED"},
		{"api-key: azure", "api-key: REDACTED"},
		{"X-Goog-Api-Key: g", "X-Goog-Api-Key: REDACTED"},
		{"X-Auth-Token: t", "X-Auth-Token: REDACTED"},
		{"X-Client-Secret: s", "X-Client-Secret: REDACTED"},
		{"Cookie: session=abc; theme=dark", "Cookie: session=REDACTED; theme=REDACTED"},
		{"Set-Cookie: id=1; Path=/", "Set-Cookie: id=REDACTED; Path=REDACTED"},
		{"Authorization Bearer sk-missing-colon", "Authorization Bearer REDACTED"},
		{"X-SSE-Latency: id=a; tokens=3", "X-SSE-Latency: id=a; tokens=3"},
		{"Accept: text/event-stream", "Accept: text/event-stream"},
		{"X-Tokens: 5", "X-Tokens: 5"},
		{"x-api-key:", "x-api-key:"},
		{"nonsense", "nonsense"},
	}
	for _, tt := range tests {
		got := Redact(tt.in)
		if got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if tt.in != tt.want && (strings.Contains(got, "sk") || strings.Contains(got, "abc")) {
			t.Errorf("Redact(%q) = %q still holds the secret", tt.in, got)
		}
	}
}
