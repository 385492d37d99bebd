package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// shrinkPipe sets the capacity of the pipe whose write end is w to its
// minimum, one page, and returns it.
func shrinkPipe(w *os.File) (int, error) {
	return unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, os.Getpagesize())
}

// pipeBuffered returns how many bytes wait in the pipe whose read end is r.
func pipeBuffered(r *os.File) (int, error) {
	return unix.IoctlGetInt(int(r.Fd()), unix.TIOCINQ)
}
