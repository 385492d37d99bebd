package report

import (
	"bytes"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/failures"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/rundoc"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/summary/summarytest"
)

// base is the start of the synthetic batches below, on the process clock.
const base = summarytest.Base

// buffered is a request started at start through a gateway that releases
// its tokens (emitted every 5 ms) in bursts of 10 every 50 ms, until its
// end: it completes after n tokens, or, cut at cutAt (> 0), fails with f.
func buffered(index int, start int64, n int, cutAt int64, f result.Failure) *result.Request {
	r := &result.Request{Batch: "gw", Index: index, Start: start, Connected: start + 1e5, Sent: start + 2e5, HeadAt: start + 3e5}
	for k := range n {
		emit := r.Sent + int64(k)*5e6
		arrive := r.Sent + (int64(k)/10+1)*50e6
		if cutAt > 0 && arrive >= cutAt {
			break
		}
		if r.LastReadAt != arrive {
			r.PrevReadAt, r.LastReadAt = r.LastReadAt, arrive
			r.Reads++
		}
		r.Tokens = append(r.Tokens, result.Token{Emitted: emit, Arrived: arrive})
		r.ByPiTs++
	}
	r.End = r.LastReadAt + 1e6
	if cutAt > 0 {
		r.End, r.Failure = cutAt, f
	}
	return r
}

// run summarises gateway records as a run without calibration does.
func runOfRecords(recs ...*result.Request) *summary.Run {
	gw := summary.NewCollector()
	for _, r := range recs {
		gw.Add(r)
	}
	return summary.New(summary.Inputs{Gateway: gw, GatewayTarget: "127.0.0.1:8080"})
}

var (
	closedFailure  = result.Failure{Kind: result.ClosedBeforeDone}
	refusedFailure = result.Failure{Kind: result.Connect, Detail: "Connection refused", Errno: syscall.ECONNREFUSED}
)

// killedRun is a buffering gateway killed 2 s into the batch: 4 streams
// cut, then 4 requests refused.
func killedRun() *summary.Run {
	var recs []*result.Request
	for i := range 4 {
		recs = append(recs, buffered(i, base+int64(i)*1e8, 1000, base+2e9, closedFailure))
	}
	for i := range 4 {
		at := base + 2e9 + int64(i+1)*1e6
		recs = append(recs, &result.Request{Batch: "gw", Index: 4 + i, Start: at, End: at + 1e5, Failure: refusedFailure})
	}
	return runOfRecords(recs...)
}

// TestWriteTextFailures: the text report of a run whose gateway was
// killed has the failures block after the reference's blocks, a verdict
// led by the failure and judged on the partial streams (without the
// buffering advice), and a stream line counting the failed requests'
// tokens; --compat prints the reference's blocks alone.
func TestWriteTextFailures(t *testing.T) {
	s := killedRun()
	var b bytes.Buffer
	if err := WriteText(&b, s, false); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "WriteText(killed gateway)", "failures_killed.golden", b.Bytes())
	out := b.String()
	for _, want := range []string{
		"gateway failed 8 of 8 requests: connection closed mid-stream after 1.8 s p50 (350 tokens p50) (4), connection refused (4)\n",
		"gateway buffers (judged on the partial streams of 4 failed requests): ",
		"note: the buffering advice is left out",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("WriteText lacks %q:\n%s", want, out)
		}
	}
	for _, unwanted := range []string{"likely causes", "signature fix", "http-no-delay", "advice (the gateway", "advice for "} {
		if strings.Contains(out, unwanted) {
			t.Errorf("WriteText of a run that failed gives buffering advice (%q):\n%s", unwanted, out)
		}
	}
	if i, j := strings.Index(out, "=== gateway:"), strings.Index(out, "=== failures ==="); j < i {
		t.Errorf("the failures block comes before the reference's blocks:\n%s", out)
	}

	var ref, compat bytes.Buffer
	if err := WriteReport(&ref, s); err != nil {
		t.Fatal(err)
	}
	if err := WriteText(&compat, s, true); err != nil {
		t.Fatal(err)
	}
	if compat.String() != ref.String() || strings.Contains(compat.String(), "failures") {
		t.Errorf("WriteText(compat) is not the reference's report:\n%s", compat.String())
	}
}

