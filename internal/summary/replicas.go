package summary

import (
	"fmt"
	"slices"

	"github.com/sse-latency/sse-latency/internal/clocksync"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
)

// Replica is what one dummy server replica served in a batch across hosts
// (--server, one control endpoint per replica), with its clock: the
// per-replica split of a gateway that load-balances across several. Its
// counts and metrics add up to the batch's over all the replicas of the
// batch, and merge exactly (MergeReplicas).
type Replica struct {
	// Instance is the replica's instance id (the one its events and heads
	// carry); "" for requests no replica could be found for, or for a
	// replica that is down (its id was never read).
	Instance string `json:"instance"`
	// Control is the replica's control endpoint; "" for requests that name
	// an instance no endpoint answers as (or none).
	Control    string `json:"control"`
	Requests   int    `json:"requests"`   // requests it served, warm-ups aside
	OK         int    `json:"ok"`         // of which ok
	Tokens     int64  `json:"tokens"`     // tokens received from it, all requests and phases
	Unmeasured int64  `json:"unmeasured"` // of which without an emission time
	// The clock of the replica (each client estimates its own offset to
	// each replica): the latest estimate's offset (server − client), the
	// bound that every time converted from its clock carries, and the
	// estimates made; zero for a row without an endpoint.
	OffsetMs  float64 `json:"offset_ms"`
	BoundMs   float64 `json:"bound_ms"`
	Estimates int     `json:"estimates"`
	// RequestLeg and EmitRecv are the batch's request_leg and
	// metrics.emit_recv of the requests it served: they add up, over the
	// replicas, to the batch's.
	RequestLeg Metric `json:"request_leg"`
	EmitRecv   Metric `json:"emit_recv"`
	// Error says why tokens it served are unmeasured — the endpoint was
	// down, its fetches failed — or why the requests of a row without an
	// endpoint are not any replica's; "" when nothing went wrong.
	Error string `json:"error,omitempty"`
}

// ReplicaInfo is what the client knows of one replica besides the records:
// its endpoint, its instance id, its clock, and what went wrong reading it.
type ReplicaInfo struct {
	Instance string             // "" when down (never read) or a server without an id
	Control  string             // the endpoint's URL
	Clock    *clocksync.Summary // nil when down
	Error    string             // "" when nothing went wrong
}

// Texts of the Error of a row without an endpoint.
const (
	// ErrNoReplica: requests whose events and head named no instance, and
	// whose ids no replica had a record of.
	ErrNoReplica = "requests no replica could be found for: they named no server instance, and no replica had a record of their ids"
	// ErrUnknownInstance: requests that named an instance no endpoint
	// answers as.
	ErrUnknownInstance = "no control endpoint answers as this server instance: the gateway reached a server this run does not read"
)

// replicaStats is what a ReplicaCollector keeps of one instance.
type replicaStats struct {
	requests, ok       int
	tokens, unmeasured int64
	leg, emitRecv      *stats.Metric
}

// ReplicaCollector gathers, as a batch's requests finish, the per-replica
// split: by the instance that served each request (result.Request.Instance).
// Add is called one at a time.
type ReplicaCollector struct {
	by map[string]*replicaStats
}

// NewReplicaCollector returns an empty ReplicaCollector.
func NewReplicaCollector() *ReplicaCollector {
	return &ReplicaCollector{by: make(map[string]*replicaStats)}
}

// Add folds one finished request in (not a warm-up: the caller leaves them
// out, as the batch's statistics do). It counts as stats.Batch does: the
// tokens of every phase for the counts, the request leg of a request the
// server recorded, and the emit->recv of the visible tokens after the
// first.
func (c *ReplicaCollector) Add(r *result.Request) {
	s := c.by[r.Instance]
	if s == nil {
		s = &replicaStats{leg: stats.NewMetric(), emitRecv: stats.NewMetric()}
		c.by[r.Instance] = s
	}
	s.requests++
	if r.OK() {
		s.ok++
	}
	s.tokens += int64(len(r.Tokens))
	s.unmeasured += max(int64(len(r.Tokens)-r.ByPiTs-r.ByContent), 0)
	if r.Sent > 0 && r.ServerArrived > 0 {
		s.leg.Record(r.ServerArrived - r.Sent)
	}
	first := true
	for _, t := range r.Visible() {
		if !first && t.Emitted != 0 {
			s.emitRecv.Record(t.Arrived - t.Emitted)
		}
		first = false
	}
}

