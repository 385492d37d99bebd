package api

import (
	"bytes"
	"math"
	"strconv"
	"strings"
)

// Hints are the per-request parameters the client sends to the server:
// how many tokens and with what timing, and a request id that lets the
// client find the emission times of its tokens even when a gateway strips
// pi_ts. They travel three ways, so that a gateway which rebuilds the
// request JSON and drops unknown fields cannot silently change the
// measurement: as JSON fields (pi_id, pi_tokens, pi_think_ms, pi_delay_ms,
// pi_reasoning_tokens, pi_tool_call_tokens, pi_heartbeat_ms), as the
// HintHeader header, and
// as a marker line in the prompt text ("[sse-latency id=… tokens=…]"). The
// server takes each value from the JSON fields, else the header, else the
// prompt. Faults ask the server for an upstream fault (see Faults); they
// travel the same three ways.
type Hints struct {
	ID        string   // request id: letters, digits, '-', '_', '.'; at most MaxIDLen
	Tokens    *int64   // text tokens to stream
	ThinkMs   *float64 // delay before the first text (or tool-call) token, ms
	DelayMs   *float64 // delay between tokens, ms
	Reasoning *int64   // reasoning tokens to stream during the think time (key "reasoning")
	ToolCall  *int64   // argument tokens of a tool call, before the text (key "tool_call")
	// HeartbeatMs sends a heartbeat after every HeartbeatMs of silence on
	// the stream, 0 none (key "heartbeat"; see AppendHeartbeat).
	HeartbeatMs *float64
	// Cached sets the prompt tokens the usage reports as read from the
	// prefix cache, in place of the server's simulated cache (key
	// "cached"); NoCacheFigure makes the cache fields null (the server
	// has no figure: "cached=none").
	Cached *int64
	Faults Faults // upstream faults to inject (keys "cut_after", "status", …)
}

// NoCacheFigure is the Cached hint that makes the usage's cache fields
// null: "cached=none", "pi_cached_tokens":"none".
const NoCacheFigure = -1

// HintHeader is the request header that carries the hints
// ("id=gw-3-k2f9; tokens=200; think=0; delay=5; reasoning=50; tool_call=20").
const HintHeader = "X-SSE-Latency"

// MaxIDLen bounds a request id.
const MaxIDLen = 64

// promptMarker opens the hint marker in the prompt text.
const promptMarker = "[sse-latency "

// maxMarkerBytes bounds the pairs of a prompt marker, between promptMarker
// and its closing ']'.
const maxMarkerBytes = 512

// Empty reports whether no hint is set.
func (h Hints) Empty() bool {
	return h.ID == "" && h.Tokens == nil && h.ThinkMs == nil && h.DelayMs == nil && h.Reasoning == nil && h.ToolCall == nil &&
		h.HeartbeatMs == nil && h.Cached == nil && h.Faults.Empty()
}

// Merge fills the hints h lacks from o (h wins where both have one).
func (h Hints) Merge(o Hints) Hints {
	if h.ID == "" {
		h.ID = o.ID
	}
	if h.Tokens == nil {
		h.Tokens = o.Tokens
	}
	if h.ThinkMs == nil {
		h.ThinkMs = o.ThinkMs
	}
	if h.DelayMs == nil {
		h.DelayMs = o.DelayMs
	}
	if h.Reasoning == nil {
		h.Reasoning = o.Reasoning
	}
	if h.ToolCall == nil {
		h.ToolCall = o.ToolCall
	}
	if h.HeartbeatMs == nil {
		h.HeartbeatMs = o.HeartbeatMs
	}
	if h.Cached == nil {
		h.Cached = o.Cached
	}
	h.Faults = h.Faults.Merge(o.Faults)
	return h
}

