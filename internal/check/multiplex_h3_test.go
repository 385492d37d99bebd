package check

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/client"
	"github.com/sse-latency/sse-latency/internal/server"
	"github.com/sse-latency/sse-latency/internal/testutil"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// h3Proxy serves the reverse proxy (to the server over HTTP/1.1, its
// handler wrapped by wrap) over HTTP/3 on a bound UDP socket, quic-go's
// http3.Server allowing maxStreams request streams at once on a QUIC
// connection (its MAX_STREAMS; 0: quic-go's default, 100).
func h3Proxy(wrap func(http.Handler) http.Handler, maxStreams int64) tlsGateway {
	return func(t *testing.T, backend string) (string, *tls.Config) {
		tc, _, err := server.SelfSignedTLS("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		tc.NextProtos = []string{http3.NextProtoH3}
		leaf, err := x509.ParseCertificate(tc.Certificates[0].Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		roots.AddCert(leaf) // the self-signed certificate is its own root
		srv := &http3.Server{Handler: reverseProxy(t, backend, wrap), TLSConfig: tc, QUICConfig: &quic.Config{MaxIncomingStreams: maxStreams}}
		pc := testutil.ListenUDP(t)
		done := make(chan struct{})
		go func() { defer close(done); srv.Serve(pc) }()
		t.Cleanup(func() { srv.Close(); pc.Close(); <-done })
		return pc.LocalAddr().String(), &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}
	}
}

// rejecting refuses its fourth request (the third of the multiplex
// streams, after the pre-flight request and two others) before any
// response: it takes the HTTP/3 stream over (http3.HTTPStreamer) and
// resets it with H3_REQUEST_REJECTED, as a gateway over its own limit.
func rejecting(next http.Handler) http.Handler {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) != 4 {
			next.ServeHTTP(w, r)
			return
		}
		str, err := w.(http3.HTTPStreamer).HTTPStream()
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		str.CancelRead(quic.StreamErrorCode(http3.ErrCodeRequestRejected))
		str.CancelWrite(quic.StreamErrorCode(http3.ErrCodeRequestRejected))
	})
}

// TestMultiplexH3Gateways runs the multiplex row over HTTP/3 (--http3)
// through real HTTP/3 gateways — httputil.ReverseProxy served by
// quic-go's http3.Server, forwarding to the server over HTTP/1.1: the n
// streams (8, or Options.StreamsPerConn) are bidirectional streams of
// one QUIC connection (PASS, saying so); the proxy forwarding one stream
// at a time (FAIL serialised) or resetting one mid-stream (FAIL, naming
// the reset's HTTP/3 error code; or WARN, sent again, when the reset
// overtook the stream's head); one refusing a stream before its
// response (H3_REQUEST_REJECTED: the client sends a joined stream again,
// WARN; the connection's first stream it does not, FAIL naming the code);
// and one allowing two streams at once (MAX_STREAMS 2), where the client
// waits for stream credit on the one connection (WARN, naming the limit,
// the stream that waited and the peak in flight).
func TestMultiplexH3Gateways(t *testing.T) {
	type outcome struct {
		status Status
		says   []string
	}
	for _, tt := range []struct {
		name    string
		gw      tlsGateway
		streams int
		want    []outcome // the row is one of them
	}{
		{"a reverse proxy over h3", h3Proxy(nil, 0), 0, []outcome{{Pass, []string{"8 streams at once on one h3 connection, each flushed"}}}},
		{"a reverse proxy over h3, 5 streams", h3Proxy(nil, 0), 5, []outcome{{Pass, []string{"5 streams at once on one h3 connection, each flushed"}}}},
		{"a serialising proxy over h3", h3Proxy(serialising, 0), 3, []outcome{{Fail, []string{"serialised: stream", "one at a time"}}}},
		{"a resetting proxy over h3", h3Proxy(resetting, 0), 0, []outcome{{Fail, []string{"1 of 8 streams on one connection failed",
			"reset (H3_INTERNAL_ERROR): recv error: HTTP/3 stream reset by the peer: H3_INTERNAL_ERROR"}},
			// A QUIC reset lets the receiver discard what it had not
			// read: a joined stream reset before the client read its head
			// is one refused before its response, sent again.
			{Warn, []string{" of 8 streams refused before their response", "and sent again"}}}},
		{"a rejecting proxy over h3", h3Proxy(rejecting, 0), 0, []outcome{
			{Warn, []string{"1 of 8 streams refused before their response on the shared connection (stream ", "and sent again"}},
			{Fail, []string{"1 of 8 streams on one connection failed", "reset (H3_REQUEST_REJECTED): "}}}},
		{"a proxy allowing 2 streams over h3", h3Proxy(nil, 2), 4, []outcome{{Warn, []string{"was sent only after stream",
			"allows fewer than 4 streams at once on one connection, at most ", "MAX_STREAMS: QUIC has no SETTINGS"}}}},
	} {
		r := muxRow(t, tt.name, tt.want[0].status == Pass, func() Row {
			rep, err := checkWith(t, tt.gw, Options{Client: client.Options{Dialect: api.Chat, HTTP3: true}, Only: []string{"multiplex"},
				StreamsPerConn: tt.streams})
			r, ok := rows(t, rep, err)["multiplex"]
			if !ok {
				t.Fatalf("%s: no multiplex row in %+v", tt.name, rep.Rows)
			}
			return r
		})
		matched := false
		for _, o := range tt.want {
			matched = matched || r.Status == o.status && !slices.ContainsFunc(o.says, func(s string) bool { return !strings.Contains(r.Evidence, s) })
		}
		if !matched {
			t.Errorf("%s: %s %q, want one of %+v", tt.name, r.Status, r.Evidence, tt.want)
		}
		want := tt.streams
		if want == 0 {
			want = MuxStreams
		}
		if r.Requests != want {
			t.Errorf("%s: %d requests, want %d", tt.name, r.Requests, want)
		}
		if r.Status != Pass && r.Fix == "" {
			t.Errorf("%s: a %s row without a fix", tt.name, r.Status)
		}
	}
}

