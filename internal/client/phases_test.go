package client

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/result"
)

// encoded returns the events of answer a in dialect d exactly as the
// server writes them, one string per write (the start events one by one,
// each token's — with the events that open its phase — then the end
// events), the token events stamped 1000+k, or without pi_ts.
func encoded(d api.Dialect, a api.Answer, stamped bool) []string {
	e := api.NewEncoder(d, a)
	var out []string
	for i := range e.StartEvents() {
		out = append(out, string(e.AppendStart(nil, i, 1)))
	}
	total := a.Total()
	if d == api.Completions {
		total = a.Tokens
	}
	for k := range total {
		ev := string(e.AppendToken(nil, k, 1000+int64(k)))
		if !stamped {
			ev = piTsField.ReplaceAllString(ev, "")
		}
		out = append(out, ev)
	}
	for i := range e.EndEvents() {
		out = append(out, string(e.AppendEnd(nil, i, 1)))
	}
	return out
}

// readEvents feeds a response head then each write as its own Read, Read i
// arriving at 100·(i+1), to a reader with options o, and returns the
// record. The request was written at 50.
func readEvents(t *testing.T, o Options, writes []string) *result.Request {
	t.Helper()
	rec := &result.Request{Sent: 50}
	r := newReader(rec, &o)
	defer r.close()
	if r.feed([]byte(sseHead+"\r\n"), 60) {
		t.Fatalf("head: %s", rec.Failure.Error())
	}
	for i, w := range writes {
		if r.feed([]byte(w), 100*int64(i+1)) {
			return rec
		}
	}
	rec.Failure = r.endOfStream(nil)
	return rec
}

// phaseCounts counts a record's tokens per phase, and checks that each
// phase's tokens arrived in order, their indexes laid out as documented.
func phaseCounts(t *testing.T, what string, rec *result.Request) (n [api.NumPhases]int) {
	t.Helper()
	for i := range rec.Tokens {
		index := rec.TokenIndex(i)
		p, j := api.LocateToken(int(index), rec.Reasoning, rec.ToolCall)
		if j != n[p] {
			t.Errorf("%s: %s token %d (index %d) arrived after %d of its phase", what, p, j, index, n[p])
		}
		n[p]++
	}
	return n
}

// TestReaderPhases reads every dialect's phases as the server writes them,
// stamped or not: every token of every phase recorded under its index, by
// pi_ts when stamped, the first arrival of each phase, the first event, the
// longest silence and Anthropic's ping.
func TestReaderPhases(t *testing.T) {
	const r, c, n = 3, 2, 4
	for _, d := range []api.Dialect{api.Chat, api.Responses, api.Anthropic} {
		for _, field := range []api.ReasoningField{api.ReasoningContent, api.ReasoningPlain} {
			for _, stamped := range []bool{true, false} {
				what := fmt.Sprintf("%s/%s/stamped=%v", d, field, stamped)
				a := api.Answer{No: 1, Tokens: n, Reasoning: r, ToolCall: c, ReasoningField: field, IncludeUsage: true}
				writes := encoded(d, a, stamped)
				rec := readEvents(t, Options{Dialect: d, ExpectTokens: n, Reasoning: r, ToolCall: c, IncludeUsage: true}, writes)
				if !rec.OK() {
					t.Fatalf("%s: %s", what, rec.Failure.Error())
				}
				if got := phaseCounts(t, what, rec); got != [...]int{r, c, n} {
					t.Errorf("%s: tokens per phase %v, want %v", what, got, []int{r, c, n})
				}
				wantPiTs := 0
				if stamped {
					wantPiTs = r + c + n
				}
				if rec.ByPiTs != wantPiTs || rec.Reasoning != r || rec.ToolCall != c {
					t.Errorf("%s: %d by pi_ts, phases %d/%d; want %d, %d/%d", what, rec.ByPiTs, rec.Reasoning, rec.ToolCall, wantPiTs, r, c)
				}
				for i, tok := range rec.Tokens {
					if index := int64(rec.TokenIndex(i)); stamped && tok.Emitted != 1000+index {
						t.Errorf("%s: token %d emitted %d, want its pi_ts %d", what, index, tok.Emitted, 1000+index)
					}
				}
				// Write i arrived at 100(i+1): the first event in the first
				// write, reasoning in the one of token 0, the tool call in
				// that of token r, the text in that of token r+c.
				start := int64(100 * startWrites(d, a))
				at := func(k int) int64 { return start + 100*int64(k+1) }
				if rec.FirstEventAt != 100 || rec.FirstReasoningAt != at(0) || rec.FirstToolCallAt != at(r) || rec.FirstTextAt != at(r+c) {
					t.Errorf("%s: first event %d, reasoning %d, tool call %d, text %d; want 100, %d, %d, %d",
						what, rec.FirstEventAt, rec.FirstReasoningAt, rec.FirstToolCallAt, rec.FirstTextAt, at(0), at(r), at(r+c))
				}
				wantPings := 0
				if d == api.Anthropic {
					wantPings = 1
				}
				if rec.Pings != wantPings || rec.Comments != 0 || rec.MaxSilence != 100 || rec.LastReadAt != int64(100*len(writes)) {
					t.Errorf("%s: %d pings, %d comments, longest silence %d, last read %d; want %d, 0, 100, %d",
						what, rec.Pings, rec.Comments, rec.MaxSilence, rec.LastReadAt, wantPings, 100*len(writes))
				}
			}
		}
	}
}

