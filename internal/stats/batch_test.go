package stats

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/sse-latency/sse-latency/internal/result"
)

// values returns the metric's samples, which must all be below 2048 ns (so
// that the histogram holds them exactly), in ascending order.
func values(m *Metric) []int64 {
	var out []int64
	for _, b := range m.Snapshot().Histogram.Buckets {
		for range b.Count {
			out = append(out, b.FromNs)
		}
	}
	return out
}

func TestBatchAdd(t *testing.T) {
	b := NewBatch()
	// ok: TTFT 500, first emit->recv 100, gaps 1000 and 1100, emit->recv 200, 600.
	b.Add(&result.Request{Batch: "gw", Start: 900, Sent: 1000, End: 4000, Tokens: []result.Token{
		{Emitted: 1400, Arrived: 1500},
		{Emitted: 2300, Arrived: 2500},
		{Emitted: 3000, Arrived: 3600},
	}})
	// failed after 2 tokens: its samples count, its tokens do not.
	b.Add(&result.Request{Batch: "gw", Index: 1, Start: 900, Sent: 1100, End: 5000, Tokens: []result.Token{
		{Emitted: 1150, Arrived: 1200},
		{Emitted: 1250, Arrived: 1300},
	}, Failure: result.Failure{Kind: result.ClosedBeforeDone}})
	// never sent: no TTFT, but the tokens' own samples count.
	b.Add(&result.Request{Batch: "gw", Index: 2, Tokens: []result.Token{
		{Emitted: 10, Arrived: 17},
		{Emitted: 0, Arrived: 30},
	}})
	// unstamped first token; failed without tokens.
	b.Add(&result.Request{Batch: "gw", Index: 3, Sent: 100, Tokens: []result.Token{{Arrived: 140}}})
	b.Add(&result.Request{Batch: "gw", Index: 4, Sent: 100, Failure: result.Failure{Kind: result.Timeout, Detail: "300000"}})

	if b.Requests != 5 || b.OK != 3 || b.Failed != 2 || b.Tokens != 6 || b.Unstamped != 2 {
		t.Errorf("Requests, OK, Failed, Tokens, Unstamped = %d, %d, %d, %d, %d; want 5, 3, 2, 6, 2",
			b.Requests, b.OK, b.Failed, b.Tokens, b.Unstamped)
	}
	for _, tt := range []struct {
		name string
		m    *Metric
		want []int64
	}{
		{"TTFT", b.TTFT, []int64{40, 100, 500}},
		{"FirstEmitRecv", b.FirstEmitRecv, []int64{7, 50, 100}},
		{"InterToken", b.InterToken, []int64{13, 100, 1000, 1100}},
		{"EmitRecv", b.EmitRecv, []int64{50, 200, 600}},
	} {
		if got := values(tt.m); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s samples = %v, want %v", tt.name, got, tt.want)
		}
	}
	want := []FailureTally{
		{Kind: result.ClosedBeforeDone, Count: 1, Texts: []TextCount{{"connection closed before [DONE]", 1}}},
		{Kind: result.Timeout, Count: 1, Texts: []TextCount{{"timeout after 300000ms", 1}}},
	}
	if got := b.Failures(); !reflect.DeepEqual(got, want) {
		t.Errorf("Failures() = %+v, want %+v", got, want)
	}
}

// TestBatchVisibleTokens: the reference's metrics describe the visible
// text tokens only — a request's reasoning and tool-call tokens before
// them count in the stream figures, not in TTFT, the gaps, the delays, the
// tokens of the title or the first-token phase.
func TestBatchVisibleTokens(t *testing.T) {
	b := NewBatch()
	r := &result.Request{Sent: 1000, HeadAt: 1010, Reasoning: 2, ToolCall: 1, ByPiTs: 5}
	r.AppendTokens(2, 0, 1, 1100) // reasoning 0, 1
	r.AppendTokens(1, 2, 2, 1300) // the call's argument
	r.AppendTokens(1, 3, 3, 1500) // text 0: TTFT 500
	r.AppendTokens(1, 4, 4, 1600) // text 1: gap 100
	for i := range r.Tokens {
		r.Tokens[i].Emitted = r.Tokens[i].Arrived - 10*int64(i+1)
	}
	b.Add(r)
	if b.Tokens != 2 || b.ByPiTs != 5 || b.Unstamped != 0 {
		t.Errorf("Tokens, ByPiTs, Unstamped = %d, %d, %d; want 2 visible, 5 received, 0", b.Tokens, b.ByPiTs, b.Unstamped)
	}
	for _, tt := range []struct {
		name string
		m    *Metric
		want []int64
	}{
		{"TTFT", b.TTFT, []int64{500}},
		{"FirstEmitRecv", b.FirstEmitRecv, []int64{40}},
		{"InterToken", b.InterToken, []int64{100}},
		{"EmitRecv", b.EmitRecv, []int64{50}},
		{"FirstToken", b.FirstToken, []int64{490}},
	} {
		if got := values(tt.m); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s samples = %v, want %v (the text tokens')", tt.name, got, tt.want)
		}
	}
}

