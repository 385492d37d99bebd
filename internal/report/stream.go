package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/summary"
)

// WriteStream writes the stream block (Go tool only; the CLI omits it under
// --compat), after the verdict: for each batch of s, how the emission time
// of its tokens was found and how the tokens travelled. The loopback line
// appears only when a calibration batch ran.
//
//	=== stream ===
//	loopback   600 tokens: 600 by pi_ts, 0 by content, 0 unmeasured; 603 reads, 606 events, 141.2 KB; up to 1 token per read
//	gateway    1000 tokens: 0 by pi_ts, 1000 by content, 0 unmeasured; 212 reads, 1004 events, 160.3 KB; up to 5 tokens per read; 0 integrity errors
//
// A batch over WebSocket (--websocket) counts "websocket messages" where
// the others count events, and its connections line names the protocol
// "websocket":
//
//	gateway    1000 tokens: 1000 by pi_ts, 0 by content, 0 unmeasured; 1003 reads, 1040 websocket messages, 251.3 KB; up to 1 token per read; 0 integrity errors
//	connections    gateway  5 opened, 4.0 requests each, 0 reuse failures; websocket 20
//
// The tokens are all those received, by ok and failed requests alike (the
// batch title counts those of ok requests only; when requests failed, the
// line says how many of them the failed requests received: "gateway
// 36397 tokens (36397 of them in failed requests): …"): measured by the pi_ts of
// the event that carried each alone, by content through the in-process
// server's emission registry, or not at all. Reads, events and bytes (heads
// included, in decimal kilo- or megabytes) cover whole responses. The
// gateway line always ends with its integrity errors (requests whose content
// differed from what was emitted; they fail the run); the loopback line only
// when it has some.
//
// Then, for each batch (loopback first), the lines of what it has:
//
//	framing        gateway  99 events of several data lines, 1 response with a BOM
//	connections    gateway  5 opened, 4.0 requests each, 0 reuse failures; HTTP/1.1 20
//	phases         gateway  p50/p99 ms: connect 0.052/0.130, written 0.011/0.020, head 0.201/0.300, first-token 0.030/0.041
//	start-lateness gateway  n=20  mean 0.050  p50 0.012  p99 0.140  max 1.200 ms
//	warm-up        gateway  5 requests, left out of the statistics
//
// framing: what the SSE framing looked like when it was anything but one
// data line per event (summary.Framing; the counts that are not zero):
// events of several data lines, responses that began with a byte order
// mark, blocks without data, lines ended by a bare CR, invalid UTF-8 read
// as U+FFFD, id fields, retry fields and the largest time they set.
// connections: the connections the requests opened (and, "+N by warm-up",
// those warm-up requests opened and they reused), the mean requests per
// connection, the kept connections found closed by the peer (each request
// then went again on a new connection), the poisoned ones when there are
// any, and the requests per protocol, then, when requests shared HTTP/2
// connections, the most streams in flight on one of them. phases: the median and 99th
// percentile of each phase of the time to first token that has samples.
// start-lateness: open loop only, how late requests started against their
// schedule.
//
// Then the usage line of each batch whose usage was compared with the
// server's record (usageLine), and the line of a trace replay
// (replayLine).
func WriteStream(w io.Writer, s *summary.Run) error {
	loop, gw := s.Loop(), s.Gateway()
	p := printer{w: w}
	p.printf("=== stream ===\n")
	if loop != nil {
		streamLine(&p, loop, loop.Stream.IntegrityErrors > 0)
	}
	if gw != nil {
		streamLine(&p, gw, true)
	}
	for _, b := range []*summary.Batch{loop, gw} {
		if b != nil {
			transportLines(&p, b)
		}
	}
	for _, b := range []*summary.Batch{loop, gw} {
		if b != nil {
			usageLine(&p, b)
		}
	}
	replayLine(&p, s)
	return p.err
}

// transportLines writes the connections, phases, start-lateness and
// warm-up lines of one batch, those it has data for.
func transportLines(p *printer, b *summary.Batch) {
	name := b.Name
	if f := b.Stream.Framing; f != nil {
		p.printf("%-14s %-8s %s\n", "framing", name, framingText(f))
	}
	if c := b.Connections; c != nil {
		p.printf("%-14s %-8s %d opened", "connections", name, c.Opened)
		if c.OpenedByWarmup > 0 {
			p.printf(" (+%d by warm-up)", c.OpenedByWarmup)
		}
		p.printf(", %.1f requests each, %d reuse %s", c.RequestsPerConnection,
			c.ReuseFailures, plural(int64(c.ReuseFailures), "failure"))
		if c.Poisoned > 0 {
			p.printf(", %d poisoned", c.Poisoned)
		}
		for i, proto := range slices.Sorted(maps.Keys(c.Protocols)) {
			sep := ", "
			if i == 0 {
				sep = "; "
			}
			p.printf("%s%s %d", sep, proto, c.Protocols[proto])
		}
		if c.StreamsAtOnce > 1 {
			p.printf(", up to %d streams at once", c.StreamsAtOnce)
		}
		p.printf("\n")
	}
	if ph := b.Phases; ph != nil {
		p.printf("%-14s %-8s p50/p99 ms:", "phases", name)
		sep := " "
		for _, nm := range ph.Named() {
			if m := nm.Metric; m.N > 0 {
				p.printf("%s%s %.3f/%.3f", sep, nm.Name, m.P50Ms, m.P99Ms)
				sep = ", "
			}
		}
		p.printf("\n")
	}
	if m := b.StartLateness; m != nil && m.N > 0 {
		p.printf("%-14s %-8s n=%d  mean %.3f  p50 %.3f  p99 %.3f  max %.3f ms\n", "start-lateness", name,
			m.N, m.MeanMs, m.P50Ms, m.P99Ms, m.MaxMs)
	}
	if b.Warmup > 0 {
		p.printf("%-14s %-8s %d %s, left out of the statistics\n", "warm-up", name, b.Warmup, plural(int64(b.Warmup), "request"))
	}
}

