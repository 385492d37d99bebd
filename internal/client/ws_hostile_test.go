package client

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/testutil"
	"github.com/sse-latency/sse-latency/internal/wire"
)

// A scripted WebSocket peer, for what the dummy server never does: it
// reads the upgrade request and answers with raw bytes.

// wsPeerConn is one connection of a scripted peer, after the upgrade
// request.
type wsPeerConn struct {
	c      net.Conn
	key    string // the client's Sec-WebSocket-Key
	fr     wire.WSReader
	rest   []byte // bytes read after the request
	onPong func() // called for each pong awaitCreate reads, when set
}

// wsPeer runs serve on every connection after reading its upgrade
// request; it returns the peer's address.
func wsPeer(t *testing.T, serve func(p *wsPeerConn)) string {
	t.Helper()
	return testutil.ServeTCP(t, func(c net.Conn) {
		req, rest, ok := readRequest(c, nil)
		if !ok {
			return
		}
		h, _, err := wire.ParseRequestHead([]byte(req))
		if err != nil {
			return
		}
		serve(&wsPeerConn{c: c, key: h.Header("Sec-WebSocket-Key"), fr: wire.WSReader{Masked: true}, rest: rest})
	})
}

// accept answers the upgrade as a WebSocket server does.
func (p *wsPeerConn) accept() {
	p.c.Write([]byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
		wire.WSAccept(p.key) + "\r\n\r\n"))
}

// next returns the client's next message; ok false when the connection
// ended first.
func (p *wsPeerConn) next() (m wire.WSMessage, ok bool) {
	buf := make([]byte, 4096)
	for {
		if len(p.rest) > 0 {
			m, used, err := p.fr.Next(p.rest)
			p.rest = p.rest[used:]
			if err != nil {
				return m, false
			}
			if m.Op != 0 {
				return m, true
			}
		}
		n, err := p.c.Read(buf)
		if n == 0 && err != nil {
			return wire.WSMessage{}, false
		}
		p.rest = append(p.rest, buf[:n]...)
	}
}

// awaitCreate reads up to the client's response.create.
func (p *wsPeerConn) awaitCreate() bool {
	for {
		m, ok := p.next()
		if !ok {
			return false
		}
		if m.Op == wire.WSText && bytes.Contains(m.Payload, []byte(`"response.create"`)) {
			return true
		}
		if m.Op == wire.WSPong && p.onPong != nil {
			p.onPong()
		}
	}
}

// drain reads and drops what the client sends until it closes.
func (p *wsPeerConn) drain() {
	for {
		if _, ok := p.next(); !ok {
			return
		}
	}
}

// wsEvents returns the events of a whole Responses answer of n tokens
// (the dummy server's encoder), one frame each; frame builds a frame of
// each event's data.
func wsEvents(n int, frame func(dst, payload []byte) []byte) [][]byte {
	enc := api.NewEncoder(api.Responses, api.Answer{No: 1, Tokens: n})
	var sse [][]byte
	for i := range enc.StartEvents() {
		sse = append(sse, enc.AppendStart(nil, i, 1))
	}
	for k := range n {
		sse = append(sse, enc.AppendToken(nil, k, int64(1000+k)))
	}
	for i := range enc.EndEvents() {
		sse = append(sse, enc.AppendEnd(nil, i, 2))
	}
	var out [][]byte
	for _, ev := range sse {
		for line := range bytes.SplitSeq(ev, []byte{'\n'}) {
			if payload, ok := wire.DataPayload(line); ok {
				out = append(out, frame(nil, payload))
			}
		}
	}
	return out
}

// textFrame is a plain server text frame.
func textFrame(dst, payload []byte) []byte { return wire.AppendWSFrame(dst, wire.WSText, payload, nil) }

