// Package procnet finds, from /proc, the process of this host that owns a
// TCP listening socket: the gateway behind a target address. The sockets
// in LISTEN state of /proc/net/tcp and tcp6 give the inode of the one
// bound to the address (or to the wildcard address on its port), and the
// process whose /proc/PID/fd links to that inode owns it; of several (a
// master and the workers it forked, which share the socket), the one
// whose parent does not also hold it.
//
// Reading another user's file descriptors takes root (or that user), and
// processes of another network namespace have sockets this one does not
// list: ListenerOwner then finds no one.
package procnet

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Owner is the process that owns a listening socket.
type Owner struct {
	PID  int
	Comm string // its command name (/proc/PID/comm)
	Exe  string // its executable ("" when it cannot be read)
}

// ErrNotFound is wrapped by ListenerOwner's error when no socket listens
// on the address, or no process readable from here holds it.
var ErrNotFound = errors.New("no listening socket found")

// ErrFormat is wrapped by ParseTCP's error: the bytes are not a
// /proc/net/tcp table.
var ErrFormat = errors.New("procnet: unexpected format")

// ListenerOwner returns the process that owns the TCP socket listening on
// addr ("ip:port", IPv6 in brackets), from the host's /proc.
func ListenerOwner(addr string) (Owner, error) { return FS("/proc").ListenerOwner(addr) }

// FS is the root of a proc file system ("/proc", or recorded files in
// tests).
type FS string

// ListenerOwner is the package's ListenerOwner, from f.
func (f FS) ListenerOwner(addr string) (Owner, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return Owner{}, fmt.Errorf("%q is not ip:port: %v", addr, err)
	}
	inodes := map[uint64]bool{}
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(filepath.Join(string(f), "net", table))
		if err != nil {
			continue // no IPv6, say
		}
		socks, err := ParseTCP(b)
		if err != nil {
			return Owner{}, fmt.Errorf("/proc/net/%s: %w", table, err)
		}
		for _, s := range socks {
			if s.Listening() && s.Serves(ap) {
				inodes[s.Inode] = true
			}
		}
	}
	if len(inodes) == 0 {
		return Owner{}, fmt.Errorf("%w on %s", ErrNotFound, addr)
	}
	holders, err := f.holders(inodes)
	if err != nil {
		return Owner{}, err
	}
	if len(holders) == 0 {
		return Owner{}, fmt.Errorf("%w on %s: a socket listens there, but no process readable from here holds it (another user's: run as root)", ErrNotFound, addr)
	}
	pid := holders[0]
	for _, p := range holders { // the one whose parent does not hold it too
		if !slices.Contains(holders, f.parent(p)) {
			pid = p
			break
		}
	}
	o := Owner{PID: pid}
	if c, err := os.ReadFile(filepath.Join(string(f), strconv.Itoa(pid), "comm")); err == nil {
		o.Comm = strings.TrimSpace(string(c))
	}
	o.Exe, _ = os.Readlink(filepath.Join(string(f), strconv.Itoa(pid), "exe"))
	return o, nil
}

// holders are the processes (sorted) with a file descriptor on one of the
// sockets inodes.
func (f FS) holders(inodes map[uint64]bool) ([]int, error) {
	entries, err := os.ReadDir(string(f))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		dir := filepath.Join(string(f), e.Name(), "fd")
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue // ended, or not ours to read
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(dir, fd.Name()))
			if err != nil {
				continue
			}
			if n, ok := socketInode(link); ok && inodes[n] {
				out = append(out, pid)
				break
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// socketInode reads "socket:[12345]".
func socketInode(link string) (uint64, bool) {
	s, ok := strings.CutPrefix(link, "socket:[")
	if !ok || !strings.HasSuffix(s, "]") {
		return 0, false
	}
	n, err := strconv.ParseUint(s[:len(s)-1], 10, 64)
	return n, err == nil
}

// parent is pid's parent pid (0 when unknown).
func (f FS) parent(pid int) int {
	b, err := os.ReadFile(filepath.Join(string(f), strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0
	}
	fields := bytes.Fields(b[end+1:])
	if len(fields) < 2 {
		return 0
	}
	p, _ := strconv.Atoi(string(fields[1]))
	return p
}

// Socket is one line of /proc/net/tcp or tcp6.
type Socket struct {
	Local netip.AddrPort
	State uint8 // the kernel's TCP state; tcpListen for LISTEN
	Inode uint64
}

// tcpListen is TCP_LISTEN in the st column.
const tcpListen = 0x0A

// Listening reports whether the socket is in LISTEN state.
func (s Socket) Listening() bool { return s.State == tcpListen }

// Serves reports whether a connection to ap reaches the socket: its port,
// and its address or the wildcard (an IPv6 wildcard takes IPv4 too, as a
// dual-stack socket does; a v4-mapped address is its IPv4 one).
func (s Socket) Serves(ap netip.AddrPort) bool {
	if s.Local.Port() != ap.Port() {
		return false
	}
	local, want := s.Local.Addr().Unmap(), ap.Addr().Unmap()
	return local == want || local.IsUnspecified() && (local.Is6() || want.Is4())
}

// ParseTCP reads a /proc/net/tcp or tcp6 table: its header line, then one
// socket a line ("sl local rem st tx:rx tr:when retrnsmt uid timeout
// inode ..."), addresses in hexadecimal, each 32-bit word in the host's
// byte order (little-endian on the machines this reads).
func ParseTCP(b []byte) ([]Socket, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	var out []Socket
	first := true
	for sc.Scan() {
		line := sc.Text()
		if first {
			first = false
			if !strings.Contains(line, "local_address") {
				return nil, fmt.Errorf("%w: header %.60q", ErrFormat, line)
			}
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 10 {
			return nil, fmt.Errorf("%w: line %.60q has %d fields, want at least 10", ErrFormat, line, len(f))
		}
		local, err := parseHexAddr(f[1])
		if err != nil {
			return nil, fmt.Errorf("%w: line %.60q: %v", ErrFormat, line, err)
		}
		st, err := strconv.ParseUint(f[3], 16, 8)
		if err != nil {
			return nil, fmt.Errorf("%w: line %.60q: state %q", ErrFormat, line, f[3])
		}
		inode, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: line %.60q: inode %q", ErrFormat, line, f[9])
		}
		out = append(out, Socket{Local: local, State: uint8(st), Inode: inode})
	}
	if first {
		return nil, fmt.Errorf("%w: empty", ErrFormat)
	}
	return out, sc.Err()
}

// parseHexAddr reads "0100007F:1F90" (IPv4) or 32 hex digits and a port
// (IPv6): each 4-byte word of the address little-endian, the port
// big-endian.
func parseHexAddr(s string) (netip.AddrPort, error) {
	a, p, ok := strings.Cut(s, ":")
	if !ok || len(p) != 4 || (len(a) != 8 && len(a) != 32) {
		return netip.AddrPort{}, fmt.Errorf("address %q: want hex IP:port", s)
	}
	raw, err := hex.DecodeString(a)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("address %q: %v", s, err)
	}
	for i := 0; i < len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("address %q: port %q", s, p)
	}
	ip, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(ip, uint16(port)), nil
}
