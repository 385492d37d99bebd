package summary

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// records returns a varied batch of records: warm-ups, failures of several
// kinds (more connect texts than a batch keeps), unstamped tokens,
// connections reused, failed to reuse and poisoned, TLS, open-loop
// schedules.
func records(tag string) []*result.Request {
	const ms = 1_000_000
	var rs []*result.Request
	for i := range 40 {
		r := &result.Request{Batch: tag, Index: i, Start: int64(i) * 100 * ms, Warmup: i < 2}
		r.Scheduled = r.Start - int64(i%4)*10_000
		r.ConnID, r.Reused = int64(i/4+1), i%4 != 0
		r.Proto = []string{"HTTP/1.1", "h2"}[i%2]
		r.ReuseFailed, r.Poisoned = i%9 == 8, i%13 == 12
		if !r.Reused {
			r.Connected, r.TLSDone = r.Start+50_000, r.Start+900_000
		}
		r.Sent = max(r.Start, r.Connected, r.TLSDone) + 10_000
		r.HeadAt = r.Sent + 200_000
		for k := range 1 + i%30 {
			e := r.HeadAt + int64(k)*5*ms
			r.AppendTokens(1, int32(k), int32(k), e+30_000+int64(i*k%7)*1000)
			if k%11 != 10 {
				r.Tokens[k].Emitted = e
			}
		}
		r.End = r.Tokens[len(r.Tokens)-1].Arrived + 100_000
		r.Reads, r.Events, r.Bytes = len(r.Tokens), len(r.Tokens)+2, int64(240*len(r.Tokens))
		r.ByPiTs, r.MaxTokensPerRead = len(r.Tokens)-len(r.Tokens)/11, 1
		switch i % 6 {
		case 3:
			r.Failure = result.Failure{Kind: result.Connect, Detail: "refused " + strconv.Itoa(i)}
			r.Tokens, r.Sent, r.HeadAt, r.Connected, r.TLSDone, r.ConnID = nil, 0, 0, 0, 0, 0
		case 4:
			r.Failure = result.Failure{Kind: result.Integrity, Detail: "token 2 duplicated"}
		case 5:
			r.Failure = result.Failure{Kind: result.Timeout, Detail: "300000"}
		}
		rs = append(rs, r)
	}
	for i := range 14 { // more distinct texts than a tally keeps
		rs = append(rs, &result.Request{Batch: tag, Index: 40 + i, Start: 1, End: 2,
			Failure: result.Failure{Kind: result.Connect, Detail: "other " + strconv.Itoa(i)}})
	}
	return rs
}

func collect(rs []*result.Request) *Collector {
	c := NewCollector()
	for _, r := range rs {
		c.Add(r)
	}
	return c
}

// TestBatchStatsRoundTrip: the statistics rebuilt from a summary summarise
// to the same summary, and hold the same counts and failures as the
// statistics it was made from.
func TestBatchStatsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		rs   []*result.Request
	}{
		{"varied", records("gw")},
		{"empty", nil},
		{"no connection facts", []*result.Request{{Batch: "gw", Sent: 1, End: 9, Tokens: []result.Token{{Emitted: 2, Arrived: 5}}}}},
	} {
		c := collect(tc.rs)
		b := NewBatch(GatewayBatch, "127.0.0.1:8080", c.Stats, Samples{})
		sb, err := b.Stats()
		if err != nil {
			t.Fatalf("%s: Stats(): %v", tc.name, err)
		}
		again := NewBatch(GatewayBatch, "127.0.0.1:8080", sb, Samples{})
		if !reflect.DeepEqual(again, b) {
			t.Errorf("%s: NewBatch(Stats(b)) differs from b:\n%+v\nwant\n%+v", tc.name, again, b)
		}
		if !reflect.DeepEqual(sb.Failures(), c.Stats.Failures()) {
			t.Errorf("%s: rebuilt failures %+v, want %+v", tc.name, sb.Failures(), c.Stats.Failures())
		}
		orig := c.Stats
		if sb.Requests != orig.Requests || sb.Failed != orig.Failed || sb.IntegrityErrors != orig.IntegrityErrors ||
			sb.Warmup != orig.Warmup || sb.Connections() != orig.Connections() || sb.Unstamped != orig.Unstamped {
			t.Errorf("%s: rebuilt counts differ from the original's", tc.name)
		}
	}
}

