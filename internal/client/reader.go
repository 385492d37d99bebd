package client

import (
	"bytes"
	"errors"
	"io"
	"net/textproto"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/wire"
)

// reader is the response parser of one request: head, then chunked or raw
// body (gzip-decoded if need be), then SSE events read by the WHATWG rules
// (wire.EventReader), then the dialect's events, whose content goes to the
// matcher.
type reader struct {
	rec      *result.Request
	received *atomic.Int64
	dialect  api.Dialect

	head    []byte // head bytes gathered until it is complete
	gotHead bool
	lineOK  bool // the first line of the head being gathered is a status line
	interim int  // bytes of the interim (1xx) heads skipped so far
	chunked bool
	dechunk wire.ChunkedDecoder
	// The body's framing is followed to its end: remain is what a
	// Content-Length body still owes (-1: no length), and the end of a
	// chunked body ends the response.
	remain    int64
	closes    bool   // the head announced that the connection closes after it
	drainable bool   // the response ended inside a framed body, its framing intact: drain may follow
	rest      []byte // the Read's bytes after the point where the response ended, not yet taken by the framing
	events    wire.EventReader
	// upgrade, when set, takes the head of a 101 or 2xx answer to a
	// WebSocket upgrade (wsExchange.upgraded); true: the request failed.
	upgrade func(h wire.ResponseHead) bool
	gunzip  *inflater // set when the body is gzip-encoded
	readIdx int32     // index of the Read being processed
	now     int64     // its arrival time

	text []byte // an escaped content string, resolved

	// The content of each phase, followed against what the server emits:
	// the visible text, the reasoning, the tool call's arguments. base is
	// the Index of each phase's first token (rec.Reasoning and
	// rec.ToolCall lay them out); extra counts the bytes of a phase that
	// was not asked for (rec.Reasoning or rec.ToolCall 0).
	match     matcher
	phases    *phaseMatchers // nil when neither a reasoning nor a tool call was asked for
	base      [api.NumPhases]int32
	extra     [api.NumPhases]int64
	finished  bool // a finish event arrived
	usage     bool // a usage object arrived
	wantUsage bool
	// instanceProblem is what is wrong with the server instance the
	// response names (rec.Instance): events from two instances, or an id
	// that is none; "" when nothing.
	instanceProblem string

	// A non-2xx response whose body may say why (failing): status is its
	// failure, completed with the start of the body (statusBody, up to
	// statusBodyBytes) once that has arrived, the body has ended, or the
	// session has waited long enough (statusFailure).
	failing    bool
	status     result.Failure
	statusBody []byte
	statusHTML bool
}

// phaseMatchers follow the phases before the text: the reasoning and the
// tool call's arguments. A reader has them only when they were asked for:
// a quarter of its size, for thousands of readers at once.
type phaseMatchers struct {
	reasoning matcher
	args      argMatcher
}

func newReader(rec *result.Request, o *Options) *reader {
	rec.Reasoning, rec.ToolCall = max(o.Reasoning, 0), max(o.ToolCall, 0)
	r := &reader{
		rec:       rec,
		received:  o.Received,
		dialect:   o.Dialect,
		match:     newTextMatcher(o.ExpectTokens, o.Faults.Text),
		base:      [...]int32{0, int32(rec.Reasoning), int32(rec.Reasoning + rec.ToolCall)},
		wantUsage: o.IncludeUsage,
		remain:    -1,
	}
	if rec.Reasoning > 0 || rec.ToolCall > 0 {
		r.phases = &phaseMatchers{
			reasoning: newPhaseMatcher(api.PhaseReasoning, rec.Reasoning),
			args:      newArgMatcher(rec.ToolCall),
		}
	}
	return r
}

// feed processes one Read's bytes, all arrived at now. It returns true when
// the request has ended (rec.Failure set).
func (r *reader) feed(p []byte, now int64) bool {
	defer r.endRead(r.beginRead(p, now))
	if !r.gotHead { // the test inline: headOf is not, and every Read passes here
		var ended, wait bool
		if p, ended, wait = r.headOf(p); wait {
			return ended
		}
	}
	return r.body(p, now)
}

