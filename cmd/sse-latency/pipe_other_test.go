//go:build !linux

package main

import (
	"errors"
	"os"
)

// shrinkPipe reports that pipes cannot be sized here (Linux only).
func shrinkPipe(w *os.File) (int, error) { return 0, errors.New("F_SETPIPE_SZ is Linux only") }

// pipeBuffered is not used where shrinkPipe fails.
func pipeBuffered(r *os.File) (int, error) { return 0, errors.New("Linux only") }
