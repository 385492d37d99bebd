package check

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// The in-process gateways of these tests are real HTTP proxies in front of
// the dummy server: each forwards the request and relays the stream in its
// own way — flushing every read, or holding bytes the way a buffering
// gateway does (a buffer that fills, a timer, one event behind, the whole
// response, an event loop that dispatches in batches, a gzip writer), or
// mishandling the upstream (hiding its cut, ignoring the client's cancel).

// upstreamTransport talks to the dummy server: no compression asked, no
// pooled connection kept past a test.
func upstreamTransport(t *testing.T) *http.Transport {
	tr := &http.Transport{DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// relayFunc writes the upstream's stream body to the client.
type relayFunc func(w http.ResponseWriter, r *http.Request, body io.Reader)

// relayGateway is a gateway that sends each request on to backend with
// upstreamCtx's context (the client's, unless it detaches), copies the
// status and the header, then hands the body to relay.
func relayGateway(t *testing.T, backend string, upstreamCtx func(*http.Request) context.Context, relay relayFunc) string {
	t.Helper()
	tr := upstreamTransport(t)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		out, err := http.NewRequestWithContext(upstreamCtx(r), r.Method, "http://"+backend+r.URL.Path, bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		for k, v := range r.Header {
			if k != "Accept-Encoding" && k != "Connection" {
				out.Header[k] = v
			}
		}
		resp, err := tr.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			if k != "Content-Length" && k != "Connection" && k != "Transfer-Encoding" {
				w.Header()[k] = v
			}
		}
		if resp.StatusCode != http.StatusOK {
			w.WriteHeader(resp.StatusCode)
			io.Copy(w, resp.Body)
			return
		}
		relay(w, r, resp.Body)
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

func clientCtx(r *http.Request) context.Context { return r.Context() }

// flushingProxy is httputil.ReverseProxy flushing every write.
func flushingProxy(t *testing.T, backend string) string {
	u, _ := url.Parse("http://" + backend)
	p := httputil.NewSingleHostReverseProxy(u)
	p.FlushInterval = -1
	p.Transport = upstreamTransport(t)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// write writes b and flushes it.
func write(w http.ResponseWriter, b []byte) error {
	if _, err := w.Write(b); err != nil {
		return err
	}
	return http.NewResponseController(w).Flush()
}

// byteThreshold releases what it holds once size bytes have gathered, and
// the rest at the end.
func byteThreshold(size int) relayFunc {
	return func(w http.ResponseWriter, _ *http.Request, body io.Reader) {
		var held []byte
		buf := make([]byte, 4096)
		for {
			n, err := body.Read(buf)
			held = append(held, buf[:n]...)
			if len(held) >= size || err != nil {
				write(w, held)
				held = held[:0]
			}
			if err != nil {
				return
			}
		}
	}
}

// pending is bytes read from the upstream and not written yet, with the
// end of the upstream's body.
type pending struct {
	mu   sync.Mutex
	b    []byte
	done bool
}

// pump reads body into p until it ends.
func (p *pending) pump(body io.Reader) {
	buf := make([]byte, 4096)
	for {
		n, err := body.Read(buf)
		p.mu.Lock()
		p.b = append(p.b, buf[:n]...)
		p.done = err != nil
		p.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// take returns what is pending and whether the body has ended.
func (p *pending) take() ([]byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.b
	p.b = nil
	return b, p.done
}

// timed releases what it holds at each wake-up of next (the time to wait
// before the next one), and the rest at the end.
func timed(next func() time.Duration) relayFunc {
	return func(w http.ResponseWriter, _ *http.Request, body io.Reader) {
		var p pending
		go p.pump(body)
		for {
			time.Sleep(next())
			b, done := p.take()
			if len(b) > 0 && write(w, b) != nil || done {
				return
			}
		}
	}
}

// period releases every d.
func period(d time.Duration) relayFunc { return timed(func() time.Duration { return d }) }

// dispatch releases at irregular wake-ups, 0 to 60 ms apart: an event
// loop that gets to the stream between other work.
func dispatch() relayFunc {
	r := rand.New(rand.NewPCG(1, 2))
	var mu sync.Mutex
	return timed(func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return time.Duration(r.Int64N(int64(60 * time.Millisecond)))
	})
}

// oneBehind releases each SSE event when the next one has arrived whole,
// the last one at the end.
func oneBehind(w http.ResponseWriter, _ *http.Request, body io.Reader) {
	var data, held []byte
	buf := make([]byte, 4096)
	for {
		n, err := body.Read(buf)
		data = append(data, buf[:n]...)
		for {
			i := bytes.Index(data, []byte("\n\n"))
			if i < 0 {
				break
			}
			if held != nil {
				write(w, held)
			}
			held = append([]byte(nil), data[:i+2]...)
			data = data[i+2:]
		}
		if err != nil {
			write(w, append(held, data...))
			return
		}
	}
}

// whole releases the whole response at its end.
func whole(w http.ResponseWriter, _ *http.Request, body io.Reader) {
	b, _ := io.ReadAll(body)
	write(w, b)
}

// gzipWhenAsked gzip-compresses the stream for a client that accepts it,
// without flushing the compressor (what it holds goes when its blocks
// fill, or at the end); other clients get every read flushed.
func gzipWhenAsked(w http.ResponseWriter, r *http.Request, body io.Reader) {
	if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		flushEach(w, r, body)
		return
	}
	w.Header().Set("Content-Encoding", "gzip")
	zw := gzip.NewWriter(w)
	io.Copy(zw, body)
	zw.Close()
}

// flushEach passes every read on at once.
func flushEach(w http.ResponseWriter, _ *http.Request, body io.Reader) {
	buf := make([]byte, 4096)
	for {
		n, err := body.Read(buf)
		if n > 0 && write(w, buf[:n]) != nil {
			return
		}
		if err != nil {
			return
		}
	}
}

// hideCut flushes every read, and on an upstream error ends its own
// response normally: the client sees a clean end.
func hideCut(w http.ResponseWriter, r *http.Request, body io.Reader) { flushEach(w, r, body) }

// keepReading flushes every read while the client is there, then reads
// the upstream to its end: the client's cancel never reaches it.
func keepReading(w http.ResponseWriter, _ *http.Request, body io.Reader) {
	buf := make([]byte, 4096)
	gone := false
	for {
		n, err := body.Read(buf)
		if n > 0 && !gone && write(w, buf[:n]) != nil {
			gone = true
		}
		if err != nil {
			return
		}
	}
}

// detached is the upstream context of a gateway that does not tie the
// upstream request to the client's.
func detached(r *http.Request) context.Context { return context.WithoutCancel(r.Context()) }

var _ = net.Listen // the listener helpers live in check_test.go