// headOf hands p to the head parser until the head is complete. It returns
// the bytes that follow the head (all of p once it was parsed), or wait
// true when there are none to take yet: the head is incomplete, or the
// request ended (ended).
func (r *reader) headOf(p []byte) (body []byte, ended, wait bool) {
	if r.gotHead {
		return p, false, false
	}
	if p, ended = r.readHead(p); ended || !r.gotHead {
		return nil, ended, true
	}
	// The head is parsed: its buffer goes (body, and r.rest after it,
	// may still point into it, for the drain that follows at once).
	r.head = nil
	return p, false, false
}

// expectUpgrade makes r the reader of a request over WebSocket: up takes
// the head of the answer to the upgrade; on a kept connection (open) no
// head comes, the frames follow at once.
func (r *reader) expectUpgrade(up func(h wire.ResponseHead) bool, open bool) {
	r.upgrade = up
	r.gotHead = open
}

// statusFailing reports whether the response is a non-2xx one, whose body
// is read for a while to say why.
func (r *reader) statusFailing() bool { return r.failing }

// keepable reports whether the connection may carry another request once
// the response ended: its head arrived, announced no close, and its status
// did not fail.
func (r *reader) keepable() bool { return r.gotHead && !r.closes && !r.failing }

// framed reports whether the response ended inside a framed body with its
// framing intact, so that drainRest may read on to its end.
func (r *reader) framed() bool { return r.drainable }

// drainRest drains the bytes of the last Read that followed the point
// where the response ended (see drain), once.
func (r *reader) drainRest() (done bool, err error) {
	p := r.rest
	r.rest = nil
	return r.drain(p)
}

// beginRead accounts for the bytes p of a Read that returned at now, before
// they are parsed; it returns what endRead needs.
func (r *reader) beginRead(p []byte, now int64) (tokensBefore int) {
	r.rec.Bytes += int64(len(p))
	r.now = now
	r.silence(now)
	return len(r.rec.Tokens)
}

// endRead accounts for the tokens the Read delivered, once parsed.
func (r *reader) endRead(tokensBefore int) {
	r.readIdx++
	if got := len(r.rec.Tokens) - tokensBefore; got > 0 {
		r.rec.MaxTokensPerRead = max(r.rec.MaxTokensPerRead, got)
		if r.received != nil {
			r.received.Add(int64(got))
		}
	}
}

// readHead gathers the response head. Once it is complete it returns the
// body bytes of p that follow it; ended is true when the request has
// failed.
func (r *reader) readHead(p []byte) (body []byte, ended bool) {
	// A head that arrives whole in one Read, as nearly all do, is parsed
	// where it is (the parser copies what it keeps); one that arrives in
	// pieces is gathered in r.head.
	buf := p
	if len(r.head) > 0 {
		r.head = append(r.head, p...)
		buf = r.head
	}
	for {
		h, n, err := wire.ParseResponseHead(buf)
		if err != nil {
			r.rec.Failure = headFailure(buf, err)
			return nil, true
		}
		if n == 0 {
			if !r.lineOK {
				if !checkStatusLine(buf) {
					r.rec.Failure = badStatus(buf)
					return nil, true
				}
				r.lineOK = bytes.IndexByte(buf, '\n') >= 0
			}
			if len(r.head) == 0 {
				r.head = append(r.head, buf...)
			}
			return nil, false
		}
		if h.IsInformational() {
			// 100 Continue, 103 Early Hints: skipped, within the bound
			// of one head in all.
			if r.interim += n; r.interim >= wire.MaxHeadBytes {
				r.rec.Failure = result.Failure{Kind: result.HeadTooLarge}
				return nil, true
			}
			buf, r.lineOK = buf[n:], false
			if len(r.head) > 0 {
				r.head = buf
			}
			continue
		}
		r.rec.HeadAt = r.now
		r.rec.Timing = timingHeaders(h.Values)
		r.headInstance(h.Values)
		r.rec.GatewayHeaders = gatewayHeaders(headFields(h.Fields))
		if h.Proto != "" {
			r.rec.Proto = ownProto(h.Proto)
		}
		r.gotHead = true
		r.chunked = h.Chunked
		r.closes = h.Close
		if !h.Chunked && h.ContentLength >= 0 {
			r.remain = h.ContentLength
		}
		if r.upgrade != nil && (h.StatusCode == 101 || h.StatusCode/100 == 2) {
			return buf[n:], r.upgrade(h)
		}
		if h.StatusCode < 200 || h.StatusCode > 299 {
			return buf[n:], r.nonSuccess(h.StatusCode, badStatus(buf), h.Header)
		}
		if r.encoding(h.Header("Content-Encoding")) {
			return nil, true
		}
		return buf[n:], false
	}
}