func TestBatchStreamCounts(t *testing.T) {
	b := NewBatch()
	// ok: 3 tokens, 2 by pi_ts, 1 by content.
	b.Add(&result.Request{Tokens: make([]result.Token, 3), ByPiTs: 2, ByContent: 1, Reads: 4, Events: 6, Bytes: 1000, MaxTokensPerRead: 2,
		Framing: result.Framing{BOMs: 1, MultiLineEvents: 6, RetryFields: 1}, RetryMs: 3000})
	// integrity failure: 5 tokens, 4 by content, 1 unmeasured.
	b.Add(&result.Request{Tokens: make([]result.Token, 5), ByContent: 4, Reads: 2, Events: 9, Bytes: 500, MaxTokensPerRead: 5,
		Framing: result.Framing{MultiLineEvents: 2, NoDataBlocks: 1, BareCRLines: 4, InvalidUTF8: 5, IDFields: 6}, RetryMs: 9000, // no retry field: not the largest
		Failure: result.Failure{Kind: result.Integrity, Detail: "no finish event"}})
	// another failure, no tokens.
	b.Add(&result.Request{Reads: 1, Bytes: 40, Failure: result.Failure{Kind: result.BadStatus, Detail: "HTTP/1.1 502"}})
	want := batchCounts{Requests: 3, OK: 1, Failed: 2, Tokens: 3, Unstamped: 8, ByPiTs: 2, ByContent: 5, Unmeasured: 1,
		Reads: 7, Events: 15, Bytes: 1540, MaxTokensPerRead: 5, IntegrityErrors: 1,
		Framing:    result.Framing{BOMs: 1, MultiLineEvents: 8, NoDataBlocks: 1, BareCRLines: 4, InvalidUTF8: 5, IDFields: 6, RetryFields: 1},
		RetryMaxMs: 3000}
	if got := counts(b); got != want {
		t.Errorf("counts after 3 requests:\n%+v\nwant\n%+v", got, want)
	}
}

func TestBatchFailureTextsBounded(t *testing.T) {
	b := NewBatch()
	for i := range MaxFailureTexts + 2 {
		b.Add(&result.Request{Failure: result.Failure{Kind: result.Connect, Detail: "reason " + strconv.Itoa(i)}})
	}
	b.Add(&result.Request{Failure: result.Failure{Kind: result.Connect, Detail: "reason 0"}})
	b.Add(&result.Request{Failure: result.Failure{Kind: result.NoTokens}})
	got := b.Failures()
	if len(got) != 2 || got[0].Kind != result.NoTokens || got[1].Kind != result.Connect {
		t.Fatalf("Failures() kinds = %+v, want no_tokens then connect", got)
	}
	c := got[1]
	if c.Count != MaxFailureTexts+3 || len(c.Texts) != MaxFailureTexts || c.Other != 2 ||
		c.Texts[0] != (TextCount{"connect(): reason 0", 2}) {
		t.Errorf("connect tally = %+v; want Count %d, %d texts, Other 2, first text counted twice", c, MaxFailureTexts+3, MaxFailureTexts)
	}
	// Failures returns copies.
	got[1].Texts[0].Count = 99
	if b.Failures()[1].Texts[0].Count != 2 {
		t.Errorf("changing the result of Failures() changed the Batch")
	}
}

