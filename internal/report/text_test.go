package report

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/summary"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// base is an arbitrary process-clock reading (2026-01-01T00:00:00Z).
const base = int64(1_767_225_600_000_000_000)

// stream describes a synthetic request: every token of it has the same
// inter-token gap and (but for the first) the same emission->arrival delay,
// so every sample it contributes is one of these numbers.
type stream struct {
	batch      string
	index      int
	ttft       int64 // first token arrival − sent
	firstDelay int64 // first token arrival − its emission
	tokens     int
	gap        int64 // arrival gap between tokens
	delay      int64 // arrival − emission of tokens 2..n
	failure    result.Failure

	// If set, token i (from 1) takes gaps[(i−1) mod len] and
	// delays[(i−1) mod len] instead of gap and delay.
	gaps, delays []int64
}

// request builds the record: it starts at base + index s, is sent 0.1 ms
// later and ends 0.2 ms after its last token.
func (s stream) request() *result.Request {
	r := &result.Request{Batch: s.batch, Index: s.index, Failure: s.failure}
	r.Start = base + int64(s.index)*1e9
	r.Sent = r.Start + 100_000
	arrived := r.Sent + s.ttft
	r.End = r.Sent
	for i := range s.tokens {
		delay, gap := s.delay, s.gap
		if i > 0 && len(s.delays) > 0 {
			delay = s.delays[(i-1)%len(s.delays)]
		}
		if i > 0 && len(s.gaps) > 0 {
			gap = s.gaps[(i-1)%len(s.gaps)]
		}
		if i == 0 {
			delay = s.firstDelay
		} else {
			arrived += gap
		}
		r.Tokens = append(r.Tokens, result.Token{Emitted: arrived - delay, Arrived: arrived, Read: int32(i)})
		r.End = arrived + 200_000
	}
	return r
}

func batchOf(rs ...*result.Request) *stats.Batch {
	b := stats.NewBatch()
	for _, r := range rs {
		b.Add(r)
	}
	return b
}

// sumOf summarises b as the batch named name.
func sumOf(name string, b *stats.Batch) *summary.Batch {
	sb := summary.NewBatch(name, "", b, summary.Samples{})
	return &sb
}

// runOf returns the summary of a run of these batches (loop nil: no
// calibration), without verdict or lateness.
func runOf(loop, gw *stats.Batch) *summary.Run {
	r := &summary.Run{Overhead: summary.NewOverhead(loop, gw), Self: summary.Self{Lateness: summary.NewMetric(nil)}}
	if loop != nil {
		r.Batches = append(r.Batches, *sumOf(summary.LoopbackBatch, loop))
	}
	r.Batches = append(r.Batches, *sumOf(summary.GatewayBatch, gw))
	return r
}

func requests(ss ...stream) []*result.Request {
	var rs []*result.Request
	for _, s := range ss {
		rs = append(rs, s.request())
	}
	return rs
}

