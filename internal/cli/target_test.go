package cli

import "testing"

func TestServerName(t *testing.T) {
	tests := []struct {
		target, hostHeader, want string
	}{
		{"https://gw.example", "", "gw.example"},
		{"https://gw.example:8443/prefix", "", "gw.example"},
		{"https://127.0.0.1:8443", "api.example", "api.example"},
		{"https://127.0.0.1:8443", "api.example:443", "api.example"},
		{"https://[::1]:8443", "", "::1"},
	}
	for _, tt := range tests {
		tg, err := parseTarget(tt.target)
		if err != nil {
			t.Fatalf("parseTarget(%q): %v", tt.target, err)
		}
		if got := tg.serverName(tt.hostHeader); got != tt.want {
			t.Errorf("serverName(%q, host header %q) = %q, want %q", tt.target, tt.hostHeader, got, tt.want)
		}
	}
}
