package report

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/advice"
	"github.com/sse-latency/sse-latency/internal/gateway"
	"github.com/sse-latency/sse-latency/internal/rundoc"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/summary/summarytest"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// simRNG is a small deterministic generator (splitmix64), so that the
// synthetic documents, and so the goldens, never depend on a library's
// choice of algorithm.
type simRNG uint64

// float returns a number in [0, 1).
func (r *simRNG) float() float64 {
	*r += 0x9e3779b97f4a7c15
	z := uint64(*r)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

// simBatch simulates a batch of streaming requests: request i is sent at
// 0, its token k is emitted at think + k·gap (plus up to 20 µs of
// simLateness) and arrives at arrive(i, emitted). It returns the batch as the
// document holds it, with its representative series and request samples.
func simBatch(name, target string, requests, tokens int, arrive func(i int, emitted int64) int64) summary.Batch {
	const think, gap = 200_000, 5_000_000
	ttft, first, inter, emitRecv := stats.NewMetric(), stats.NewMetric(), stats.NewMetric(), stats.NewMetric()
	type req struct {
		mean   float64
		points [][2]float64
	}
	var reqs []req
	b := summary.Batch{Name: name, Target: target, Requests: requests, OK: requests, Tokens: int64(requests * tokens), Failures: []summary.FailureKind{}}
	for i := range requests {
		r := req{}
		var prev, sum int64
		for k := range tokens {
			emitted := int64(think + k*gap)
			arrived := arrive(i, emitted)
			d := arrived - emitted
			if k == 0 {
				ttft.Record(arrived)
				first.Record(d)
			} else {
				inter.Record(arrived - prev)
				emitRecv.Record(d)
				sum += d
			}
			prev = arrived
			r.points = append(r.points, [2]float64{float64(arrived) / 1e6, float64(d) / 1e6})
		}
		r.mean = float64(sum) / float64(tokens-1)
		reqs = append(reqs, r)
		b.Samples.Requests = append(b.Samples.Requests, summary.RequestSample{
			Index: i, OK: true, TTFTMs: r.points[0][0], WallMs: r.points[tokens-1][0] + 0.3, Tokens: tokens,
		})
	}
	order := make([]int, len(reqs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(reqs[x].mean, reqs[y].mean) })
	for _, p := range []struct {
		label string
		at    int
	}{{"fastest", 0}, {"median", len(order) / 2}, {"slowest", len(order) - 1}} {
		i := order[p.at]
		b.Samples.Series = append(b.Samples.Series, summary.Series{Label: p.label, Index: i, Tokens: tokens, Points: reqs[i].points})
	}
	b.Metrics = summary.Metrics{TTFT: simMetric(ttft), FirstEmitRecv: simMetric(first), InterToken: simMetric(inter), EmitRecv: simMetric(emitRecv)}
	b.Stream = summary.Stream{ByPiTs: int64(requests * tokens), Reads: int64(requests * (tokens + 3)), Events: int64(requests * (tokens + 2)),
		Bytes: int64(requests * tokens * 236), MaxTokensPerRead: 1}
	return b
}

// simMetric is m as the document holds it.
func simMetric(m *stats.Metric) summary.Metric {
	return summary.Metric{
		N: m.N(), MeanMs: m.Mean() / 1e6, StddevMs: m.Stddev() / 1e6, MinMs: stats.Ms(m.Min()),
		P50Ms: stats.Ms(m.Percentile(0.5)), P90Ms: stats.Ms(m.Percentile(0.9)), P95Ms: stats.Ms(m.Percentile(0.95)),
		P99Ms: stats.Ms(m.Percentile(0.99)), P999Ms: stats.Ms(m.Percentile(0.999)), MaxMs: stats.Ms(m.Max()),
		Histogram: m.Snapshot(),
	}
}

// simDelta is gateway minus loopback for one metric.
func simDelta(loop, gw *summary.Metric) *summary.Delta {
	return &summary.Delta{MeanMs: gw.MeanMs - loop.MeanMs, P50Ms: gw.P50Ms - loop.P50Ms, P95Ms: gw.P95Ms - loop.P95Ms, P99Ms: gw.P99Ms - loop.P99Ms}
}

// simJitter returns an arrival function: emission plus base plus up to
// spread of noise, and a rare spike.
func simJitter(seed simRNG, base, spread int64) func(int, int64) int64 {
	r := seed
	return func(_ int, emitted int64) int64 {
		d := base + int64(r.float()*float64(spread))
		if r.float() < 0.003 {
			d += int64(r.float() * 1_000_000)
		}
		return emitted + d
	}
}

// simDocument returns a synthetic run: a loopback calibration, then a
// gateway that flushes every event or, with buffering, holds tokens and
// releases them every 90 ms (a phase per request), as haproxy does without
// option http-no-delay.
func simDocument(buffering bool) *rundoc.Document {
	loop := simBatch("loopback", "127.0.0.1:8090", 10, 200, simJitter(1, 12_000, 20_000))
	gwArrive := simJitter(2, 45_000, 60_000)
	if buffering {
		const period = 90_000_000
		gwArrive = func(i int, emitted int64) int64 {
			// A burst arrives in one read: its tokens share one arrival.
			phase := int64(i) * 7_300_000 % period
			release := (emitted+phase+period-1)/period*period - phase
			return release + 30_000 + (release/period%7)*3_000
		}
	}
	gw := simBatch("gateway", "127.0.0.1:8080", 20, 200, gwArrive)
	d := &rundoc.Document{
		SchemaVersion: rundoc.SchemaVersion,
		Tool:          rundoc.ToolInfo{Name: "sse-latency", Version: "v0.9.0", GoVersion: "go1.26.8"},
		Environment:   rundoc.Environment{OS: "linux", Arch: "amd64", NumCPU: 2, GOMAXPROCS: 2, Hostname: "ci-runner"},
		Config: rundoc.Config{Listen: ":8090", Target: "127.0.0.1:8080", Requests: 20, Concurrency: 5, Tokens: 200, DelayMs: 5,
			TimeoutMs: 300000, API: "chat", Model: "sse-latency-1", ReasoningField: "reasoning_content", Arrival: "constant"},
		Start:     time.Date(2026, 3, 14, 9, 26, 53, 589_000_000, time.UTC),
		End:       time.Date(2026, 3, 14, 9, 27, 1, 812_000_000, time.UTC),
		EndReason: "done",
		Runs:      1,
		Run: summary.Run{
			Batches: []summary.Batch{loop, gw},
			Self: summary.Self{
				Lateness: simMetric(simLateness(4000, 30_000)),
				UserS:    0.412, SystemS: 0.733,
			},
		},
	}
	l, g := &d.Batches[0].Metrics, &d.Batches[1].Metrics
	d.Overhead = &summary.Overhead{
		FirstEmitRecv: simDelta(&l.FirstEmitRecv, &g.FirstEmitRecv), EmitRecv: simDelta(&l.EmitRecv, &g.EmitRecv),
		TTFT: simDelta(&l.TTFT, &g.TTFT), InterToken: simDelta(&l.InterToken, &g.InterToken),
	}
	if buffering {
		d.ExitCode = 1
		gwb := &d.Batches[1]
		gwb.Requests, gwb.Failed = 21, 1
		gwb.Failures = []summary.FailureKind{{Kind: "timeout", Count: 1, Texts: []summary.TextCount{{Text: "timeout after 300000ms", Count: 1}}}}
		gwb.Stream.ByPiTs, gwb.Stream.ByContent = 0, 4000
		gwb.Stream.Reads, gwb.Stream.MaxTokensPerRead = 240, 18
		d.Verdict = &verdict.Verdict{
			Class: verdict.Buffers, Tokens: 3980, CoalescedFraction: 0.998, LoopCoalesced: 0.002,
			BurstSizeP50: 18, BurstSizeMax: 18, Bursts: 200, BurstPeriodMs: 90.01, EmitGapMs: 5,
			AddedMeanMs: g.EmitRecv.MeanMs - l.EmitRecv.MeanMs, AddedP50Ms: g.EmitRecv.P50Ms - l.EmitRecv.P50Ms,
			AddedP99Ms: g.EmitRecv.P99Ms - l.EmitRecv.P99Ms, Relative: true,
			Signature: &verdict.Signature{Kind: verdict.TimePeriod, Evidence: "released every ~90 ms (quartile spread 0.00), ~18 tokens at a time",
				Tokens: 18, MaxTokens: 18, PeriodMs: 90.01},
		}
		d.Identity = &gateway.Identity{Name: gateway.HAProxy, Product: "haproxy", Sources: []string{"local process 4242 haproxy"}}
		summary.Advise(d.Verdict, d.Identity)
		d.Self.Lateness = simMetric(simLateness(4000, 2_500_000))
		d.Self.Warning = "the tool's own emissions were late (p99 2.43 ms > 1 ms): the figures describe its overload, not the gateway"
	} else {
		d.Verdict = &verdict.Verdict{
			Class: verdict.Flushes, Tokens: 3980, CoalescedFraction: 0.001, LoopCoalesced: 0.002, EmitGapMs: 5,
			AddedMeanMs: g.EmitRecv.MeanMs - l.EmitRecv.MeanMs, AddedP50Ms: g.EmitRecv.P50Ms - l.EmitRecv.P50Ms,
			AddedP99Ms: g.EmitRecv.P99Ms - l.EmitRecv.P99Ms, Relative: true, Causes: []string{},
		}
	}
	return d
}

// simLateness returns n emission lateness samples of up to spread ns.
func simLateness(n int, spread float64) *stats.Metric {
	m, r := stats.NewMetric(), simRNG(9)
	for range n {
		m.Record(int64(r.float() * r.float() * spread))
	}
	return m
}

var htmlCases = map[string]func() *rundoc.Document{
	"flushing":  func() *rundoc.Document { return simDocument(false) },
	"buffering": func() *rundoc.Document { return simDocument(true) },
}

func renderHTML(t *testing.T, d *rundoc.Document) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, d); err != nil {
		t.Fatalf("WriteHTML: %v", err)
	}
	return b.String()
}

