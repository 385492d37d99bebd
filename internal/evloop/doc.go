// Package evloop is the event-loop engine of sse-latency on Linux, shared
// by the client and the dummy server: a few loops, one per CPU, each a
// goroutine that owns many raw non-blocking sockets in one level-triggered
// epoll set, the precise timers (timerfd) of the server's emission shards,
// and a heap of coarse deadlines (timeouts).
//
// A loop reads a socket once per readiness, into its one read buffer, and
// hands the bytes to the socket's handler at once; the handler parses them
// in place. Other goroutines reach a loop through its inbox (Post). The
// server's emission shards run on the same loops as the client's sockets,
// so that on loopback the tokens a loop writes are read by the same loop
// without waking another goroutine: one wake-up per batch of due tokens,
// as the reference tool's single poll loop, with a timerfd's precision.
//
// The loop's goroutine parks in Go's netpoller (the epoll descriptor is
// registered there), not in a blocking epoll_wait: see docs/PERF.md for
// the measurements that chose it.
//
// Everything here is Linux-only; Available reports why the engine cannot
// run elsewhere, and the callers then use their goroutine engines.
package evloop
