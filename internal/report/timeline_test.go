package report

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/summary/summarytest"
)

// TestTimelineGolden renders the timeline of summarytest.PhasedRun into
// testdata/timeline.golden (go test -update rewrites it).
func TestTimelineGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTimeline(&b, summarytest.PhasedRun()); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "WriteTimeline", "timeline.golden", b.Bytes())
}

// TestTimelineLines pins the lines of the block independently of the
// golden, and what it leaves out.
func TestTimelineLines(t *testing.T) {
	run := summarytest.PhasedRun()
	var b bytes.Buffer
	if err := WriteText(&b, run, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"=== timeline ===",
		"heartbeats     loopback 3 seen; the server sent 3 to the 3 ok requests it has a record of: 0 injected, 0 swallowed",
		"heartbeats     gateway  15 seen; the server sent 4 to the 4 ok requests it has a record of: 8 injected, 0 swallowed",
		"emit->recv     gateway  p50/p99 ms: tool call 25.207/50.184 (n=40), text 0.200/0.200 (n=120)",
		"silence        gateway  longest per request p50 1050.411 ms, max 1500.000 ms",
	} {
		if !summarytest.ContainsLine(out, want) {
			t.Errorf("WriteText wrote\n%s\nwant the line\n%s", out, want)
		}
	}
	for _, want := range []string{"held stream start        the head came 1050.20 ms into the stream (p50), with the first visible token",
		"reasoning dropped        4 of 4 answers came without their reasoning", "idle cut                 1 of 5 streams ended after 1500.00 ms of silence",
		"heartbeats injected      the client saw 12 heartbeats, the server sent 4: 8 injected"} {
		if !strings.Contains(out, want) {
			t.Errorf("WriteText wrote\n%s\nwant a verdict line starting %q", out, want)
		}
	}
	if i, j := strings.Index(out, "=== stream ==="), strings.Index(out, "=== timeline ==="); i < 0 || j < i {
		t.Errorf("the timeline block is not after the stream block:\n%s", out)
	}
	b.Reset()
	if err := WriteText(&b, run, true); err != nil || strings.Contains(b.String(), "timeline") || strings.Contains(b.String(), "idle cut") {
		t.Errorf("WriteText with compat wrote (error %v)\n%s\nwant no timeline, no findings", err, b.String())
	}
	// A plain run has no timeline block.
	plain := summarytest.Run(summarytest.Batch(summarytest.Requests(summarytest.Scenarios["full"].Loop...)...),
		summarytest.Batch(summarytest.Requests(summarytest.Scenarios["full"].Gw...)...))
	tl := summary.Timeline{Requests: 4}
	plain.Gateway().Timeline = &tl
	b.Reset()
	if err := WriteTimeline(&b, plain); err != nil || b.Len() != 0 {
		t.Errorf("WriteTimeline of a plain run wrote %q (error %v), want nothing", b.String(), err)
	}
	for n := range 12 {
		if err := WriteTimeline(&summarytest.FailAfter{N: n}, run); !errors.Is(err, summarytest.ErrWrite) {
			t.Errorf("WriteTimeline with write %d failing = %v, want %v", n+1, err, summarytest.ErrWrite)
		}
	}
}

func TestTimelineLine(t *testing.T) {
	r := &result.Request{Batch: "gw", Index: 3, Sent: 1_000_000, FirstEventAt: 1_212_000, FirstTextAt: 51_000_000,
		Comments: 2, Pings: 1, ServerHeartbeats: 3, ServerRecord: true, MaxSilence: 50_010_000, LastReadAt: 60_000_000, End: 60_100_000}
	want := "gw   3: first event 0.212, reasoning -, tool call -, visible 50.000 ms; 3 heartbeats (the server's 3); longest silence 50.010 ms"
	if got := TimelineLine(r); got != want {
		t.Errorf("TimelineLine = %q, want %q", got, want)
	}
	r.ServerRecord, r.End = false, 160_000_000
	want = "gw   3: first event 0.212, reasoning -, tool call -, visible 50.000 ms; 3 heartbeats; longest silence 100.000 ms"
	if got := TimelineLine(r); got != want {
		t.Errorf("TimelineLine = %q, want %q", got, want)
	}
}