// requests returns a varied set of records for merge tests.
func requests() []*result.Request {
	var rs []*result.Request
	for i := range 40 {
		r := &result.Request{Batch: "gw", Index: i, Start: 1, Sent: 1000, End: 9000,
			Reads: i + 1, Events: 2*i + 3, Bytes: int64(100 * i), MaxTokensPerRead: i % 9}
		for k := range i % 7 {
			r.Tokens = append(r.Tokens, result.Token{Emitted: int64(2000 + 100*k), Arrived: int64(2000 + 100*k + i + k)})
		}
		r.ByPiTs = len(r.Tokens) / 2
		r.ByContent = len(r.Tokens) / 3
		r.Framing = result.Framing{BOMs: i % 2, MultiLineEvents: i % 3, NoDataBlocks: i % 4, BareCRLines: i % 5,
			InvalidUTF8: i % 6, IDFields: i % 7, RetryFields: i % 8}
		r.RetryMs = int64(100 * i)
		// Slots of 4 requests on one connection each; every 7th a reuse
		// failure, every 11th poisoned; open loop, 0..39 µs late.
		r.ConnID, r.Reused = int64(i/4+1), i%4 != 0
		r.Proto = []string{"HTTP/1.1", "h2"}[i/20]
		r.ReuseFailed, r.Poisoned = i%7 == 6, i%11 == 10
		r.Scheduled = r.Start - int64(1000*i)
		if !r.Reused {
			r.Connected, r.TLSDone = r.Start+300, r.Start+700
		}
		r.HeadAt = r.Sent + int64(50*i)
		r.ServerArrived = r.Sent + int64(20*i)
		switch i % 5 {
		case 2:
			r.Failure = result.Failure{Kind: result.Integrity, Detail: "token 1 duplicated"}
		case 3:
			r.Failure = result.Failure{Kind: result.Connect, Detail: "reason " + strconv.Itoa(i)}
		case 4:
			r.Failure = result.Failure{Kind: result.ClosedBeforeDone}
		}
		rs = append(rs, r)
	}
	return rs
}

// batchCounts are the plain counters of a Batch.
type batchCounts struct {
	Requests, OK, Failed                             int
	Tokens, Unstamped, ByPiTs, ByContent, Unmeasured int64
	Reads, Events, Bytes                             int64
	MaxTokensPerRead, IntegrityErrors                int
	Warmup, Opened, WarmConnections, ConnRequests    int
	ReuseFailures, Poisoned                          int
	Framing                                          result.Framing
	RetryMaxMs                                       int64
}

func counts(b *Batch) batchCounts {
	return batchCounts{b.Requests, b.OK, b.Failed, b.Tokens, b.Unstamped, b.ByPiTs, b.ByContent, b.Unmeasured,
		b.Reads, b.Events, b.Bytes, b.MaxTokensPerRead, b.IntegrityErrors,
		b.Warmup, b.Opened, b.WarmConnections, b.ConnRequests, b.ReuseFailures, b.Poisoned, b.Framing, b.RetryMaxMs}
}

func sameBatch(t *testing.T, what string, a, b *Batch) {
	t.Helper()
	if ac, bc := counts(a), counts(b); ac != bc {
		t.Errorf("%s: counts differ:\n%+v\n%+v", what, ac, bc)
	}
	if !reflect.DeepEqual(a.Failures(), b.Failures()) {
		t.Errorf("%s: failures differ:\n%+v\n%+v", what, a.Failures(), b.Failures())
	}
	sameMetric(t, what+" TTFT", a.TTFT, b.TTFT)
	sameMetric(t, what+" FirstEmitRecv", a.FirstEmitRecv, b.FirstEmitRecv)
	sameMetric(t, what+" InterToken", a.InterToken, b.InterToken)
	sameMetric(t, what+" EmitRecv", a.EmitRecv, b.EmitRecv)
	if !reflect.DeepEqual(a.Protocols, b.Protocols) {
		t.Errorf("%s: protocols differ: %v, %v", what, a.Protocols, b.Protocols)
	}
	for i, p := range a.Phases() {
		sameMetric(t, what+" phase "+p.Name, p.Metric, b.Phases()[i].Metric)
	}
	sameMetric(t, what+" StartLateness", a.StartLateness, b.StartLateness)
	sameMetric(t, what+" RequestLeg", a.RequestLeg, b.RequestLeg)
}