func TestHTMLGolden(t *testing.T) {
	for name, doc := range htmlCases {
		got := renderHTML(t, doc())
		path := filepath.Join("testdata", "html_"+name+".html")
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (run go test -update to create it)", name, err)
		}
		if got != string(want) {
			t.Errorf("WriteHTML(%s) differs from %s (go test -update rewrites it; then look at the diff)", name, path)
		}
		if again := renderHTML(t, doc()); again != got {
			t.Errorf("WriteHTML(%s) twice gave different bytes", name)
		}
	}
}

var htmlSVGElement = regexp.MustCompile(`(?s)<svg[ >].*?</svg>`)

// htmlSVGCharts returns the <svg> elements of page after checking that each is
// well-formed XML; for each, the number of start elements of each name.
func htmlSVGCharts(t *testing.T, page string) (charts []string, counts []map[string]int) {
	t.Helper()
	for _, s := range htmlSVGElement.FindAllString(page, -1) {
		c := map[string]int{}
		d := xml.NewDecoder(strings.NewReader(s))
		for {
			tok, err := d.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("chart %d is not well-formed XML: %v\n%s", len(charts), err, s)
			}
			if se, ok := tok.(xml.StartElement); ok {
				c[se.Name.Local]++
			}
		}
		charts, counts = append(charts, s), append(counts, c)
	}
	return charts, counts
}

