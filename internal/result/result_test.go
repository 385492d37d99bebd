package result

import (
	"strings"
	"testing"
)

func TestFailureTexts(t *testing.T) {
	tests := []struct {
		f    Failure
		want string
	}{
		{Failure{}, "ok"},
		{Failure{Kind: NoTokens}, "no content tokens received"},
		{Failure{Kind: ClosedBeforeDone}, "connection closed before [DONE]"},
		{Failure{Kind: ClosedBeforeDone, Detail: "message_stop"}, "connection closed before message_stop"},
		{Failure{Kind: ClosedBeforeDone, Detail: "response.completed"}, "connection closed before response.completed"},
		{Failure{Kind: BadStatus, Detail: "HTTP/1.1 502 Bad Gateway"}, "status HTTP/1.1 502 Bad Gateway"},
		{Failure{Kind: ShortResponse}, "short response"},
		{Failure{Kind: HeadTooLarge}, "response headers too large"},
		{Failure{Kind: Timeout, Detail: "300000"}, "timeout after 300000ms"},
		{Failure{Kind: Connect, Detail: "Connection refused"}, "connect(): Connection refused"},
		{Failure{Kind: RecvError}, "recv error"},
		{Failure{Kind: RecvError, Detail: "Connection reset by peer"}, "recv error: Connection reset by peer"},
		{Failure{Kind: BadFraming, Detail: "bad chunk"}, "malformed response: bad chunk"},
		{Failure{Kind: Interrupted}, "interrupted"},
		{Failure{Kind: Integrity, Detail: "token 5 duplicated"}, "integrity: token 5 duplicated"},
		{Failure{Kind: StreamError, Detail: "error: overloaded_error: Overloaded"}, "stream error: error: overloaded_error: Overloaded"},
		{Failure{Kind: IdleTimeout, Detail: "5000"}, "idle timeout after 5000ms"},
		{Failure{Kind: Redirect, Detail: "302 to https://example.com/login"}, "redirect 302 to https://example.com/login"},
		{Failure{Kind: Kind(99)}, "kind(99)"},
	}
	for _, tt := range tests {
		if got := tt.f.Error(); got != tt.want {
			t.Errorf("%+v.Error() = %q, want %q", tt.f, got, tt.want)
		}
	}
}

func TestKindNames(t *testing.T) {
	seen := map[string]Kind{}
	for k := OK; k <= Redirect; k++ {
		name := k.String()
		if prev, dup := seen[name]; dup || strings.HasPrefix(name, "kind(") {
			t.Errorf("kind %d has name %q (also kind %d)", k, name, prev)
		}
		seen[name] = k
		if back, ok := ParseKind(name); !ok || back != k {
			t.Errorf("ParseKind(%q) = %v, %v; want %v, true", name, back, ok, k)
		}
	}
	for _, bad := range []string{"", "kind(99)", "Timeout", "timeout "} {
		if k, ok := ParseKind(bad); ok {
			t.Errorf("ParseKind(%q) = %v, true; want false", bad, k)
		}
	}
	if StreamError.String() != "stream_error" || Integrity.String() != "integrity" || IdleTimeout.String() != "idle_timeout" || Redirect.String() != "redirect" {
		t.Errorf("names %q, %q, %q, %q", StreamError.String(), Integrity.String(), IdleTimeout.String(), Redirect.String())
	}
}
