package client_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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

// A concurrency slot's requests over one kept-alive connection: the second
// request reuses the connection the first opened, once the first response
// has been read to its last chunk.
func ExampleRequest_NewSession() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"choices":[{"delta":{"content":"anan"}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		io.WriteString(w, `data: {"choices":[{"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()

	q := client.New(client.Options{
		Dialect:      api.Chat,
		Addr:         srv.Listener.Addr().String(),
		Tokens:       -1,
		ExpectTokens: 1,
		Timeout:      10 * time.Second,
		KeepAlive:    true,
	})
	s := q.NewSession()
	defer s.Close()
	for i := range 2 {
		rec := &result.Request{Batch: "gw", Index: i}
		s.Do(context.Background(), rec)
		fmt.Printf("%d %s: %s conn %d reused %v\n", rec.Index, rec.Failure.Error(), rec.Proto, rec.ConnID, rec.Reused)
	}
	// Output:
	// 0 ok: HTTP/1.1 conn 1 reused false
	// 1 ok: HTTP/1.1 conn 1 reused true
}
