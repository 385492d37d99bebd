package client

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/server"
	"github.com/sse-latency/sse-latency/internal/wire"
	"github.com/sse-latency/sse-latency/internal/wsrelay"
)

func TestAppendUpgrade(t *testing.T) {
	q := New(Options{Dialect: api.Responses, Addr: "127.0.0.1:1", Host: "gw.local", Path: "/openai/v1/responses", Tokens: 7,
		APIKey: "sk-x", ExtraHeaders: []string{"X-Team: a"}, WebSocket: true})
	got := string(q.AppendUpgrade(nil, "dGhlIHNhbXBsZSBub25jZQ=="))
	want := "GET /openai/v1/responses HTTP/1.1\r\nHost: gw.local\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nX-SSE-Latency: tokens=7\r\n" +
		"Authorization: Bearer sk-x\r\nX-Team: a\r\n\r\n"
	if got != want {
		t.Errorf("AppendUpgrade =\n%q\nwant\n%q", got, want)
	}
	h, n, err := wire.ParseRequestHead([]byte(got))
	if err != nil || n != len(got) || h.Method != "GET" {
		t.Errorf("the upgrade does not parse as a request head: %v", err)
	}
}

func TestAppendCreate(t *testing.T) {
	q := New(Options{Dialect: api.Responses, Model: "m", Tokens: 3, WebSocket: true})
	frame := q.AppendCreate(nil, "run-gw-1")
	r := wire.WSReader{Masked: true}
	m, used, err := r.Next(frame)
	want := `{"type":"response.create","model":"m","input":"Say 4-letter words [sse-latency id=run-gw-1 tokens=3]","pi_id":"run-gw-1","pi_tokens":3}`
	if err != nil || used != len(frame) || m.Op != wire.WSText || string(m.Payload) != want {
		t.Errorf("AppendCreate: a frame of %v %q (%v), want one masked text frame %s", m.Op, m.Payload, err, want)
	}
}

// wsOptions are the options of WebSocket requests of n tokens to addr.
func wsOptions(addr string, n int) Options {
	return Options{Dialect: api.Responses, Addr: addr, Tokens: n, ExpectTokens: n, Timeout: 10 * time.Second,
		IDPrefix: "ws", WebSocket: true}
}

// TestWebSocketAgainstOurServer sends requests over WebSocket to the dummy
// server, each on its own connection and with -k on one: every token
// measured by pi_ts, the phases of a new connection (the handshake as the
// head) and of a kept one (no head), the protocol, the reuse.
func TestWebSocketAgainstOurServer(t *testing.T) {
	const n, requests = 20, 3
	addr, reg := ourServer(t)
	if o := wsOptions(addr, n); testEngine != "" {
		if e, note := o.ResolveEngine(); e != testEngine {
			t.Fatalf("WebSocket requests run on the %s engine (%s), want the %s engine under test", e, note, testEngine)
		}
	}
	for _, keep := range []bool{false, true} {
		o := wsOptions(addr, n)
		o.KeepAlive, o.Registry = keep, reg
		q := New(o)
		s := q.NewSession()
		for i := range requests {
			rec := &result.Request{Batch: "gw", Index: i}
			s.Do(context.Background(), rec)
			if !rec.OK() || len(rec.Tokens) != n || rec.ByPiTs != n || rec.Proto != ProtoWebSocket {
				t.Fatalf("keep %v, request %d: %q, %d tokens, %d by pi_ts, proto %q; want ok, %d tokens by pi_ts over websocket",
					keep, i, rec.Failure.Error(), len(rec.Tokens), rec.ByPiTs, rec.Proto, n)
			}
			reused := keep && i > 0
			if rec.Reused != reused || rec.ReuseFailed || rec.Poisoned {
				t.Errorf("keep %v, request %d: reused %v, reuse failed %v, poisoned %v; want reused %v", keep, i, rec.Reused, rec.ReuseFailed, rec.Poisoned, reused)
			}
			switch {
			case reused && (rec.Connected != 0 || rec.HeadAt != 0 || rec.Sent < rec.Start):
				t.Errorf("request %d on a kept connection: connected %d, head %d, sent %d (start %d); want no connect, no head", i, rec.Connected, rec.HeadAt, rec.Sent, rec.Start)
			case !reused && !(rec.Start <= rec.Connected && rec.Connected <= rec.Sent && rec.Sent <= rec.HeadAt && rec.HeadAt <= rec.Tokens[0].Arrived):
				t.Errorf("request %d on a new connection: start %d, connected %d, sent %d, head (101) %d, first token %d: want them in order",
					i, rec.Start, rec.Connected, rec.Sent, rec.HeadAt, rec.Tokens[0].Arrived)
			}
			for k, tok := range rec.Tokens {
				if int(rec.TokenIndex(k)) != k || tok.Emitted <= 0 || tok.Arrived < tok.Emitted {
					t.Errorf("request %d, token %d: index %d, emitted %d, arrived %d", i, k, rec.TokenIndex(k), tok.Emitted, tok.Arrived)
				}
			}
			if rec.Events != n+8 { // created, in_progress, item added, part added, n deltas, text done, part done, item done, completed
				t.Errorf("request %d: %d events (messages), want %d", i, rec.Events, n+8)
			}
		}
		s.Close()
	}
	if reg.Len() != 0 {
		t.Errorf("the registry holds %d entries after every request took its own", reg.Len())
	}
}

