package server

import (
	"testing"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/schedule"
	"github.com/sse-latency/sse-latency/internal/wire"
)

// discardWriter is a direct streamWriter that takes every byte and keeps
// none.
type discardWriter struct{ n int }

func (w *discardWriter) appendEvent(dst, ev []byte) []byte { return wire.AppendChunk(dst, ev) }
func (w *discardWriter) appendEnd(dst []byte) []byte       { return dst }
func (w *discardWriter) write(b []byte) error              { w.n += len(b); return nil }
func (w *discardWriter) direct() bool                      { return true }
func (w *discardWriter) tryWrite(b []byte) (int, error)    { w.n += len(b); return len(b), nil }
func (w *discardWriter) String() string                    { return "discard" }

// BenchmarkShardTick measures a shard's wake-up writing one token to
// each of 64 streams (stamped, recorded in the emission registry, encoded,
// framed, written, its lateness recorded, the stream back on the heap):
// the server's per-token path without the system call. It must not
// allocate: b.N ticks, 64 tokens each (ns/token is per token).
func BenchmarkShardTick(b *testing.B) {
	const streams = 64
	sh := newShard(&recordingAlarm{}, int64(DefaultWakeInterval), int64(DefaultSpinAhead))
	reg := emission.New()
	var all []*stream
	const tokens = 1 << 22 // more than the ticks of a run of seconds
	for i := range streams {
		p := schedule.Plan{Start: clock.Real.Now(), Delay: 1, Tokens: tokens}
		st := newStream(&discardWriter{}, api.NewEncoder(api.Chat, api.Answer{Tokens: p.Tokens}), p)
		st.times = reg.StartAt("bench-"+string(rune('a'+i%26))+string(rune('a'+i/26)), tokens, func(k int) int64 { return st.plan.Deadline(k) })
		sh.add(st)
		all = append(all, st)
	}
	// Every stream's next token is due now, on time: one token per write.
	due := func() {
		now := clock.Real.Now()
		for _, st := range all {
			st.plan.Start = now - int64(st.k)
		}
	}
	due()
	sh.tick(nil) // the heap, the scratch and the histograms grow once
	b.ReportAllocs()
	for b.Loop() {
		due()
		sh.tick(nil)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*streams), "ns/token")
	if all[0].k >= tokens {
		b.Fatalf("the streams ended after %d tokens: raise tokens", tokens)
	}
}
