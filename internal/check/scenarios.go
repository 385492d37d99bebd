package check

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sse-latency/sse-latency/internal/advice"
	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/client"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/failures"
	gwid "github.com/sse-latency/sse-latency/internal/gateway"
	"github.com/sse-latency/sse-latency/internal/result"
)

// The timing of the battery's streams.
const (
	// DelayMs is the server's delay between tokens, every scenario: long
	// enough that a server a little behind its schedule on a busy machine
	// still writes each token on its own.
	DelayMs = 5.0
	// The signature stream (the flush, first-token and compression
	// scenarios): SignatureStreams requests at once of SignatureTokens
	// tokens, with a pause of SignaturePause after token SignaturePauseAt
	// — the pause tells a buffer that fills from a timer (see
	// verdict.Signature), straight to the server at the same time too
	// (the calibration: see timing.go). One second in all.
	SignatureStreams = 4
	SignatureTokens  = 120
	SignaturePauseAt = 90
	SignaturePause   = 400 * time.Millisecond
	// ShortTokens is the length of the scenarios' short streams: 50 ms.
	// A stream that ends within a few milliseconds can end before a Go
	// reverse proxy (httputil.ReverseProxy, Caddy) has finished writing its
	// request upstream — its transport then reads the closed request body,
	// fails, and closes the kept upstream connection under the next stream
	// (an "invalid Read on closed Body", likelier on a busy machine).
	ShortTokens = 10
	// RequestTimeout bounds every request of the default battery, and
	// PreflightTimeout the first one.
	RequestTimeout   = 20 * time.Second
	PreflightTimeout = 10 * time.Second
)

// The scenarios' thresholds. The first-token row's are the verdict's
// (verdict.Hold): the run and the check judge a hold alike.
const (
	// LargeEventBytes is the large event's size: 64 KiB, the line limit of
	// Go's bufio.Scanner and of many SSE parsers.
	LargeEventBytes = 64 << 10
	// LargeBodyBytes is the large request's prompt: 1 MB, a long
	// conversation. The row warns when the gateway's time to first token
	// exceeds the server's own by LargeBodyWarn and LargeBodyFactor times:
	// far beyond what a busy machine adds to reading a megabyte.
	LargeBodyBytes  = 1_000_000
	LargeBodyWarn   = time.Second
	LargeBodyFactor = 3
	// CancelWithin is how soon a client's cancel must reach the upstream;
	// CancelTokens the stream it cancels (two seconds), after
	// CancelAfterTokens tokens have arrived.
	CancelWithin      = time.Second
	CancelTokens      = 400
	CancelAfterTokens = 3
	// LongSilence is the silence of the long scenarios: above the 60 s
	// idle timeouts gateways default to.
	LongSilence = 65 * time.Second
)

// battery is every scenario, in the order they run.
var battery = []scenario{
	{name: "flush", title: "flushes every event", run: (*checker).flush},
	{name: "first-token", title: "first event not held", run: (*checker).firstToken},
	{name: "large-event", title: "a 64 KB event passes whole", run: (*checker).largeEvent},
	{name: "utf8-split", title: "a UTF-8 character split across writes passes intact", run: (*checker).utf8Split},
	{name: "line-endings", title: "CRLF and CR line endings and comments tolerated", run: (*checker).lineEndings},
	{name: "sse-framing", title: "a BOM, multi-line data and the event line after the data tolerated", run: (*checker).sseFraming},
	{name: "usage", title: "usage passes through when asked", run: (*checker).usage},
	{name: "usage-fidelity", title: "usage and cache figures arrive as the server sent them", run: (*checker).usageFidelity},
	{name: "terminal", title: "the terminal event passes", run: (*checker).terminal},
	{name: "upstream-cut", title: "an upstream cut reaches the client", run: (*checker).upstreamCut},
	{name: "error-status", title: "upstream 429 and 500 pass through with their body", run: (*checker).errorStatus},
	{name: "cancel", title: "a client's cancel reaches the upstream within 1 s", run: (*checker).cancel},
	{name: "large-body", title: "a 1 MB request body: time to first token", run: (*checker).largeBody},
	{name: "keepalive", title: "the connection is reused after the terminal event", run: (*checker).keepalive},
	{name: "compression", title: "event-stream compression, when negotiated, flushes every event", run: (*checker).compression},
	{name: "multiplex", title: "streams of one connection flush independently", run: (*checker).multiplex},
	{name: "long-silence", title: "a stream silent for 65 s mid-answer survives", long: true, run: (*checker).longSilence},
	{name: "long-first-token", title: "a first token after 65 s of silence arrives", long: true, run: (*checker).longFirstToken},
}

