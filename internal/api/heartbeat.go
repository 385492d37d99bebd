package api

// Heartbeats: what a provider sends on a stream that has been silent for a
// while (a model thinking without streaming its reasoning), so that
// proxies and load balancers do not cut it as idle. OpenAI-compatible
// servers send an SSE comment, which every SSE parser skips; Anthropic
// sends a ping event, which its SDKs skip by name.
const (
	// CommentHeartbeat is the heartbeat of Chat, Completions and
	// Responses streams: an SSE comment line, then the blank line that
	// ends it (a comment alone dispatches no event).
	CommentHeartbeat = ": ping" + sseEnd
	// AnthropicHeartbeat is the heartbeat of Anthropic streams, the
	// ping event Anthropic sends (the one after a stream's first content
	// block start, too).
	AnthropicHeartbeat = anthropicPing
)

// AppendHeartbeat appends one heartbeat of dialect d: AnthropicHeartbeat
// for Anthropic, CommentHeartbeat for the others.
func AppendHeartbeat(dst []byte, d Dialect) []byte {
	if d == Anthropic {
		return append(dst, AnthropicHeartbeat...)
	}
	return append(dst, CommentHeartbeat...)
}

// StartHeartbeats is the number of heartbeats among the start events of a
// stream of dialect d (Encoder.AppendStart): Anthropic's ping after the
// first content block's start, none elsewhere. A server that counts the
// heartbeats it wrote counts these, since a client cannot tell them from
// the others.
func StartHeartbeats(d Dialect) int {
	if d == Anthropic {
		return 1
	}
	return 0
}
