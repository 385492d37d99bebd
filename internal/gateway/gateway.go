// Package gateway names the gateway under test: which program the client
// talks to, from what it shows — the identifying headers of its
// responses (Server, Via, X-Powered-By, X-Cache, vendor headers such as
// x-litellm-*, x-portkey-*, X-Kong-*, x-envoy-*, CF-Ray), the local
// process that owns the target's listening socket (package procnet), or
// the user's word (--gateway). The advice a report gives (package advice)
// is the identified gateway's own.
//
// Everything a gateway sends is hostile input: header values are cut to
// MaxValueBytes and stripped of control characters before they are kept
// (Clean), and at most MaxHeaders of them are kept per response.
package gateway

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sse-latency/sse-latency/internal/result"
)

// Name is a known gateway, as --gateway takes it and the advice table
// keys it.
type Name string

// The known gateways.
const (
	Unknown       Name = ""
	HAProxy       Name = "haproxy"
	Nginx         Name = "nginx"
	Caddy         Name = "caddy"
	Apache        Name = "apache"
	Lighttpd      Name = "lighttpd"
	Varnish       Name = "varnish"
	Squid         Name = "squid"
	H2O           Name = "h2o"
	TrafficServer Name = "trafficserver"
	Envoy         Name = "envoy"
	Traefik       Name = "traefik"
	Kong          Name = "kong"
	Node          Name = "node"
	GoProxy       Name = "go"
	LiteLLM       Name = "litellm"
	Portkey       Name = "portkey"
	Cloudflare    Name = "cloudflare"
)

// Names lists the known gateways, in the order the advice lists them.
var Names = []Name{HAProxy, Nginx, Caddy, Apache, Lighttpd, Varnish, Squid, H2O, TrafficServer, Envoy, Traefik, Kong,
	Node, GoProxy, LiteLLM, Portkey, Cloudflare}

// Title is the gateway's name as its documentation writes it.
func (n Name) Title() string {
	switch n {
	case HAProxy:
		return "HAProxy"
	case Nginx:
		return "nginx"
	case Caddy:
		return "Caddy"
	case Apache:
		return "Apache httpd"
	case Lighttpd:
		return "lighttpd"
	case Varnish:
		return "Varnish"
	case Squid:
		return "Squid"
	case H2O:
		return "H2O"
	case TrafficServer:
		return "Apache Traffic Server"
	case Envoy:
		return "Envoy"
	case Traefik:
		return "Traefik"
	case Kong:
		return "Kong"
	case Node:
		return "Node.js (Express, http-proxy)"
	case GoProxy:
		return "Go httputil.ReverseProxy"
	case LiteLLM:
		return "LiteLLM"
	case Portkey:
		return "Portkey"
	case Cloudflare:
		return "Cloudflare"
	}
	return "unknown"
}

// aliases are the other names --gateway takes.
var aliases = map[string]Name{
	"apache2": Apache, "httpd": Apache, "apache-httpd": Apache,
	"ats": TrafficServer, "traffic-server": TrafficServer, "traffic_server": TrafficServer,
	"nodejs": Node, "express": Node, "http-proxy": Node,
	"golang": GoProxy, "reverseproxy": GoProxy, "httputil": GoProxy,
	"cf": Cloudflare, "openresty": Nginx,
}

// ParseName reads a --gateway value: a known name or one of its aliases,
// in any case. An unknown one is an error listing the known names.
func ParseName(s string) (Name, error) {
	l := strings.ToLower(strings.TrimSpace(s))
	for _, n := range Names {
		if string(n) == l {
			return n, nil
		}
	}
	if n, ok := aliases[l]; ok {
		return n, nil
	}
	known := make([]string, len(Names))
	for i, n := range Names {
		known[i] = string(n)
	}
	return Unknown, fmt.Errorf("unknown gateway %q (known: %s)", Clean(s), strings.Join(known, ", "))
}

// Bounds on what is kept of a response's identifying headers.
const (
	MaxValueBytes = 128 // a value is cut there (at a character boundary)
	MaxHeaders    = 8   // identifying headers kept per response
)

// Clean makes a value a gateway sent safe to keep and print: control
// characters (C0, DEL, C1, and the Unicode format characters that reorder
// text) removed, runs of white space made one space, invalid UTF-8
// replaced, and the result cut to MaxValueBytes.
func Clean(s string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == ' ' || r == '\t':
			space = b.Len() > 0
			continue
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			continue
		}
		if space {
			if b.Len()+1 > MaxValueBytes {
				break
			}
			b.WriteByte(' ')
			space = false
		}
		if b.Len()+utf8.RuneLen(r) > MaxValueBytes {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Header is one identifying response header, cleaned (the form a
// result.Request keeps it in).
type Header = result.HeaderField

// identifying are the exact header names kept; identifyingPrefixes the
// vendor prefixes.
var (
	identifying = []string{"server", "via", "x-powered-by", "x-cache", "x-served-by", "x-varnish", "cf-ray",
		"x-kong-upstream-latency", "x-kong-proxy-latency", "x-envoy-upstream-service-time"}
	identifyingPrefixes = []string{"x-litellm-", "x-portkey-", "x-kong-", "x-envoy-", "x-traefik-", "x-h2o-"}
)

// Identifying reports whether a response header named name (any case)
// helps name the gateway. It does not allocate.
func Identifying(name string) bool {
	for _, n := range identifying {
		if strings.EqualFold(name, n) {
			return true
		}
	}
	for _, p := range identifyingPrefixes {
		if len(name) > len(p) && strings.EqualFold(name[:len(p)], p) {
			return true
		}
	}
	return false
}

// FromHeader is the header kept of a response's field name: value, or
// false when it does not identify the gateway. Both are cleaned.
func FromHeader(name, value string) (Header, bool) {
	if !Identifying(name) {
		return Header{}, false
	}
	return Header{Name: strings.ToLower(Clean(name)), Value: Clean(value)}, true
}

// Advice is what a report tells the user to change for one finding (a
// buffering signature, a first-token hold, a check that failed): the
// identified gateway's own setting, or, for a gateway not recognised
// (or one without a setting for it), the generic advice, with the
// known gateways' settings listed as "if your gateway is …" (Others).
// Package advice holds the table it comes from.
type Advice struct {
	Key       string `json:"key"`                 // the finding: a signature kind, a finding's name, a check's failure
	Gateway   Name   `json:"gateway,omitempty"`   // whose setting it is; "" for the generic advice
	Setting   string `json:"setting"`             // what to change, in one sentence
	Snippet   string `json:"snippet,omitempty"`   // the configuration that does it
	Reference string `json:"reference,omitempty"` // the documentation that says so
	// Others are the known gateways' settings for the same finding,
	// given with the generic advice only: "if your gateway is …".
	Others []Advice `json:"if_your_gateway_is,omitempty"`
}

// Line is the advice in one line: "lighttpd: set server.stream-response-body = 2 …",
// the generic advice without a name.
func (a Advice) Line() string {
	if a.Gateway == Unknown {
		return a.Setting
	}
	return a.Gateway.Title() + ": " + a.Setting
}
