package control

import (
	"context"
	"errors"
	"fmt"
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

	mu       sync.Mutex
	tr       clocksync.Tracker
	instance string // the instance id the endpoint answered with, once it has
	answered bool   // an exchange succeeded: instance is the endpoint's
}

// ErrSeveralInstances is a Sync's error when the exchanges of one endpoint
// answered as different server instances: the endpoint is load-balanced
// across replicas (a Service with a cluster IP), so that neither its clock
// nor its records are one server's.
var ErrSeveralInstances = errors.New("the control endpoint answers as several server instances: it is load-balanced across replicas; " +
	"reach each server's own address (a headless Service, or one --server per replica)")

// NewSyncer returns a Syncer that makes bursts of burst exchanges (0:
// DefaultBurst) through c.
func NewSyncer(c *Client, burst int) *Syncer {
	if burst <= 0 {
		burst = DefaultBurst
	}
	return &Syncer{c: c, burst: burst}
}

// Sync makes one burst of exchanges and adds its estimate to the run's. An
// exchange that fails ends the burst with its error, and nothing is added;
// so does one that names another instance than the endpoint's earlier
// answers (ErrSeveralInstances).
func (s *Syncer) Sync(ctx context.Context) (clocksync.Estimate, error) {
	samples := make([]clocksync.Sample, 0, s.burst)
	for range s.burst {
		ectx, cancel := context.WithTimeout(ctx, exchangeTimeout)
		smp, instance, err := s.c.Exchange(ectx)
		cancel()
		if err != nil {
			return clocksync.Estimate{}, err
		}
		if err := s.sawInstance(instance); err != nil {
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

// sawInstance checks the instance an exchange answered with against the
// earlier ones.
func (s *Syncer) sawInstance(instance string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.answered && instance != s.instance {
		return fmt.Errorf("%w (%q, then %q)", ErrSeveralInstances, s.instance, instance)
	}
	s.instance, s.answered = instance, true
	return nil
}

// Instance is the server instance the endpoint answers as ("" when it has
// none, or before its first answer).
func (s *Syncer) Instance() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.instance
}

// Client is the endpoint's client.
func (s *Syncer) Client() *Client { return s.c }

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