// htmlCheckOffline fails when page refers to anything outside itself: a
// link, a script, a resource to load. (The advice names its documentation
// in text, which loads nothing.)
func htmlCheckOffline(t *testing.T, name, page string) {
	t.Helper()
	for _, bad := range []string{`"http:`, `"https:`, `'http`, "<script", " src=", " href=", "@import", "url("} {
		if strings.Contains(page, bad) {
			i := strings.Index(page, bad)
			t.Errorf("%s: the page holds %q: %s", name, bad, page[max(i-80, 0):min(i+80, len(page))])
		}
	}
}

func TestHTMLStructure(t *testing.T) {
	titles := []string{"emit-&gt;recv CDF", "emit-&gt;recv per token", "inter-token gaps", "TTFT per request"}
	for name, doc := range htmlCases {
		page := renderHTML(t, doc())
		htmlCheckOffline(t, name, page)
		charts, counts := htmlSVGCharts(t, page)
		if len(charts) != 4 {
			t.Fatalf("%s: %d charts, want 4", name, len(charts))
		}
		for i, s := range charts {
			c := counts[i]
			if c["title"] != 1 || !strings.Contains(s, "<title>"+titles[i]) {
				t.Errorf("%s: chart %d lacks its title %q", name, i, titles[i])
			}
			if !strings.Contains(s, `class="axis x"`) || !strings.Contains(s, `class="axis y"`) || c["path"] == 0 {
				t.Errorf("%s: chart %d (%s) lacks axes or a path: %v", name, i, titles[i], c)
			}
			if !strings.Contains(s, `class="legend"`) || !strings.Contains(s, ">gateway") && !strings.Contains(s, ">gw ") {
				t.Errorf("%s: chart %d (%s) has no legend naming the gateway", name, i, titles[i])
			}
		}
		if counts[1]["path"] != 6 {
			t.Errorf("%s: the series chart has %d lines, want 6 (fastest, median, slowest of two batches)", name, counts[1]["path"])
		}
		for _, want := range []string{
			"<title>sse-latency v0.9.0 — run of 2026-03-14T09:26:53.589Z</title>",
			"<details>", "<summary>Configuration</summary>", "\n  &#34;target&#34;: &#34;127.0.0.1:8080&#34;,\n",
			summary.LoopbackTitle + " — 127.0.0.1:8090: 10 requests, 10 ok, 0 failed, 2000 tokens",
			"<td>emit-&gt;recv (tokens)</td><td>3980</td>",
			"<td>inter-token (client)</td><td>1990</td>",
			`<table class="overhead">`, `<table class="stream">`, "CPU: 0.412 s user, 0.733 s system",
			"<td>emission lateness</td><td>4000</td>",
		} {
			if !strings.Contains(page, want) {
				t.Errorf("%s: the page lacks %q", name, want)
			}
		}
	}

	buf := renderHTML(t, simDocument(true))
	for _, want := range []string{
		`<div class="verdict buffers">`,
		"gateway buffers: 99.8% of 3980 tokens in bursts (loopback 0.2%)",
		"bursts: typical 18 tokens, max 18, one every ~90.01 ms; tokens emitted every 5.00 ms", // Bursts: 200 in the verdict
		"gateway: haproxy (local process 4242 haproxy)",
		"<p class=\"advice-heading\">advice for HAProxy:</p>",
		"<li>time period: " + htmlEscape(advice.For(gateway.HAProxy, advice.TimePeriod).Setting),
		`<code>https://docs.haproxy.org/2.6/configuration.html#4.2-option%20http-no-delay</code>`,
		`<td class="text">timeout</td><td>1</td><td class="text">timeout after 300000ms (×1)</td>`,
		`<p class="warning">warning: the tool&#39;s own emissions were late`, // Warnings, as the text report prints them
		"gap between consecutive arrivals (ms)<",                             // linear bins: gaps of 0 and of ~90 ms
	} {
		if !strings.Contains(buf, want) {
			t.Errorf("buffering: the page lacks %q", want)
		}
	}
	flush := renderHTML(t, simDocument(false))
	for _, want := range []string{
		`<div class="verdict flushes">`,
		"gateway flushes every event: 0.1% of 3980 tokens in bursts (loopback 0.2%), emitted every 5.00 ms",
		"added emit-&gt;recv: mean &#43;0.0", // html/template escapes + in text
		"no failed requests",
	} {
		if !strings.Contains(flush, want) {
			t.Errorf("flushing: the page lacks %q", want)
		}
	}
	if strings.Contains(flush, `class="warning"`) || strings.Contains(flush, "likely causes") {
		t.Errorf("flushing: the page has a warning or causes it should not")
	}
}

// htmlEscape escapes s as html/template does in text.
func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;", "+", "&#43;").Replace(s)
}

// TestHTMLEmpty renders documents without data: every chart says so, and
// nothing breaks.
func TestHTMLEmpty(t *testing.T) {
	docs := map[string]*rundoc.Document{
		"zero": {},
		"setup failed": {
			SchemaVersion: rundoc.SchemaVersion, EndReason: "setup_failed", ExitCode: 1,
			Run: summary.Run{Verdict: &verdict.Verdict{Class: verdict.Unknown, Reason: "no gateway tokens", LoopCoalesced: -1}},
		},
		"failed requests only": {
			Run: summary.Run{Batches: []summary.Batch{{Name: "gateway", Target: "127.0.0.1:1", Requests: 3, Failed: 3,
				Failures: []summary.FailureKind{{Kind: "connect", Count: 3, Texts: []summary.TextCount{{Text: "connect(): Connection refused", Count: 3}}}},
				Samples:  summary.Samples{Requests: []summary.RequestSample{{Index: 0, TTFTMs: -1}, {Index: 1, TTFTMs: -1}}}}}},
		},
	}
	for name, d := range docs {
		page := renderHTML(t, d)
		htmlCheckOffline(t, name, page)
		charts, counts := htmlSVGCharts(t, page)
		if len(charts) != 4 {
			t.Fatalf("%s: %d charts, want 4", name, len(charts))
		}
		for i, s := range charts {
			if counts[i]["title"] != 1 || counts[i]["path"] != 0 || !strings.Contains(s, ">no samples</text>") {
				t.Errorf("%s: chart %d without data = %s; want a title and the note, no path", name, i, s)
			}
		}
	}
	page := renderHTML(t, docs["setup failed"])
	for _, want := range []string{`<div class="verdict unknown">`, "verdict: unknown — no gateway tokens", "(not recorded)", "no batch ran"} {
		if !strings.Contains(page, want) {
			t.Errorf("setup failed: the page lacks %q", want)
		}
	}
	if page := renderHTML(t, docs["zero"]); !strings.Contains(page, "no verdict in this report") ||
		!strings.Contains(page, "no calibration batch: no overhead") {
		t.Errorf("zero document: the page does not say that the verdict and overhead are absent")
	}
}