// ownProto returns the protocol of a head as a string of its own: h.Proto
// is cut from the whole head, which the record would otherwise keep alive
// as long as itself (thousands of records in flight).
func ownProto(p string) string {
	switch p {
	case ProtoHTTP1:
		return ProtoHTTP1
	case "HTTP/1.0":
		return "HTTP/1.0"
	}
	return strings.Clone(p)
}

// nonSuccess handles the head of a final response with a status other than
// 2xx, whose failure is status: a redirect with a Location is reported as
// one (not followed); otherwise, when the body is worth quoting, the
// reader goes on to gather its start (failing). It returns true when the
// request has ended.
func (r *reader) nonSuccess(code int, status result.Failure, header func(string) string) bool {
	if code >= 300 && code <= 399 {
		if loc := header("Location"); loc != "" {
			r.rec.Failure = redirect(code, loc)
			return true
		}
	}
	r.status = status
	if !hasBody(code) || !quotable(header("Content-Encoding"), header("Content-Type")) {
		r.rec.Failure = status
		return true
	}
	r.failing = true
	r.statusHTML = isHTML(header("Content-Type"))
	return false
}

// statusFailure is the failure of a failing response, with what has
// arrived of its body.
func (r *reader) statusFailure() result.Failure {
	return withExcerpt(r.status, r.statusBody, r.statusHTML)
}

// collect keeps the start of a failing response's body. It returns true
// once it has kept enough.
func (r *reader) collect(data []byte) bool {
	room := statusBodyBytes - len(r.statusBody)
	r.statusBody = append(r.statusBody, data[:min(len(data), room)]...)
	return len(r.statusBody) >= statusBodyBytes
}

// encoding sets the body's decoder for Content-Encoding enc. It returns
// true (the request failed) for an encoding the client cannot decode.
func (r *reader) encoding(enc string) bool {
	switch enc {
	case "", "identity":
	case "gzip", "x-gzip":
		r.rec.Encoding = "gzip"
		r.gunzip = newInflater(func(p []byte) bool { return r.sse(p, r.now) })
	default:
		r.rec.Failure = result.Failure{Kind: result.BadFraming, Detail: "unsupported Content-Encoding " + strconv.Quote(enc)}
		return true
	}
	return false
}

// h2Head takes the head of an HTTP/2 response (the transport parsed it)
// that arrived at now: its status code, status line ("HTTP/2.0 200 OK")
// and fields (every value of a field, by canonical name). It returns true when the
// request has failed.
func (r *reader) h2Head(code int, statusLine string, fields map[string][]string, now int64) bool {
	values := func(name string) []string { return textproto.MIMEHeader(fields).Values(name) }
	r.now = now
	r.rec.HeadAt = now
	r.rec.Timing = timingHeaders(values)
	r.headInstance(values)
	r.rec.GatewayHeaders = gatewayHeaders(mapFields(fields))
	r.gotHead = true
	header := func(name string) string { return firstValue(values, name) }
	if code < 200 || code > 299 {
		return r.nonSuccess(code, badStatus([]byte(statusLine)), header)
	}
	return r.encoding(header("Content-Encoding"))
}

