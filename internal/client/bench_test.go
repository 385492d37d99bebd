package client

import (
	"testing"

	"github.com/sse-latency/sse-latency/internal/result"
)

// BenchmarkPerToken measures the client's per-token path in each dialect:
// one Read carrying one chunked token event, through de-chunking, line
// splitting, the event scan, content matching and the token record. It must
// not allocate.
func BenchmarkPerToken(b *testing.B) {
	for _, s := range dialectStreams {
		for _, stamped := range []bool{true, false} {
			name := s.d.String() + "/pi_ts"
			if !stamped {
				name = s.d.String() + "/content"
			}
			b.Run(name, func(b *testing.B) {
				// One period of the token text: token i and i+26 are the same
				// letters, so cycling through these events streams forever.
				var reads [][]byte
				for _, e := range s.tokens(periodTokens, stamped) {
					reads = append(reads, []byte(chunk(e)))
				}
				rec := &result.Request{Tokens: make([]result.Token, 0, 4096)}
				r := newReader(rec, &Options{Dialect: s.d})
				if r.feed([]byte(sseHead+"Transfer-Encoding: chunked\r\n\r\n"), 1) {
					b.Fatal(rec.Failure.Error())
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if len(rec.Tokens) == cap(rec.Tokens) {
						rec.Tokens = rec.Tokens[:0]
					}
					if r.feed(reads[i], int64(i)) {
						b.Fatal(rec.Failure.Error())
					}
					if i++; i == len(reads) {
						i = 0
					}
				}
				if r.match.diverged || rec.Failure.Kind != result.OK {
					b.Fatalf("the stream did not match: %q", r.match.problem())
				}
			})
		}
	}
}