func TestBatchStatsErrors(t *testing.T) {
	good := func() Batch { return NewBatch(GatewayBatch, "x", collect(records("gw")).Stats, Samples{}) }
	tests := []struct {
		name   string
		modify func(b *Batch)
		want   string
	}{
		{"unknown kind", func(b *Batch) { b.Failures[0].Kind = "gremlins" }, `failures[0]: unknown failure kind "gremlins"`},
		{"ok kind", func(b *Batch) { b.Failures[0].Kind = "ok" }, `failures[0]: unknown failure kind "ok"`},
		{"n differs", func(b *Batch) { b.Metrics.EmitRecv.N++ }, "metrics.emit_recv: n is"},
		{"bad histogram", func(b *Batch) { b.Phases.Head.Histogram.MaxNs = 1 },
			"phases.head: histogram: invalid metric snapshot"},
		{"bad start lateness", func(b *Batch) { b.StartLateness.Histogram.N = 0 }, "start_lateness: n is"},
	}
	for _, tt := range tests {
		b := good()
		tt.modify(&b)
		if _, err := b.Stats(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Stats(%s) = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

// TestNew checks the run summary: batches in order, overhead and verdict
// only when they can be made, the warning from the lateness.
func TestNew(t *testing.T) {
	loop, gw := collect(records("loop")), collect(records("gw"))
	late := stats.NewMetric()
	for _, ns := range []int64{2_000_000, 2_000_000, 2_000_000} {
		late.Record(ns)
	}
	r := New(Inputs{Loop: loop, Gateway: gw, LoopTarget: "127.0.0.1:8090", GatewayTarget: "127.0.0.1:8080",
		Lateness: late, UserS: 1.5, SystemS: 0.25})
	if len(r.Batches) != 2 || r.Loop() != &r.Batches[0] || r.Gateway() != &r.Batches[1] || r.Batch("other") != nil {
		t.Fatalf("New: batches %d, want loopback then gateway", len(r.Batches))
	}
	if g := r.Gateway(); g.Target != "127.0.0.1:8080" || g.Requests != gw.Stats.Requests || g.Warmup != 2 ||
		len(g.Samples.Requests) != 52 || g.Title() != GatewayTitle || r.Loop().Title() != LoopbackTitle {
		t.Errorf("New: gateway batch %s %q: %d requests, warmup %d, %d request samples; want %d, 2, 52",
			g.Title(), g.Target, g.Requests, g.Warmup, len(g.Samples.Requests), gw.Stats.Requests)
	}
	if want := NewOverhead(loop.Stats, gw.Stats); r.Overhead == nil || !reflect.DeepEqual(r.Overhead, want) {
		t.Errorf("New: overhead %+v, want %+v", r.Overhead, want)
	}
	v := verdict.Classify(loop.Bursts, gw.Bursts, loop.Stats, gw.Stats)
	v.Causes = []string{} // no advice for a gateway that flushes
	if r.Verdict == nil || !reflect.DeepEqual(*r.Verdict, v) {
		t.Errorf("New: verdict %+v, want %+v (causes an empty list)", r.Verdict, v)
	}
	if r.Self.Lateness.N != 3 || r.Self.UserS != 1.5 || r.Self.SystemS != 0.25 ||
		!strings.HasPrefix(r.Self.Warning, "sse-latency fell behind its own emission schedule (lateness p99=2.000ms > 1ms)") {
		t.Errorf("New: self %+v", r.Self)
	}

	r = New(Inputs{Gateway: gw})
	if len(r.Batches) != 1 || r.Loop() != nil || r.Overhead != nil || r.Verdict == nil || r.Verdict.LoopCoalesced != -1 ||
		r.Self.Warning != "" || r.Self.Lateness.N != 0 {
		t.Errorf("New(no calibration, no lateness) = %+v", r)
	}
	r = New(Inputs{})
	if js, err := json.Marshal(r); err != nil || string(js) != `{"batches":[],"self":{"emission_lateness":`+string(mustJSON(t, r.Self.Lateness))+`,"cpu_user_s":0,"cpu_system_s":0}}` {
		t.Errorf("New(nothing ran) = %s, %v; want no batches, overhead or verdict", js, err)
	}
}

func TestNewChecksObjectives(t *testing.T) {
	gw := collect(records("gw"))
	want := &SLOs{Met: false, Checks: []SLOCheck{{SLO: "gateway requests", Reason: "seen"}}}
	var seen *Run
	r := New(Inputs{Gateway: gw, SLO: func(run *Run) *SLOs {
		seen = run
		want.Checks[0].ObservedMs = float64(run.Gateway().Requests)
		return want
	}})
	if seen != r || r.SLO != want {
		t.Fatalf("New: SLO %+v checked on %p; want %+v on the summary built, %p", r.SLO, seen, want, r)
	}
	if got := want.Checks[0].ObservedMs; got != float64(gw.Stats.Requests) {
		t.Errorf("New: the objectives saw %v gateway requests, want %d (checked after the batches)", got, gw.Stats.Requests)
	}
	if r = New(Inputs{Gateway: gw}); r.SLO != nil {
		t.Errorf("New(no objectives): SLO %+v, want none", r.SLO)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func TestLatenessWarning(t *testing.T) {
	of := func(ns ...int64) *stats.Metric {
		m := stats.NewMetric()
		for _, v := range ns {
			m.Record(v)
		}
		return m
	}
	tests := []struct {
		name string
		m    *stats.Metric
		want string // "" : no warning
	}{
		{"unknown", nil, ""},
		{"no samples", of(), ""},
		{"at the threshold", of(LatenessWarnNs), ""},
		{"just above", of(LatenessWarnNs + 2048), "sse-latency fell behind its own emission schedule (lateness p99=1.002ms > 1ms): " +
			"these figures describe the tool's overload, not the gateway; lower -c or raise -d"},
		{"one late of many", of(append([]int64{50_000_000}, make([]int64, 200)...)...), ""},
	}
	for _, tt := range tests {
		if got := LatenessWarning(tt.m); got != tt.want {
			t.Errorf("LatenessWarning(%s) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestCollectorWarmup: a warm-up request is counted apart, and is neither
// judged for bursts nor sampled.
func TestCollectorWarmup(t *testing.T) {
	c := NewCollector()
	w := &result.Request{Batch: "gw", Warmup: true, Sent: 1, Tokens: []result.Token{{Emitted: 1, Arrived: 2}}}
	c.Add(w)
	if c.Stats.Warmup != 1 || c.Stats.Requests != 0 || len(c.Samples.Samples().Requests) != 0 {
		t.Errorf("a warm-up request: warmup %d, requests %d, samples %d; want 1, 0, 0",
			c.Stats.Warmup, c.Stats.Requests, len(c.Samples.Samples().Requests))
	}
	c.Add(&result.Request{Batch: "gw", Sent: 1, Tokens: []result.Token{{Emitted: 1, Arrived: 2}}})
	if c.Stats.Requests != 1 || len(c.Samples.Samples().Requests) != 1 {
		t.Errorf("a counted request after it: requests %d, samples %d; want 1, 1", c.Stats.Requests, len(c.Samples.Samples().Requests))
	}
}

func TestNames(t *testing.T) {
	var m Metrics
	var names []string
	for _, nm := range m.Named() {
		names = append(names, nm.Name)
	}
	if want := []string{"TTFT (client)", "TTFT emit->recv(1st)", "inter-token (client)", "emit->recv (tokens)"}; !reflect.DeepEqual(names, want) {
		t.Errorf("Metrics.Named() = %q, want %q", names, want)
	}
	if m.Named()[2].Metric != &m.InterToken {
		t.Errorf("Metrics.Named() does not point into the metrics")
	}
	names = nil
	var o *Overhead
	for _, nd := range o.Named() {
		names = append(names, nd.Name)
		if nd.Delta != nil {
			t.Errorf("(*Overhead)(nil).Named(): %s has a delta", nd.Name)
		}
	}
	if want := []string{"emit->recv (1st token)", "emit->recv (tokens)", "TTFT (client)", "inter-token (client)"}; !reflect.DeepEqual(names, want) {
		t.Errorf("Overhead.Named() = %q, want %q", names, want)
	}
	if b := (&Batch{Name: "other"}); b.Title() != "other" {
		t.Errorf("Title of a batch named other = %q", b.Title())
	}
	if got := (&Stream{ByPiTs: 3, ByContent: 4, Unmeasured: 5}).Received(); got != 12 {
		t.Errorf("Received() = %d, want 12", got)
	}
}
