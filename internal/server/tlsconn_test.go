package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/evloop"
	"github.com/sse-latency/sse-latency/internal/testutil"
	"github.com/sse-latency/sse-latency/internal/tlsrecord"
)

// dialTLS opens a crypto/tls HTTP/1.1 connection to srv, of at most TLS
// version max (0: any), bounded by a deadline.
func dialTLS(t *testing.T, srv *Server, roots *x509.CertPool, max uint16) *tls.Conn {
	t.Helper()
	c, _ := dialRaw(t, srv)
	tc := tls.Client(c, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}, MaxVersion: max})
	if err := tc.Handshake(); err != nil {
		t.Fatalf("TLS handshake: %v", err)
	}
	return tc
}

// TestTLSTokensWrittenByShard checks that the tokens of a TLS 1.3
// HTTP/1.1 stream are sealed and written by the shard, like plain ones —
// none is handed to a goroutine — and that a TLS 1.2 client, which the
// record layer does not take, still gets its streams, each token then
// handed to the connection's goroutine.
func TestTLSTokensWrittenByShard(t *testing.T) { forEngines(t, testTLSTokensWrittenByShard) }

func testTLSTokensWrittenByShard(t *testing.T, e evloop.Engine) {
	tlsCfg, roots, _ := selfSigned(t)
	srv := startServer(t, Config{Tokens: 5, DelayMs: 0.1, TLS: tlsCfg, Engine: e})

	c := dialTLS(t, srv, roots, 0)
	if v := c.ConnectionState().Version; v != tls.VersionTLS13 {
		t.Fatalf("negotiated %s, want TLS 1.3", tls.VersionName(v))
	}
	r := bufio.NewReader(c)
	for i, st := range []kaStep{streamStep(api.Chat, 20, "s1"), streamStep(api.Responses, 7, "s2")} {
		send(t, c, st.req)
		checkStep(t, r, fmt.Sprint("TLS 1.3 stream ", i), st, true)
	}
	if n := srv.TokenHandoffs(); n != 0 {
		t.Errorf("TLS 1.3: TokenHandoffs() = %d, want 0 (every token written by its shard)", n)
	}
	if n := srv.TLSFallbacks(); n != 0 {
		t.Errorf("TLS 1.3: TLSFallbacks() = %d, want 0", n)
	}
	if n := srv.Lateness().N(); n != 27 {
		t.Errorf("Lateness().N() = %d, want one sample per token (27)", n)
	}

	c12 := dialTLS(t, srv, roots, tls.VersionTLS12)
	if v := c12.ConnectionState().Version; v != tls.VersionTLS12 {
		t.Fatalf("negotiated %s, want TLS 1.2", tls.VersionName(v))
	}
	// Tokens 20 ms apart: a token reaches the shard (and is handed back
	// with evWrite) once the goroutine that starts a stream has written
	// what is due and finds the next token in the future. At 0.1 ms a
	// loaded race build writes every token before it looks (seen in CI);
	// at 20 ms it would have to stall 20 ms after each of ten tokens.
	r12 := bufio.NewReader(c12)
	for i, st := range []kaStep{pacedStreamStep(api.Chat, 10, "o1", 20), pacedStreamStep(api.Anthropic, 3, "o2", 20)} {
		send(t, c12, st.req)
		checkStep(t, r12, fmt.Sprint("TLS 1.2 stream ", i), st, true)
	}
	if n := srv.TLSFallbacks(); n != 1 {
		t.Errorf("TLS 1.2: TLSFallbacks() = %d, want 1", n)
	}
	if n := srv.TokenHandoffs(); n == 0 {
		t.Error("TLS 1.2: TokenHandoffs() = 0, want the tokens handed to the connection's goroutine")
	}
	if p := srv.Panics(); p != 0 {
		t.Errorf("Panics() = %d", p)
	}
}

// recordClient is a TLS 1.3 client whose records the test seals and opens
// itself with package tlsrecord, to send what crypto/tls would not (a
// KeyUpdate when the test says).
type recordClient struct {
	raw   net.Conn
	rl    *tlsrecord.Conn
	plain []byte
	buf   []byte
}

func dialRecordClient(t *testing.T, srv *Server, roots *x509.CertPool) *recordClient {
	t.Helper()
	raw, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	raw.SetDeadline(time.Now().Add(20 * time.Second))
	_, rl, why, err := tlsrecord.Client(context.Background(), raw,
		&tls.Config{RootCAs: roots, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS13})
	if err != nil || rl == nil {
		t.Fatalf("record-layer client: %v %s", err, why)
	}
	return &recordClient{raw: raw, rl: rl, buf: make([]byte, 16<<10)}
}

// Read returns the application data of the records read from the socket.
func (rc *recordClient) Read(p []byte) (int, error) {
	for len(rc.plain) == 0 {
		n, err := rc.raw.Read(rc.buf)
		var oerr error
		rc.plain, oerr = rc.rl.Open(rc.plain[:0], rc.buf[:n])
		if oerr != nil {
			return 0, oerr
		}
		if err != nil && len(rc.plain) == 0 {
			return 0, err
		}
	}
	n := copy(p, rc.plain)
	rc.plain = rc.plain[n:]
	return n, nil
}

func (rc *recordClient) send(t *testing.T, req string) {
	t.Helper()
	if _, err := rc.raw.Write(rc.rl.Seal(nil, []byte(req))); err != nil {
		t.Fatalf("writing request: %v", err)
	}
}