// body de-chunks p if needed and hands the data to the SSE splitter,
// through the gzip decoder when the body is compressed. When it returns
// true inside a framed body, rest holds the bytes of p the framing has not
// taken yet, and drainable says whether drain may go on from there.
func (r *reader) body(p []byte, now int64) bool {
	r.now = now
	switch {
	case r.chunked:
		return r.chunkedBody(p, now)
	case r.remain >= 0:
		n := min(int64(len(p)), r.remain)
		r.remain -= n
		data := p[:n]
		r.rest = p[n:]
		if len(data) > 0 && r.data(data, now) {
			r.drainable = true
			return true
		}
		if r.remain == 0 { // the whole body, and no terminal event
			r.rec.Failure = r.endOfBody()
			r.drainable = true
			return true
		}
		return false
	}
	return r.data(p, now)
}

// data takes body bytes, de-chunked: the stream's, or the start of a
// failing response's body.
func (r *reader) data(p []byte, now int64) bool {
	if r.failing {
		if r.collect(p) {
			r.rec.Failure = r.statusFailure()
			return true
		}
		return false
	}
	return r.decoded(p, now)
}

// chunkedBody is body for a chunked body.
func (r *reader) chunkedBody(p []byte, now int64) bool {
	for len(p) > 0 && !r.dechunk.Done() {
		data, used, err := r.dechunk.Next(p)
		if errors.Is(err, io.EOF) {
			r.rest = p[used:]
			r.rec.Failure = r.endOfBody()
			r.drainable = true
			return true
		}
		if err != nil {
			r.rec.Failure = result.Failure{Kind: result.BadFraming, Detail: err.Error()}
			if r.failing {
				r.rec.Failure = r.statusFailure()
			}
			return true
		}
		p = p[used:]
		if len(data) > 0 && r.data(data, now) {
			r.rest = p
			r.drainable = true
			return true
		}
	}
	return false
}

// endOfBody is the failure of a framed body that ended before the terminal
// event (a kept-alive connection does not close to say so), or that of a
// failing response, whose body has ended. The record says the body ended
// (rec.BodyEnded): the peer ended the response, it was not cut.
func (r *reader) endOfBody() result.Failure {
	r.rec.BodyEnded = true
	if r.failing {
		return r.statusFailure()
	}
	return result.Failure{Kind: result.ClosedBeforeDone, Detail: terminalName(r.dialect)}
}

// Errors of drain: the connection cannot carry another request.
var (
	errTrailingBytes = errors.New("bytes after the end of the response")
	errNoFraming     = errors.New("response without framing (read until close)")
)

// drain takes the bytes that follow the point where the response ended, up
// to the end of its framing: the rest of a chunked body through its last
// chunk and trailers, or the rest of a Content-Length body. The content is
// discarded. It returns done once the framing has ended; errTrailingBytes
// when p holds bytes after that end, a chunked coding error, or
// errNoFraming for a body without framing.
func (r *reader) drain(p []byte) (done bool, err error) {
	switch {
	case r.chunked:
		for {
			_, used, err := r.dechunk.Next(p)
			if errors.Is(err, io.EOF) {
				if used < len(p) {
					return true, errTrailingBytes
				}
				return true, nil
			}
			if err != nil {
				return false, err
			}
			if p = p[used:]; len(p) == 0 {
				return false, nil
			}
		}
	case r.remain >= 0:
		n := min(int64(len(p)), r.remain)
		r.remain -= n
		if r.remain > 0 {
			return false, nil
		}
		if int(n) < len(p) {
			return true, errTrailingBytes
		}
		return true, nil
	}
	return false, errNoFraming
}

