package server

// Upstream faults (api.Faults): what a request asks for with its hints, or
// what Config.Faults applies to every answer. They shape the answer in four
// places: the schedule (a cut ends it after its K-th token, a stall delays
// the tokens from the K-th on: planFaults), the answer itself (an error
// status instead of a stream: writeFaultStatus), the bytes of each event
// (faultWriter: padding, line endings, comments, splits and trickles), and
// its end (a cut or an end without the end events: faultEnd). The framing
// faults (a byte order mark, several data lines, the event line after the
// data) rewrite an event as another that reads the same by the SSE
// specification (reframe).

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/schedule"
	"github.com/sse-latency/sse-latency/internal/wire"
)

// planFaults applies the faults f to the schedule p and answer a: the text
// words, a cut after CutAfter tokens (the schedule stops there; faultEnd
// cuts instead of finishing), a stall of StallMs from token StallAfter on.
func planFaults(p *schedule.Plan, a *api.Answer, f api.Faults) {
	a.Text = f.Text
	if f.CutAfter != nil {
		p.Tokens = min(p.Tokens, int(*f.CutAfter))
	}
	if f.StallMs != nil {
		p.Stall = schedule.MsToNs(*f.StallMs)
		if f.StallAfter != nil {
			p.StallAfter = int(*f.StallAfter)
		}
	}
}

// faultMessage starts the message of an injected error answer, so that a
// client can tell it passed through a gateway with its body.
const faultMessage = "sse-latency: injected upstream fault"

// writeFaultStatus answers with the status the status fault asks for and an
// error body in the dialect's shape: Anthropic's
// {"type":"error","error":{"type":…,"message":…}}, OpenAI's
// {"error":{"message":…,"type":…,"param":null,"code":"injected_fault"}}
// for the others; a 429 with "Retry-After: 1".
func (s *Server) writeFaultStatus(t transport, d api.Dialect, status int) {
	msg := fmt.Sprintf("%s (status %d)", faultMessage, status)
	var fields []wire.Field
	if status == 429 {
		fields = append(fields, wire.Field{Name: "Retry-After", Value: retryAfter})
	}
	var b []byte
	if d == api.Anthropic {
		b = append(b, `{"type":"error","error":{"type":"`...)
		b = append(b, anthropicErrorType(status)...)
		b = append(b, `","message":`...)
		b = api.AppendJSONString(b, msg)
		b = append(b, `}}`...)
	} else {
		b = append(b, `{"error":{"message":`...)
		b = api.AppendJSONString(b, msg)
		b = append(b, `,"type":"`...)
		b = append(b, openAIErrorType(status)...)
		b = append(b, `","param":null,"code":"injected_fault"}}`...)
	}
	s.logf("server: %s: injected status %d", t, status)
	t.writeJSON(status, b, fields...)
}

// anthropicErrorType is the error type Anthropic's API gives a status.
func anthropicErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

