package rundoc

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/summary/summarytest"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// randomRun returns the streams of a run with heavy-tailed random delays
// and gaps, a few failures among them (with more distinct connect texts
// than a batch keeps, across runs).
func randomRun(rng *rand.Rand, run, requests int) (loop, gw []stream) {
	jitter := func(base int64) []int64 {
		out := make([]int64, 1+rng.IntN(30))
		for i := range out {
			out[i] = base + int64(rng.ExpFloat64()*float64(base)/4)
		}
		return out
	}
	for i := range 2 {
		loop = append(loop, stream{Batch: "loop", Index: i, TTFT: 30_000 + rng.Int64N(20_000), FirstDelay: 10_000 + rng.Int64N(5_000),
			Tokens: 50, Gaps: jitter(5_000_000), Delays: jitter(20_000)})
	}
	for i := range requests {
		s := stream{Batch: "gw", Index: i, TTFT: 100_000 + rng.Int64N(500_000), FirstDelay: 30_000 + rng.Int64N(100_000),
			Tokens: 1 + rng.IntN(300), Gaps: jitter(5_000_000), Delays: jitter(200_000)}
		if i%3 == 1 { // a gateway that re-frames some streams
			s.Framing = result.Framing{BOMs: 1, MultiLineEvents: s.Tokens, NoDataBlocks: rng.IntN(3), BareCRLines: rng.IntN(9),
				InvalidUTF8: rng.IntN(2), IDFields: rng.IntN(5), RetryFields: rng.IntN(2)}
			s.RetryMs = rng.Int64N(10_000)
		}
		switch i % 5 {
		case 3:
			s.Tokens, s.Failure = 0, result.Failure{Kind: result.Connect, Detail: fmt.Sprintf("refused by %d.%d", run, i)}
		case 4:
			s.Failure = result.Failure{Kind: result.Timeout, Detail: "300000"}
		}
		gw = append(gw, s)
	}
	return loop, gw
}

// readBack writes d and reads it back, as the merge subcommand gets it.
func readBack(t *testing.T, d *Document) *Document {
	t.Helper()
	out, err := ReadJSON(bytes.NewReader(marshal(t, d)))
	if err != nil {
		t.Fatalf("ReadJSON(WriteJSON(d)): %v", err)
	}
	return out
}

