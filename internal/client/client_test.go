package client

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/server"
)

// scripted serves one canned response per connection, written in the given
// pieces with a pause between them so that each lands in its own Read.
func scripted(t *testing.T, pieces ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				c.Read(make([]byte, 4096))
				for _, p := range pieces {
					if _, err := io.WriteString(c, p); err != nil {
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

func do(t *testing.T, addr string) *result.Request {
	t.Helper()
	q := NewChatRequest(addr, -1, 10*time.Second)
	rec := &result.Request{Batch: "gw"}
	q.Do(context.Background(), rec)
	if rec.End < rec.Start || rec.Start == 0 {
		t.Errorf("Start=%d End=%d: the record's times are not filled", rec.Start, rec.End)
	}
	return rec
}

const sseHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n"

func event(ts int64, content string) string {
	return fmt.Sprintf(`data: {"id":"x","object":"chat.completion.chunk","created":1,"pi_ts":%d,"model":"m","choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`+"\n\n", ts, content)
}

func chunk(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }

func TestAgainstOurServer(t *testing.T) {
	srv, err := server.Listen("127.0.0.1:0", server.Config{Tokens: 25, DelayMs: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go srv.Serve(ctx)
	defer cancel()
	rec := do(t, srv.Addr().String())
	if !rec.OK() || len(rec.Tokens) != 25 {
		t.Fatalf("failure %q, %d tokens; want ok with 25 tokens", rec.Failure.Error(), len(rec.Tokens))
	}
	for i, tok := range rec.Tokens {
		if tok.Emitted <= 0 || tok.Arrived < tok.Emitted || tok.Arrived < rec.Sent {
			t.Errorf("token %d: emitted %d, arrived %d, sent %d: want sent, emitted <= arrived", i, tok.Emitted, tok.Arrived, rec.Sent)
		}
	}
}

// TestSplitEverywhere feeds the same chunked stream cut at every byte
// boundary: every token must be found whatever the cut.
func TestSplitEverywhere(t *testing.T) {
	body := chunk(event(100, "anan")) + chunk(event(200, "huhu")+event(300, "obob")) + chunk("data: [DONE]\n\n") + "0\r\n\r\n"
	full := sseHead + "Transfer-Encoding: chunked\r\n\r\n" + body
	for cut := 1; cut < len(full); cut += 7 {
		addr := scripted(t, full[:cut], full[cut:])
		rec := do(t, addr)
		if !rec.OK() || len(rec.Tokens) != 3 {
			t.Fatalf("cut at %d: %q with %d tokens, want ok with 3", cut, rec.Failure.Error(), len(rec.Tokens))
		}
		if rec.Tokens[1].Emitted != 200 || rec.Tokens[2].Emitted != 300 {
			t.Errorf("cut at %d: pi_ts %d, %d; want 200, 300", cut, rec.Tokens[1].Emitted, rec.Tokens[2].Emitted)
		}
	}
}

// TestTokensOfOneReadShareArrival: the arrival time is the Read's, so two
// tokens delivered by one Read share it and a later Read's token does not.
func TestTokensOfOneReadShareArrival(t *testing.T) {
	addr := scripted(t, sseHead+"\r\n"+event(1, "anan")+event(2, "huhu"), event(3, "obob"), "data: [DONE]\n\n")
	rec := do(t, addr)
	if !rec.OK() || len(rec.Tokens) != 3 {
		t.Fatalf("%q with %d tokens, want ok with 3 (a raw, unchunked body)", rec.Failure.Error(), len(rec.Tokens))
	}
	a, b, c := rec.Tokens[0], rec.Tokens[1], rec.Tokens[2]
	if a.Arrived != b.Arrived || a.Read != b.Read {
		t.Errorf("tokens of one Read: arrived %d/%d read %d/%d, want equal", a.Arrived, b.Arrived, a.Read, b.Read)
	}
	if c.Arrived <= b.Arrived || c.Read == b.Read {
		t.Errorf("token of a later Read: arrived %d (read %d) vs %d (read %d), want later", c.Arrived, c.Read, b.Arrived, b.Read)
	}
}

func TestFailureTexts(t *testing.T) {
	tests := []struct {
		name   string
		pieces []string
		want   string
	}{
		{"closed before done", []string{sseHead + "\r\n" + event(1, "anan")}, "connection closed before [DONE]"},
		{"no tokens", []string{sseHead + "\r\n" + event(1, "") + "data: [DONE]\n\n"}, "no content tokens received"},
		{"status", []string{"HTTP/1.1 503 Service Unavailable For A Long Reason\r\nContent-Length: 0\r\n\r\n"}, "status HTTP/1.1 503 Service Unavailable"},
		{"short", []string{"HTTP/1.1 200 OK\r\nContent-"}, "short response"},
		{"empty", nil, "short response"},
		{"head too large", []string{"HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", 70<<10)}, "response headers too large"},
		{"bad chunk", []string{sseHead + "Transfer-Encoding: chunked\r\n\r\nzz\r\n"}, "malformed response: "},
		{"interim then ok", []string{"HTTP/1.1 100 Continue\r\n\r\n", sseHead + "\r\n" + event(1, "anan") + "data: [DONE]\n\n"}, "ok"},
		{"CRLF events", []string{sseHead + "\r\n" + strings.ReplaceAll(event(1, "anan"), "\n", "\r\n") + "data:[DONE]\r\n\r\n"}, "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := do(t, scripted(t, tt.pieces...))
			got := rec.Failure.Error()
			if !strings.HasPrefix(got, tt.want) || (!strings.HasSuffix(tt.want, ": ") && got != tt.want) {
				t.Errorf("failure %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTimeoutAndInterrupt(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }() // reads, never answers
		}
	}()
	q := NewChatRequest(ln.Addr().String(), -1, 200*time.Millisecond)
	rec := &result.Request{}
	q.Do(context.Background(), rec)
	if got := rec.Failure.Error(); got != "timeout after 200ms" {
		t.Errorf("silent gateway: %q, want timeout after 200ms", got)
	}
	q = NewChatRequest(ln.Addr().String(), -1, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	rec = &result.Request{}
	q.Do(ctx, rec)
	if rec.Failure.Kind != result.Interrupted {
		t.Errorf("cancelled request: %q, want interrupted", rec.Failure.Error())
	}
}

func TestRequestBytes(t *testing.T) {
	want := "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\n" +
		"Accept: text/event-stream\r\nContent-Length: 115\r\nConnection: close\r\n\r\n" +
		`{"model":"sse-latency-1","stream":true,"messages":[{"role":"user","content":"Say 4-letter words"}],"pi_tokens":200}`
	if got := string(NewChatRequest("127.0.0.1:8080", 200, time.Second).Bytes()); got != want {
		t.Errorf("request =\n%q\nwant\n%q", got, want)
	}
}

// gzipStream compresses events with a sync flush after each, the way a
// gateway that compresses SSE without holding it back would.
func gzipStream(t *testing.T, events ...string) []string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	var pieces []string
	for _, e := range events {
		zw.Write([]byte(e))
		zw.Flush()
		pieces = append(pieces, buf.String())
		buf.Reset()
	}
	zw.Close()
	pieces[len(pieces)-1] += buf.String()
	return pieces
}

func TestGzipBody(t *testing.T) {
	z := gzipStream(t, event(1, "anan"), event(2, "huhu")+event(3, "obob"), "data: [DONE]\n\n")
	head := sseHead + "Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
	pieces := []string{head + chunk(z[0]), chunk(z[1]), chunk(z[2]) + "0\r\n\r\n"}
	rec := do(t, scripted(t, pieces...))
	if !rec.OK() || len(rec.Tokens) != 3 {
		t.Fatalf("%q with %d tokens, want ok with 3 from a gzip-encoded stream", rec.Failure.Error(), len(rec.Tokens))
	}
	// Each piece was its own Read: the tokens decoded from the second one
	// share its arrival, later than the first's.
	if rec.Tokens[1].Arrived != rec.Tokens[2].Arrived || rec.Tokens[1].Arrived <= rec.Tokens[0].Arrived {
		t.Errorf("arrivals %d, %d, %d: want the 2nd and 3rd equal and after the 1st", rec.Tokens[0].Arrived, rec.Tokens[1].Arrived, rec.Tokens[2].Arrived)
	}
}

func TestBadEncodings(t *testing.T) {
	tests := []struct{ head, body, want string }{
		{sseHead + "Content-Encoding: br\r\n\r\n", "xxxx", `malformed response: unsupported Content-Encoding "br"`},
		{sseHead + "Content-Encoding: gzip\r\n\r\n", "this is not gzip at all", "malformed response: gzip: gzip: invalid header"},
	}
	for _, tt := range tests {
		rec := do(t, scripted(t, tt.head+tt.body))
		if got := rec.Failure.Error(); got != tt.want {
			t.Errorf("%q: failure %q, want %q", tt.head, got, tt.want)
		}
	}
}

func TestExtraHeaders(t *testing.T) {
	raw := string(NewChatRequest("h:1", -1, time.Second, "Accept-Encoding: gzip", "X-A: b").Bytes())
	if !strings.Contains(raw, "Connection: close\r\nAccept-Encoding: gzip\r\nX-A: b\r\n\r\n{") {
		t.Errorf("extra headers not sent after the reference's: %q", raw)
	}
}
