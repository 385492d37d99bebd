package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/summary/summarytest"
)

// TestWebSocketTransport: a batch over WebSocket says so in the stream
// block (its events are websocket messages, its protocol websocket), in
// the JSON of its summary and in the HTML page; an SSE batch beside it
// does not.
func TestWebSocketTransport(t *testing.T) {
	loop := batchOf(summarytest.TransportRecords("loop", "HTTP/1.1", false)...)
	gw := batchOf(summarytest.TransportRecords("gw", summary.TransportWebSocket, false)...)
	run := runOf(loop, gw)
	var b bytes.Buffer
	if err := WriteStream(&b, run); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		"loopback   14 tokens: 0 by pi_ts, 0 by content, 14 unmeasured; 0 reads, 0 events,",
		"gateway    14 tokens: 0 by pi_ts, 0 by content, 14 unmeasured; 0 reads, 0 websocket messages,",
		"; HTTP/1.1 7\n",
		"; websocket 7\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("WriteStream lacks %q:\n%s", want, text)
		}
	}
	js, err := json.Marshal(run.Batches)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(js), `"transport":"websocket"`); n != 1 || strings.Contains(string(js), `"transport":""`) {
		t.Errorf("the batches' JSON names the transport %d times (want once, the gateway's, and nothing for SSE): %s", n, js)
	}
	d := simDocument(false)
	d.Batches[1].Transport = summary.TransportWebSocket
	page := renderHTML(t, d)
	for _, want := range []string{"gateway — 127.0.0.1:8080 over WebSocket:", "<td>gateway (websocket)</td>", "<td>loopback</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the HTML page lacks %q", want)
		}
	}
}
