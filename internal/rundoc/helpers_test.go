package rundoc

import (
	"flag"

	"github.com/sse-latency/sse-latency/internal/summary/summarytest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// stream is a synthetic request (summarytest.Stream).
type stream = summarytest.Stream

var (
	requests = summarytest.Requests
	runOf    = summarytest.Run
)

var (
	containsLine = summarytest.ContainsLine
	errWrite     = summarytest.ErrWrite
)

// failAfter fails every write after the first n.
type failAfter = summarytest.FailAfter
