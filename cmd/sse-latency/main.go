// Command sse-latency measures how much latency an HTTP gateway adds to
// streamed (Server-Sent Events) LLM responses. See the README.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/sse-latency/sse-latency/internal/cli"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		cancel() // first signal: stop, report what was measured
		<-sigs
		os.Exit(cli.ExitInterrupted) // second signal: leave at once
	}()
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	cancel()
	os.Exit(code)
}