// openAIErrorType is the error type OpenAI's API gives a status.
func openAIErrorType(status int) string {
	switch {
	case status == 401:
		return "authentication_error"
	case status == 403:
		return "permission_error"
	case status == 404:
		return "not_found_error"
	case status == 429:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// faultStatusText is the reason phrase of an injected status: the
// standard one, "Overloaded" for Anthropic's 529.
func faultStatusText(code int) string {
	if code == 529 {
		return "Overloaded"
	}
	if t := http.StatusText(code); t != "" {
		return t
	}
	return "Error"
}

// faultWriter is the stream writer of an answer with faults: it rewrites
// each event (padding, line endings, comments) before the transport frames
// it, cuts it into pieces written separately (HTTP/1.1: one chunk each)
// with a pause between them, and ends the stream as its faults say. An
// answer whose faults touch no byte (a cut, an end without end events)
// keeps its transport's direct writes; one whose events are rewritten is
// written from its goroutine, each token with a write of its own.
type faultWriter struct {
	streamWriter
	f      api.Faults
	bytes  bool          // the faults rewrite or split events
	gap    time.Duration // between the pieces of a split or trickled event
	events int           // events appended so far
	first  int           // index of the first token's event (the start events come before it)
	pad    []byte        // the first token's event, padded
	// cuts are the offsets, in the bytes being put together for the next
	// write, where a piece ends and the next one is to be written after
	// gap.
	cuts []int
	tmp  []byte
	// coalesce is the write_bytes fault: after the first write, the bytes
	// are held and written coalesce at a time, the rest with the end
	// (appendEnd sets ending). 0 is off.
	coalesce int
	held     []byte
	started  bool
	ending   bool
}

// wrapFaults returns the writer of an answer with faults f on transport t:
// t itself when no fault concerns the stream's bytes or its end.
func wrapFaults(t streamWriter, f api.Faults, startEvents int) streamWriter {
	coalesce := 0
	if f.WriteBytes != nil {
		coalesce = int(*f.WriteBytes)
	}
	byteFaults := api.On(f.Trickle) || len(f.Split) > 0 || f.EventBytes != nil ||
		(f.LineEnd != api.LineEndDefault && f.LineEnd != api.LineEndLF) || api.On(f.Comments) || api.On(f.BOM) || reframes(f) || coalesce > 0
	if !byteFaults && f.CutAfter == nil && !api.On(f.NoTerminal) {
		return t
	}
	return &faultWriter{streamWriter: t, f: f, bytes: byteFaults, gap: f.SplitGap(), first: startEvents, coalesce: coalesce}
}

// h1connOf returns the HTTP/1.x connection under a stream's writer.
func h1connOf(w streamWriter) *h1conn {
	if fw, ok := w.(*faultWriter); ok {
		w = fw.streamWriter
	}
	return w.(*h1conn)
}

func (w *faultWriter) direct() bool { return !w.bytes && w.streamWriter.direct() }

// commentLine is the SSE comment the comments fault writes before every
// event, with the blank line that ends it.
const commentLine = ": sse-latency comment\n\n"

// padField opens the field the event_bytes fault pads an event with.
const padField = `,"pi_pad":"`

// utf8BOM is the byte order mark the bom fault starts the body with.
const utf8BOM = "\xEF\xBB\xBF"

// appendEvent rewrites ev — a byte order mark before the first, a comment
// before it, the first token's event padded, reframed, the line endings
// replaced — and appends it framed by the transport, in pieces where it
// is to be split.
func (w *faultWriter) appendEvent(dst, ev []byte) []byte {
	if !w.bytes {
		return w.streamWriter.appendEvent(dst, ev)
	}
	e := w.tmp[:0]
	if api.On(w.f.BOM) && w.events == 0 {
		e = append(e, utf8BOM...)
	}
	if api.On(w.f.Comments) {
		e = append(e, commentLine...)
	}
	if w.events == w.first && w.f.EventBytes != nil {
		w.pad = appendPadded(w.pad[:0], ev, int(*w.f.EventBytes))
		ev = w.pad
	}
	if reframes(w.f) {
		e = appendReframed(e, ev, w.f)
	} else {
		e = append(e, ev...)
	}
	w.events++
	switch w.f.LineEnd {
	case api.LineEndCRLF:
		e = bytes.ReplaceAll(e, []byte("\n"), []byte("\r\n"))
	case api.LineEndCR:
		e = bytes.ReplaceAll(e, []byte("\n"), []byte("\r"))
	}
	w.tmp = e[:0]
	if w.coalesce > 0 { // the coalesced writes cut the stream: no split, no trickle
		return w.streamWriter.appendEvent(dst, e)
	}
	for i, piece := range splitEvent(e, w.f) {
		if i > 0 && len(w.cuts) < maxPieces {
			w.cuts = append(w.cuts, len(dst))
		}
		dst = w.streamWriter.appendEvent(dst, piece)
	}
	return dst
}

// reframes reports whether f rewrites the lines of each event.
func reframes(f api.Faults) bool {
	return api.On(f.EventAfterData) || (f.MultilineData != nil && *f.MultilineData > 1)
}

// appendReframed appends the SSE events of ev (lines ending in '\n', each
// event ended by a blank line, as the encoders write them) framed as f
// says, each reading the same by the SSE specification: every JSON object
// payload over f.MultilineData data lines, cut after commas between its
// tokens (the joined payload is the same JSON with line feeds as white
// space); the event line after the data lines (event_after_data), spelled
// "event: message" for an event that had none. Comments and events
// without data keep their lines.
func appendReframed(dst, ev []byte, f api.Faults) []byte {
	lines := 1
	if f.MultilineData != nil {
		lines = int(*f.MultilineData)
	}
	after := api.On(f.EventAfterData)
	for len(ev) > 0 {
		block, rest, _ := bytes.Cut(ev, []byte("\n\n"))
		ev = rest
		var name []byte
		data := false
		for len(block) > 0 {
			var line []byte
			line, block, _ = bytes.Cut(block, []byte{'\n'})
			switch payload, ok := wire.DataPayload(line); {
			case after && bytes.HasPrefix(line, []byte("event:")):
				name = line
			case ok:
				data = true
				dst = appendDataLines(dst, payload, lines)
			default:
				dst = append(append(dst, line...), '\n')
			}
		}
		if after && data && name == nil {
			name = []byte("event: message")
		}
		if name != nil {
			dst = append(append(dst, name...), '\n')
		}
		dst = append(dst, '\n')
	}
	return dst
}

// appendDataLines appends payload as data lines: a JSON object cut after
// up to n-1 of its commas outside strings, spread over its length; any
// other payload ([DONE]) on one line.
func appendDataLines(dst, payload []byte, n int) []byte {
	var cuts []int // offsets just after the commas between JSON tokens
	if n > 1 && len(payload) > 0 && payload[0] == '{' {
		inString, escaped := false, false
		for i, c := range payload {
			switch {
			case escaped:
				escaped = false
			case inString && c == '\\':
				escaped = true
			case c == '"':
				inString = !inString
			case !inString && c == ',':
				cuts = append(cuts, i+1)
			}
		}
	}
	if k := min(n-1, len(cuts)); k < len(cuts) { // keep k of them, evenly spread
		kept := cuts[:0:0]
		for j := range k {
			kept = append(kept, cuts[(j+1)*len(cuts)/(k+1)])
		}
		cuts = kept
	}
	prev := 0
	for _, c := range append(cuts, len(payload)) {
		dst = append(dst, "data: "...)
		dst = append(append(dst, payload[prev:c]...), '\n')
		prev = c
	}
	return dst
}

// maxPieces bounds the pieces one write is cut into (a trickled 1 MiB
// event would otherwise be a million writes): past it, the rest goes in
// the last piece.
const maxPieces = 1 << 16

// appendPadded appends ev with a "pi_pad" field inserted into its last
// JSON object so that it is size bytes long (unchanged when it already is
// as long, or has no object).
func appendPadded(dst, ev []byte, size int) []byte {
	end := bytes.LastIndexByte(ev, '}')
	field := padField
	if end > 0 && ev[end-1] == '{' {
		field = field[1:] // an empty object: no comma
	}
	fill := size - len(ev) - len(field) - 1
	if end < 0 || fill <= 0 {
		return append(dst, ev...)
	}
	dst = append(dst, ev[:end]...)
	dst = append(dst, field...)
	for i := 0; fill > 0; i++ {
		n := min(fill, api.TokenLen)
		dst = append(dst, api.Token(i)[:n]...)
		fill -= n
	}
	dst = append(dst, '"')
	return append(dst, ev[end:]...)
}

// splitEvent cuts an event into the pieces its faults ask for: one byte
// each (trickle), or at the split offsets — SplitInChar just after the
// leading byte of its first multi-byte character; offsets past its end
// are ignored.
func splitEvent(e []byte, f api.Faults) [][]byte {
	if api.On(f.Trickle) {
		pieces := make([][]byte, len(e))
		for i := range e {
			pieces[i] = e[i : i+1]
		}
		return pieces
	}
	var at []int
	for _, o := range f.Split {
		if o == api.SplitInChar {
			o = bytes.IndexFunc(e, func(r rune) bool { return r >= 0x80 })
			if o < 0 {
				continue
			}
			o++ // after the leading byte
		}
		if o > 0 && o < len(e) {
			at = append(at, o)
		}
	}
	if len(at) == 0 {
		return [][]byte{e}
	}
	slices.Sort(at)
	var pieces [][]byte
	prev := 0
	for _, o := range at {
		if o > prev {
			pieces = append(pieces, e[prev:o])
			prev = o
		}
	}
	return append(pieces, e[prev:])
}

// appendEnd appends the transport's end, and marks the write that carries
// it as the last: it takes whatever the write_bytes fault holds.
func (w *faultWriter) appendEnd(dst []byte) []byte {
	w.ending = true
	return w.streamWriter.appendEnd(dst)
}

// write writes b, piece by piece where appendEvent cut it, pausing gap
// between the pieces; under the write_bytes fault, coalesced (writeHeld).
func (w *faultWriter) write(b []byte) error {
	if w.coalesce > 0 {
		return w.writeHeld(b)
	}
	cuts := w.cuts
	w.cuts = w.cuts[:0]
	prev := 0
	for _, c := range cuts {
		if c <= prev || c >= len(b) {
			continue
		}
		if err := w.streamWriter.write(b[prev:c]); err != nil {
			return err
		}
		prev = c
		if w.gap > 0 {
			time.Sleep(w.gap)
		}
	}
	return w.streamWriter.write(b[prev:])
}

// writeHeld is write under the write_bytes fault: the first write goes as
// it is (the head and the start events), the others are held and written
// w.coalesce bytes at a time, and the last one (the end) takes the rest.
func (w *faultWriter) writeHeld(b []byte) error {
	if !w.started {
		w.started = true
		return w.streamWriter.write(b)
	}
	w.held = append(w.held, b...)
	n := 0
	for len(w.held)-n >= w.coalesce {
		if err := w.streamWriter.write(w.held[n : n+w.coalesce]); err != nil {
			return err
		}
		n += w.coalesce
	}
	if w.ending && n < len(w.held) {
		if err := w.streamWriter.write(w.held[n:]); err != nil {
			return err
		}
		n = len(w.held)
	}
	w.held = append(w.held[:0], w.held[n:]...)
	return nil
}

// faultEnd ends a stream with faults instead of finish, when they say so:
// a cut closes the connection (HTTP/2: resets the stream) without the end
// events or the end of the body; no_terminal ends the body cleanly
// without the end events. It reports whether it ended the stream, and
// the write's error.
func faultEnd(st *stream) (bool, error) {
	w, ok := st.w.(*faultWriter)
	switch {
	case !ok:
		return false, nil
	case w.f.CutAfter != nil:
		switch t := w.streamWriter.(type) {
		case *h1conn:
			t.keep = false // releaseH1 closes it, unterminated
		case *h2Stream:
			t.cut = true // its handler resets the stream
		case *h2Response:
			t.cut = true // its end resets the stream
		}
		return true, nil
	case api.On(w.f.NoTerminal):
		sc := getScratch()
		defer putScratch(sc)
		sc.out = st.w.appendEnd(sc.out[:0])
		return true, st.w.write(sc.out)
	}
	return false, nil
}

// faultsHeader is how the -v debug line names a request's faults.
func faultsHeader(f api.Faults) string {
	if f.Empty() {
		return ""
	}
	return " faults " + strconv.Quote(f.String())
}