// decoded passes body bytes to the SSE splitter, decompressing them first
// when the body is gzip-encoded.
func (r *reader) decoded(data []byte, now int64) bool {
	if r.gunzip == nil {
		return r.sse(data, now)
	}
	if r.gunzip.feed(data) {
		return false
	}
	if errors.Is(r.gunzip.err, errSinkEnded) {
		return true // the sink saw the end of the stream or a failure
	}
	if errors.Is(r.gunzip.err, io.EOF) { // the compressed stream ended before the terminal event
		r.rec.Failure = r.endOfBody()
		return true
	}
	r.rec.Failure = result.Failure{Kind: result.BadFraming, Detail: "gzip: " + r.gunzip.err.Error()}
	return true
}

// close releases what the reader holds (the gzip decoder's goroutine).
func (r *reader) close() {
	if r.gunzip != nil {
		r.gunzip.close()
	}
}

// sse reads data as SSE events and hands each to dataEvent; the events it
// completes all arrived at now. The record's framing is brought up to
// date when the reader says it has changed.
func (r *reader) sse(data []byte, now int64) bool {
	r.events.Feed(data)
	ended := false
	for !ended {
		ev, ok := r.events.Next()
		if !ok {
			break
		}
		if string(ev.Type) == "ping" {
			r.rec.Pings++
		}
		ended = r.dataEvent(ev.Type, ev.Data, now)
	}
	if r.events.Changed() {
		r.copyFraming()
	}
	if err := r.events.Err(); err != nil && !ended {
		r.rec.Failure = result.Failure{Kind: result.BadFraming, Detail: err.Error()}
		return true
	}
	return ended
}

// copyFraming copies the reader's framing counts, comments and retry to
// the record, and the last event ID when it differs (a copy).
func (r *reader) copyFraming() {
	r.rec.Framing = result.Framing(r.events.Framing())
	r.rec.Comments = r.events.Comments()
	if id := r.events.LastEventID(); string(id) != r.rec.LastEventID {
		r.rec.LastEventID = string(id)
	}
	if ms, ok := r.events.Retry(); ok {
		r.rec.RetryMs = ms
	}
}

// dataEvent counts and handles one event's data: a dispatched SSE event
// of type name ("" for the default), or a WebSocket text message (no
// name). It returns true when the stream has ended.
func (r *reader) dataEvent(name, payload []byte, now int64) bool {
	r.rec.Events++
	if r.rec.FirstEventAt == 0 && string(name) != "ping" {
		r.rec.FirstEventAt = now
	}
	return r.handle(name, payload, now)
}

// silence records, for a Read that returned data at now, the time
// without a byte before it (from the request's write, for the first).
func (r *reader) silence(now int64) {
	last := r.rec.LastReadAt
	if last == 0 {
		last = r.rec.Sent
	}
	if last > 0 && now-last > r.rec.MaxSilence {
		r.rec.MaxSilence = now - last
	}
	r.rec.PrevReadAt, r.rec.LastReadAt = r.rec.LastReadAt, now
}

// maxQuotedEvent bounds what a failure quotes of an event.
const maxQuotedEvent = 200