// TestHTMLLongSeries checks that long series are drawn downsampled.
func TestHTMLLongSeries(t *testing.T) {
	d := simDocument(true)
	gw := &d.Batches[1]
	gw.Samples.Sampled = true
	gw.Samples.Requests = nil
	for i := range summary.MaxRequestSamples {
		gw.Samples.Requests = append(gw.Samples.Requests, summary.RequestSample{Index: 3 * i, OK: true, TTFTMs: float64(i%97) / 10, Tokens: 200})
	}
	gw.Samples.Requests[1234].TTFTMs = 1e4 // a spike survives downsampling
	var pts [][2]float64
	for k := range 5000 {
		pts = append(pts, [2]float64{float64(k), float64(k % 18)})
	}
	gw.Samples.Series[0].Points = pts
	page := renderHTML(t, d)
	charts, _ := htmlSVGCharts(t, page)
	for i, s := range charts {
		for _, m := range regexp.MustCompile(` d="([^"]*)"`).FindAllStringSubmatch(s, -1) {
			if n := strings.Count(m[1], "L") + strings.Count(m[1], "H") + 1; n > 1000+htmlGapBins+2 {
				t.Errorf("chart %d draws a path of %d points", i, n)
			}
		}
	}
	if !strings.Contains(charts[3], ">gateway (sample)</text>") || !strings.Contains(charts[3], `>10000</text>`) {
		t.Errorf("the TTFT chart lost the spike of 10000 ms or the sample note")
	}
}

