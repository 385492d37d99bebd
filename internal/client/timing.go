package client

import (
	"strings"

	"github.com/sse-latency/sse-latency/internal/result"
)

// Timing header names, as gateways send them (compared case-insensitively).
const (
	headerLiteLLMOverhead = "x-litellm-overhead-duration-ms"
	headerKongProxy       = "X-Kong-Proxy-Latency"
	headerKongUpstream    = "X-Kong-Upstream-Latency"
	headerServerTiming    = "Server-Timing"
)

// timingHeaders returns the timing headers of a response head, raw, from
// values (every value of a field, by name): the first value of the single
// ones, every Server-Timing field joined as one list.
func timingHeaders(values func(name string) []string) result.TimingHeaders {
	first := func(name string) string { return firstValue(values, name) }
	return result.TimingHeaders{
		LiteLLMOverhead: first(headerLiteLLMOverhead),
		KongProxy:       first(headerKongProxy),
		KongUpstream:    first(headerKongUpstream),
		ServerTiming:    strings.Join(values(headerServerTiming), ", "),
	}
}

// firstValue is the first value of the field name, "" when absent.
func firstValue(values func(name string) []string, name string) string {
	if v := values(name); len(v) > 0 {
		return v[0]
	}
	return ""
}
