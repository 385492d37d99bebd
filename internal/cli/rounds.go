package cli

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"

	"github.com/sse-latency/sse-latency/internal/client"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/sweep"
)

// interleave runs pairs pairs of loopback and gateway rounds in the order
// sweep.Order gives (L G G L …; gateway rounds only when the run has no
// loopback side, see calibrates). Every round is the run's whole load (-r,
// -c, --rate, --duration, --warmup) — the loopback rounds too, unlike the
// reference's reduced calibration, so that each side measures the same
// requests. It returns the records of all the rounds of each side (nil
// loop without a loopback side) and each round's summary, in the order
// they ran. tag names the rounds' requests apart from those of other
// steps (a sweep's); a stop (ctx) ends it after the round it interrupted.
func (r *run) interleave(ctx context.Context, pairs int, tag string) (loop, gw *summary.Collector, rounds []summary.Round, err error) {
	order := sweep.Order(pairs, r.calibrates())
	gw = summary.NewCollector()
	if len(order) > pairs {
		loop = summary.NewCollector()
	}
	var offsets, done [2]int // per side (0 loopback, 1 gateway): records so far, rounds so far
	fellBack := false        // the TLS fallback note was printed (once for all rounds)
	for i := range len(order) {
		if ctx.Err() != nil {
			break
		}
		side, name, batchName, addr, c := 1, "gw", summary.GatewayBatch, r.gwAddr, gw
		var req *client.Request
		if order[i] == 'L' {
			side, name, batchName, addr, c = 0, "loop", summary.LoopbackBatch, r.selfAddr, loop
			req = r.loopbackRequest(r.cfg.Tokens, math.MaxInt) // the gateway's phases, uncapped
		} else {
			req = r.gatewayRequest()
			if done[side] == 0 {
				r.engineNote(req) // once: every round's request is alike
			}
		}
		req.IDPrefix = r.runID + tag + "r" + strconv.Itoa(i) // ids unique across rounds
		r.announce(fmt.Sprintf("round %d/%d: %s: ", i+1, len(order), name), addr)
		st := stats.NewBatch()
		cost, err := r.runBatch(ctx, r.batchSpec(name, req), c, st, offsets[side])
		if err != nil {
			return nil, nil, nil, err
		}
		if note := req.TLSFallback(); note != "" && side == 1 && !fellBack {
			fellBack = true
			r.out.errorf("note: %s\n", note)
		}
		offsets[side] += st.Requests + st.Warmup
		round := summary.NewRound(batchName, done[side], st)
		round.Cost = summary.NewCost(cost, os.Getpagesize())
		rounds = append(rounds, round)
		done[side]++
	}
	return loop, gw, rounds, nil
}