// TestWebSocketHostilePeers: whatever a WebSocket peer sends, the request
// ends with a failure text that says what was wrong, well before its
// timeout; and a peer that bends the rules without breaking them
// (fragmented messages, pings in between) is measured all the same.
func TestWebSocketHostilePeers(t *testing.T) {
	const n = 4
	whole := bytes.Join(wsEvents(n, textFrame), nil)
	start := bytes.Join(wsEvents(n, textFrame)[:6], nil) // created … the first two deltas
	tests := []struct {
		name  string
		serve func(p *wsPeerConn)
		tweak func(o *Options)
		kind  result.Kind
		want  string // the failure text, or its start
	}{
		{"valid, fragmented, pings between fragments", func(p *wsPeerConn) {
			p.accept()
			p.awaitCreate()
			for _, f := range wsEvents(n, func(dst, payload []byte) []byte {
				half := len(payload) / 2
				dst = wire.AppendWSHeader(dst[:0], wire.WSText, half, nil)
				dst[0] &^= 0x80 // not FIN
				dst = append(dst, payload[:half]...)
				dst = wire.AppendWSFrame(dst, wire.WSPing, []byte("p"), nil)
				dst = wire.AppendWSHeader(dst, wire.WSContinuation, len(payload)-half, nil)
				return append(dst, payload[half:]...)
			}) {
				p.c.Write(f)
			}
			p.drain()
		}, nil, result.OK, "ok"},
		{"200 instead of 101", func(p *wsPeerConn) {
			p.c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"))
		}, nil, result.BadFraming, "malformed response: websocket upgrade: refused with HTTP/1.1 200 OK"},
		{"403 with a JSON body", func(p *wsPeerConn) {
			p.c.Write([]byte("HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: 27\r\n\r\n{\"error\":\"no websockets\"}\r\n"))
		}, nil, result.BadStatus, `status HTTP/1.1 403 Forbidden: {"error":"no websockets"}`},
		{"wrong Sec-WebSocket-Accept", func(p *wsPeerConn) {
			p.c.Write([]byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: bm9wZQ==\r\n\r\n"))
		}, nil, result.BadFraming, `malformed response: websocket upgrade: Sec-WebSocket-Accept "bm9wZQ==" does not answer the key`},
		{"an extension not offered", func(p *wsPeerConn) {
			p.c.Write([]byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
				wire.WSAccept(p.key) + "\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n"))
		}, nil, result.BadFraming, "malformed response: websocket upgrade: an extension none was offered: permessage-deflate"},
		{"oversized message", func(p *wsPeerConn) {
			p.accept()
			p.awaitCreate()
			p.c.Write(wire.AppendWSHeader(nil, wire.WSText, 2<<20, nil))
			p.drain()
		}, nil, result.BadFraming, "malformed response: websocket message too large: more than 1048576 bytes"},
		{"masked frame", func(p *wsPeerConn) {
			p.accept()
			p.awaitCreate()
			p.c.Write(wire.AppendWSFrame(nil, wire.WSText, []byte(`{}`), &[4]byte{1, 2, 3, 4}))
			p.drain()
		}, nil, result.BadFraming, "malformed response: websocket protocol error: masked frame from the server"},
		{"reserved bits", func(p *wsPeerConn) {
			p.accept()
			p.awaitCreate()
			p.c.Write(start)
			p.c.Write([]byte{0xC1, 0x00})
			p.drain()
		}, nil, result.BadFraming, "malformed response: websocket protocol error: reserved bits set (no extension was negotiated)"},
		{"text not UTF-8", func(p *wsPeerConn) {
			p.accept()
			p.awaitCreate()
			p.c.Write(wire.AppendWSFrame(nil, wire.WSText, []byte("\xff\xfe"), nil))
			p.drain()
		}, nil, result.BadFraming, "malformed response: websocket text is not valid UTF-8"},
		{"binary message", func(p *wsPeerConn) {
			p.accept()
			p.awaitCreate()
			p.c.Write(wire.AppendWSFrame(nil, wire.WSBinary, []byte{1, 2}, nil))
			p.drain()
		}, nil, result.BadFraming, "malformed response: websocket: binary message (the Responses API sends text)"},
		{"close mid-response", func(p *wsPeerConn) {
			p.accept()
			p.awaitCreate()
			p.c.Write(start)
			p.c.Write(wire.AppendWSClose(nil, wire.WSCloseInternalError, "upstream gone", nil))
			p.drain()
		}, nil, result.ClosedBeforeDone, `connection closed before response.completed (websocket close 1011 "upstream gone")`},
		{"connection closed mid-response", func(p *wsPeerConn) {
			p.accept()
			p.awaitCreate()
			p.c.Write(start)
		}, nil, result.ClosedBeforeDone, "connection closed before response.completed"},
		{"no pong", func(p *wsPeerConn) {
			p.accept()
			p.awaitCreate()
			p.c.Write(start)
			p.drain() // pings unanswered
		}, func(o *Options) { o.WSPing, o.WSPongTimeout = 30*time.Millisecond, 100*time.Millisecond },
			result.RecvError, "recv error: websocket: no pong within 100ms of a ping"},
		{"silence, pings off: the idle timeout", func(p *wsPeerConn) {
			p.accept()
			p.awaitCreate()
			p.drain()
		}, func(o *Options) { o.WSPing, o.IdleTimeout = -1, 100*time.Millisecond },
			result.IdleTimeout, "idle timeout after 100ms"},
		{"close code that may not be sent", func(p *wsPeerConn) {
			p.accept()
			p.awaitCreate()
			p.c.Write([]byte{0x88, 0x02, 0x03, 0xed})
			p.drain()
		}, nil, result.BadFraming, "malformed response: websocket protocol error: close code 1005 may not be sent"},
		{"a whole answer, then garbage", func(p *wsPeerConn) {
			p.accept()
			p.awaitCreate()
			p.c.Write(whole)
			p.c.Write([]byte{0xC1, 0x00})
			p.drain()
		}, nil, result.OK, "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := wsPeer(t, tt.serve)
			o := wsOptions(addr, n)
			o.Timeout = 5 * time.Second
			if tt.tweak != nil {
				tt.tweak(&o)
			}
			rec := &result.Request{Batch: "gw"}
			begin := time.Now()
			New(o).Do(context.Background(), rec)
			if rec.Failure.Kind != tt.kind || !strings.HasPrefix(rec.Failure.Error(), tt.want) {
				t.Errorf("%s: %q (kind %s), want %q (kind %s)", tt.name, rec.Failure.Error(), rec.Failure.Kind, tt.want, tt.kind)
			}
			if d := time.Since(begin); d > 4*time.Second {
				t.Errorf("%s: the request took %v, want it ended well before its 5 s timeout", tt.name, d)
			}
			if tt.kind == result.OK && (len(rec.Tokens) != n || rec.ByPiTs != n) {
				t.Errorf("%s: %d tokens, %d by pi_ts; want %d by pi_ts", tt.name, len(rec.Tokens), rec.ByPiTs, n)
			}
		})
	}
}

