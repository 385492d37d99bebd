package server

import (
	"net"
	"syscall"
	"time"
)

// socketWriter is a shard's non-blocking write on a connection's socket:
// its descriptor, its record layer when it is TLS on one, and the
// callback given to RawConn.Write with its results, built once per
// connection rather than once per token. h1conn and h2conn embed it.
type socketWriter struct {
	raw     syscall.RawConn // nil when the conn has no file descriptor (TLS on crypto/tls)
	rec     *recordConn     // the conn, when it is TLS on the record layer: the writer seals first
	writeFn func(fd uintptr) bool
	wbuf    []byte
	wn      int
	werr    error
	// queueWrite's callback and its arguments and results, as writeFn's.
	queueFn func(fd uintptr) bool
	qbatch  sendBatch
	qi      int
	qok     bool
}

// init sets w up for the accepted connection c (plain TCP, a recordConn,
// or a conn without a descriptor, which leaves raw nil).
func (w *socketWriter) init(c net.Conn) {
	w.rec, _ = c.(*recordConn)
	if sc, ok := c.(syscall.Conn); ok && directWrites {
		if rc, err := sc.SyscallConn(); err == nil {
			w.raw = rc
		}
	}
	w.writeFn = func(fd uintptr) bool {
		w.wn, w.werr = writeFd(fd, w.wbuf)
		return true // never wait for writability: that is the stream goroutine's job
	}
	w.queueFn = func(fd uintptr) bool {
		w.qi, w.qok = w.qbatch.Queue(int(fd), w.wbuf)
		return true
	}
}

// rawWrite is one non-blocking write(2) of b on the socket.
func (w *socketWriter) rawWrite(b []byte) (int, error) {
	w.wbuf = b
	err := w.raw.Write(w.writeFn)
	w.wbuf = nil
	if err != nil {
		return 0, err
	}
	return max(w.wn, 0), w.werr
}

// sleepUntil waits for at and reports true, or reports false as soon as
// one of the stop channels is closed (a nil one never is).
func sleepUntil(at time.Time, stop1, stop2, stop3 <-chan struct{}) bool {
	wait := time.Until(at)
	if wait <= 0 {
		return true
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-stop1:
	case <-stop2:
	case <-stop3:
	}
	return false
}

// queueWrite queues b in the batch sb for the socket, and stores the
// send's index in i; false when it was not queued (the batch is full, or
// the socket is closed), for the caller to write b itself.
func (w *socketWriter) queueWrite(sb sendBatch, b []byte, i *int) bool {
	if w.raw == nil {
		return false
	}
	w.qbatch, w.wbuf, w.qok = sb, b, false
	err := w.raw.Write(w.queueFn)
	w.qbatch, w.wbuf = nil, nil
	*i = w.qi
	return err == nil && w.qok
}
