package testutil

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// H3Relay is an HTTP/3 gateway on loopback: quic-go's http3.Server on a
// bound UDP socket, with tc's certificate, in front of a standard library
// reverse proxy that forwards each request over HTTP/1.1 to the address
// upstream returns (asked per request: it may wait for an address known
// only later) and flushes every write at once (FlushInterval -1). It runs
// until the test ends and returns its UDP address and the protocol of
// each request it received (r.Proto, "HTTP/3.0"), in order.
func H3Relay(t testing.TB, upstream func() string, tc *tls.Config) (addr string, protos func() []string) {
	t.Helper()
	addr, protos, _ = H3RelayConns(t, upstream, tc)
	return addr, protos
}

// H3RelayConns is H3Relay that also returns the number of QUIC
// connections it accepted so far.
func H3RelayConns(t testing.TB, upstream func() string, tc *tls.Config) (addr string, protos func() []string, conns func() int64) {
	t.Helper()
	var accepted atomic.Int64
	var mu sync.Mutex
	var seen []string
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: "http", Host: upstream()})
			r.Out.Host = r.In.Host
		},
		FlushInterval: -1,
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Proto)
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	})
	tc = tc.Clone()
	tc.NextProtos = []string{http3.NextProtoH3}
	pc := ListenUDP(t)
	srv := &http3.Server{Handler: h, TLSConfig: tc, ConnContext: func(ctx context.Context, _ *quic.Conn) context.Context {
		accepted.Add(1)
		return ctx
	}}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(pc) }()
	t.Cleanup(func() { srv.Close(); pc.Close(); <-done })
	return pc.LocalAddr().String(), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}, accepted.Load
}
