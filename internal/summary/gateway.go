package summary

import (
	"slices"

	"github.com/sse-latency/sse-latency/internal/advice"
	"github.com/sse-latency/sse-latency/internal/gateway"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// MaxGatewayHeaders bounds the distinct identifying headers a batch
// keeps (each a name and a value of at most gateway.MaxValueBytes): a
// gateway that sends a new request id in each response fills it with its
// first requests', which name it as well as any.
const MaxGatewayHeaders = 16

// GatewayHeaders gathers the identifying headers of a batch's responses
// (result.Request.GatewayHeaders): the distinct ones, by name and value,
// in the order first seen, at most MaxGatewayHeaders.
type GatewayHeaders struct {
	headers []gateway.Header
}

// NewGatewayHeaders returns an empty GatewayHeaders.
func NewGatewayHeaders() *GatewayHeaders { return &GatewayHeaders{} }

// Add folds one request's headers in.
func (g *GatewayHeaders) Add(r *result.Request) {
	for _, h := range r.GatewayHeaders {
		if len(g.headers) == MaxGatewayHeaders {
			return
		}
		if !slices.ContainsFunc(g.headers, func(k gateway.Header) bool { return k.Name == h.Name }) {
			g.headers = append(g.headers, h)
		}
	}
}

// Headers returns the headers gathered, one per name (the first value
// seen).
func (g *GatewayHeaders) Headers() []gateway.Header { return slices.Clone(g.headers) }

// Advise sets the advice of v for the gateway id (nil: not identified)
// from the advice table (advice.Verdict), and the causes from it.
func Advise(v *verdict.Verdict, id *gateway.Identity) {
	if v == nil {
		return
	}
	v.Advice = advice.Verdict(id, v)
	v.Causes = advice.Causes(v.Advice)
	if len(v.Advice) == 0 {
		v.Advice = nil // absent from the document
	}
}
