package gateway

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/sse-latency/sse-latency/internal/procnet"
)

// Evidence is what the tool saw of the gateway, for Identify.
type Evidence struct {
	// Flag is the --gateway name (Unknown without one): the user's word,
	// which decides.
	Flag Name
	// Headers are the identifying headers of the gateway's responses
	// (FromHeader), in the order first seen.
	Headers []Header
	// Processes own the target's listening socket on this host
	// (procnet.ListenerOwners), by PID; none for a remote target.
	Processes []procnet.Process
	// Self is this process's PID: the target is sse-latency's own server
	// when it owns the socket (-t equal to -L).
	Self int
}

// Identity names the gateway and says how it was named. Its JSON form is
// the "gateway" object of the run and check documents.
type Identity struct {
	Name    Name     `json:"name"`    // the known gateway; "" when none was recognised
	Product string   `json:"product"` // what the gateway calls itself ("lighttpd/1.4.69"), or its process's name; "" when nothing was seen
	Sources []string `json:"sources"` // how: "Server header", "local process 1234 lighttpd", "--gateway"

	Headers []Header         `json:"headers,omitempty"` // the identifying headers seen
	Process *procnet.Process `json:"process,omitempty"` // the local process owning the target's socket (the lowest PID of its owners)
	Self    bool             `json:"self,omitempty"`    // the target is sse-latency's own server
}

// Known reports whether the gateway was recognised.
func (id *Identity) Known() bool { return id != nil && id.Name != Unknown }

// String is the identity as the reports print it:
//
//	lighttpd/1.4.69 (Server header; local process 1234 lighttpd)
//	unknown (no identifying header; no local process found)
func (id *Identity) String() string {
	if id == nil {
		return "unknown"
	}
	what := id.Product
	switch {
	case id.Self && id.Name == Unknown:
		what = "sse-latency's own server"
	case what == "" && id.Name != Unknown:
		what = id.Name.Title()
	case what == "":
		what = "unknown"
	case id.Name != Unknown && !strings.Contains(strings.ToLower(what), strings.ToLower(string(id.Name))):
		what = fmt.Sprintf("%s, %s", id.Name.Title(), what)
	}
	sources := id.Sources
	if len(sources) == 0 {
		sources = []string{"no identifying header", "no local process found"}
	}
	return what + " (" + strings.Join(sources, "; ") + ")"
}

// strength orders the evidence: the user's word, then a process that
// is a gateway itself, then a vendor's own header, then a product
// header (Server, Via), then a runtime (node, python).
const (
	byRuntime = 1 + iota
	byProduct
	byVendor
	byProcess
	byFlag
)

// builtOn are the gateways that run as another's program: Kong is nginx
// (OpenResty), Portkey and Express are Node.js, LiteLLM is Python — a
// header naming the product beats the process's name.
var builtOn = map[Name]Name{Kong: Nginx, Portkey: Node, LiteLLM: Unknown}

// candidate is one piece of evidence's proposal.
type candidate struct {
	name    Name
	product string // "lighttpd/1.4.69", a process's comm; "" when none
	by      int    // how telling (the by* constants); 0: names no gateway
	source  string // "Server header", "local process 1234 lighttpd", "--gateway"
}