// TestTLSClientKeyUpdate sends a KeyUpdate, sealed by hand, in the middle
// of a TLS 1.3 stream: the stream goes on to its end, the next request —
// sealed under the client's next key — is read, and when the client asked
// for it the server's own KeyUpdate comes before the next records it
// writes (in order with the tokens: the client opens them under the
// server's next key).
func TestTLSClientKeyUpdate(t *testing.T) { forEngines(t, testTLSClientKeyUpdate) }

func testTLSClientKeyUpdate(t *testing.T, e evloop.Engine) {
	tlsCfg, roots, _ := selfSigned(t)
	for _, request := range []bool{false, true} {
		t.Run(fmt.Sprint("request_update=", request), func(t *testing.T) {
			srv := startServer(t, Config{Tokens: 5, DelayMs: 0.1, TLS: tlsCfg, Engine: e})
			c := dialRecordClient(t, srv, roots)
			r := bufio.NewReader(c)
			first := streamStep(api.Chat, 30, "k1")
			c.send(t, first.req)
			if _, err := r.Peek(1); err != nil { // the stream has begun
				t.Fatalf("first bytes of the stream: %v", err)
			}
			if _, err := c.raw.Write(c.rl.SealKeyUpdate(nil, request)); err != nil {
				t.Fatal(err)
			}
			checkStep(t, r, "the stream during which the client updated its key", first, true)
			for i, st := range []kaStep{streamStep(api.Anthropic, 4, "k2"), streamStep(api.Chat, 3, "k3")} {
				c.send(t, st.req)
				checkStep(t, r, fmt.Sprint("stream ", i, " after the client's KeyUpdate"), st, true)
			}
			want := 0
			if request {
				want = 1
			}
			if got := c.rl.KeyUpdates(); got != want {
				t.Errorf("the client followed %d KeyUpdates of the server, want %d", got, want)
			}
			if n := srv.TokenHandoffs(); n != 0 {
				t.Errorf("TokenHandoffs() = %d, want 0", n)
			}
		})
	}
}

// TestTLSFullSocket streams over TLS 1.3 to a client that does not read
// until a shard's non-blocking write has left sealed bytes behind (the
// socket full: the stream handed to its goroutine to drain it); the client
// then reads the whole stream and a next one on the same connection:
// records cut by the short write go out whole and in order, before any
// sealed after them.
func TestTLSFullSocket(t *testing.T) { forEngines(t, testTLSFullSocket) }

func testTLSFullSocket(t *testing.T, e evloop.Engine) {
	tlsCfg, roots, _ := selfSigned(t)
	srv := startServer(t, Config{Tokens: 1, DelayMs: 0.1, TLS: tlsCfg, Engine: e, Shards: 1})
	c := dialTLS(t, srv, roots, 0)
	// 22 MB through -race on a loaded 2-vCPU machine took 26 s once: the
	// deadline bounds a hang, not the speed.
	c.SetDeadline(time.Now().Add(3 * time.Minute))
	// At no delay: ~22 MB, more than the socket buffers take. (A small
	// SO_RCVBUF would need fewer, but a 4 KiB one stalls loopback TCP
	// for plain connections too once the reader resumes.)
	const n = 100_000
	big := kaStep{req: kaRequest("/v1/chat/completions", fmt.Sprintf(`{"stream":true,"pi_tokens":%d,"pi_delay_ms":0}`, n)),
		stream: true, d: api.Chat, n: n}
	send(t, c, big.req)
	testutil.Await(t, "a write to leave bytes on a full socket", func() bool { return srv.flushes.Load() > 0 })
	r := bufio.NewReader(c)
	checkStep(t, r, "the stream that filled the socket", big, true)
	st := streamStep(api.Chat, 3, "f2")
	send(t, c, st.req)
	checkStep(t, r, "the next stream", st, true)
	if n := srv.TokenHandoffs(); n != 0 {
		t.Errorf("TokenHandoffs() = %d, want 0", n)
	}
}

// TestTLSBadRecord sends, after a TLS 1.3 handshake, a record that fails
// authentication: the server closes the connection, logs the record
// layer's error naming it, and serves the next connection.
func TestTLSBadRecord(t *testing.T) {
	tlsCfg, roots, _ := selfSigned(t)
	var mu sync.Mutex
	var lines []string
	srv := startServer(t, Config{Tokens: 2, DelayMs: 0.1, TLS: tlsCfg,
		Logf: func(f string, a ...any) { mu.Lock(); lines = append(lines, fmt.Sprintf(f, a...)); mu.Unlock() }})
	c := dialRecordClient(t, srv, roots)
	bad := []byte{23, 3, 3, 0, 20}
	bad = append(bad, make([]byte, 20)...) // 20 bytes no key seals to
	if _, err := c.raw.Write(bad); err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, c); err == nil && n != 0 || isTimeout(err) {
		t.Errorf("after a bad record the server sent %d bytes (%v), want the connection closed", n, err)
	}
	testutil.Await(t, "the server to log the bad record", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range lines {
			if strings.Contains(l, "reading request") && strings.Contains(l, tlsrecord.ErrBadRecordMAC.Error()) {
				return true
			}
		}
		return false
	})
	next := dialRecordClient(t, srv, roots)
	st := streamStep(api.Chat, 2, "b2")
	next.send(t, st.req)
	checkStep(t, bufio.NewReader(next), "the next connection", st, true)
	if p := srv.Panics(); p != 0 {
		t.Errorf("Panics() = %d", p)
	}
}
