package server

import (
	"math"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/schedule"
)

func TestWakeLateness(t *testing.T) {
	const us = 1000
	repeat := func(n int, late int64) []int64 {
		s := make([]int64, n)
		for i := range s {
			s[i] = late
		}
		return s
	}
	tests := []struct {
		name    string
		max     int64
		samples []int64
		want    int64
	}{
		{"nothing learnt yet: the bound", 250 * us, nil, 250 * us},
		{"too few samples: the bound", 250 * us, repeat(lateFirst-1, 10*us), 250 * us},
		{"steady 50 µs: the upper bound of its bin", 250 * us, repeat(lateFirst, 50*us), 52 * us},
		{"p99 of a spread", 250 * us, append(repeat(990, 20*us), repeat(10, 120*us)...), 24 * us},
		{"one in fifty late", 250 * us, append(repeat(980, 20*us), repeat(20, 120*us)...), 124 * us},
		{"p99 beyond the bound: a lower quantile", 250 * us, append(repeat(940, 20*us), repeat(60, 400*us)...), 24 * us},
		{"p95 beyond the bound: p90", 250 * us, append(repeat(920, 20*us), append(repeat(40, 200*us), repeat(40, 400*us)...)...), 204 * us},
		{"median beyond the bound: no spin", 250 * us, repeat(200, 400*us), 0},
		{"beyond the histogram: no spin", 600 * us, repeat(200, 900*us), 0},
		{"negative (early) samples count as 0", 250 * us, repeat(lateFirst, -5*us), 4 * us},
		{"spinning disabled", 0, repeat(200, 50*us), 0},
		{"a quieter host is followed within a few windows", 250 * us,
			append(repeat(2*lateWindow, 200*us), repeat(4*lateWindow, 30*us)...), 32 * us},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWakeLateness(tt.max)
			for _, s := range tt.samples {
				w.observe(s)
			}
			if w.ahead != tt.want {
				t.Errorf("after %d samples ahead = %d ns, want %d", len(tt.samples), w.ahead, tt.want)
			}
		})
	}
}

func TestGridFor(t *testing.T) {
	const ms = 1_000_000
	tests := []struct {
		name string
		plan schedule.Plan
		want int64
	}{
		{"the default 5 ms", schedule.Plan{Delay: 5 * ms}, 500_000},
		{"2 ms: a quarter is 500 µs", schedule.Plan{Delay: 2 * ms}, 500_000},
		{"1.9 ms", schedule.Plan{Delay: 1.9 * ms}, 250_000},
		{"1 ms", schedule.Plan{Delay: 1 * ms}, 250_000},
		{"0.5 ms", schedule.Plan{Delay: 0.5 * ms}, 125_000},
		{"0.4 ms: too short for any grid", schedule.Plan{Delay: 0.4 * ms}, 0},
		{"no delay", schedule.Plan{}, 0},
		{"reasoning denser than the text", schedule.Plan{Delay: 5 * ms, Think: 10 * ms, Reasoning: 10}, 250_000},
		{"reasoning sparser than the text", schedule.Plan{Delay: 1 * ms, Think: 100 * ms, Reasoning: 10}, 250_000},
	}
	for _, tt := range tests {
		if got := gridFor(tt.plan); got != tt.want {
			t.Errorf("%s: gridFor(%+v) = %d, want %d", tt.name, tt.plan, got, tt.want)
		}
	}
}

// recordingAlarm is an alarm that records what it was last armed for and
// never fires: the test calls tick itself.
type recordingAlarm struct{ last int64 }

func (a *recordingAlarm) Arm(deadline int64) error { a.last = deadline; return nil }
func (a *recordingAlarm) Close() error             { return nil }

