package procnet

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// Lines as Linux prints them: a wildcard listener on 2024, one on
// 127.0.0.1:18230, an established connection, an IPv6 wildcard listener on
// 8080 and an IPv4-mapped one on 9090.
const (
	tcpTable = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1076 1 000000005253abca 100 0 0 10 0
   1: 0100007F:4736 00000000:0000 0A 00000000:00000619 00:00000000 00000000  1000        0 183311 1563 00000000cafd9d9f 100 0 0 10 0
   2: 0100007F:471F 0100007F:DA10 06 00000000:00000000 03:00000486 00000000     0        0 0 3 0000000092d4eadf
`
	tcp6Table = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 100 0 0 10 0
   1: 0000000000000000FFFF00000100007F:2382 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 5151 1 0000000000000000 100 0 0 10 0
`
)

func TestParseSocket(t *testing.T) {
	tests := []struct {
		line  string
		local string
		state int
		inode uint64
	}{
		{"   1: 0100007F:4736 00000000:0000 0A 00000000:00000619 00:00000000 00000000  1000        0 183311 1563 0 100 0 0 10 0",
			"127.0.0.1:18230", 0x0A, 183311},
		{"   0: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1076 1 0 100 0 0 10 0",
			"0.0.0.0:2024", 0x0A, 1076},
		{"   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0",
			"[::]:8080", 0x0A, 4242},
		{"   1: 0000000000000000FFFF00000100007F:2382 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 5151 1 0",
			"[::ffff:127.0.0.1]:9090", 0x0A, 5151},
		{"   2: 0100007F:471F 0100007F:DA10 06 00000000:00000000 03:00000486 00000000     0        0 0 3 0",
			"127.0.0.1:18207", 0x06, 0},
	}
	for _, tt := range tests {
		s, err := ParseSocket(tt.line)
		if err != nil || s.Local.String() != tt.local || s.State != tt.state || s.Inode != tt.inode {
			t.Errorf("ParseSocket(%q) = %v %#x %d, %v; want %s %#x %d", tt.line, s.Local, s.State, s.Inode, err, tt.local, tt.state, tt.inode)
		}
	}
	for _, bad := range []string{"", "sl local_address", "0: zz:0050 00000000:0000 0A 0 0 0 0 0 1",
		"0: 0100007F 00000000:0000 0A 0 0 0 0 0 1", "0: 0100007F:ZZZZ 00000000:0000 0A 0 0 0 0 0 1",
		"0: 0100007F:0050 00000000:0000 XY 0 0 0 0 0 1", "0: 0100007F:0050 00000000:0000 0A 0 0 0 0 0 -1",
		"0: 01007F:0050 00000000:0000 0A 0 0 0 0 0 1"} {
		if s, err := ParseSocket(bad); err == nil {
			t.Errorf("ParseSocket(%q) = %+v; want an error", bad, s)
		}
	}
}

func TestAccepts(t *testing.T) {
	sock := func(local string) Socket { return Socket{Local: netip.MustParseAddrPort(local), State: stateListen} }
	tests := []struct {
		local, addr string
		want        bool
	}{
		{"127.0.0.1:80", "127.0.0.1:80", true},
		{"127.0.0.1:80", "127.0.0.1:81", false},
		{"127.0.0.1:80", "127.0.0.2:80", false},
		{"0.0.0.0:80", "127.0.0.5:80", true},
		{"0.0.0.0:80", "[::1]:80", false},
		{"[::]:80", "127.0.0.1:80", true}, // dual stack
		{"[::]:80", "[::1]:80", true},
		{"[::ffff:127.0.0.1]:80", "127.0.0.1:80", true},
		{"[::1]:80", "127.0.0.1:80", false},
	}
	for _, tt := range tests {
		if got := sock(tt.local).Accepts(netip.MustParseAddrPort(tt.addr)); got != tt.want {
			t.Errorf("listening on %s accepts %s = %t, want %t", tt.local, tt.addr, got, tt.want)
		}
	}
	established := Socket{Local: netip.MustParseAddrPort("127.0.0.1:80"), State: 0x01}
	if established.Accepts(netip.MustParseAddrPort("127.0.0.1:80")) {
		t.Error("an established socket accepts connections; want only listening ones to")
	}
}

