package client

import (
	"testing"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/wire"
	"github.com/sse-latency/sse-latency/internal/wire/ssetest"
)

// TestReaderConformance reads every conformance case of ssetest through
// the response parser, as the body of a response, cut as ssetest.Chunkings
// cuts it, each piece a Read: the record must count the events the
// specification dispatches (up to the one that ends the stream, [DONE]),
// their pings, comments and framing, their last event ID and reconnection
// time, and date the first event by the Read that completed it.
func TestReaderConformance(t *testing.T) {
	if testEngine != "" && testEngine != EngineGoroutine {
		t.Skip("the response parser is the same on every engine: read once, on the goroutine engine's pass")
	}
	for n, tc := range ssetest.Cases {
		ref := ssetest.Interpret([]byte(tc.Input))
		// The events the reader takes: up to the first that ends the stream.
		events, pings, first := len(ref.Events), 0, -1
		for i, e := range ref.Events {
			typ := e.Type
			if typ == "message" {
				typ = ""
			}
			if e.Type == "ping" {
				pings++
			} else if first < 0 {
				first = i
			}
			if api.ScanEvent(api.Chat, []byte(typ), []byte(e.Data)).Flags&(api.Terminal|api.Failed|api.Malformed) != 0 {
				events = i + 1
				break
			}
		}
		whole := events == len(ref.Events) // the stream was read to its end
		failed := 0
		ssetest.Chunkings([]byte(tc.Input), uint64(n), func(desc string, pieces [][]byte) {
			if failed > 3 {
				return
			}
			rec := &result.Request{Batch: "gw"}
			r := newReader(rec, &Options{Dialect: api.Chat, Tokens: -1})
			defer r.close()
			ended := r.feed([]byte(sseHead+"\r\n"), 1)
			for i, p := range pieces {
				if len(p) > 0 && !ended {
					ended = r.feed(p, int64(i+2)) // Read i+2 returned at i+2
				}
			}
			firstAt := int64(0)
			if first >= 0 {
				firstAt = int64(ssetest.DispatchPieces(pieces, ref)[first] + 2)
			}
			retry := int64(-1)
			if rec.Framing.RetryFields > 0 {
				retry = rec.RetryMs
			}
			bad := func(format string, args ...any) {
				failed++
				t.Errorf("%s (%s), %s: "+format, append([]any{tc.Name, tc.Rule, desc}, args...)...)
			}
			switch {
			case rec.Failure.Kind == result.BadFraming:
				bad("failed: %s", rec.Failure.Error())
			case rec.Events != events || rec.Pings != pings || rec.FirstEventAt != firstAt:
				bad("%d events, %d pings, the first at %d; want %d, %d, %d", rec.Events, rec.Pings, rec.FirstEventAt, events, pings, firstAt)
			case whole && (rec.Framing != result.Framing(wire.Framing(ref.Framing)) || rec.Comments != ref.Comments):
				bad("framing %+v, %d comments; want %+v, %d", rec.Framing, rec.Comments, ref.Framing, ref.Comments)
			case whole && (rec.LastEventID != tc.LastID || retry != tc.Retry):
				bad("last event ID %q, retry %d; want %q, %d", rec.LastEventID, retry, tc.LastID, tc.Retry)
			}
		})
	}
}
