package report

import (
	"fmt"

	"github.com/sse-latency/sse-latency/internal/verdict"
)

// findingLines words the findings of v, one verdict line each, in their
// order (verdict.FindingNames):
//
//	held stream start        the head came 3001.20 ms into the stream (p50), with the first visible token, though the server sent it at once and thought for 3000.10 ms (5 of 5 requests)
//	reasoning dropped        5 of 5 answers came without their reasoning: the gateway dropped it
//	reasoning converted      5 of 5 answers carried their reasoning as visible text: the gateway turned it into content
//	arguments held           the tool-call argument deltas came 0.01 ms apart (first to last, p50), emitted over 45.00 ms: the gateway held them until the call was complete (5 of 5 requests)
//	idle cut                 5 of 5 streams ended after 2001.30 ms of silence (p50; 2000.90 to 2003.00 ms): connection closed before [DONE]; they had received 5 heads, 5 events, 0 tokens — raise the gateway's idle or read timeout, or have the backend send heartbeats
//	heartbeats injected      the client saw 12 heartbeats, the server sent 0: 12 injected by the gateway, in 5 of 5 requests
//	heartbeats swallowed     the server sent 30 heartbeats, the client saw 0: 30 swallowed by the gateway, in 5 of 5 requests
//
// A finding of a name it does not know is worded by its name and counts.
func findingLines(v verdict.Verdict) []verdictLine {
	var out []verdictLine
	for _, f := range v.Findings {
		out = append(out, findingLine(f, v.Class))
	}
	return out
}

// findingLine words one finding; class is the verdict's (a buffering
// gateway holds tool-call arguments along with everything else).
func findingLine(f verdict.Finding, class verdict.Class) verdictLine {
	of := fmt.Sprintf("%d of %d", f.Requests, f.Of)
	switch f.Name {
	case verdict.FindingHeldStart:
		what, when := "the head", "after the think phase"
		if f.Held != "head" {
			what = "the first event"
		}
		if f.WithText {
			when = "with the first visible token"
		}
		return verdictLine{"held stream start", fmt.Sprintf("%s came %.2f ms into the stream (p50), %s, though the server sent it at once and thought for %.2f ms (%s requests)",
			what, f.ReleasedMs, when, f.ThinkMs, of)}
	case verdict.FindingReasoningDropped:
		return verdictLine{"reasoning dropped", of + " answers came without their reasoning: the gateway dropped it"}
	case verdict.FindingReasoningConverted:
		return verdictLine{"reasoning converted", of + " answers carried their reasoning as visible text: the gateway turned it into content"}
	case verdict.FindingArgumentsHeld:
		also := ""
		if class == verdict.Buffers {
			also = "; it buffers the text too"
		}
		return verdictLine{"arguments held", fmt.Sprintf("the tool-call argument deltas came %.2f ms apart (first to last, p50), emitted over %.2f ms: "+
			"the gateway held them until the call was complete (%s requests)%s", f.ArrivalSpreadMs, f.EmissionSpreadMs, of, also)}
	case verdict.FindingIdleCut:
		return verdictLine{"idle cut", fmt.Sprintf("%s streams ended after %.2f ms of silence (p50; %.2f to %.2f ms): %s; they had received %d %s, %d %s, %d %s"+
			" — raise the gateway's idle or read timeout, or have the backend send heartbeats",
			of, f.SilenceMs, f.SilenceMinMs, f.SilenceMaxMs, f.Failure, f.Heads, plural(f.Heads, "head"), f.Events, plural(f.Events, "event"),
			f.Tokens, plural(f.Tokens, "token"))}
	case verdict.FindingHeartbeatsInjected:
		return verdictLine{"heartbeats injected", fmt.Sprintf("the client saw %d %s, the server sent %d: %d injected by the gateway, in %s requests",
			f.Seen, plural(f.Seen, "heartbeat"), f.Sent, f.Heartbeats, of)}
	case verdict.FindingHeartbeatsSwallowed:
		return verdictLine{"heartbeats swallowed", fmt.Sprintf("the server sent %d %s, the client saw %d: %d swallowed by the gateway, in %s requests",
			f.Sent, plural(f.Sent, "heartbeat"), f.Seen, f.Heartbeats, of)}
	}
	return verdictLine{f.Name, of + " requests"}
}