// startWrites is the number of start events of answer a in dialect d.
func startWrites(d api.Dialect, a api.Answer) int { return api.NewEncoder(d, a).StartEvents() }

// TestReaderPhaseIntegrity changes the server's phase events the ways a
// gateway might, and checks the outcome: a clear integrity failure, or —
// for reasoning dropped entirely — an ok request whose record shows it.
func TestReaderPhaseIntegrity(t *testing.T) {
	const r, c, n = 3, 3, 2
	a := api.Answer{No: 1, Tokens: n, Reasoning: r, ToolCall: c}
	type edit func(d api.Dialect, w []string) []string
	// token returns the index in w of the write of token k.
	token := func(d api.Dialect, k int) int { return startWrites(d, a) + k }
	drop := func(k int) edit {
		return func(d api.Dialect, w []string) []string {
			i := token(d, k)
			// Keep the events that open the token's phase, drop the token's.
			evs := strings.SplitAfter(w[i], "\n\n")
			w[i] = strings.Join(evs[:len(evs)-2], "")
			return w
		}
	}
	replace := func(k int, old, new string) edit {
		return func(d api.Dialect, w []string) []string {
			i := token(d, k)
			w[i] = strings.Replace(w[i], old, new, 1)
			return w
		}
	}
	dropReasoning := func(d api.Dialect, w []string) []string {
		for k := range r {
			w = drop(k)(d, w)
		}
		return w
	}
	tests := []struct {
		name  string
		o     Options
		edit  edit
		want  string // the failure text
		phase [api.NumPhases]int
	}{
		{"as emitted", Options{}, nil, "ok", [...]int{r, c, n}},
		{"reasoning dropped entirely", Options{}, dropReasoning, "ok", [...]int{0, c, n}},
		{"a reasoning token missing", Options{}, drop(1), "integrity: reasoning: 1 token missing (first: token 1)", [...]int{1, c, n}},
		{"reasoning corrupted", Options{}, replace(2, "OBOB", "OBXB"), `integrity: reasoning: corrupted content at token 2 ("OBXB")`, [...]int{2, c, n}},
		{"reasoning not asked for", Options{Reasoning: -1}, nil, "integrity: reasoning: 12 bytes received, none asked for", [...]int{0, c, n}},
		{"an argument token missing", Options{}, drop(r + 1), "integrity: tool call: 1 token missing (first: token 1)", [...]int{r, 1, n}},
		{"the last argument token missing", Options{}, drop(r + 2), "integrity: tool call: 1 token missing (first: token 2)", [...]int{r, 2, n}},
		{"arguments not closed", Options{}, replace(r+2, `Obob\"}`, `Obob`), `integrity: tool call: arguments not closed ("\"}" missing): not valid JSON`, [...]int{r, c, n}},
		{"arguments with another key", Options{}, replace(r, `{\"words\"`, `{\"text\"`), `integrity: tool call: arguments do not start with "{\"words\":\"" ("text\":\"Anan" at byte 2)`, [...]int{r, 0, n}},
		{"tool call dropped", Options{}, func(d api.Dialect, w []string) []string {
			for k := r; k < r+c; k++ {
				w = drop(k)(d, w)
			}
			return w
		}, "integrity: tool call: 3 tokens missing (first: token 0)", [...]int{r, 0, n}},
		{"a text token missing", Options{}, drop(r + c + 1), "integrity: 1 token missing (first: token 1)", [...]int{r, c, 1}},
		{"reasoning turned into text", Options{}, func(d api.Dialect, w []string) []string {
			w = dropReasoning(d, w)
			i := token(d, r+c)
			evs := strings.SplitAfter(w[i], "\n\n")
			tok := evs[len(evs)-2]
			w[i] = strings.Join(evs[:len(evs)-2], "") + strings.Replace(tok, "anan", "ANANanan", 1)
			return w
		}, `integrity: corrupted content at token 0 ("ANAN")`, [...]int{0, c, 0}},
	}
	for _, d := range []api.Dialect{api.Chat, api.Responses, api.Anthropic} {
		for _, tt := range tests {
			what := d.String() + ": " + tt.name
			o := tt.o
			o.Dialect, o.ExpectTokens = d, n
			o.Reasoning, o.ToolCall = r, c
			if tt.o.Reasoning < 0 {
				o.Reasoning = 0
			}
			w := encoded(d, a, true)
			if tt.edit != nil {
				w = tt.edit(d, w)
			}
			rec := readEvents(t, o, w)
			if got := rec.Failure.Error(); got != tt.want {
				t.Errorf("%s: %q, want %q", what, got, tt.want)
			}
			if got := phaseCounts(t, what, rec); got != tt.phase {
				t.Errorf("%s: tokens per phase %v, want %v", what, got, tt.phase)
			}
			if converted := tt.name == "reasoning turned into text"; rec.ReasoningAsText != converted {
				t.Errorf("%s: ReasoningAsText %v, want %v", what, rec.ReasoningAsText, converted)
			}
			if tt.name == "reasoning dropped entirely" && (rec.FirstReasoningAt != 0 || rec.FirstToolCallAt == 0 || rec.Reasoning != r) {
				t.Errorf("%s: first reasoning at %d, tool call at %d, %d reasoning tokens asked: the record must show what was dropped",
					what, rec.FirstReasoningAt, rec.FirstToolCallAt, rec.Reasoning)
			}
		}
	}
}