// TestSPECLines checks that the example lines of SPEC §6 are reproduced
// from records that carry their numbers.
func TestSPECLines(t *testing.T) {
	okReq := stream{batch: "gw", index: 0, ttft: 180_000, firstDelay: 30_000, tokens: 1000, gap: 5_004_000_000 / 1000, delay: 30_000}.request()
	okReq.End = okReq.Start + 5_004_000_000
	failed := stream{batch: "gw", index: 1, ttft: 180_000, firstDelay: 30_000, tokens: 10, gap: 5e6, delay: 30_000,
		failure: result.Failure{Kind: result.ClosedBeforeDone}}.request()

	var loopRs, gwRs []*result.Request
	for i := range 3 {
		loopRs = append(loopRs, stream{batch: "loop", index: i, ttft: 40_000, firstDelay: 10_000, tokens: 200, gap: 5e6, delay: 10_000}.request())
		gwRs = append(gwRs, stream{batch: "gw", index: i, ttft: 200_000, firstDelay: 36_000, tokens: 1000, gap: 5e6, delay: 30_000}.request())
	}
	loop, gw := batchOf(loopRs...), batchOf(gwRs...)

	tests := []struct {
		name  string
		write func(*bytes.Buffer) error
		want  string // a line of the output
	}{
		{"WriteRequestLine(ok)", func(b *bytes.Buffer) error { return WriteRequestLine(b, okReq) },
			"gw   0: ok  ttft=     0.18ms  emit-delay(first)=     0.03ms  tokens=1000  wall=5.004s"},
		{"WriteRequestLine(failed)", func(b *bytes.Buffer) error { return WriteRequestLine(b, failed) },
			"gw   1: FAILED: connection closed before [DONE]"},
		{"WriteBatch(loop) title", func(b *bytes.Buffer) error { return WriteBatch(b, sumOf(summary.LoopbackBatch, loop)) },
			"=== loopback (direct to listen address): 3 requests, 3 ok, 0 failed, 600 tokens ==="},
		{"WriteBatch(loop) TTFT", func(b *bytes.Buffer) error { return WriteBatch(b, sumOf(summary.LoopbackBatch, loop)) },
			"TTFT (client)            n=3  mean=0.04ms  min=0.04ms  p50=0.04ms  p95=0.04ms  p99=0.04ms  max=0.04ms"},
		{"WriteOverhead 1st token", func(b *bytes.Buffer) error { return WriteOverhead(b, summary.NewOverhead(loop, gw)) },
			"emit->recv (1st token)   mean +0.026ms  p50 +0.026ms  p95 +0.026ms  p99 +0.026ms"},
		{"WriteOverhead title", func(b *bytes.Buffer) error { return WriteOverhead(b, summary.NewOverhead(loop, gw)) },
			"=== gateway overhead (gateway minus loopback; negative = loopback noise) ==="},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if err := tt.write(&b); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !containsLine(b.String(), tt.want) {
			t.Errorf("%s wrote\n%s\nwant the line\n%s", tt.name, b.String(), tt.want)
		}
	}
}

func containsLine(out, line string) bool {
	for l := range strings.Lines(out) {
		if l == line+"\n" {
			return true
		}
	}
	return false
}

