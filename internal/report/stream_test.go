package report

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/summary"
)

// streamBatch returns a batch with the given stream counters.
func streamBatch(byPiTs, byContent, unmeasured, reads, events, bytes int64, maxPerRead, integrity int) *stats.Batch {
	b := stats.NewBatch()
	b.ByPiTs, b.ByContent, b.Unmeasured = byPiTs, byContent, unmeasured
	b.Reads, b.Events, b.Bytes = reads, events, bytes
	b.MaxTokensPerRead, b.IntegrityErrors = maxPerRead, integrity
	return b
}

// streamRun is the summary of a run of these batches (loop nil: no
// calibration).
func streamRun(c struct{ loop, gw *stats.Batch }) *summary.Run { return runOf(c.loop, c.gw) }

var streamCases = map[string]struct{ loop, gw *stats.Batch }{
	// A calibration and a gateway that strips pi_ts and merges deltas.
	"merging": {
		streamBatch(600, 0, 0, 603, 606, 141_234, 1, 0),
		streamBatch(0, 1000, 0, 212, 1004, 160_321, 5, 0),
	},
	// No calibration; a gateway that breaks content; a small response.
	"integrity_no_calibration": {
		nil,
		streamBatch(10, 3, 7, 5, 24, 999, 8, 2),
	},
	// Integrity errors on loopback too, and large byte counts.
	"loopback_errors": {
		streamBatch(0, 0, 0, 0, 0, 0, 0, 1),
		streamBatch(2_000_000, 0, 0, 2_000_100, 2_000_004, 2_345_678_901, 1, 0),
	},
}

func TestStreamGolden(t *testing.T) {
	for name, c := range streamCases {
		var b bytes.Buffer
		if err := WriteStream(&b, streamRun(c)); err != nil {
			t.Fatalf("WriteStream(%s): %v", name, err)
		}
		checkGolden(t, "WriteStream("+name+")", "stream_"+name+".golden", b.Bytes())
	}
}

// TestStreamLines pins the block's lines independently of the goldens.
func TestStreamLines(t *testing.T) {
	c := streamCases["merging"]
	var b bytes.Buffer
	if err := WriteStream(&b, streamRun(c)); err != nil {
		t.Fatal(err)
	}
	want := "=== stream ===\n" +
		"loopback   600 tokens: 600 by pi_ts, 0 by content, 0 unmeasured; 603 reads, 606 events, 141.2 KB; up to 1 token per read\n" +
		"gateway    1000 tokens: 0 by pi_ts, 1000 by content, 0 unmeasured; 212 reads, 1004 events, 160.3 KB; up to 5 tokens per read; 0 integrity errors\n"
	if b.String() != want {
		t.Errorf("WriteStream =\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := WriteStream(&b, runOf(nil, streamCases["integrity_no_calibration"].gw)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "loopback") || !strings.Contains(b.String(), "20 tokens: 10 by pi_ts, 3 by content, 7 unmeasured; 5 reads, 24 events, 999 B; up to 8 tokens per read; 2 integrity errors\n") {
		t.Errorf("without calibration:\n%s", b.String())
	}
}

func TestByteSize(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{{0, "0 B"}, {999, "999 B"}, {1000, "1.0 KB"}, {141_234, "141.2 KB"}, {999_949, "999.9 KB"}, {1_000_000, "1.0 MB"}, {3_400_000_000, "3.4 GB"}} {
		if got := byteSize(tt.n); got != tt.want {
			t.Errorf("byteSize(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestStreamWriteError(t *testing.T) {
	if err := WriteStream(failingWriter{}, runOf(nil, stats.NewBatch())); err == nil {
		t.Error("WriteStream to a failing writer returned no error")
	}
}

// TestStreamFraming: a batch whose framing was not one data line per
// event gets a framing line naming each count that is not zero; a plain
// one gets none.
func TestStreamFraming(t *testing.T) {
	gw := streamBatch(99, 0, 0, 120, 99, 30_000, 1, 0)
	gw.Framing = result.Framing{BOMs: 1, MultiLineEvents: 99, BareCRLines: 2, InvalidUTF8: 1, RetryFields: 3}
	gw.RetryMaxMs = 3000
	loop := streamBatch(99, 0, 0, 101, 99, 29_000, 1, 0)
	loop.Framing = result.Framing{NoDataBlocks: 2, IDFields: 1}
	var b bytes.Buffer
	if err := WriteStream(&b, runOf(loop, gw)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"framing        loopback 2 blocks without data, 1 id field\n",
		"framing        gateway  99 events of several data lines, 1 response with a BOM, 2 lines ended by a bare CR, " +
			"1 invalid UTF-8 sequence read as U+FFFD, 3 retry fields (up to 3000 ms)\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("WriteStream =\n%s\nwant the line\n%s", b.String(), want)
		}
	}
	b.Reset()
	if err := WriteStream(&b, runOf(nil, streamBatch(1, 0, 0, 1, 1, 100, 1, 0))); err != nil || strings.Contains(b.String(), "framing") {
		t.Errorf("a plain stream: %v\n%s", err, b.String())
	}
}