// TestVerdictCompletedWithFailures: when some requests completed, the
// verdict is theirs, says so, and keeps its buffering advice after the
// failure's.
func TestVerdictCompletedWithFailures(t *testing.T) {
	recs := []*result.Request{
		buffered(0, base, 200, 0, result.Failure{}), buffered(1, base, 200, 0, result.Failure{}),
		buffered(2, base, 200, base+5e8, result.Failure{Kind: result.RecvError, Detail: "Connection reset by peer", Errno: syscall.ECONNRESET}),
	}
	s := runOfRecords(recs...)
	if v := s.Verdict; v.Basis != "completed" || v.BasisRequests != 2 {
		t.Fatalf("verdict basis %q of %d requests, want the 2 completed", v.Basis, v.BasisRequests)
	}
	var b bytes.Buffer
	if err := WriteText(&b, s, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(out[strings.Index(out, "=== verdict ===\n"):], "\n")
	want := []string{
		"=== verdict ===",
		"gateway failed 1 of 3 requests: connection reset mid-stream after 500.0 ms p50 (90 tokens p50)",
		"failure advice:",
		"  - connection reset mid-stream: the gateway reset streams in flight: a limit of its own (connections, memory, a response's size or time) or a restart; its log says which",
	}
	for i, w := range want {
		if i >= len(lines) || lines[i] != w {
			t.Fatalf("verdict line %d: %q, want %q\n%s", i, lines[min(i, len(lines)-1)], w, out)
		}
	}
	if !strings.HasPrefix(lines[4], "gateway buffers (judged on the 2 completed requests): ") || !strings.Contains(out, "advice (the gateway was not identified") {
		t.Errorf("the timing verdict %q lacks its basis, or the buffering advice went:\n%s", lines[4], out)
	}
	if !strings.Contains(out, "gateway    490 tokens (90 of them in failed requests): ") {
		t.Errorf("the stream line does not count the failed request's tokens:\n%s", out)
	}
}

// TestFailuresHostile: a summary read from a document whose example and
// title carry terminal escapes and markup (Validate refuses it; a report
// of it must still not print them raw) renders sanitised, in the text and
// the page.
func TestFailuresHostile(t *testing.T) {
	s := killedRun()
	fs := s.Gateway().FailureSummary
	fs.Groups[0].Example = "\x1b]0;owned\x07<script>alert(1)</script>\u202e" + strings.Repeat("x", 400)
	fs.Groups[0].Title = "connection closed mid-stream\x1b[2J"
	var b bytes.Buffer
	if err := WriteText(&b, s, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.ContainsAny(out, "\x1b\x07\u202e") || !strings.Contains(out, "      e.g. ]0;owned<script>alert(1)</script>xxx") {
		t.Errorf("the text report prints the hostile example raw, or not at all:\n%q", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "      e.g. ") && len(line) > len("      e.g. ")+failures.ExampleBytes {
			t.Errorf("example line of %d bytes, beyond the bound %d", len(line), failures.ExampleBytes)
		}
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, docOf(s)); err != nil {
		t.Fatal(err)
	}
	if p := page.String(); strings.Contains(p, "<script>alert") || strings.ContainsAny(p, "\x1b\x07") || !strings.Contains(p, "&lt;script&gt;alert(1)") {
		t.Errorf("the HTML page prints the hostile example raw, or not at all")
	}
}

// docOf is the document of run s, as a run writes it.
func docOf(s *summary.Run) *rundoc.Document {
	return rundoc.NewDocument(rundoc.RunInfo{Start: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC), EndReason: rundoc.EndDone}, s)
}
