package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// The rewriting gateways of this file are in-process stand-ins for AI
// gateways that do more than forward bytes (LiteLLM-, Portkey-,
// NewAPI-style): they rebuild the request, re-serialise or re-cut the
// stream, or translate it to another API. Each is a net/http handler that
// calls the upstream with net/http and flushes every event it writes.

// chatRequest is what a gateway that rebuilds requests keeps of a Chat
// Completions request: the fields it knows. pi_* hints are dropped.
type chatRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options,omitempty"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

// chatChunk is a Chat Completions chunk as a gateway that re-serialises
// knows it: no pi_ts, its own field order.
type chatChunk struct {
	Choices []chatChoice    `json:"choices"`
	Model   string          `json:"model"`
	Object  string          `json:"object"`
	Created int64           `json:"created"`
	ID      string          `json:"id"`
	Usage   json.RawMessage `json:"usage,omitempty"`
}

type chatChoice struct {
	Delta struct {
		Content *string `json:"content,omitempty"`
		Role    string  `json:"role,omitempty"`
	} `json:"delta"`
	FinishReason *string `json:"finish_reason"`
	Index        int     `json:"index"`
}

// rewriter turns the upstream's stream into the client's: it gets each
// upstream data payload and writes what it wants with emit; flush ends the
// stream (upstream EOF).
type rewriter interface {
	event(payload []byte, emit func(payload string))
	flush(emit func(payload string))
}

// holdLog is a rewriting gateway's own record of how long it held the
// tokens it passed on: for each upstream token, the time the gateway
// began to write the first event carrying it minus the token's pi_ts (the
// server's stamp of its write, on the same process clock). The client
// reads a token after the gateway began to write it, so a tool that finds each
// token's emission right measures at least this hold for every token —
// on a busy machine too, whose delays the hold then includes.
type holdLog struct {
	mu sync.Mutex
	// Over the tokens after each stream's first (those emit->recv counts):
	// their number and the sum of their holds, ns.
	n   int
	sum int64
	// streams are the pi_ts of each stream's tokens, in order.
	streams [][]int64
}

// complete reports whether the log holds the records of n streams (a
// stream's last token is logged after its flush, its stream when its
// handler returns: after the client may have read them).
func (l *holdLog) complete(n int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.streams) >= n
}

// mean returns the mean hold in ns and the number of tokens.
func (l *holdLog) mean() (float64, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 {
		return 0, 0
	}
	return float64(l.sum) / float64(l.n), l.n
}

// emittedGaps returns, for each stream, its tokens' emission times after
// its first one's, in ms.
func (l *holdLog) emittedGaps() [][]float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out [][]float64
	for _, st := range l.streams {
		gaps := make([]float64, len(st))
		for i, ts := range st {
			gaps[i] = float64(ts-st[0]) / 1e6
		}
		out = append(out, gaps)
	}
	return out
}

// upstreamToken returns the pi_ts of an upstream payload that carries a
// token (a Chat Completions content delta, an Anthropic text delta). It
// reads the field by hand: a JSON decoder per event would add to what the
// race-built gateway must keep up with.
func upstreamToken(p []byte) (piTs int64, ok bool) {
	if !bytes.Contains(p, []byte(`"delta":{"content":"`)) && !bytes.Contains(p, []byte(`"type":"text_delta"`)) {
		return 0, false
	}
	_, rest, found := bytes.Cut(p, []byte(`"pi_ts":`))
	end := bytes.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if !found || end <= 0 {
		return 0, false
	}
	ts, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	return ts, err == nil && ts > 0
}

// startRewritingGateway serves on a loopback port, forwarding POSTs to
// upstream at upstreamPath with the request rebuilt by rebuild and the
// header X-SSE-Latency forwarded only when keepHintHeader.
func startRewritingGateway(t *testing.T, upstream, upstreamPath string, keepHintHeader bool,
	rebuild func(chatRequest) any, newRewriter func() rewriter) string {
	addr, _ := startRecordingGateway(t, upstream, upstreamPath, keepHintHeader, rebuild, newRewriter)
	return addr
}

