package cli

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/sse-latency/sse-latency/internal/batch"
	"github.com/sse-latency/sse-latency/internal/report"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/rundoc"
)

// console serialises everything printed while batches run: per-request
// lines and the report on stdout, and on a terminal the progress line on
// stderr, which is erased before any other line.
//
// The first error writing stdout is kept (stdoutErr): the run reports it
// and fails. Writes to stderr are best effort: when stderr fails there is
// nowhere left to say so.
type console struct {
	mu            sync.Mutex
	stdout        io.Writer
	stderr        io.Writer
	tty           bool
	progressShown bool
	outErr        error // the first stdout write error
}

func (c *console) erase() {
	if c.progressShown {
		io.WriteString(c.stderr, report.EraseLine)
		c.progressShown = false
	}
}

// keep records err if it is the first stdout error.
func (c *console) keep(err error) {
	if c.outErr == nil {
		c.outErr = err
	}
}

// stdoutErr returns the first error writing stdout.
func (c *console) stdoutErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.outErr
}

func (c *console) errorf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.erase()
	fmt.Fprintf(c.stderr, format, args...)
}

func (c *console) debugf(format string, args ...any) {
	c.errorf(format+"\n", args...)
}

func (c *console) requestLine(rec *result.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.erase()
	c.keep(report.WriteRequestLine(c.stdout, rec))
}

func (c *console) progress(p batch.Progress) {
	c.mu.Lock()
	defer c.mu.Unlock()
	io.WriteString(c.stderr, report.ProgressLine(p.Elapsed, p.Done, p.Total, p.InFlight, p.Tokens))
	c.progressShown = true
}

func (c *console) clearProgress() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.erase()
}

// report writes the text report of doc (everything after the per-request
// lines) on stdout.
func (c *console) report(doc *rundoc.Document, compat bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.erase()
	c.keep(report.WriteText(c.stdout, &doc.Run, compat))
}

// sweep writes the report of a sweep's document on stdout.
func (c *console) sweep(doc *rundoc.Document) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.erase()
	c.keep(report.WriteSweep(c.stdout, doc))
}

// warnings writes the run's warnings (report.Warnings) on stderr.
func (c *console) warnings(doc *rundoc.Document) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.erase()
	report.WriteWarnings(c.stderr, doc)
}

// isTerminal reports whether w is a terminal (for the progress line).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && fileIsTerminal(f)
}
