package control

import (
	"context"
	"sync"
	"time"

	"github.com/sse-latency/sse-latency/internal/clocksync"
)

// Defaults of a Syncer.
const (
	// DefaultBurst is the number of exchanges of one estimate: the first
	// often pays for a connection, the others find the shortest round
	// trips.
	DefaultBurst = 8
	// DefaultSyncEvery is the time between estimates during a run: often
	// enough that clocks drifting apart by tens of parts per million move
	// by less than a microsecond a second in between, rarely enough to cost
	// nothing.
	DefaultSyncEvery = 10 * time.Second
	// exchangeTimeout bounds one exchange.
	exchangeTimeout = 5 * time.Second
)

// Syncer estimates the server's clock offset through a Client, and keeps
// the run's estimates (clocksync.Tracker). It is safe for concurrent use.
type Syncer struct {
	c     *Client
	burst int

	mu sync.Mutex
	tr clocksync.Tracker
}

// NewSyncer returns a Syncer that makes bursts of burst exchanges (0:
// DefaultBurst) through c.
func NewSyncer(c *Client, burst int) *Syncer {
	if burst <= 0 {
		burst = DefaultBurst
	}
	return &Syncer{c: c, burst: burst}
}

// Sync makes one burst of exchanges and adds its estimate to the run's. An
// exchange that fails ends the burst with its error, and nothing is added.
func (s *Syncer) Sync(ctx context.Context) (clocksync.Estimate, error) {
	samples := make([]clocksync.Sample, 0, s.burst)
	for range s.burst {
		ectx, cancel := context.WithTimeout(ctx, exchangeTimeout)
		smp, err := s.c.Exchange(ectx)
		cancel()
		if err != nil {
			return clocksync.Estimate{}, err
		}
		samples = append(samples, smp)
	}
	e, err := clocksync.FromSamples(samples)
	if err != nil {
		return clocksync.Estimate{}, err
	}
	s.mu.Lock()
	s.tr.Add(e)
	s.mu.Unlock()
	return e, nil
}

// Run syncs every every until ctx is done; a failed burst goes to onErr
// (when set) and the previous estimate stays.
func (s *Syncer) Run(ctx context.Context, every time.Duration, onErr func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.Sync(ctx); err != nil && ctx.Err() == nil && onErr != nil {
			onErr(err)
		}
	}
}

// Current is the estimate to correct a reading with now; false before the
// first.
func (s *Syncer) Current() (clocksync.Estimate, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tr.Current()
}

// Summary is the run's clock figures so far; false before the first
// estimate.
func (s *Syncer) Summary() (clocksync.Summary, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tr.Summary()
}
