package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/result"
)

// TestTimingHeaders: the timing headers a gateway adds to the response
// head reach the record raw, and its identifying headers cleaned, over HTTP/1.1 and h2c, every Server-Timing
// field of the head joined; a head without them leaves the record's empty.
func TestTimingHeaders(t *testing.T) {
	addr, reg := ourServer(t)
	u, _ := url.Parse("http://" + addr)
	p := httputil.NewSingleHostReverseProxy(u)
	p.FlushInterval = -1
	p.ModifyResponse = func(r *http.Response) error {
		r.Header.Set("x-litellm-overhead-duration-ms", "0.81")
		r.Header.Set("X-Kong-Proxy-Latency", "2")
		r.Header.Set("X-Kong-Upstream-Latency", "40")
		r.Header.Add("Server-Timing", `gw;dur=0.5`)
		r.Header.Add("Server-Timing", `upstream;desc="model, eu";dur=41`)
		r.Header.Set("Server", "lighttpd/1.4.69\u202e\u200b")
		r.Header.Set("Via", "1.1 varnish (Varnish/7.1)")
		r.Header.Set("X-Portkey-Trace-Id", strings.Repeat("a", 300))
		return nil
	}
	gw := httptest.NewUnstartedServer(p)
	gw.Config.Protocols = new(http.Protocols)
	gw.Config.Protocols.SetHTTP1(true)
	gw.Config.Protocols.SetUnencryptedHTTP2(true) // h2c with prior knowledge
	gw.Start()
	t.Cleanup(gw.Close)
	want := result.TimingHeaders{LiteLLMOverhead: "0.81", KongProxy: "2", KongUpstream: "40",
		ServerTiming: `gw;dur=0.5, upstream;desc="model, eu";dur=41`}
	for _, h2 := range []bool{false, true} {
		rec := &result.Request{Batch: "gw"}
		New(Options{Dialect: api.Chat, Addr: gw.Listener.Addr().String(), Tokens: 3, ExpectTokens: 3, H2C: h2,
			Timeout: 10 * time.Second, Registry: reg, IDPrefix: "timing"}).Do(context.Background(), rec)
		if !rec.OK() || rec.Timing != want || h2 != (rec.Proto == ProtoH2C) {
			t.Errorf("h2c=%v: failure %q, protocol %s, timing %+v; want ok and %+v", h2, rec.Failure.Error(), rec.Proto, rec.Timing, want)
		}
		// The identifying headers, cleaned and bounded, in the head's
		// order (HTTP/2: by name).
		got := map[string]string{}
		for _, h := range rec.GatewayHeaders {
			got[h.Name] = h.Value
		}
		if got["server"] != "lighttpd/1.4.69" || got["via"] != "1.1 varnish (Varnish/7.1)" ||
			got["x-portkey-trace-id"] != strings.Repeat("a", 128) || got["x-kong-proxy-latency"] != "2" || got["date"] != "" {
			t.Errorf("h2c=%v: gateway headers %v", h2, rec.GatewayHeaders)
		}
		if len(rec.GatewayHeaders) > 8 {
			t.Errorf("h2c=%v: %d gateway headers kept, want at most 8", h2, len(rec.GatewayHeaders))
		}
	}
	rec := &result.Request{Batch: "gw"}
	New(Options{Dialect: api.Chat, Addr: addr, Tokens: 3, ExpectTokens: 3, Timeout: 10 * time.Second}).Do(context.Background(), rec)
	if !rec.OK() || !rec.Timing.Empty() || rec.GatewayHeaders != nil {
		t.Errorf("straight to the server: failure %q, timing %+v, gateway headers %v; want ok and none", rec.Failure.Error(), rec.Timing, rec.GatewayHeaders)
	}
}
