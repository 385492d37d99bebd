package procnet

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"
)

// diagMsg builds one netlink message of type typ with payload, padded to
// 4 bytes as the kernel sends it.
func diagMsg(typ uint16, payload []byte) []byte {
	n := nlmsgHeaderLen + len(payload)
	b := make([]byte, (n+3)&^3)
	binary.LittleEndian.PutUint32(b, uint32(n))
	binary.LittleEndian.PutUint16(b[4:], typ)
	copy(b[nlmsgHeaderLen:], payload)
	return b
}

// inetDiagMsg builds a struct inet_diag_msg for a socket in state on
// addr, with inode.
func inetDiagMsg(addr netip.AddrPort, state uint8, inode uint32) []byte {
	m := make([]byte, inetDiagMsgLen)
	m[0] = syscall.AF_INET6
	if addr.Addr().Is4() {
		m[0] = syscall.AF_INET
	}
	m[1] = state
	binary.BigEndian.PutUint16(m[4:], addr.Port())
	a := addr.Addr().AsSlice()
	copy(m[8:], a)
	binary.LittleEndian.PutUint32(m[68:], inode)
	return m
}

func errnoMsg(e syscall.Errno) []byte {
	p := make([]byte, 4+nlmsgHeaderLen)
	binary.LittleEndian.PutUint32(p, uint32(-int32(e)))
	return diagMsg(nlmsgError, p)
}

func TestParseDiag(t *testing.T) {
	v4 := inetDiagMsg(netip.MustParseAddrPort("127.0.0.1:18230"), stateListen, 183311)
	v6 := inetDiagMsg(netip.MustParseAddrPort("[::]:8080"), stateListen, 4242)
	join := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	tests := []struct {
		name    string
		in      []byte
		want    []string // "addr state inode"
		done    bool
		wantErr error // nil: none; ErrDiagMalformed or an errno
	}{
		{"two sockets then done", join(diagMsg(sockDiagByFamily, v4), diagMsg(sockDiagByFamily, v6), diagMsg(nlmsgDone, make([]byte, 4))),
			[]string{"127.0.0.1:18230 10 183311", "[::]:8080 10 4242"}, true, nil},
		{"a part of a dump", diagMsg(sockDiagByFamily, v4), []string{"127.0.0.1:18230 10 183311"}, false, nil},
		{"done alone", diagMsg(nlmsgDone, nil), nil, true, nil},
		{"an unknown type is skipped", join(diagMsg(99, []byte{1, 2, 3}), diagMsg(nlmsgDone, nil)), nil, true, nil},
		{"an acknowledgement (errno 0)", join(errnoMsg(0), diagMsg(nlmsgDone, nil)), nil, true, nil},
		{"the kernel refuses", errnoMsg(syscall.EPERM), nil, false, syscall.EPERM},
		{"a header cut short", diagMsg(nlmsgDone, nil)[:10], nil, false, ErrDiagMalformed},
		{"a length past the end", func() []byte { b := diagMsg(sockDiagByFamily, v4); binary.LittleEndian.PutUint32(b, 1000); return b }(), nil, false, ErrDiagMalformed},
		{"a length shorter than a header", func() []byte { b := diagMsg(nlmsgDone, nil); binary.LittleEndian.PutUint32(b, 3); return b }(), nil, false, ErrDiagMalformed},
		{"an inet_diag_msg cut short", diagMsg(sockDiagByFamily, v4[:40]), nil, false, ErrDiagMalformed},
		{"an unknown family", func() []byte { m := slices.Clone(v4); m[0] = 99; return diagMsg(sockDiagByFamily, m) }(), nil, false, ErrDiagMalformed},
		{"an error message cut short", diagMsg(nlmsgError, []byte{1}), nil, false, ErrDiagMalformed},
	}
	for _, tt := range tests {
		socks, done, err := ParseDiag(tt.in)
		var got []string
		for _, s := range socks {
			got = append(got, s.Local.String()+" "+strconv.Itoa(s.State)+" "+strconv.FormatUint(s.Inode, 10))
		}
		if tt.wantErr != nil {
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("%s: error %v, want %v", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || done != tt.done || !slices.Equal(got, tt.want) {
			t.Errorf("%s: ParseDiag = %q, done %v, %v; want %q, done %v", tt.name, got, done, err, tt.want, tt.done)
		}
	}
}

// TestListeningSocketsLikeTheTables: the kernel's socket diagnostics list
// this test's listeners, IPv4 and IPv6, with the inodes /proc/net/tcp{,6}
// give them, and neither end of an established connection; asked for one
// port, that port alone.
func TestListeningSocketsLikeTheTables(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("sock_diag is Linux's")
	}
	ln4, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln4.Close()
	listeners := []net.Listener{ln4}
	if ln6, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		defer ln6.Close()
		listeners = append(listeners, ln6)
	} else {
		t.Logf("no IPv6 loopback (%v): IPv4 alone", err)
	}
	// An established connection to ln4: its client end must not be listed.
	conn, err := net.Dial("tcp4", ln4.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	server, err := ln4.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()

	fromTables := map[netip.AddrPort]uint64{}
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		socks, err := ReadSockets(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range socks {
			if s.Listening() {
				fromTables[netip.AddrPortFrom(s.Local.Addr().Unmap(), s.Local.Port())] = s.Inode
			}
		}
	}
	all, err := listeningSockets(0)
	if err != nil {
		t.Fatal(err)
	}
	byAddr := map[netip.AddrPort]Socket{}
	for _, s := range all {
		if !s.Listening() {
			t.Errorf("listed %+v, not a listening socket", s)
		}
		byAddr[s.Local] = s
	}
	for _, ln := range listeners {
		a := netip.MustParseAddrPort(ln.Addr().String())
		s, ok := byAddr[a]
		if !ok {
			t.Errorf("listener %s not listed (got %d sockets)", a, len(all))
			continue
		}
		if want := fromTables[a]; s.Inode == 0 || s.Inode != want {
			t.Errorf("listener %s: inode %d, /proc/net/tcp says %d", a, s.Inode, want)
		}
		one, err := listeningSockets(a.Port())
		if err != nil || len(one) == 0 || slices.ContainsFunc(one, func(o Socket) bool { return o.Local.Port() != a.Port() }) {
			t.Errorf("listeningSockets(%d) = %+v, %v; want the listeners on that port alone", a.Port(), one, err)
		}
	}
	client := netip.MustParseAddrPort(conn.LocalAddr().String())
	if s, ok := byAddr[client]; ok {
		t.Errorf("the client end of a connection was listed: %+v", s)
	}
}

func FuzzParseDiag(f *testing.F) {
	f.Add(slices.Concat(diagMsg(sockDiagByFamily, inetDiagMsg(netip.MustParseAddrPort("127.0.0.1:80"), stateListen, 7)), diagMsg(nlmsgDone, nil)))
	f.Add(diagMsg(sockDiagByFamily, inetDiagMsg(netip.MustParseAddrPort("[::1]:443"), stateListen, 9)))
	f.Add(errnoMsg(syscall.ENOENT))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		socks, done, err := ParseDiag(b)
		if err != nil && done {
			t.Fatalf("ParseDiag(%x): done and an error (%v)", b, err)
		}
		for _, s := range socks {
			if !s.Local.IsValid() || s.State < 0 || s.State > 0xFF {
				t.Fatalf("ParseDiag(%x) gave %+v", b, s)
			}
		}
		if len(socks) > len(b)/(nlmsgHeaderLen+inetDiagMsgLen) {
			t.Fatalf("ParseDiag(%x): %d sockets from %d bytes", b, len(socks), len(b))
		}
	})
}
