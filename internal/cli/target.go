package cli

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// target is where the gateway batch goes: -t as host:port (the reference's
// forms) or as a URL http(s)://host[:port][/prefix].
type target struct {
	url      bool   // given as a URL
	scheme   string // "http" or "https"
	hostPort string // host:port, in the -t address syntax
	prefix   string // path before the API path ("" or "/something", no trailing slash)
}

// parseTarget reads -t. An empty value is no target (server only).
func parseTarget(s string) (target, error) {
	if !strings.Contains(s, "://") {
		return target{scheme: "http", hostPort: s}, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return target{}, fmt.Errorf("bad URL: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return target{}, fmt.Errorf("URL scheme %q: want http or https", u.Scheme)
	}
	if u.User != nil {
		return target{}, fmt.Errorf("credentials in the URL are not sent: use --api-key or -H")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return target{}, fmt.Errorf("URL %s has a query or fragment: give the path prefix only", u.Redacted())
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return target{}, fmt.Errorf("URL %s has no host", u.Redacted())
	}
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return target{}, fmt.Errorf("bad port %q in %s", port, u.Redacted())
	}
	return target{url: true, scheme: u.Scheme, hostPort: net.JoinHostPort(host, port), prefix: strings.TrimRight(u.EscapedPath(), "/")}, nil
}

// serverName is the name an https target is asked for (SNI) and verified
// against: the host of --host-header when one is given, else the target's
// host.
func (t target) serverName(hostHeader string) string {
	host := t.hostPort
	if hostHeader != "" {
		host = hostHeader
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host // a Host header without a port
}

// loadShape describes an open-loop or timed gateway batch for its stderr
// line.
func loadShape(c Config) string {
	var parts []string
	if c.Rate > 0 {
		parts = append(parts, fmt.Sprintf("%s request(s)/s (%s arrivals)", fmtMs(c.Rate), c.Arrival))
	} else {
		parts = append(parts, "requests")
	}
	if c.Requests > 0 {
		parts = append(parts, fmt.Sprintf("up to %d", c.Requests+c.Warmup))
	}
	if c.Duration > 0 {
		parts = append(parts, "for "+c.Duration.String())
	}
	switch {
	case c.Warmup > 0 && c.Requests > 0:
		parts = append(parts, fmt.Sprintf("(%d warm-up, then %d measured)", c.Warmup, c.Requests))
	case c.Warmup > 0:
		parts = append(parts, fmt.Sprintf("(the first %d warm-up)", c.Warmup))
	}
	return strings.Join(parts, " ")
}

// capText describes the concurrency of a batch.
func capText(c Config) string {
	open := c.Rate > 0 || c.Trace != ""
	switch {
	case open && c.Concurrency > 0:
		return fmt.Sprintf("at most %d in flight", c.Concurrency)
	case open:
		return "no cap on requests in flight"
	}
	return fmt.Sprintf("concurrency=%d", c.Concurrency)
}