// TestHTMLUserText checks that text from the run is escaped, and is the
// only place a URL may appear.
func TestHTMLUserText(t *testing.T) {
	d := simDocument(false)
	d.Environment.Hostname = `<script>alert("x")</script>`
	d.Batches[1].Target = "https://gw.example"
	d.Batches[1].Failures = []summary.FailureKind{{Kind: "status", Count: 1, Texts: []summary.TextCount{{Text: "status HTTP/1.1 502 <b>Bad</b>", Count: 1}}}}
	d.Config.Target = "</pre><script>"
	page := renderHTML(t, d)
	if strings.Contains(page, "<script") || strings.Contains(page, "<b>") || strings.Contains(page, "</pre><") {
		t.Errorf("text from the run reached the page unescaped")
	}
	if strings.Count(page, "https://") != strings.Count(page, "https://gw.example") || strings.Contains(page, "http://") {
		t.Errorf("the page holds a URL the run did not supply")
	}
	if _, counts := htmlSVGCharts(t, page); len(counts) != 4 {
		t.Errorf("%d charts, want 4", len(counts))
	}
}

type htmlFailWriter struct{}

func (htmlFailWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteHTMLError(t *testing.T) {
	if err := WriteHTML(htmlFailWriter{}, simDocument(false)); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("WriteHTML(failing writer) = %v, want the write error", err)
	}
}

// TestGapBins pins the inter-token histogram's binning: linear for a narrow
// range, log when the gaps span more than htmlGapLogRatio, shares summing to
// 100 %.
func TestGapBins(t *testing.T) {
	mk := func(samples ...int64) summary.Batch {
		m := stats.NewMetric()
		for _, s := range samples {
			m.Record(s)
		}
		return summary.Batch{Name: "gateway", Metrics: summary.Metrics{InterToken: simMetric(m)}}
	}
	tests := []struct {
		name    string
		b       summary.Batch
		log     bool
		lo, hi  float64
		note    bool
		peakBin int
	}{
		{"flushing", mk(4_900_000, 5_000_000, 5_000_000, 5_100_000), false, 4.9, 5.15, false, 15},
		{"bursts with zero gaps", mk(0, 0, 0, 90_000_000), false, 0, 100, false, 0},
		{"bursts across reads", mk(10_000, 10_000, 12_000, 90_000_000), true, 0.01, 100, false, 0},
		{"log with zeros", mk(0, 0, 10_000, 90_000_000), true, 0.01, 100, true, 0},
	}
	for _, tt := range tests {
		c, note := htmlGapChart([]summary.Batch{tt.b})
		if c.X.Log != tt.log || math.Abs(c.X.Min-tt.lo) > 1e-9 || math.Abs(c.X.Max-tt.hi) > 1e-9 || (note != "") != tt.note {
			t.Errorf("htmlGapChart(%s): log=%v range %g..%g note %q; want log=%v %g..%g note=%v",
				tt.name, c.X.Log, c.X.Min, c.X.Max, note, tt.log, tt.lo, tt.hi, tt.note)
			continue
		}
		pts := c.Series[0].Points
		var sum float64
		peak := 0
		for i, p := range pts[:htmlGapBins] {
			sum += p.Y
			if p.Y > pts[peak].Y {
				peak = i
			}
		}
		if len(pts) != htmlGapBins+1 || math.Abs(sum-100) > 1e-9 || peak != tt.peakBin {
			t.Errorf("htmlGapChart(%s): %d points, shares sum to %g, peak in bin %d; want %d, 100, bin %d",
				tt.name, len(pts), sum, peak, htmlGapBins+1, tt.peakBin)
		}
	}
}

func ExampleWriteHTML() {
	d := &rundoc.Document{SchemaVersion: rundoc.SchemaVersion, Tool: rundoc.ToolInfo{Name: "sse-latency", Version: "v1.0.0"}}
	var b bytes.Buffer
	if err := WriteHTML(&b, d); err != nil {
		fmt.Println(err)
	}
	fmt.Println(strings.Count(b.String(), "<svg"), "charts,", strings.Count(b.String(), ">no samples<"), "without samples")
	// Output:
	// 4 charts, 4 without samples
}

