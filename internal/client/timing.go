package client

import (
	"iter"
	"maps"
	"slices"
	"strings"

	gwid "github.com/sse-latency/sse-latency/internal/gateway"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/wire"
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

// gatewayHeaders returns the headers of a response head that help name
// the gateway (gateway.FromHeader: cleaned, each value bounded), at most
// gwid.MaxHeaders of them, from fields (every field of the head, in
// order); nil when there are none. What it keeps is a copy: the record
// does not hold the head alive.
func gatewayHeaders(fields iter.Seq2[string, string]) []result.HeaderField {
	var out []result.HeaderField
	for name, value := range fields {
		if len(out) == gwid.MaxHeaders {
			break
		}
		if h, ok := gwid.FromHeader(name, value); ok {
			out = append(out, h)
		}
	}
	return out
}

// headFields are the fields of an HTTP/1.x head, in order.
func headFields(fs []wire.Field) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, f := range fs {
			if !yield(f.Name, f.Value) {
				return
			}
		}
	}
}

// mapFields are the fields of an HTTP/2 head, by name (sorted, for a
// record that does not depend on the map's order).
func mapFields(h map[string][]string) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, name := range slices.Sorted(maps.Keys(h)) {
			for _, v := range h[name] {
				if !yield(name, v) {
					return
				}
			}
		}
	}
}
