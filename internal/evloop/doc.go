// Package evloop is the event-loop engine of sse-latency on Linux, shared
// by the client and the dummy server: a few loops, one per CPU, each a
// goroutine that owns many raw non-blocking sockets, the precise timers
// (timerfd) of the server's emission shards, and a heap of coarse
// deadlines (timeouts).
//
// A loop hands each socket's handler the bytes of one receive per
// readiness, and the handler parses them in place. Other goroutines reach
// a loop through its inbox (Post). The server's emission shards run on the
// same loops as the client's sockets, so that on loopback the tokens a
// loop writes are read by the same loop without waking another goroutine:
// one wake-up per batch of due tokens, as the reference tool's single
// poll loop, with a timerfd's precision.
//
// A loop has one of two backends (the backend interface): epoll (Epoll),
// a level-triggered set whose sockets the loop reads with read(2) into its
// one read buffer; or io_uring (Uring), a multishot receive per socket
// into the loop's ring of provided buffers, on a ring that the loop's
// thread owns. Either way the loop's goroutine parks in Go's netpoller —
// on the epoll descriptor, or on an eventfd the ring signals —, not in a
// blocking system call: see docs/PERF.md for the measurements that chose
// it, and for io_uring against epoll.
//
// Everything here is Linux-only; Available and UringAvailable report why
// the loops cannot run elsewhere, and the callers then use their
// goroutine engines.
package evloop
