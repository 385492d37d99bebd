// Package emission is the in-process record of when the dummy server wrote
// each token of each request, when it began the stream and how many
// heartbeats it wrote on it, keyed by the request id the client sent as a
// hint. It is what lets the client measure the one-way delay of tokens whose
// pi_ts a gateway removed: the client knows from the content which token
// arrived, and asks the registry when that token left. Beside the tokens,
// an entry holds when the server had read the whole request (the end of
// the request leg) and when it found that its client had gone. A client in
// another process reads the same entries over HTTP (package control).
//
// Memory is bounded: an entry lives from the first token of its stream until
// the client takes it, or until it has been finished for TTL (a request the
// client gave up on, or one from another client), and the registry holds at
// most MaxEntries entries (the oldest finished ones go first, then the
// oldest).
package emission

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
)

// Defaults of a Registry.
const (
	DefaultTTL        = 2 * time.Minute
	DefaultMaxEntries = 100_000
)

// Times holds the emission times of one stream's tokens, indexed by token.
// The server stores into it as it emits; readers load atomically.
//
// Made with StartAt, it knows each token's deadline and keeps 4 bytes per
// token: how late (or early) the token was written against its deadline,
// in nanoseconds, when that fits in an int32 (within ±2.1 s), else the
// exact time on the side (8 bytes a token more, for a stream that has
// such a token). Made with Start, it keeps the times themselves, 8 bytes
// per token.
type Times struct {
	ns       []atomic.Int64 // Start: process-clock ns; 0 = not emitted (yet)
	late     []atomic.Int32 // StartAt: see lateOf; 0 = not emitted (yet)
	deadline func(k int) int64
	farMu    sync.Mutex
	far      []int64      // StartAt: by token, the times whose lateness does not fit in late (made with the first)
	finished atomic.Int64 // wall time (Unix ns) the stream ended; 0 while streaming
	arrived  atomic.Int64 // process-clock ns: the server had read the whole request; 0 = unknown
	gone     atomic.Int64 // process-clock ns: the server found the client gone; 0 = it did not
	created  int64
	// heartbeats counts the heartbeats (SSE comments, Anthropic pings)
	// the server wrote on the stream (AddHeartbeats).
	heartbeats atomic.Int64
	// streamStart and thinkEnd are what Begin recorded.
	streamStart, thinkEnd atomic.Int64
	// usage is the token accounting the server reported (SetUsage).
	usage atomic.Pointer[api.TokenUsage]
}

// SetUsage records the token accounting the server put in the stream's
// usage objects (api.AppendUsage): what the client compares the usage
// that reached it with.
func (t *Times) SetUsage(u api.TokenUsage) {
	if t != nil {
		t.usage.Store(&u)
	}
}

// Usage returns what SetUsage recorded; false when nothing was (or for
// nil).
func (t *Times) Usage() (api.TokenUsage, bool) {
	if t == nil {
		return api.TokenUsage{}, false
	}
	if u := t.usage.Load(); u != nil {
		return *u, true
	}
	return api.TokenUsage{}, false
}

// Begin records when the server began the stream — the instant (process
// clock) it wrote its head and start events — and when its think phase
// was planned to end: the deadline of its first token after the think (0
// when it has none). From them a client tells how long a gateway held the
// stream's start from how long the server took to take the request and
// how long it meant to think.
func (t *Times) Begin(start, thinkEnd int64) {
	if t != nil {
		t.streamStart.Store(start)
		t.thinkEnd.Store(thinkEnd)
	}
}

// StreamStart and ThinkEnd return what Begin recorded, 0 if nothing (or for
// nil).
func (t *Times) StreamStart() int64 {
	if t == nil {
		return 0
	}
	return t.streamStart.Load()
}

// ThinkEnd: see StreamStart.
func (t *Times) ThinkEnd() int64 {
	if t == nil {
		return 0
	}
	return t.thinkEnd.Load()
}

// AddHeartbeats records that the server wrote n more heartbeats on the
// stream: what the client's count is compared with, to tell the server's
// heartbeats from those a gateway injected or swallowed.
func (t *Times) AddHeartbeats(n int) {
	if t != nil {
		t.heartbeats.Add(int64(n))
	}
}

// Heartbeats returns the heartbeats recorded so far (0 for nil).
func (t *Times) Heartbeats() int {
	if t == nil {
		return 0
	}
	return int(t.heartbeats.Load())
}

// farLate marks a token of late whose time is in far.
const farLate = math.MinInt32

// Set records that token k was written at ts.
func (t *Times) Set(k int, ts int64) {
	if t == nil || k < 0 || k >= t.Len() {
		return
	}
	if t.late == nil {
		t.ns[k].Store(ts)
		return
	}
	// Stored: d+1 for d >= 0, d itself for d < 0 (0 means not set).
	switch d := ts - t.deadline(k); {
	case d >= 0 && d < math.MaxInt32:
		t.late[k].Store(int32(d + 1))
	case d < 0 && d > farLate:
		t.late[k].Store(int32(d))
	default:
		// A slice of the stream's length rather than a map: 8 bytes a
		// token at most, where a map took ~50 per entry — all the tokens
		// of an overloaded run (seconds late) are far, 31 MB of map at
		// -c 4000 (docs/PERF.md).
		t.farMu.Lock()
		if t.far == nil {
			t.far = make([]int64, len(t.late))
		}
		t.far[k] = ts
		t.farMu.Unlock()
		t.late[k].Store(farLate)
	}
}

