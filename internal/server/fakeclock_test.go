package server

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/evloop"
)

// fakeStart is where the fake clocks of these tests start: a round
// instant, so that a wrong deadline shows as a round difference.
const fakeStart = int64(1_800_000_000_000_000_000)

// driveFake moves f to each deadline a goroutine of the server waits for,
// as soon as one waits, until the returned stop is called; stop returns
// the deadlines in the order f was moved to them.
func driveFake(f *clock.Fake) (stop func() []int64) {
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu    sync.Mutex
		steps []int64
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			next, err := f.Next(ctx)
			if err != nil {
				return
			}
			mu.Lock()
			steps = append(steps, next)
			mu.Unlock()
			f.Set(next)
		}
	}()
	return func() []int64 {
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(steps)
	}
}

// fakeServer starts a server on the goroutine engine whose clock is a
// Fake at fakeStart, without spinning (a spin would wait for a clock that
// moves only when its waker waits).
func fakeServer(t *testing.T, cfg Config) (*Server, *clock.Fake) {
	t.Helper()
	f := clock.NewFake(fakeStart)
	cfg.Clock, cfg.Engine, cfg.SpinAhead = f, evloop.Goroutine, -1
	return startServer(t, cfg), f
}

// TestFakeClockEmissionTimes: with the clock moved only to the deadlines
// the shard waits for, every token is stamped (pi_ts, and the emission
// record) exactly at its deadline in the schedule — start + think + k ×
// delay — and the shard waited for exactly those deadlines, in order.
// With real time each stamp is only known to be at or after its deadline.
func TestFakeClockEmissionTimes(t *testing.T) {
	const tokens, thinkMs, delayMs = 5, 7.0, 3.0
	reg := emission.New()
	srv, f := fakeServer(t, Config{Tokens: tokens, ThinkMs: thinkMs, DelayMs: delayMs, Emissions: reg})
	stop := driveFake(f)
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}],"pi_id":"fake-1"}`
	h, b := splitResponse(t, exchange(t, srv, postRequest(api.Chat.Path(), body)))
	steps := stop()
	if h != streamHead {
		t.Fatalf("head %q body %q", h, b)
	}
	_, toks := scanStream(t, "chat", api.Chat, dechunk(t, b))
	if len(toks) != tokens {
		t.Fatalf("%d token events, want %d", len(toks), tokens)
	}
	var want []int64
	for k := range tokens {
		want = append(want, fakeStart+int64(thinkMs*1e6)+int64(k)*int64(delayMs*1e6))
	}
	times := reg.Take("fake-1")
	if times == nil || times.Len() != tokens {
		t.Fatalf("emission record %v, want %d times", times, tokens)
	}
	for k, tok := range toks {
		if tok.piTs != want[k] || times.At(k) != want[k] {
			t.Errorf("token %d: pi_ts %d, emission record %d; want both %d (start + %.0f ms)",
				k, tok.piTs, times.At(k), want[k], float64(want[k]-fakeStart)/1e6)
		}
	}
	if !slices.Equal(steps, want) {
		t.Errorf("the shard waited for %v, want the token deadlines %v", steps, want)
	}
}

// TestFakeClockHeartbeatInterval: a think of 100 ms with heartbeats every
// 30 ms wakes the stream at 30, 60 and 90 ms for a heartbeat each, then at
// 100 ms for its token — not one wake-up more or less, none a nanosecond
// off — and the client receives exactly those three heartbeats, all before
// the token.
func TestFakeClockHeartbeatInterval(t *testing.T) {
	reg := emission.New()
	srv, f := fakeServer(t, Config{Tokens: 1, ThinkMs: 100, DelayMs: 1, HeartbeatMs: 30, Emissions: reg})
	stop := driveFake(f)
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}],"pi_id":"fake-hb"}`
	h, b := splitResponse(t, exchange(t, srv, postRequest(api.Chat.Path(), body)))
	steps := stop()
	if h != streamHead {
		t.Fatalf("head %q body %q", h, b)
	}
	ms := func(n int64) int64 { return fakeStart + n*int64(time.Millisecond) }
	if want := []int64{ms(30), ms(60), ms(90), ms(100)}; !slices.Equal(steps, want) {
		t.Errorf("the stream was woken at %v, want %v (heartbeats at 30, 60, 90 ms, the token at 100 ms)", steps, want)
	}
	var events []string
	for _, c := range dechunk(t, b) {
		for _, ev := range strings.SplitAfter(c, "\n\n") {
			if ev != "" {
				events = append(events, ev)
			}
		}
	}
	if c := countBeats(t, "chat", api.Chat, events); c.beats != 3 || c.late != 0 {
		t.Errorf("%d heartbeats, %d after the token; want 3, none after", c.beats, c.late)
	}
	if times := reg.Take("fake-hb"); times == nil || times.Len() != 1 || times.At(0) != ms(100) {
		t.Errorf("emission record %v, want the token at %d", times, ms(100))
	}
}