// TestMergeExact merges three runs and checks the result against one batch
// fed every record: histograms, percentiles, counts, failures, overhead.
func TestMergeExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var docs []*Document
	var allLoop, allGw []stream
	runGw := stats.NewBatch() // the runs' gateway batches merged by stats.Batch.Merge
	for run := range 3 {
		loopS, gwS := randomRun(rng, run, 15+10*run)
		f := newFixture(loopS, gwS)
		ri := f.info()
		ri.Start = runStart.Add(time.Duration(run-1) * time.Second) // run 0 starts first
		ri.End = runStart.Add(time.Duration(10-run) * time.Second)  // and ends last
		ri.ExitCode = run % 2
		docs = append(docs, readBack(t, fixEnv(NewDocument(ri, f.run))))
		runGw.Merge(f.gw)
		allLoop, allGw = append(allLoop, loopS...), append(allGw, gwS...)
	}
	all := newFixture(allLoop, allGw)
	merged, err := Merge(docs, MergeOptions{})
	if err != nil {
		t.Fatalf("Merge(3 runs): %v", err)
	}
	merged = readBack(t, merged)

	mergedLoop, mergedGw := statsOf(t, merged.Loop()), statsOf(t, merged.Gateway())
	for _, c := range []struct {
		name      string
		got, want *stats.Batch
	}{
		{"loopback", mergedLoop, all.loop},
		{"gateway", mergedGw, all.gw},
	} {
		counts := func(b *stats.Batch) []int64 {
			return []int64{int64(b.Requests), int64(b.OK), int64(b.Failed), b.Tokens, b.Unstamped, b.ByPiTs, b.ByContent,
				b.Unmeasured, b.Reads, b.Events, b.Bytes, int64(b.MaxTokensPerRead), int64(b.IntegrityErrors),
				int64(b.Framing.BOMs), int64(b.Framing.MultiLineEvents), int64(b.Framing.NoDataBlocks), int64(b.Framing.BareCRLines),
				int64(b.Framing.InvalidUTF8), int64(b.Framing.IDFields), int64(b.Framing.RetryFields), b.RetryMaxMs, b.FailedTokens}
		}
		if g, w := counts(c.got), counts(c.want); !reflect.DeepEqual(g, w) {
			t.Errorf("merged %s counts = %v, want %v", c.name, g, w)
		}
		// Which texts are kept beyond stats.MaxFailureTexts depends on the
		// order of the records: the counts do not.
		type tally struct{ count, texts, other int }
		tallies := func(b *stats.Batch) map[result.Kind]tally {
			m := make(map[result.Kind]tally)
			for _, f := range b.Failures() {
				m[f.Kind] = tally{f.Count, len(f.Texts), f.Other}
			}
			return m
		}
		if g, w := tallies(c.got), tallies(c.want); !reflect.DeepEqual(g, w) {
			t.Errorf("merged %s failure tallies = %+v, want %+v", c.name, g, w)
		}
		gm, wm := statsMetrics(c.got), statsMetrics(c.want)
		for i := range gm {
			g, w := gm[i].m, wm[i].m
			if g.N() != w.N() || g.Sum() != w.Sum() || g.Min() != w.Min() || g.Max() != w.Max() {
				t.Errorf("merged %s %s: n, sum, min, max = %d %d %d %d, want %d %d %d %d", c.name, gm[i].name,
					g.N(), g.Sum(), g.Min(), g.Max(), w.N(), w.Sum(), w.Min(), w.Max())
			}
			for _, p := range []float64{0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1} {
				if g.Percentile(p) != w.Percentile(p) {
					t.Errorf("merged %s %s: p%g = %d, want %d", c.name, gm[i].name, 100*p, g.Percentile(p), w.Percentile(p))
				}
			}
			gs, ws := g.Snapshot(), w.Snapshot()
			if !reflect.DeepEqual(gs.Histogram, ws.Histogram) {
				t.Errorf("merged %s %s: histogram differs from that of all the samples", c.name, gm[i].name)
			}
			if math.Abs(gs.SumSqNs2-ws.SumSqNs2) > 1e-12*ws.SumSqNs2 {
				t.Errorf("merged %s %s: sum of squares %g, want %g", c.name, gm[i].name, gs.SumSqNs2, ws.SumSqNs2)
			}
		}
	}
	if g, w := mergedGw.Failures(), runGw.Failures(); !reflect.DeepEqual(g, w) {
		t.Errorf("merged gateway failures = %+v, want those of stats.Batch.Merge %+v", g, w)
	}
	// The failure summaries, exactly those of one run of all the requests:
	// counts, times (and the example of the first), distributions.
	for _, name := range []string{summary.LoopbackBatch, summary.GatewayBatch} {
		got, want := merged.Batch(name).FailureSummary, all.run.Batch(name).FailureSummary
		if got == nil || !reflect.DeepEqual(got, want) {
			t.Errorf("merged %s failure summary:\n got %+v\nwant %+v", name, got, want)
		}
	}
	if fs := merged.Gateway().FailureSummary; fs == nil || len(fs.Groups) < 2 {
		t.Errorf("merged gateway failure summary %+v: the test wants failures of several kinds", fs)
	}
	if got, want := merged.Overhead, summary.NewOverhead(all.loop, all.gw); !reflect.DeepEqual(got, want) {
		t.Errorf("merged overhead = %+v, want %+v", got, want)
	}
	// The summary the text report prints is that of all the records.
	wantRun := runOf(all.loop, all.gw)
	for i, b := range merged.Batches {
		gm, wm := b.Metrics.Named(), wantRun.Batches[i].Metrics.Named()
		for j := range gm {
			g, w := gm[j].Metric, wm[j].Metric
			if g.N != w.N || g.MeanMs != w.MeanMs || g.MinMs != w.MinMs || g.P50Ms != w.P50Ms || g.P90Ms != w.P90Ms ||
				g.P95Ms != w.P95Ms || g.P99Ms != w.P99Ms || g.P999Ms != w.P999Ms || g.MaxMs != w.MaxMs {
				t.Errorf("merged %s %s = %+v, want %+v", b.Name, gm[j].Name, *g, *w)
			}
		}
	}

	checks := []struct {
		what      string
		got, want any
	}{
		{"runs", merged.Runs, 3},
		{"start", merged.Start, runStart.Add(-time.Second)},
		{"end", merged.End, runStart.Add(10 * time.Second)},
		{"exit_code", merged.ExitCode, 1},
		{"end_reason", merged.EndReason, EndDone},
		{"gateway target", merged.Batches[1].Target, "127.0.0.1:8080"},
		{"cpu_user_s", merged.Self.UserS, 3.75},
		{"lateness n", merged.Self.Lateness.N, int64(15)},
		{"lateness max", merged.Self.Lateness.MaxMs, 0.31},
		{"request samples", len(merged.Batches[1].Samples.Requests), 6},
		{"second run's first sample index", merged.Batches[1].Samples.Requests[2].Index, 15},
		{"third run's series index", merged.Batches[1].Samples.Series[0].Index, 0},
		{"config", merged.Config, func() Config {
			c := docs[0].Config
			c.Requests, c.Concurrency = 3*c.Requests, 3*c.Concurrency
			return c
		}()},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("Merge(3 runs): %s = %v, want %v", c.what, c.got, c.want)
		}
	}
}

