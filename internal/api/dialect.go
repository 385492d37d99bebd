package api

import (
	"fmt"
	"strings"
)

// Dialect is an LLM streaming API the server speaks and the client can
// measure through.
type Dialect int

// The dialects. Chat is the reference tool's (and the default).
const (
	Chat        Dialect = iota // OpenAI Chat Completions: POST /v1/chat/completions
	Completions                // OpenAI legacy Completions: POST /v1/completions
	Responses                  // OpenAI Responses: POST /v1/responses
	Anthropic                  // Anthropic Messages: POST /v1/messages
)

// Dialects lists every dialect, in flag order.
var Dialects = []Dialect{Chat, Completions, Responses, Anthropic}

var dialectNames = [...]string{Chat: "chat", Completions: "completions", Responses: "responses", Anthropic: "anthropic"}

// String returns the dialect's --api name.
func (d Dialect) String() string {
	if d >= 0 && int(d) < len(dialectNames) {
		return dialectNames[d]
	}
	return fmt.Sprintf("dialect(%d)", int(d))
}

// ParseDialect maps an --api name to its dialect.
func ParseDialect(s string) (Dialect, error) {
	for _, d := range Dialects {
		if strings.EqualFold(s, d.String()) {
			return d, nil
		}
	}
	return 0, fmt.Errorf("unknown API %q (want chat, completions, responses or anthropic)", s)
}

// Path is the dialect's request path.
func (d Dialect) Path() string {
	switch d {
	case Completions:
		return "/v1/completions"
	case Responses:
		return "/v1/responses"
	case Anthropic:
		return "/v1/messages"
	}
	return ChatPath
}

// DialectForPath returns the dialect whose endpoint the request path ends
// with (gateways add prefixes), or false. The query string must already be
// removed. "/chat/completions" is tested before "/completions".
func DialectForPath(path string) (Dialect, bool) {
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		return Chat, true
	case strings.HasSuffix(path, "/completions"):
		return Completions, true
	case strings.HasSuffix(path, "/responses"):
		return Responses, true
	case strings.HasSuffix(path, "/messages"):
		return Anthropic, true
	}
	return 0, false
}
