package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/testutil"
	"github.com/sse-latency/sse-latency/internal/wsrelay"
)

// TestWebSocketThroughRelay measures through an SSE->WebSocket relay with
// --websocket: the gateway batch speaks WebSocket to the relay, which
// speaks SSE to the server; the calibration speaks WebSocket to the
// server's own endpoint. Every request ok, every token measured (by pi_ts:
// the relay passes the events unchanged), the connections kept with -k,
// and the report says each batch went over WebSocket: the stream block,
// the JSON document (config and batches), the HTML page.
func TestWebSocketThroughRelay(t *testing.T) {
	ln := testutil.Listen(t) // the dummy server's, bound before the relay learns its address
	rl := testutil.Listen(t)
	relay := wsrelay.Start(rl, wsrelay.Config{Upstream: func() string { return ln.Addr().String() }})
	t.Cleanup(func() { relay.Close() })
	gw := relay.Addr()
	dir := t.TempDir()
	doc, page := filepath.Join(dir, "run.json"), filepath.Join(dir, "run.html")
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code, _ := MeasureOn(ctx, ln, []string{"-L", ln.Addr().String(), "-t", gw, "--api", "responses", "--websocket", "-k",
		"-r", "6", "-c", "2", "-n", "40", "-d", "1", "--json", doc, "--html", page}, &out, &errb)
	text := out.String()
	if code != ExitOK {
		t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s", code, text, errb.String())
	}
	titles := parseTitles(t, text)
	if got, want := titles["gateway"], (batchLine{6, 6, 0, 240}); got != want {
		t.Errorf("gateway batch %+v, want %+v\n%s", got, want, text)
	}
	if got := titles["loopback"]; got.ok != got.requests || got.requests == 0 {
		t.Errorf("loopback batch %+v, want every request ok\n%s", got, text)
	}
	for _, re := range []string{
		`(?m)^loopback +\d+ tokens: \d+ by pi_ts, 0 by content, 0 unmeasured; \d+ reads, \d+ websocket messages,`,
		`(?m)^gateway +240 tokens: 240 by pi_ts, 0 by content, 0 unmeasured; \d+ reads, \d+ websocket messages,`,
		`(?m)^connections +gateway +2 opened, 3\.0 requests each, 0 reuse failures; websocket 6$`,
		`(?m)^connections +loopback +\d+ opened, .*; websocket \d+$`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("the report does not match %s:\n%s", re, text)
		}
	}
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Config struct {
			WebSocket bool `json:"websocket"`
		} `json:"config"`
		Batches []struct {
			Name, Transport string
		} `json:"batches"`
	}
	if err := json.Unmarshal(data, &d); err != nil || !d.Config.WebSocket || len(d.Batches) != 2 ||
		d.Batches[0].Transport != "websocket" || d.Batches[1].Transport != "websocket" {
		t.Errorf("JSON document: %+v (%v); want config.websocket and both batches over websocket", d, err)
	}
	html, err := os.ReadFile(page)
	if err != nil || !strings.Contains(string(html), gw+" over WebSocket:") {
		t.Errorf("the HTML page does not say the gateway batch went over WebSocket (%v)", err)
	}
}
