package report_test

import (
	"fmt"
	"os"

	"github.com/sse-latency/sse-latency/internal/report"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/summary"
)

// oneToken returns a request whose single token was emitted at 1 ms and
// arrived delay ns later; the request was sent at 0.5 ms.
func oneToken(batch string, delay int64) *result.Request {
	return &result.Request{
		Batch: batch, Start: 400_000, Sent: 500_000, End: 1_000_000 + delay + 100_000,
		Tokens: []result.Token{{Emitted: 1_000_000, Arrived: 1_000_000 + delay}},
	}
}

func ExampleWriteReport() {
	loop, gw := summary.NewCollector(), summary.NewCollector()
	for _, r := range []*result.Request{oneToken("loop", 10_000), oneToken("gw", 36_000)} {
		if err := report.WriteRequestLine(os.Stdout, r); err != nil {
			fmt.Println(err)
		}
	}
	loop.Add(oneToken("loop", 10_000))
	gw.Add(oneToken("gw", 36_000))
	run := summary.New(summary.Inputs{Loop: loop, Gateway: gw})
	if err := report.WriteReport(os.Stdout, run); err != nil {
		fmt.Println(err)
	}
	// Output:
	// loop   0: ok  ttft=     0.51ms  emit-delay(first)=     0.01ms  tokens=1  wall=0.001s
	// gw   0: ok  ttft=     0.54ms  emit-delay(first)=     0.04ms  tokens=1  wall=0.001s
	//
	// === loopback (direct to listen address): 1 requests, 1 ok, 0 failed, 1 tokens ===
	// TTFT (client)            n=1  mean=0.51ms  min=0.51ms  p50=0.51ms  p95=0.51ms  p99=0.51ms  max=0.51ms
	// TTFT emit->recv(1st)     n=1  mean=0.01ms  min=0.01ms  p50=0.01ms  p95=0.01ms  p99=0.01ms  max=0.01ms
	// inter-token (client)     n=0
	// emit->recv (tokens)      n=0
	// === gateway: 1 requests, 1 ok, 0 failed, 1 tokens ===
	// TTFT (client)            n=1  mean=0.54ms  min=0.54ms  p50=0.54ms  p95=0.54ms  p99=0.54ms  max=0.54ms
	// TTFT emit->recv(1st)     n=1  mean=0.04ms  min=0.04ms  p50=0.04ms  p95=0.04ms  p99=0.04ms  max=0.04ms
	// inter-token (client)     n=0
	// emit->recv (tokens)      n=0
	// === gateway overhead (gateway minus loopback; negative = loopback noise) ===
	// emit->recv (1st token)   mean +0.026ms  p50 +0.026ms  p95 +0.026ms  p99 +0.026ms
	// emit->recv (tokens)      n/a (no samples)
	// TTFT (client)            mean +0.026ms  p50 +0.026ms  p95 +0.026ms  p99 +0.026ms
	// inter-token (client)     n/a (no samples)
}

func ExampleExpectLine() {
	// -n 1001 -d 5 -r 25 -c 2: 13 waves of 5 s.
	if line, ok := report.ExpectLine(0, 5, 1001, 25, 2); ok {
		fmt.Println(line)
	}
	// Output:
	//   (expect ~1min05s for this batch)
}
