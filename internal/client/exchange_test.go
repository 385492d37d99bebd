package client

import (
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/result"
)

// TestH1ExchangeSettle: the fate of an HTTP/1.1 connection, for every
// outcome, decided from what the reader made of the bytes fed to it and
// from the steps that follow (the drain's Reads, or the error of a Read).
func TestH1ExchangeSettle(t *testing.T) {
	const head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	stream := chatRole + event(100, "anan") + chatFinish + done
	sized := head + "Content-Length: " + strconv.Itoa(len(stream)) + "\r\n\r\n" + stream
	chunked := head + "Transfer-Encoding: chunked\r\n\r\n" + chunk(stream)
	const last = "0\r\n\r\n"
	type want struct {
		st   step
		fate fate
	}
	for _, c := range []struct {
		name     string
		response string // fed in one Read; "" for none
		ends     bool   // the response ends with it (reader.feed true)
		reused   bool
		noKeep   bool // Options.KeepAlive off, or a one-shot request
		steps    []want
		poisoned bool
	}{
		{name: "content-length ended at its end: keep", response: sized, ends: true,
			steps: []want{{step{}, fateKeep}}},
		{name: "last chunk in the same read: keep", response: chunked + last, ends: true,
			steps: []want{{step{}, fateKeep}}},
		{name: "last chunk later: drain, then keep", response: chunked, ends: true,
			steps: []want{{step{}, fateDrain}, {step{p: []byte("0\r\n")}, fateDrain}, {step{p: []byte("\r\n")}, fateKeep}}},
		{name: "bytes after the last chunk: poison", response: chunked, ends: true,
			steps: []want{{step{}, fateDrain}, {step{p: []byte(last + "HTTP")}, fatePoison}}, poisoned: true},
		{name: "bytes after the content-length: poison", response: sized + "x", ends: true,
			steps: []want{{step{}, fatePoison}}, poisoned: true},
		{name: "drain cut by the peer: close", response: chunked, ends: true,
			steps: []want{{step{}, fateDrain}, {step{err: io.EOF}, fateClose}}},
		{name: "drain reset by the peer: close", response: chunked, ends: true,
			steps: []want{{step{}, fateDrain}, {step{err: syscall.ECONNRESET}, fateClose}}},
		{name: "drain timed out: poison", response: chunked, ends: true,
			steps: []want{{step{}, fateDrain}, {step{err: os.ErrDeadlineExceeded}, fatePoison}}, poisoned: true},
		{name: "drain beyond DrainBytes: poison", response: chunked, ends: true,
			steps: []want{{step{}, fateDrain}, {step{p: []byte(chunk(strings.Repeat("x", DrainBytes)))}, fatePoison}}, poisoned: true},
		{name: "last chunk with the peer's close: keep", response: chunked, ends: true,
			steps: []want{{step{}, fateDrain}, {step{p: []byte(last), err: io.EOF}, fateKeep}}},
		{name: "no framing, read until close: poison", response: head + "\r\n" + stream, ends: true,
			steps: []want{{step{}, fatePoison}}, poisoned: true},
		{name: "connection: close announced: close", response: head + "Connection: close\r\nContent-Length: " + strconv.Itoa(len(stream)) + "\r\n\r\n" + stream, ends: true,
			steps: []want{{step{}, fateClose}}},
		{name: "keep-alive off: close", response: sized, ends: true, noKeep: true,
			steps: []want{{step{}, fateClose}}},
		{name: "cancelled as it ended: close", response: chunked, ends: true,
			steps: []want{{step{cancelled: true}, fateClose}}},
		{name: "failing status: close", response: "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy", ends: true,
			steps: []want{{step{}, fateClose}}},
		{name: "kept connection closed before the head: retry", reused: true,
			steps: []want{{step{err: io.EOF}, fateRetry}}},
		{name: "kept connection reset before the head: retry", reused: true,
			steps: []want{{step{err: syscall.ECONNRESET}, fateRetry}}},
		{name: "kept connection closed before the head, cancelled: close", reused: true,
			steps: []want{{step{err: io.EOF, cancelled: true}, fateClose}}},
		{name: "kept connection timed out before the head: close", reused: true,
			steps: []want{{step{err: os.ErrDeadlineExceeded}, fateClose}}},
		{name: "kept connection closed after bytes of the head: close", response: "HTTP/1.1 200", reused: true,
			steps: []want{{step{err: io.EOF}, fateClose}}},
		{name: "new connection closed before the head: close",
			steps: []want{{step{err: io.EOF}, fateClose}}},
		{name: "new connection closed in the body: close", response: chunked[:len(chunked)-20],
			steps: []want{{step{err: io.EOF}, fateClose}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &result.Request{}
			r := newReader(rec, &Options{Dialect: api.Chat})
			defer r.close()
			x := h1Exchange{r: r, rec: rec, reused: c.reused, keepAlive: !c.noKeep}
			if c.response != "" {
				if ended := r.feed([]byte(c.response), 1); ended != c.ends {
					t.Fatalf("feed: ended %v (%q), want %v", ended, rec.Failure.Error(), c.ends)
				}
			}
			for i, w := range c.steps {
				if f := x.settle(w.st); f != w.fate {
					t.Fatalf("step %d: %s, want %s (failure %q)", i, f, w.fate, rec.Failure.Error())
				}
			}
			if rec.Poisoned != c.poisoned {
				t.Errorf("rec.Poisoned %v, want %v", rec.Poisoned, c.poisoned)
			}
		})
	}
}