// statsOf rebuilds the statistics of b.
func statsOf(t *testing.T, b *summary.Batch) *stats.Batch {
	t.Helper()
	sb, err := b.Stats()
	if err != nil {
		t.Fatalf("Stats(%s): %v", b.Name, err)
	}
	return sb
}

// statsMetrics are the four metrics of b with their names.
func statsMetrics(b *stats.Batch) []struct {
	name string
	m    *stats.Metric
} {
	return []struct {
		name string
		m    *stats.Metric
	}{{"TTFT (client)", b.TTFT}, {"TTFT emit->recv(1st)", b.FirstEmitRecv}, {"inter-token (client)", b.InterToken}, {"emit->recv (tokens)", b.EmitRecv}}
}

// withConfig returns a copy of the full document with its configuration
// changed by set.
func withConfig(t *testing.T, set func(c *Config)) *Document {
	t.Helper()
	d := fixedDoc(t, "full")
	set(&d.Config)
	return d
}

func TestMergeRefuses(t *testing.T) {
	noLoop := fixedDoc(t, "no_calibration")
	noLoop.Config = fixedDoc(t, "full").Config
	v2 := fixedDoc(t, "full")
	v2.SchemaVersion = 2
	tests := []struct {
		name  string
		names []string
		docs  []*Document
		want  string // "" : merges
	}{
		{"another gateway", nil, []*Document{fixedDoc(t, "full"), withConfig(t, func(c *Config) { c.Target = "127.0.0.1:9080" })},
			`cannot merge run 1 and run 2: config differs in target ("127.0.0.1:8080" vs "127.0.0.1:9080"); --force merges them anyway`},
		{"another virtual host", nil, []*Document{fixedDoc(t, "full"), withConfig(t, func(c *Config) { c.HostHeader = "b.example" })},
			`config differs in host_header ("" vs "b.example")`},
		{"named files", []string{"A.json", "B.json", "C.json"},
			[]*Document{fixedDoc(t, "full"), fixedDoc(t, "full"), withConfig(t, func(c *Config) { c.DelayMs = 10 })},
			"cannot merge A.json and C.json: config differs in delay_ms (5 vs 10)"},
		{"tokens and dialect", nil, []*Document{fixedDoc(t, "full"), withConfig(t, func(c *Config) { c.Tokens, c.API = 1, "anthropic" })},
			`config differs in tokens (1000 vs 1), api ("chat" vs "anthropic")`},
		{"open loop and closed loop", nil, []*Document{fixedDoc(t, "full"), withConfig(t, func(c *Config) { c.Rate = 5 })},
			"config differs in rate (0 vs 5)"},
		{"headers", nil, []*Document{fixedDoc(t, "full"), withConfig(t, func(c *Config) { c.Headers = []string{"X-A: REDACTED"} })},
			`config differs in headers (null vs ["X-A: REDACTED"])`},
		{"batches", nil, []*Document{fixedDoc(t, "full"), noLoop},
			"cannot merge run 1 and run 2: batches differ ([loopback gateway] vs [gateway])"},
		{"schema_version", nil, []*Document{fixedDoc(t, "full"), v2},
			"cannot merge run 2: unsupported schema_version 2"},
		{"nothing", nil, nil, "nothing to merge"},
		{"nil", nil, []*Document{nil}, "cannot merge run 1: no document"},
		// What parallel instances may differ in.
		{"instance and console fields, load", nil, []*Document{
			fixedDoc(t, "full"), withConfig(t, func(c *Config) { c.Listen, c.Path = ":9090", "/pod-1/v1/chat/completions" }),
			withConfig(t, func(c *Config) { c.CACert, c.TLSCert, c.TLSKey = "/a/ca.pem", "/a/c.pem", "/a/k.pem" }),
			withConfig(t, func(c *Config) { c.Verbose, c.Quiet, c.Compat = true, true, true }),
			withConfig(t, func(c *Config) { c.Requests, c.Concurrency = 40, 9 }),
		}, ""},
	}
	for _, tt := range tests {
		_, err := Merge(tt.docs, MergeOptions{Names: tt.names})
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Merge(%s) = %v, want no error", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("Merge(%s) = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
	if _, err := Merge([]*Document{fixedDoc(t, "full"), v2}, MergeOptions{}); !errors.Is(err, ErrSchemaVersion) {
		t.Errorf("Merge(schema_version 2) = %v, want an error wrapping ErrSchemaVersion", err)
	}
	// Forced: an invalid document is still refused.
	if _, err := Merge([]*Document{fixedDoc(t, "full"), v2}, MergeOptions{Force: true}); !errors.Is(err, ErrSchemaVersion) {
		t.Errorf("Merge(schema_version 2, forced) = %v, want an error wrapping ErrSchemaVersion", err)
	}
}

// TestMergeConfig: the merged configuration holds the runs' load summed,
// the first run's own settings, and a note of how many there were.
func TestMergeConfig(t *testing.T) {
	pod := func(i, requests int) *Document {
		return withConfig(t, func(c *Config) {
			c.Listen, c.Path = fmt.Sprintf(":%d", 8090+i), fmt.Sprintf("/pod-%d/v1/chat/completions", i)
			c.Requests, c.Concurrency, c.Warmup = requests, 2, 1
		})
	}
	m, err := Merge([]*Document{pod(0, 20), pod(1, 20), pod(2, 10)}, MergeOptions{Names: []string{"run-0.json", "run-1.json", "run-2.json"}})
	if err != nil {
		t.Fatal(err)
	}
	c := m.Config
	if c.Requests != 50 || c.Concurrency != 6 || c.Warmup != 3 || c.Listen != ":8090" || c.Path != "/pod-0/v1/chat/completions" ||
		c.Tokens != 1000 || c.Target != "127.0.0.1:8080" || m.Forced != nil {
		t.Errorf("merged config %+v, forced %q; want requests 50, concurrency 6, warmup 3, run-0's listen and path, not forced", c, m.Forced)
	}
	if want := "each run had its own listen (3 values), path (3 values); config keeps run-0.json's"; !slices.Contains(m.Notes, want) {
		t.Errorf("notes %q, want %q among them", m.Notes, want)
	}
	// Merged again with another run: the sums go on.
	m2, err := Merge([]*Document{m, pod(3, 5)}, MergeOptions{})
	if err != nil || m2.Config.Requests != 55 || m2.Runs != 4 {
		t.Errorf("Merge(merged, run) = config requests %d, runs %d, %v; want 55, 4", m2.Config.Requests, m2.Runs, err)
	}
	// Zero load is another kind of run: no request limit, no warm-up.
	if _, err := Merge([]*Document{fixedDoc(t, "full"), withConfig(t, func(c *Config) { c.Requests = 9 })}, MergeOptions{}); err != nil {
		t.Errorf("Merge(runs both without warm-up) = %v", err)
	}
	if _, err := Merge([]*Document{pod(0, 20), withConfig(t, func(c *Config) { c.Requests = 20 })},
		MergeOptions{}); err == nil || !strings.Contains(err.Error(), "warmup (1 vs 0)") {
		t.Errorf("Merge(a run with warm-up, one without) = %v, want warmup named", err)
	}
	if _, err := Merge([]*Document{pod(0, 20), withConfig(t, func(c *Config) { c.Requests = 0; c.Duration = 1e9 })},
		MergeOptions{}); err == nil || !strings.Contains(err.Error(), "requests (20 vs 0), duration_ns (0 vs 1000000000)") {
		t.Errorf("Merge(a counted run, a timed one) = %v, want requests and duration_ns named", err)
	}
}

// TestMergeForce: what merge refuses, --force merges, and the merged
// document says what it overrode; a later merge keeps saying it.
func TestMergeForce(t *testing.T) {
	other := withConfig(t, func(c *Config) { c.Target, c.Tokens = "127.0.0.1:9080", 200 })
	noLoop := fixedDoc(t, "no_calibration")
	m, err := Merge([]*Document{fixedDoc(t, "full"), other, noLoop}, MergeOptions{Names: []string{"a.json", "b.json", "c.json"}, Force: true})
	if err != nil {
		t.Fatalf("Merge(forced) = %v", err)
	}
	want := []string{
		`a.json and b.json: config differs in target ("127.0.0.1:8080" vs "127.0.0.1:9080"), tokens (1000 vs 200)`,
		"a.json and c.json: batches differ ([loopback gateway] vs [gateway])",
	}
	if !slices.Equal(m.Forced, want) {
		t.Errorf("Forced = %q, want %q", m.Forced, want)
	}
	// The batches of the runs that have them: the loopback of two runs,
	// the gateway of three.
	if len(m.Batches) != 2 || m.Batches[0].Requests != 6 || m.Batches[1].Requests != 4+4+1 || m.Overhead == nil {
		t.Errorf("forced merge: batches %+v, overhead %v", batchNames(m), m.Overhead)
	}
	if err := m.Validate(); err != nil {
		t.Errorf("forced merge does not validate: %v", err)
	}
	back := readBack(t, m)
	if !slices.Equal(back.Forced, want) {
		t.Errorf("Forced read back = %q", back.Forced)
	}
	again, err := Merge([]*Document{back, fixedDoc(t, "full")}, MergeOptions{Force: true})
	if err != nil || !slices.Equal(again.Forced, want) {
		t.Errorf("merged again: Forced %q, %v; want the first merge's", again.Forced, err)
	}
	if plain, _ := Merge([]*Document{fixedDoc(t, "full"), fixedDoc(t, "full")}, MergeOptions{Force: true}); plain.Forced != nil {
		t.Errorf("forced merge of runs that agree: Forced %q, want none", plain.Forced)
	}
}

func TestMergeRunFields(t *testing.T) {
	doc := func(reason string, exit int, target, version, host, warning string) *Document {
		d := fixedDoc(t, "full")
		d.EndReason, d.ExitCode, d.Batches[1].Target = reason, exit, target
		d.Tool.Version, d.Environment.Hostname, d.Self.Warning = version, host, warning
		return d
	}
	tests := []struct {
		name       string
		docs       []*Document
		reason     string
		exit       int
		target     string
		warning    string
		notesWith  []string
		notesCount int // notes beside the verdict's
	}{
		{"all done", []*Document{doc("done", 0, "a:1", "v1", "h", ""), doc("done", 0, "a:1", "v1", "h", "")},
			"done", 0, "a:1", "", nil, 0},
		{"one interrupted", []*Document{doc("done", 0, "a:1", "v1", "h", "w1"), doc("interrupted", 130, "b:2", "v1", "h", "")},
			"interrupted", 130, "a:1, b:2", "w1", nil, 0},
		{"setup failed wins", []*Document{doc("setup_failed", 1, "a:1", "v1", "h", "w1"), doc("interrupted", 130, "a:1", "v2", "k", "w2"), doc("done", 0, "a:1", "v1", "h", "w1")},
			"setup_failed", 130, "a:1", "w1\nw2",
			[]string{"different versions of the tool: v1, v2", "different hosts: h, k"}, 2},
	}
	for _, tt := range tests {
		m, err := Merge(tt.docs, MergeOptions{})
		if err != nil {
			t.Fatalf("Merge(%s): %v", tt.name, err)
		}
		if m.EndReason != tt.reason || m.ExitCode != tt.exit || m.Batches[1].Target != tt.target || m.Self.Warning != tt.warning {
			t.Errorf("Merge(%s): end_reason %q, exit_code %d, target %q, warning %q; want %q, %d, %q, %q", tt.name,
				m.EndReason, m.ExitCode, m.Batches[1].Target, m.Self.Warning, tt.reason, tt.exit, tt.target, tt.warning)
		}
		// + the verdict's, its added delay's (the fixture's failed requests
		// have tokens) and its signature's
		if len(m.Notes) != tt.notesCount+3 {
			t.Errorf("Merge(%s): notes %q, want %d", tt.name, m.Notes, tt.notesCount+3)
		}
		for _, n := range tt.notesWith {
			if !strings.Contains(strings.Join(m.Notes, "\n"), n) {
				t.Errorf("Merge(%s): notes %q, want one containing %q", tt.name, m.Notes, n)
			}
		}
	}
}

func TestMergeVerdict(t *testing.T) {
	withVerdict := func(v *verdict.Verdict) *Document {
		d := fixedDoc(t, "full")
		d.Verdict = nil
		if v != nil {
			d.Verdict = summary.NormVerdict(v)
		}
		return d
	}
	buffers := summarytest.Verdicts["buffers"]
	buffers2 := buffers
	buffers2.Tokens, buffers2.CoalescedFraction, buffers2.BurstSizeMax, buffers2.Bursts = 1004, 0.5, 60, 20
	buffers2.BurstPeriodMs, buffers2.LoopCoalesced = 100, 0.2
	buffers3 := buffers
	buffers3.BurstPeriodMs, buffers3.FirstTokenHold, buffers3.FirstTokenHoldLevel = 300, true, verdict.HoldWarn
	flushes := summarytest.Verdicts["flushes"]
	hold := summarytest.Verdicts["flushes_hold"]

	merged := func(vs ...*verdict.Verdict) (*Document, error) {
		var docs []*Document
		for _, v := range vs {
			docs = append(docs, withVerdict(v))
		}
		return Merge(docs, MergeOptions{})
	}
	m, err := merged(&buffers, &buffers2, &buffers3)
	if err != nil {
		t.Fatal(err)
	}
	v := m.Verdict
	gw, loop := statsOf(t, m.Gateway()), statsOf(t, m.Loop())
	checks := []struct {
		what      string
		got, want any
	}{
		{"class", v.Class, verdict.Buffers},
		{"tokens", v.Tokens, int64(3996 + 1004 + 3996)},
		{"coalesced", math.Round(v.CoalescedFraction*1e9) / 1e9, math.Round((0.99925*3996*2+0.5*1004)/8996*1e9) / 1e9},
		{"bursts", v.Bursts, int64(220)},
		{"burst max", v.BurstSizeMax, int64(60)},
		{"burst period (median)", v.BurstPeriodMs, 200.0448},
		{"loopback share (median)", v.LoopCoalesced, 0.002},
		{"added mean (merged histograms)", v.AddedMeanMs, gw.EmitRecv.Mean()/1e6 - loop.EmitRecv.Mean()/1e6},
		{"added p99", v.AddedP99Ms, float64(gw.EmitRecv.Percentile(0.99))/1e6 - float64(loop.EmitRecv.Percentile(0.99))/1e6},
		{"relative", v.Relative, true},
		{"hold (1 of 3)", v.FirstTokenHold, false},
		{"causes", v.Causes, buffers.Causes},
		{"notes", len(m.Notes), 2},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("Merge(3 buffering verdicts): %s = %v, want %v", c.what, c.got, c.want)
		}
	}

	tests := []struct {
		name string
		vs   []*verdict.Verdict
		kept bool
		note string
	}{
		{"disagree", []*verdict.Verdict{&buffers, &flushes, &buffers}, false,
			"verdict dropped: the runs disagree (run 1: buffers, run 2: flushes, run 3: buffers)"},
		{"one missing", []*verdict.Verdict{&flushes, nil}, false, "verdict dropped: run 2 had none"},
		{"none", []*verdict.Verdict{nil, nil}, false, ""},
		{"holds agree", []*verdict.Verdict{&hold, &hold}, true, `the 2 merged runs all found "flushes"`},
	}
	for _, tt := range tests {
		m, err := merged(tt.vs...)
		if err != nil {
			t.Fatalf("Merge(%s): %v", tt.name, err)
		}
		if (m.Verdict != nil) != tt.kept {
			t.Errorf("Merge(%s): verdict %+v, want kept %v", tt.name, m.Verdict, tt.kept)
		}
		if notes := strings.Join(m.Notes, "\n"); !strings.Contains(notes, tt.note) || (tt.note == "" && notes != "") {
			t.Errorf("Merge(%s): notes %q, want %q", tt.name, notes, tt.note)
		}
		if tt.name == "holds agree" && (!m.Verdict.FirstTokenHold || m.Verdict.HoldRequests != 40 || !m.Verdict.Noisy) {
			t.Errorf("Merge(%s): hold %v over %d requests, noisy %v; want true, 40, true", tt.name,
				m.Verdict.FirstTokenHold, m.Verdict.HoldRequests, m.Verdict.Noisy)
		}
	}
}

