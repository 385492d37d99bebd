package api

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Limits caps the hints a server accepts. A zero field sets no cap of its
// own; the parsers' bounds still hold (a token count within 0..2³¹−1, finite
// times). A heartbeat interval is always bounded below (MinHeartbeatMs).
type Limits struct {
	MaxTokens int64         // most tokens one request may ask for, in each phase
	MaxDelay  time.Duration // most think time, most delay between tokens, and longest heartbeat interval
}

// MinHeartbeatMs is the shortest heartbeat interval a request may ask for
// (pi_heartbeat_ms; 0 asks for none): heartbeats keep a silent stream
// alive across idle timeouts of seconds, and one every few microseconds
// would only make the server write without pause.
const MinHeartbeatMs = 10

// ErrHintAboveLimit reports a hint above the server's Limits.
var ErrHintAboveLimit = errors.New("api: pi_* hint above the server's limit")

// ErrHintBelowMinimum reports a heartbeat interval hint below
// MinHeartbeatMs.
var ErrHintBelowMinimum = errors.New("api: pi_* hint below its minimum")

// ErrTextOnly reports hints that ask the legacy Completions API for
// reasoning or a tool call.
var ErrTextOnly = errors.New("api: the Completions API streams text only")

// CheckPhases returns an error wrapping ErrTextOnly, naming the hint, when
// the merged hints h ask dialect d for a phase it does not have: reasoning
// or tool-call tokens from Completions (0 is accepted). The server's own
// defaults are not hints: it drops them for Completions.
func CheckPhases(d Dialect, h Hints) error {
	if d != Completions {
		return nil
	}
	for _, n := range [...]struct {
		name string
		v    *int64
	}{{"pi_reasoning_tokens", h.Reasoning}, {"pi_tool_call_tokens", h.ToolCall}} {
		if n.v != nil && *n.v > 0 {
			return fmt.Errorf("%w: %s %d cannot be served on /completions (no reasoning or tool calls there; use chat, responses or messages)",
				ErrTextOnly, n.name, *n.v)
		}
	}
	return nil
}

// HintSource names the channel a hint came from, for error messages.
type HintSource int

// The three channels of the hints, in the order the server takes them.
const (
	FromJSON   HintSource = iota // the pi_* fields of the JSON body
	FromHeader                   // the HintHeader header
	FromPrompt                   // the prompt marker
	FromServer                   // the server's own faults (the --fault flag), not a hint
)

// name is how the hint called key is spelled in channel src.
func (src HintSource) name(key string) string {
	if src == FromJSON {
		switch key {
		case "tokens":
			return "pi_tokens"
		case "think":
			return "pi_think_ms"
		case "reasoning":
			return "pi_reasoning_tokens"
		case "tool_call":
			return "pi_tool_call_tokens"
		case "heartbeat":
			return "pi_heartbeat_ms"
		case "delay":
			return "pi_delay_ms"
		default: // the faults
			return "pi_" + key
		}
	}
	return key
}

func (src HintSource) where() string {
	switch src {
	case FromJSON:
		return "in the JSON body"
	case FromServer:
		return "in the server's faults"
	case FromHeader:
		return "in the " + HintHeader + " header"
	default:
		return "in the prompt marker"
	}
}

// Resolve merges the hints of the three channels — the JSON fields, the
// HintHeader header and the prompt marker — taking each value from the
// first channel that has it (as Merge does), and checks each value it takes
// against l (the faults against their caps too: see Faults); values that
// an earlier channel overrides are not checked (a conversation may quote
// an old marker). The error wraps ErrHintAboveLimit (ErrHintBelowMinimum
// for a heartbeat interval above 0 and below MinHeartbeatMs) and names the
// hint as its channel spells it, the channel, the value and the limit.
func (l Limits) Resolve(json, header, prompt Hints) (Hints, error) {
	var h Hints
	maxMs := float64(l.MaxDelay) / float64(time.Millisecond)
	delayLimit := formatMs(maxMs) + " ms (" + l.MaxDelay.String() + ")"
	for src, c := range [...]Hints{json, header, prompt} {
		src := HintSource(src)
		if h.ID == "" {
			h.ID = c.ID
		}
		for _, n := range [...]struct {
			key  string
			into **int64
			val  *int64
		}{{"tokens", &h.Tokens, c.Tokens}, {"reasoning", &h.Reasoning, c.Reasoning}, {"tool_call", &h.ToolCall, c.ToolCall}} {
			if *n.into != nil || n.val == nil {
				continue
			}
			if l.MaxTokens > 0 && *n.val > l.MaxTokens {
				return h, hintErr(src, n.key, strconv.FormatInt(*n.val, 10), strconv.FormatInt(l.MaxTokens, 10))
			}
			*n.into = n.val
		}
		if h.ThinkMs == nil && c.ThinkMs != nil {
			if l.MaxDelay > 0 && *c.ThinkMs > maxMs {
				return h, hintErr(src, "think", formatMs(*c.ThinkMs), delayLimit)
			}
			h.ThinkMs = c.ThinkMs
		}
		if h.DelayMs == nil && c.DelayMs != nil {
			if l.MaxDelay > 0 && *c.DelayMs > maxMs {
				return h, hintErr(src, "delay", formatMs(*c.DelayMs), delayLimit)
			}
			h.DelayMs = c.DelayMs
		}
		if h.HeartbeatMs == nil && c.HeartbeatMs != nil {
			switch v := *c.HeartbeatMs; {
			case v > 0 && v < MinHeartbeatMs:
				return h, minErr(src, "heartbeat", formatMs(v), formatMs(MinHeartbeatMs)+" ms (0: no heartbeats)")
			case l.MaxDelay > 0 && v > maxMs:
				return h, hintErr(src, "heartbeat", formatMs(v), delayLimit)
			}
			h.HeartbeatMs = c.HeartbeatMs
		}
		if h.Cached == nil {
			h.Cached = c.Cached
		}
	}
	var err error
	h.Faults, err = l.resolveFaults(json.Faults, header.Faults, prompt.Faults)
	return h, err
}

// hintErr is the error of a hint above its limit.
func hintErr(src HintSource, key, value, limit string) error {
	return boundErr(ErrHintAboveLimit, src, key, value, "the limit is "+limit)
}

// minErr is the error of a hint below its minimum.
func minErr(src HintSource, key, value, minimum string) error {
	return boundErr(ErrHintBelowMinimum, src, key, value, "the minimum is "+minimum)
}

// boundErr wraps err with the hint called key as channel src spells it,
// its value and channel, and the bound it crossed.
func boundErr(err error, src HintSource, key, value, bound string) error {
	sep := "="
	if src == FromJSON {
		sep = " "
	}
	return fmt.Errorf("%w: %s%s%s %s; %s", err, src.name(key), sep, value, src.where(), bound)
}

// formatMs prints a millisecond figure as compactly as %g would.
func formatMs(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
