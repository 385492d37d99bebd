package server

import (
	"errors"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/schedule"
	"github.com/sse-latency/sse-latency/internal/stats"
)

// fakeWriter is a streamWriter that records when each write happened.
type fakeWriter struct {
	isDirect bool
	accept   int   // direct: bytes tryWrite takes (-1: all)
	err      error // returned by the writes
	writes   []string
	at       []int64 // clock.Real.Now() at each write
}

func (w *fakeWriter) appendEvent(dst, ev []byte) []byte { return append(dst, ev...) }
func (w *fakeWriter) appendEnd(dst []byte) []byte       { return dst }
func (w *fakeWriter) direct() bool                      { return w.isDirect }
func (w *fakeWriter) String() string                    { return "fake" }

func (w *fakeWriter) write(b []byte) error {
	w.at = append(w.at, clock.Real.Now())
	w.writes = append(w.writes, string(b))
	return w.err
}

func (w *fakeWriter) tryWrite(b []byte) (int, error) {
	w.at = append(w.at, clock.Real.Now())
	n := len(b)
	if w.accept >= 0 {
		n = min(w.accept, n)
	}
	w.writes = append(w.writes, string(b[:n]))
	return n, w.err
}

var piTsRE = regexp.MustCompile(`"pi_ts":(\d+)`)

// TestEmitToken checks the two write paths of a token: a direct writer is
// written from the caller at once; a writer without a direct write is not
// touched from a caller that may not block (the shard), and is stamped and
// written by the one that may. In both, pi_ts is taken during the call —
// not before it — and no later than the write, and the registry gets it.
func TestEmitToken(t *testing.T) {
	tests := []struct {
		name      string
		w         fakeWriter
		mayBlock  bool
		tokens    int
		want      event
		wantWrite bool
	}{
		{"direct, more tokens", fakeWriter{isDirect: true, accept: -1}, false, 2, 0, true},
		{"direct, last token", fakeWriter{isDirect: true, accept: -1}, false, 1, evFinish, true},
		{"direct, socket full", fakeWriter{isDirect: true, accept: 10, err: errAgain}, false, 2, evFlush, true},
		{"direct, short write", fakeWriter{isDirect: true, accept: 10}, false, 2, evFlush, true},
		{"direct, client gone", fakeWriter{isDirect: true, accept: 0, err: syscall.EPIPE}, false, 2, evFailed, true},
		{"goroutine path, from the shard", fakeWriter{}, false, 2, evWrite, false},
		{"goroutine path, from its goroutine", fakeWriter{}, true, 2, 0, true},
		{"goroutine path, last token", fakeWriter{}, true, 1, evFinish, true},
		{"goroutine path, write fails", fakeWriter{err: errors.New("reset")}, true, 2, evFailed, true},
	}
	for _, tt := range tests {
		reg := emission.New()
		w := tt.w
		st := newStream(&w, api.NewEncoder(api.Chat, api.Answer{Tokens: tt.tokens}), schedule.Plan{Start: clock.Real.Now(), Delay: 1e6, Tokens: tt.tokens})
		st.times = reg.Start("id", tt.tokens)
		before := clock.Real.Now()
		sc := newScratch()
		ev := st.emitToken(sc, tt.mayBlock)
		if ev != tt.want {
			t.Errorf("%s: emitToken(%v) = %v, want %v", tt.name, tt.mayBlock, ev, tt.want)
		}
		if !tt.wantWrite {
			if len(w.writes) != 0 || st.k != 0 || st.times.At(0) != 0 {
				t.Errorf("%s: wrote %d times, k=%d, registry %d; want nothing done", tt.name, len(w.writes), st.k, st.times.At(0))
			}
			continue
		}
		if len(w.writes) != 1 || st.k != 1 {
			t.Fatalf("%s: %d writes, k=%d, want 1 write and k=1", tt.name, len(w.writes), st.k)
		}
		m := piTsRE.FindStringSubmatch(string(sc.out))
		if m == nil {
			t.Fatalf("%s: event %q has no pi_ts", tt.name, sc.out)
		}
		ts, _ := strconv.ParseInt(m[1], 10, 64)
		if ts < before || ts > w.at[0] {
			t.Errorf("%s: pi_ts %d outside [call %d, write %d]", tt.name, ts, before, w.at[0])
		}
		if got := st.times.At(0); got != ts {
			t.Errorf("%s: registry %d, want the pi_ts %d", tt.name, got, ts)
		}
		if ev == evFlush && string(st.pending) != string(sc.out[len(w.writes[0]):]) {
			t.Errorf("%s: pending %q, want the unwritten rest of %q", tt.name, st.pending, sc.out)
		}
	}
}