// TestReaderMalformedPhaseEvent: a reasoning or tool-call event whose text
// cannot be read fails the request, quoting the event, escaped and
// bounded.
func TestReaderMalformedPhaseEvent(t *testing.T) {
	a := api.Answer{No: 1, Tokens: 1, Reasoning: 1, ToolCall: 1}
	tests := []struct {
		d         api.Dialect
		old, new  string
		wantQuote string
	}{
		{api.Chat, `"reasoning_content":"ANAN"`, `"reasoning_content":{"text":"ANAN"}`, `"reasoning_content":{"text":"ANAN"}`},
		{api.Chat, `"arguments":"{\"words\":\"Anan\"}"`, `"arguments":7`, `"arguments":7`},
		{api.Responses, `"delta":"ANAN"`, `"delta":null`, `data: {"type":"response.reasoning_summary_text.delta"`},
		{api.Responses, `"delta":"{\"words\":\"Anan\"}"`, "\"delta\":[\"\x1b[31m\"]", `event: response.function_call_arguments.delta data: {"type":"response.function_call_arguments.delta"`},
		{api.Anthropic, `"thinking":"ANAN"`, `"thinking":` + strings.Repeat("1", 500), `"thinking":111`},
	}
	for _, tt := range tests {
		w := encoded(tt.d, a, true)
		for i := range w {
			w[i] = strings.Replace(w[i], tt.old, tt.new, 1)
		}
		rec := readEvents(t, Options{Dialect: tt.d, ExpectTokens: 1, Reasoning: 1, ToolCall: 1}, w)
		got := rec.Failure.Error()
		prefix := "malformed response: unreadable reasoning or tool-call event: "
		if rec.Failure.Kind != result.BadFraming || !strings.HasPrefix(got, prefix) || !strings.Contains(got, tt.wantQuote) {
			t.Errorf("%s %s: %q, want %q quoting %q", tt.d, tt.new, got, prefix, tt.wantQuote)
		}
		if quoted := strings.TrimPrefix(got, prefix); len(quoted) > maxQuotedEvent+3 || strings.ContainsAny(quoted, "\x1b\n") {
			t.Errorf("%s %s: the quote %q is not escaped and bounded to %d bytes", tt.d, tt.new, quoted, maxQuotedEvent)
		}
	}
}