// Finish marks the stream as ended (no more tokens will be set).
func (t *Times) Finish() {
	if t != nil {
		t.finished.Store(time.Now().UnixNano())
	}
}

// SetArrived records that the server had read the whole request at ts
// (process clock).
func (t *Times) SetArrived(ts int64) {
	if t != nil {
		t.arrived.Store(ts)
	}
}

// Arrived returns when the server had read the whole request, 0 if
// unknown.
func (t *Times) Arrived() int64 {
	if t == nil {
		return 0
	}
	return t.arrived.Load()
}

// Gone marks the stream as ended because its client went away, found at
// ts (process clock): a write failed, or the stream was dropped before its
// end. It finishes the stream too.
func (t *Times) Gone(ts int64) {
	if t != nil {
		t.gone.Store(ts)
		t.Finish()
	}
}

// GoneAt returns when the server found the client gone, 0 if it did not.
func (t *Times) GoneAt() int64 {
	if t == nil {
		return 0
	}
	return t.gone.Load()
}

// Finished reports whether the stream has ended (no more tokens will be
// set).
func (t *Times) Finished() bool { return t != nil && t.finished.Load() != 0 }

// Len is the number of tokens of the stream.
func (t *Times) Len() int {
	if t == nil {
		return 0
	}
	if t.late != nil {
		return len(t.late)
	}
	return len(t.ns)
}

// At returns when token k was written, or 0 if it was not (or k is out of
// range).
func (t *Times) At(k int) int64 {
	if t == nil || k < 0 || k >= t.Len() {
		return 0
	}
	if t.late == nil {
		return t.ns[k].Load()
	}
	switch v := t.late[k].Load(); {
	case v == 0:
		return 0
	case v == farLate:
		t.farMu.Lock()
		defer t.farMu.Unlock()
		return t.far[k]
	case v > 0:
		return t.deadline(k) + int64(v) - 1
	default:
		return t.deadline(k) + int64(v)
	}
}

// Registry maps request ids to their emission times. A nil *Registry is
// valid and records nothing.
type Registry struct {
	TTL        time.Duration // how long a finished entry waits to be taken
	MaxEntries int           // cap on live entries

	mu      sync.Mutex
	entries map[string]*Times
	sweeps  int
}

// New returns an empty Registry with the default limits.
func New() *Registry {
	return &Registry{TTL: DefaultTTL, MaxEntries: DefaultMaxEntries, entries: make(map[string]*Times)}
}

// Start creates the entry of a stream of tokens tokens for id, replacing any
// earlier one (a gateway retrying upstream), and returns it for the server
// to fill. It returns nil for an empty id or a nil Registry.
func (r *Registry) Start(id string, tokens int) *Times {
	if r == nil || id == "" || tokens < 0 {
		return nil
	}
	return r.add(id, &Times{ns: make([]atomic.Int64, tokens), created: time.Now().UnixNano()})
}

// StartAt is Start for a stream whose token k is due at deadline(k): its
// entry keeps 4 bytes per token instead of 8 (see Times). deadline must
// be safe to call from any goroutine.
func (r *Registry) StartAt(id string, tokens int, deadline func(k int) int64) *Times {
	if r == nil || id == "" || tokens < 0 {
		return nil
	}
	return r.add(id, &Times{late: make([]atomic.Int32, tokens), deadline: deadline, created: time.Now().UnixNano()})
}

// add enters t under id.
func (r *Registry) add(id string, t *Times) *Times {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.entries == nil {
		r.entries = make(map[string]*Times)
	}
	r.sweeps++
	if r.sweeps%64 == 0 || len(r.entries) >= r.maxEntries() {
		r.sweepLocked()
	}
	r.entries[id] = t
	return t
}

// Take returns the emission times recorded for id and forgets them; nil if
// there are none.
func (r *Registry) Take(id string) *Times {
	if r == nil || id == "" {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.entries[id]
	delete(r.entries, id)
	return t
}

// Lookup returns the emission times recorded for id without forgetting
// them (a reader in another process, which may ask again); nil if there are
// none. The entry still expires as the package comment says.
func (r *Registry) Lookup(id string) *Times {
	if r == nil || id == "" {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.entries[id]
}

// Len is the number of entries held.
func (r *Registry) Len() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.entries)
}

func (r *Registry) maxEntries() int {
	if r.MaxEntries > 0 {
		return r.MaxEntries
	}
	return DefaultMaxEntries
}

// sweepLocked drops finished entries older than the TTL and, while over the
// cap, the oldest entries.
func (r *Registry) sweepLocked() {
	ttl := r.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	now := time.Now().UnixNano()
	for id, t := range r.entries {
		if f := t.finished.Load(); f != 0 && now-f > int64(ttl) {
			delete(r.entries, id)
		}
	}
	for len(r.entries) >= r.maxEntries() {
		var oldest string
		var at int64
		for id, t := range r.entries {
			if oldest == "" || t.created < at {
				oldest, at = id, t.created
			}
		}
		delete(r.entries, oldest)
	}
}
