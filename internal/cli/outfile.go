package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// outFile is one output file of a command (--json, --html, --csv of a
// run, a sweep or a check; report's --html). Every command creates its
// files with createOutFile before it does its work, so that a path that
// cannot be written fails at once, naming the path; the content goes to a
// temporary file beside the path, which commit renames over it: an
// existing file is replaced, in one step, only by a complete one, and a
// command that does not finish leaves it as it was.
type outFile struct {
	flag string // the flag that named the file, for errors: "--json"
	path string
	tmp  *os.File    // nil once committed or abandoned
	mode fs.FileMode // the file's: an existing file's own, else 0644
}

// createOutFile creates the temporary file of path, the output of flag.
// Its errors name the flag and path, as opening path itself would.
func createOutFile(flag, path string) (*outFile, error) {
	o := &outFile{flag: flag, path: path, mode: 0o644}
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return nil, fmt.Errorf("%s: %w", flag, &fs.PathError{Op: "open", Path: path, Err: syscall.EISDIR})
		}
		o.mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = &fs.PathError{Op: "open", Path: path, Err: pe.Err}
		}
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	o.tmp = tmp
	return o, nil
}

// Write writes to the temporary file (a streamed output: --csv).
func (o *outFile) Write(p []byte) (int, error) { return o.tmp.Write(p) }

// commit appends what write writes (nil: nothing more) to the file, and
// renames it over the path. On an error the temporary file is removed and
// the path left as it was; the error names the flag.
func (o *outFile) commit(write func(io.Writer) error) error {
	f := o.tmp
	o.tmp = nil
	var err error
	if write != nil {
		err = write(f)
	}
	if cerr := f.Chmod(o.mode); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), o.path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("%s: %w", o.flag, err)
	}
	return nil
}

// abandon removes the temporary file of a command that did not finish,
// leaving the path as it was. It is a best-effort clean-up on the way out:
// its own errors have nothing left to change. After commit, or on a nil
// outFile, it does nothing.
func (o *outFile) abandon() {
	if o == nil || o.tmp == nil {
		return
	}
	o.tmp.Close()
	os.Remove(o.tmp.Name())
	o.tmp = nil
}
