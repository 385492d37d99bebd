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

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/client"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/failures"
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

// The scenarios' thresholds.
const (
	// FirstTokenHoldNs: a first event later than this after its emission
	// (beyond the calibration's, p50 over the streams) is held — on its own
	// (a first-token hold) when it is also this much and
	// verdict.HoldFactor times later than the following tokens, else by the
	// gateway's buffering. Five times the verdict's HoldMinNs: a gateway
	// that holds the first event (to inspect, route, moderate it) holds it
	// for hundreds of milliseconds, while a busy machine wakes a gateway's
	// worker tens of milliseconds late.
	FirstTokenHoldNs = 50_000_000
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
	{name: "usage", title: "usage passes through when asked", run: (*checker).usage},
	{name: "usage-fidelity", title: "usage and cache figures arrive as the server sent them", run: (*checker).usageFidelity},
	{name: "terminal", title: "the terminal event passes", run: (*checker).terminal},
	{name: "upstream-cut", title: "an upstream cut reaches the client", run: (*checker).upstreamCut},
	{name: "error-status", title: "upstream 429 and 500 pass through with their body", run: (*checker).errorStatus},
	{name: "cancel", title: "a client's cancel reaches the upstream within 1 s", run: (*checker).cancel},
	{name: "large-body", title: "a 1 MB request body: time to first token", run: (*checker).largeBody},
	{name: "keepalive", title: "the connection is reused after the terminal event", run: (*checker).keepalive},
	{name: "compression", title: "event-stream compression, when negotiated, flushes every event", run: (*checker).compression},
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

// describeFailures words the distinct failures of recs as the run's
// failure summary does, each with its text (failures.Describe).
func describeFailures(recs ...*result.Request) []string { return distinct(recs, failures.Describe) }

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

// failed is the row of a scenario whose requests failed where they should
// not have: its evidence names what went wrong as the run's failure
// summary does.
func failed(recs []*result.Request, what, fix string) Row {
	return Row{Status: Fail, Evidence: what + ": " + strings.Join(describeFailures(recs...), "; "), Fix: fix, Requests: len(recs),
		Failures: failureTexts(recs...), FailureKinds: failureKinds(recs...)}
}

func (c *checker) largeEvent(ctx context.Context) Row {
	size := int64(LargeEventBytes)
	rec := c.do(ctx, spec{tokens: ShortTokens, faults: api.Faults{EventBytes: &size}}, "big")
	const fix = "raise the gateway's limit on one SSE line or event above 64 KB " +
		"(Go's bufio.Scanner stops at 64 KB unless given a larger buffer)"
	switch {
	case !rec.OK():
		return failed([]*result.Request{rec}, "the stream with a 64 KB event failed", fix)
	case rec.Bytes < LargeEventBytes:
		return Row{Status: Warn, Requests: 1, Evidence: fmt.Sprintf("the tokens arrived, but the stream was %d bytes: the gateway rebuilt the 64 KB event", rec.Bytes),
			Fix: "the gateway re-serialises events (dropping fields it does not know): fine for the tokens, not for extension fields"}
	}
	return Row{Status: Pass, Requests: 1, Evidence: fmt.Sprintf("all tokens, %d bytes: the 64 KB event arrived whole", rec.Bytes)}
}

func (c *checker) utf8Split(ctx context.Context) Row {
	gap := 2.0
	rec := c.do(ctx, spec{tokens: 8, faults: api.Faults{Text: api.TextUTF8, Split: []int{api.SplitInChar}, SplitGapMs: &gap}}, "utf8")
	if !rec.OK() {
		fix := fixRelay
		if rec.Failure.Kind == result.Integrity {
			fix = "decode UTF-8 incrementally across reads (a streaming decoder), never each read on its own"
		}
		return failed([]*result.Request{rec}, "each token's event split inside its first character, 2 ms apart", fix)
	}
	return Row{Status: Pass, Requests: 1, Evidence: "8 tokens of 2-byte characters, each event split inside one, arrived intact"}
}

func (c *checker) lineEndings(ctx context.Context) Row {
	on := true
	crlf := c.do(ctx, spec{tokens: ShortTokens, faults: api.Faults{LineEnd: api.LineEndCRLF, Comments: &on}}, "crlf")
	cr := c.do(ctx, spec{tokens: ShortTokens, faults: api.Faults{LineEnd: api.LineEndCR, Comments: &on}}, "cr")
	recs := []*result.Request{crlf, cr}
	if len(failureTexts(recs...)) > 0 {
		var what []string
		if !crlf.OK() {
			what = append(what, "CRLF")
		}
		if !cr.OK() {
			what = append(what, "CR")
		}
		return failed(recs, "the stream with "+strings.Join(what, " and ")+" line endings failed",
			"parse SSE per the specification: lines end in CRLF, LF or CR; lines starting with ':' are comments")
	}
	comments := "the comments were dropped"
	if crlf.Comments > 0 && cr.Comments > 0 {
		comments = "the comments passed"
	}
	return Row{Status: Pass, Requests: 2, Evidence: "CRLF and CR line endings, a comment before every event: all tokens; " + comments}
}

func (c *checker) usage(ctx context.Context) Row {
	rec := c.do(ctx, spec{tokens: ShortTokens, usage: true}, "usage")
	if !rec.OK() {
		return failed([]*result.Request{rec}, "a stream asking for usage", "pass the usage request upstream (stream_options.include_usage) "+
			"and the usage event back")
	}
	return Row{Status: Pass, Requests: 1, Evidence: "the usage arrived with the stream that asked for it"}
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
	const fix = "pass the upstream's usage object on unchanged: keep prompt_tokens_details and the cache fields, a null as null (no figure is not zero), " +
		"and the upstream's counts rather than the gateway's own"
	var found []string
	for _, rec := range recs {
		switch {
		case !rec.OK():
			return failed(recs, "a stream asking for usage", fix)
		case rec.Usage == nil || !rec.Usage.Compared:
			return Row{Status: Warn, Requests: len(recs), Evidence: "the server's record of the usage it sent was not found: nothing to compare"}
		}
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
	if len(found) > 0 {
		return Row{Status: Fail, Requests: len(recs), Evidence: "the usage was rewritten: " + strings.Join(found, "; "), Fix: fix}
	}
	return Row{Status: Pass, Requests: len(recs), Evidence: fmt.Sprintf("every usage field arrived as sent, a cache figure (%d) and a null alike", FieldReportCached)}
}

func (c *checker) terminal(ctx context.Context) Row {
	rec := c.do(ctx, spec{tokens: ShortTokens}, "term")
	if !rec.OK() {
		return failed([]*result.Request{rec}, "a plain stream", "pass the upstream's end events ([DONE], message_stop, response.completed) unchanged")
	}
	return Row{Status: Pass, Requests: 1, Evidence: "the stream ended with its terminal event, every token intact"}
}

func (c *checker) upstreamCut(ctx context.Context) Row {
	cut := int64(3)
	rec := c.do(ctx, spec{tokens: 10, faults: api.Faults{CutAfter: &cut}}, "cut")
	row := Row{Requests: 1, Failures: failureTexts(rec), FailureKinds: failureKinds(rec)}
	const fix = "when the upstream fails mid-stream, send an error event or abort the client's connection — never end the response normally"
	f := rec.Failure
	switch {
	case f.Kind == result.StreamError:
		row.Status, row.Evidence = Pass, fmt.Sprintf("an error event after %d tokens: %s", len(rec.Tokens), f.Detail)
	case f.Kind == result.ClosedBeforeDone && !rec.BodyEnded, f.Kind == result.RecvError:
		row.Status, row.Evidence = Pass, fmt.Sprintf("the response was cut after %d tokens, without a terminal event", len(rec.Tokens))
	case f.Kind == result.ClosedBeforeDone:
		row.Status, row.Fix = Fail, fix
		row.Evidence = fmt.Sprintf("the gateway ended its response cleanly after %d of 10 tokens — no error event, no terminal event: "+
			"a client cannot tell the answer was cut", len(rec.Tokens))
	case f.Kind == result.Integrity || f.Kind == result.OK:
		row.Status, row.Fix = Fail, fix
		row.Evidence = fmt.Sprintf("the gateway ended the stream with a terminal event after %d of 10 tokens: it hides the cut (%s)",
			len(rec.Tokens), f.Error())
	default:
		row.Status, row.Fix = Warn, fix
		row.Evidence = "the stream cut upstream after 3 tokens ended as: " + failures.Describe(rec)
	}
	return row
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
	if len(bad) > 0 {
		return Row{Status: Fail, Requests: len(recs), Failures: failureTexts(recs...), FailureKinds: failureKinds(recs...), Evidence: strings.Join(bad, "; "),
			Fix: "pass the upstream's status and error body through: clients retry a 429 or a 529 and show the message"}
	}
	return Row{Status: Pass, Requests: len(recs), Evidence: strings.Join(good, ", ") + " passed through with the upstream's error body"}
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

func (c *checker) cancel(ctx context.Context) Row {
	var received atomic.Int64
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	q := c.request(spec{tokens: CancelTokens, received: &received, noRegistry: true}, "cancel")
	rec := &result.Request{Batch: "gw", Index: int(c.seq.Add(1))}
	done := make(chan struct{})
	go func() { defer close(done); q.Do(rctx, rec) }()
	// Cancel once the stream runs: a few tokens in.
	var cancelled int64
	for cancelled == 0 {
		select {
		case <-done:
			return failed([]*result.Request{rec}, "the stream to cancel ended first", fixRelay)
		case <-time.After(time.Millisecond):
			if received.Load() >= CancelAfterTokens {
				cancelled = clock.Now()
				cancel()
			}
		}
	}
	<-done
	deadline := time.Now().Add(CancelWithin)
	for {
		tm := c.reg.Lookup(rec.ID)
		gone, finished := tm.GoneAt(), tm.Finished()
		switch {
		case gone != 0 && gone-cancelled <= int64(CancelWithin):
			return Row{Status: Pass, Requests: 1, Evidence: fmt.Sprintf("the upstream saw its client go %.1f ms after the cancel", ms(gone-cancelled))}
		case gone == 0 && finished || time.Now().After(deadline):
			const fix = "close the upstream connection (or cancel the upstream request) when the client goes away: " +
				"otherwise the upstream generates, and bills, the whole answer"
			emitted := 0
			for k := range tm.Len() {
				if at := tm.At(k); at > cancelled {
					emitted++
				}
			}
			what := fmt.Sprintf("the upstream still streamed %v after the client cancelled", CancelWithin)
			if finished && gone == 0 {
				what = "the gateway read the upstream's whole stream after the client cancelled"
			}
			return Row{Status: Fail, Requests: 1, Fix: fix,
				Evidence: fmt.Sprintf("%s: %d tokens emitted after the cancel", what, emitted)}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (c *checker) largeBody(ctx context.Context) Row {
	sp := spec{tokens: ShortTokens, promptBytes: LargeBodyBytes}
	rec := c.do(ctx, sp, "body")
	sp.direct = true
	ref := c.do(ctx, sp, "bodyref")
	const fix = "let the gateway take request bodies of a few MB (nginx: client_max_body_size; its default 1m is tight) " +
		"and forward them without re-reading them"
	if !rec.OK() {
		return failed([]*result.Request{rec}, "a 1 MB prompt", fix)
	}
	ttft := func(r *result.Request) time.Duration {
		if len(r.Tokens) == 0 {
			return 0
		}
		return time.Duration(r.Tokens[0].Arrived - r.Start)
	}
	g, d := ttft(rec), ttft(ref)
	ev := fmt.Sprintf("first token %.1f ms after the request began (%.1f ms straight to the server)", ms(int64(g)), ms(int64(d)))
	if ref.OK() && g-d > LargeBodyWarn && g > LargeBodyFactor*d {
		return Row{Status: Warn, Requests: 2, Evidence: ev, Fix: "the gateway spends long on a large body: it reads, " +
			"parses or logs the whole prompt before forwarding it"}
	}
	return Row{Status: Pass, Requests: 2, Evidence: ev}
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
	if len(failureTexts(recs...)) > 0 {
		return failed(recs, "three requests on one connection", fixRelay)
	}
	reused, reuseFailed, poisoned := 0, false, false
	for _, r := range recs[1:] {
		if r.Reused {
			reused++
		}
		reuseFailed = reuseFailed || r.ReuseFailed
	}
	for _, r := range recs {
		poisoned = poisoned || r.Poisoned
	}
	switch {
	case poisoned:
		return Row{Status: Fail, Requests: 3, Evidence: "a response did not end at its framing (bytes after it, or no end): the connection could not be reused",
			Fix: "end each response at its framing (the last chunk) and send nothing after it"}
	case reuseFailed:
		return Row{Status: Fail, Requests: 3, Evidence: "the gateway closed a kept connection under the next request",
			Fix: "announce the close (Connection: close) or keep the connection open as long as its keep-alive timeout says"}
	case reused < 2:
		return Row{Status: Warn, Requests: 3, Evidence: fmt.Sprintf("%d of 2 requests reused the connection: the gateway closes it after a stream", reused),
			Fix: "keep client connections alive after a stream (nginx keepalive_timeout, haproxy option http-keep-alive)"}
	}
	return Row{Status: Pass, Requests: 3, Evidence: "3 streams on one connection, each drained to its end"}
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
	if !rec.OK() {
		row := failed([]*result.Request{rec}, fmt.Sprintf("a silence of %v %s ended the stream after %.1f s", LongSilence, where, time.Since(start).Seconds()),
			"raise the gateway's upstream read or idle timeout above the longest silence of an answer "+
				"(nginx: proxy_read_timeout, 60 s by default; haproxy: timeout server), or have the upstream send heartbeats")
		return row
	}
	return Row{Status: Pass, Requests: 1, Evidence: fmt.Sprintf("the stream survived %v of silence %s", LongSilence, where)}
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }
