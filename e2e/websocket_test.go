//go:build linux

package e2e

import (
	"slices"
	"testing"

	"github.com/sse-latency/sse-latency/internal/client"
)

// wsArgs are the flags of the WebSocket measurements, besides
// transportArgs.
var wsArgs = []string{"--api", "responses", "--websocket"}

// TestWebSocket measures the Responses API's WebSocket mode through
// haproxy-websocket.cfg and nginx-websocket.conf, which relay the upgrade
// to the server and then tunnel the frames: every request ok and every
// token measured (by pi_ts: the frames pass unchanged), every request over
// websocket, and the overhead small — the gateway passes each frame on at
// once (the verdict flushes, the p50 of the added emit->recv below 1 ms,
// as for the flushing SSE gateways). With -k one WebSocket per slot
// carries response after response, and each is one tunnelled connection
// to the server; without -k every request has a WebSocket of its own.
func TestWebSocket(t *testing.T) {
	for _, tt := range []struct {
		name, example string
		keep          bool
	}{
		{"haproxy-websocket/k", "haproxy-websocket", true},
		{"haproxy-websocket/new-connections", "haproxy-websocket", false},
		{"nginx-websocket/k", "nginx-websocket", true},
		{"nginx-websocket/new-connections", "nginx-websocket", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkGoroutines(t)
			m := runTransport(t, transportExample(t, tt.example), "", func(*Launched) []string {
				if tt.keep {
					return append(slices.Clip(wsArgs), "-k")
				}
				return wsArgs
			})
			if m == nil {
				return
			}
			m.checkProtocol(t, client.ProtoWebSocket)
			g := m.sum.Gateway
			if tt.keep {
				m.checkClientReuse(t, transportConcurrency)
			} else if g.Opened != g.Requests || g.ReuseFailures != 0 {
				t.Errorf("client->gateway without -k: %d WebSockets opened for %d requests, %d reuse failures; want one per request\n%s",
					g.Opened, g.Requests, g.ReuseFailures, m)
			}
			// The gateway tunnels each WebSocket to one connection of its
			// own to the server, which counts each response.create.
			if conns, reqs := m.backendHop(); conns != int64(g.Opened) || reqs != int64(transportRequests) {
				t.Errorf("gateway->server: %d connections, %d requests; want a tunnel per client WebSocket (%d) carrying the %d requests\n%s",
					conns, reqs, g.Opened, transportRequests, m)
			}
			if g.ByPiTs != int64(transportRequests*transportTokens) {
				t.Errorf("%d tokens measured by pi_ts, want all %d: the frames pass the gateway unchanged\n%s", g.ByPiTs, transportRequests*transportTokens, m)
			}
			if m.warned() {
				// The tool fell behind its own schedule: a frame late by
				// milliseconds is its overload, not the gateway's (as the
				// SSE gateways' verdicts, TestGateways). The structure
				// above is judged; the timing is not.
				t.Skipf("sse-latency fell behind its own emission schedule: the machine was too busy to judge the added delay (%s)", m.figures())
			}
			v := m.sum.Verdict
			if addedP50 := overhead(m.sum.Loop.EmitRecv, g.EmitRecv, pct(0.5)); v.AddedP50Ms >= flushesMaxAddedP50Ms || addedP50 >= flushesMaxAddedP50Ms {
				t.Errorf("verdict %s, added p50 %.3f ms (emit->recv p50 %+.3f ms above loopback), want < %.0f ms: the gateway did not pass frames on at once\n%s",
					v.Class, v.AddedP50Ms, addedP50, flushesMaxAddedP50Ms, m)
			}
		})
	}
}