// TestReaderHeartbeats counts SSE comments and Anthropic pings wherever
// they come, and measures the longest silence between Reads.
func TestReaderHeartbeats(t *testing.T) {
	a := api.Answer{No: 1, Tokens: 2}
	w := encoded(api.Anthropic, a, true)
	// A gateway's heartbeats: comments between events, one in the middle
	// of a write, and pings of its own.
	w = append(w[:2], append([]string{": ping\n\n", ":\n\n", "event: ping\ndata: {\"type\": \"ping\"}\n\n"}, w[2:]...)...)
	w[len(w)-1] = ": keep-alive\n" + w[len(w)-1]
	rec := readEvents(t, Options{Dialect: api.Anthropic, ExpectTokens: 2}, w)
	if !rec.OK() || rec.Comments != 3 || rec.Pings != 2 {
		t.Errorf("%q: %d comments, %d pings; want ok, 3 comments, 2 pings (the server's and the gateway's)", rec.Failure.Error(), rec.Comments, rec.Pings)
	}

	// The silences: 50 from the write to the first Read, then 10, 400, 5.
	rec = &result.Request{Sent: 1000}
	rd := newReader(rec, &Options{Dialect: api.Chat, ExpectTokens: 1})
	for _, step := range []struct {
		at   int64
		data string
	}{{1050, sseHead + "\r\n"}, {1060, chatRole}, {1460, ": ping\n\n"}, {1465, chatTok(1, "anan") + chatFinish + done}} {
		rd.feed([]byte(step.data), step.at)
	}
	if !rec.OK() || rec.MaxSilence != 400 || rec.LastReadAt != 1465 || rec.PrevReadAt != 1460 || rec.FirstEventAt != 1060 ||
		rec.FirstTextAt != 1465 || rec.Comments != 1 {
		t.Errorf("%q: longest silence %d, last reads %d and %d, first event %d, first text %d, %d comments; want ok, 400, 1465 and 1460, 1060, 1465, 1",
			rec.Failure.Error(), rec.MaxSilence, rec.LastReadAt, rec.PrevReadAt, rec.FirstEventAt, rec.FirstTextAt, rec.Comments)
	}

	// A gateway that holds the stream's events but sends pings: the
	// first event is the first that is not a ping.
	w = encoded(api.Anthropic, a, true)
	w = append([]string{api.AnthropicHeartbeat}, w...)
	rec = readEvents(t, Options{Dialect: api.Anthropic, ExpectTokens: 2}, w)
	if !rec.OK() || rec.Pings != 2 || rec.FirstEventAt != 200 {
		t.Errorf("%q: %d pings, first event at %d; want ok, 2 pings, the first event (message_start) at 200, after the gateway's ping",
			rec.Failure.Error(), rec.Pings, rec.FirstEventAt)
	}
}

