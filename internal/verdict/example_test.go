package verdict_test

import (
	"fmt"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

func ExampleClassify() {
	// A gateway that holds the tokens of a 5 ms stream and releases them
	// every 85 ms, as haproxy 2.6 does without option http-no-delay.
	const gap, period = 5_000_000, 85_000_000
	r := &result.Request{Batch: "gw"}
	for k := range int64(400) {
		emitted := 1_000_000 + k*gap
		released := (emitted + period - 1) / period * period
		r.Tokens = append(r.Tokens, result.Token{Emitted: emitted, Arrived: released + 30_000})
	}
	acc, st := verdict.NewAccumulator(), stats.NewBatch()
	acc.Add(r)
	st.Add(r)

	v := verdict.Classify(nil, acc, nil, st)
	fmt.Printf("%s: %.0f%% in bursts of %.0f every %.0f ms\n", v.Class, 100*v.CoalescedFraction, v.BurstSizeP50, v.BurstPeriodMs)
	fmt.Printf("%s: %s\n", v.Signature.Title(), v.Signature.Evidence)
	// Output:
	// buffers: 100% in bursts of 17 every 85 ms
	// time period: released every ~85 ms (quartile spread 0.00), ~17 tokens at a time
}
