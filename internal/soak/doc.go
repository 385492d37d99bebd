// Package soak holds only a test: a bounded soak of sse-latency through an
// in-process gateway (net/http/httputil.ReverseProxy), thousands of
// concurrent streams for about ten seconds, that checks that none fails and
// that nothing leaks — goroutines, file descriptors, heap — once the run is
// over. It is skipped with -short, and scaled down under the race detector.
package soak