// TestLimited: a stream is found held back by the stream limit only when
// its request, begun while another stream was being emitted, was sent
// after that stream's last token — never for streams sent at once,
// however late the request began, nor for streams without the times.
func TestLimited(t *testing.T) {
	last := int64(1e6 + 5e6*(MuxTokens-1)) // muxOf's last emission
	for _, tt := range []struct {
		name string
		edit func(i int, s *muxStream)
		j, k int
	}{
		{"at once", func(_ int, s *muxStream) { s.start = 1 }, -1, -1},
		{"the second sent late within the first's emission", func(i int, s *muxStream) {
			s.start = 1
			if i == 1 {
				s.sent = last - 1
				s.shift(last)
			}
		}, -1, -1},
		{"the second sent after the first's last token", func(i int, s *muxStream) {
			s.start = 1
			if i == 1 {
				s.sent = last + 1
				s.shift(last + 1)
			}
		}, 0, 1},
		{"the second begun after the first's last token: not waiting", func(i int, s *muxStream) {
			s.start = 1
			if i == 1 {
				s.start, s.sent = last+1, last+2
				s.shift(last + 2)
			}
		}, -1, -1},
		{"no start recorded", func(i int, s *muxStream) {
			if i == 1 {
				s.sent = last + 1
				s.shift(last + 1)
			}
		}, -1, -1},
		{"a stream that never sent", func(i int, s *muxStream) {
			s.start = 1
			if i == 1 {
				*s = muxStream{conn: 1, proto: client.ProtoH3, start: 1}
			}
		}, -1, -1},
	} {
		if j, k := limited(muxOf(2, tt.edit, client.ProtoH3)); j != tt.j || k != tt.k {
			t.Errorf("%s: limited = (%d, %d), want (%d, %d)", tt.name, j, k, tt.j, tt.k)
		}
	}
}

// TestMultiplexH3Row words the multiplex row of streams over HTTP/3:
// a reset names its HTTP/3 code, a GOAWAY the stream it left out, a
// request out of time waiting for a stream the stream limit; two QUIC
// connections and a stream that waited for another's end name
// MAX_STREAMS (QUIC has no SETTINGS), an HTTP/2 one
// SETTINGS_MAX_CONCURRENT_STREAMS; all at once on one passes.
func TestMultiplexH3Row(t *testing.T) {
	h3, h2 := client.ProtoH3, "h2"
	last := int64(1e6 + 5e6*(MuxTokens-1))
	failing := func(text string) []muxStream {
		return muxOf(4, func(i int, s *muxStream) {
			if i == 2 {
				s.failure, s.kind = text, "recv_error"
			}
		}, h3)
	}
	waiting := func(proto string) []muxStream {
		return muxOf(4, func(i int, s *muxStream) {
			s.start, s.inFlight = 1, min(i+1, 3)
			if i == 3 {
				s.sent = last + 1
				s.shift(last + 1)
			}
		}, proto)
	}
	flush := flushRow(verdict.Verdict{Class: verdict.Flushes, AddedP50Ms: 0.051, HoldRequests: 4, FirstTokenHoldMs: 0.02, FollowingMs: 0.051,
		Signature: &verdict.Signature{Kind: verdict.FlushPerEvent, Evidence: "each token arrived on its own, 0.051 ms after its emission (p50)"}}, 4)
	for _, tt := range []struct {
		name    string
		streams []muxStream
		status  Status
		says    string
	}{
		{"reset", failing("recv error: HTTP/3 stream reset by the peer: H3_REQUEST_CANCELLED"), Fail,
			"1 of 4 streams on one connection failed (stream 3): reset (H3_REQUEST_CANCELLED): recv error: HTTP/3 stream reset by the peer: H3_REQUEST_CANCELLED"},
		{"rejected", failing("recv error: send: HTTP/3 stream reset by the peer: H3_REQUEST_REJECTED"), Fail, "reset (H3_REQUEST_REJECTED): "},
		{"goaway", failing("recv error: send: HTTP/3: the gateway sent GOAWAY: stream not served"), Fail, "(stream 3): GOAWAY (stream not served): recv error"},
		{"closed", failing("recv error: HTTP/3 connection closed by the peer: H3_EXCESSIVE_LOAD"), Fail, "connection closed (H3_EXCESSIVE_LOAD): "},
		{"out of time for a stream", failing(h3StreamWaitText), Fail, "stream limit (MAX_STREAMS): "},
		{"two QUIC connections", muxOf(4, func(i int, s *muxStream) { s.conn = int64(1 + i/2) }, h3), Warn,
			"the 4 streams needed 2 connections: the gateway took fewer at once on one (its MAX_STREAMS: QUIC has no SETTINGS"},
		{"a stream waited over h3", waiting(h3), Warn,
			"stream 4's request, begun while stream 1 was streaming, was sent only after stream 1's last token was out: the gateway allows fewer than 4 streams at once on one connection, at most 3 in flight at once (its MAX_STREAMS"},
		{"a stream waited over h2", waiting(h2), Warn, "(its SETTINGS_MAX_CONCURRENT_STREAMS)"},
		{"at once", muxOf(4, func(_ int, s *muxStream) { s.start = 1 }, h3), Pass, "4 streams at once on one h3 connection, each flushed"},
	} {
		r := multiplexRow(muxFacts{n: 4, streams: tt.streams, flush: flush})
		if r.Status != tt.status || !strings.Contains(r.Evidence, tt.says) {
			t.Errorf("%s: %s %q, want %s saying %q", tt.name, r.Status, r.Evidence, tt.status, tt.says)
		}
	}
}

