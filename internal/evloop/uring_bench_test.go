//go:build linux

package evloop

import (
	"net"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BenchmarkSendBatch measures what one submission for all the writes due
// in a wake could save: a token's event (160 bytes) written to each of 32
// loopback TCP connections with a write(2) each, against one
// io_uring_enter(2) of 32 sends. The send-ns/write metric is the time of
// the writes alone, per connection (the peers' reads that keep the
// sockets empty are left out of it).
func BenchmarkSendBatch(b *testing.B) {
	const conns = 32
	senders, receivers := tcpPairs(b, conns)
	event := make([]byte, 160)
	sink := make([]byte, 64<<10)
	drain := func() {
		for _, fd := range receivers {
			for {
				if n, err := unix.Read(fd, sink); n <= 0 || err != nil {
					break
				}
			}
		}
	}
	run := func(b *testing.B, send func()) {
		var spent time.Duration
		for b.Loop() {
			start := time.Now()
			send()
			spent += time.Since(start)
			drain()
		}
		b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N*conns), "send-ns/write")
	}
	b.Run("write", func(b *testing.B) {
		run(b, func() {
			for _, fd := range senders {
				if n, err := RawWrite(fd, event); n != len(event) || err != nil {
					b.Fatalf("write: %d, %v", n, err)
				}
			}
		})
	})
	b.Run("io_uring", func(b *testing.B) {
		r, err := newRing(64, 128, iorSetupSubmitAll)
		if err != nil {
			b.Skipf("io_uring: %v", err)
		}
		defer r.close()
		run(b, func() {
			for _, fd := range senders {
				e := r.sqe()
				e.opcode = iorOpSend
				e.fd = int32(fd)
				e.addr = uint64(uintptr(unsafe.Pointer(&event[0])))
				e.len = uint32(len(event))
				e.opFlags = unix.MSG_DONTWAIT
			}
			if err := r.enter(0); err != nil {
				b.Fatal(err)
			}
			got := r.completions(func(c *ioUringCqe) {
				if c.res != int32(len(event)) {
					b.Fatalf("send: %d", c.res)
				}
			})
			if got != conns {
				b.Fatalf("%d completions, want %d", got, conns)
			}
		})
	})
}

// tcpPairs opens n loopback TCP connections and returns the raw
// non-blocking descriptors of both ends.
func tcpPairs(b *testing.B, n int) (senders, receivers []int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	fdOf := func(c net.Conn) int {
		f, err := c.(*net.TCPConn).File()
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
		fd := int(f.Fd())
		unix.SetNonblock(fd, true)
		b.Cleanup(func() { f.Close() })
		return fd
	}
	for range n {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		a, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		c.(*net.TCPConn).SetNoDelay(true)
		senders = append(senders, fdOf(c))
		receivers = append(receivers, fdOf(a))
	}
	return senders, receivers
}

// BenchmarkRawSyscall is the cost of entering and leaving the kernel: a
// raw getpid(2), what a system call costs beyond its work (docs/PERF.md
// weighs io_uring's savings with it).
func BenchmarkRawSyscall(b *testing.B) {
	for b.Loop() {
		unix.RawSyscall(unix.SYS_GETPID, 0, 0, 0)
	}
}