// fakeProc builds a /proc tree: the two socket tables, and processes
// given as pid -> fd links, comm ("" for none: the process exited
// between the fd scan and the comm read).
func fakeProc(t *testing.T, procs map[string]struct {
	comm string
	fds  []string
}) Table {
	t.Helper()
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "net"), 0o755))
	must(os.WriteFile(filepath.Join(root, "net", "tcp"), []byte(tcpTable), 0o644))
	must(os.WriteFile(filepath.Join(root, "net", "tcp6"), []byte(tcp6Table), 0o644))
	must(os.MkdirAll(filepath.Join(root, "self"), 0o755)) // not a pid: skipped
	for pid, p := range procs {
		dir := filepath.Join(root, pid)
		must(os.MkdirAll(filepath.Join(dir, "fd"), 0o755))
		for i, link := range p.fds {
			must(os.Symlink(link, filepath.Join(dir, "fd", string(rune('0'+i)))))
		}
		if p.comm != "" {
			must(os.WriteFile(filepath.Join(dir, "comm"), []byte(p.comm+"\n"), 0o644))
			must(os.Symlink("/usr/sbin/"+p.comm, filepath.Join(dir, "exe")))
		}
	}
	must(os.MkdirAll(filepath.Join(root, "77"), 0o755)) // no fd directory: gone, skipped
	return Table{Root: root}
}

func TestListenerOwnersFakeProc(t *testing.T) {
	type proc = struct {
		comm string
		fds  []string
	}
	tab := fakeProc(t, map[string]proc{
		"100": {"nginx", []string{"/dev/null", "socket:[183311]", "pipe:[9]"}}, // master
		"101": {"nginx", []string{"socket:[183311]"}},                          // worker
		"200": {"haproxy", []string{"socket:[4242]"}},
		"300": {"", []string{"socket:[183311]"}},        // exited before its comm was read
		"400": {"bash", []string{"socket:[1]", "anon"}}, // unrelated
		"500": {"caddy", []string{"socket:[5151]"}},
	})
	tests := []struct {
		addr string
		want []string // "pid comm"
	}{
		{"127.0.0.1:18230", []string{"100 nginx", "101 nginx"}},
		{"127.0.0.1:8080", []string{"200 haproxy"}}, // the IPv6 wildcard takes IPv4 too
		{"[::1]:8080", []string{"200 haproxy"}},
		{"127.0.0.1:9090", []string{"500 caddy"}},
		{"127.0.0.1:2024", nil}, // inode 1076: nobody we may read
		{"127.0.0.1:1", nil},
	}
	for _, tt := range tests {
		got, err := tab.ListenerOwners(netip.MustParseAddrPort(tt.addr))
		if err != nil {
			t.Fatalf("ListenerOwners(%s): %v", tt.addr, err)
		}
		var names []string
		for _, p := range got {
			names = append(names, strconv.Itoa(p.PID)+" "+p.Comm)
			if p.Exe != "/usr/sbin/"+p.Comm {
				t.Errorf("%d: exe %q, want /usr/sbin/%s", p.PID, p.Exe, p.Comm)
			}
		}
		if strings.Join(names, ",") != strings.Join(tt.want, ",") {
			t.Errorf("ListenerOwners(%s) = %v, want %v", tt.addr, names, tt.want)
		}
	}
}

