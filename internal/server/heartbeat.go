package server

import (
	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/schedule"
)

// Heartbeats (Config.HeartbeatMs, the pi_heartbeat_ms hint): a stream that
// has written nothing for the interval writes a heartbeat — an SSE comment,
// or Anthropic's ping event (api.AppendHeartbeat) — as real providers do
// while a model thinks in silence, so that proxies with idle timeouts keep
// the stream. Each heartbeat is counted in the stream's emission record
// (emission.Times.AddHeartbeats), with the pings among the start events,
// so that the client can tell the server's heartbeats from a gateway's.
//
// Scheduling: a stream's shard wakes it at st.next, the earlier of its next
// token's deadline and its last write plus the interval. emitToken, woken
// before the token is due, writes the heartbeat instead (emitHeartbeat);
// every write moves the heartbeat on (wroteSomething).

// heartbeat is a stream's heartbeat schedule.
type heartbeat struct {
	every   int64       // ns of silence after which a heartbeat is written; 0: none
	last    int64       // when the stream last wrote (its start events, a token, a heartbeat)
	dialect api.Dialect // what a heartbeat looks like
}

// heartbeatNs is the heartbeat interval of a stream whose request's merged
// hints are h: the pi_heartbeat_ms hint, else Config.HeartbeatMs; 0 for
// none.
func (s *Server) heartbeatNs(h api.Hints) int64 {
	if h.HeartbeatMs != nil {
		return schedule.MsToNs(*h.HeartbeatMs)
	}
	return schedule.MsToNs(s.cfg.HeartbeatMs)
}

// begin records in st's emission record when the stream began (its head
// and start events of dialect d written at start), when its think is
// planned to end (the deadline of its first token after the reasoning;
// none without one) and the heartbeats among its start events
// (Anthropic's ping), and sets its heartbeats going (every ns, 0: none).
// Called before the stream goes to its shard.
func (st *stream) begin(d api.Dialect, every, start int64) {
	var thinkEnd int64
	if st.plan.Tokens > st.plan.Reasoning {
		thinkEnd = st.plan.Deadline(st.plan.Reasoning)
	}
	st.times.Begin(start, thinkEnd)
	st.times.AddHeartbeats(api.StartHeartbeats(d))
	st.hb = heartbeat{every: every, last: start, dialect: d}
	if every > 0 {
		st.next = st.wake()
	}
}

// wake is when the stream must next be woken: its next token's deadline,
// or its next heartbeat's when that is earlier.
func (st *stream) wake() int64 {
	next := st.plan.Deadline(st.k)
	if st.hb.every > 0 && st.hb.last+st.hb.every < next {
		return st.hb.last + st.hb.every
	}
	return next
}

// heartbeatDue reports whether the stream was woken for a heartbeat: its
// next token is not due yet, and its silence has lasted the interval.
func (st *stream) heartbeatDue() bool {
	now := st.clk.Now()
	return st.k < st.plan.Tokens && st.plan.Deadline(st.k) > now+earlySlack && st.hb.last+st.hb.every <= now+earlySlack
}

// wroteSomething records a write at ts and schedules the stream's next
// wake-up accordingly.
func (st *stream) wroteSomething(ts int64) {
	st.hb.last = ts
	st.next = st.wake()
}

// emitHeartbeat writes one heartbeat now, as emitToken writes a token
// (without blocking on a direct writer), and counts it in the stream's
// emission record first, so that it is counted before the client can see
// it. It leaves no emission to record the lateness of.
func (st *stream) emitHeartbeat(sc *scratch, direct bool) event {
	st.wroteN = 0
	sc.payload = api.AppendHeartbeat(sc.payload[:0], st.hb.dialect)
	sc.out = st.w.appendEvent(sc.out[:0], sc.payload)
	st.times.AddHeartbeats(1)
	st.wroteSomething(st.clk.Now())
	return st.send(sc, sc.out, direct)
}