// TestWebSocketPhases: reasoning and a tool call over WebSocket, measured
// like the text.
func TestWebSocketPhases(t *testing.T) {
	const r, c, n = 4, 3, 5
	for _, field := range []api.ReasoningField{api.ReasoningContent, api.ReasoningPlain} {
		addr, reg := phaseServer(t, field)
		o := wsOptions(addr, n)
		o.Reasoning, o.ToolCall, o.Registry = r, c, reg
		rec := &result.Request{Batch: "gw"}
		New(o).Do(context.Background(), rec)
		if !rec.OK() || len(rec.Tokens) != r+c+n || rec.ByPiTs != r+c+n || rec.FirstReasoningAt == 0 || rec.FirstToolCallAt == 0 {
			t.Errorf("%s: %q, %d tokens, %d by pi_ts, first reasoning %d, first tool call %d; want ok, %d tokens by pi_ts, every phase",
				field, rec.Failure.Error(), len(rec.Tokens), rec.ByPiTs, rec.FirstReasoningAt, rec.FirstToolCallAt, r+c+n)
		}
	}
}

// TestWebSocketPing: a response whose first token comes after a silence
// longer than the ping interval: the client pings, the server answers,
// the request is ok.
func TestWebSocketPing(t *testing.T) {
	o := wsOptions(serveOurs(t, server.Config{Tokens: 3, ThinkMs: 150, DelayMs: 0.2}), 3)
	o.WSPing, o.WSPongTimeout = 20*time.Millisecond, 5*time.Second
	rec := &result.Request{Batch: "gw"}
	New(o).Do(context.Background(), rec)
	if !rec.OK() || len(rec.Tokens) != 3 {
		t.Fatalf("%q, %d tokens; want ok", rec.Failure.Error(), len(rec.Tokens))
	}
	if rec.Tokens[0].Arrived-rec.Sent < int64(150*time.Millisecond) {
		t.Errorf("the first token came %v after the upgrade, want the think time (150ms) or more", time.Duration(rec.Tokens[0].Arrived-rec.Sent))
	}
}

// TestWebSocketUpgradeRefusedByOurServer: the dummy server refuses the
// upgrade on another dialect's path; the failure quotes its answer.
func TestWebSocketUpgradeRefusedByOurServer(t *testing.T) {
	addr, _ := ourServer(t)
	o := wsOptions(addr, 3)
	o.Path = "/v1/chat/completions"
	rec := &result.Request{Batch: "gw"}
	New(o).Do(context.Background(), rec)
	if rec.Failure.Kind != result.BadStatus || !strings.Contains(rec.Failure.Error(), "404 Not Found") ||
		!strings.Contains(rec.Failure.Error(), "only the Responses path") {
		t.Errorf("upgrade on /v1/chat/completions: %q, want the 404 and its message", rec.Failure.Error())
	}
}

// TestWebSocketHeartbeats: over WebSocket the server's heartbeats are
// ping frames. Directly, on a new connection and on a kept one, the
// client counts every one the server wrote (and answers it: the request
// is ok); through the SSE->WebSocket relay, which drops the upstream's
// comments, it sees none of them.
func TestWebSocketHeartbeats(t *testing.T) {
	// 300 ms of silence at a heartbeat every 50 ms: the first heartbeat is
	// due 50 ms in, and a loop whose wake-up comes after the token's own
	// deadline writes the token instead, by design; so the 250 ms between
	// them is how late a wake-up may be (100 ms at 20 was too little at a
	// load of 16).
	addr, reg := serveWith(t, server.Config{Tokens: 1, ThinkMs: 300, DelayMs: 0.2})
	relay := startRelay(t, addr, wsrelay.Config{})
	for _, via := range []struct{ name, addr string }{{"direct", addr}, {"relay", relay}} {
		o := wsOptions(via.addr, 2)
		o.HeartbeatMs, o.Registry, o.KeepAlive = 50, reg, true
		s := New(o).NewSession()
		for i := range 2 {
			rec := &result.Request{Batch: "gw", Index: i}
			s.Do(context.Background(), rec)
			switch {
			case !rec.OK() || !rec.ServerRecord:
				t.Fatalf("%s, request %d: %q, server record %v; want ok, with the server's record", via.name, i, rec.Failure.Error(), rec.ServerRecord)
			case rec.ServerHeartbeats < 1:
				t.Errorf("%s, request %d: the server wrote %d heartbeats in 300 ms of silence at 50 ms, want 1 or more", via.name, i, rec.ServerHeartbeats)
			case via.addr == addr && rec.Pings != rec.ServerHeartbeats:
				t.Errorf("direct, request %d: %d ping frames seen, the server wrote %d heartbeats", i, rec.Pings, rec.ServerHeartbeats)
			case via.addr == relay && rec.Pings+rec.Comments != 0:
				t.Errorf("relay, request %d: %d heartbeats seen through a relay that drops comments", i, rec.Pings+rec.Comments)
			}
		}
		s.Close()
	}
}
