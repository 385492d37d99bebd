package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

// h2Seed is an HTTP/2 server's side of a connection for FuzzH2Frames:
// its SETTINGS, then what frames write makes.
func h2Seed(write func(fr *http2.Framer, head func(fields ...string) []byte)) []byte {
	var out bytes.Buffer
	fr := http2.NewFramer(&out, nil)
	fr.WriteSettings(http2.Setting{ID: http2.SettingMaxFrameSize, Val: 1 << 14})
	head := func(fields ...string) []byte {
		var b bytes.Buffer
		enc := hpack.NewEncoder(&b)
		for i := 0; i+1 < len(fields); i += 2 {
			enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
		}
		return b.Bytes()
	}
	write(fr, head)
	return out.Bytes()
}

// FuzzH2Frames sends arbitrary bytes, cut arbitrarily, as an h2c
// gateway's answer (after the client's preface) to one request: whatever
// the frames — sizes that lie, unknown types, broken HPACK, streams that
// do not exist, windows that overflow — the request ends within its -w
// with a printable, bounded failure text (or none), and nothing panics or
// hangs. It runs on the engine of the suite's pass: the event loops'
// frame intake (h2Frames) on epoll and uring, x/net/http2's transport on
// the goroutine engine.
func FuzzH2Frames(f *testing.F) {
	chat := dialectStreams[0]
	whole := []byte(chat.events(false, chat.tokens(3, true)...))
	sse := []string{":status", "200", "content-type", "text/event-stream"}
	for _, seed := range [][]byte{
		h2Seed(func(fr *http2.Framer, head func(...string) []byte) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: head(sse...), EndHeaders: true})
			fr.WriteData(1, true, whole)
		}),
		h2Seed(func(fr *http2.Framer, head func(...string) []byte) {
			b := head(sse...)
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:2]})
			fr.WriteContinuation(1, true, b[2:])
			fr.WriteDataPadded(1, false, whole[:10], make([]byte, 7))
			fr.WritePing(false, [8]byte{1})
			fr.WriteWindowUpdate(0, 1<<20)
			fr.WriteData(1, true, whole[10:])
		}),
		h2Seed(func(fr *http2.Framer, head func(...string) []byte) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: head(":status", "429", "content-type", "application/json"), EndHeaders: true})
			fr.WriteData(1, true, []byte(`{"error":{"message":"\u001b slow down"}}`))
		}),
		h2Seed(func(fr *http2.Framer, head func(...string) []byte) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: head(sse...), EndHeaders: true})
			fr.WriteData(1, false, whole[:20])
			fr.WriteRSTStream(1, http2.ErrCodeInternal)
		}),
		h2Seed(func(fr *http2.Framer, head func(...string) []byte) {
			fr.WriteGoAway(0, http2.ErrCodeEnhanceYourCalm, []byte("\xff\x00"))
		}),
		{0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
	} {
		f.Add(seed, []byte{9, 30, 200})
	}
	f.Fuzz(func(t *testing.T, answer, cuts []byte) {
		addr := h2Answering(t, answer, cuts)
		o := hostileOptions(addr)
		o.H2C = true
		o.Timeout = 5 * time.Second
		o.IdleTimeout = 300 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound on a hang only
		defer cancel()
		rec := &result.Request{Batch: "gw"}
		New(o).Do(ctx, rec)
		if ctx.Err() != nil {
			t.Fatalf("the request did not end within a minute (-w %v)", o.Timeout)
		}
		checkFailureText(t, "", rec.Failure.Error())
	})
}