// Replicas returns the rows of the replicas of infos, in their order, each
// with what its instance served; then a row for each instance the requests
// named that no replica is (ErrUnknownInstance), and one for the requests
// attributed to none (ErrNoReplica), by instance. A replica that is down
// serves nothing the client can tell (its rows are empty but for its
// Error).
func (c *ReplicaCollector) Replicas(infos []ReplicaInfo) []Replica {
	out := make([]Replica, 0, len(infos))
	claimed := make(map[string]bool)
	for _, in := range infos {
		row := Replica{Instance: in.Instance, Control: in.Control, Error: in.Error, RequestLeg: NewMetric(nil), EmitRecv: NewMetric(nil)}
		if in.Clock != nil {
			row.OffsetMs, row.BoundMs, row.Estimates = stats.Ms(in.Clock.Offset), stats.Ms(in.Clock.Bound), in.Clock.Estimates
			if !claimed[in.Instance] {
				claimed[in.Instance] = true
				c.fill(&row, in.Instance)
			}
		}
		out = append(out, row)
	}
	var rest []string
	for id := range c.by {
		if !claimed[id] {
			rest = append(rest, id)
		}
	}
	slices.Sort(rest)
	for _, id := range rest {
		row := Replica{Instance: id, Error: ErrUnknownInstance}
		if id == "" {
			row.Error = ErrNoReplica
		}
		c.fill(&row, id)
		out = append(out, row)
	}
	return out
}

// fill sets row's counts and metrics from what instance id served.
func (c *ReplicaCollector) fill(row *Replica, id string) {
	s := c.by[id]
	if s == nil {
		return
	}
	row.Requests, row.OK, row.Tokens, row.Unmeasured = s.requests, s.ok, s.tokens, s.unmeasured
	row.RequestLeg, row.EmitRecv = NewMetric(s.leg), NewMetric(s.emitRecv)
}

// MergeReplicas merges the replica rows of several runs' batches: rows of
// the same instance and endpoint are one, their counts summed and their
// metrics merged exactly from their histograms; the bound is the largest,
// the estimates summed, the offset (each run's own, to its own client's
// clock) the first run's; the error the first one given. Rows keep the
// order in which they first appear.
func MergeReplicas(lists [][]Replica) ([]Replica, error) {
	type key struct{ instance, control string }
	var out []Replica
	at := make(map[key]int)
	legs, emits := []*stats.Metric{}, []*stats.Metric{}
	for _, list := range lists {
		for _, r := range list {
			leg, err := r.RequestLeg.Stats()
			if err != nil {
				return nil, fmt.Errorf("replica %q: request_leg: %w", r.Instance, err)
			}
			emit, err := r.EmitRecv.Stats()
			if err != nil {
				return nil, fmt.Errorf("replica %q: emit_recv: %w", r.Instance, err)
			}
			k := key{r.Instance, r.Control}
			i, ok := at[k]
			if !ok {
				at[k] = len(out)
				out, legs, emits = append(out, r), append(legs, leg), append(emits, emit)
				continue
			}
			m := &out[i]
			m.Requests += r.Requests
			m.OK += r.OK
			m.Tokens += r.Tokens
			m.Unmeasured += r.Unmeasured
			m.BoundMs = max(m.BoundMs, r.BoundMs)
			m.Estimates += r.Estimates
			if m.Error == "" {
				m.Error = r.Error
			}
			legs[i].Merge(leg)
			emits[i].Merge(emit)
		}
	}
	for i := range out {
		out[i].RequestLeg, out[i].EmitRecv = NewMetric(legs[i]), NewMetric(emits[i])
	}
	return out, nil
}