// TestWebSocketKeptConnectionClosed: a peer that closes a kept
// connection while it is idle (an idle timeout's close frame) costs a
// reuse failure, and the request goes again on a new connection; one that
// pings an idle connection keeps it.
func TestWebSocketKeptConnectionClosed(t *testing.T) {
	const n = 2
	whole := bytes.Join(wsEvents(n, textFrame), nil)
	for _, tt := range []struct {
		name        string
		idle        []byte // what the peer sends after the first answer
		reused      bool
		reuseFailed bool
	}{
		{"closed", wire.AppendWSClose(nil, wire.WSCloseGoingAway, "idle timeout", nil), false, true},
		{"pinged", wire.AppendWSFrame(nil, wire.WSPing, []byte("x"), nil), true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// The peer sends its frame once the first request has ended
			// (a close right after the answer would only end that
			// connection, as "Connection: close" does, without a reuse
			// failure).
			first, sent := make(chan struct{}), make(chan struct{})
			var once sync.Once
			var pongs atomic.Int32
			addr := wsPeer(t, func(p *wsPeerConn) {
				p.onPong = func() { pongs.Add(1) }
				p.accept()
				for p.awaitCreate() {
					p.c.Write(whole)
					once.Do(func() {
						<-first
						p.c.Write(tt.idle)
						close(sent)
					})
				}
			})
			o := wsOptions(addr, n)
			o.KeepAlive = true
			s := New(o).NewSession()
			defer s.Close()
			rec := &result.Request{Batch: "gw"}
			s.Do(context.Background(), rec)
			close(first)
			<-sent
			// The peer's frame is on its way: wait until the client has it
			// — waiting on the kept connection (goroutine engine), or
			// handled as it came (the loops: the close found, the ping
			// answered).
			testutil.Await(t, "the peer's frame at the idle client", func() bool {
				st, ok := s.keptState()
				return ok && st != idle || pongs.Load() > 0
			})
			rec2 := &result.Request{Batch: "gw", Index: 1}
			s.Do(context.Background(), rec2)
			if !rec.OK() || !rec2.OK() || rec2.Reused != tt.reused || rec2.ReuseFailed != tt.reuseFailed || rec2.Poisoned {
				t.Errorf("%q then %q, reused %v, reuse failed %v, poisoned %v; want both ok, reused %v, reuse failed %v",
					rec.Failure.Error(), rec2.Failure.Error(), rec2.Reused, rec2.ReuseFailed, rec2.Poisoned, tt.reused, tt.reuseFailed)
			}
		})
	}
}

