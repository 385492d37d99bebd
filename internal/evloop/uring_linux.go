//go:build linux

package evloop

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file is the io_uring interface itself, in Go on the raw system
// calls (io_uring_setup(2), io_uring_enter(2), io_uring_register(2)): the
// structures of <linux/io_uring.h>, the rings mapped into memory, and a
// ring of provided buffers. The memory the kernel shares with us is
// ordered with sync/atomic: the kernel reads the tail of a ring we fill
// after the entries (a release store), and we read the entries of a ring
// it fills after its tail (an acquire load).

// ioUringParams is struct io_uring_params.
type ioUringParams struct {
	sqEntries    uint32
	cqEntries    uint32
	flags        uint32
	sqThreadCPU  uint32
	sqThreadIdle uint32
	features     uint32
	wqFd         uint32
	resv         [3]uint32
	sqOff        ioSqringOffsets
	cqOff        ioCqringOffsets
}

// ioSqringOffsets is struct io_sqring_offsets.
type ioSqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

// ioCqringOffsets is struct io_cqring_offsets.
type ioCqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// ioUringSqe is struct io_uring_sqe (64 bytes), with the fields this
// package uses named by their use.
type ioUringSqe struct {
	opcode   uint8
	flags    uint8
	ioprio   uint16
	fd       int32
	off      uint64
	addr     uint64
	len      uint32
	opFlags  uint32 // msg_flags, poll32_events, cancel_flags, …
	userData uint64
	bufGroup uint16
	_        uint16 // personality
	_        uint32 // splice_fd_in, file_index, …
	_        [2]uint64
}

// ioUringCqe is struct io_uring_cqe.
type ioUringCqe struct {
	userData uint64
	res      int32
	flags    uint32
}

// ioUringBuf is struct io_uring_buf, an entry of a provided-buffer ring.
type ioUringBuf struct {
	addr uint64
	len  uint32
	bid  uint16
	resv uint16 // in entry 0: the ring's tail
}

// ioUringBufReg is struct io_uring_buf_reg.
type ioUringBufReg struct {
	ringAddr    uint64
	ringEntries uint32
	bgid        uint16
	flags       uint16
	resv        [3]uint64
}

// The constants of <linux/io_uring.h> used here.
const (
	iorSetupCQSize       = 1 << 3
	iorSetupSubmitAll    = 1 << 7
	iorSetupSingleIssuer = 1 << 12
	iorSetupDeferTaskrun = 1 << 13

	iorFeatSingleMmap = 1 << 0
	iorFeatNoDrop     = 1 << 1

	iorOffSqRing = 0
	iorOffCqRing = 0x8000000
	iorOffSqes   = 0x10000000

	iorEnterGetEvents = 1 << 0
	iorEnterExtArg    = 1 << 3

	iorFeatExtArg = 1 << 8

	iorOpPollAdd     = 6
	iorOpAsyncCancel = 14
	iorOpSend        = 26
	iorOpRecv        = 27

	iosqeBufferSelect   = 1 << 5
	iosqeCqeSkipSuccess = 1 << 6

	iorPollAddMulti  = 1 << 0
	iorRecvMultishot = 1 << 1

	iorCqeFBuffer     = 1 << 0
	iorCqeFMore       = 1 << 1
	iorCqeBufferShift = 16

	iorRegisterPbufRing = 22
)

// ring is one io_uring instance: its descriptor, and its submission and
// completion rings mapped into memory.
type ring struct {
	fd       int
	features uint32

	sqHead    *uint32 // the kernel's
	sqTail    *uint32 // ours
	sqMask    uint32
	sqEntries uint32
	sqes      []ioUringSqe
	tail      uint32 // the next free entry; published to *sqTail by enter

	cqHead *uint32 // ours
	cqTail *uint32 // the kernel's
	cqMask uint32
	cqes   []ioUringCqe

	ringMem []byte // the rings (one mapping with IORING_FEAT_SINGLE_MMAP)
	cqMem   []byte // the completion ring when it has a mapping of its own
	sqeMem  []byte
}

// newRing makes an io_uring of sqEntries submissions and cqEntries
// completions with the setup flags given.
func newRing(sqEntries, cqEntries, flags uint32) (*ring, error) {
	p := ioUringParams{flags: flags | iorSetupCQSize, cqEntries: cqEntries}
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(sqEntries), uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return nil, os.NewSyscallError("io_uring_setup", e)
	}
	r := &ring{fd: int(fd), features: p.features}
	if err := r.mapRings(&p); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// mapRings maps the rings of r into memory.
