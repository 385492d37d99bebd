package client_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/client"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/server"
)

// One Anthropic-style streaming request to the dummy server, with the
// server's emission registry for the tokens whose pi_ts a gateway would
// remove.
func ExampleNew() {
	reg := emission.New()
	srv, err := server.Listen("127.0.0.1:0", server.Config{Tokens: 5, DelayMs: 1, Emissions: reg})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Serve(ctx)

	q := client.New(client.Options{
		Dialect:      api.Anthropic,
		Addr:         srv.Addr().String(),
		Tokens:       5,
		ExpectTokens: 5,
		Timeout:      10 * time.Second,
		Registry:     reg,
		IDPrefix:     "run1",
	})
	rec := &result.Request{Batch: "gw", Index: 0}
	q.Do(ctx, rec)
	fmt.Printf("%s %s: %d tokens, %d by pi_ts, %d by content\n", rec.ID, rec.Failure.Error(), len(rec.Tokens), rec.ByPiTs, rec.ByContent)
	// Output: run1-gw-0 ok: 5 tokens, 5 by pi_ts, 0 by content
}