// Identify names the gateway from e: the --gateway name when given;
// else the local process owning the socket when it is a gateway's
// program (unless a header names a product built on it: Kong on nginx);
// else the most telling header (a vendor's own, then Server or Via); else
// a runtime (node). The product is the first that names the chosen
// gateway (a Server header's, with its version, before a process's
// name); the sources are the evidence that agrees with the choice, then
// what names another gateway ("Server header names nginx/1.22.1").
func Identify(e Evidence) Identity {
	id := Identity{Headers: e.Headers, Sources: []string{}}
	var cands []candidate
	if e.Flag != Unknown {
		cands = append(cands, candidate{e.Flag, "", byFlag, "--gateway"})
	}
	headerName := Unknown
	for _, h := range e.Headers {
		n, product, by := fromHeader(h)
		if n == Unknown && h.Name != "server" {
			continue
		}
		if by > 0 && (headerName == Unknown || by > byProduct) {
			headerName = n
		}
		cands = append(cands, candidate{n, product, by, headerSource(h.Name)})
	}
	if len(e.Processes) > 0 {
		p := e.Processes[0]
		id.Process = &p
		comm := Clean(p.Comm)
		if e.Self != 0 && p.PID == e.Self {
			id.Self = true
			cands = append(cands, candidate{Unknown, "", 0, fmt.Sprintf("local process %d, sse-latency itself", p.PID)})
		} else {
			n, by := fromProcess(comm, Clean(p.Exe))
			if on, ok := builtOn[headerName]; ok && (n == on || by == byRuntime) {
				n, by = Unknown, 0 // Kong runs as nginx: the header says which
			}
			cands = append(cands, candidate{n, comm, by, fmt.Sprintf("local process %d %s", p.PID, comm)})
		}
	}
	best := candidate{}
	for _, c := range cands {
		if c.by > best.by {
			best = c
		}
	}
	id.Name = best.name
	for _, c := range cands {
		if id.Product == "" && c.product != "" && (c.name == best.name || best.name == Unknown) {
			id.Product = c.product
		}
	}
	var others []string
	for _, c := range cands {
		switch {
		case c.name == best.name || c.name == Unknown:
			id.Sources = appendOnce(id.Sources, c.source)
		default:
			others = appendOnce(others, fmt.Sprintf("%s names %s", c.source, cmp.Or(c.product, c.name.Title())))
		}
	}
	id.Sources = append(id.Sources, others...)
	return id
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// headerSource names a header as a source: "Server header", "x-litellm-*
// headers".
func headerSource(name string) string {
	switch name {
	case "server":
		return "Server header"
	case "via":
		return "Via header"
	case "x-powered-by":
		return "X-Powered-By header"
	case "x-cache":
		return "X-Cache header"
	case "x-varnish":
		return "X-Varnish header"
	case "cf-ray":
		return "CF-Ray header"
	case "x-served-by":
		return "X-Served-By header"
	}
	for _, p := range identifyingPrefixes {
		if strings.HasPrefix(name, p) {
			return p + "* headers"
		}
	}
	return name + " header"
}

// productWords are the words of Server and Via values that name a
// gateway, most specific first (ATS's "ApacheTrafficServer" before
// "Apache").
var productWords = []struct {
	word string
	name Name
}{
	{"apachetrafficserver", TrafficServer}, {"ats/", TrafficServer}, {"traffic_server", TrafficServer},
	{"openresty", Nginx}, {"nginx", Nginx}, {"kong", Kong},
	{"apache", Apache}, {"lighttpd", Lighttpd}, {"caddy", Caddy}, {"haproxy", HAProxy},
	{"varnish", Varnish}, {"squid", Squid}, {"h2o", H2O}, {"envoy", Envoy}, {"traefik", Traefik},
	{"cloudflare", Cloudflare}, {"litellm", LiteLLM}, {"portkey", Portkey},
}

// fromHeader reads one identifying header: the gateway it names (if
// any), the product it names (a Server value, or the product token of a
// Via), and how telling it is.
func fromHeader(h Header) (Name, string, int) {
	l := strings.ToLower(h.Value)
	switch {
	case strings.HasPrefix(h.Name, "x-litellm-"):
		return LiteLLM, "", byVendor
	case strings.HasPrefix(h.Name, "x-portkey-"):
		return Portkey, "", byVendor
	case strings.HasPrefix(h.Name, "x-kong-"):
		return Kong, "", byVendor
	case strings.HasPrefix(h.Name, "x-envoy-"):
		return Envoy, "", byVendor
	case h.Name == "cf-ray":
		return Cloudflare, "", byVendor
	case h.Name == "x-varnish":
		return Varnish, "", byVendor
	case h.Name == "x-powered-by" && strings.Contains(l, "express"):
		return Node, h.Value, byRuntime
	case h.Name == "x-cache" && strings.Contains(l, " from "): // Squid: "MISS from host"
		return Squid, "", byProduct
	case h.Name == "server" || h.Name == "via":
		for _, w := range productWords {
			if strings.Contains(l, w.word) {
				return w.name, productOf(h, w.word), byProduct
			}
		}
		if h.Name == "server" {
			return Unknown, h.Value, 0
		}
	}
	return Unknown, "", 0
}

// productOf is the product a Server or Via value names: the Server value
// itself; for a Via ("1.1 varnish (Varnish/7.1)", "1.1 host (squid/5.7)")
// the comment when it names the product, else the value.
func productOf(h Header, word string) string {
	if h.Name != "via" {
		return h.Value
	}
	if i := strings.IndexByte(h.Value, '('); i >= 0 {
		if c, _, ok := strings.Cut(h.Value[i+1:], ")"); ok && strings.Contains(strings.ToLower(c), word) {
			return c
		}
	}
	return h.Value
}

// processNames are the programs gateways run as (comm, at most 15
// bytes), and the runtimes a gateway may run on.
var processNames = map[string]Name{
	"haproxy": HAProxy, "nginx": Nginx, "openresty": Nginx, "caddy": Caddy, "apache2": Apache, "httpd": Apache,
	"lighttpd": Lighttpd, "varnishd": Varnish, "cache-main": Varnish, "squid": Squid, "h2o": H2O,
	"traffic_server": TrafficServer, "[ET_NET 0]": TrafficServer, "envoy": Envoy, "traefik": Traefik, "kong": Kong,
	"litellm": LiteLLM,
}

// fromProcess names the gateway a process runs: by its comm, else by its
// executable's base name; node is a runtime (Express, http-proxy,
// Portkey).
func fromProcess(comm, exe string) (Name, int) {
	base := exe[strings.LastIndexByte(exe, '/')+1:]
	for _, c := range []string{comm, base} {
		if n, ok := processNames[c]; ok {
			return n, byProcess
		}
	}
	if comm == "node" || base == "node" || strings.HasPrefix(comm, "node-") {
		return Node, byRuntime
	}
	return Unknown, 0
}