// h3StreamWaitText is the client's failure of a request whose time ran
// out waiting for a QUIC stream (client.h3StreamWait).
const h3StreamWaitText = "recv error: send: HTTP/3: no QUIC stream opened before the request's time ran out: " +
	"the gateway's stream limit (MAX_STREAMS) was reached, 2 streams in flight on the connection"

// TestH3Finding: an HTTP/3 failure's text names the reset's or the
// close's HTTP/3 error code (known or not) as the client words quic-go's
// errors, a GOAWAY's unserved stream, and the stream limit.
func TestH3Finding(t *testing.T) {
	for _, tt := range []struct{ text, want string }{
		{"recv error: HTTP/3 stream reset by the peer: H3_REQUEST_CANCELLED", "reset (H3_REQUEST_CANCELLED)"},
		{"recv error: send: HTTP/3 stream reset by the peer: H3_REQUEST_REJECTED", "reset (H3_REQUEST_REJECTED)"},
		{"recv error: HTTP/3 stream reset by the peer: unknown error code: 0x1f", "reset (0x1f)"},
		{"recv error: HTTP/3 connection closed by the peer: H3_NO_ERROR", "connection closed (H3_NO_ERROR)"},
		{"recv error: send: HTTP/3 connection closed by the peer: unknown error code: 0x0", "connection closed (0x0)"},
		{"recv error: send: HTTP/3: the gateway sent GOAWAY: stream not served", "GOAWAY (stream not served)"},
		{h3StreamWaitText, "stream limit (MAX_STREAMS)"},
		{"recv error: stream error: stream ID 5; INTERNAL_ERROR; received from peer", ""}, // HTTP/2's: h2Finding's
		{"recv error: HTTP/3: timeout: no recent network activity", ""},
		{"connection closed before [DONE]", ""},
		{"", ""},
	} {
		if got := h3Finding(tt.text); got != tt.want {
			t.Errorf("h3Finding(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

// FuzzH3Finding: any failure text (a gateway's words among them) gives a
// finding without a panic, naming a code only from the text itself.
func FuzzH3Finding(f *testing.F) {
	f.Add("recv error: HTTP/3 stream reset by the peer: H3_REQUEST_CANCELLED")
	f.Add("recv error: HTTP/3 stream reset by the peer: unknown error code: 0x1f")
	f.Add("recv error: send: HTTP/3 connection closed by the peer: H3_NO_ERROR")
	f.Add("recv error: send: HTTP/3: the gateway sent GOAWAY: stream not served")
	f.Add(h3StreamWaitText)
	f.Add("HTTP/3 stream reset by the peer: ")
	f.Fuzz(func(t *testing.T, text string) {
		got := h3Finding(text)
		if got == "" {
			return
		}
		switch {
		case got == "GOAWAY (stream not served)", got == "stream limit (MAX_STREAMS)":
			if word := strings.TrimSuffix(strings.SplitN(got, "(", 2)[1], ")"); !strings.Contains(text, word) {
				t.Errorf("h3Finding(%q) = %q: words the text does not have", text, got)
			}
		case strings.HasPrefix(got, "reset ("), strings.HasPrefix(got, "connection closed ("):
			code := strings.TrimSuffix(strings.SplitN(got, "(", 2)[1], ")")
			if code == "" || !strings.Contains(text, "by the peer: "+code) && !strings.Contains(text, "unknown error code: "+code) {
				t.Errorf("h3Finding(%q) = %q: a code the text does not have", text, got)
			}
		default:
			t.Errorf("h3Finding(%q) = %q: no finding of its own", text, got)
		}
	})
}