// TestMergeSignatures: runs whose verdicts have the same signature keep
// it, their pauses summed; runs that disagree drop it with a note; a run
// without one (an older document) drops it silently.
func TestMergeSignatures(t *testing.T) {
	a, b := fixedDoc(t, "full"), fixedDoc(t, "full")
	if a.Verdict.Signature == nil {
		t.Fatal("the fixture's verdict has no signature")
	}
	m, err := Merge([]*Document{a, b}, MergeOptions{})
	if err != nil || m.Verdict.Signature == nil || m.Verdict.Signature.Pauses != 2*a.Verdict.Signature.Pauses {
		t.Fatalf("Merge of two equal runs: %v, signature %+v; want it kept with the pauses summed", err, m.Verdict.Signature)
	}
	b.Verdict.Signature.Kind = verdict.ByteThreshold
	if m, _ := Merge([]*Document{a, b}, MergeOptions{}); m.Verdict.Signature != nil ||
		!strings.Contains(strings.Join(m.Notes, "\n"), "signature dropped: the runs disagree") {
		t.Errorf("Merge of disagreeing signatures: %+v, notes %q; want it dropped with a note", m.Verdict.Signature, m.Notes)
	}
	b.Verdict.Signature = nil
	if m, _ := Merge([]*Document{a, b}, MergeOptions{}); m.Verdict.Signature != nil || strings.Contains(strings.Join(m.Notes, "\n"), "signature") {
		t.Errorf("Merge with a run without signature: %+v, notes %q; want none, silently", m.Verdict.Signature, m.Notes)
	}
}

