package cli

import (
	"crypto/tls"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/batch"
	"github.com/sse-latency/sse-latency/internal/client"
	"github.com/sse-latency/sse-latency/internal/rundoc"
)

// gatewayRequest prepares the gateway batch's requests to the resolved
// target: the path (--path, or the dialect's after the URL's prefix), the
// Host header, TLS and the protocol the target and the flags ask for.
func (r *run) gatewayRequest() *client.Request {
	t := r.target
	o := r.baseOptions(r.gwAddr, -1, r.cfg.Tokens)
	o.Path = r.cfg.Path
	if o.Path == "" && t.prefix != "" {
		o.Path = t.prefix + r.cfg.Dialect().Path()
	}
	o.Host = r.cfg.HostHeader
	if o.Host == "" && t.url {
		o.Host = t.hostPort
	}
	o.Scheme, o.TLS = t.scheme, r.gwTLS
	o.HTTP2, o.H2C = r.cfg.HTTP2 && t.scheme == "https", r.cfg.H2C && t.scheme != "https"
	o.HTTP3 = r.cfg.HTTP3
	r.remoteOptions(&o)
	o.WebSocket = r.cfg.WebSocket
	o.Received = r.received
	return client.New(o)
}

// sentRequest is the head of the gateway batch's first request as it
// goes on the wire, secrets redacted, for the document; nil before the
// target is resolved.
func (r *run) sentRequest() *rundoc.SentRequest {
	if r.gwAddr == "" {
		return nil
	}
	q := r.gatewayRequest()
	s := q.SentHead(q.ID("gw", 0))
	return &rundoc.SentRequest{Proto: s.Proto, Method: s.Method, Path: s.Path, Headers: s.Headers}
}

// calibrationRequest prepares the calibration's requests of tokens tokens
// straight to the server (loopbackRequest), with at most
// batch.CalibrationMaxTokens tokens in each phase.
func (r *run) calibrationRequest(tokens int) *client.Request {
	return r.loopbackRequest(tokens, batch.CalibrationMaxTokens)
}

// loopbackRequest prepares requests of tokens tokens straight to the
// server, with at most phaseCap reasoning and tool-call tokens: on the
// dialect's own path (--path is the gateway's), with TLS when it listens
// with TLS (trusting its own certificate), in the protocol closest to the
// gateway batch's (over WebSocket with --websocket; HTTP/3 with --http3
// when it listens with TLS, HTTP/1.1 in clear text otherwise).
func (r *run) loopbackRequest(tokens, phaseCap int) *client.Request {
	o := r.baseOptions(r.selfAddr, tokens, tokens)
	o.Reasoning, o.ToolCall = min(o.Reasoning, phaseCap), min(o.ToolCall, phaseCap)
	if r.selfTLS != nil {
		o.Scheme = "https"
		o.TLS = &tls.Config{InsecureSkipVerify: true} // our own certificate, generated or given
		o.HTTP2 = r.cfg.HTTP2 || r.cfg.H2C
		o.HTTP3 = r.cfg.HTTP3 // the server serves HTTP/3 too (startServer)
	} else {
		o.H2C = r.cfg.H2C || r.cfg.HTTP2
	}
	// --websocket: the server's own WebSocket endpoint, whatever the
	// gateway speaks upstream (an SSE->WebSocket relay, say).
	o.WebSocket = r.cfg.WebSocket
	return client.New(o)
}

// baseOptions are the options of every request to addr. tokens >= 0 asks
// the server for that many; expect is how many the responses must carry.
func (r *run) baseOptions(addr string, tokens, expect int) client.Options {
	return client.Options{
		Clock:          r.clk,
		Dialect:        r.cfg.Dialect(),
		Addr:           addr,
		Model:          r.cfg.Model,
		Tokens:         tokens,
		ExpectTokens:   expect,
		IncludeUsage:   r.cfg.IncludeUsage,
		PromptBytes:    r.cfg.PromptBytes,
		Reasoning:      r.cfg.Reasoning,
		ToolCall:       r.cfg.ToolCall,
		HeartbeatMs:    r.cfg.HeartbeatMs,
		ExtraHeaders:   r.extraHeaders(),
		APIKey:         r.cfg.APIKey,
		KeepAlive:      r.cfg.KeepAlive,
		StreamsPerConn: r.cfg.StreamsPerConn,
		Timeout:        time.Duration(r.cfg.TimeoutMs) * time.Millisecond,
		IdleTimeout:    time.Duration(r.cfg.IdleMs) * time.Millisecond,
		Registry:       r.emissions,
		IDPrefix:       r.runID,
		Engine:         client.Engine(r.cfg.Engine),
		// The server's text words (--fault text=utf8) are the ones to
		// match; its other faults are its own to inject.
		Faults: api.Faults{Text: r.cfg.ServerFaults().Text},
	}
}

// engineNote says on stderr when the gateway batch cannot use the engine
// --engine asked for (-v: which engine it uses).
func (r *run) engineNote(req *client.Request) {
	e, note := req.ResolveEngine()
	if note != "" {
		r.out.errorf("note: %s\n", note)
	}
	if r.cfg.Verbose {
		r.out.debugf("client: %s engine", e)
	}
}

// extraHeaders are the request headers the flags add to the reference's:
// Accept-Encoding: gzip with --compressed (unless a -H sets it), then
// every -H, in order. The calibration sends them too, so that both sides
// send the same request.
func (r *run) extraHeaders() []string {
	var out []string
	if r.cfg.Compressed && !slices.ContainsFunc(r.cfg.Headers, func(h string) bool {
		name, _, _ := strings.Cut(h, ":")
		return strings.EqualFold(strings.TrimSpace(name), "Accept-Encoding")
	}) {
		out = append(out, "Accept-Encoding: gzip")
	}
	return append(out, r.cfg.Headers...)
}

// boundAddr is the address the server really bound, in the -L syntax: the
// host the user gave (so that a wildcard stays a wildcard) with the bound
// port (so that -L :0 works).
func boundAddr(listenHost string, bound net.Addr) string {
	port := 0
	if a, ok := bound.(*net.TCPAddr); ok {
		port = a.Port
	}
	return net.JoinHostPort(listenHost, strconv.Itoa(port))
}

// fmtMs prints a millisecond setting as compactly as C's %g would.
func fmtMs(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