// spec describes the requests of a scenario.
type spec struct {
	tokens      int
	faults      api.Faults
	usage       bool
	keepAlive   bool
	promptBytes int
	cached      *int64   // the usage's cache figure the server reports (api.NoCacheFigure: null)
	headers     []string // besides Options.Client's
	direct      bool     // straight to the server, not through the gateway
	noRegistry  bool     // leave the server's record of the stream for the scenario to look up
	timeout     time.Duration
	received    *atomic.Int64
}

// request prepares the requests of sp, tagged tag in their ids.
func (c *checker) request(sp spec, tag string) *client.Request {
	o := c.o.Client
	if sp.direct {
		o = client.Options{Dialect: o.Dialect, Model: o.Model, Engine: o.Engine, Addr: c.direct}
	}
	o.Tokens, o.ExpectTokens = sp.tokens, sp.tokens
	o.Faults, o.IncludeUsage, o.KeepAlive, o.PromptBytes, o.Cached = sp.faults, sp.usage, sp.keepAlive, sp.promptBytes, sp.cached
	o.ExtraHeaders = slices.Concat(o.ExtraHeaders, sp.headers)
	o.Registry, o.IDPrefix, o.Received = c.reg, c.runID+"-"+tag, sp.received
	if sp.noRegistry {
		o.Registry = nil
	}
	o.Timeout = RequestTimeout
	if sp.timeout > 0 {
		o.Timeout = sp.timeout
	}
	return client.New(o)
}

// do makes one request of sp.
func (c *checker) do(ctx context.Context, sp spec, tag string) *result.Request {
	return c.doAll(ctx, sp, tag, 1)[0]
}

// doAll makes n requests of sp at once.
func (c *checker) doAll(ctx context.Context, sp spec, tag string, n int) []*result.Request {
	q := c.request(sp, tag)
	recs := make([]*result.Request, n)
	var wg sync.WaitGroup
	for i := range recs {
		recs[i] = &result.Request{Batch: "gw", Index: int(c.seq.Add(1))}
		wg.Go(func() { q.Do(ctx, recs[i]) })
	}
	wg.Wait()
	return recs
}

// preflight makes sure the target is a gateway to the server before any
// scenario: a stream of 3 tokens through it must reach the server and come
// back as its stream.
func (c *checker) preflight(ctx context.Context) error {
	rec := c.do(ctx, spec{tokens: 3, noRegistry: true, timeout: PreflightTimeout}, "pre")
	seen := c.reg.Lookup(rec.ID) != nil
	f := rec.Failure
	where := fmt.Sprintf("%s (sse-latency's server listens on %s)", c.o.Target, c.o.Listener.Addr())
	ev := c.o.Gateway
	ev.Headers = rec.GatewayHeaders
	id := gwid.Identify(ev)
	c.id = &id
	switch {
	case seen && f.Kind != result.Timeout:
		return nil // a gateway to the server: the scenarios judge the rest
	case f.Kind == result.OK:
		return fmt.Errorf("%w: %s answered with a stream the server never sent: does it forward %s to %s?",
			ErrNotGateway, where, c.path(), c.o.Listener.Addr())
	case ctx.Err() != nil:
		return ctx.Err()
	case f.Kind == result.Connect:
		return fmt.Errorf("%w: cannot connect to %s: %s", ErrNotGateway, c.o.Target, failures.Describe(rec))
	case f.Kind == result.Redirect:
		return fmt.Errorf("%w: %s answered with a %s; check follows no redirect: give it the address that serves the API",
			ErrNotGateway, c.o.Target, f.Error())
	case f.Kind == result.Timeout:
		return fmt.Errorf("%w: no answer from %s within %v", ErrNotGateway, c.o.Target, PreflightTimeout)
	case rec.HeadAt == 0:
		return fmt.Errorf("%w: %s does not answer in HTTP: %s", ErrNotGateway, c.o.Target, failures.Describe(rec))
	case f.Kind == result.BadStatus:
		return fmt.Errorf("%w: %s answered %q without reaching the server: does it forward %s there?",
			ErrNotGateway, where, f.Error(), c.path())
	}
	return fmt.Errorf("%w: %s answered without reaching the server (%s): does it forward %s there?",
		ErrNotGateway, where, failures.Describe(rec), c.path())
}