// handle scans the data of one event of type name. It returns true when
// the stream has ended (rec.Failure set: ok or not).
func (r *reader) handle(name, payload []byte, now int64) bool {
	ev := api.ScanEvent(r.dialect, name, payload)
	if ev.Flags&api.Malformed != 0 {
		r.rec.Failure = result.Failure{Kind: result.BadFraming, Detail: "unreadable reasoning or tool-call event: " + quote(name, payload)}
		return true
	}
	if ev.Instance != nil {
		r.sawInstance(ev.Instance)
	}
	if ev.Flags&(api.HasContent|api.HasReasoning|api.HasArguments) != 0 {
		// In phase order, should a gateway have merged phases into one
		// event; the event's pi_ts is then no single token's.
		piTs := ev.PiTs
		if texts := min(len(ev.Reasoning), 1) + min(len(ev.Arguments), 1) + min(len(ev.Content), 1); texts > 1 {
			piTs = 0
		}
		for p := range api.Phase(api.NumPhases) {
			text, escaped := ev.Text(p)
			if len(text) == 0 {
				continue
			}
			if escaped {
				r.text, _ = api.AppendUnescaped(r.text[:0], text)
				text = r.text
			}
			r.content(p, text, piTs, now)
		}
	}
	if ev.Flags&api.Finish != 0 {
		r.finished = true
	}
	switch {
	case ev.Flags&api.Usage != 0:
		r.usage = true
		r.keepUsage(usagePartOf(r.dialect), payload)
	case r.dialect == api.Anthropic && ev.Flags&(api.HasContent|api.HasReasoning|api.HasArguments) == 0 && messageStart(name, payload):
		r.keepUsage(api.UsageStart, payload)
	}
	switch {
	case ev.Flags&api.Failed != 0:
		r.rec.Failure = result.Failure{Kind: result.StreamError, Detail: printable(api.EventDescription(name, payload), true, 0)}
		return true
	case ev.Flags&api.Terminal != 0:
		r.rec.Failure = r.verdict()
		return true
	}
	return false
}

// usagePartOf is the usage object a usage-bearing event of dialect d
// carries (api.Usage flags Anthropic's message_delta, not message_start).
func usagePartOf(d api.Dialect) api.UsagePart {
	switch d {
	case api.Responses:
		return api.UsageCompleted
	case api.Anthropic:
		return api.UsageDelta
	}
	return api.UsageChunk
}

// messageStart reports whether an event of type name is Anthropic's
// message_start, by its name or, when a gateway dropped the name, its type.
func messageStart(name, payload []byte) bool {
	const start = "message_start"
	if len(name) > 0 {
		return string(name) == start
	}
	return bytes.HasPrefix(payload, []byte(`{"type":"`+start+`"`))
}

// quote renders an event for a failure text: its name and payload,
// escaped and bounded.
func quote(name, payload []byte) string {
	s := string(payload)
	if len(name) > 0 {
		s = "event: " + string(name) + " data: " + s
	}
	return printable(s, true, maxQuotedEvent)
}

// content matches the text of phase p in one event against the expected
// text and records the tokens it completes. The event's pi_ts is used only
// when the event carried exactly one whole token.
func (r *reader) content(p api.Phase, text []byte, piTs int64, now int64) {
	if at := [...]*int64{&r.rec.FirstReasoningAt, &r.rec.FirstToolCallAt, &r.rec.FirstTextAt}[p]; *at == 0 {
		*at = now
	}
	var first, n int
	var whole bool
	switch {
	case p == api.PhaseReasoning && r.rec.Reasoning > 0:
		first, n, whole = r.phases.reasoning.feed(text)
	case p == api.PhaseToolCall && r.rec.ToolCall > 0:
		first, n, whole = r.phases.args.feed(text)
	case p == api.PhaseText:
		first, n, whole = r.match.feed(text)
	default: // a phase that was not asked for
		r.extra[p] += int64(len(text))
		return
	}
	r.rec.AppendTokens(n, r.base[p]+int32(first), r.readIdx, now)
	if whole && n == 1 && piTs > 0 {
		r.rec.Tokens[len(r.rec.Tokens)-1].Emitted = piTs
		r.rec.ByPiTs++
	}
}

// headInstance takes the server instance a response head names
// (api.InstanceHeader), from values (every value of a field, by name).
func (r *reader) headInstance(values func(name string) []string) {
	if v := firstValue(values, api.InstanceHeader); v != "" {
		r.sawInstance([]byte(v))
	}
}

// sawInstance takes the server instance an event or the head names: the
// first becomes the record's (one allocation per request); another, or one
// that is no instance id, is an integrity problem. It does not allocate
// for an id equal to the record's.
func (r *reader) sawInstance(id []byte) {
	switch {
	case r.instanceProblem != "":
	case r.rec.Instance == "" && !api.ValidID(string(id)):
		r.instanceProblem = `the server instance named is no instance id: "` + printable(string(id), true, api.MaxIDLen) + `"`
	case r.rec.Instance == "":
		r.rec.Instance = string(id)
	case string(id) != r.rec.Instance:
		r.instanceProblem = "events from two server instances (" + strconv.Quote(r.rec.Instance) + `, then "` +
			printable(string(id), true, api.MaxIDLen) + `"): a gateway that mixed two upstream streams`
	}
}

