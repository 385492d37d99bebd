// Package procnet finds, on Linux, the local processes that own a TCP
// listening socket: given the address a client connects to, which process
// accepts there (a gateway's master and workers, say). It asks the
// kernel's socket diagnostics (netlink, sock_diag(7)) for the listening
// socket's inode — or, where it cannot, reads /proc/net/tcp and
// /proc/net/tcp6 — then each /proc/PID/fd for a link to that socket, then
// the process's comm and exe.
//
// /proc is read as it is, without locks: a process may exit, or close the
// socket, in the middle of a lookup. An entry that vanishes, or that this
// process may not read (another user's fds), is skipped, never an error:
// the lookup then finds fewer owners, or none. Errors are returned only
// when the socket tables themselves cannot be read (no /proc, not Linux).
//
// The sse-latency report names the gateway from the owner (package
// gateway); the same lookup serves accounting a gateway's CPU from
// /proc/PID/stat.
package procnet

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Root is where /proc is mounted.
const Root = "/proc"

// Bounds on what a lookup reads: a socket table line longer than
// MaxLineBytes is skipped; at most MaxCommBytes of comm are kept.
const (
	MaxLineBytes = 512
	MaxCommBytes = 64
)

// stateListen is the TCP state of a listening socket in /proc/net/tcp
// (TCP_LISTEN).
const stateListen = 0x0A

// Process is a process that owns a listening socket.
type Process struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm"`          // /proc/PID/comm: the executable's name, at most 15 bytes
	Exe  string `json:"exe,omitempty"` // /proc/PID/exe: the executable's path; "" when it may not be read
}

// Socket is one line of a /proc/net/tcp{,6} table.
type Socket struct {
	Local netip.AddrPort // the local address (IPv4 in tcp, IPv6 or IPv4-mapped in tcp6)
	State int            // TCP state: 0x0A is listening
	Inode uint64         // the socket's inode: /proc/PID/fd links read "socket:[<inode>]"
}

// Listening reports whether the socket is a listening one.
func (s Socket) Listening() bool { return s.State == stateListen }

// Accepts reports whether a listening socket s accepts connections to
// addr: same port, and the same address or a wildcard one (0.0.0.0 for
// IPv4; :: for both, since a dual-stack socket accepts IPv4 too).
func (s Socket) Accepts(addr netip.AddrPort) bool {
	if !s.Listening() || s.Local.Port() != addr.Port() {
		return false
	}
	local, want := s.Local.Addr().Unmap(), addr.Addr().Unmap()
	switch {
	case local == want:
		return true
	case local.IsUnspecified() && local.Is4():
		return want.Is4()
	case local.IsUnspecified():
		return true
	}
	return false
}

// ErrMalformed is wrapped by the error of a socket table line that is not
// one.
var ErrMalformed = errors.New("malformed /proc/net/tcp line")

// ParseSocket reads one data line of /proc/net/tcp or /proc/net/tcp6:
//
//	0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000 0 183311 1 ...
//
// the slot, the local address as hex (the IPv4 address as one 32-bit word
// in host order, little-endian on the machines Linux runs this on; IPv6 as
// four such words), the remote address, the state, the queues, timers,
// retransmits, uid, timeout and inode.
func ParseSocket(line string) (Socket, error) {
	f := strings.Fields(line)
	if len(f) < 10 || !strings.HasSuffix(f[0], ":") {
		return Socket{}, fmt.Errorf("%w: %d fields", ErrMalformed, len(f))
	}
	local, err := parseHexAddr(f[1])
	if err != nil {
		return Socket{}, fmt.Errorf("%w: local address %q: %v", ErrMalformed, f[1], err)
	}
	state, err := strconv.ParseUint(f[3], 16, 8)
	if err != nil {
		return Socket{}, fmt.Errorf("%w: state %q", ErrMalformed, f[3])
	}
	inode, err := strconv.ParseUint(f[9], 10, 64)
	if err != nil {
		return Socket{}, fmt.Errorf("%w: inode %q", ErrMalformed, f[9])
	}
	return Socket{Local: local, State: int(state), Inode: inode}, nil
}

// parseHexAddr reads "0100007F:1F90" (IPv4) or a 32-digit IPv6 address
// and its port.
func parseHexAddr(s string) (netip.AddrPort, error) {
	host, port, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, errors.New("no port")
	}
	p, err := strconv.ParseUint(port, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("port %q", port)
	}
	raw, err := hex.DecodeString(host)
	if err != nil || len(raw) != 4 && len(raw) != 16 {
		return netip.AddrPort{}, fmt.Errorf("address %q", host)
	}
	// Each 32-bit word is printed in host order: little-endian.
	for i := 0; i < len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	a, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(a, uint16(p)), nil
}

// ReadSockets reads a socket table (the header line first), skipping the
// lines it cannot parse.
func ReadSockets(r io.Reader) ([]Socket, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, MaxLineBytes), MaxLineBytes)
	var out []Socket
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue
		}
		if s, err := ParseSocket(sc.Text()); err == nil {
			out = append(out, s)
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, bufio.ErrTooLong) {
		return out, err
	}
	return out, nil
}

// Table is a /proc tree to look processes up in: Root, or a copy a test
// built.
type Table struct {
	Root string
}

// Local is the Table of this machine's /proc.
var Local = Table{Root: Root}

// ListenerOwners returns the processes owning a listening socket that
// accepts connections to addr (Local's /proc).
func ListenerOwners(addr netip.AddrPort) ([]Process, error) { return Local.ListenerOwners(addr) }

// ListenerOwners returns the processes owning a listening socket that
// accepts connections to addr, by PID; none when no such socket is
// listed, or none of its owners may be read. It fails only when neither
// socket table can be read.
func (t Table) ListenerOwners(addr netip.AddrPort) ([]Process, error) {
	inodes, err := t.listeningInodes(addr)
	if err != nil || len(inodes) == 0 {
		return nil, err
	}
	return t.owners(inodes), nil
}

// listeningInodes returns the inodes of the listening sockets that accept
// addr: on this machine's /proc from the kernel's socket diagnostics
// (listeningSockets), else — or when those cannot be asked — from tcp and
// tcp6.
func (t Table) listeningInodes(addr netip.AddrPort) (map[uint64]bool, error) {
	inodes := map[uint64]bool{}
	if t.Root == Root {
		if socks, err := listeningSockets(addr.Port()); err == nil {
			for _, s := range socks {
				if s.Accepts(addr) && s.Inode != 0 {
					inodes[s.Inode] = true
				}
			}
			return inodes, nil
		}
	}
	var errs []error
	read := 0
	for _, name := range []string{"tcp", "tcp6"} {
		f, err := os.Open(filepath.Join(t.Root, "net", name))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		socks, err := ReadSockets(f)
		f.Close()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		read++
		for _, s := range socks {
			if s.Accepts(addr) && s.Inode != 0 {
				inodes[s.Inode] = true
			}
		}
	}
	if read == 0 {
		return nil, fmt.Errorf("procnet: reading the socket tables: %w", errors.Join(errs...))
	}
	return inodes, nil
}

// owners scans /proc/PID/fd of every process for a link to one of the
// inodes. A process that exits meanwhile, or whose fds may not be read,
// is skipped.
//
// On this machine's /proc, sockets this process holds are its own: a
// socket is shared only by a fork or by passing its descriptor, and
// sse-latency does neither (Go opens every descriptor close-on-exec).
// When it holds every one of the inodes — a run whose target is its own
// server — it is their one owner, and the other processes' descriptors
// (hundreds of readlinks, ~3.5 ms) are not read.
func (t Table) owners(inodes map[uint64]bool) []Process {
	if t.Root == Root {
		self := os.Getpid()
		if t.holdsAll(self, inodes) {
			if p, ok := t.Process(self); ok {
				return []Process{p}
			}
		}
	}
	entries, err := os.ReadDir(t.Root)
	if err != nil {
		return nil
	}
	var out []Process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		if t.holds(pid, inodes) {
			if p, ok := t.Process(pid); ok {
				out = append(out, p)
			}
		}
	}
	slices.SortFunc(out, func(a, b Process) int { return cmp.Compare(a.PID, b.PID) })
	return out
}

