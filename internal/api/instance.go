package api

// A server replica's instance id travels with every event that carries
// pi_ts, as a top-level field beside it ("pi_ts":…,"pi_instance":"srv-a"),
// and in the response head (InstanceHeader), for a gateway that rebuilds
// the events and drops unknown fields: it tells a client reading several
// servers' control endpoints which one's clock and records a token's
// emission belongs to. A server without an instance id (the reference's
// behaviour, and the single-process run) sends neither.

// InstanceKey is the event field that names the server instance.
const InstanceKey = "pi_instance"

// InstanceHeader is the response field that names the server instance.
const InstanceHeader = "X-SSE-Latency-Instance"

// InstanceField is the encoded field `,"pi_instance":"<id>"` that an
// encoder appends after pi_ts: encoded once per server, so that the
// per-token path appends a few bytes and computes nothing. The zero
// InstanceField appends nothing.
type InstanceField []byte

// NewInstanceField returns the field naming instance id, nil for "". id
// must be a valid id (ValidID), which needs no escaping.
func NewInstanceField(id string) InstanceField {
	if id == "" {
		return nil
	}
	return InstanceField(`,"` + InstanceKey + `":"` + id + `"`)
}