// FuzzReaderPhases feeds arbitrary bodies, cut arbitrarily, to the response
// parser with phases expected: it must not fail, each phase's tokens are
// recorded under the phase's indexes in order, and no token is measured
// twice.
func FuzzReaderPhases(f *testing.F) {
	for _, d := range []api.Dialect{api.Chat, api.Responses, api.Anthropic} {
		for _, field := range []api.ReasoningField{api.ReasoningContent, api.ReasoningPlain} {
			a := api.Answer{No: 1, Tokens: 2, Reasoning: 2, ToolCall: 2, ReasoningField: field}
			f.Add(uint8(d), []byte(strings.Join(encoded(d, a, true), "")), []byte{40, 200, 7})
		}
		merged := strings.Join(encoded(d, api.Answer{No: 1, Tokens: 1, Reasoning: 3, ToolCall: 1}, false), "")
		f.Add(uint8(d), []byte(merged), []byte{90, 3})
	}
	f.Fuzz(func(t *testing.T, d uint8, body, cuts []byte) {
		dialects := []api.Dialect{api.Chat, api.Responses, api.Anthropic}
		o := &Options{Dialect: dialects[int(d)%len(dialects)], ExpectTokens: 2, Reasoning: 2, ToolCall: 2, IncludeUsage: true}
		rec := &result.Request{Sent: 1}
		feedCuts(t, rec, o, body, cuts)
		var next [api.NumPhases]int
		for i := range rec.Tokens {
			index := rec.TokenIndex(i)
			p, j := api.LocateToken(int(index), rec.Reasoning, rec.ToolCall)
			if j != next[p] {
				t.Fatalf("%s token %d (index %d) after %d of its phase", p, j, index, next[p])
			}
			next[p]++
		}
		if rec.ByPiTs > len(rec.Tokens) {
			t.Fatalf("%d tokens by pi_ts of %d", rec.ByPiTs, len(rec.Tokens))
		}
	})
}

// TestReaderMergedPhases: an event that carries the texts of several
// phases (a gateway merged them) records each phase's tokens, and its pi_ts
// is no single token's emission time.
func TestReaderMergedPhases(t *testing.T) {
	merged := `data: {"pi_ts":77,"choices":[{"delta":{"reasoning":"ANAN","tool_calls":[{"index":0,"function":{"arguments":"{\"words\":\"Anan\"}"}}],"content":"anan"}}]}` + "\n\n"
	empty := `data: {"pi_ts":78,"choices":[{"delta":{"content":"","reasoning_content":"HUHU"}}]}` + "\n\n"
	rec := readEvents(t, Options{Dialect: api.Chat, ExpectTokens: 1, Reasoning: 2, ToolCall: 1}, []string{merged, empty, chatFinish + done})
	if !rec.OK() || len(rec.Tokens) != 4 {
		t.Fatalf("%q, %d tokens; want ok with 4", rec.Failure.Error(), len(rec.Tokens))
	}
	wantIndex := []int32{0, 2, 3, 1} // reasoning 0, the call, the text, then reasoning 1
	for i := range rec.Tokens {
		if index := rec.TokenIndex(i); index != wantIndex[i] {
			t.Errorf("token %d has index %d, want %d", i, index, wantIndex[i])
		}
	}
	if rec.ByPiTs != 1 || rec.Tokens[3].Emitted != 78 {
		t.Errorf("%d tokens by pi_ts, the last emitted %d; want only the last, alone in its event (an empty content does not count), at 78",
			rec.ByPiTs, rec.Tokens[3].Emitted)
	}
}