// holds reports whether process pid has a descriptor on one of the
// inodes.
func (t Table) holds(pid int, inodes map[uint64]bool) bool {
	dir := filepath.Join(t.Root, strconv.Itoa(pid), "fd")
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false // gone, or not ours to read
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(dir, fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if n, ok := socketInode(link); ok && inodes[n] {
			return true
		}
	}
	return false
}

// holdsAll reports whether process pid has a descriptor on each of the
// inodes (at least one).
func (t Table) holdsAll(pid int, inodes map[uint64]bool) bool {
	dir := filepath.Join(t.Root, strconv.Itoa(pid), "fd")
	fds, err := os.ReadDir(dir)
	if err != nil || len(inodes) == 0 {
		return false
	}
	held := make(map[uint64]bool, len(inodes)) // two descriptors may share a socket
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(dir, fd.Name()))
		if err != nil {
			continue
		}
		if n, ok := socketInode(link); ok && inodes[n] {
			held[n] = true
		}
	}
	return len(held) == len(inodes)
}

// socketInode reads the inode of a descriptor link "socket:[183311]".
func socketInode(link string) (uint64, bool) {
	s, ok := strings.CutPrefix(link, "socket:[")
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, "]")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// Process returns process pid's comm and exe; false when it is gone.
func (t Table) Process(pid int) (Process, bool) {
	dir := filepath.Join(t.Root, strconv.Itoa(pid))
	b, err := os.ReadFile(filepath.Join(dir, "comm"))
	if err != nil {
		return Process{}, false
	}
	b = bytes.TrimRight(b[:min(len(b), MaxCommBytes)], "\n")
	exe, _ := os.Readlink(filepath.Join(dir, "exe")) // another user's: not readable
	return Process{PID: pid, Comm: string(b), Exe: strings.TrimSuffix(exe, " (deleted)")}, true
}

// ErrNotFound is wrapped by ListenerOwner's error when no socket listens
// on the address, or no process readable from here holds it.
var ErrNotFound = errors.New("no listening socket found")

// ListenerOwner returns the process that owns the TCP socket listening on
// addr ("ip:port", IPv6 in brackets), from this host's /proc: of several
// owners (a master and the workers it forked share the socket), the one
// whose parent does not hold it too.
func ListenerOwner(addr string) (Process, error) { return Local.ListenerOwner(addr) }

// ListenerOwner is the package's ListenerOwner, from t.
func (t Table) ListenerOwner(addr string) (Process, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return Process{}, fmt.Errorf("%q is not ip:port: %v", addr, err)
	}
	inodes, err := t.listeningInodes(ap)
	if err != nil {
		return Process{}, err
	}
	if len(inodes) == 0 {
		return Process{}, fmt.Errorf("%w on %s", ErrNotFound, addr)
	}
	owners := t.owners(inodes)
	if len(owners) == 0 {
		return Process{}, fmt.Errorf("%w on %s: a socket listens there, but no process readable from here holds it (another user's: run as root)", ErrNotFound, addr)
	}
	for _, p := range owners {
		parent := t.parent(p.PID)
		if !slices.ContainsFunc(owners, func(o Process) bool { return o.PID == parent }) {
			return p, nil
		}
	}
	return owners[0], nil
}

// parent is pid's parent PID, from /proc/PID/stat (0 when unknown).
func (t Table) parent(pid int) int {
	b, err := os.ReadFile(filepath.Join(t.Root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	end := bytes.LastIndexByte(b, ')') // comm may hold spaces and parentheses
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
