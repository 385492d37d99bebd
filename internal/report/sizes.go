package report

import (
	"fmt"
	"io"
	"strconv"

	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/sweep"
)

// WriteSizes writes the breakdown of the gateway batch by request size
// (Go tool only; the CLI omits it under --compat), when its requests
// spread over more than one size bucket (a trace, a length distribution):
// the time to first token and the token delay of each prompt-size bucket
// (bytes) and each output-size bucket (tokens asked for), in one table —
// where a gateway's cost grows with the body it reads or the answer it
// relays.
//
//	=== by size (gateway) ===
//	size              requests  TTFT p50      p99  emit->recv p50      p99 (ms)
//	prompt <1k               4     0.412    0.500           0.010    0.040
//	prompt 64k-256k          2     1.802    2.100           0.011    0.045
//	output 16-64             6     0.455    2.100           0.010    0.044
func WriteSizes(w io.Writer, s *summary.Run) error {
	gw := s.Gateway()
	if gw == nil || !gw.Sizes.Varied() {
		return nil
	}
	p := printer{w: w}
	p.printf("=== by size (%s) ===\n", gw.Name)
	p.printf("%-17s %8s  %8s %8s  %14s %8s (ms)\n", "size", "requests", "TTFT p50", "p99", "emit->recv p50", "p99")
	for _, dim := range []struct {
		name    string
		buckets []summary.SizeBucket
		format  func(int) string
	}{{"prompt", gw.Sizes.Prompt, sweep.FormatSize}, {"output", gw.Sizes.Output, strconv.Itoa}} {
		for _, b := range dim.buckets {
			p.printf("%-17s %8d  %8.3f %8.3f  %14.3f %8.3f\n", dim.name+" "+BucketRange(b, dim.format), b.Requests,
				b.TTFT.P50Ms, b.TTFT.P99Ms, b.EmitRecv.P50Ms, b.EmitRecv.P99Ms)
		}
	}
	return p.err
}

// BucketRange writes a size bucket's range: "<1k", "1k-4k", ">=4096".
func BucketRange(b summary.SizeBucket, format func(int) string) string {
	switch {
	case b.Lo == 0:
		return "<" + format(b.Hi)
	case b.Hi == 0:
		return ">=" + format(b.Lo)
	}
	return fmt.Sprintf("%s-%s", format(b.Lo), format(b.Hi))
}

// usageLine writes a batch's usage line of the stream block, when its
// usage was compared with what the server reported:
//
//	usage          gateway  20 compared: 20 intact
//	usage          gateway  20 compared: 20 with findings: zeroed_from_null usage chunk prompt_tokens_details.cached_tokens (20: null -> 0)
func usageLine(p *printer, b *summary.Batch) {
	u := b.Usage
	if u == nil || u.Compared == 0 {
		return
	}
	if len(u.Findings) == 0 {
		p.printf("%-14s %-8s %d compared: %d intact\n", "usage", b.Name, u.Compared, u.Intact)
		return
	}
	p.printf("%-14s %-8s %d compared: %d with findings:", "usage", b.Name, u.Compared, u.Requests())
	for i, f := range u.Findings {
		if i == 3 {
			p.printf("; %d more (JSON: usage.findings)", len(u.Findings)-i)
			break
		}
		sep := ";"
		if i == 0 {
			sep = ""
		}
		p.printf("%s %s", sep, UsageFindingText(f))
	}
	p.printf("\n")
}

// UsageFindingText describes one usage finding: "zeroed_from_null usage
// chunk prompt_tokens_details.cached_tokens (20: null -> 0)", "dropped
// message_delta (3: the whole object)".
func UsageFindingText(f summary.UsageFinding) string {
	if f.Field == "" {
		return fmt.Sprintf("%s %s (%d: the whole object)", f.Kind, f.Part, f.Count)
	}
	got := f.Got
	if got == "" {
		got = "absent"
	}
	return fmt.Sprintf("%s %s %s (%d: %s -> %s)", f.Kind, f.Part, f.Field, f.Count, f.Sent, got)
}

// replayLine writes the stream block's line of a trace replay:
//
//	trace          gateway  12 of 12 requests of examples/traces/mooncake.jsonl (mooncake) at speed 1; behind schedule p50 0.012, p99 0.140, max 1.200 ms
//
// with the lines the trace had skipped or sorted, and the bound that
// stopped it before its end.
func replayLine(p *printer, s *summary.Run) {
	r := s.Replay
	if r == nil {
		return
	}
	p.printf("%-14s %-8s %d of %d requests of %s (%s) at speed %s", "trace", summary.GatewayBatch, r.Replayed, r.Entries, r.File, r.Format,
		strconv.FormatFloat(r.Speed, 'g', -1, 64))
	if gw := s.Gateway(); gw != nil && gw.StartLateness != nil && gw.StartLateness.N > 0 {
		m := gw.StartLateness
		p.printf("; behind schedule p50 %.3f, p99 %.3f, max %.3f ms", m.P50Ms, m.P99Ms, m.MaxMs)
	}
	if r.Skipped > 0 {
		p.printf("; %d bad %s skipped", r.Skipped, plural(int64(r.Skipped), "line"))
	}
	if r.Sorted {
		p.printf("; timestamps sorted")
	}
	if r.StoppedBy != "" {
		p.printf("; stopped by %s", r.StoppedBy)
	}
	p.printf("\n")
}
