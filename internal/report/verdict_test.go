package report

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/advice"
	"github.com/sse-latency/sse-latency/internal/gateway"
	"github.com/sse-latency/sse-latency/internal/summary/summarytest"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

func TestVerdictGolden(t *testing.T) {
	for name, v := range summarytest.Verdicts {
		var b bytes.Buffer
		if err := WriteVerdict(&b, v, summarytest.Identities[name]); err != nil {
			t.Fatalf("WriteVerdict(%s): %v", name, err)
		}
		checkGolden(t, "WriteVerdict("+name+")", "verdict_"+name+".golden", b.Bytes())
	}
}

// TestVerdictLines pins the lines that carry each field, independently of
// the goldens.
func TestVerdictLines(t *testing.T) {
	tests := []struct {
		name string
		want string
	}{
		{"buffers", "gateway buffers: 99.9% of 3996 tokens in bursts (loopback 0.2%)"},
		{"buffers", "bursts                   typical 40 tokens, max 41, one every ~200.04 ms; tokens emitted every 5.00 ms"},
		{"buffers", "added emit->recv         mean +97.521ms  p50 +97.500ms  p99 +195.012ms  (gateway minus loopback)"},
		{"buffers", "advice (the gateway was not identified: --gateway NAME gives its own):"},
		{"buffers", "  - Nagle/delayed-ACK timing: " + advice.For(gateway.Unknown, advice.Nagle).Setting},
		{"buffers", "      if your gateway is HAProxy: " + advice.For(gateway.HAProxy, advice.Nagle).Setting},
		{"buffers_no_calibration", "gateway                  haproxy (local process 4242 haproxy)"},
		{"buffers_no_calibration", "advice for HAProxy:"},
		{"buffers_no_calibration", "  - byte threshold: " + advice.For(gateway.HAProxy, advice.ByteThreshold).Setting},
		{"buffers_no_calibration", "          option http-no-delay"},
		{"buffers_signature", "gateway                  nginx/1.22.1 (Server header; local process 77 nginx)"},
		{"buffers_signature", "  - compression: " + advice.For(gateway.Nginx, advice.Compression).Setting},
		{"buffers_no_calibration", "gateway buffers: 100.0% of 1000 tokens in bursts"},
		{"buffers_no_calibration", "bursts                   typical 200 tokens, max 200, at most one per response; tokens emitted every 5.00 ms"},
		{"buffers_no_calibration", "emit->recv (gateway)     mean +497.500ms  p50 +497.500ms  p99 +990.100ms  (no calibration to subtract)"},
		{"flushes", "gateway flushes every event: 0.4% of 20000 tokens in bursts (loopback 0.2%), emitted every 5.00 ms"},
		{"flushes", "added emit->recv         mean +0.034ms  p50 +0.036ms  p99 -0.000ms  (gateway minus loopback)"},
		{"flushes_hold", "first token held         +39.98ms beyond the following tokens' 0.02ms (p50 over 20 requests); WARN: held 10 to 50 ms"},
		{"flushes_hold", "  - first token held: " + advice.For(gateway.Unknown, advice.FirstTokenHold).Setting},
		{"unknown", "verdict: unknown — too few tokens to judge (19 analysable, need 20)"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if err := WriteVerdict(&b, summarytest.Verdicts[tt.name], summarytest.Identities[tt.name]); err != nil {
			t.Fatalf("WriteVerdict(%s): %v", tt.name, err)
		}
		if !containsLine(b.String(), tt.want) {
			t.Errorf("WriteVerdict(%s) wrote\n%s\nwant the line\n%s", tt.name, b.String(), tt.want)
		}
	}
	// What must not be printed.
	absent := []struct{ name, substr string }{
		{"flushes", "first token held"},  // not flagged, though measured
		{"flushes", "advice"},            // no advice
		{"buffers_signature", "HAProxy"}, // nginx's advice only
		{"flushes", "bursts   "},         // no bursts line for a flushing gateway
		{"flushes", "note:"},             // calibration not noisy
		{"unknown", "added"},             // no figures without a verdict
		{"buffers_no_calibration", "loopback"},
		{"buffers_no_calibration", "first token held"},
	}
	for _, a := range absent {
		var b bytes.Buffer
		if err := WriteVerdict(&b, summarytest.Verdicts[a.name], summarytest.Identities[a.name]); err != nil {
			t.Fatalf("WriteVerdict(%s): %v", a.name, err)
		}
		if strings.Contains(b.String(), a.substr) {
			t.Errorf("WriteVerdict(%s) wrote %q, want no %q in it", a.name, b.String(), a.substr)
		}
	}
}

// TestVerdictWriteErrors checks that WriteVerdict returns the first failing
// write, whichever it is.
func TestVerdictWriteErrors(t *testing.T) {
	for name, v := range summarytest.Verdicts {
		var all bytes.Buffer
		if err := WriteVerdict(&all, v, summarytest.Identities[name]); err != nil {
			t.Fatal(err)
		}
		lines := strings.Count(all.String(), "\n")
		n := 0
		for ; ; n++ {
			err := WriteVerdict(&failAfter{N: n}, v, summarytest.Identities[name])
			if err == nil {
				break
			}
			if !errors.Is(err, errWrite) {
				t.Errorf("WriteVerdict(%s) with write %d failing: error %v, want %v", name, n, err, errWrite)
			}
		}
		if n != lines {
			t.Errorf("WriteVerdict(%s) failed for the first %d failing writes, want all %d (one per line)", name, n, lines)
		}
	}
}

// TestFindingLines: the findings are verdict lines, after the verdict's
// own, in the text and the HTML alike; held arguments say when the
// gateway buffers everything; a finding of an unknown name still shows.
func TestFindingLines(t *testing.T) {
	v := summarytest.Verdicts["buffers"]
	v.Findings = []verdict.Finding{{Name: verdict.FindingArgumentsHeld, Requests: 2, Of: 3, ArrivalSpreadMs: 1, EmissionSpreadMs: 40},
		{Name: "later_finding", Requests: 1, Of: 3}}
	var b bytes.Buffer
	if err := WriteVerdict(&b, v, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"arguments held           the tool-call argument deltas came 1.00 ms apart (first to last, p50), emitted over 40.00 ms: " +
			"the gateway held them until the call was complete (2 of 3 requests); it buffers the text too",
		"later_finding            1 of 3 requests",
	} {
		if !containsLine(b.String(), want) {
			t.Errorf("WriteVerdict wrote\n%s\nwant the line\n%s", b.String(), want)
		}
	}
	if i, j := strings.Index(b.String(), "added emit->recv"), strings.Index(b.String(), "arguments held"); j < i {
		t.Errorf("the findings come before the verdict's figures:\n%s", b.String())
	}
	hv := newHTMLVerdict(&v, nil, nil, nil)
	if n := len(hv.Lines); n < 2 || !strings.HasPrefix(hv.Lines[n-2], "arguments held: the tool-call argument deltas came 1.00 ms apart") {
		t.Errorf("HTML verdict lines %q, want the findings last", hv.Lines)
	}
}
