package rundoc

import (
	"errors"
	"flag"
	"strings"

	"github.com/sse-latency/sse-latency/internal/summary/summarytest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// stream is a synthetic request (summarytest.Stream).
type stream = summarytest.Stream

var (
	requests = summarytest.Requests
	runOf    = summarytest.Run
)

// containsLine reports whether out has line as one of its lines.
func containsLine(out, line string) bool {
	for l := range strings.Lines(out) {
		if l == line+"\n" {
			return true
		}
	}
	return false
}

// failAfter fails every write after the first n.
type failAfter struct{ n int }

var errWrite = errors.New("write failed")

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errWrite
	}
	f.n--
	return len(p), nil
}
