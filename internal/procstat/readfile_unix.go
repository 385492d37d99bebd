//go:build unix

package procstat

import (
	"io/fs"
	"syscall"
)

// readFile reads the file at path into buf (grown when it is too small;
// nil: a new one) with open, read and close only: os.ReadFile also stats
// the file, registers it with the poller and reads again to see the end,
// which, for the few hundred bytes of a /proc file, costs more than the
// read. A read that returns less than it was offered is taken as the
// end: a /proc file generated at open (a seq file) hands over all it has
// at once. The error of a failed open is a *fs.PathError, as
// os.ReadFile's.
func readFile(path string, buf []byte) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	for err == syscall.EINTR {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	if cap(buf) == 0 {
		buf = make([]byte, 0, bufSize)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		room := cap(buf) - len(buf)
		buf = buf[:len(buf)+n]
		if n == 0 || n < room {
			return buf, nil
		}
	}
}