// TestEmitOverdueTokens: a stream more than coalesceLate behind its
// schedule writes its overdue tokens in one write on a direct writer (at
// most maxTokensPerWrite, all
// stamped with that write's instant, each recorded in the registry and the
// lateness), and one token per write on a writer without a file
// descriptor (one TLS record, one HTTP/2 DATA frame per token).
func TestEmitOverdueTokens(t *testing.T) {
	const tokens = maxTokensPerWrite + 4
	for _, tt := range []struct {
		name      string
		direct    bool
		wantPerWr []int
	}{
		{"direct", true, []int{maxTokensPerWrite, tokens - maxTokensPerWrite}},
		{"goroutine path", false, []int{1, 1}},
	} {
		reg := emission.New()
		w := fakeWriter{isDirect: tt.direct, accept: -1}
		// Every deadline lies a second in the past.
		p := schedule.Plan{Start: clock.Real.Now() - 1e9, Delay: 1e3, Tokens: tokens}
		st := newStream(&w, api.NewEncoder(api.Chat, api.Answer{Tokens: tokens}), p)
		st.times = reg.Start("id", tokens)
		sc := newScratch()
		for i, want := range tt.wantPerWr {
			from := st.k
			st.emitToken(sc, true)
			got := len(piTsRE.FindAllString(w.writes[i], -1))
			if got != want || st.wroteN != want || st.k != from+want {
				t.Errorf("%s: write %d carries %d tokens (wroteN %d, k %d->%d), want %d", tt.name, i, got, st.wroteN, from, st.k, want)
			}
			m := stats.NewMetric()
			st.recordLateness(m)
			if m.N() != int64(want) || m.Min() < int64(9e8) {
				t.Errorf("%s: write %d: %d lateness samples, least %d ns; want %d, about a second each", tt.name, i, m.N(), m.Min(), want)
			}
			for k := from; k < st.k; k++ {
				if got := st.times.At(k); got != st.wroteAt {
					t.Errorf("%s: token %d registered at %d, want the write's instant %d", tt.name, k, got, st.wroteAt)
				}
			}
		}
	}
}

// TestEmitOnTimeTokensAlone: tokens due together (1 ns apart) but not late
// enough to mean overload each get a write, and a pi_ts, of their own. The
// plan starts an hour ahead, so that no pause of a busy machine between
// the plan and the writes can make them late (emitToken writes the next
// token whenever it is called; only coalescing looks at the schedule).
func TestEmitOnTimeTokensAlone(t *testing.T) {
	w := fakeWriter{isDirect: true, accept: -1}
	p := schedule.Plan{Start: clock.Real.Now() + int64(time.Hour), Delay: 1, Tokens: 3}
	st := newStream(&w, api.NewEncoder(api.Chat, api.Answer{Tokens: 3}), p)
	sc := newScratch()
	for i := range 3 {
		st.emitToken(sc, true)
		if st.wroteN != 1 || st.k != i+1 {
			t.Errorf("write %d: %d tokens, k=%d; want 1 token, k=%d", i, st.wroteN, st.k, i+1)
		}
	}
}
