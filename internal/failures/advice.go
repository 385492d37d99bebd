package failures

import "slices"

// AdviceRow is what to look at for failures of one kind: for those of a
// status code only (Status, HTTPStatus; 0: any), and of a shape only
// (Shape; Any: whatever their spread over the run).
type AdviceRow struct {
	Kind   Kind
	Status int
	Shape  Shape
	Text   string
}

// The advice for streams cut mid-stream, reset or closed alike: all at
// once, or each after the same time.
const (
	adviceWentAway = "every stream in flight was cut at once: the gateway went away — crashed, killed, " +
		"restarted or reloaded; its log and its supervisor say why, at that time"
	adviceDurationLimit = "each stream was cut after about the same time: a limit on a response's duration " +
		"(haproxy timeout server or timeout tunnel, nginx proxy_read_timeout, Envoy's route timeout); raise it above the longest answer"
)

// Advice is the failure advice, one row per case, in the order the
// reports give it for a group (the rows of a kind: the most specific
// first). It is about the failure — the gateway's timeouts and limits, the
// gateway having gone away — never about buffering: the verdict's likely
// causes are for streams that completed.
var Advice = []AdviceRow{
	{Kind: Refused, Text: "nothing accepted the connection: is the gateway running, and listening on this address and port? " +
		"A gateway that went away mid-run refuses every request after"},
	{Kind: ConnectTimeout, Text: "the gateway's host did not complete the TCP handshake: a firewall dropping packets, a wrong address, " +
		"or its listen queue full under load (haproxy maxconn, nginx listen … backlog=, net.core.somaxconn)"},
	{Kind: ConnectError, Text: "the connection could not be made (the example says why): a name that does not resolve, no route to the address"},
	{Kind: TLSHandshake, Text: "the TLS handshake failed: does the gateway serve TLS on this port, with a certificate for this name? " +
		"(--cacert names the CA, --insecure skips the check; a plain-HTTP port wants an http:// target)"},
	{Kind: ResetBeforeResponse, Text: "the gateway took the request and dropped the connection before answering: " +
		"at its connection limit (haproxy maxconn, nginx worker_connections), or refusing the request itself (its size, its protocol)"},
	{Kind: ClosedBeforeResponse, Text: "the gateway closed the connection before answering: at its connection limit " +
		"(haproxy maxconn, nginx worker_connections), restarting, or refusing the request itself (its size, its protocol)"},
	{Kind: HTTPStatus, Status: 429, Text: "rate limited: the gateway's (or the upstream's) rate or concurrency limit is below this load; " +
		"raise it, or lower -c / --rate"},
	{Kind: HTTPStatus, Status: 502, Text: "bad gateway: the gateway could not reach its upstream (sse-latency's server, -L) or lost it: " +
		"is its upstream address right, and up?"},
	{Kind: HTTPStatus, Status: 503, Text: "service unavailable: the gateway has no healthy upstream, or is at a limit of its own " +
		"(queue, connections, a circuit breaker)"},
	{Kind: HTTPStatus, Status: 504, Text: "gateway timeout: the gateway gave up waiting for its upstream: its upstream timeout " +
		"(nginx proxy_read_timeout, haproxy timeout server, Envoy's route timeout) is shorter than the think time (-T)"},
	{Kind: HTTPStatus, Text: "the gateway answered with an error status; the example quotes the start of its body, which says why"},
	{Kind: Redirect, Text: "the gateway redirects this path: give -t (and --path) the address that serves the API; sse-latency follows no redirect"},
	{Kind: ResetMidStream, Shape: Together, Text: adviceWentAway},
	{Kind: ClosedMidStream, Shape: Together, Text: adviceWentAway},
	{Kind: ResetMidStream, Shape: SameAge, Text: adviceDurationLimit},
	{Kind: ClosedMidStream, Shape: SameAge, Text: adviceDurationLimit},
	{Kind: ResetMidStream, Text: "the gateway reset streams in flight: a limit of its own (connections, memory, a response's size or " +
		"time) or a restart; its log says which"},
	{Kind: ClosedMidStream, Text: "the gateway closed streams in flight without ending them: a limit of its own (connections, memory, " +
		"a response's size or time) or a restart; its log says which"},
	{Kind: IdleCut, Text: "the gateway cut streams that had been silent: its idle or read timeout is shorter than the think time or " +
		"the gaps between tokens (nginx proxy_read_timeout, haproxy timeout server, Cloudflare's 100 s); raise it, or have the " +
		"upstream send heartbeats (--heartbeat)"},
	{Kind: NoTerminal, Text: "the gateway ended the responses cleanly without the stream's terminal event: it hides a cut upstream, " +
		"or drops the event; a client cannot tell the answer is whole"},
	{Kind: ErrorEvent, Text: "the stream carried an error event (the example quotes it): the gateway, or the upstream through it, gave up mid-answer"},
	{Kind: RequestTimeout, Text: "requests outlived -w: the gateway held or slowed the streams past it, or -w is shorter than an answer " +
		"takes (-T + -n × -d); raise -w to tell which"},
	{Kind: IdleTimeout, Text: "no byte arrived for --idle-timeout: the gateway held the stream silent (buffering the whole answer, " +
		"or waiting on a stalled upstream)"},
	{Kind: NoTokens, Text: "the streams ended without a content token: the gateway rewrote the events (dropping the content or pi_ts), " +
		"or answered with something else than the stream"},
	{Kind: Integrity, Text: "the content differed from what was emitted: the gateway altered the stream (re-encoding, truncating, " +
		"merging or reordering events)"},
	{Kind: Malformed, Text: "the response broke HTTP, chunked or SSE framing (the example says where): a bug of the gateway or of a " +
		"box between"},
	{Kind: ToolLimit, Text: "sse-latency itself ran out of something (open files, local ports, memory) or met a response beyond its " +
		"bounds: raise ulimit -n, lower -c, widen net.ipv4.ip_local_port_range; not the gateway's doing"},
	{Kind: Interrupted, Text: "the run was stopped while these were in flight; not a failure of the gateway"},
}

// AdviceFor returns the advice rows for group g: those of its kind whose
// status is g's or any, in the order of Advice; of those, the rows of a
// shape g has (Shapes) when there are any, else those for Any.
func AdviceFor(g *GroupSummary) []AdviceRow {
	k, _ := ParseKind(g.Kind)
	shapes := g.Shapes()
	var shaped, anyShape []AdviceRow
	for _, row := range Advice {
		switch {
		case row.Kind != k || (row.Status != 0 && row.Status != g.Status):
		case row.Shape == Any:
			anyShape = append(anyShape, row)
		case slices.Contains(shapes, row.Shape):
			shaped = append(shaped, row)
		}
	}
	if len(shaped) > 0 {
		return shaped
	}
	return anyShape
}