// phasedDoc is the document of a run of summarytest.Phased records: a
// calibration of 2 flushed answers and a gateway batch of n answers as
// gw(i) says, its request indexes from first.
func phasedDoc(t *testing.T, first, n int, gw func(p *summarytest.Phased)) *Document {
	t.Helper()
	const ms = 1_000_000
	base := summarytest.Phased{Reasoning: 20, ToolCall: 10, Text: 30, Think: 500 * ms, Delay: 5 * ms, Lat: ms / 10, Seen: 1, Sent: 1}
	loop, g := summary.NewCollector(), summary.NewCollector()
	for i := range 2 {
		p := base
		p.Batch, p.Index = "loop", i
		loop.Add(p.Request())
	}
	for i := range n {
		p := base
		p.Batch, p.Index = "gw", first+i
		gw(&p)
		g.Add(p.Request())
	}
	run := summary.New(summary.Inputs{Loop: loop, Gateway: g, LoopTarget: "127.0.0.1:8090", GatewayTarget: "127.0.0.1:8080"})
	ri := RunInfo{Config: Config{Target: "127.0.0.1:8080", Requests: n, Concurrency: 1, Tokens: 30, API: "chat"},
		Start: runStart, End: runStart.Add(time.Second), EndReason: EndDone, Version: "v1.2.3-test"}
	return readBack(t, fixEnv(NewDocument(ri, run)))
}

