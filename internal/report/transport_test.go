package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/summary/summarytest"
)

func transportBatch(tag, proto string, open bool) *stats.Batch {
	return batchOf(summarytest.TransportRecords(tag, proto, open)...)
}

func init() {
	streamCases["transport"] = struct{ loop, gw *stats.Batch }{
		transportBatch("loop", "HTTP/1.1", false),
		transportBatch("gw", "h2", true),
	}
}

// TestTransportLines pins the connections, phases, start-lateness and
// warm-up lines.
func TestTransportLines(t *testing.T) {
	c := streamCases["transport"]
	var b bytes.Buffer
	if err := WriteStream(&b, streamRun(c)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"connections    loopback 2 opened (+2 by warm-up), 1.8 requests each, 1 reuse failure, 1 poisoned; HTTP/1.1 7\n",
		"phases         loopback p50/p99 ms: connect 0.052/0.052, tls 1.200/1.200, written 0.011/0.011, head 0.201/0.201, first-token 0.030/0.030\n",
		"warm-up        loopback 2 requests, left out of the statistics\n",
		"connections    gateway  2 opened (+2 by warm-up), 1.8 requests each, 1 reuse failure, 1 poisoned; h2 7\n",
		"start-lateness gateway  n=8  mean 0.020  p50 0.020  p99 0.040  max 0.040 ms\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("WriteStream lacks\n%q\nin\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "start-lateness loopback") {
		t.Errorf("a closed-loop batch has a start-lateness line:\n%s", b.String())
	}
	// A batch of records without connection facts has none of these lines.
	b.Reset()
	if err := WriteStream(&b, runOf(nil, streamCases["merging"].gw)); err != nil {
		t.Fatal(err)
	}
	if strings.Count(b.String(), "\n") != 2 {
		t.Errorf("a batch without connection facts:\n%s\nwant the title and one stream line", b.String())
	}
}

func TestPhasesLine(t *testing.T) {
	const ms = 1_000_000
	tokens := []result.Token{{Arrived: 1000*ms + 400_000}}
	tests := []struct {
		name string
		r    result.Request
		want string
	}{
		{"new TLS connection", result.Request{Batch: "gw", Index: 3, Proto: "h2", ConnID: 2, Start: 1000 * ms, Connected: 1000*ms + 50_000,
			TLSDone: 1000*ms + 120_000, Sent: 1000*ms + 132_000, HeadAt: 1000*ms + 342_000, Tokens: tokens},
			"gw   3: h2 conn 2 (new) connect 0.050 tls 0.070 written 0.012 head 0.210 first-token 0.058 ms"},
		{"reused", result.Request{Batch: "gw", Index: 3, Proto: "HTTP/1.1", ConnID: 2, Reused: true, Start: 1000 * ms,
			Sent: 1000*ms + 12_000, HeadAt: 1000*ms + 222_000, Tokens: tokens},
			"gw   3: HTTP/1.1 conn 2 (reused) connect 0.000 tls 0.000 written 0.012 head 0.210 first-token 0.178 ms"},
		{"plain TCP after a reuse failure, warm-up, poisoned", result.Request{Batch: "loop", Index: 12, Proto: "HTTP/1.1", ConnID: 7,
			ReuseFailed: true, Warmup: true, Poisoned: true, Start: 1000 * ms, Connected: 1000*ms + 80_000, Sent: 1000*ms + 90_000},
			"loop  12: HTTP/1.1 conn 7 (new, after a reuse failure) connect 0.080 tls 0.000 written 0.010 head - first-token - ms; connection poisoned, not kept; warm-up"},
		{"TLS handshake failed", result.Request{Batch: "gw", Index: 0, ConnID: 1, Start: 1000 * ms, Connected: 1000*ms + 50_000},
			"gw   0: - conn 1 (new) connect 0.050 tls - written - head - first-token - ms"},
		{"no connection", result.Request{Batch: "gw", Index: 1, Start: 1000 * ms},
			"gw   1: no connection connect - tls - written - head - first-token - ms"},
	}
	for _, tt := range tests {
		if got := PhasesLine(&tt.r); got != tt.want {
			t.Errorf("PhasesLine(%s) =\n%q\nwant\n%q", tt.name, got, tt.want)
		}
	}
}

// TestStreamsAtOnce: the connections line ends with the most HTTP/2
// streams in flight on one connection when requests shared connections
// (--streams-per-conn), and says nothing of streams when each carried
// one at a time.
func TestStreamsAtOnce(t *testing.T) {
	for _, tt := range []struct {
		streams []int
		want    string
	}{
		{[]int{1, 3, 2, 3, 1, 2, 1, 1}, "; h2 7, up to 3 streams at once\n"},
		{[]int{1, 1, 1, 1, 1, 1, 1, 1}, "; h2 7\n"},
	} {
		recs := summarytest.TransportRecords("gw", "h2", false)
		for i := range recs {
			recs[i].Streams = tt.streams[i%len(tt.streams)]
		}
		var b bytes.Buffer
		if err := WriteStream(&b, runOf(nil, batchOf(recs...))); err != nil {
			t.Fatal(err)
		}
		line := ""
		for l := range strings.Lines(b.String()) {
			if strings.HasPrefix(l, "connections") {
				line = l
			}
		}
		if !strings.HasSuffix(line, tt.want) {
			t.Errorf("streams in flight %v: connections line %q, want it to end %q", tt.streams, line, tt.want)
		}
	}
}
