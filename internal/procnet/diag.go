package procnet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"
)

// The netlink and socket-diagnostics constants of Linux's uapi
// (linux/netlink.h, linux/sock_diag.h, linux/inet_diag.h), as the kernel
// defines them on every architecture.
const (
	nlmsgHeaderLen   = 16      // struct nlmsghdr
	nlmsgError       = 2       // NLMSG_ERROR
	nlmsgDone        = 3       // NLMSG_DONE
	nlmFRequest      = 0x1     // NLM_F_REQUEST
	nlmFDump         = 0x300   // NLM_F_ROOT | NLM_F_MATCH
	sockDiagByFamily = 20      // SOCK_DIAG_BY_FAMILY
	inetDiagReqLen   = 56      // struct inet_diag_req_v2
	inetDiagMsgLen   = 72      // struct inet_diag_msg
	tcpfListen       = 1 << 10 // TCPF_LISTEN: the state bit of TCP_LISTEN (10)
	ipprotoTCP       = 6
)

// ErrDiagMalformed is wrapped by ParseDiag's error for bytes that are not
// a netlink socket-diagnostics answer.
var ErrDiagMalformed = errors.New("malformed sock_diag message")

// diagRequest is the netlink message that asks the kernel for the
// listening TCP sockets of one address family (AF_INET or AF_INET6) on
// port (0: every port), as a dump (sock_diag(7)).
func diagRequest(family uint8, port uint16, seq uint32) []byte {
	b := make([]byte, nlmsgHeaderLen+inetDiagReqLen)
	le := binary.LittleEndian // the host's order, as netlink wants it; Linux runs this on little-endian machines
	le.PutUint32(b[0:], uint32(len(b)))
	le.PutUint16(b[4:], sockDiagByFamily)
	le.PutUint16(b[6:], nlmFRequest|nlmFDump)
	le.PutUint32(b[8:], seq)
	r := b[nlmsgHeaderLen:]
	r[0] = family
	r[1] = ipprotoTCP
	le.PutUint32(r[4:], tcpfListen)
	binary.BigEndian.PutUint16(r[8:], port) // idiag_sport: the kernel skips other ports
	return b
}

// ParseDiag reads the netlink messages of one receive of a sock_diag dump:
// the sockets they describe, and whether the dump is done (NLMSG_DONE). An
// NLMSG_ERROR message ends it with the errno the kernel gave.
func ParseDiag(b []byte) (socks []Socket, done bool, err error) {
	le := binary.LittleEndian
	for len(b) > 0 {
		if len(b) < nlmsgHeaderLen {
			return socks, false, fmt.Errorf("%w: %d bytes left, shorter than a header", ErrDiagMalformed, len(b))
		}
		n := int(le.Uint32(b))
		if n < nlmsgHeaderLen || n > len(b) {
			return socks, false, fmt.Errorf("%w: length %d of %d bytes", ErrDiagMalformed, n, len(b))
		}
		payload := b[nlmsgHeaderLen:n]
		switch typ := le.Uint16(b[4:]); typ {
		case nlmsgDone:
			return socks, true, nil
		case nlmsgError:
			if len(payload) < 4 {
				return socks, false, fmt.Errorf("%w: error message of %d bytes", ErrDiagMalformed, len(payload))
			}
			if errno := int32(le.Uint32(payload)); errno != 0 {
				return socks, false, fmt.Errorf("sock_diag: %w", syscall.Errno(-errno))
			}
		case sockDiagByFamily:
			s, err := parseDiagMsg(payload)
			if err != nil {
				return socks, false, err
			}
			socks = append(socks, s)
		}
		// Messages are aligned on 4 bytes (NLMSG_ALIGN).
		b = b[min(len(b), (n+3)&^3):]
	}
	return socks, false, nil
}

// parseDiagMsg reads one struct inet_diag_msg: family, state, then the
// socket's identity (source port and address in network order), and its
// inode at the end.
func parseDiagMsg(m []byte) (Socket, error) {
	if len(m) < inetDiagMsgLen {
		return Socket{}, fmt.Errorf("%w: inet_diag_msg of %d bytes", ErrDiagMalformed, len(m))
	}
	var a netip.Addr
	switch m[0] {
	case syscall.AF_INET:
		a = netip.AddrFrom4([4]byte(m[8:12]))
	case syscall.AF_INET6:
		a = netip.AddrFrom16([16]byte(m[8:24]))
	default:
		return Socket{}, fmt.Errorf("%w: address family %d", ErrDiagMalformed, m[0])
	}
	port := binary.BigEndian.Uint16(m[4:])
	return Socket{
		Local: netip.AddrPortFrom(a, port),
		State: int(m[1]),
		Inode: uint64(binary.LittleEndian.Uint32(m[68:])),
	}, nil
}