// TestShardWakesOnTheGrid: a shard with fewer than gridStreams streams
// arms its timer ahead of the earliest deadline by its spin; from
// gridStreams streams on, at the point of the earliest stream's grid
// nearest its deadline — unless that deadline is of the first token of a
// phase.
func TestShardWakesOnTheGrid(t *testing.T) {
	for _, tt := range []struct {
		name    string
		streams int
		delay   int64
		k       int    // the streams' next token
		firsts  [2]int // their phases' first tokens
		step    int64  // 0: armed ahead of the deadline
	}{
		{"quiet shard", gridStreams - 1, 5_000_000, 1, [2]int{}, 0},
		{"busy shard, 5 ms", gridStreams, 5_000_000, 1, [2]int{}, 500_000},
		{"busy shard, 1 ms", 3 * gridStreams, 1_000_000, 1, [2]int{}, 250_000},
		{"busy shard, delay too short for a grid", gridStreams, 300_000, 1, [2]int{}, 0},
		{"busy shard, first token", gridStreams, 5_000_000, 0, [2]int{}, 0},
		{"busy shard, first text token after the reasoning", gridStreams, 5_000_000, 3, [2]int{3, 3}, 0},
		{"busy shard, first text token after a tool call", gridStreams, 5_000_000, 5, [2]int{3, 5}, 0},
		{"busy shard, a tool call's second token", gridStreams, 5_000_000, 4, [2]int{3, 5}, 500_000},
	} {
		a := &recordingAlarm{}
		sh := newShard(a, int64(DefaultWakeInterval), int64(DefaultSpinAhead))
		// Far in the future, with odd offsets: nothing is due, and the
		// deadlines are off every grid.
		start := clock.Real.Now() + int64(time.Hour)
		earliest := int64(math.MaxInt64)
		for i := range tt.streams {
			p := schedule.Plan{Start: start + int64(i)*37_123 + 1_234, Delay: tt.delay, Tokens: 10}
			st := newStream(&fakeWriter{isDirect: true, accept: -1}, api.NewEncoder(api.Chat, api.Answer{Tokens: 10}), p)
			st.k, st.next, st.firsts = tt.k, p.Deadline(tt.k), tt.firsts
			sh.add(st)
			earliest = min(earliest, st.next)
		}
		if !sh.tick(nil) {
			t.Fatalf("%s: tick failed", tt.name)
		}
		got := a.last
		switch {
		case tt.step == 0:
			if want := earliest - int64(DefaultSpinAhead); got != want {
				t.Errorf("%s: armed for %d, want the earliest deadline less the spin, %d", tt.name, got, want)
			}
		case got%tt.step != 0 || got < earliest-tt.step/2 || got > earliest+tt.step/2:
			t.Errorf("%s: armed for %d (%d into its %d ns step), want the point of the grid nearest %d",
				tt.name, got, got%tt.step, tt.step, earliest)
		}
	}
}

// gridStep is the grid step of gridShard's streams (5 ms between tokens).
const gridStep = 500_000

// gridShard returns a shard that records its alarm, a point of the 500 µs
// grid an hour ahead (nothing is due before it), and an encoder for its
// streams.
func gridShard() (*recordingAlarm, *shard, int64, api.Encoder) {
	a := &recordingAlarm{}
	sh := newShard(a, int64(DefaultWakeInterval), int64(DefaultSpinAhead))
	g := (clock.Real.Now() + int64(time.Hour)) / gridStep * gridStep
	return a, sh, g, api.NewEncoder(api.Chat, api.Answer{Tokens: 10})
}

// TestShardFirstTokenBeforeTheGrid: in a busy shard, a stream's first
// token due between another stream's deadline and the grid point that
// one is written at wakes the shard for its own deadline.
func TestShardFirstTokenBeforeTheGrid(t *testing.T) {
	a, sh, g, enc := gridShard()
	// Deadlines 249 µs before the grid point g: written at g, the nearest.
	for range gridStreams {
		p := schedule.Plan{Start: g - gridStep/2 + 1_000, Delay: 5_000_000, Tokens: 10}
		st := newStream(&fakeWriter{isDirect: true, accept: -1}, enc, p)
		st.k, st.next = 1, p.Deadline(1)-5_000_000 // token 1, due at Start
		sh.add(st)
	}
	first := newStream(&fakeWriter{isDirect: true, accept: -1}, enc, schedule.Plan{Start: g - 50_000, Delay: 5_000_000, Tokens: 10})
	sh.add(first)
	if !sh.tick(nil) {
		t.Fatal("tick failed")
	}
	if want := first.next - int64(DefaultSpinAhead); a.last != want {
		t.Errorf("armed for %d, want the first token's deadline less the spin, %d (the grid point is %d)", a.last, want, g)
	}
}

// TestShardHeartbeatOnTheGridNotEarly: in a busy shard a stream woken
// for a heartbeat is woken at the first point of its grid at or after the
// heartbeat's time, not at the nearest: woken before it, the stream would
// find no heartbeat due and write its next token, seconds early.
func TestShardHeartbeatOnTheGridNotEarly(t *testing.T) {
	a, sh, g, enc := gridShard()
	// Heartbeats due 100 µs past the grid point g (the nearest point is
	// before them); tokens a minute later.
	for range gridStreams {
		p := schedule.Plan{Start: g + int64(time.Minute), Delay: 5_000_000, Tokens: 10}
		st := newStream(&fakeWriter{isDirect: true, accept: -1}, enc, p)
		st.k = 1
		st.hb.every, st.hb.last = int64(time.Second), g+100_000-int64(time.Second)
		st.next = st.wake()
		if st.next != g+100_000 {
			t.Fatalf("stream wakes at %d, want its heartbeat's time %d", st.next, g+100_000)
		}
		sh.add(st)
	}
	if !sh.tick(nil) {
		t.Fatal("tick failed")
	}
	if a.last != g+gridStep {
		t.Errorf("armed for %d, want the first grid point after the heartbeats' time, %d (%+d)", a.last, g+gridStep, a.last-(g+gridStep))
	}
}
