//go:build linux

package server

import (
	"io"
	"net"
	"testing"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/evloop"
	"github.com/sse-latency/sse-latency/internal/schedule"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// BenchmarkShardTickSends is BenchmarkShardTick with the system calls:
// a shard's tick on an io_uring loop writing one token to each of 64
// plain HTTP/1.1 connections over loopback, its writes queued in the
// loop's batch and sent in one io_uring_enter (sub-benchmark "uring"),
// against the same tick on an epoll loop, one write(2) each ("epoll").
// The clients' ends are drained by goroutines of their own. Neither may
// allocate per token: b.N ticks, 64 tokens each.
func BenchmarkShardTickSends(b *testing.B) {
	for _, e := range []evloop.Engine{evloop.Epoll, evloop.Uring} {
		b.Run(string(e), func(b *testing.B) {
			set, err := evloop.NewSet(e, 1)
			if err != nil {
				b.Skip(err)
			}
			defer set.Stop()
			benchShardTickOn(b, set.Loops()[0])
		})
	}
}

// benchShardTickOn runs BenchmarkShardTickSends's ticks on l.
func benchShardTickOn(b *testing.B, l *evloop.Loop) {
	const streams = 64
	ln := testutil.Listen(b)
	defer ln.Close()
	sh := newShard(&recordingAlarm{}, int64(DefaultWakeInterval), int64(DefaultSpinAhead))
	reg := emission.New()
	srv := &Server{}
	var all []*stream
	const tokens = 1 << 22
	for i := range streams {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		go io.Copy(io.Discard, c)
		a, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		defer a.Close()
		p := schedule.Plan{Start: clock.Real.Now(), Delay: 1, Tokens: tokens}
		st := newStream(newH1conn(srv, a), api.NewEncoder(api.Chat, api.Answer{Tokens: p.Tokens}), p)
		st.times = reg.StartAt("bench-"+string(rune('a'+i%26))+string(rune('a'+i/26)), tokens, func(k int) int64 { return st.plan.Deadline(k) })
		sh.add(st)
		all = append(all, st)
	}
	due := func() {
		now := clock.Real.Now()
		for _, st := range all {
			st.plan.Start = now - int64(st.k)
		}
	}
	done := make(chan struct{})
	tick := tickOnLoop{sh: sh, due: due, done: done}
	l.Post(&tick, 1, 0) // the heap, the scratch, the batch and the histograms grow once
	<-done
	b.ReportAllocs()
	for b.Loop() {
		l.Post(&tick, 0, 0)
		<-done
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*streams), "ns/token")
	for _, st := range all {
		if st.result != 0 {
			b.Fatalf("a stream's write ended with event %d", st.result)
		}
	}
}

// tickOnLoop runs one tick of sh on the loop it is posted to, with the
// loop's batch of sends (kind 1: the first, which takes the batch).
type tickOnLoop struct {
	sh   *shard
	due  func()
	done chan struct{}
}

func (t *tickOnLoop) Receive(l *evloop.Loop, kind uint8, _ uint64) {
	if kind == 1 {
		if sb := l.Sends(); sb != nil {
			t.sh.scratch.sends = sb
		}
	}
	t.due()
	t.sh.tick(nil)
	t.done <- struct{}{}
}
