package client

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/failures"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// gateway is a scripted raw TCP "gateway": for every connection it reads
// the whole request, then runs serve, then closes the connection. It
// returns its address.
func gateway(t *testing.T, serve func(c net.Conn)) string {
	t.Helper()
	return testutil.ServeTCP(t, func(c net.Conn) {
		if _, _, ok := readRequest(c, nil); ok {
			serve(c)
		}
	})
}

// send writes pieces, each once the client has read the one before
// (piecemeal), then returns (the connection closes). No case's outcome may
// depend on where the client's Reads cut the pieces.
func send(t *testing.T, pieces ...string) func(c net.Conn) {
	return func(c net.Conn) { piecemeal(t, c, pieces...) }
}

// stall writes pieces like send, then keeps the connection open, silent,
// until the client closes it.
func stall(t *testing.T, pieces ...string) func(c net.Conn) {
	return func(c net.Conn) {
		send(t, pieces...)(c)
		io.Copy(io.Discard, c)
	}
}

// forever writes head, then p again and again until the client goes away
// (pausing a millisecond between writes, only so as not to spin: the case
// tests the client's own bound).
func forever(head, p string) func(c net.Conn) {
	return func(c net.Conn) {
		if _, err := io.WriteString(c, head); err != nil {
			return
		}
		for {
			if _, err := io.WriteString(c, p); err != nil {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// reset writes pieces like send, then resets the connection (RST, not
// FIN).
func reset(t *testing.T, pieces ...string) func(c net.Conn) {
	return func(c net.Conn) {
		send(t, pieces...)(c)
		c.(*net.TCPConn).SetLinger(0)
	}
}

// length returns the Content-Length field and the end of the head, then
// body.
func length(body string) string {
	return "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// gz compresses s in one gzip member.
func gz(s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return b.String()
}

// hostileCase is one way a gateway can misbehave, and how the request
// must end.
type hostileCase struct {
	name   string
	serve  func(c net.Conn)
	opts   func(o *Options) // adjusts the options of the request; nil: the defaults
	want   string           // the failure text
	prefix bool             // want is only its prefix
	check  func(t *testing.T, rec *result.Request)
	// kind is what the failure summary makes of the record (failures.Of);
	// None: not checked (an ok case, or one it does not single out).
	kind failures.Kind
}

// hostileOptions are the options of a hostile case before its own: a chat
// request expecting the 3 tokens of okStream, -w 10 s, no idle timeout.
func hostileOptions(addr string) Options {
	return Options{Dialect: api.Chat, Addr: addr, Tokens: -1, ExpectTokens: 3, Timeout: 10 * time.Second}
}

// shortIdle sets a short idle timeout, for the cases that stall.
func shortIdle(o *Options) { o.IdleTimeout = 100 * time.Millisecond }

// longDrain waits for the body of a non-2xx response up to the request's
// -w, for the cases whose body comes in pieces: the wait ends when the body
// does, and a busy machine's pause between the pieces must not end it
// first.
func longDrain(o *Options) { o.DrainTimeout = o.Timeout }

// runHostile runs one case: the request must end with its failure text,
// before its -w, which every case but those that test -w sets far above
// the time the case takes; the run's context (a deadline past -w) must not
// be what ended it.
func runHostile(t *testing.T, addr string, tt hostileCase) {
	t.Helper()
	o := hostileOptions(addr)
	if tt.opts != nil {
		tt.opts(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout+10*time.Second)
	defer cancel()
	rec := &result.Request{Batch: "gw"}
	New(o).Do(ctx, rec)
	got := rec.Failure.Error()
	if got != tt.want && !(tt.prefix && strings.HasPrefix(got, tt.want)) {
		t.Errorf("failure %q, want %q (prefix: %v)", got, tt.want, tt.prefix)
	}
	if rec.Start == 0 || rec.End < rec.Start {
		t.Errorf("Start=%d End=%d: the record's times are not filled", rec.Start, rec.End)
	}
	if took := time.Duration(rec.End - rec.Start); rec.Failure.Kind != result.Timeout && took >= o.Timeout {
		t.Errorf("the request took %v, not less than its -w %v", took, o.Timeout)
	}
	if tt.check != nil {
		tt.check(t, rec)
	}
	if got := failures.Of(rec); tt.kind != failures.None && got != tt.kind {
		t.Errorf("failure %q is of kind %s, want %s", rec.Failure.Error(), got, tt.kind)
	}
}

// maxBytes checks that the client stopped reading a long response early:
// it holds at most n bytes of it.
func maxBytes(n int64) func(t *testing.T, rec *result.Request) {
	return func(t *testing.T, rec *result.Request) {
		if rec.Bytes > n {
			t.Errorf("the client read %d bytes, want at most %d (it must stop at the first bound)", rec.Bytes, n)
		}
	}
}

// TestHostileGateways sends a request to a scripted gateway per way of
// misbehaving: every one ends the request with a clear failure text, in
// bounded memory and time; none crashes or hangs the client.
func TestHostileGateways(t *testing.T) {
	chat := dialectStreams[0]
	okStream := chat.events(false, chat.tokens(3, true)...)
	const (
		chunkedHead = sseHead + "Transfer-Encoding: chunked\r\n\r\n"
		jsonErr     = `{"error":{"message":"Rate limit reached","type":"rate_limit"}}`
	)
	prettyErr := "{\n  \"error\": {\n    \"message\": \"model overloaded\",\n\t\"code\": 529\n  }\n}\n"
	nginx502 := "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.22.1</center>\r\n</body>\r\n</html>\r\n"
	longBody := strings.Repeat("0123456789", 500)
	bigLine := "data: " + strings.Repeat("a", 5<<20)

	tests := []hostileCase{
		// The status line and the head.
		{name: "invalid status line", serve: send(t, "FOO/1.0 200 OK\r\n\r\n"), want: "status FOO/1.0 200 OK"},
		{name: "invalid status line, then silence", serve: stall(t, "garbage\r\n"), want: "status garbage"},
		{name: "not HTTP at all (a TLS alert), then silence", serve: stall(t, "\x15\x03\x01\x00\x02\x02\x28"), want: `status \x15\x03\x01\x00\x02\x02(`},
		{name: "an SSH server", serve: stall(t, "SSH-2.0-OpenSSH_9.2\r\n"), want: "status SSH-2.0-OpenSSH_9.2"},
		{name: "status code of four digits", serve: send(t, "HTTP/1.1 2000 OK\r\n\r\n"), want: "status HTTP/1.1 2000 OK"},
		{name: "status line with control bytes", serve: send(t, "HTTP/1.1 200 \x1b[2J\r\n\r\n"), want: `status HTTP/1.1 200 \x1b[2J`},
		{name: "200 with a garbage head", serve: send(t, sseHead+"\x00\x01 garbage\r\n\r\n"+okStream),
			want: `malformed response: wire: malformed header field: "\x00\x01 garbage"`},
		{name: "200 with a bad Content-Length", serve: send(t, sseHead+"Content-Length: -5\r\n\r\n"+okStream),
			want: `malformed response: wire: bad Content-Length: "-5"`},
		{name: "503 with a garbage head", serve: send(t, "HTTP/1.1 503 Service Unavailable\r\nno colon here\r\n\r\n"), want: "status HTTP/1.1 503 Service Unavailable"},
		{name: "early close in the head", serve: send(t, "HTTP/1.1 200 OK\r\nContent-Ty"), want: "short response"},
		{name: "silence in the head", serve: stall(t, "HTTP/1.1 200 OK\r\nContent-Ty"), opts: shortIdle, want: "idle timeout after 100ms"},
		{name: "silence before the head", serve: stall(t), opts: shortIdle, want: "idle timeout after 100ms"},

		// Non-2xx responses with a body: the reference's text, then the
		// start of the body, escaped and bounded.
		{name: "429 with a JSON body", serve: send(t, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n"+length(jsonErr)),
			want: "status HTTP/1.1 429 Too Many Requests: " + jsonErr},
		{name: "529 with a chunked, pretty-printed JSON body in pieces", serve: send(t, "HTTP/1.1 529 Overloaded\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
			chunk(prettyErr[:20]), chunk(prettyErr[20:])+"0\r\n\r\n"), opts: longDrain,
			want: `status HTTP/1.1 529 Overloaded: { "error": { "message": "model overloaded", "code": 529 } }`},
		{name: "502 with nginx's HTML page", serve: send(t, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\n"+length(nginx502)),
			want: "status HTTP/1.1 502 Bad Gateway: 502 Bad Gateway 502 Bad Gateway nginx/1.22.1", kind: failures.HTTPStatus},
		{name: "500 with a long body", serve: send(t, "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\n\r\n"+longBody),
			want: "status HTTP/1.1 500 Internal Server Err: " + longBody[:statusExcerptBytes] + "..."},
		{name: "500 with terminal escapes and invalid UTF-8 in the body", serve: send(t, "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain; charset=utf-8\r\n"+length("\x1b[31mred\x1b[0m \xff\xfe\u202eok")),
			want: `status HTTP/1.1 500 Internal Server Err: \x1b[31mred\x1b[0m \xff\xfe\u202eok`},
		{name: "500 whose body never ends", serve: stall(t, "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\n\r\nupstream exploded\n"),
			opts: func(o *Options) { o.DrainTimeout = 50 * time.Millisecond }, want: "status HTTP/1.1 500 Internal Server Err: upstream exploded"},
		{name: "500 whose body never ends, idle", serve: stall(t, "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\n\r\nupstream exploded\n"),
			opts: func(o *Options) { o.DrainTimeout = time.Hour; shortIdle(o) }, want: "status HTTP/1.1 500 Internal Server Err: upstream exploded"},
		{name: "500 with a gzip body (not quoted)", serve: send(t, "HTTP/1.1 500 Internal Server Error\r\nContent-Encoding: gzip\r\n\r\n"+gz("oops")),
			want: "status HTTP/1.1 500 Internal Server Err"},
		{name: "500 with a binary body (not quoted)", serve: send(t, "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/octet-stream\r\n\r\n\x00\x01\x02"),
			want: "status HTTP/1.1 500 Internal Server Err"},
		{name: "502 with a body of no declared type (not quoted)", serve: send(t, "HTTP/1.1 502 Bad Gateway\r\n"+length("bad gateway")),
			want: "status HTTP/1.1 502 Bad Gateway"},
		{name: "503 with an empty body", serve: send(t, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n"), want: "status HTTP/1.1 503 Service Unavailable", kind: failures.HTTPStatus},
		{name: "500 with a broken chunked body", serve: send(t, "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n"),
			want: "status HTTP/1.1 500 Internal Server Err: hello"},

		// Interim responses.
		{name: "100 Continue, then the stream", serve: send(t, "HTTP/1.1 100 Continue\r\n\r\n", sseHead+"\r\n"+okStream), want: "ok"},
		{name: "103 Early Hints, then the stream", serve: send(t, "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"+sseHead+"\r\n"+okStream), want: "ok"},
		{name: "100, 103 and the stream in pieces", serve: send(t, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Ea", "rly Hints\r\nLink: </a>\r\n\r\n", sseHead+"\r\n", okStream), want: "ok"},
		{name: "101 Switching Protocols", serve: stall(t, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"),
			want: "status HTTP/1.1 101 Switching Protocols"},
		{name: "interim responses without end", serve: forever("", strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 200)), want: "response headers too large", kind: failures.ToolLimit},

		// Redirects: reported, not followed.
		{name: "301", serve: send(t, "HTTP/1.1 301 Moved Permanently\r\nLocation: https://gw.example/v1/chat/completions\r\nContent-Length: 0\r\n\r\n"),
			want: "redirect 301 to https://gw.example/v1/chat/completions", kind: failures.Redirect},
		{name: "302 to a relative path, with a body", serve: send(t, "HTTP/1.1 302 Found\r\nLocation: /login?next=%2Fv1\r\nContent-Type: text/html\r\n\r\n<a href=\"/login\">Found</a>"),
			want: "redirect 302 to /login?next=%2Fv1"},
		{name: "307", serve: stall(t, "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:1/\r\n\r\n"), want: "redirect 307 to http://127.0.0.1:1/"},
		{name: "308 with invalid UTF-8 in the Location", serve: send(t, "HTTP/1.1 308 Permanent Redirect\r\nLocation: /\xff\xfe\r\nContent-Length: 0\r\n\r\n"),
			want: `redirect 308 to /\xff\xfe`},
		{name: "304 (no Location)", serve: send(t, "HTTP/1.1 304 Not Modified\r\n\r\n"), want: "status HTTP/1.1 304 Not Modified"},

		// The chunked coding.
		{name: "malformed chunk size", serve: send(t, chunkedHead+"zz\r\n"), want: `malformed response: wire: malformed chunked encoding: invalid byte 'z' at start of chunk size`, kind: failures.Malformed},
		{name: "negative chunk size", serve: send(t, chunkedHead+chunk(chatRole)+"-1\r\n"), want: `malformed response: wire: malformed chunked encoding: invalid byte '-' at start of chunk size`},
		{name: "chunk size beyond the bound", serve: send(t, chunkedHead+"ffffffffffffffffff\r\n"), want: "malformed response: wire: chunk too large", prefix: true, kind: failures.ToolLimit},
		{name: "chunk larger than its data, then close", serve: send(t, chunkedHead+"1000\r\n"+chatRole), want: "connection closed before [DONE]", kind: failures.ClosedMidStream},
		{name: "chunk larger than its data, then silence", serve: stall(t, chunkedHead+"1000\r\n"+chatRole), opts: shortIdle, want: "idle timeout after 100ms", kind: failures.IdleTimeout},
		{name: "chunk data without its CRLF", serve: send(t, chunkedHead+"4\r\nabcdXX"), want: "malformed response: wire: malformed chunked encoding: missing CRLF after chunk data"},
		{name: "trailers after the last chunk", serve: send(t, chunkedHead+chunk(okStream)+"0\r\nX-Trailer: a\r\nX-Other: b\r\n\r\n"), want: "ok"},
		{name: "last chunk before the terminal event, connection open", serve: stall(t, chunkedHead+chunk(chatRole+chat.tok(1, "anan"))+"0\r\n\r\n"),
			want: "connection closed before [DONE]", kind: failures.NoTerminal},

		// The body and its events.
		{name: "a 5 MB line without a newline", serve: send(t, sseHead+"\r\n"+bigLine), want: "malformed response: wire: SSE line too long",
			check: maxBytes(2 << 20), kind: failures.ToolLimit},
		{name: "a gzip bomb: 8 MB without a newline", serve: send(t, sseHead+"Content-Encoding: gzip\r\n\r\n"+gz(strings.Repeat("a", 8<<20))),
			want: "malformed response: wire: SSE line too long", check: maxBytes(64 << 10)},
		{name: "a gzip bomb: 2 MB of comments, then close", serve: send(t, sseHead+"Content-Encoding: gzip\r\n\r\n"+gz(chatRole+strings.Repeat(":\n", 1<<20))),
			want: "connection closed before [DONE]"},
		{name: "gzip stream ending before the terminal event, connection open", serve: stall(t, sseHead+"Content-Encoding: gzip\r\n\r\n"+gz(chatRole+chat.tok(1, "anan"))),
			want: "connection closed before [DONE]"},
		{name: "invalid UTF-8 inside the content", serve: send(t, sseHead+"\r\n"+chat.events(false, chat.tok(1, "anan"), chat.tok(2, "h\xffh\xfe"), chat.tok(3, "obob"))),
			want: "integrity: corrupted content at token 1 (\"h\uFFFD\")", kind: failures.Integrity}, // read as UTF-8: each bad byte a U+FFFD
		{name: "a lone surrogate escaped inside the content", serve: send(t, sseHead+"\r\n"+chat.events(false, chat.tok(1, `\ud800nan`), chat.tok(2, "huhu"), chat.tok(3, "obob"))),
			want: `integrity: corrupted content at token 0 (`, prefix: true},
		{name: "garbage between events", serve: send(t, sseHead+"\r\n"+chatRole+"garbage\n\n"+chat.tok(1, "anan")+": comment\nid: 7\nretry: soon\n{not sse}\n\n"+
			chat.tok(2, "huhu")+"data: not json at all\n\n\x00\x01\xff\n\n"+chat.tok(3, "obob")+"event: \xff\xfe\n\n"+chatFinish+done), want: "ok"},
		{name: "error event with terminal escapes", serve: send(t, sseHead+"\r\n"+chatRole+`data: {"error":{"message":"\u001b[2Jboom\nline 2","type":"server_error"}}`+"\n\n"),
			want: `stream error: error: server_error: \x1b[2Jboom line 2`, kind: failures.ErrorEvent},
		{name: "early close inside an event", serve: send(t, sseHead+"\r\n"+chatRole+`data: {"id":"chatcmpl-sse-latency-1","obj`), want: "connection closed before [DONE]", kind: failures.ClosedMidStream},
		{name: "connection reset inside the stream", serve: reset(t, sseHead+"\r\n"+chatRole+chat.tok(1, "anan")), want: "recv error: Connection reset by peer", kind: failures.ResetMidStream},
		{name: "silence inside the stream", serve: stall(t, sseHead+"\r\n"+chatRole+chat.tok(1, "anan")), opts: shortIdle, want: "idle timeout after 100ms",
			check: func(t *testing.T, rec *result.Request) {
				if len(rec.Tokens) != 1 {
					t.Errorf("%d tokens, want the 1 before the silence", len(rec.Tokens))
				}
			}},
		{name: "silence inside the stream, -w first", serve: stall(t, sseHead+"\r\n"+chatRole), opts: func(o *Options) { o.Timeout = 150 * time.Millisecond; o.IdleTimeout = time.Hour },
			want: "timeout after 150ms", kind: failures.RequestTimeout},
		{name: "Content-Length shorter than the stream", serve: send(t, sseHead+"Content-Length: 40\r\n\r\n"+okStream), want: "connection closed before [DONE]"},
		{name: "Content-Length longer than the stream, then close", serve: send(t, sseHead+"Content-Length: 100000\r\n\r\n"+chatRole), want: "connection closed before [DONE]"},
		{name: "empty comments without end", serve: forever(sseHead+"\r\n"+chatRole, ":\n"), opts: func(o *Options) { o.Timeout = 2 * time.Second; o.IdleTimeout = time.Second },
			want: "timeout after 2000ms"}, // a comment every ms keeps the idle timeout away, a busy machine's pauses too

		// SSE framing (the WHATWG rules).
		{name: "data lines without a blank line, forever", serve: forever(sseHead+"\r\n"+chatRole, "data: "+strings.Repeat("x", 16<<10)+"\n"),
			want: "malformed response: wire: SSE event too large: its data lines join to more than 1048576 bytes before the blank line that ends it"},
		{name: "a BOM at the start of the body", serve: send(t, sseHead+"\r\n\xEF\xBB\xBF"+okStream), want: "ok"},
		{name: "a BOM in mid-stream is data", serve: send(t, sseHead+"\r\n"+chatRole+"\xEF\xBB\xBF"+okStream[len(chatRole):]), want: "integrity: 1 token missing (first: token 0)"}, // the line names the field "\ufeffdata"
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runHostile(t, gateway(t, tt.serve), tt)
		})
	}
}

// TestHostileKeepAlive: a kept-alive connection survives trailers, and one
// that stalls in its drain costs the connection, not the request.
func TestHostileKeepAlive(t *testing.T) {
	body := chatRole + event(100, "anan") + event(200, "huhu") + chatFinish + done
	ks := newKeepServer(t, false, func(n int) []testutil.Step {
		return pieces(keepHead+chunk(body), "0\r\nX-Trailer: a\r\n", "\r\n")
	})
	for i, r := range runSession(t, Options{Addr: ks.addr, KeepAlive: true, ExpectTokens: 2, IdleTimeout: time.Second}, 3, nil) {
		if got := connOf(r); got != (conn{ok: true, reused: i > 0, id: 1}) {
			t.Errorf("request %d with trailers: %+v (%q), want ok on connection 1", i, got, r.Failure.Error())
		}
	}
	// The last chunk never comes: the idle timeout ends the drain.
	ks = newKeepServer(t, false, func(n int) []testutil.Step {
		return pieces(keepHead+chunk(body), "" /* then silence */)
	})
	recs := runSession(t, Options{Addr: ks.addr, KeepAlive: true, ExpectTokens: 2, DrainTimeout: time.Hour, IdleTimeout: 200 * time.Millisecond, Timeout: 5 * time.Second}, 2, nil)
	for i, r := range recs {
		if got := connOf(r); got != (conn{ok: true, poisoned: true, id: int64(i + 1)}) {
			t.Errorf("request %d without its last chunk: %+v (%q), want ok, poisoned, on connection %d", i, got, r.Failure.Error(), i+1)
		}
	}
}

// h2Gateway is a scripted raw HTTP/2 (h2c, prior knowledge) gateway: for
// every connection it reads the client's preface, acknowledges its
// settings, waits for the request on stream 1, then runs serve with a
// framer whose writes are safe to mix with the acknowledgements.
func h2Gateway(t *testing.T, serve func(f *h2Writer)) string {
	t.Helper()
	return testutil.ServeTCP(t, func(c net.Conn) { h2Serve(c, serve) })
}

// h2Serve is h2Gateway's script on one connection c.
func h2Serve(c net.Conn, serve func(f *h2Writer)) {
	f := h2Accept(c)
	if f == nil {
		return
	}
	got := make(chan struct{})
	closed := make(chan struct{}) // the client has gone
	go func() {
		defer close(closed)
		var once sync.Once
		for {
			frame, err := f.fr.ReadFrame()
			if err != nil {
				return
			}
			f.ackSettings(frame)
			if p, ok := frame.(*http2.PingFrame); ok && p.IsAck() && p.Data == h2PingData {
				f.pingAcks.Add(1)
			}
			if frame.Header().StreamID == 1 && frame.Header().Flags.Has(http2.FlagDataEndStream) {
				once.Do(func() { close(got) })
			}
		}
	}()
	select {
	case <-got:
		serve(f)
	case <-closed:
	}
	<-closed // hold the connection until the client closes it
}

// h2Accept reads the client's preface on c and sends the gateway's
// SETTINGS, settings; nil when the client sent no preface.
func h2Accept(c net.Conn, settings ...http2.Setting) *h2Writer {
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c, preface); err != nil {
		return nil
	}
	f := &h2Writer{c: c, fr: http2.NewFramer(c, c)}
	f.do(func(fr *http2.Framer) error { return fr.WriteSettings(settings...) })
	return f
}

// ackSettings acknowledges frame when it is the client's SETTINGS.
func (f *h2Writer) ackSettings(frame http2.Frame) {
	if s, ok := frame.(*http2.SettingsFrame); ok && !s.IsAck() {
		f.do(func(fr *http2.Framer) error { return fr.WriteSettingsAck() })
	}
}

// h2Writer serialises the writes of an HTTP/2 framer on c.
type h2Writer struct {
	c        net.Conn
	mu       sync.Mutex
	fr       *http2.Framer
	pingAcks atomic.Int32 // the client's acknowledgements of a PING with h2PingData
}

// h2PingData is what the gateway's PINGs carry.
var h2PingData = [8]byte{'s', 's', 'e', 'p', 'i', 'n', 'g', '!'}

// raw writes bytes as they are, between frames.
func (f *h2Writer) raw(b []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.c.Write(b)
}

// ping sends a PING and waits for the client's acknowledgement; without
// one it resets stream 1 (the case fails on it).
func (f *h2Writer) ping() {
	f.do(func(fr *http2.Framer) error { return fr.WritePing(false, h2PingData) })
	if !testutil.Poll(func() bool { return f.pingAcks.Load() > 0 }, testutil.AwaitBound) {
		f.do(func(fr *http2.Framer) error { return fr.WriteRSTStream(1, http2.ErrCodeProtocol) })
	}
}

// block is the HPACK block of the fields kv (name, value pairs).
func h2Block(kv ...string) []byte {
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for i := 0; i+1 < len(kv); i += 2 {
		enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	return b.Bytes()
}

func (f *h2Writer) do(w func(fr *http2.Framer) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w(f.fr)
}

// headers writes a response head on stream 1: name, value pairs.
func (f *h2Writer) headers(endStream bool, kv ...string) {
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for i := 0; i+1 < len(kv); i += 2 {
		enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	f.do(func(fr *http2.Framer) error {
		return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b.Bytes(), EndHeaders: true, EndStream: endStream})
	})
}

// data writes a DATA frame on stream 1, then waits until the client's
// transport has read it (no case's outcome may depend on it).
func (f *h2Writer) data(endStream bool, s string) {
	f.do(func(fr *http2.Framer) error { return fr.WriteData(1, endStream, []byte(s)) })
	testutil.Poll(readBy(f.c), testutil.AwaitBound)
}

// TestHostileH2C runs the hostile cases of HTTP/2 over h2c, on every
// engine (the loops frame HTTP/2 themselves; the goroutine engine is
// x/net/http2's transport): a reset stream, GOAWAY before and inside the
// stream, above and below its id, a frame too large, a broken HPACK
// block, a window that never opens for the request body, a silent
// stream, an error status with a body, a redirect — and what a peer may
// do: split the head into CONTINUATION frames, pad DATA, PING, change its
// SETTINGS.
func TestHostileH2C(t *testing.T) {
	chat := dialectStreams[0]
	sse := []string{":status", "200", "content-type", "text/event-stream"}
	whole := chat.events(false, chat.tokens(3, true)...) // a stream that passes, cut in two at byte 40
	tests := []struct {
		name  string
		serve func(f *h2Writer)
		opts  func(o *Options)
		want  string
	}{
		{"ok", func(f *h2Writer) {
			f.headers(false, sse...)
			f.data(true, chat.events(false, chat.tokens(3, true)...))
		}, nil, "ok"},
		{"RST_STREAM inside the stream", func(f *h2Writer) {
			f.headers(false, sse...)
			f.data(false, chatRole+chat.tok(1, "anan"))
			f.do(func(fr *http2.Framer) error { return fr.WriteRSTStream(1, http2.ErrCodeInternal) })
		}, nil, "recv error: stream error: stream ID 1; INTERNAL_ERROR; received from peer"},
		{"RST_STREAM before the head", func(f *h2Writer) {
			f.do(func(fr *http2.Framer) error { return fr.WriteRSTStream(1, http2.ErrCodeRefusedStream) })
		}, nil, "recv error: send: stream error: stream ID 1; REFUSED_STREAM; received from peer"},
		{"GOAWAY before the head", func(f *h2Writer) {
			f.do(func(fr *http2.Framer) error { return fr.WriteGoAway(0, http2.ErrCodeNo, nil) })
		}, nil, "recv error: send: http2: Transport received Server's graceful shutdown GOAWAY"},
		{"GOAWAY with an error before the head", func(f *h2Writer) {
			f.do(func(fr *http2.Framer) error { return fr.WriteGoAway(0, http2.ErrCodeEnhanceYourCalm, nil) })
		}, nil, "recv error: send: http2: Transport received GOAWAY from server ErrCode:ENHANCE_YOUR_CALM"},
		{"GOAWAY inside the stream, above its id", func(f *h2Writer) {
			f.headers(false, sse...)
			f.data(false, chatRole+chat.tok(1, "anan"))
			f.do(func(fr *http2.Framer) error { return fr.WriteGoAway(0, http2.ErrCodeNo, nil) })
		}, nil, "recv error: http2: Transport received Server's graceful shutdown GOAWAY"},
		{"GOAWAY inside the stream, at its id", func(f *h2Writer) {
			f.headers(false, sse...)
			f.data(false, whole[:40])
			f.do(func(fr *http2.Framer) error { return fr.WriteGoAway(1, http2.ErrCodeNo, nil) })
			f.data(true, whole[40:])
		}, nil, "ok"},
		{"a frame larger than the client takes", func(f *h2Writer) {
			f.headers(false, sse...)
			f.raw([]byte{0xff, 0xff, 0xff, byte(http2.FrameData), 0, 0, 0, 0, 1})
		}, nil, "recv error: http2: frame too large"},
		{"a broken HPACK block", func(f *h2Writer) {
			f.do(func(fr *http2.Framer) error {
				return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, EndHeaders: true})
			})
		}, nil, "recv error: send: connection error: COMPRESSION_ERROR"},
		{"CONTINUATION, padding, PING and SETTINGS", func(f *h2Writer) {
			f.do(func(fr *http2.Framer) error {
				return fr.WriteSettings(http2.Setting{ID: http2.SettingMaxFrameSize, Val: 1 << 15}, http2.Setting{ID: http2.SettingHeaderTableSize, Val: 0})
			})
			b := h2Block(append(sse, "x-filler", strings.Repeat("f", 300))...)
			f.do(func(fr *http2.Framer) error {
				if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:10], PadLength: 7}); err != nil {
					return err
				}
				if err := fr.WriteContinuation(1, false, b[10:100]); err != nil {
					return err
				}
				return fr.WriteContinuation(1, true, b[100:])
			})
			f.ping()
			f.do(func(fr *http2.Framer) error {
				return fr.WriteDataPadded(1, false, []byte(whole[:40]), make([]byte, 40))
			})
			f.data(true, whole[40:])
		}, nil, "ok"},
		{"trailers after the terminal event", func(f *h2Writer) {
			f.headers(false, sse...)
			f.data(false, whole)
			f.headers(true, "x-trailer", "a")
		}, nil, "ok"},
		{"trailers before the terminal event", func(f *h2Writer) {
			f.headers(false, sse...)
			f.data(false, whole[:40])
			f.headers(true, "x-trailer", "a")
		}, nil, "connection closed before [DONE]"},
		{"a window that never opens for the request body", func(f *h2Writer) {}, func(o *Options) {
			o.IdleTimeout, o.PromptBytes = 100*time.Millisecond, 200_000 // more than the initial 64 KiB window
		}, "idle timeout after 100ms"},
		{"silence before the head", func(f *h2Writer) {}, shortIdle, "idle timeout after 100ms"},
		{"silence inside the stream", func(f *h2Writer) {
			f.headers(false, sse...)
			f.data(false, chatRole+chat.tok(1, "anan"))
		}, shortIdle, "idle timeout after 100ms"},
		{"429 with a JSON body", func(f *h2Writer) {
			f.headers(false, ":status", "429", "content-type", "application/json")
			f.data(false, `{"error":`)
			f.data(true, `{"message":"slow down"}}`)
		}, longDrain, `status HTTP/2.0 429 Too Many Requests: {"error":{"message":"slow down"}}`},
		{"500 whose body never ends", func(f *h2Writer) {
			f.headers(false, ":status", "500", "content-type", "text/plain")
			f.data(false, "upstream exploded")
		}, func(o *Options) { o.DrainTimeout = 50 * time.Millisecond }, "status HTTP/2.0 500 Internal Server Err: upstream exploded"},
		{"302", func(f *h2Writer) {
			f.headers(true, ":status", "302", "location", "https://gw.example/login")
		}, nil, "redirect 302 to https://gw.example/login"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := func(o *Options) {
				o.H2C = true
				if tt.opts != nil {
					tt.opts(o)
				}
			}
			runHostile(t, h2Gateway(t, tt.serve), hostileCase{name: tt.name, opts: opts, want: tt.want,
				check: func(t *testing.T, rec *result.Request) {
					if rec.Proto != ProtoH2C {
						t.Errorf("proto %q, want h2c", rec.Proto)
					}
				}})
		})
	}
}

// FuzzResponseText feeds arbitrary whole responses, head included, cut
// arbitrarily, to the response parser: it must not panic, and however the
// response ends, its failure text is printable — valid UTF-8 without
// control bytes — and bounded, whatever bytes the peer sent.
func FuzzResponseText(f *testing.F) {
	chat := dialectStreams[0]
	for _, s := range []string{
		sseHead + "\r\n" + chat.events(false, chat.tokens(3, true)...),
		"HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"error\":\"\x1b\"}",
		"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n<h1>x\r\n0\r\n\r\n",
		"HTTP/1.1 302 Found\r\nLocation: /\xff\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 \x7f\r\n\r\n",
		"\x16\x03\x01\x00",
		sseHead + "\r\n" + `data: {"error":{"message":"\u001b[2J\n","type":"x"}}` + "\n\n",
		sseHead + "Transfer-Encoding: chunked\r\n\r\nzz\r\n",
		sseHead + "\r\n" + chat.events(false, chat.tok(0, "a\xffa\x00")),
	} {
		f.Add([]byte(s), []byte{30, 7, 100})
	}
	f.Fuzz(func(t *testing.T, resp, cuts []byte) {
		rec := &result.Request{}
		r := newReader(rec, &Options{Dialect: api.Chat, ExpectTokens: 3})
		defer r.close()
		ended := false
		for _, c := range cuts {
			k := min(int(c), len(resp))
			if ended = r.feed(resp[:k], 2); ended {
				break
			}
			resp = resp[k:]
		}
		if !ended {
			ended = r.feed(resp, 3)
		}
		if !ended {
			rec.Failure = r.endOfStream(io.EOF)
		}
		checkFailureText(t, "", rec.Failure.Error())
	})
}

// h2Streams is a scripted HTTP/2 (h2c) gateway that answers every
// request stream: serve runs, on the connection's reading goroutine, for
// stream id of the conn-th connection (from 1) once its request ended.
// The gateway's SETTINGS are settings.
func h2Streams(t *testing.T, serve func(f *h2Writer, conn int, id uint32), settings ...http2.Setting) string {
	t.Helper()
	return h2Peer(t, func(f *h2Writer, conn int, frame http2.Frame) {
		if d, ok := frame.(*http2.DataFrame); ok && d.StreamEnded() {
			serve(f, conn, d.StreamID)
		}
	}, settings...)
}

// h2Peer is a raw-frame HTTP/2 (h2c) peer: it sends settings as its
// SETTINGS, acknowledges the client's SETTINGS, answers its PINGs (the
// client's PING on a connection shared by several slots), opens no
// flow-control window, and runs onFrame on the connection's reading
// goroutine for every frame of the conn-th connection (from 1).
func h2Peer(t *testing.T, onFrame func(f *h2Writer, conn int, frame http2.Frame), settings ...http2.Setting) string {
	t.Helper()
	var conns atomic.Int32
	return testutil.ServeTCP(t, func(c net.Conn) {
		n := int(conns.Add(1))
		f := h2Accept(c, settings...)
		if f == nil {
			return
		}
		for {
			frame, err := f.fr.ReadFrame()
			if err != nil {
				return
			}
			f.ackSettings(frame)
			f.ackPing(frame)
			onFrame(f, n, frame)
		}
	})
}

// TestH2KeptGoAway: a kept HTTP/2 connection that the gateway shuts down
// with GOAWAY — while it is idle, or in answer to the next stream, whose
// id is above the GOAWAY's last — is a reuse failure: the request goes
// again on a new connection, as on every engine.
func TestH2KeptGoAway(t *testing.T) {
	chat := dialectStreams[0]
	whole := []byte(chat.events(false, chat.tokens(3, true)...))
	respond := func(f *h2Writer, id uint32) {
		f.do(func(fr *http2.Framer) error {
			if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, EndHeaders: true,
				BlockFragment: h2Block(":status", "200", "content-type", "text/event-stream")}); err != nil {
				return err
			}
			return fr.WriteData(id, true, whole)
		})
	}
	goAway := func(f *h2Writer) {
		f.do(func(fr *http2.Framer) error { return fr.WriteGoAway(1, http2.ErrCodeNo, nil) })
	}
	// idle: the first case's GOAWAY goes once the first request has ended
	// (the goroutine engine closes a connection that has had one at the
	// end of its stream, without a reuse failure), and the next request
	// starts once the client's socket has taken it.
	idle, sent := make(chan struct{}), make(chan struct{})
	for _, tt := range []struct {
		name  string
		idle  bool
		serve func(f *h2Writer, conn int, id uint32)
	}{
		{"GOAWAY while the connection is idle", true, func(f *h2Writer, conn int, id uint32) {
			if conn == 1 && id > 1 {
				return // after the GOAWAY: never answered
			}
			respond(f, id)
			if conn == 1 {
				go func() {
					<-idle
					goAway(f)
					testutil.Poll(readBy(f.c), testutil.AwaitBound)
					close(sent)
				}()
			}
		}},
		{"GOAWAY in answer to the second stream", false, func(f *h2Writer, conn int, id uint32) {
			if conn == 1 && id > 1 {
				goAway(f)
				return
			}
			respond(f, id)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := New(Options{Addr: h2Streams(t, tt.serve), H2C: true, KeepAlive: true, ExpectTokens: 3, Tokens: -1, Timeout: 10 * time.Second})
			s := q.NewSession()
			defer s.Close()
			var recs []*result.Request
			for i := range 3 {
				if i == 1 && tt.idle {
					close(idle)
					<-sent
				}
				rec := &result.Request{Batch: "gw", Index: i}
				s.Do(context.Background(), rec)
				recs = append(recs, rec)
			}
			want := []conn{{ok: true, id: 1}, {ok: true, reuseFailed: true, id: 2}, {ok: true, reused: true, id: 2}}
			for i, r := range recs {
				if got := connOf(r); got != want[i] || r.Proto != ProtoH2C {
					t.Errorf("request %d: %+v over %s (%q), want %+v over h2c", i, got, r.Proto, r.Failure.Error(), want[i])
				}
			}
		})
	}
}
