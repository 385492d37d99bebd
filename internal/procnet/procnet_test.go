package procnet

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recordedTCP and recordedTCP6 are tables of the development machine (a
// few lines of each, an IPv6 wildcard listener added to the second).
const (
	recordedTCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:8ABD 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111776 2 00000000392be154 100 0 0 10 0
   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 974063 1 0000000022984b66 100 0 1 10 0
   2: 0100007F:8ABD 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 552053 1 0000000023327b0f 100 0 1 10 0
`
	recordedTCP6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3001 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000000000000:1F92 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3002 1 0000000000000000 100 0 0 10 0
`
)

func TestParseTCP(t *testing.T) {
	socks, err := ParseTCP([]byte(recordedTCP))
	if err != nil {
		t.Fatal(err)
	}
	want := []Socket{
		{netip.MustParseAddrPort("127.0.0.1:35517"), tcpListen, 1111776},
		{netip.MustParseAddrPort("0.0.0.0:8080"), tcpListen, 974063},
		{netip.MustParseAddrPort("127.0.0.1:35517"), 1, 552053},
	}
	if len(socks) != len(want) {
		t.Fatalf("ParseTCP = %+v, want %+v", socks, want)
	}
	for i := range want {
		if socks[i] != want[i] {
			t.Errorf("socket %d = %+v, want %+v", i, socks[i], want[i])
		}
	}
	six, err := ParseTCP([]byte(recordedTCP6))
	if err != nil || len(six) != 2 || six[0].Local != netip.MustParseAddrPort("[::1]:8081") || !six[1].Local.Addr().IsUnspecified() {
		t.Errorf("ParseTCP(tcp6) = %+v, %v", six, err)
	}
	for _, bad := range []string{"", "no header\n", "  sl  local_address\n 0: 0100007F:8ABD\n", "  sl  local_address\n 0: 0100007G:8ABD 0:0 0A a b c d e f 1\n",
		"  sl  local_address\n 0: 0100007F:8ABD 0:0 ZZ a b c d e 1\n", "  sl  local_address\n 0: 0100007F:8ABD 0:0 0A a b c d e x\n"} {
		if _, err := ParseTCP([]byte(bad)); !errors.Is(err, ErrFormat) {
			t.Errorf("ParseTCP(%q) = %v, want ErrFormat", bad, err)
		}
	}
}

func TestServes(t *testing.T) {
	sock := func(s string) Socket { return Socket{Local: netip.MustParseAddrPort(s), State: tcpListen} }
	for _, c := range []struct {
		sock, addr string
		want       bool
	}{
		{"127.0.0.1:80", "127.0.0.1:80", true},
		{"127.0.0.1:80", "127.0.0.2:80", false},
		{"127.0.0.1:80", "127.0.0.1:81", false},
		{"0.0.0.0:80", "127.0.0.5:80", true},
		{"0.0.0.0:80", "[::1]:80", false},
		{"[::]:80", "127.0.0.1:80", true}, // dual stack
		{"[::]:80", "[::1]:80", true},
		{"[::ffff:127.0.0.1]:80", "127.0.0.1:80", true},
	} {
		if got := sock(c.sock).Serves(netip.MustParseAddrPort(c.addr)); got != c.want {
			t.Errorf("%s serves %s = %v, want %v", c.sock, c.addr, got, c.want)
		}
	}
}

// TestListenerOwnerSelf: a socket this process listens on is found as
// this process's, whatever it is bound to; a port nothing listens on is
// ErrNotFound.
func TestListenerOwnerSelf(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp")
	}
	for _, bind := range []string{"127.0.0.1:0", "0.0.0.0:0"} {
		ln, err := net.Listen("tcp", bind)
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		addr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)).String()
		o, err := ListenerOwner(addr)
		exe, _ := os.Executable()
		if err != nil || o.PID != os.Getpid() || o.Comm == "" || (o.Exe != "" && filepath.Base(o.Exe) != filepath.Base(exe)) {
			t.Errorf("bound to %s: ListenerOwner(%s) = %+v, %v; want this process (%d)", bind, addr, o, err, os.Getpid())
		}
		ln.Close()
		if _, err := ListenerOwner(addr); !errors.Is(err, ErrNotFound) {
			t.Errorf("after close: ListenerOwner(%s) = %v, want ErrNotFound", addr, err)
		}
	}
	if _, err := ListenerOwner("localhost:80"); err == nil || !strings.Contains(err.Error(), "not ip:port") {
		t.Errorf("a name: %v, want an error naming the form", err)
	}
}

// FuzzParseTCP: any bytes parse or fail with ErrFormat, and an address
// written as the kernel writes it reads back.
func FuzzParseTCP(f *testing.F) {
	f.Add([]byte(recordedTCP))
	f.Add([]byte(recordedTCP6))
	f.Add([]byte("  sl  local_address\n 0: 0100007F:8ABD 00000000:0000 0A x x x x x 1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		socks, err := ParseTCP(b)
		if err != nil {
			if !errors.Is(err, ErrFormat) && !strings.Contains(err.Error(), "token too long") {
				t.Errorf("ParseTCP(%q): %v, want ErrFormat", b, err)
			}
			return
		}
		for _, s := range socks {
			if !s.Local.IsValid() {
				t.Errorf("ParseTCP(%q): invalid address %v", b, s.Local)
			}
		}
	})
}