// verdict is the outcome of a stream that ended with its terminal event:
// ok, or what it lacked.
func (r *reader) verdict() result.Failure {
	if r.instanceProblem != "" {
		return result.Failure{Kind: result.Integrity, Detail: r.instanceProblem}
	}
	if r.match.received == 0 && (r.phases == nil || r.phases.reasoning.received == 0 && r.phases.args.received == 0) && r.extra == [api.NumPhases]int64{} {
		return result.Failure{Kind: result.NoTokens}
	}
	if p := r.phaseProblem(); p != "" {
		return result.Failure{Kind: result.Integrity, Detail: p}
	}
	if p := r.match.problem(); p != "" {
		r.rec.ReasoningAsText = r.reasoningInText()
		return result.Failure{Kind: result.Integrity, Detail: p}
	}
	if len(r.rec.Tokens) == 0 {
		return result.Failure{Kind: result.NoTokens}
	}
	if !r.finished {
		return result.Failure{Kind: result.Integrity, Detail: "no finish event"}
	}
	if r.wantUsage && !r.usage {
		return result.Failure{Kind: result.Integrity, Detail: "no usage although it was asked for"}
	}
	return result.Failure{}
}

// phaseProblem returns what is wrong with the phases before the text, in
// their order, "" when nothing: a phase that came although none was asked
// for; a reasoning that came but differs from the emitted one (one that
// did not come at all is no failure: gateways drop reasoning, and the
// record shows it); a tool call whose arguments differ from the emitted
// JSON, or that did not come.
func (r *reader) phaseProblem() string {
	if n := r.extra[api.PhaseReasoning]; n > 0 {
		return "reasoning: " + unasked(n)
	}
	if r.rec.Reasoning > 0 && r.phases.reasoning.received > 0 {
		if p := r.phases.reasoning.problem(); p != "" {
			return "reasoning: " + p
		}
	}
	if n := r.extra[api.PhaseToolCall]; n > 0 {
		return "tool call: " + unasked(n)
	}
	if r.rec.ToolCall > 0 {
		if p := r.phases.args.problem(); p != "" {
			return "tool call: " + p
		}
	}
	return ""
}

// reasoningInText reports whether reasoning was asked for, none came as
// reasoning, and the visible text, which differs from the expected one,
// carries the reasoning's first word (a gateway turned it into content,
// with or without <think> tags; the text's words are lower case).
func (r *reader) reasoningInText() bool {
	if r.rec.Reasoning == 0 || r.phases.reasoning.received > 0 || !r.match.diverged {
		return false
	}
	return bytes.Contains(r.match.rest, phaseWords[api.PhaseReasoning][:api.TokenLen])
}

func unasked(n int64) string { return strconv.FormatInt(n, 10) + " bytes received, none asked for" }

// endOfStream classifies a Read error that arrived before the terminal
// event.
func (r *reader) endOfStream(err error) result.Failure {
	if r.failing {
		return r.statusFailure()
	}
	if !errors.Is(err, io.EOF) {
		return sysFailure(result.RecvError, "", err)
	}
	if !r.gotHead {
		return result.Failure{Kind: result.ShortResponse}
	}
	return result.Failure{Kind: result.ClosedBeforeDone, Detail: terminalName(r.dialect)}
}

// terminalName names the event that ends a stream of dialect d when it is
// not [DONE] ("" for [DONE], whose failure text is the reference's).
func terminalName(d api.Dialect) string {
	switch d {
	case api.Responses:
		return "response.completed"
	case api.Anthropic:
		return "message_stop"
	}
	return ""
}