func TestBatchMerge(t *testing.T) {
	all, x, y := NewBatch(), NewBatch(), NewBatch()
	for i, r := range requests() {
		all.Add(r)
		if i%2 == 0 {
			x.Add(r)
		} else {
			y.Add(r)
		}
	}
	x.Merge(y)
	sameBatch(t, "x.Merge(y)", x, all)
	if c := all.Failures()[1]; c.Kind != result.Connect || c.Count != 8 || c.Other != 0 {
		t.Errorf("connect tally = %+v, want 8 failures, all texts kept", c)
	}

	// Texts beyond the bound stay counted through merges.
	p, q := NewBatch(), NewBatch()
	for i := range MaxFailureTexts + 3 {
		p.Add(&result.Request{Failure: result.Failure{Kind: result.Connect, Detail: "p" + strconv.Itoa(i)}})
		q.Add(&result.Request{Failure: result.Failure{Kind: result.Connect, Detail: "q" + strconv.Itoa(i)}})
	}
	p.Merge(q)
	if c := p.Failures()[0]; c.Count != 2*(MaxFailureTexts+3) || len(c.Texts) != MaxFailureTexts || c.Other != MaxFailureTexts+6 {
		t.Errorf("merged connect tally: Count %d, %d texts, Other %d; want %d, %d, %d",
			c.Count, len(c.Texts), c.Other, 2*(MaxFailureTexts+3), MaxFailureTexts, MaxFailureTexts+6)
	}

	empty := NewBatch()
	empty.Merge(all)
	sameBatch(t, "empty.Merge(all)", empty, all)
	all.Merge(nil)
	all.Merge(NewBatch())
	sameBatch(t, "all.Merge(nil, empty)", empty, all)
}

func TestBatchAddOKDoesNotAllocate(t *testing.T) {
	b := NewBatch()
	r := thousandTokens()
	if a := testing.AllocsPerRun(100, func() { b.Add(r) }); a != 0 {
		t.Errorf("Add of an ok request allocates %v times, want 0", a)
	}
}

// thousandTokens returns an ok request of 1000 tokens 5 ms apart.
func thousandTokens() *result.Request {
	r := &result.Request{Batch: "gw", Start: 1e9, Sent: 1e9 + 1e5, End: 1e9 + 5e9}
	for i := range 1000 {
		emit := int64(1e9 + 2e5 + 5e6*i)
		r.Tokens = append(r.Tokens, result.Token{Emitted: emit, Arrived: emit + 30_000 + int64(i%17)*1000})
	}
	return r
}

func BenchmarkBatchAdd(b *testing.B) {
	batch := NewBatch()
	r := thousandTokens()
	b.ReportAllocs()
	for b.Loop() {
		batch.Add(r)
	}
}

// TestBatchConnectionsAndPhases: the connection counts, protocols, phases
// and start lateness of a few records, warm-ups left out.
func TestBatchConnectionsAndPhases(t *testing.T) {
	b := NewBatch()
	tok := func(at int64) []result.Token { return []result.Token{{Arrived: at}} }
	// Warm-up on connection 1 (new), then connection 2 (new).
	b.Add(&result.Request{Warmup: true, ConnID: 1, Proto: "h2", Start: 10, Connected: 20, Sent: 30, HeadAt: 40, Tokens: tok(50)})
	b.Add(&result.Request{Warmup: true, ConnID: 2, Proto: "h2", Start: 10, Connected: 20, Sent: 30})
	// Counted: reuses 1 (a warm connection), reuses 1 again, opens 3 over
	// TLS after a reuse failure, reuses 3 and is poisoned; one connect
	// failure; one open-loop request 700 ns late. The first two reached the
	// server 50 ns after they were sent, and 5 ns before (clocks of two
	// hosts); a request never sent has no leg.
	b.Add(&result.Request{ConnID: 1, Reused: true, Proto: "h2", Start: 1000, Sent: 1010, ServerArrived: 1060, HeadAt: 1110, Tokens: tok(1140)})
	b.Add(&result.Request{ConnID: 1, Reused: true, Proto: "h2", Start: 2000, Sent: 2020, ServerArrived: 2015, HeadAt: 2220, Tokens: tok(2250)})
	b.Add(&result.Request{ConnID: 3, ReuseFailed: true, Proto: "HTTP/1.1", Start: 3000, Connected: 3400, TLSDone: 3900, Sent: 3905, HeadAt: 4005, Tokens: tok(4035)})
	b.Add(&result.Request{ConnID: 3, Reused: true, Poisoned: true, Proto: "HTTP/1.1", Start: 5000, Sent: 5001,
		Failure: result.Failure{Kind: result.Timeout, Detail: "1"}})
	b.Add(&result.Request{Start: 6000, ServerArrived: 6500, Failure: result.Failure{Kind: result.Connect, Detail: "Connection refused"}})
	b.Add(&result.Request{ConnID: 4, Proto: "HTTP/1.1", Scheduled: 6300, Start: 7000, Connected: 7100, Sent: 7110})

	want := batchCounts{Requests: 6, OK: 4, Failed: 2, Tokens: 3, Unstamped: 3, Unmeasured: 3,
		Warmup: 2, Opened: 2, WarmConnections: 1, ConnRequests: 5, ReuseFailures: 1, Poisoned: 1}
	if got := counts(b); got != want {
		t.Errorf("counts:\n%+v\nwant\n%+v", got, want)
	}
	if got, want := b.Protocols, map[string]int{"h2": 2, "HTTP/1.1": 3}; !reflect.DeepEqual(got, want) {
		t.Errorf("protocols %v, want %v", got, want)
	}
	if b.Connections() != 3 || b.RequestsPerConnection() != 5.0/3 {
		t.Errorf("%d connections, %v requests each; want 3 (1 from warm-up), 5/3", b.Connections(), b.RequestsPerConnection())
	}
	for _, tt := range []struct {
		name string
		m    *Metric
		want []int64
	}{
		{"connect", b.Connect, []int64{100, 400}},
		{"tls", b.TLS, []int64{500}},
		{"written", b.Written, []int64{1, 5, 10, 10, 20}},
		{"head", b.Head, []int64{100, 100, 200}},
		{"first-token", b.FirstToken, []int64{30, 30, 30}},
		{"start lateness", b.StartLateness, []int64{700}},
		{"request leg", b.RequestLeg, []int64{0, 50}}, // the histogram counts -5 as 0
	} {
		if got := values(tt.m); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s samples = %v, want %v", tt.name, got, tt.want)
		}
	}
	if m := b.RequestLeg; m.Min() != -5 || m.Negative() != 1 {
		t.Errorf("request leg min %d, %d negative; want -5, 1", m.Min(), m.Negative())
	}
	if names := b.Phases(); len(names) != 5 || names[4].Name != "first-token" || names[4].Metric != b.FirstToken {
		t.Errorf("Phases() = %+v", names)
	}
	if e := NewBatch(); e.RequestsPerConnection() != 0 {
		t.Errorf("an empty batch has %v requests per connection, want 0", e.RequestsPerConnection())
	}
}

// TestBatchWarmupAcrossMerge: a connection opened by a warm-up request in
// one part and reused in the other counts once, as warm, after Merge.
func TestBatchWarmupAcrossMerge(t *testing.T) {
	x, y := NewBatch(), NewBatch()
	x.Add(&result.Request{Warmup: true, ConnID: 7})
	y.Merge(x)
	y.Add(&result.Request{ConnID: 7, Reused: true})
	y.Add(&result.Request{ConnID: 7, Reused: true})
	if y.Warmup != 1 || y.WarmConnections != 1 || y.Opened != 0 || y.ConnRequests != 2 {
		t.Errorf("warmup %d, warm connections %d, opened %d, requests %d; want 1, 1, 0, 2", y.Warmup, y.WarmConnections, y.Opened, y.ConnRequests)
	}
}

// TestAddFailureTally: a batch given another's tallies reports the same
// failures, texts beyond the bound included, and no other count changes.
func TestAddFailureTally(t *testing.T) {
	src := NewBatch()
	for i := range MaxFailureTexts + 4 {
		src.Add(&result.Request{Failure: result.Failure{Kind: result.Timeout, Detail: strconv.Itoa(i % (MaxFailureTexts + 2))}})
	}
	src.Add(&result.Request{Failure: result.Failure{Kind: result.NoTokens}})
	dst := NewBatch()
	for _, ft := range src.Failures() {
		dst.AddFailureTally(ft)
	}
	if !reflect.DeepEqual(dst.Failures(), src.Failures()) {
		t.Errorf("AddFailureTally(src.Failures()): failures\n%+v\nwant\n%+v", dst.Failures(), src.Failures())
	}
	if c := counts(dst); c != (batchCounts{}) {
		t.Errorf("AddFailureTally changed counts: %+v, want none", c)
	}
	// Twice: the texts add up, the others stay counted.
	for _, ft := range src.Failures() {
		dst.AddFailureTally(ft)
	}
	if c := dst.Failures()[1]; c.Kind != result.Timeout || c.Count != 2*(MaxFailureTexts+4) || c.Other != 2*src.Failures()[1].Other {
		t.Errorf("AddFailureTally twice: timeout tally %+v, want Count %d and Other doubled", c, 2*(MaxFailureTexts+4))
	}
}
