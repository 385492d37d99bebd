package testutil

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Unread returns how many of the bytes written on c, a TCP connection
// whose peer is on this machine (in this process or another), the peer's
// application has not read yet; 0 means that every byte written before the
// call has been returned by a read on the other side. It asks the kernel
// (sock_diag netlink) about c's socket first — the bytes written on it so
// far: those sent (once; retransmissions aside) plus those not sent yet —
// then about the peer's: the bytes it has received and those in its
// receive queue. Acknowledgements play no part, so a delayed ACK does not
// delay the answer; the count is exact while nothing else is written on c.
func Unread(c net.Conn) (int, error) {
	local, err := addrPort(c.LocalAddr())
	if err != nil {
		return 0, err
	}
	remote, err := addrPort(c.RemoteAddr())
	if err != nil {
		return 0, err
	}
	ours, err := diag(local, remote)
	if err != nil {
		return 0, err
	}
	peer, err := diag(remote, local)
	if err != nil {
		return 0, err
	}
	written := ours.bytesSent - ours.bytesRetrans + uint64(ours.notSent)
	inFlight := uint64(0)
	if written > peer.bytesReceived {
		inFlight = written - peer.bytesReceived
	}
	return int(inFlight) + int(peer.rqueue), nil
}

func addrPort(a net.Addr) (netip.AddrPort, error) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("testutil.Unread: %v is not a TCP address", a)
	}
	ap := ta.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}

// sockState is what sock_diag says of a TCP socket (struct tcp_info).
type sockState struct {
	rqueue        uint32 // bytes received, not read yet
	notSent       uint32 // bytes written, not sent yet
	bytesSent     uint64 // bytes sent, retransmissions included
	bytesRetrans  uint64 // bytes sent again
	bytesReceived uint64 // bytes received
}

// Layout of the sock_diag messages (linux/inet_diag.h, linux/netlink.h).
const (
	nlmsgHdrLen    = 16
	inetDiagReqLen = 56 // struct inet_diag_req_v2
	inetDiagMsgLen = 72 // struct inet_diag_msg
	inetDiagInfo   = 2  // INET_DIAG_INFO: the struct tcp_info attribute
)

// diag asks the kernel for the TCP socket from local to remote.
func diag(local, remote netip.AddrPort) (sockState, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return sockState{}, fmt.Errorf("testutil.Unread: netlink socket: %w", err)
	}
	defer unix.Close(fd)

	req := make([]byte, nlmsgHdrLen+inetDiagReqLen)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	r := req[nlmsgHdrLen:]
	r[0] = unix.AF_INET
	if local.Addr().Is6() {
		r[0] = unix.AF_INET6
	}
	r[1] = unix.IPPROTO_TCP
	r[2] = 1 << (inetDiagInfo - 1)  // ask for tcp_info
	ne.PutUint32(r[4:], 0xffffffff) // any state
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], local.Port())
	binary.BigEndian.PutUint16(id[2:], remote.Port())
	la, ra := local.Addr().AsSlice(), remote.Addr().AsSlice()
	copy(id[4:20], la)
	copy(id[20:36], ra)
	ne.PutUint32(id[40:], 0xffffffff) // INET_DIAG_NOCOOKIE
	ne.PutUint32(id[44:], 0xffffffff)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return sockState{}, fmt.Errorf("testutil.Unread: netlink send: %w", err)
	}

	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return sockState{}, fmt.Errorf("testutil.Unread: netlink receive: %w", err)
	}
	msg := buf[:n]
	if len(msg) < nlmsgHdrLen {
		return sockState{}, errors.New("testutil.Unread: short netlink answer")
	}
	if typ := ne.Uint16(msg[4:]); typ == unix.NLMSG_ERROR {
		if len(msg) >= nlmsgHdrLen+4 {
			if errno := int32(ne.Uint32(msg[nlmsgHdrLen:])); errno != 0 {
				return sockState{}, fmt.Errorf("testutil.Unread: no socket from %v to %v: %w", local, remote, unix.Errno(-errno))
			}
		}
		return sockState{}, fmt.Errorf("testutil.Unread: netlink error for %v to %v", local, remote)
	}
	msg = msg[:min(len(msg), int(ne.Uint32(msg[0:])))]
	if len(msg) < nlmsgHdrLen+inetDiagMsgLen {
		return sockState{}, errors.New("testutil.Unread: short sock_diag message")
	}
	m := msg[nlmsgHdrLen:]
	st := sockState{rqueue: ne.Uint32(m[56:])}
	info, err := attribute(msg[nlmsgHdrLen+inetDiagMsgLen:], inetDiagInfo)
	if err != nil {
		return sockState{}, err
	}
	var ti unix.TCPInfo
	if need := unsafe.Offsetof(ti.Bytes_retrans) + 8; uintptr(len(info)) < need {
		return sockState{}, fmt.Errorf("testutil.Unread: tcp_info of %d bytes, want %d (Linux 4.19 or later)", len(info), need)
	}
	st.notSent = ne.Uint32(info[unsafe.Offsetof(ti.Notsent_bytes):])
	st.bytesSent = ne.Uint64(info[unsafe.Offsetof(ti.Bytes_sent):])
	st.bytesRetrans = ne.Uint64(info[unsafe.Offsetof(ti.Bytes_retrans):])
	st.bytesReceived = ne.Uint64(info[unsafe.Offsetof(ti.Bytes_received):])
	return st, nil
}

// attribute returns the payload of the netlink attribute of type typ.
func attribute(b []byte, typ uint16) ([]byte, error) {
	ne := binary.NativeEndian
	for len(b) >= 4 {
		l := int(ne.Uint16(b[0:]))
		if l < 4 || l > len(b) {
			break
		}
		if ne.Uint16(b[2:]) == typ {
			return b[4:l], nil
		}
		b = b[min(len(b), (l+3)&^3):]
	}
	return nil, fmt.Errorf("testutil.Unread: sock_diag answer without attribute %d", typ)
}