func TestWriteRequestLine(t *testing.T) {
	tests := []struct {
		r    *result.Request
		want string
	}{
		{stream{batch: "loop", index: 2, ttft: 40_000, firstDelay: 4_000, tokens: 200, gap: 5e6, delay: 1}.request(),
			"loop   2: ok  ttft=     0.04ms  emit-delay(first)=     0.00ms  tokens=200  wall=0.995s\n"},
		{stream{batch: "gw", index: 123, ttft: 207_170_000, firstDelay: 206_860_000, tokens: 1, delay: 1}.request(),
			"gw 123: ok  ttft=   207.17ms  emit-delay(first)=   206.86ms  tokens=1  wall=0.207s\n"},
		{stream{batch: "gw", index: 1000, ttft: 123_456_789_000, firstDelay: 5, tokens: 1}.request(),
			"gw 1000: ok  ttft=123456.79ms  emit-delay(first)=     0.00ms  tokens=1  wall=123.457s\n"},
		{&result.Request{Batch: "gw", Index: 4, Sent: 100, End: 1000, Tokens: []result.Token{{Arrived: 1_000_100}}},
			"gw   4: ok  ttft=     1.00ms  emit-delay(first)=      n/a    tokens=1  wall=0.000s\n"},
		{&result.Request{Batch: "gw", Index: 5, Failure: result.Failure{Kind: result.Timeout, Detail: "300000"}},
			"gw   5: FAILED: timeout after 300000ms\n"},
		{&result.Request{Batch: "gw", Index: 6, Failure: result.Failure{Kind: result.BadStatus, Detail: "HTTP/1.1 502 Bad Gateway\r\nConte"}},
			"gw   6: FAILED: status HTTP/1.1 502 Bad Gateway\r\nConte\n"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if err := WriteRequestLine(&b, tt.r); err != nil {
			t.Fatalf("WriteRequestLine(%s %d): %v", tt.r.Batch, tt.r.Index, err)
		}
		if b.String() != tt.want {
			t.Errorf("WriteRequestLine(%s %d) = %q, want %q", tt.r.Batch, tt.r.Index, b.String(), tt.want)
		}
	}
}

func TestOverheadLines(t *testing.T) {
	one := func(firstDelay int64) *stats.Batch {
		return batchOf(stream{batch: "gw", ttft: 1e6, firstDelay: firstDelay, tokens: 1}.request())
	}
	tests := []struct {
		name     string
		loop, gw *stats.Batch
		want     string
	}{
		// −100 ns prints as −0.000 in C and Go alike.
		{"tiny negative", one(50_100), one(50_000),
			"emit->recv (1st token)   mean -0.000ms  p50 -0.000ms  p95 -0.000ms  p99 -0.000ms"},
		{"zero", one(50_000), one(50_000),
			"emit->recv (1st token)   mean +0.000ms  p50 +0.000ms  p95 +0.000ms  p99 +0.000ms"},
		{"negative", one(5_128_000), one(50_000),
			"emit->recv (1st token)   mean -5.078ms  p50 -5.078ms  p95 -5.078ms  p99 -5.078ms"},
		{"no gateway samples", one(50_000), batchOf(),
			"emit->recv (1st token)   n/a (no samples)"},
		{"no loopback samples", batchOf(), one(50_000),
			"emit->recv (1st token)   n/a (no samples)"},
		{"one token: no inter-token samples", one(50_000), one(50_000),
			"inter-token (client)     n/a (no samples)"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if err := WriteOverhead(&b, summary.NewOverhead(tt.loop, tt.gw)); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !containsLine(b.String(), tt.want) {
			t.Errorf("%s: WriteOverhead wrote\n%s\nwant the line\n%s", tt.name, b.String(), tt.want)
		}
	}
}

func TestEmptyMetricLine(t *testing.T) {
	var b bytes.Buffer
	if err := WriteBatch(&b, sumOf(summary.GatewayBatch, batchOf())); err != nil {
		t.Fatal(err)
	}
	const want = "=== gateway: 0 requests, 0 ok, 0 failed, 0 tokens ===\n" +
		"TTFT (client)            n=0\n" +
		"TTFT emit->recv(1st)     n=0\n" +
		"inter-token (client)     n=0\n" +
		"emit->recv (tokens)      n=0\n"
	if b.String() != want {
		t.Errorf("WriteBatch(empty) =\n%s\nwant\n%s", b.String(), want)
	}
}

// mid returns the middle of the histogram bucket holding v: a sample value
// that a Metric's percentiles return exactly, so that the printed
// percentiles are those of the SPEC's exact rule (TestGoldenIsExact).
func mid(v int64) int64 {
	m := stats.NewMetric()
	m.Record(0)
	m.Record(v)
	m.Record(1 << 41)
	return m.Percentile(0.5) // rank 1: v's bucket middle, not clamped
}

func repeat(v int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// nagle is the emit->recv delay of a gateway that flushes every 40 tokens
// (emitted 5 ms apart) 40 µs after the last: 195.04 ms down to 0.04 ms.
func nagle() []int64 {
	var out []int64
	for j := range 40 {
		out = append(out, mid(int64(39-j)*5_000_000+40_000))
	}
	return out
}

// scenarios are rendered by TestGolden: per-request lines, then the report.
// The samples are bucket middles (see mid), so every printed number is the
// SPEC's exact statistic of the samples, which TestGoldenIsExact checks.
var scenarios = map[string]struct {
	loop []stream // nil: no calibration batch
	gw   []stream
}{
	// Loopback: 3 requests of 200 tokens with scheduler-like jitter on the
	// gaps, as the reference's calibration for -c 3. Gateway: a buffering
	// gateway (bursts of 40 tokens, cf. seeds/001) with 4 requests, one of
	// which dies after 10 tokens and one of which times out without any.
	"full": {
		loop: []stream{
			{batch: "loop", index: 0, ttft: 40_000, firstDelay: 10_000, tokens: 200, gaps: loopGaps, delays: loopDelays},
			{batch: "loop", index: 1, ttft: 40_000, firstDelay: 10_000, tokens: 200, gaps: loopGaps, delays: loopDelays},
			{batch: "loop", index: 2, ttft: 40_000, firstDelay: 10_000, tokens: 200, gaps: loopGaps, delays: loopDelays},
		},
		gw: []stream{
			{batch: "gw", index: 0, ttft: 180_000, firstDelay: 36_000, tokens: 1000, gaps: gwGaps, delays: nagle()},
			{batch: "gw", index: 1, ttft: 207_170_000, firstDelay: 206_860_000, tokens: 1000, gaps: gwGaps, delays: nagle()},
			{batch: "gw", index: 2, ttft: 200_000, firstDelay: 36_000, tokens: 10, gaps: gwGaps, delays: nagle(),
				failure: result.Failure{Kind: result.ClosedBeforeDone}},
			{batch: "gw", index: 3, failure: result.Failure{Kind: result.Timeout, Detail: "300000"}},
		},
	},
	// -l: no loopback block, no overhead block.
	"no_calibration": {
		gw: []stream{
			{batch: "gw", index: 0, ttft: 207_170_000, firstDelay: 206_860_000, tokens: 1000, gap: 5e6, delay: 100_000_000},
		},
	},
	// A gateway that drops pi_ts: every request fails without tokens.
	"empty": {
		loop: []stream{
			{batch: "loop", index: 0, ttft: 50_000, firstDelay: 10_000, tokens: 1, delay: 1},
		},
		gw: []stream{
			{batch: "gw", index: 0, failure: result.Failure{Kind: result.NoTokens}},
			{batch: "gw", index: 1, failure: result.Failure{Kind: result.NoTokens}},
		},
	},
}

var (
	// 20 gaps: 12 of 5.1 ms, 3 of 4.1 ms, 4 of 5.3 ms, 1 of 5.4 ms.
	loopGaps = slices.Concat(repeat(mid(5_100_000), 12), repeat(mid(4_100_000), 3),
		repeat(mid(5_300_000), 4), repeat(mid(5_400_000), 1))
	// 20 delays: 15 of 30 µs, 4 of 70 µs, 1 of 180 µs.
	loopDelays = slices.Concat(repeat(mid(30_000), 15), repeat(mid(70_000), 4), repeat(mid(180_000), 1))
	// 40 gaps: 39 of 0 ms and one of 200 ms.
	gwGaps = append(repeat(0, 39), mid(200_000_000))
)

func render(loopS, gwS []stream) ([]byte, error) {
	var out bytes.Buffer
	var loop *stats.Batch
	if loopS != nil {
		loop = stats.NewBatch()
		for _, r := range requests(loopS...) {
			if err := WriteRequestLine(&out, r); err != nil {
				return nil, err
			}
			loop.Add(r)
		}
	}
	gw := stats.NewBatch()
	for _, r := range requests(gwS...) {
		if err := WriteRequestLine(&out, r); err != nil {
			return nil, err
		}
		gw.Add(r)
	}
	if err := WriteReport(&out, runOf(loop, gw)); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func TestGolden(t *testing.T) {
	for name, sc := range scenarios {
		got, err := render(sc.loop, sc.gw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		path := filepath.Join("testdata", name+".golden")
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (run go test -update to create it)", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: output differs from %s:\n--- got\n%s--- want\n%s", name, path, got, want)
		}
	}
}

func TestExpectLine(t *testing.T) {
	tests := []struct {
		thinkMs, delayMs              float64
		tokens, requests, concurrency int
		want                          string
		wantOK                        bool
	}{
		{0, 5, 1000, 6, 1, "", false},   // 4.995 s × 6 = 29.97 s
		{29_900, 0, 1, 1, 1, "", false}, // 29.9 s
		{30_000, 0, 1, 1, 1, "", false}, // exactly 30 s does not exceed
		{30_100, 0, 1, 1, 1, "  (expect ~0min30s for this batch)", true},
		{0, 5, 1000, 7, 1, "  (expect ~0min34s for this batch)", true},  // 34.965 s, truncated
		{0, 5, 1001, 13, 1, "  (expect ~1min05s for this batch)", true}, // 5 s × 13
		{0, 5, 1001, 25, 2, "  (expect ~1min05s for this batch)", true}, // ceil(25/2) = 13 waves
		{0, 5, 1001, 26, 2, "  (expect ~1min05s for this batch)", true}, // 13 waves
		{0, 5, 1001, 12, 2, "", false},                                  // 6 waves: 30 s
		{1000, 5, 1000, 20, 5, "", false},                               // 5.995 s × 4 = 23.98 s
		{3_000, 0.5, 7_201, 1_000, 1, "  (expect ~110min00s for this batch)", true},
		{60_000, 5, 0, 1, 1, "  (expect ~1min00s for this batch)", true}, // n = 0: no inter-token delay
		{40_000, 0, 1, 0, 0, "  (expect ~0min40s for this batch)", true}, // r, c < 1 read as 1
	}
	for _, tt := range tests {
		got, ok := ExpectLine(tt.thinkMs, tt.delayMs, tt.tokens, tt.requests, tt.concurrency)
		want := tt.want
		if !tt.wantOK {
			want = ""
		}
		if got != want || ok != tt.wantOK {
			t.Errorf("ExpectLine(%v, %v, %d, %d, %d) = %q, %v; want %q, %v",
				tt.thinkMs, tt.delayMs, tt.tokens, tt.requests, tt.concurrency, got, ok, want, tt.wantOK)
		}
	}
}

func TestProgressLine(t *testing.T) {
	got := ProgressLine(12*time.Second+999*time.Millisecond, 7, 20, 5, 7123)
	const want = "\r  streaming: 12s elapsed, 7/20 done, 5 in flight, 7123 tokens received"
	if got != want {
		t.Errorf("ProgressLine(12.999s, 7, 20, 5, 7123) = %q, want %q", got, want)
	}
	if EraseLine != "\r\x1b[K" {
		t.Errorf("EraseLine = %q, want \\r ESC [K", EraseLine)
	}
}

// failAfter fails every write after the first n.
type failAfter struct{ n int }

var errWrite = errors.New("write failed")

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errWrite
	}
	f.n--
	return len(p), nil
}

// TestWriteErrors checks that every writer reports the first failing write,
// whichever it is.
func TestWriteErrors(t *testing.T) {
	sc := scenarios["full"]
	loop, gw := batchOf(requests(sc.loop...)...), batchOf(requests(sc.gw...)...)
	writers := map[string]func(*failAfter) error{
		"WriteRequestLine(ok)":     func(w *failAfter) error { return WriteRequestLine(w, sc.gw[0].request()) },
		"WriteRequestLine(failed)": func(w *failAfter) error { return WriteRequestLine(w, sc.gw[3].request()) },
		"WriteRequestLine(unstamped)": func(w *failAfter) error {
			return WriteRequestLine(w, &result.Request{Batch: "gw", Tokens: []result.Token{{Arrived: 1}}})
		},
		"WriteBatch":           func(w *failAfter) error { return WriteBatch(w, sumOf(summary.GatewayBatch, gw)) },
		"WriteBatch(empty)":    func(w *failAfter) error { return WriteBatch(w, sumOf(summary.GatewayBatch, batchOf())) },
		"WriteOverhead":        func(w *failAfter) error { return WriteOverhead(w, summary.NewOverhead(loop, gw)) },
		"WriteOverhead(n/a)":   func(w *failAfter) error { return WriteOverhead(w, summary.NewOverhead(batchOf(), gw)) },
		"WriteReport":          func(w *failAfter) error { return WriteReport(w, runOf(loop, gw)) },
		"WriteReport(no loop)": func(w *failAfter) error { return WriteReport(w, runOf(nil, gw)) },
	}
	for name, write := range writers {
		n := 0
		for ; ; n++ {
			err := write(&failAfter{n: n})
			if err == nil {
				break
			}
			if !errors.Is(err, errWrite) {
				t.Errorf("%s with write %d failing: error %v, want %v", name, n, err, errWrite)
			}
		}
		if n == 0 {
			t.Errorf("%s succeeded with every write failing", name)
		}
	}
}

// exactSamples returns the samples of the four metrics of a batch, in the
// batch block's order, computed from the records directly (SPEC §4).
func exactSamples(rs []*result.Request) [4][]int64 {
	var s [4][]int64
	for _, r := range rs {
		if len(r.Tokens) == 0 {
			continue
		}
		first := r.Tokens[0]
		s[0] = append(s[0], first.Arrived-r.Sent)
		s[1] = append(s[1], first.Arrived-first.Emitted)
		for i := 1; i < len(r.Tokens); i++ {
			s[2] = append(s[2], r.Tokens[i].Arrived-r.Tokens[i-1].Arrived)
			s[3] = append(s[3], r.Tokens[i].Arrived-r.Tokens[i].Emitted)
		}
	}
	for i := range s {
		slices.Sort(s[i])
	}
	return s
}

type exactStats struct {
	n                             int
	mean, min, p50, p95, p99, max float64 // ms
}

func exactOf(sorted []int64) exactStats {
	if len(sorted) == 0 {
		return exactStats{}
	}
	var sum int64
	for _, v := range sorted {
		sum += v
	}
	p := func(q float64) float64 { return float64(stats.ExactPercentile(sorted, q)) / 1e6 }
	return exactStats{len(sorted), float64(sum) / float64(len(sorted)) / 1e6,
		float64(sorted[0]) / 1e6, p(0.5), p(0.95), p(0.99), float64(sorted[len(sorted)-1]) / 1e6}
}

// TestGoldenIsExact checks every metric and overhead line of the golden
// scenarios against the SPEC's exact rule applied to the sorted samples.
func TestGoldenIsExact(t *testing.T) {
	names := [4]string{"TTFT (client)", "TTFT emit->recv(1st)", "inter-token (client)", "emit->recv (tokens)"}
	overheadNames := [4]string{"TTFT (client)", "emit->recv (1st token)", "inter-token (client)", "emit->recv (tokens)"}
	for name, sc := range scenarios {
		out, err := render(sc.loop, sc.gw)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		var loop, gw [4]exactStats
		for i, s := range exactSamples(requests(sc.gw...)) {
			gw[i] = exactOf(s)
		}
		batches := [][4]exactStats{gw}
		if sc.loop != nil {
			for i, s := range exactSamples(requests(sc.loop...)) {
				loop[i] = exactOf(s)
			}
			batches = append(batches, loop)
			for i := range 4 {
				l, g := loop[i], gw[i]
				if l.n == 0 || g.n == 0 {
					want = append(want, fmt.Sprintf("%-24s n/a (no samples)", overheadNames[i]))
					continue
				}
				want = append(want, fmt.Sprintf("%-24s mean %+.3fms  p50 %+.3fms  p95 %+.3fms  p99 %+.3fms",
					overheadNames[i], g.mean-l.mean, g.p50-l.p50, g.p95-l.p95, g.p99-l.p99))
			}
		}
		for _, b := range batches {
			for i, e := range b {
				if e.n == 0 {
					want = append(want, fmt.Sprintf("%-24s n=0", names[i]))
					continue
				}
				want = append(want, fmt.Sprintf("%-24s n=%d  mean=%.2fms  min=%.2fms  p50=%.2fms  p95=%.2fms  p99=%.2fms  max=%.2fms",
					names[i], e.n, e.mean, e.min, e.p50, e.p95, e.p99, e.max))
			}
		}
		for _, w := range want {
			if !containsLine(string(out), w) {
				t.Errorf("%s: output lacks the exact line\n%s\nin\n%s", name, w, out)
			}
		}
	}
}