// FuzzH2FramesMux is FuzzH2Frames for two requests sharing one h2c
// connection (StreamsPerConn 2, streams 1 and 3): whatever the frames —
// interleaved streams, a reset of one, GOAWAY between them, a limit of
// one stream, frames of streams not opened yet — both requests end
// within their -w with a printable, bounded failure text (or none), and
// nothing panics or hangs. On epoll and uring it drives the loops'
// stream table (h2Frames, h2State.stream).
func FuzzH2FramesMux(f *testing.F) {
	chat := dialectStreams[0]
	whole := []byte(chat.events(false, chat.tokens(3, true)...))
	sse := []string{":status", "200", "content-type", "text/event-stream"}
	for _, seed := range [][]byte{
		h2Seed(func(fr *http2.Framer, head func(...string) []byte) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: head(sse...), EndHeaders: true})
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: head(sse...), EndHeaders: true})
			fr.WriteData(3, false, whole[:10])
			fr.WriteData(1, false, whole[:20])
			fr.WriteData(3, true, whole[10:])
			fr.WriteData(1, true, whole[20:])
		}),
		h2Seed(func(fr *http2.Framer, head func(...string) []byte) {
			b := head(sse...)
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:2]})
			fr.WriteContinuation(1, true, b[2:])
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: head(sse...), EndHeaders: true})
			fr.WriteRSTStream(3, http2.ErrCodeInternal)
			fr.WriteData(1, true, whole)
		}),
		h2Seed(func(fr *http2.Framer, head func(...string) []byte) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: head(sse...), EndHeaders: true})
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: head(sse...), EndHeaders: true})
			fr.WriteGoAway(1, http2.ErrCodeNo, nil)
			fr.WriteData(1, true, whole)
			fr.WriteData(3, true, whole)
		}),
		h2Seed(func(fr *http2.Framer, head func(...string) []byte) {
			fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 1})
			fr.WriteWindowUpdate(3, 1<<31-1)
			fr.WriteWindowUpdate(3, 1<<31-1)
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: head(sse...), EndHeaders: true, EndStream: true})
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: head(":status", "503"), EndHeaders: true, EndStream: true})
		}),
	} {
		f.Add(seed, []byte{9, 30, 200})
	}
	f.Fuzz(func(t *testing.T, answer, cuts []byte) {
		addr := h2Answering(t, answer, cuts)
		o := hostileOptions(addr)
		o.H2C, o.KeepAlive, o.StreamsPerConn = true, true, 2
		o.Timeout = 5 * time.Second
		o.IdleTimeout = 300 * time.Millisecond
		q := New(o)
		done := make(chan [][]*result.Request, 1)
		go func() { done <- runSlots(t, q, 2, 1) }()
		var recs [][]*result.Request
		select {
		case recs = <-done:
		case <-time.After(time.Minute): // a bound on a hang only
			t.Fatalf("the requests did not end within a minute (-w %v)", o.Timeout)
		}
		for i, rs := range recs {
			checkFailureText(t, fmt.Sprintf("slot %d: ", i), rs[0].Failure.Error())
		}
	})
}

// h2Answering is an h2c peer that reads the client's preface, discards
// whatever the client sends after it, and writes answer in pieces of
// cuts[i]+1 bytes, the rest in one write.
func h2Answering(t *testing.T, answer, cuts []byte) string {
	t.Helper()
	return testutil.ServeTCP(t, func(c net.Conn) {
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(c, preface); err != nil {
			return
		}
		go io.Copy(io.Discard, c) // the client's frames, whatever they are
		rest := answer
		for _, n := range cuts {
			k := min(int(n)+1, len(rest))
			if _, err := c.Write(rest[:k]); err != nil {
				return
			}
			rest = rest[k:]
		}
		c.Write(rest)
	})
}

// checkFailureText fails t unless text, a failure's words, is valid
// UTF-8 without control bytes and at most 1 KiB; prefix names whose.
func checkFailureText(t *testing.T, prefix, text string) {
	t.Helper()
	if !utf8.ValidString(text) || strings.ContainsFunc(text, func(c rune) bool { return c < 0x20 || c == 0x7f }) || len(text) > 1<<10 {
		t.Fatalf("%sfailure text %q (%d bytes): want valid UTF-8 without control bytes, at most 1 KiB", prefix, text, len(text))
	}
}
