package cli

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// splitAddr splits the reference's address forms — "port", ":port",
// "*:port", "ip:port", "host:port", IPv6 "addr:port" with the last colon as
// the separator — and "[v6]:port". The host is "" for the wildcard forms.
func splitAddr(s string) (host string, port int, err error) {
	if s == "" {
		return "", 0, fmt.Errorf("empty address")
	}
	var portStr string
	switch i := strings.LastIndexByte(s, ':'); {
	case strings.HasPrefix(s, "["):
		h, p, e := net.SplitHostPort(s)
		if e != nil {
			return "", 0, fmt.Errorf("bad address %q: %v", s, e)
		}
		host, portStr = h, p
	case i < 0:
		portStr = s
	default:
		host, portStr = s[:i], s[i+1:]
	}
	if host == "*" {
		host = ""
	}
	p, e := strconv.Atoi(portStr)
	if e != nil || p < 0 || p > 65535 || portStr == "" || strings.ContainsAny(portStr, "+-") {
		return "", 0, fmt.Errorf("bad port %q in address %q", portStr, s)
	}
	if strings.ContainsAny(host, " /[]") {
		return "", 0, fmt.Errorf("bad host %q in address %q", host, s)
	}
	return host, p, nil
}

// listenAddr turns a -L value into an address for net.Listen, and returns
// its host too ("" for the wildcard forms).
func listenAddr(s string) (addr, host string, err error) {
	host, port, err := splitAddr(s)
	if err != nil {
		return "", "", err
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), host, nil
}

// destAddr turns a -t value (or the listen address, for calibration) into an
// ip:port to dial: the wildcard or an empty host means loopback, and a host
// name is resolved (IPv4 preferred, as the reference resolves with
// gethostbyname).
func destAddr(ctx context.Context, s string) (string, error) {
	host, port, err := splitAddr(s)
	if err != nil {
		return "", err
	}
	if host == "" || host == "0.0.0.0" {
		host = "127.0.0.1"
	} else if host == "::" {
		host = "::1"
	}
	if net.ParseIP(host) == nil {
		addrs, err := net.DefaultResolver.LookupHost(ctx, host)
		if err != nil || len(addrs) == 0 {
			return "", fmt.Errorf("cannot resolve %q: %v", host, err)
		}
		host = addrs[0]
		for _, a := range addrs {
			if ip := net.ParseIP(a); ip != nil && ip.To4() != nil {
				host = a
				break
			}
		}
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// displayListen shows a bound listener address, the wildcard as "*".
func displayListen(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	if tcp.IP == nil || tcp.IP.IsUnspecified() {
		return "*:" + strconv.Itoa(tcp.Port)
	}
	return tcp.String()
}
