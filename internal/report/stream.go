package report

import (
	"fmt"
	"io"

	"github.com/sse-latency/sse-latency/internal/stats"
)

// WriteStream writes the stream block (Go tool only; the CLI omits it under
// --compat), after the verdict: for each batch, how the emission time of
// its tokens was found and how the tokens travelled. The loopback line
// appears only when loop is not nil (a calibration batch ran).
//
//	=== stream ===
//	loopback   600 tokens: 600 by pi_ts, 0 by content, 0 unmeasured; 603 reads, 606 events, 141.2 KB; up to 1 token per read
//	gateway    1000 tokens: 0 by pi_ts, 1000 by content, 0 unmeasured; 212 reads, 1004 events, 160.3 KB; up to 5 tokens per read; 0 integrity errors
//
// The tokens are all those received, by ok and failed requests alike (the
// batch title counts those of ok requests only): measured by the pi_ts of
// the event that carried each alone, by content through the in-process
// server's emission registry, or not at all. Reads, events and bytes (heads
// included, in decimal kilo- or megabytes) cover whole responses. The
// gateway line always ends with its integrity errors (requests whose content
// differed from what was emitted; they fail the run); the loopback line only
// when it has some.
func WriteStream(w io.Writer, loop, gw *stats.Batch) error {
	p := printer{w: w}
	p.printf("=== stream ===\n")
	if loop != nil {
		streamLine(&p, "loopback", loop, loop.IntegrityErrors > 0)
	}
	streamLine(&p, "gateway", gw, true)
	return p.err
}

// streamLine writes the line of one batch.
func streamLine(p *printer, name string, b *stats.Batch, integrity bool) {
	tokens := b.ByPiTs + b.ByContent + b.Unmeasured
	p.printf("%-10s %d %s: %d by pi_ts, %d by content, %d unmeasured; %d %s, %d %s, %s; up to %d %s per read",
		name, tokens, plural(tokens, "token"), b.ByPiTs, b.ByContent, b.Unmeasured,
		b.Reads, plural(b.Reads, "read"), b.Events, plural(b.Events, "event"), byteSize(b.Bytes),
		b.MaxTokensPerRead, plural(int64(b.MaxTokensPerRead), "token"))
	if integrity {
		p.printf("; %d integrity %s", b.IntegrityErrors, plural(int64(b.IntegrityErrors), "error"))
	}
	p.printf("\n")
}

// plural returns word, with an s unless n is 1.
func plural(n int64, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// byteSize prints a byte count in decimal units with one decimal: "512 B",
// "141.2 KB", "3.4 MB", "1.2 GB".
func byteSize(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000_000:
		return fmt.Sprintf("%.1f KB", float64(n)/1e3)
	case n < 1000_000_000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.1f GB", float64(n)/1e9)
}
