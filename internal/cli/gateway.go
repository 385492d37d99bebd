package cli

import (
	"net"
	"net/netip"
	"os"

	gwid "github.com/sse-latency/sse-latency/internal/gateway"
	"github.com/sse-latency/sse-latency/internal/procnet"
)

// gatewayEvidence is what is known of the gateway at addr (host:port, an
// IP address) before its responses: the --gateway name (Validate has
// checked it), and, when addr is this host's, the processes owning the
// socket listening there (procnet). A lookup that fails (no /proc) finds
// none.
func gatewayEvidence(flag, addr string) gwid.Evidence {
	e := gwid.Evidence{Flag: gwid.Name(flag), Self: os.Getpid()}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !isLocal(ap.Addr()) {
		return e
	}
	e.Processes, _ = procnet.ListenerOwners(ap)
	return e
}

// isLocal reports whether ip is an address of this host: loopback, or one
// of its interfaces'.
func isLocal(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.IsLoopback() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if local, ok := netip.AddrFromSlice(n.IP); ok && local.Unmap() == ip {
				return true
			}
		}
	}
	return false
}