// path is the request path through the gateway.
func (c *checker) path() string {
	if c.o.Client.Path != "" {
		return c.o.Client.Path
	}
	return c.o.Client.Dialect.Path()
}

// failureTexts returns the distinct failure texts of recs (sanitised),
// nil for none.
func failureTexts(recs ...*result.Request) []string {
	return distinct(recs, func(r *result.Request) string { return failures.Sanitize(r.Failure.Error()) })
}

// failureKinds returns the distinct kinds of the failures of recs, as the
// run's failure summary names them (failures.Kind), nil for none.
func failureKinds(recs ...*result.Request) []string {
	return distinct(recs, func(r *result.Request) string { return failures.Of(r).String() })
}

// distinct returns the distinct values of f over the failed requests of
// recs, in their order.
func distinct(recs []*result.Request, f func(*result.Request) string) []string {
	var out []string
	for _, r := range recs {
		if v := f(r); !r.OK() && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// withKinds is row with the failure kinds of recs, the requests its
// failures came from (none when the row names no failure).
func withKinds(row Row, recs ...*result.Request) Row {
	if len(row.Failures) > 0 {
		row.FailureKinds = failureKinds(recs...)
	}
	return row
}

func (c *checker) largeEvent(ctx context.Context) Row {
	size := int64(LargeEventBytes)
	rec := c.do(ctx, spec{tokens: ShortTokens, faults: api.Faults{EventBytes: &size}}, "big")
	return withKinds(largeEventRow(rec.OK(), rec.Bytes, failureTexts(rec)), rec)
}

func (c *checker) utf8Split(ctx context.Context) Row {
	gap := 2.0
	rec := c.do(ctx, spec{tokens: 8, faults: api.Faults{Text: api.TextUTF8, Split: []int{api.SplitInChar}, SplitGapMs: &gap}}, "utf8")
	return withKinds(utf8Row(rec.OK(), rec.Failure.Kind == result.Integrity, failureTexts(rec)), rec)
}

func (c *checker) lineEndings(ctx context.Context) Row {
	on := true
	crlf := c.do(ctx, spec{tokens: ShortTokens, faults: api.Faults{LineEnd: api.LineEndCRLF, Comments: &on}}, "crlf")
	cr := c.do(ctx, spec{tokens: ShortTokens, faults: api.Faults{LineEnd: api.LineEndCR, Comments: &on}}, "cr")
	return withKinds(lineEndingsRow(crlf.OK(), cr.OK(), crlf.Comments > 0 && cr.Comments > 0, failureTexts(crlf, cr)), crlf, cr)
}

// framingCases are the spec-valid framings of the sse-framing scenario:
// what each fault writes, and whether a response's record shows it arrived
// so (else the gateway re-framed the stream, which is no failure).
var framingCases = []struct {
	what   string
	faults func() api.Faults
	kept   func(r *result.Request) bool
}{
	{"a byte order mark before the first event", func() api.Faults { on := true; return api.Faults{BOM: &on} },
		func(r *result.Request) bool { return r.Framing.BOMs == 1 }},
	{"each JSON payload over two data lines", func() api.Faults { n := int64(2); return api.Faults{MultilineData: &n} },
		func(r *result.Request) bool { return r.Framing.MultiLineEvents >= len(r.Tokens) }},
	{"the event line after the data", func() api.Faults { on := true; return api.Faults{EventAfterData: &on} },
		func(*result.Request) bool { return true }}, // the record cannot tell the order of the lines
}

// sseFraming streams the same answer framed each spec-valid way, and
// plainly: each must arrive whole and make as many events as the plain
// one (a gateway that dispatches every data line, or loses the event a
// BOM precedes, does not).
func (c *checker) sseFraming(ctx context.Context) Row {
	plain := c.do(ctx, spec{tokens: ShortTokens}, "framing")
	recs := []*result.Request{plain}
	if !plain.OK() {
		return withKinds(failedRow(1, "the plain stream the framings are compared with", failureTexts(plain), advice.StreamBroken), plain)
	}
	var broken, reframed []string
	for i, fc := range framingCases {
		r := c.do(ctx, spec{tokens: ShortTokens, faults: fc.faults()}, "framing"+strconv.Itoa(i))
		recs = append(recs, r)
		switch {
		case !r.OK():
			broken = append(broken, fc.what+" ("+failures.Sanitize(r.Failure.Error())+")")
		case r.Events != plain.Events:
			broken = append(broken, fmt.Sprintf("%s (%d events, the plain stream %d: the gateway read its lines otherwise)",
				fc.what, r.Events, plain.Events))
		case !fc.kept(r):
			reframed = append(reframed, fc.what)
		}
	}
	return withKinds(sseFramingRow(len(recs), broken, reframed, failureTexts(recs...)), recs...)
}

func (c *checker) usage(ctx context.Context) Row {
	rec := c.do(ctx, spec{tokens: ShortTokens, usage: true}, "usage")
	return withKinds(usageRow(rec.OK(), failureTexts(rec)), rec)
}

// FieldReportCached is the cache figure of the usage-fidelity scenario:
// the 5,987 cache-read tokens of the field report in shared/seeds.
const FieldReportCached = 5987

// usageFidelity streams twice with usage, once with a cache figure and
// once without (null), and compares what arrived with the server's
// record: a gateway that changes, drops, zeroes from null or recomputes a
// usage field misbills its users.
func (c *checker) usageFidelity(ctx context.Context) Row {
	none, known := int64(api.NoCacheFigure), int64(FieldReportCached)
	recs := []*result.Request{
		c.do(ctx, spec{tokens: ShortTokens, usage: true, cached: &known}, "ufk"),
		c.do(ctx, spec{tokens: ShortTokens, usage: true, cached: &none}, "ufn"),
	}
	var found []string
	ok, compared := true, true
	for _, rec := range recs {
		switch {
		case !rec.OK():
			ok = false
		case rec.Usage == nil || !rec.Usage.Compared:
			compared = false
		default:
			for _, f := range rec.Usage.Findings {
				field := f.Field
				if field == "" {
					field = "the whole object"
				}
				sent, got := f.Sent, f.Got
				if got == "" {
					got = "absent"
				}
				found = append(found, fmt.Sprintf("%s %s %s (%s -> %s)", f.Kind, f.Part, field, sent, got))
			}
		}
	}
	return withKinds(usageFidelityRow(ok, compared, found, failureTexts(recs...)), recs...)
}

func (c *checker) terminal(ctx context.Context) Row {
	rec := c.do(ctx, spec{tokens: ShortTokens}, "term")
	return withKinds(terminalRow(rec.OK(), failureTexts(rec)), rec)
}

func (c *checker) upstreamCut(ctx context.Context) Row {
	cut := int64(cutAfter)
	rec := c.do(ctx, spec{tokens: cutTokens, faults: api.Faults{CutAfter: &cut}}, "cut")
	f := rec.Failure
	o := cutOther
	switch {
	case f.Kind == result.StreamError:
		o = cutErrorEvent
	case f.Kind == result.ClosedBeforeDone && !rec.BodyEnded, f.Kind == result.RecvError:
		o = cutAborted
	case f.Kind == result.ClosedBeforeDone:
		o = cutCleanEnd
	case f.Kind == result.Integrity || f.Kind == result.OK:
		o = cutTerminal
	}
	return withKinds(upstreamCutRow(o, len(rec.Tokens), failures.Sanitize(f.Error()), f.Detail), rec)
}

func (c *checker) errorStatus(ctx context.Context) Row {
	codes := []int64{429, 500}
	if c.o.Client.Dialect == api.Anthropic {
		codes = append(codes, 529)
	}
	var bad, good []string
	var recs []*result.Request
	for _, code := range codes {
		rec := c.do(ctx, spec{tokens: 3, faults: api.Faults{Status: &code}}, "st"+strconv.FormatInt(code, 10))
		recs = append(recs, rec)
		got, body := statusOf(rec)
		switch {
		case got == 0:
			bad = append(bad, fmt.Sprintf("%d came as %s", code, rec.Failure.Error()))
		case got != int(code):
			bad = append(bad, fmt.Sprintf("%d became %d", code, got))
		case !body:
			bad = append(bad, fmt.Sprintf("%d passed without its body", code))
		default:
			good = append(good, strconv.FormatInt(code, 10))
		}
	}
	return withKinds(errorStatusRow(good, bad, failureTexts(recs...)), recs...)
}

// statusOf reads the status code of a failed request's status failure, and
// whether the upstream's error body came with it; 0 for another failure.
func statusOf(rec *result.Request) (code int, body bool) {
	if rec.Failure.Kind != result.BadStatus {
		return 0, false
	}
	fields := strings.Fields(rec.Failure.Detail) // "HTTP/1.1 429 Too Many Requests: {…}"
	if len(fields) < 2 {
		return 0, false
	}
	code, _ = strconv.Atoi(strings.TrimSuffix(fields[1], ":"))
	return code, strings.Contains(rec.Failure.Detail, faultBodyMarker)
}

// faultBodyMarker is what the server's injected error bodies say.
const faultBodyMarker = "sse-latency: injected upstream fault"

// cancel streams CancelTokens tokens and cancels the request once
// CancelAfterTokens have arrived while the upstream is still emitting:
// then it watches the server's record of the stream for the client
// going away. A gateway that releases nothing before the stream ends
// (it holds the whole response) leaves nothing to cancel: the row says
// so, and the flush row has the hold.
func (c *checker) cancel(ctx context.Context) Row {
	var received atomic.Int64
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	q := c.request(spec{tokens: CancelTokens, received: &received, noRegistry: true}, "cancel")
	rec := &result.Request{Batch: "gw", Index: int(c.seq.Add(1))}
	id := q.ID(rec.Batch, rec.Index)
	done := make(chan struct{})
	go func() { defer close(done); q.Do(rctx, rec) }()
	f := cancelFacts{outcome: cancelEnded}
	var cancelled int64
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
watch:
	for {
		select {
		case <-done:
			f.received, f.failures = received.Load(), failureTexts(rec)
			if tm := c.reg.Lookup(id); tm.Finished() {
				f.outcome, f.emitted, f.received = cancelUntestable, emittedBy(tm, c.clk.Now()), releasedBefore(rec, tm)
			}
			if len(f.failures) == 0 && f.outcome == cancelEnded {
				f.failures = []string{"it ended without a failure before the cancel"}
			}
			return withKinds(cancelRow(f, c.flushAdvice()), rec)
		case <-tick.C:
			tm := c.reg.Lookup(id)
			n := received.Load()
			switch {
			case tm.Finished(): // the upstream is done: nothing left to cancel
				stop()
				<-done
				f.outcome, f.received, f.emitted = cancelUntestable, releasedBefore(rec, tm), emittedBy(tm, c.clk.Now())
				return cancelRow(f, c.flushAdvice())
			case n >= CancelAfterTokens && tm != nil:
				cancelled = c.clk.Now()
				f.received, f.emitted = n, emittedBy(tm, cancelled)
				stop()
				break watch
			}
		}
	}
	<-done
	deadline := time.Now().Add(CancelWithin)
	for {
		tm := c.reg.Lookup(id)
		gone, finished := tm.GoneAt(), tm.Finished()
		f.after = emittedAfter(tm, cancelled)
		switch {
		case gone != 0 && gone-cancelled <= int64(CancelWithin):
			f.outcome, f.goneIn = cancelSeen, time.Duration(gone-cancelled)
			return cancelRow(f, nil)
		case gone == 0 && finished && f.after == 0:
			f.outcome = cancelUntestable // its last token was out before the cancel
			return cancelRow(f, c.flushAdvice())
		case gone == 0 && finished:
			f.outcome = cancelReadWhole
			return cancelRow(f, nil)
		case time.Now().After(deadline):
			f.outcome = cancelStreaming
			return cancelRow(f, nil)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// emittedBy counts the tokens of tm emitted by at.
func emittedBy(tm *emission.Times, at int64) int {
	n := 0
	for k := range tm.Len() {
		if e := tm.At(k); e != 0 && e <= at {
			n++
		}
	}
	return n
}

// releasedBefore counts the tokens of rec that arrived before the
// upstream emitted its last one (tm): what the gateway let through while
// the stream was still being emitted.
func releasedBefore(rec *result.Request, tm *emission.Times) int64 {
	var last int64
	for k := range tm.Len() {
		last = max(last, tm.At(k))
	}
	var n int64
	for _, t := range rec.Tokens {
		if t.Arrived < last {
			n++
		}
	}
	return n
}

// emittedAfter counts the tokens of tm emitted after at.
func emittedAfter(tm *emission.Times, at int64) int {
	n := 0
	for k := range tm.Len() {
		if tm.At(k) > at {
			n++
		}
	}
	return n
}

func (c *checker) largeBody(ctx context.Context) Row {
	sp := spec{tokens: ShortTokens, promptBytes: LargeBodyBytes}
	rec := c.do(ctx, sp, "body")
	sp.direct = true
	ref := c.do(ctx, sp, "bodyref")
	ttft := func(r *result.Request) time.Duration {
		if len(r.Tokens) == 0 {
			return 0
		}
		return time.Duration(r.Tokens[0].Arrived - r.Start)
	}
	return withKinds(largeBodyRow(rec.OK(), ttft(rec), ttft(ref), ref.OK(), failureTexts(rec)), rec, ref)
}

func (c *checker) keepalive(ctx context.Context) Row {
	q := c.request(spec{tokens: ShortTokens, keepAlive: true}, "ka")
	s := q.NewSession()
	defer s.Close()
	var recs []*result.Request
	for range 3 {
		rec := &result.Request{Batch: "gw", Index: int(c.seq.Add(1))}
		s.Do(ctx, rec)
		recs = append(recs, rec)
	}
	f := keepaliveFacts{failures: failureTexts(recs...)}
	for _, r := range recs[1:] {
		if r.Reused {
			f.reused++
		}
		f.reuseFailed = f.reuseFailed || r.ReuseFailed
	}
	for _, r := range recs {
		f.poisoned = f.poisoned || r.Poisoned
	}
	return withKinds(keepaliveRow(f), recs...)
}

func (c *checker) longSilence(ctx context.Context) Row {
	after, pause := int64(2), float64(LongSilence/time.Millisecond)
	return c.silent(ctx, spec{tokens: 4, faults: api.Faults{StallAfter: &after, StallMs: &pause}}, "lsil", "mid-answer")
}

func (c *checker) longFirstToken(ctx context.Context) Row {
	after, pause := int64(0), float64(LongSilence/time.Millisecond)
	return c.silent(ctx, spec{tokens: 4, faults: api.Faults{StallAfter: &after, StallMs: &pause}}, "lfirst", "before the first token")
}

// silent runs a stream with a silence of LongSilence.
func (c *checker) silent(ctx context.Context, sp spec, tag, where string) Row {
	sp.timeout = LongSilence + RequestTimeout
	start := time.Now()
	rec := c.do(ctx, sp, tag)
	return withKinds(silenceRow(where, rec.OK(), time.Since(start), failureTexts(rec)), rec)
}