// TestWSExchangeSettle: the fate of a WebSocket connection, decided by the
// same rules and of the same shape as HTTP/1.1's.
func TestWSExchangeSettle(t *testing.T) {
	for _, c := range []struct {
		name    string
		ended   bool // the request ended
		dead    bool // a kept connection's peer closed it before any message
		close   bool // the peer sent its close
		failing bool // the upgrade's answer is a non-2xx one
		noKeep  bool
		reused  bool
		bytes   int64
		st      step
		want    fate
	}{
		{name: "ended at a message boundary: keep", ended: true, want: fateKeep},
		{name: "frames still to write: close", ended: true, st: step{unsent: true}, want: fateClose},
		{name: "cancelled: close", ended: true, st: step{cancelled: true}, want: fateClose},
		{name: "keep-alive off: close", ended: true, noKeep: true, want: fateClose},
		{name: "the peer's close: close", ended: true, close: true, want: fateClose},
		{name: "failing upgrade: close", ended: true, failing: true, want: fateClose},
		{name: "kept connection closed by a close frame: retry", ended: true, dead: true, close: true, reused: true, want: fateRetry},
		{name: "kept connection closed by a close frame, cancelled: close", ended: true, dead: true, close: true, reused: true, st: step{cancelled: true}, want: fateClose},
		{name: "kept connection closed before any byte: retry", reused: true, st: step{err: io.EOF}, want: fateRetry},
		{name: "kept connection closed after bytes: close", reused: true, bytes: 3, st: step{err: io.EOF}, want: fateClose},
		{name: "new connection closed: close", st: step{err: io.EOF}, want: fateClose},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &result.Request{Bytes: c.bytes}
			w := &wsExchange{r: &reader{rec: rec, failing: c.failing}, ws: &wsState{}, reused: c.reused,
				keepAlive: !c.noKeep, ended: c.ended, dead: c.dead, gotClose: c.close}
			if f := w.settle(c.st); f != c.want {
				t.Errorf("%s, want %s", f, c.want)
			}
		})
	}
}

// TestH2ExchangeSettle: the fate of an HTTP/2 connection at the end of a
// stream, of the same shape.
func TestH2ExchangeSettle(t *testing.T) {
	for _, c := range []struct {
		name      string
		response  bool // the head arrived
		streaming bool // the body was being read
		failing   bool
		noKeep    bool
		reused    bool
		st        step
		want      fate
	}{
		{name: "round trip failed on a kept connection: retry", reused: true, st: step{err: io.EOF}, want: fateRetry},
		{name: "round trip failed on a kept connection, cancelled: close", reused: true, st: step{err: io.EOF, cancelled: true}, want: fateClose},
		{name: "round trip failed on a new connection: close", st: step{err: io.EOF}, want: fateClose},
		{name: "ended at its head: keep", response: true, want: fateKeep},
		{name: "terminal event: drain to END_STREAM", response: true, streaming: true, want: fateDrain},
		{name: "failing status's body: close", response: true, streaming: true, failing: true, want: fateClose},
		{name: "END_STREAM: keep", response: true, streaming: true, st: step{err: io.EOF}, want: fateKeep},
		{name: "stream error: close", response: true, streaming: true, st: step{err: os.ErrDeadlineExceeded}, want: fateClose},
		{name: "keep-alive off: close", response: true, streaming: true, noKeep: true, want: fateClose},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := h2Exchange{reused: c.reused, keepAlive: !c.noKeep, streaming: c.streaming}
			if c.response {
				x.r = &reader{rec: &result.Request{}, failing: c.failing}
			}
			if f := x.settle(c.st); f != c.want {
				t.Errorf("%s, want %s", f, c.want)
			}
		})
	}
}
