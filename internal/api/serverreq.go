package api

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ServerRequest is what the server reads from a request body of any dialect
// (Chat, Completions, Responses, Anthropic): the fields they share are
// enough to answer. Unknown fields are ignored, as a real backend would.
type ServerRequest struct {
	Stream       bool   // "stream": true
	Model        string // "model"; "" when absent or null
	IncludeUsage bool   // "stream_options":{"include_usage":true} (Chat, Completions)
	Hints        Hints  // the JSON hint fields pi_id, pi_tokens, pi_think_ms, pi_delay_ms, pi_reasoning_tokens, pi_tool_call_tokens, pi_heartbeat_ms, pi_cached_tokens, and the faults'
}

// ParseServerRequest decodes a request body. An empty body is a
// non-streaming request without hints. It fails on malformed JSON, on a
// field of the wrong type and on a bad hint (ErrBadHint): a pi_* number that
// is not a number or is too large, a pi_id that is not a valid id (ValidID).
// A negative number hint becomes 0 (SPEC §3). The hints of the
// HintHeader header and of the prompt marker (FindPromptHints) are the
// caller's to merge, with the JSON fields first, and to check against its
// caps (Limits.Resolve does both).
func ParseServerRequest(body []byte) (ServerRequest, error) {
	var req ServerRequest
	if len(bytes.TrimSpace(body)) == 0 {
		return req, nil
	}
	var raw struct {
		Stream        *bool   `json:"stream"`
		Model         *string `json:"model"`
		StreamOptions *struct {
			IncludeUsage *bool `json:"include_usage"`
		} `json:"stream_options"`
		PiID      json.RawMessage `json:"pi_id"`
		PiTokens  json.RawMessage `json:"pi_tokens"`
		PiThinkMs json.RawMessage `json:"pi_think_ms"`
		PiDelayMs json.RawMessage `json:"pi_delay_ms"`
		PiReason  json.RawMessage `json:"pi_reasoning_tokens"`
		PiTool    json.RawMessage `json:"pi_tool_call_tokens"`
		PiBeat    json.RawMessage `json:"pi_heartbeat_ms"`
		PiCached  json.RawMessage `json:"pi_cached_tokens"`
		faultFields
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return req, fmt.Errorf("invalid JSON body: %w", err)
	}
	if raw.Stream != nil {
		req.Stream = *raw.Stream
	}
	if raw.Model != nil {
		req.Model = *raw.Model
	}
	if o := raw.StreamOptions; o != nil && o.IncludeUsage != nil {
		req.IncludeUsage = *o.IncludeUsage
	}
	var err error
	if req.Hints.ID, err = idHint(raw.PiID); err != nil {
		return req, err
	}
	if req.Hints.Tokens, err = intHint("pi_tokens", raw.PiTokens); err != nil {
		return req, err
	}
	if req.Hints.ThinkMs, err = floatHint("pi_think_ms", raw.PiThinkMs); err != nil {
		return req, err
	}
	if req.Hints.DelayMs, err = floatHint("pi_delay_ms", raw.PiDelayMs); err != nil {
		return req, err
	}
	if req.Hints.Reasoning, err = intHint("pi_reasoning_tokens", raw.PiReason); err != nil {
		return req, err
	}
	if req.Hints.ToolCall, err = intHint("pi_tool_call_tokens", raw.PiTool); err != nil {
		return req, err
	}
	if req.Hints.HeartbeatMs, err = floatHint("pi_heartbeat_ms", raw.PiBeat); err != nil {
		return req, err
	}
	if req.Hints.Cached, err = cachedHint(raw.PiCached); err != nil {
		return req, err
	}
	if req.Hints.Faults, err = raw.faults(); err != nil {
		return req, err
	}
	return req, nil
}

// cachedHint reads pi_cached_tokens: absent or null is no hint; else a
// count of tokens (0 to 2³¹−1), or the string "none" (NoCacheFigure).
func cachedHint(raw json.RawMessage) (*int64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	v := string(raw)
	if v == `"none"` {
		v = "none"
	}
	n, ok := parseCached(v)
	if !ok {
		return nil, fmt.Errorf(`%w: pi_cached_tokens must be a count of tokens or "none", got %.40s`, ErrBadHint, raw)
	}
	return &n, nil
}

// idHint reads pi_id: absent or null is no id; otherwise a string that
// ValidID accepts.
func idHint(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var id string
	if err := json.Unmarshal(raw, &id); err != nil || !ValidID(id) {
		return "", fmt.Errorf("%w: pi_id must be a string of 1 to %d letters, digits, '-', '_' or '.', got %.40s",
			ErrBadHint, MaxIDLen, raw)
	}
	return id, nil
}
