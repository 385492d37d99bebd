package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/api"
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

// startRewritingGateway serves on a loopback port, forwarding POSTs to
// upstream at upstreamPath with the request rebuilt by rebuild and the
// header X-SSE-Latency forwarded only when keepHintHeader.
func startRewritingGateway(t *testing.T, upstream, upstreamPath string, keepHintHeader bool,
	rebuild func(chatRequest) any, newRewriter func() rewriter) string {
	t.Helper()
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
		emit := func(payload string) {
			fmt.Fprintf(w, "data: %s\n\n", payload)
			fl.Flush()
		}
		rw := newRewriter()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				rw.event([]byte(strings.TrimSpace(p)), emit)
			}
		}
		rw.flush(emit)
	})
	ln := testutil.Listen(t)
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
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

// TestRewritingGateways measures through each rewriting gateway: every
// request must succeed and every token be measured, by content where pi_ts
// could not serve.
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
		held           bool // the gateway holds tokens: emit->recv mean well above a flush
	}{
		{"re-serialise", api.ChatPath, true, keepChat, func() rewriter { return reserialise{} }, false, 1, false},
		{"merge 5", api.ChatPath, true, keepChat, func() rewriter { return &merge{n: 5} }, false, 5, true},
		{"split in two", api.ChatPath, true, keepChat, func() rewriter { return split{} }, false, 1, false},
		{"chat to anthropic", "/v1/messages", false, toAnthropic, func() rewriter { return &fromAnthropic{} }, false, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln := testutil.Listen(t)
			backend := ln.Addr().String()
			gw := startRewritingGateway(t, backend, tt.path, tt.keepHintHeader, tt.rebuild, tt.rewriter)
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
			// Merging 5 tokens emitted 2 ms apart holds them 0..8 ms, 4 ms
			// on average; a gateway that forwards at once adds far less.
			mean := g.EmitRecv.Mean() / 1e6
			if tt.held && mean < 2 {
				t.Errorf("emit->recv mean %.3f ms through %s, want the ~4 ms the merging holds tokens", mean, tt.name)
			}
			if !tt.held && float64(g.EmitRecv.Percentile(0.5))/1e6 > 2 {
				t.Errorf("emit->recv p50 %.3f ms through %s, want well under one 2 ms token gap", float64(g.EmitRecv.Percentile(0.5))/1e6, tt.name)
			}
		})
	}
}