// startRecordingGateway is startRewritingGateway that also records how
// long it held each token (holdLog).
func startRecordingGateway(t *testing.T, upstream, upstreamPath string, keepHintHeader bool,
	rebuild func(chatRequest) any, newRewriter func() rewriter) (string, *holdLog) {
	t.Helper()
	holds := &holdLog{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req chatRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body, _ := json.Marshal(rebuild(req))
		up, _ := http.NewRequestWithContext(r.Context(), "POST", "http://"+upstream+upstreamPath, bytes.NewReader(body))
		up.Header.Set("Content-Type", "application/json")
		if keepHintHeader {
			up.Header.Set(api.HintHeader, r.Header.Get(api.HintHeader))
		}
		resp, err := http.DefaultTransport.RoundTrip(up)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(resp.StatusCode)
		fl := w.(http.Flusher)
		// The stamps of the upstream tokens not passed on yet, and how
		// many of this stream's came before them. Every rewriter here
		// writes all it holds whenever it writes (a merge its n tokens, a
		// split both halves of the last), so an event's flush releases
		// every pending token.
		var pending, stamps []int64
		emit := func(payload string) {
			// Stamped before the write: stamped after its flush, a
			// gateway preempted between the two would log a hold longer
			// than the client saw (1 run in 50 at a load of 9).
			at := clock.Real.Now()
			fmt.Fprintf(w, "data: %s\n\n", payload)
			fl.Flush()
			holds.mu.Lock()
			for _, ts := range pending {
				if len(stamps) > 0 {
					holds.n++
					holds.sum += at - ts
				}
				stamps = append(stamps, ts)
			}
			holds.mu.Unlock()
			pending = pending[:0]
		}
		defer func() {
			holds.mu.Lock()
			holds.streams = append(holds.streams, stamps)
			holds.mu.Unlock()
		}()
		rw := newRewriter()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				payload := []byte(strings.TrimSpace(p))
				if ts, ok := upstreamToken(payload); ok {
					pending = append(pending, ts)
				}
				rw.event(payload, emit)
			}
		}
		rw.flush(emit)
	})
	ln := testutil.Listen(t)
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), holds
}

// keepChat forwards the rebuilt Chat Completions request as it is.
func keepChat(req chatRequest) any { return req }

// reserialise decodes each chunk into the gateway's own type and encodes it
// again: pi_ts and every other unknown field are gone, the order changes.
type reserialise struct{}

func (reserialise) event(p []byte, emit func(string)) {
	if string(p) == api.Done {
		emit(api.Done)
		return
	}
	var c chatChunk
	if json.Unmarshal(p, &c) != nil {
		return
	}
	b, _ := json.Marshal(c)
	emit(string(b))
}
func (reserialise) flush(func(string)) {}

// merge holds content deltas and sends every n of them as one.
type merge struct {
	n       int
	held    []string
	pending chatChunk
}

func (m *merge) event(p []byte, emit func(string)) {
	if string(p) == api.Done {
		m.flush(emit)
		emit(api.Done)
		return
	}
	var c chatChunk
	if json.Unmarshal(p, &c) != nil {
		return
	}
	if len(c.Choices) == 1 && c.Choices[0].Delta.Content != nil {
		m.pending = c
		m.held = append(m.held, *c.Choices[0].Delta.Content)
		if len(m.held) == m.n {
			m.flush(emit)
		}
		return
	}
	m.flush(emit)
	b, _ := json.Marshal(c)
	emit(string(b))
}

func (m *merge) flush(emit func(string)) {
	if len(m.held) == 0 {
		return
	}
	s := strings.Join(m.held, "")
	m.pending.Choices[0].Delta.Content = &s
	b, _ := json.Marshal(m.pending)
	emit(string(b))
	m.held = m.held[:0]
}

// split cuts every content delta in two events (keeping the rest of the
// chunk, pi_ts included, on both halves).
type split struct{}

func (split) event(p []byte, emit func(string)) {
	s := string(p)
	i := strings.Index(s, `"content":"`)
	if i < 0 {
		emit(s)
		return
	}
	start := i + len(`"content":"`)
	end := start + strings.IndexByte(s[start:], '"')
	content := s[start:end]
	half := len(content) / 2
	emit(s[:start] + content[:half] + s[end:])
	emit(s[:start] + content[half:] + s[end:])
}
func (split) flush(func(string)) {}

// toAnthropic is a gateway that speaks Chat Completions to its clients and
// Anthropic Messages upstream: it translates the request (dropping pi_*
// fields and the hint header; the prompt text survives) and turns each
// text_delta back into a chat chunk.
func toAnthropic(req chatRequest) any {
	type msg struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	var msgs []msg
	for _, m := range req.Messages {
		msgs = append(msgs, msg{m.Role, m.Content})
	}
	return struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		Stream    bool   `json:"stream"`
		Messages  []msg  `json:"messages"`
	}{req.Model, 4096, true, msgs}
}

type fromAnthropic struct{ id string }

