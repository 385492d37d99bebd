package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/server"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// In-process gateways that rewrite the stream event by event, the way AI
// gateways do, for the phase tests: each is an httputil.ReverseProxy whose
// response body passes every whole SSE event through a rewrite function.

// sseEv is one SSE event as a gateway sees it.
type sseEv struct{ name, data string }

// String writes the event, a data line for each line of its data.
func (e sseEv) String() string {
	var b strings.Builder
	if e.name != "" {
		b.WriteString("event: " + e.name + "\n")
	}
	for _, line := range strings.Split(e.data, "\n") {
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
	return b.String()
}

// eventGateway starts a gateway to backend whose stream goes through
// rewrite, which returns the events to pass on for each event it gets.
func eventGateway(t *testing.T, backend string, rewrite func(sseEv) []sseEv) string {
	t.Helper()
	u, _ := url.Parse("http://" + backend)
	p := httputil.NewSingleHostReverseProxy(u)
	p.FlushInterval = -1
	p.ModifyResponse = func(r *http.Response) error {
		r.Body = &eventRewriter{rc: r.Body, rewrite: rewrite}
		return nil
	}
	return proxyServer(t, p)
}

// eventRewriter is the body of an eventGateway's responses.
type eventRewriter struct {
	rc      io.ReadCloser
	rewrite func(sseEv) []sseEv
	buf     []byte // bytes read, not yet a whole event
	out     []byte // rewritten events, not yet returned
}

func (r *eventRewriter) Read(p []byte) (int, error) {
	for len(r.out) == 0 {
		var tmp [4096]byte
		n, err := r.rc.Read(tmp[:])
		r.buf = append(r.buf, tmp[:n]...)
		for {
			i := bytes.Index(r.buf, []byte("\n\n"))
			if i < 0 {
				break
			}
			var ev sseEv
			for _, line := range strings.Split(string(r.buf[:i]), "\n") {
				if v, ok := strings.CutPrefix(line, "event: "); ok {
					ev.name = v
				} else if v, ok := strings.CutPrefix(line, "data: "); ok {
					ev.data = v
				}
			}
			r.buf = r.buf[i+2:]
			for _, o := range r.rewrite(ev) {
				r.out = append(r.out, o.String()...)
			}
		}
		if err != nil {
			if len(r.out) == 0 {
				return 0, err
			}
			break
		}
	}
	n := copy(p, r.out)
	r.out = r.out[n:]
	return n, nil
}

func (r *eventRewriter) Close() error { return r.rc.Close() }

// decode decodes an event's JSON data (numbers kept as written); nil for
// [DONE] or anything that is not a JSON object.
func decode(data string) map[string]any {
	d := json.NewDecoder(strings.NewReader(data))
	d.UseNumber()
	var m map[string]any
	if d.Decode(&m) != nil {
		return nil
	}
	return m
}

// at returns the value at a dotted path of a decoded object ("" if none).
func at(v any, path string) any {
	for _, p := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// set sets the string at a dotted path of a decoded object, whose parents
// exist.
func set(m map[string]any, path, s string) {
	i := strings.LastIndexByte(path, '.')
	parent, key := any(m), path
	if i >= 0 {
		parent, key = at(m, path[:i]), path[i+1:]
	}
	parent.(map[string]any)[key] = s
}

func encode(t *testing.T, m map[string]any) string {
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// reserialising re-encodes every event with encoding/json, keys sorted and
// pi_ts dropped, as a gateway that decodes and re-encodes chunks does.
func reserialising(t *testing.T) func(sseEv) []sseEv {
	return func(ev sseEv) []sseEv {
		if m := decode(ev.data); m != nil {
			delete(m, "pi_ts")
			ev.data = encode(t, m)
		}
		return []sseEv{ev}
	}
}

// droppingReasoning removes every event of the reasoning, as a gateway that
// does not know (or strips) reasoning does: the deltas, and the item, part
// and block events around them.
func droppingReasoning(d api.Dialect) func(sseEv) []sseEv {
	thinking := "" // the Anthropic index of the thinking block
	return func(ev sseEv) []sseEv {
		if api.ScanEvent(d, []byte(ev.name), []byte(ev.data)).Has(api.HasReasoning) {
			return nil
		}
		m := decode(ev.data)
		typ, _ := at(m, "type").(string)
		switch {
		case strings.HasPrefix(typ, "response.reasoning_"),
			at(m, "item.type") == "reasoning", at(m, "part.type") == "reasoning_text",
			at(m, "delta.type") == "signature_delta":
			return nil
		case at(m, "content_block.type") == "thinking":
			thinking = string(at(m, "index").(json.Number))
			return nil
		case typ == "content_block_stop" && string(at(m, "index").(json.Number)) == thinking:
			return nil
		}
		return []sseEv{ev}
	}
}

// mergingArguments holds the tool call's argument deltas and passes them
// on as one event when the next other event comes — the gateway that holds
// a call's arguments until the call is complete. The merged event is the
// first delta's, pi_ts included, with all the arguments.
func mergingArguments(t *testing.T, d api.Dialect) func(sseEv) []sseEv {
	path := map[api.Dialect]string{
		api.Chat:      "choices.0.delta.tool_calls.0.function.arguments",
		api.Responses: "delta",
		api.Anthropic: "delta.partial_json",
	}[d]
	var held map[string]any
	var heldName, args string
	return func(ev sseEv) []sseEv {
		s := api.ScanEvent(d, []byte(ev.name), []byte(ev.data))
		if len(s.Arguments) > 0 {
			m := decode(ev.data)
			if held == nil {
				held, heldName = m, ev.name
			}
			args += at(m, path).(string)
			return nil
		}
		if held == nil {
			return []sseEv{ev}
		}
		set(held, path, args)
		merged := sseEv{name: heldName, data: encode(t, held)}
		held, args = nil, ""
		return []sseEv{merged, ev}
	}
}

// phaseServer starts the dummy server, with an emission registry, whose
// reasoning has shape field.
func phaseServer(t *testing.T, field api.ReasoningField) (addr string, reg *emission.Registry) {
	t.Helper()
	return serveWith(t, server.Config{Tokens: 1, DelayMs: 0.2, ReasoningField: field})
}

// serveWith starts the dummy server with cfg and an emission registry
// until the test ends.
func serveWith(t *testing.T, cfg server.Config) (addr string, reg *emission.Registry) {
	t.Helper()
	reg = emission.New()
	cfg.Emissions = reg
	return serveOurs(t, cfg), reg
}

// serveOurs runs the dummy server with cfg on a bound loopback listener
// until the test ends, and returns its address.
func serveOurs(t *testing.T, cfg server.Config) string {
	t.Helper()
	srv := server.New(testutil.Listen(t), cfg)
	testutil.Serve(t, srv)
	return srv.Addr().String()
}

// TestPhasesThroughGateways streams answers with reasoning, a tool call and
// text from the dummy server, directly and through in-process gateways,
// and checks the record: every token of every phase with its emission
// time, by pi_ts or by content; the phases in order (emissions strictly,
// arrivals and first arrivals by phase never backwards); what each gateway
// did — dropped the reasoning (the request stays ok, the record shows no
// reasoning), re-serialised without pi_ts (measured by content), merged the
// argument deltas (they arrive in one Read, measured by content).
func TestPhasesThroughGateways(t *testing.T) {
	const r, c, n = 4, 3, 5
	for _, field := range []api.ReasoningField{api.ReasoningContent, api.ReasoningPlain} {
		addr, reg := phaseServer(t, field)
		u, _ := url.Parse("http://" + addr)
		plain := httptest.NewServer(&httputil.ReverseProxy{FlushInterval: -1, Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) }})
		t.Cleanup(plain.Close)
		for _, d := range []api.Dialect{api.Chat, api.Responses, api.Anthropic} {
			gateways := []struct {
				name     string
				addr     string
				phases   [api.NumPhases]int // tokens per phase
				byPiTs   int
				merged   bool // the tool-call tokens arrive in one Read
				noReason bool
			}{
				{"direct", addr, [...]int{r, c, n}, r + c + n, false, false},
				{"httputil.ReverseProxy", plain.Listener.Addr().String(), [...]int{r, c, n}, r + c + n, false, false},
				{"re-serialising without pi_ts", eventGateway(t, addr, reserialising(t)), [...]int{r, c, n}, 0, false, false},
				{"dropping reasoning", eventGateway(t, addr, droppingReasoning(d)), [...]int{0, c, n}, c + n, false, true},
				{"merging argument deltas", eventGateway(t, addr, mergingArguments(t, d)), [...]int{r, c, n}, r + n, true, false},
			}
			for i, gw := range gateways {
				what := d.String() + "/" + field.String() + " " + gw.name
				q := New(Options{Dialect: d, Addr: gw.addr, Tokens: n, ExpectTokens: n, Reasoning: r, ToolCall: c, IncludeUsage: true,
					Timeout: 10 * time.Second, Registry: reg, IDPrefix: "ph"})
				rec := &result.Request{Batch: "gw", Index: i}
				q.Do(context.Background(), rec)
				if !rec.OK() {
					t.Errorf("%s: %s", what, rec.Failure.Error())
					continue
				}
				checkPhaseRecord(t, what, rec, gw.phases)
				if rec.ByPiTs != gw.byPiTs || rec.ByContent != len(rec.Tokens)-gw.byPiTs {
					t.Errorf("%s: %d tokens by pi_ts, %d by content; want %d by pi_ts, the rest of %d by content",
						what, rec.ByPiTs, rec.ByContent, gw.byPiTs, len(rec.Tokens))
				}
				if gw.noReason != (rec.FirstReasoningAt == 0) {
					t.Errorf("%s: first reasoning at %d", what, rec.FirstReasoningAt)
				}
				var toolReads []int32
				for i := range rec.Tokens {
					if p, _ := api.LocateToken(int(rec.TokenIndex(i)), r, c); p == api.PhaseToolCall {
						toolReads = append(toolReads, rec.TokenRead(i))
					}
				}
				if gw.merged && toolReads[0] != toolReads[len(toolReads)-1] {
					t.Errorf("%s: the merged argument tokens arrived in Reads %v, want one", what, toolReads)
				}
				wantPings := 0
				if d == api.Anthropic {
					wantPings = 1
				}
				if !rec.ServerRecord || rec.ServerHeartbeats != wantPings {
					t.Errorf("%s: server record %v of %d heartbeats, want its %d", what, rec.ServerRecord, rec.ServerHeartbeats, wantPings)
				}
				if rec.Pings != wantPings || rec.Comments != 0 || rec.MaxSilence <= 0 || rec.LastReadAt < rec.FirstTextAt || rec.FirstEventAt < rec.HeadAt {
					t.Errorf("%s: %d pings, %d comments, longest silence %d, head %d, first event %d, first text %d, last read %d",
						what, rec.Pings, rec.Comments, rec.MaxSilence, rec.HeadAt, rec.FirstEventAt, rec.FirstTextAt, rec.LastReadAt)
				}
			}
		}
		if reg.Len() != 0 {
			t.Errorf("%s: the registry holds %d entries after every request took its own", field, reg.Len())
		}
	}
}

// checkPhaseRecord checks the tokens of a record against the expected
// count per phase: each phase's tokens in order, each with an emission time
// before its arrival; emissions strictly in phase order; the first arrival
// of each phase present set, in phase order.
func checkPhaseRecord(t *testing.T, what string, rec *result.Request, want [api.NumPhases]int) {
	t.Helper()
	if got := phaseCounts(t, what, rec); got != want {
		t.Errorf("%s: tokens per phase %v, want %v", what, got, want)
	}
	var lastEmitted int64
	lastPhase := api.Phase(0)
	for i, tok := range rec.Tokens {
		index := rec.TokenIndex(i)
		p, _ := api.LocateToken(int(index), rec.Reasoning, rec.ToolCall)
		if tok.Emitted <= 0 || tok.Arrived < tok.Emitted || tok.Arrived < rec.Sent {
			t.Errorf("%s: %s token %d emitted %d, arrived %d, sent %d", what, p, index, tok.Emitted, tok.Arrived, rec.Sent)
		}
		// Tokens a stream that fell behind (the machine is busy) wrote in
		// one write share its instant: emission times never go back.
		if tok.Emitted < lastEmitted || p < lastPhase {
			t.Errorf("%s: %s token %d emitted %d after %d, after a %s token", what, p, index, tok.Emitted, lastEmitted, lastPhase)
		}
		lastEmitted, lastPhase = tok.Emitted, p
	}
	first := []int64{rec.FirstReasoningAt, rec.FirstToolCallAt, rec.FirstTextAt}
	prev := rec.FirstEventAt
	for p := range api.Phase(api.NumPhases) {
		if (first[p] != 0) != (want[p] > 0) || first[p] != 0 && first[p] < prev {
			t.Errorf("%s: first %s at %d (previous phase or first event at %d), %d tokens", what, p, first[p], prev, want[p])
		}
		if first[p] != 0 {
			prev = first[p]
		}
	}
}
