package summarytest

import (
	"math/rand/v2"

	"github.com/sse-latency/sse-latency/internal/result"
)

// Emission is a synthetic stream's emission schedule: Tokens tokens Gap
// apart from Start, the ones from StallAfter on Stall later (no stall when
// Stall is 0), each in an event of EventBytes bytes.
type Emission struct {
	Start      int64
	Tokens     int
	Gap        int64
	StallAfter int
	Stall      int64
	EventBytes int
}

// Times returns when each token was emitted.
func (e Emission) Times() []int64 {
	out := make([]int64, e.Tokens)
	for k := range out {
		out[k] = e.Start + int64(k)*e.Gap
		if e.Stall > 0 && k >= e.StallAfter {
			out[k] += e.Stall
		}
	}
	return out
}

// A Release is how a gateway releases a stream: the arrival time of each
// token, from their emission times and the bytes of each token's event.
// The stream ends (its end events leave) right after the last token, which
// releases whatever a gateway still holds.
type Release func(emitted []int64, eventBytes int) []int64

// Flush passes every event on after latency.
func Flush(latency int64) Release {
	return func(em []int64, _ int) []int64 {
		out := make([]int64, len(em))
		for k, e := range em {
			out[k] = e + latency
		}
		return out
	}
}

// Delay is Flush by another name: a gateway that adds a fixed delay to
// every event, which is not buffering.
func Delay(d int64) Release { return Flush(d) }

// ByteThreshold holds events until size bytes have gathered since the last
// release, then releases them latency after the event that filled it.
func ByteThreshold(size int, latency int64) Release {
	return func(em []int64, eventBytes int) []int64 {
		out := make([]int64, len(em))
		held, from := 0, 0
		for k, e := range em {
			held += eventBytes
			if held >= size || k == len(em)-1 {
				for j := from; j <= k; j++ {
					out[j] = e + latency
				}
				held, from = 0, k+1
			}
		}
		return out
	}
}

// TimePeriod releases what it holds every period from the stream's first
// emission, latency after each tick, and the rest at the end.
func TimePeriod(period, latency int64) Release {
	return func(em []int64, _ int) []int64 {
		out := make([]int64, len(em))
		start, last := em[0], em[len(em)-1]
		for k, e := range em {
			tick := start + ((e-start)/period+1)*period
			if tick > last {
				tick = last // the end of the stream releases the rest
			}
			out[k] = tick + latency
		}
		return out
	}
}

// OneBehind releases each event when the next one arrives (latency after
// its emission), the last one at the end of the stream.
func OneBehind(latency int64) Release {
	return func(em []int64, _ int) []int64 {
		out := make([]int64, len(em))
		for k := range em {
			next := em[len(em)-1]
			if k+1 < len(em) {
				next = em[k+1]
			}
			out[k] = next + latency
		}
		return out
	}
}

// Whole releases the whole stream at its end.
func Whole(latency int64) Release {
	return func(em []int64, _ int) []int64 {
		out := make([]int64, len(em))
		for k := range out {
			out[k] = em[len(em)-1] + latency
		}
		return out
	}
}

// Dispatch releases what it holds at irregular wake-ups, minGap to maxGap
// apart (uniformly, from seed), and the rest at the end.
func Dispatch(seed uint64, minGap, maxGap int64) Release {
	return func(em []int64, _ int) []int64 {
		r := rand.New(rand.NewPCG(seed, seed^0x5eed))
		out := make([]int64, len(em))
		tick := em[0]
		for k, e := range em {
			for tick < e {
				tick += minGap + r.Int64N(maxGap-minGap+1)
			}
			out[k] = min(tick, em[len(em)-1])
		}
		return out
	}
}

// Released builds the record of a stream emitted as e and released by
// rel: every token stamped, each arriving alone in its own Read unless it
// arrived with others, the response e.Tokens·e.EventBytes bytes plus a
// head of 200, encoded as encoding ("" for none).
func Released(batch string, index int, e Emission, rel Release, encoding string) *result.Request {
	em := e.Times()
	ar := rel(em, e.EventBytes)
	r := &result.Request{Batch: batch, Index: index, Start: e.Start - 1_000_000, Sent: e.Start - 900_000, Encoding: encoding,
		Bytes: int64(200 + e.Tokens*e.EventBytes)}
	read := int32(-1)
	for k := range em {
		if k == 0 || ar[k] != ar[k-1] {
			read++
		}
		r.AppendTokens(1, int32(k), read, ar[k])
		r.Tokens[k].Emitted = em[k]
	}
	r.Reads = int(read) + 1
	r.Events = e.Tokens
	r.End = ar[len(ar)-1] + 100_000
	return r
}
