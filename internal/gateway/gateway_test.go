package gateway

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/sse-latency/sse-latency/internal/procnet"
)

func TestParseName(t *testing.T) {
	for _, n := range Names {
		if got, err := ParseName(strings.ToUpper(string(n))); got != n || err != nil {
			t.Errorf("ParseName(%q) = %q, %v; want %q", strings.ToUpper(string(n)), got, err, n)
		}
		if n.Title() == "unknown" {
			t.Errorf("%q has no title", n)
		}
	}
	for alias, want := range map[string]Name{"httpd": Apache, "apache2": Apache, "ATS": TrafficServer, "express": Node} {
		if got, err := ParseName(alias); got != want || err != nil {
			t.Errorf("ParseName(%q) = %q, %v; want %q", alias, got, err, want)
		}
	}
	_, err := ParseName("bogus\x1b[31m")
	if err == nil || !strings.Contains(err.Error(), `unknown gateway "bogus[31m"`) || !strings.Contains(err.Error(), "haproxy, nginx, caddy") {
		t.Errorf("ParseName(bogus) error = %v; want one naming it, cleaned, and listing the known names", err)
	}
}

func TestClean(t *testing.T) {
	tests := []struct{ in, want string }{
		{"nginx/1.22.1", "nginx/1.22.1"},
		{"  lighttpd/1.4.69 \t", "lighttpd/1.4.69"},
		{"evil\x1b[2J\r\nX-Injected: 1", "evil[2JX-Injected: 1"},
		{"a\u202eb\u200bc\x7f\u0085d", "abcd"}, // bidi override, zero width, DEL, C1
		{"bad\xffutf8", "bad\uFFFDutf8"},
		{strings.Repeat("é", 100), strings.Repeat("é", 64)},
		{"a    b", "a b"},
	}
	for _, tt := range tests {
		if got := Clean(tt.in); got != tt.want {
			t.Errorf("Clean(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFromHeader(t *testing.T) {
	for _, tt := range []struct {
		name, value string
		keep        bool
	}{
		{"Server", "nginx", true}, {"VIA", "1.1 varnish", true}, {"X-Powered-By", "Express", true},
		{"x-litellm-version", "1.50", true}, {"X-Portkey-Trace-Id", "x", true}, {"X-Kong-Request-Id", "x", true},
		{"x-envoy-upstream-service-time", "3", true}, {"CF-Ray", "8a-AMS", true}, {"X-Cache", "MISS from h", true},
		{"Content-Type", "text/event-stream", false}, {"Date", "now", false}, {"Set-Cookie", "a=b", false},
	} {
		h, ok := FromHeader(tt.name, tt.value)
		if ok != tt.keep || ok && (h.Name != strings.ToLower(tt.name) || h.Value != tt.value) {
			t.Errorf("FromHeader(%q, %q) = %+v, %t; want kept %t", tt.name, tt.value, h, ok, tt.keep)
		}
	}
}

func hdrs(kv ...string) []Header {
	var out []Header
	for i := 0; i < len(kv); i += 2 {
		h, _ := FromHeader(kv[i], kv[i+1])
		out = append(out, h)
	}
	return out
}

func procs(pid int, comm, exe string) []procnet.Process {
	return []procnet.Process{{PID: pid, Comm: comm, Exe: exe}}
}

func TestIdentify(t *testing.T) {
	tests := []struct {
		name string
		e    Evidence
		want Name
		text string
	}{
		{"lighttpd by header and process", Evidence{Headers: hdrs("Server", "lighttpd/1.4.69"), Processes: procs(1234, "lighttpd", "/usr/sbin/lighttpd")},
			Lighttpd, "lighttpd/1.4.69 (Server header; local process 1234 lighttpd)"},
		{"haproxy sends nothing", Evidence{Processes: procs(42, "haproxy", "/usr/sbin/haproxy")},
			HAProxy, "haproxy (local process 42 haproxy)"},
		{"apache", Evidence{Headers: hdrs("Server", "Apache/2.4.71 (Debian)"), Processes: procs(7, "apache2", "/usr/sbin/apache2")},
			Apache, "Apache/2.4.71 (Debian) (Server header; local process 7 apache2)"},
		{"haproxy before an nginx", Evidence{Headers: hdrs("Server", "nginx/1.22.1"), Processes: procs(42, "haproxy", "")},
			HAProxy, "haproxy (local process 42 haproxy; Server header names nginx/1.22.1)"},
		{"kong runs as nginx", Evidence{Headers: hdrs("Via", "kong/3.4.0", "X-Kong-Proxy-Latency", "1"), Processes: procs(9, "nginx", "/usr/local/openresty/nginx/sbin/nginx")},
			Kong, "kong/3.4.0 (Via header; x-kong-* headers; local process 9 nginx)"},
		{"portkey on node", Evidence{Headers: hdrs("x-portkey-trace-id", "abc"), Processes: procs(5, "node", "/usr/bin/node")},
			Portkey, "Portkey (x-portkey-* headers; local process 5 node)"},
		{"express", Evidence{Headers: hdrs("X-Powered-By", "Express"), Processes: procs(5, "node", "/usr/bin/node")},
			Node, "Node.js (Express, http-proxy), Express (X-Powered-By header; local process 5 node)"},
		{"litellm remote", Evidence{Headers: hdrs("server", "uvicorn", "x-litellm-version", "1.50.0")},
			LiteLLM, "LiteLLM (Server header; x-litellm-* headers)"},
		{"varnish by via", Evidence{Headers: hdrs("Via", "1.1 varnish (Varnish/7.1)")}, Varnish, "Varnish/7.1 (Via header)"},
		{"squid", Evidence{Headers: hdrs("Via", "1.1 proxy (squid/5.7)", "X-Cache", "MISS from proxy")}, Squid, "squid/5.7 (Via header; X-Cache header)"},
		{"ats before apache", Evidence{Headers: hdrs("Server", "ATS/9.2.0")}, TrafficServer, "Apache Traffic Server, ATS/9.2.0 (Server header)"},
		{"cloudflare", Evidence{Headers: hdrs("Server", "cloudflare", "CF-Ray", "8a1-AMS")}, Cloudflare, "cloudflare (Server header; CF-Ray header)"},
		{"flag decides", Evidence{Flag: Envoy, Headers: hdrs("Server", "nginx")}, Envoy, "Envoy (--gateway; Server header names nginx)"},
		{"unknown server", Evidence{Headers: hdrs("Server", "MyProxy/2")}, Unknown, "MyProxy/2 (Server header)"},
		{"nothing", Evidence{}, Unknown, "unknown (no identifying header; no local process found)"},
		{"an unknown local process", Evidence{Processes: procs(3, "socat", "/usr/bin/socat")}, Unknown, "socat (local process 3 socat)"},
		{"itself", Evidence{Processes: procs(3, "sse-latency", ""), Self: 3}, Unknown, "sse-latency's own server (local process 3, sse-latency itself)"},
		{"hostile", Evidence{Headers: hdrs("Server", "nginx\x1b]0;pwned\x07")}, Nginx, "nginx]0;pwned (Server header)"},
	}
	for _, tt := range tests {
		id := Identify(tt.e)
		if id.Name != tt.want || id.String() != tt.text {
			t.Errorf("%s: Identify = %q, %q; want %q, %q", tt.name, id.Name, id.String(), tt.want, tt.text)
		}
		if id.Sources == nil {
			t.Errorf("%s: nil sources (the document writes a list)", tt.name)
		}
	}
	var none *Identity
	if none.String() != "unknown" || none.Known() {
		t.Errorf("nil identity: %q, known %t", none.String(), none.Known())
	}
}

// FuzzIdentify feeds hostile headers and process names: what is printed
// is bounded and free of control characters, and Identify never panics.
func FuzzIdentify(f *testing.F) {
	f.Add("Server", "lighttpd/1.4.69", "lighttpd", "/usr/sbin/lighttpd")
	f.Add("Via", "1.1 host (squid/5.7", "node", "")
	f.Add("x-kong-proxy-latency", "\x1b[31m", "nginx", "/x/nginx (deleted)")
	f.Add("server", "\xff\xfe", "\u202e", "")
	f.Fuzz(func(t *testing.T, name, value, comm, exe string) {
		h, ok := FromHeader(name, value)
		var e Evidence
		if ok {
			e.Headers = []Header{h}
			if len(h.Value) > MaxValueBytes || !utf8.ValidString(h.Value) {
				t.Fatalf("FromHeader(%q, %q) kept %q: longer than %d bytes or invalid", name, value, h.Value, MaxValueBytes)
			}
		}
		e.Processes = procs(10, comm, exe)
		id := Identify(e)
		s := id.String()
		for _, r := range s {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
				t.Fatalf("Identify(%q: %q, process %q %q) prints %q: a control character", name, value, comm, exe, s)
			}
		}
		if len(s) > 8*MaxValueBytes {
			t.Fatalf("identity %q is %d bytes", s, len(s))
		}
	})
}