func (r *ring) mapRings(p *ioUringParams) error {
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(ioUringCqe{})))
	single := p.features&iorFeatSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	r.ringMem, err = unix.Mmap(r.fd, iorOffSqRing, sqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return os.NewSyscallError("mmap", err)
	}
	cqMem := r.ringMem
	if !single {
		if r.cqMem, err = unix.Mmap(r.fd, iorOffCqRing, cqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
			return os.NewSyscallError("mmap", err)
		}
		cqMem = r.cqMem
	}
	sqeSize := int(p.sqEntries) * int(unsafe.Sizeof(ioUringSqe{}))
	if r.sqeMem, err = unix.Mmap(r.fd, iorOffSqes, sqeSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return os.NewSyscallError("mmap", err)
	}
	sq := unsafe.Pointer(&r.ringMem[0])
	r.sqHead = (*uint32)(unsafe.Add(sq, p.sqOff.head))
	r.sqTail = (*uint32)(unsafe.Add(sq, p.sqOff.tail))
	r.sqMask = *(*uint32)(unsafe.Add(sq, p.sqOff.ringMask))
	r.sqEntries = *(*uint32)(unsafe.Add(sq, p.sqOff.ringEntries))
	// Submission entry i is always at index i of the array: the
	// indirection is not used.
	array := unsafe.Slice((*uint32)(unsafe.Add(sq, p.sqOff.array)), p.sqEntries)
	for i := range array {
		array[i] = uint32(i)
	}
	r.sqes = unsafe.Slice((*ioUringSqe)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	r.tail = atomic.LoadUint32(r.sqTail)

	cq := unsafe.Pointer(&cqMem[0])
	r.cqHead = (*uint32)(unsafe.Add(cq, p.cqOff.head))
	r.cqTail = (*uint32)(unsafe.Add(cq, p.cqOff.tail))
	r.cqMask = *(*uint32)(unsafe.Add(cq, p.cqOff.ringMask))
	r.cqes = unsafe.Slice((*ioUringCqe)(unsafe.Add(cq, p.cqOff.cqes)), p.cqEntries)
	return nil
}

func (r *ring) close() {
	for _, m := range [][]byte{r.sqeMem, r.cqMem, r.ringMem} {
		if m != nil {
			unix.Munmap(m)
		}
	}
	r.sqeMem, r.cqMem, r.ringMem = nil, nil, nil
	if r.fd >= 0 {
		unix.Close(r.fd)
		r.fd = -1
	}
}

// sqe returns the next submission entry, zeroed, or nil when the
// submission ring is full (enter first).
func (r *ring) sqe() *ioUringSqe {
	head := atomic.LoadUint32(r.sqHead)
	if r.tail-head >= r.sqEntries {
		return nil
	}
	e := &r.sqes[r.tail&r.sqMask]
	*e = ioUringSqe{}
	r.tail++
	return e
}

// pending is how many entries are waiting to be handed to the kernel.
func (r *ring) pending() uint32 {
	return r.tail - atomic.LoadUint32(r.sqHead)
}

// enter publishes the entries filled so far and calls io_uring_enter(2)
// with flags: it hands them to the kernel, and with iorEnterGetEvents
// runs the completions the kernel deferred to this thread. It never
// waits (min_complete 0), so it is a raw system call.
func (r *ring) enter(flags uint32) error {
	atomic.StoreUint32(r.sqTail, r.tail)
	toSubmit := r.pending()
	for {
		n, _, e := unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), 0, uintptr(flags), 0, 0)
		switch e {
		case 0:
			if uint32(n) < toSubmit {
				return fmt.Errorf("io_uring_enter: %d of %d entries submitted", n, toSubmit)
			}
			return nil
		case unix.EINTR:
			continue
		case unix.EAGAIN, unix.EBUSY:
			// The kernel is short of memory for requests, or the
			// completion ring overflowed: the entries stay, for the next
			// call, after the completions in hand have been taken.
			return nil
		}
		return os.NewSyscallError("io_uring_enter", e)
	}
}

// getEventsArg is struct io_uring_getevents_arg.
type getEventsArg struct {
	sigmask   uint64
	sigmaskSz uint32
	_         uint32 // min_wait_usec
	ts        uint64 // *unix.Timespec, relative
}

// enterWait is enter that waits, in the kernel, for one completion at
// least, or for timeout ns (< 0: no limit) — a blocking system call, on
// the ring's own thread, which the Go runtime sees enter and leave it
// (syscall.Syscall6), so that its processor can run other goroutines
// meanwhile. Without a timeout nor a completion to wait for, the thread
// sleeps until the kernel posts one.
func (r *ring) enterWait(timeout int64) error {
	atomic.StoreUint32(r.sqTail, r.tail)
	toSubmit := r.pending()
	var ts unix.Timespec
	arg := getEventsArg{sigmaskSz: 8}
	if timeout >= 0 {
		ts = unix.NsecToTimespec(timeout)
		arg.ts = uint64(uintptr(unsafe.Pointer(&ts)))
	}
	_, _, e := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), 1,
		iorEnterGetEvents|iorEnterExtArg, uintptr(unsafe.Pointer(&arg)), unsafe.Sizeof(arg))
	switch e {
	case 0, unix.EINTR, unix.ETIME, unix.EAGAIN, unix.EBUSY:
		return nil
	}
	return os.NewSyscallError("io_uring_enter", e)
}

