package report

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/summary/summarytest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// stream is a synthetic request (summarytest.Stream).
type stream = summarytest.Stream

var (
	batchOf      = summarytest.Batch
	sumOf        = summarytest.Summary
	runOf        = summarytest.Run
	requests     = summarytest.Requests
	containsLine = summarytest.ContainsLine
	errWrite     = summarytest.ErrWrite
)

// failAfter fails every write after the first N.
type failAfter = summarytest.FailAfter

// TestSPECLines checks that the example lines of SPEC §6 are reproduced
// from records that carry their numbers.
func TestSPECLines(t *testing.T) {
	okReq := stream{Batch: "gw", Index: 0, TTFT: 180_000, FirstDelay: 30_000, Tokens: 1000, Gap: 5_004_000_000 / 1000, Delay: 30_000}.Request()
	okReq.End = okReq.Start + 5_004_000_000
	failed := stream{Batch: "gw", Index: 1, TTFT: 180_000, FirstDelay: 30_000, Tokens: 10, Gap: 5e6, Delay: 30_000,
		Failure: result.Failure{Kind: result.ClosedBeforeDone}}.Request()

	var loopRs, gwRs []*result.Request
	for i := range 3 {
		loopRs = append(loopRs, stream{Batch: "loop", Index: i, TTFT: 40_000, FirstDelay: 10_000, Tokens: 200, Gap: 5e6, Delay: 10_000}.Request())
		gwRs = append(gwRs, stream{Batch: "gw", Index: i, TTFT: 200_000, FirstDelay: 36_000, Tokens: 1000, Gap: 5e6, Delay: 30_000}.Request())
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

func TestWriteRequestLine(t *testing.T) {
	tests := []struct {
		r    *result.Request
		want string
	}{
		{stream{Batch: "loop", Index: 2, TTFT: 40_000, FirstDelay: 4_000, Tokens: 200, Gap: 5e6, Delay: 1}.Request(),
			"loop   2: ok  ttft=     0.04ms  emit-delay(first)=     0.00ms  tokens=200  wall=0.995s\n"},
		{stream{Batch: "gw", Index: 123, TTFT: 207_170_000, FirstDelay: 206_860_000, Tokens: 1, Delay: 1}.Request(),
			"gw 123: ok  ttft=   207.17ms  emit-delay(first)=   206.86ms  tokens=1  wall=0.207s\n"},
		{stream{Batch: "gw", Index: 1000, TTFT: 123_456_789_000, FirstDelay: 5, Tokens: 1}.Request(),
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
		return batchOf(stream{Batch: "gw", TTFT: 1e6, FirstDelay: firstDelay, Tokens: 1}.Request())
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
	for name, sc := range summarytest.Scenarios {
		got, err := render(sc.Loop, sc.Gw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkGolden(t, "the report of "+name, name+".golden", got)
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

// TestWriteErrors checks that every writer reports the first failing write,
// whichever it is.
func TestWriteErrors(t *testing.T) {
	sc := summarytest.Scenarios["full"]
	loop, gw := batchOf(requests(sc.Loop...)...), batchOf(requests(sc.Gw...)...)
	writers := map[string]func(*failAfter) error{
		"WriteRequestLine(ok)":     func(w *failAfter) error { return WriteRequestLine(w, sc.Gw[0].Request()) },
		"WriteRequestLine(failed)": func(w *failAfter) error { return WriteRequestLine(w, sc.Gw[3].Request()) },
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
			err := write(&failAfter{N: n})
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
	for name, sc := range summarytest.Scenarios {
		out, err := render(sc.Loop, sc.Gw)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		var loop, gw [4]exactStats
		for i, s := range exactSamples(requests(sc.Gw...)) {
			gw[i] = exactOf(s)
		}
		batches := [][4]exactStats{gw}
		if sc.Loop != nil {
			for i, s := range exactSamples(requests(sc.Loop...)) {
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