// TestMergeTimelines merges runs whose gateway held the stream's start in
// one and dropped the reasoning in both: the merged timeline is the one of
// every record, and the findings are those of the merged timeline — the
// held start, in 3 requests of 8, is no finding of the merged run; a run
// written before timelines leaves the merged batch without one.
func TestMergeTimelines(t *testing.T) {
	holdAndDrop := func(p *summarytest.Phased) { p.HoldStart, p.DropReasoning = true, true }
	drop := func(p *summarytest.Phased) { p.DropReasoning = true }
	a, b := phasedDoc(t, 0, 3, holdAndDrop), phasedDoc(t, 3, 5, drop)
	if got := findingNames(a.Verdict.Findings); !slices.Equal(got, []string{verdict.FindingHeldStart, verdict.FindingReasoningDropped}) {
		t.Fatalf("run a's findings %v, want held start and reasoning dropped", got)
	}
	merged, err := Merge([]*Document{a, b}, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	merged = readBack(t, merged)
	all := summary.NewTimelineStats()
	for i := range 8 {
		p := summarytest.Phased{Batch: "gw", Index: i, Reasoning: 20, ToolCall: 10, Text: 30, Think: 500 * 1_000_000, Delay: 5_000_000,
			Lat: 100_000, Seen: 1, Sent: 1}
		if i < 3 {
			holdAndDrop(&p)
		} else {
			drop(&p)
		}
		all.Add(p.Request())
	}
	want := all.Summary()
	if got := merged.Gateway().Timeline; got == nil || !reflect.DeepEqual(*got, want) {
		t.Errorf("merged gateway timeline\n%+v\nwant the one of every record\n%+v", got, want)
	}
	if got := findingNames(merged.Verdict.Findings); !slices.Equal(got, []string{verdict.FindingReasoningDropped}) {
		t.Errorf("merged findings %v, want reasoning dropped only (3 held starts of 8 is under the share)", got)
	}
	if f := merged.Verdict.Findings[0]; f.Requests != 8 || f.Of != 8 {
		t.Errorf("merged reasoning finding %+v, want 8 of 8", f)
	}

	old := phasedDoc(t, 8, 2, drop)
	for i := range old.Batches {
		old.Batches[i].Timeline = nil
	}
	merged, err = Merge([]*Document{a, readBack(t, old)}, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if merged.Gateway().Timeline != nil || merged.Loop().Timeline != nil || merged.Verdict == nil || merged.Verdict.Findings != nil {
		t.Errorf("merging a run without timelines: timelines %v/%v, verdict %+v; want none, a verdict without findings",
			merged.Loop().Timeline, merged.Gateway().Timeline, merged.Verdict)
	}
}

func findingNames(fs []verdict.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name)
	}
	return out
}

// TestMergeFailureSummaryMissing: a run without failure summary (a
// document written before them) drops the merged batch's, with a note.
func TestMergeFailureSummaryMissing(t *testing.T) {
	old := fixedDoc(t, "full")
	old.Gateway().FailureSummary = nil
	m, err := Merge([]*Document{fixedDoc(t, "full"), old}, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Gateway().FailureSummary != nil || m.Loop().FailureSummary == nil {
		t.Errorf("merged failure summaries: gateway %+v, loopback %+v; want the gateway's dropped, the loopback's kept",
			m.Gateway().FailureSummary, m.Loop().FailureSummary)
	}
	if !slices.Contains(m.Notes, "failure summary of the gateway batch dropped: not every run has one") {
		t.Errorf("notes %q: want the dropped failure summary named", m.Notes)
	}
}
