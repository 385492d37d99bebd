package client

import (
	"testing"

	"github.com/sse-latency/sse-latency/internal/api"
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
				feedForever(b, r, rec, reads)
				if r.match.diverged || rec.Failure.Kind != result.OK {
					b.Fatalf("the stream did not match: %q", r.match.problem())
				}
			})
		}
	}
}

// BenchmarkPerTokenPhases is BenchmarkPerToken for the reasoning and
// tool-call tokens of the dialects that have them, stamped, as the server
// writes them (one event per Read, chunked). It must not allocate.
func BenchmarkPerTokenPhases(b *testing.B) {
	const many = 1 << 20 // tokens per phase: the cycle never reaches the end
	for _, d := range []api.Dialect{api.Chat, api.Responses, api.Anthropic} {
		for _, p := range []api.Phase{api.PhaseReasoning, api.PhaseToolCall} {
			b.Run(d.String()+"/"+p.String(), func(b *testing.B) {
				// A short reasoning before the tool call: the events that
				// close it carry its whole text, on one line.
				a := api.Answer{No: 1, Tokens: many, Reasoning: many, ToolCall: many}
				base := 0
				if p == api.PhaseToolCall {
					a.Reasoning, base = 1, 1
				}
				e := api.NewEncoder(d, a)
				// The stream up to the phase's first token, fed once; then
				// tokens base+1..base+26, whose texts repeat forever.
				var pre []byte
				for i := range e.StartEvents() {
					pre = e.AppendStart(pre, i, 1)
				}
				for k := 0; k <= base; k++ {
					pre = e.AppendToken(pre, k, 1)
				}
				var reads [][]byte
				for k := base + 1; k <= base+periodTokens; k++ {
					reads = append(reads, []byte(chunk(string(e.AppendToken(nil, k, int64(k))))))
				}
				rec := &result.Request{Tokens: make([]result.Token, 0, 4096)}
				r := newReader(rec, &Options{Dialect: d, ExpectTokens: many, Reasoning: a.Reasoning, ToolCall: many})
				if r.feed([]byte(sseHead+"Transfer-Encoding: chunked\r\n\r\n"+chunk(string(pre))), 1) {
					b.Fatal(rec.Failure.Error())
				}
				feedForever(b, r, rec, reads)
				if ph := r.phases; ph.reasoning.diverged || ph.args.words.diverged || ph.args.state == argBad || rec.ByPiTs == 0 || rec.Failure.Kind != result.OK {
					b.Fatalf("the stream did not match: %q %q", ph.reasoning.problem(), ph.args.problem())
				}
			})
		}
	}
}

// feedForever is the loop of the per-token benchmarks: r reads the reads
// over and over, one per iteration, the record's tokens recycled.
func feedForever(b *testing.B, r *reader, rec *result.Request, reads [][]byte) {
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
}
