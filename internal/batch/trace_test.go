package batch

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/client"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/schedule"
	"github.com/sse-latency/sse-latency/internal/server"
)

// TestTraceReplay replays a four-line trace at twice its speed: each
// request is scheduled exactly at its offset over the speed from the first
// (no timing threshold: the deadlines are the schedule's arithmetic), in
// order, and the server's records prove each request's own length and
// prompt — its tokens, its prompt's tokens, and the prefix blocks it
// shared with the requests before it.
func TestTraceReplay(t *testing.T) {
	const block = 8 // tokens a block: 32 bytes
	reg := emission.New()
	addr := startServer(t, server.Config{Tokens: 1, DelayMs: 0.2, Emissions: reg, CacheBlockTokens: block})
	offsets := []int64{0, 20e6, 20e6, 50e6}
	shapes := []result.Shape{
		{Tokens: 3, PromptBytes: 24 * api.TokenBytes, Blocks: []uint64{1, 2, 3}},
		{Tokens: 7, PromptBytes: 16 * api.TokenBytes, Blocks: []uint64{1, 2}},
		{Tokens: 1, PromptBytes: 20 * api.TokenBytes, Blocks: []uint64{9, 2, 3}},
		{Tokens: 5, PromptBytes: 32 * api.TokenBytes, Blocks: []uint64{1, 2, 3, 4}},
	}
	for i := range shapes {
		shapes[i].BlockBytes = block * api.TokenBytes
	}
	req := client.New(client.Options{Dialect: api.Chat, Addr: addr, Tokens: -1, IncludeUsage: true, Timeout: 10 * time.Second,
		Registry: reg, IDPrefix: "trace"})
	// One request at a time: each finds in the cache what those before it
	// wrote.
	spec := Spec{Name: "gw", Requests: len(offsets), Concurrency: 1, Offsets: offsets, Speed: 2, Request: req,
		Shape: func(i int) *result.Shape { return &shapes[i] }}
	var usage []api.TokenUsage
	recs := collect(t, context.Background(), spec, nil)
	if len(recs) != len(offsets) {
		t.Fatalf("%d requests, want %d", len(recs), len(offsets))
	}
	sched, _ := schedule.NewOffsets(recs[0].Scheduled, offsets, 2)
	for i, rec := range recs {
		if !rec.OK() || rec.Usage == nil || !rec.Usage.Compared || len(rec.Usage.Findings) != 0 {
			t.Fatalf("request %d: %q, usage %+v", i, rec.Failure.Error(), rec.Usage)
		}
		if want := sched.Deadline(i); rec.Scheduled != want {
			t.Errorf("request %d scheduled at %d, want %d (offset %d ns at speed 2)", i, rec.Scheduled, want, offsets[i])
		}
		if i > 0 && rec.Start < recs[i-1].Start {
			t.Errorf("request %d started before request %d", i, i-1)
		}
		if rec.AskedTokens != shapes[i].Tokens || len(rec.Tokens) != shapes[i].Tokens || rec.PromptBytes != shapes[i].PromptBytes {
			t.Errorf("request %d: asked %d tokens, got %d, prompt %d bytes; want %d tokens of a %d-byte prompt",
				i, rec.AskedTokens, len(rec.Tokens), rec.PromptBytes, shapes[i].Tokens, shapes[i].PromptBytes)
		}
		var u api.TokenUsage
		if err := serverUsage(rec, &u); err != nil {
			t.Fatal(err)
		}
		usage = append(usage, u)
	}
	// What the server counted: the output, the prompt's tokens, and the
	// blocks read from the cache — block 1,2 after request 0 wrote 1,2,3;
	// none for 9,…; 1,2,3 for the last, which writes 4.
	for i, want := range []struct{ output, prompt, cached int }{{3, 24, 0}, {7, 16, 16}, {1, 20, 0}, {5, 32, 24}} {
		if u := usage[i]; u.Output != want.output || u.Prompt.Tokens != want.prompt || u.Prompt.Cached != want.cached {
			t.Errorf("request %d: the server reported %d output, %d prompt, %d cached tokens; want %d, %d, %d",
				i, u.Output, u.Prompt.Tokens, u.Prompt.Cached, want.output, want.prompt, want.cached)
		}
	}
}

// serverUsage reads back what the server reported of rec from the usage
// chunk that arrived, which the comparison with its record found intact.
func serverUsage(rec result.Request, u *api.TokenUsage) error {
	var chunk struct {
		Usage struct {
			Prompt     int `json:"prompt_tokens"`
			Completion int `json:"completion_tokens"`
			Details    struct {
				Cached int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(rec.Usage.Received[0].Payload, &chunk); err != nil {
		return err
	}
	u.Output, u.Prompt.Tokens, u.Prompt.Cached = chunk.Usage.Completion, chunk.Usage.Prompt, chunk.Usage.Details.Cached
	return nil
}