func (f *fromAnthropic) event(p []byte, emit func(string)) {
	var ev struct {
		Type  string `json:"type"`
		Delta struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"delta"`
		Message struct {
			ID string `json:"id"`
		} `json:"message"`
	}
	if json.Unmarshal(p, &ev) != nil {
		return
	}
	chunk := func(content *string, finish *string) {
		c := chatChunk{ID: f.id, Object: "chat.completion.chunk", Model: api.Model, Choices: []chatChoice{{FinishReason: finish}}}
		c.Choices[0].Delta.Content = content
		b, _ := json.Marshal(c)
		emit(string(b))
	}
	switch ev.Type {
	case "message_start":
		f.id = ev.Message.ID
	case "content_block_delta":
		if ev.Delta.Type == "text_delta" {
			chunk(&ev.Delta.Text, nil)
		}
	case "message_stop":
		stop := "stop"
		chunk(nil, &stop)
		emit(api.Done)
	}
}
func (f *fromAnthropic) flush(func(string)) {}

// seriesGaps returns the emission times of a series' tokens (arrival −
// emit->recv) after its first token's, in ms.
func seriesGaps(points [][2]float64) []float64 {
	var gaps []float64
	for _, p := range points {
		gaps = append(gaps, (p[0]-p[1])-(points[0][0]-points[0][1]))
	}
	return gaps
}

// matchesStream reports whether the series' emission gaps are those of
// one of streams, each within a microsecond.
func matchesStream(points [][2]float64, streams [][]float64) bool {
	gaps := seriesGaps(points)
	for _, st := range streams {
		if len(st) == len(gaps) && slices.EqualFunc(st, gaps, func(a, b float64) bool { return math.Abs(a-b) < 1e-3 }) {
			return true
		}
	}
	return false
}

// TestRewritingGateways measures through each rewriting gateway: every
// request must succeed and every token be measured, by content where pi_ts
// could not serve, against its own emission (as the gateway saw it), and
// held at least as long as the gateway held it.
func TestRewritingGateways(t *testing.T) {
	const requests, tokens = 3, 60
	tests := []struct {
		name           string
		path           string
		keepHintHeader bool
		rebuild        func(chatRequest) any
		rewriter       func() rewriter
		wantPiTs       bool // every gateway token measured by pi_ts (else all by content)
		minPerRead     int  // tokens the busiest read must have carried
	}{
		{"re-serialise", api.ChatPath, true, keepChat, func() rewriter { return reserialise{} }, false, 1},
		{"merge 5", api.ChatPath, true, keepChat, func() rewriter { return &merge{n: 5} }, false, 5},
		{"split in two", api.ChatPath, true, keepChat, func() rewriter { return split{} }, false, 1},
		{"chat to anthropic", "/v1/messages", false, toAnthropic, func() rewriter { return &fromAnthropic{} }, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln := testutil.Listen(t)
			backend := ln.Addr().String()
			gw, holds := startRecordingGateway(t, backend, tt.path, tt.keepHintHeader, tt.rebuild, tt.rewriter)
			args := []string{"-L", backend, "-t", gw, "-r", fmt.Sprint(requests), "-c", "3", "-n", fmt.Sprint(tokens), "-d", "2", "-q", "-v"}
			var stdout, stderr bytes.Buffer
			code, sum := MeasureOn(context.Background(), ln, args, &stdout, &stderr)
			if code != ExitOK || sum == nil {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
			}
			g := sum.Gateway
			if g.OK != requests || g.Tokens != requests*tokens {
				t.Errorf("gateway batch: %d ok, %d tokens; want %d ok, %d tokens\n%s", g.OK, g.Tokens, requests, requests*tokens, stdout.String())
			}
			if g.Unmeasured != 0 || g.ByContent+g.ByPiTs != int64(requests*tokens) {
				t.Errorf("by pi_ts %d, by content %d, unmeasured %d: want all %d tokens measured", g.ByPiTs, g.ByContent, g.Unmeasured, requests*tokens)
			}
			if !tt.wantPiTs && g.ByPiTs != 0 {
				t.Errorf("%d tokens measured by a pi_ts the gateway %s", g.ByPiTs, tt.name)
			}
			if g.MaxTokensPerRead < tt.minPerRead {
				t.Errorf("at most %d tokens per read, want at least %d through %s", g.MaxTokensPerRead, tt.minPerRead, tt.name)
			}
			if g.EmitRecv.N() == 0 {
				t.Fatalf("no emit->recv samples through %s", tt.name)
			}
			// What the tool measured is checked against the gateway's own
			// record, not against a speed: a busy machine delays every
			// token, and a race-built gateway that cannot keep up queues
			// them (tens of ms), the merging one holds them 0..8 ms more.
			testutil.Await(t, "the gateway's record of every stream", func() bool { return holds.complete(requests) })
			hold, n := holds.mean()
			if n != int(g.EmitRecv.N()) {
				t.Fatalf("the gateway passed on %d tokens after the streams' first ones, the tool measured %d", n, g.EmitRecv.N())
			}
			// Each token arrived after the gateway wrote it: a tool that
			// finds the tokens' emissions measures at least the gateway's
			// hold on average (the merging gateway's included); less means
			// it took later tokens' emissions.
			if mean := g.EmitRecv.Mean(); mean < hold {
				t.Errorf("emit->recv mean %.3f ms through %s, below the %.3f ms the gateway held the tokens on average", mean/1e6, tt.name, hold/1e6)
			}
			// Each token was measured against its own emission: the
			// emission times the tool found (arrival − emit->recv) in the
			// requests it sampled are, after the first's, those of one of
			// the streams the gateway passed on, to the microsecond.
			series := sum.Run.Gateway().Samples.Series
			if len(series) == 0 {
				t.Errorf("no per-token series of the gateway batch")
			}
			streams := holds.emittedGaps()
			for _, se := range series {
				if !matchesStream(se.Points, streams) {
					t.Errorf("%s request %d: emission times %.3f ms after its first token's, want those of one of the %d streams the gateway passed on:\n%.3f",
						se.Label, se.Index, seriesGaps(se.Points), len(streams), streams)
				}
			}
		})
	}
}