// framingText lists the counts of f that are not zero.
func framingText(f *summary.Framing) string {
	var parts []string
	add := func(n int64, format, word string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf(format, n, plural(n, word)))
		}
	}
	add(f.MultiLineEvents, "%d %s of several data lines", "event")
	add(f.BOMStreams, "%d %s with a BOM", "response")
	add(f.NoDataBlocks, "%d %s without data", "block")
	add(f.BareCRLines, "%d %s ended by a bare CR", "line")
	add(f.InvalidUTF8, "%d invalid UTF-8 %s read as U+FFFD", "sequence")
	add(f.IDFields, "%d id %s", "field")
	if f.RetryFields > 0 {
		parts = append(parts, fmt.Sprintf("%d retry %s (up to %.0f ms)", f.RetryFields, plural(f.RetryFields, "field"), f.RetryMaxMs))
	}
	return strings.Join(parts, ", ")
}

// PhasesLine returns the verbose per-request line of r's connection and
// phases, in milliseconds, without a line end (Go tool; the CLI prints it
// under --verbose):
//
//	gw   3: HTTP/1.1 conn 2 (reused) connect 0.000 tls 0.000 written 0.012 head 0.210 first-token 0.030 ms
//
// A phase that did not happen on the request's connection (connect and TLS
// on a reused one, TLS on plain TCP) is 0.000; one that could not be
// measured (the request failed before it) is "-". A new connection after a
// reuse failure says so, as do a poisoned connection and a warm-up request.
func PhasesLine(r *result.Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %3d: ", r.Batch, r.Index)
	switch {
	case r.ConnID <= 0:
		b.WriteString("no connection")
	default:
		proto := r.Proto
		if proto == "" {
			proto = "-"
		}
		fmt.Fprintf(&b, "%s conn %d", proto, r.ConnID)
		switch {
		case r.Reused:
			b.WriteString(" (reused)")
		case r.ReuseFailed:
			b.WriteString(" (new, after a reuse failure)")
		default:
			b.WriteString(" (new)")
		}
	}
	phase := func(name string, known bool, ns int64) {
		if known {
			fmt.Fprintf(&b, " %s %.3f", name, stats.Ms(ns))
		} else {
			fmt.Fprintf(&b, " %s -", name)
		}
	}
	ready := r.Sent > 0 || r.TLSDone > 0 // the connection got past its set-up
	switch {
	case r.Reused:
		phase("connect", true, 0)
		phase("tls", true, 0)
	default:
		phase("connect", r.Connected > 0, r.Connected-r.Start)
		phase("tls", r.TLSDone > 0 || ready, max(r.TLSDone-r.Connected, 0))
	}
	phase("written", r.Sent > 0, r.Sent-max(r.TLSDone, r.Connected, r.Start))
	phase("head", r.Sent > 0 && r.HeadAt > 0, r.HeadAt-r.Sent)
	tok, visible := r.FirstVisible()
	phase("first-token", r.HeadAt > 0 && visible, tok.Arrived-r.HeadAt)
	b.WriteString(" ms")
	if r.Poisoned {
		b.WriteString("; connection poisoned, not kept")
	}
	if r.Warmup {
		b.WriteString("; warm-up")
	}
	return b.String()
}

// streamLine writes the line of one batch. Over WebSocket its events are
// "websocket messages", one event each.
func streamLine(p *printer, b *summary.Batch, integrity bool) {
	s := &b.Stream
	tokens := s.Received()
	event := "event"
	if b.Transport == summary.TransportWebSocket {
		event = "websocket message"
	}
	failed := ""
	if b.Failed > 0 && tokens > 0 && b.FailureSummary != nil { // a document before failure summaries has no failed_tokens
		failed = fmt.Sprintf(" (%d of them in failed requests)", s.FailedTokens)
	}
	p.printf("%-10s %d %s%s: %d by pi_ts, %d by content, %d unmeasured; %d %s, %d %s, %s; up to %d %s per read",
		b.Name, tokens, plural(tokens, "token"), failed, s.ByPiTs, s.ByContent, s.Unmeasured,
		s.Reads, plural(s.Reads, "read"), s.Events, plural(s.Events, event), byteSize(s.Bytes),
		s.MaxTokensPerRead, plural(int64(s.MaxTokensPerRead), "token"))
	if integrity {
		p.printf("; %d integrity %s", s.IntegrityErrors, plural(int64(s.IntegrityErrors), "error"))
	}
	p.printf("\n")
}

// plural returns word, with an s unless n is 1 ("es" after an s:
// "processes").
func plural(n int64, word string) string {
	switch {
	case n == 1:
		return word
	case strings.HasSuffix(word, "s"):
		return word + "es"
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