// appendPairs appends "id=X<sep>tokens=N<sep>…" for the hints that are set.
func (h Hints) appendPairs(dst []byte, sep string) []byte {
	first := true
	add := func(k string) {
		if !first {
			dst = append(dst, sep...)
		}
		first = false
		dst = append(dst, k...)
		dst = append(dst, '=')
	}
	if h.ID != "" {
		add("id")
		dst = append(dst, h.ID...)
	}
	if h.Tokens != nil {
		add("tokens")
		dst = strconv.AppendInt(dst, *h.Tokens, 10)
	}
	if h.ThinkMs != nil {
		add("think")
		dst = strconv.AppendFloat(dst, *h.ThinkMs, 'f', -1, 64)
	}
	if h.DelayMs != nil {
		add("delay")
		dst = strconv.AppendFloat(dst, *h.DelayMs, 'f', -1, 64)
	}
	if h.Reasoning != nil {
		add("reasoning")
		dst = strconv.AppendInt(dst, *h.Reasoning, 10)
	}
	if h.ToolCall != nil {
		add("tool_call")
		dst = strconv.AppendInt(dst, *h.ToolCall, 10)
	}
	if h.HeartbeatMs != nil {
		add("heartbeat")
		dst = strconv.AppendFloat(dst, *h.HeartbeatMs, 'f', -1, 64)
	}
	if h.Cached != nil {
		add("cached")
		dst = appendCached(dst, *h.Cached)
	}
	return h.Faults.appendPairs(dst, sep, first)
}

// HeaderValue is the value of the HintHeader header.
func (h Hints) HeaderValue() string { return string(h.appendPairs(nil, "; ")) }

// PromptMarker is the marker appended to the prompt text:
// "[sse-latency id=gw-3-k2f9 tokens=200 think=0 delay=5]". It contains no
// character that JSON would escape.
func (h Hints) PromptMarker() string {
	return string(append(h.appendPairs([]byte(promptMarker), " "), ']'))
}

// ParseHintHeader reads the hints of a HintHeader value. Unknown keys and
// malformed values are ignored (a gateway may mangle the header; the other
// channels still count).
func ParseHintHeader(v string) Hints {
	var h Hints
	for _, part := range strings.Split(v, ";") {
		k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok {
			h.set(strings.TrimSpace(k), strings.TrimSpace(val))
		}
	}
	return h
}

// FindPromptHints looks for the prompt marker anywhere in a request body —
// whatever the dialect and however a gateway re-wrapped the messages — and
// reads its hints. The last marker wins (a conversation may quote older ones).
func FindPromptHints(body []byte) Hints {
	i := bytes.LastIndex(body, []byte(promptMarker))
	if i < 0 {
		return Hints{}
	}
	rest := body[i+len(promptMarker):]
	end := bytes.IndexByte(rest, ']')
	if end < 0 || end > maxMarkerBytes {
		return Hints{}
	}
	var h Hints
	for _, f := range strings.Fields(string(rest[:end])) {
		if k, v, ok := strings.Cut(f, "="); ok {
			h.set(k, v)
		}
	}
	return h
}

// set records one key=value hint if the value is valid.
func (h *Hints) set(k, v string) {
	switch k {
	case "id":
		if ValidID(v) {
			h.ID = v
		}
	case "tokens", "reasoning", "tool_call":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > math.MaxInt32 {
			return
		}
		switch k {
		case "tokens":
			h.Tokens = &n
		case "reasoning":
			h.Reasoning = &n
		default:
			h.ToolCall = &n
		}
	case "cached":
		if n, ok := parseCached(v); ok {
			h.Cached = &n
		}
	case "think", "delay", "heartbeat":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return
		}
		switch k {
		case "think":
			h.ThinkMs = &f
		case "delay":
			h.DelayMs = &f
		default:
			h.HeartbeatMs = &f
		}
	default:
		h.Faults.set(k, v)
	}
}

// ValidID reports whether s can serve as a request id: 1..MaxIDLen
// characters among letters, digits, '-', '_' and '.'.
func ValidID(s string) bool {
	if s == "" || len(s) > MaxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// appendCached appends a Cached hint's value: a count, or "none".
func appendCached(dst []byte, n int64) []byte {
	if n < 0 {
		return append(dst, "none"...)
	}
	return strconv.AppendInt(dst, n, 10)
}

// parseCached reads a Cached hint's value: "none" (NoCacheFigure) or a
// count from 0 to 2³¹−1.
func parseCached(v string) (int64, bool) {
	if v == "none" {
		return NoCacheFigure, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt32 {
		return 0, false
	}
	return n, true
}