// FuzzWSExchange feeds a valid 101, then arbitrary frames cut arbitrarily,
// to the client's WebSocket exchange: it must not fail; an ended request
// has its failure (or ok) and, unless ok, no claim on the connection; the
// tokens it records are 0, 1, 2, ... in order; what it asks to write is
// whole masked frames.
func FuzzWSExchange(f *testing.F) {
	whole := bytes.Join(wsEvents(3, textFrame), nil)
	f.Add(whole, []byte{40, 200, 7})
	f.Add(append(wire.AppendWSFrame(nil, wire.WSPing, []byte("x"), nil), whole[:50]...), []byte{3})
	f.Add(append(whole[:100], wire.AppendWSClose(nil, 1011, "bye", nil)...), []byte{1, 1, 1})
	f.Add([]byte{0xC1, 0x00, 0x81, 0x7f, 0xff}, []byte{2})
	f.Fuzz(func(t *testing.T, frames, cuts []byte) {
		q := New(Options{Dialect: api.Responses, ExpectTokens: 3, WebSocket: true})
		rec := &result.Request{}
		ws := &wsState{key: "dGhlIHNhbXBsZSBub25jZQ=="}
		w := newWSExchange(q, rec, ws, false)
		defer w.r.close()
		var out []byte
		feed := func(p []byte, now int64) bool {
			ended := w.feed(p, now)
			out = append(out, w.out...)
			w.out = w.out[:0]
			return ended
		}
		head := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + wire.WSAccept(ws.key) + "\r\n\r\n"
		ended := feed([]byte(head), 1)
		for i, c := range cuts {
			if ended {
				break
			}
			k := min(int(c), len(frames))
			ended = feed(frames[:k], int64(2+i))
			frames = frames[k:]
		}
		if !ended {
			ended = feed(frames, 1000)
		}
		if ended && !w.ended {
			t.Fatal("feed ended the request without w.ended")
		}
		for i := range rec.Tokens {
			if index := rec.TokenIndex(i); int(index) != i {
				t.Fatalf("token %d has index %d", i, index)
			}
		}
		// What the client wrote: the response.create first, then
		// pongs and at most one close, all masked frames.
		r := wire.WSReader{Masked: true}
		var ops []byte
		for len(out) > 0 {
			m, used, err := r.Next(out)
			if err != nil || m.Op == 0 {
				t.Fatalf("the client wrote bytes that are no whole masked frames: %v", err)
			}
			out = out[used:]
			ops = append(ops, m.Op)
		}
		if len(ops) == 0 || ops[0] != wire.WSText || bytes.Count(ops, []byte{wire.WSClose}) > 1 || bytes.Count(ops, []byte{wire.WSText}) != 1 {
			t.Fatalf("the client wrote frames of opcodes %v, want the response.create, pongs, at most one close", ops)
		}
		// A peer that broke the framing gets a close, and the connection
		// is not kept.
		if d := rec.Failure.Detail; rec.Failure.Kind == result.BadFraming && strings.HasPrefix(d, "websocket ") &&
			(!bytes.Contains(ops, []byte{wire.WSClose}) || w.reusable()) {
			t.Fatalf("after %q the client wrote %v and would keep the connection: %v", rec.Failure.Error(), ops, w.reusable())
		}
	})
}