// completions calls f with every completion posted so far, and frees
// their entries of the ring.
func (r *ring) completions(f func(c *ioUringCqe)) int {
	head := *r.cqHead
	tail := atomic.LoadUint32(r.cqTail)
	for i := head; i != tail; i++ {
		f(&r.cqes[i&r.cqMask])
	}
	atomic.StoreUint32(r.cqHead, tail)
	return int(tail - head)
}

// register is io_uring_register(2).
func (r *ring) register(op uintptr, arg unsafe.Pointer, n uintptr) error {
	_, _, e := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), op, uintptr(arg), n, 0, 0)
	if e != 0 {
		return os.NewSyscallError("io_uring_register", e)
	}
	return nil
}

// bufRing is a ring of provided buffers (IORING_REGISTER_PBUF_RING): the
// kernel takes a buffer from it for each receive of a multishot recv of
// its group, and the completion names it; we give it back when its bytes
// have been used. The buffers and the ring live outside the Go heap, in
// anonymous mappings.
type bufRing struct {
	entries []ioUringBuf // mapped, page-aligned
	mem     []byte       // the buffers, size each
	size    int
	mask    uint16
	tail    uint16
	// tailWord is the 32-bit word holding the ring's tail (the resv field
	// of entry 0) in its upper half and entry 0's bid in its lower: Go has
	// no 16-bit atomic store, so both are stored together.
	tailWord *uint32
	bid0     uint16 // the bid in entry 0
	pub      uint16 // the tail the kernel has seen
}

// newBufRing registers a ring of n buffers (a power of two) of size bytes
// each as buffer group bgid of r.
func newBufRing(r *ring, bgid uint16, n, size int) (*bufRing, error) {
	ringMem, err := unix.Mmap(-1, 0, n*int(unsafe.Sizeof(ioUringBuf{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, os.NewSyscallError("mmap", err)
	}
	mem, err := unix.Mmap(-1, 0, n*size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		unix.Munmap(ringMem)
		return nil, os.NewSyscallError("mmap", err)
	}
	b := &bufRing{
		entries:  unsafe.Slice((*ioUringBuf)(unsafe.Pointer(&ringMem[0])), n),
		mem:      mem,
		size:     size,
		mask:     uint16(n - 1),
		tailWord: (*uint32)(unsafe.Pointer(&ringMem[12])),
	}
	reg := ioUringBufReg{ringAddr: uint64(uintptr(unsafe.Pointer(&ringMem[0]))), ringEntries: uint32(n), bgid: bgid}
	if err := r.register(iorRegisterPbufRing, unsafe.Pointer(&reg), 1); err != nil {
		unix.Munmap(mem)
		unix.Munmap(ringMem)
		return nil, err
	}
	for i := range n {
		b.put(uint16(i))
	}
	b.publish()
	return b, nil
}

// buf returns the bytes of buffer bid.
func (b *bufRing) buf(bid uint16) []byte {
	off := int(bid) * b.size
	return b.mem[off : off+b.size : off+b.size]
}

// put adds buffer bid at the tail, for publish to hand over.
func (b *bufRing) put(bid uint16) {
	i := b.tail & b.mask
	e := &b.entries[i]
	e.addr = uint64(uintptr(unsafe.Pointer(&b.mem[int(bid)*b.size])))
	e.len = uint32(b.size)
	if i == 0 {
		b.bid0 = bid
		atomic.StoreUint32(b.tailWord, uint32(b.bid0)|uint32(b.pub)<<16)
	} else {
		e.bid = bid
	}
	b.tail++
}

// publish hands the buffers put so far to the kernel.
func (b *bufRing) publish() {
	if b.pub != b.tail {
		b.pub = b.tail
		atomic.StoreUint32(b.tailWord, uint32(b.bid0)|uint32(b.pub)<<16)
	}
}

// UringExpected reports whether this machine should allow the io_uring
// backend: Linux 6.1 or later (IORING_SETUP_DEFER_TASKRUN) with io_uring
// not disabled by the kernel.io_uring_disabled sysctl. The tests fail,
// rather than skip, when such a kernel refuses it under CI.
func UringExpected() bool {
	if b, err := os.ReadFile("/proc/sys/kernel/io_uring_disabled"); err == nil && len(b) > 0 && b[0] != '0' {
		return false
	}
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var major, minor int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > 6 || major == 6 && minor >= 1
}