// TestListenerOwner: of a master and the worker it forked, both holding
// the socket, the master; a worker whose master does not hold it (or
// whose stat is gone) is the owner itself.
func TestListenerOwner(t *testing.T) {
	type proc = struct {
		comm string
		fds  []string
	}
	tab := fakeProc(t, map[string]proc{
		"100": {"nginx", []string{"socket:[183311]"}},
		"101": {"nginx", []string{"socket:[183311]"}},
		"200": {"haproxy", []string{"socket:[4242]"}},
	})
	stat := func(pid, ppid string) {
		t.Helper()
		line := pid + " (nginx: (x) worker) S " + ppid + " 1 1 0 -1\n" // a comm with spaces and parentheses
		if err := os.WriteFile(filepath.Join(tab.Root, pid, "stat"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// 100's parent is 1 (not an owner), 101's is 100: the master is 100.
	stat("100", "1")
	stat("101", "100")
	tests := []struct {
		addr    string
		wantPID int
		wantErr error
	}{
		{"127.0.0.1:18230", 100, nil},
		{"127.0.0.1:8080", 200, nil}, // no stat: its own owner
		{"127.0.0.1:1", 0, ErrNotFound},
		{"127.0.0.1:2024", 0, ErrNotFound}, // listed, but nobody we may read holds it
	}
	for _, tt := range tests {
		p, err := tab.ListenerOwner(tt.addr)
		if !errors.Is(err, tt.wantErr) || p.PID != tt.wantPID {
			t.Errorf("ListenerOwner(%s) = %d, %v; want %d, %v", tt.addr, p.PID, err, tt.wantPID, tt.wantErr)
		}
	}
	// The worker as the parent's child the other way round: 100 a child of
	// 101 makes 101 the master.
	stat("100", "101")
	stat("101", "1")
	if p, err := tab.ListenerOwner("127.0.0.1:18230"); err != nil || p.PID != 101 {
		t.Errorf("ListenerOwner with 101 the parent = %d, %v; want 101", p.PID, err)
	}
	if _, err := tab.ListenerOwner("localhost:80"); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("ListenerOwner(localhost:80) = %v, want an address error", err)
	}
}

func TestListenerOwnersNoTables(t *testing.T) {
	if _, err := (Table{Root: t.TempDir()}).ListenerOwners(netip.MustParseAddrPort("127.0.0.1:80")); err == nil {
		t.Error("ListenerOwners without socket tables succeeded; want an error")
	}
}

// TestListenerOwnersThisProcess looks up a listener of this very test in
// the machine's /proc.
func TestListenerOwnersThisProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/net/tcp is Linux's")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := netip.MustParseAddrPort(ln.Addr().String())
	got, err := ListenerOwners(addr)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].PID != os.Getpid() || got[0].Comm == "" {
		t.Fatalf("ListenerOwners(%s) = %+v; want this process (%d) alone", addr, got, os.Getpid())
	}
	exe, _ := os.Executable()
	if got[0].Exe != exe {
		t.Errorf("exe %q, want %q", got[0].Exe, exe)
	}
	ln.Close()
	if got, _ := ListenerOwners(addr); len(got) != 0 {
		t.Errorf("after the close ListenerOwners(%s) = %+v; want none", addr, got)
	}
}

func FuzzParseSocket(f *testing.F) {
	for _, l := range strings.Split(tcpTable+tcp6Table, "\n") {
		f.Add(l)
	}
	f.Add("0: 0100007F:0050 00000000:0000 0A 0 0 0 0 0 1")
	f.Fuzz(func(t *testing.T, line string) {
		s, err := ParseSocket(line)
		if err != nil || strings.ContainsAny(line, "\r\n") {
			return
		}
		if !s.Local.IsValid() || s.State < 0 || s.State > 0xFF {
			t.Fatalf("ParseSocket(%q) = %+v without an error", line, s)
		}
		// Reading it as a table (behind a header) gives the same socket.
		got, err := ReadSockets(strings.NewReader("header\n" + line + "\n"))
		if err != nil || len(got) != 1 && len(line) < MaxLineBytes || len(got) == 1 && got[0] != s {
			t.Fatalf("ReadSockets of %q = %+v, %v; want [%+v]", line, got, err, s)
		}
	})
}
