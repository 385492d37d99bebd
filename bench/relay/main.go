//go:build linux

// Command relay is the SSE relay of docs/cost.md's before/after, a process
// of its own whose cost sse-latency's cost block reads from /proc:
//
//	go run ./bench/relay -listen 127.0.0.1:9000 -upstream 127.0.0.1:8090 -mode naive
//	go run ./bench/relay -listen 127.0.0.1:9000 -upstream 127.0.0.1:8090 -mode chunk
//
// naive parses each SSE event, decodes and encodes its JSON and writes it
// with a flush of its own; chunk writes each upstream read as it came
// (package sserelay).
package main

import (
	"os"

	"github.com/sse-latency/sse-latency/internal/sserelay"
)

func main() { os.Exit(sserelay.Main(os.Args[1:], os.Stdout, os.Stderr)) }