// TestHTMLVerdictWords: the HTML box says what the text block says, line
// for line (the text's padded label followed by a colon instead), for every
// verdict of verdict_test.go and the cases the drift between the two used
// to hide: a hold without the requests it was measured over, a noisy
// calibration, bursts counted without a burst period.
func TestHTMLVerdictWords(t *testing.T) {
	cases := maps.Clone(summarytest.Verdicts)
	cases["hold, noisy calibration"] = verdict.Verdict{
		Class: verdict.Flushes, Tokens: 400, CoalescedFraction: 0.12, LoopCoalesced: 0.15, Noisy: true, EmitGapMs: 5,
		AddedMeanMs: 0.1, AddedP50Ms: 0.09, AddedP99Ms: 0.3, Relative: true, FirstTokenHold: true, FirstTokenHoldMs: 35.2,
		FollowingMs: 0.05, HoldRequests: 20,
	}
	cases["one burst per response"] = verdict.Verdict{
		Class: verdict.Buffers, Tokens: 1000, CoalescedFraction: 1, LoopCoalesced: -1, BurstSizeP50: 200, BurstSizeMax: 200, Bursts: 5,
		EmitGapMs: 5, AddedMeanMs: 497.5, AddedP50Ms: 497.5, AddedP99Ms: 990.1,
	}
	cases["no reason"] = verdict.Verdict{Class: verdict.Unknown, LoopCoalesced: -1}
	for name, v := range cases {
		var text bytes.Buffer
		id := summarytest.Identities[name]
		if err := WriteVerdict(&text, v, id); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(text.String(), "\n"), "\n")[1:] // after "=== verdict ==="
		h := newHTMLVerdict(&v, id, nil, nil)
		var html []string
		html = append(html, h.Headline)
		for _, l := range h.Lines {
			if strings.HasPrefix(l, "note: ") {
				continue // after the causes in the text block
			}
			label, rest, _ := strings.Cut(l, ": ")
			html = append(html, fmt.Sprintf("%-24s %s", label, rest))
		}
		var adv bytes.Buffer
		writeAdvice(&printer{w: &adv}, h.Advice) // the box's advice, laid out as the text's
		if adv.Len() > 0 {
			html = append(html, strings.Split(strings.TrimSuffix(adv.String(), "\n"), "\n")...)
		}
		for _, l := range h.Lines {
			if strings.HasPrefix(l, "note: ") {
				html = append(html, l)
			}
		}
		if !slices.Equal(html, lines) {
			t.Errorf("verdict %s: the HTML box says\n%q\nthe text block\n%q", name, html, lines)
		}
		if h.Class != v.Class.String() {
			t.Errorf("verdict %s: box class %q, want %q", name, h.Class, v.Class.String())
		}
	}
	// The lines the two used to word differently.
	for _, c := range []struct {
		name, want string
	}{
		{"hold, noisy calibration", "first token held: +35.20ms beyond the following tokens' 0.05ms (p50 over 20 requests)"},
		{"hold, noisy calibration", "note: the calibration itself had 15.0% of its tokens in bursts: the tool was overloaded; lower -c or raise -d for a sharper verdict"},
		{"one burst per response", "bursts: typical 200 tokens, max 200, at most one per response; tokens emitted every 5.00 ms"},
		{"one burst per response", "emit->recv (gateway): mean +497.500ms  p50 +497.500ms  p99 +990.100ms  (no calibration to subtract)"},
		{"buffers_signature", "signature: compression (gzip, whole response): " +
			"100% of the tokens arrived after their response's last token was emitted"},
	} {
		v := cases[c.name]
		if h := newHTMLVerdict(&v, nil, nil, nil); !slices.Contains(h.Lines, c.want) {
			t.Errorf("newHTMLVerdict(%s).Lines = %q, want %q among them", c.name, h.Lines, c.want)
		}
	}
	v := cases["no reason"]
	if h := newHTMLVerdict(&v, nil, nil, nil); h.Headline != "verdict: unknown — no reason given" {
		t.Errorf("unknown verdict without a reason: headline %q", h.Headline)
	}
	// No bursts counted, no bursts line (the text's condition), whatever
	// the largest burst says.
	v = summarytest.Verdicts["buffers"]
	v.Bursts = 0
	if h := newHTMLVerdict(&v, nil, nil, nil); strings.HasPrefix(h.Lines[0], "bursts") {
		t.Errorf("a buffering verdict without bursts has a bursts line: %q", h.Lines)
	}
}
