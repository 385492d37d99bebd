package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/evloop"
	"github.com/sse-latency/sse-latency/internal/testutil"
	"github.com/sse-latency/sse-latency/internal/wire"
)

// The official SDK judges the WebSocket mode as it judges the SSE
// streams: openai-go's Beta.Responses.Connect must read several responses
// in sequence on one connection, every delta stamped with pi_ts, and
// accumulate exactly the text, the reasoning and the arguments.

// wsResponses is how many responses the SDK tests send on one connection.
const wsResponses = 3

// sdkWSResult is what one response read with the SDK gave.
type sdkWSResult struct {
	phases    [api.NumPhases]string // the deltas, accumulated
	argsDone  string                // response.function_call_arguments.done
	completed string                // the text of the completed response's message
	output    int64                 // its usage's output tokens
	unstamped int                   // deltas without pi_ts
	errorText string                // an error event's raw JSON
}

// sdkWSResponse sends one response.create on conn and reads its events
// up to response.completed (or an error event).
func sdkWSResponse(t *testing.T, ctx context.Context, conn *openai.BetaResponseConnection, create *openai.BetaResponsesClientEventResponseCreateParam) sdkWSResult {
	t.Helper()
	if err := conn.Send(ctx, openai.BetaResponsesClientEventUnionParam{OfResponseCreate: create}); err != nil {
		t.Fatalf("Send(response.create): %v", err)
	}
	var r sdkWSResult
	var seq int64
	for {
		ev, err := conn.Recv(ctx)
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		if ev.Type == "error" {
			r.errorText = ev.RawJSON()
			return r
		}
		var num struct {
			Seq int64 `json:"sequence_number"`
		}
		if err := json.Unmarshal([]byte(ev.RawJSON()), &num); err != nil || num.Seq != seq {
			t.Errorf("event %s has sequence_number %d (%v), want %d", ev.Type, num.Seq, err, seq)
		}
		seq++
		delta := func(p api.Phase, text string) {
			r.phases[p] += text
			if !strings.Contains(ev.RawJSON(), `"pi_ts":`) {
				r.unstamped++
			}
		}
		switch ev.Type {
		case "response.output_text.delta":
			delta(api.PhaseText, ev.AsResponseOutputTextDelta().Delta)
		case "response.reasoning_summary_text.delta":
			delta(api.PhaseReasoning, ev.AsResponseReasoningSummaryTextDelta().Delta)
		case "response.reasoning_text.delta":
			delta(api.PhaseReasoning, ev.AsResponseReasoningTextDelta().Delta)
		case "response.function_call_arguments.delta":
			delta(api.PhaseToolCall, ev.AsResponseFunctionCallArgumentsDelta().Delta)
		case "response.function_call_arguments.done":
			r.argsDone = ev.AsResponseFunctionCallArgumentsDone().Arguments
		case "response.completed":
			resp := ev.AsResponseCompleted().Response
			for _, item := range resp.Output {
				if item.Type == "message" {
					for _, c := range item.AsMessage().Content {
						r.completed += c.Text
					}
				}
			}
			r.output = resp.Usage.OutputTokens
			return r
		}
	}
}

// sdkWSClient returns an openai-go client of the server at base.
func sdkWSClient(base string, hc *http.Client) openai.Client {
	return openai.NewClient(option.WithBaseURL(base), option.WithAPIKey("sk-test"), option.WithMaxRetries(0), option.WithHTTPClient(hc))
}

func TestOpenAISDKResponsesWebSocket(t *testing.T) {
	forEngines(t, func(t *testing.T, e evloop.Engine) {
		for _, useTLS := range []bool{false, true} {
			name := "plain"
			cfg := Config{Tokens: sdkTokens, DelayMs: 0.1, Engine: e}
			hc := &http.Client{}
			if useTLS {
				name = "TLS"
				tc, _, err := SelfSignedTLS()
				if err != nil {
					t.Fatal(err)
				}
				cfg.TLS = tc
				hc = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
			}
			t.Run(name, func(t *testing.T) {
				srv := startServer(t, cfg)
				scheme := "http"
				if useTLS {
					scheme = "https"
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				client := sdkWSClient(scheme+"://"+srv.Addr().String()+"/v1/", hc)
				conn, err := client.Beta.Responses.Connect(ctx, openai.BetaResponseConnectionOptions{})
				if err != nil {
					t.Fatalf("Connect: %v", err)
				}
				defer conn.Abort()
				for i := range wsResponses {
					r := sdkWSResponse(t, ctx, conn, &openai.BetaResponsesClientEventResponseCreateParam{
						Model: "gpt-4.1",
						Input: openai.BetaResponsesClientEventResponseCreateInputUnionParam{OfString: openai.String(api.ChatPrompt)},
					})
					if r.errorText != "" || r.phases[api.PhaseText] != allText(sdkTokens) || r.completed != allText(sdkTokens) ||
						r.output != sdkTokens || r.unstamped != 0 {
						t.Errorf("response %d: %+v; want the text %q in the deltas and the completed response, %d output tokens, every delta with pi_ts",
							i, r, allText(sdkTokens), sdkTokens)
					}
				}
				if err := conn.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
				if c, n := srv.Connections(), srv.Requests(); c != 1 || n != wsResponses {
					t.Errorf("the server saw %d connections and %d requests, want 1 and %d: responses in sequence on one connection", c, n, wsResponses)
				}
			})
		}
	})
}

func TestOpenAISDKResponsesWebSocketPhases(t *testing.T) {
	for _, field := range []api.ReasoningField{api.ReasoningContent, api.ReasoningPlain} {
		addr, ctx := phaseServer(t, field)
		client := sdkWSClient("http://"+addr+"/v1/", &http.Client{})
		conn, err := client.Beta.Responses.Connect(ctx, openai.BetaResponseConnectionOptions{})
		if err != nil {
			t.Fatalf("Connect: %v", err)
		}
		r := sdkWSResponse(t, ctx, conn, &openai.BetaResponsesClientEventResponseCreateParam{
			Model: "gpt-5",
			Input: openai.BetaResponsesClientEventResponseCreateInputUnionParam{OfString: openai.String(api.ChatPrompt)},
		})
		conn.Abort()
		if r.phases != sdkPhases || r.argsDone != sdkPhases[api.PhaseToolCall] || r.output != sdkTotal || r.unstamped != 0 {
			t.Errorf("%s: %+v; want the phases %q, %d output tokens, every delta with pi_ts", field, r, sdkPhases, sdkTotal)
		}
		checkArguments(t, field.String()+" over WebSocket", r.phases[api.PhaseToolCall])
	}
}

// TestOpenAISDKResponsesWebSocketError: an error answer is an error event,
// and the connection serves the next response.
func TestOpenAISDKResponsesWebSocketError(t *testing.T) {
	addr, ctx := sdkServer(t)
	client := sdkWSClient("http://"+addr+"/v1/", &http.Client{})
	conn, err := client.Beta.Responses.Connect(ctx, openai.BetaResponseConnectionOptions{})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer conn.Abort()
	tooMany := &openai.BetaResponsesClientEventResponseCreateParam{
		Model: "gpt-4.1",
		Input: openai.BetaResponsesClientEventResponseCreateInputUnionParam{OfString: openai.String(api.ChatPrompt)},
	}
	tooMany.SetExtraFields(map[string]any{"pi_tokens": 2_000_000})
	r := sdkWSResponse(t, ctx, conn, tooMany)
	var ev struct {
		Type   string
		Status int
		Error  struct{ Code, Message string }
	}
	if err := json.Unmarshal([]byte(r.errorText), &ev); err != nil || ev.Status != 400 || ev.Error.Code != "hint_above_limit" ||
		!strings.Contains(ev.Error.Message, "pi_tokens 2000000") {
		t.Errorf("error event %s (%v); want status 400, code hint_above_limit naming the hint", r.errorText, err)
	}
	r = sdkWSResponse(t, ctx, conn, &openai.BetaResponsesClientEventResponseCreateParam{
		Model: "gpt-4.1",
		Input: openai.BetaResponsesClientEventResponseCreateInputUnionParam{OfString: openai.String(api.ChatPrompt)},
	})
	if r.phases[api.PhaseText] != allText(sdkTokens) {
		t.Errorf("the response after an error event: %+v", r)
	}
}

// wsTestConn is a raw WebSocket client of the tests: it writes masked
// frames and reads the server's with wire.WSReader.
type wsTestConn struct {
	t   *testing.T
	c   net.Conn
	br  *bufio.Reader
	fr  wire.WSReader
	buf []byte // read, not yet parsed
}

// wsDial connects to srv and upgrades on path with the extra header lines;
// it fails the test unless the answer is 101.
func wsDial(t *testing.T, srv *Server, path string, extra ...string) *wsTestConn {
	t.Helper()
	c, head := wsHandshake(t, srv, path, extra...)
	if !strings.HasPrefix(head, "HTTP/1.1 101 ") || !strings.Contains(head, "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n") {
		t.Fatalf("upgrade answered\n%s", head)
	}
	return c
}

// wsHandshake sends an upgrade request, with the extra header lines (a
// Sec-WebSocket-Version line replaces the request's own), and returns the
// connection and the response head.
func wsHandshake(t *testing.T, srv *Server, path string, extra ...string) (*wsTestConn, string) {
	t.Helper()
	c, br := dialRaw(t, srv)
	version := "Sec-WebSocket-Version: 13\r\n"
	var more string
	for _, h := range extra {
		if strings.HasPrefix(h, "Sec-WebSocket-Version:") {
			version = h + "\r\n"
		} else {
			more += h + "\r\n"
		}
	}
	req := "GET " + path + " HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" + version + more + "\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	wc := &wsTestConn{t: t, c: c, br: br}
	var head strings.Builder
	for {
		line, err := wc.br.ReadString('\n')
		head.WriteString(line)
		if err != nil || line == "\r\n" {
			break
		}
	}
	return wc, head.String()
}

var wsTestKey = [4]byte{1, 2, 3, 4}

func (w *wsTestConn) send(op byte, payload string) {
	w.t.Helper()
	if _, err := w.c.Write(wire.AppendWSFrame(nil, op, []byte(payload), &wsTestKey)); err != nil {
		w.t.Fatalf("sending: %v", err)
	}
}

func (w *wsTestConn) sendRaw(b []byte) {
	w.t.Helper()
	if _, err := w.c.Write(b); err != nil {
		w.t.Fatalf("sending: %v", err)
	}
}

// next returns the next message, or an error when the connection ends
// first.
func (w *wsTestConn) next() (wire.WSMessage, error) {
	for {
		if len(w.buf) > 0 {
			m, used, err := w.fr.Next(w.buf)
			w.buf = w.buf[used:]
			if err != nil {
				return m, err
			}
			if m.Op != 0 {
				m.Payload = append([]byte(nil), m.Payload...)
				return m, nil
			}
		}
		p := make([]byte, 4096)
		n, err := w.br.Read(p)
		if n == 0 && err != nil {
			return wire.WSMessage{}, err
		}
		w.buf = append(w.buf, p[:n]...)
	}
}

// events reads text messages up to the first whose type is one of until,
// and returns their types.
func (w *wsTestConn) events(until ...string) (types []string, last []byte) {
	w.t.Helper()
	for {
		m, err := w.next()
		if err != nil {
			w.t.Fatalf("after events %v: %v", types, err)
		}
		if m.Op != wire.WSText {
			w.t.Fatalf("after events %v: message of opcode 0x%x %q", types, m.Op, m.Payload)
		}
		var ev struct{ Type string }
		json.Unmarshal(m.Payload, &ev)
		types = append(types, ev.Type)
		for _, u := range until {
			if ev.Type == u {
				return types, m.Payload
			}
		}
	}
}

// closeCode reads messages up to a close frame and returns its text.
func (w *wsTestConn) closeCode() string {
	w.t.Helper()
	for {
		m, err := w.next()
		if err != nil {
			w.t.Fatalf("no close frame: %v", err)
		}
		if m.Op == wire.WSClose {
			return wire.WSCloseText(m.Payload)
		}
	}
}

const wsCreate = `{"type":"response.create","model":"m","input":"hi"}`

// TestWebSocketStream checks a response's messages: one event each, the
// same as the SSE stream's data lines, then a second response on the
// connection, the X-SSE-Latency hints of the upgrade applying to both.
func TestWebSocketStream(t *testing.T) {
	forEngines(t, func(t *testing.T, e evloop.Engine) {
		srv := startServer(t, Config{Tokens: 50, DelayMs: 0.1, Engine: e})
		w := wsDial(t, srv, "/openai/v1/responses?x=1", api.HintHeader+": tokens=3")
		for i := range 2 {
			w.send(wire.WSText, wsCreate)
			types, last := w.events("response.completed")
			var want []string
			for _, ev := range wantEvents(api.Responses, 3, false, `"m"`) {
				want = append(want, ev.name)
			}
			if strings.Join(types, " ") != strings.Join(want, " ") {
				t.Errorf("response %d: events %v, want %v", i, types, want)
			}
			if !strings.Contains(string(last), `"output_tokens":3`) {
				t.Errorf("response %d: response.completed %s", i, last)
			}
		}
		// A ping between responses, then a close: answered alike.
		w.send(wire.WSPing, "hello")
		if m, err := w.next(); err != nil || m.Op != wire.WSPong || string(m.Payload) != "hello" {
			t.Errorf("ping answered by %v %q, %v; want a pong with its payload", m.Op, m.Payload, err)
		}
		w.sendRaw(wire.AppendWSClose(nil, 4000, "done", &wsTestKey))
		if got := w.closeCode(); got != "close 4000" {
			t.Errorf("close answered by %s, want close 4000", got)
		}
		if _, err := w.next(); err != io.EOF {
			t.Errorf("after the close: %v, want EOF", err)
		}
	})
}

// TestWebSocketErrorEvents: a bad message gets an error event and the
// connection goes on.
func TestWebSocketErrorEvents(t *testing.T) {
	srv := startServer(t, Config{Tokens: 3, DelayMs: 0.1, MaxStreams: -1})
	w := wsDial(t, srv, "/v1/responses")
	for _, tt := range []struct {
		msg, code string
	}{
		{`{"type":`, "invalid_request_error"},
		{`{"type":"response.cancel"}`, "unsupported_event_type"},
		{`{"type":"response.create","pi_tokens":"x"}`, "invalid_request_error"},
		{`{"type":"response.create","pi_think_ms":6000000}`, "hint_above_limit"},
	} {
		w.send(wire.WSText, tt.msg)
		_, last := w.events("error")
		var ev struct {
			Type   string
			Status int
			Error  struct{ Type, Code, Message string }
		}
		if err := json.Unmarshal(last, &ev); err != nil || ev.Status != 400 || ev.Error.Code != tt.code || ev.Error.Message == "" {
			t.Errorf("message %s answered by %s; want an error event, status 400, code %s", tt.msg, last, tt.code)
		}
	}
	w.send(wire.WSText, wsCreate)
	w.events("response.completed")
}

// TestWebSocketOneInFlight: a response.create while a response streams
// gets an error event; the response in progress completes.
func TestWebSocketOneInFlight(t *testing.T) {
	srv := startServer(t, Config{Tokens: 3, DelayMs: 50})
	w := wsDial(t, srv, "/v1/responses")
	w.send(wire.WSText, wsCreate)
	w.events("response.created")
	w.send(wire.WSText, wsCreate)
	types, last := w.events("error", "response.completed")
	if types[len(types)-1] != "error" || !strings.Contains(string(last), `"code":"response_already_in_flight"`) {
		t.Fatalf("second response.create in flight: events %v, last %s", types, last)
	}
	w.events("response.completed")
	awaitNoStreams(t, srv, "after response.completed")
}

// awaitNoStreams waits until srv has no answer in progress (a stream
// frees its place once its last write returned).
func awaitNoStreams(t *testing.T, srv *Server, when string) {
	t.Helper()
	testutil.Await(t, "no answer in progress "+when, func() bool { return srv.ActiveStreams() == 0 })
}

// TestWebSocketMaxStreams: past --max-streams, an error event with status
// 429.
func TestWebSocketMaxStreams(t *testing.T) {
	srv := startServer(t, Config{Tokens: 3, DelayMs: 100, MaxStreams: 1})
	a, b := wsDial(t, srv, "/v1/responses"), wsDial(t, srv, "/v1/responses")
	a.send(wire.WSText, wsCreate)
	a.events("response.created")
	b.send(wire.WSText, wsCreate)
	if _, last := b.events("error"); !strings.Contains(string(last), `"status":429`) || !strings.Contains(string(last), "rate_limit_exceeded") {
		t.Errorf("a response past --max-streams: %s", last)
	}
	a.events("response.completed")
}

// TestWebSocketClose: what ends a connection, with the close code sent.
// The timeouts have servers of their own, so that a slow test machine
// cannot make another case's server time out first.
func TestWebSocketClose(t *testing.T) {
	plain := startServer(t, Config{Tokens: 3, DelayMs: 0.1})
	idle := startServer(t, Config{Tokens: 3, IdleTimeout: 200 * time.Millisecond})
	slow := startServer(t, Config{Tokens: 3, ReadTimeout: time.Second})
	for _, tt := range []struct {
		name string
		srv  *Server
		send func(w *wsTestConn)
		want string
	}{
		{"binary message", plain, func(w *wsTestConn) { w.send(wire.WSBinary, "x") }, "close 1003"},
		{"unmasked frame", plain, func(w *wsTestConn) { w.sendRaw(wire.AppendWSFrame(nil, wire.WSText, []byte(wsCreate), nil)) }, "close 1002"},
		{"reserved bit", plain, func(w *wsTestConn) { w.sendRaw([]byte{0xC1, 0x80, 1, 2, 3, 4}) }, "close 1002"},
		{"message too large", plain, func(w *wsTestConn) {
			w.sendRaw(wire.AppendWSHeader(nil, wire.WSText, MaxBodyBytes+1, &wsTestKey))
		}, "close 1009"},
		{"not UTF-8", plain, func(w *wsTestConn) { w.send(wire.WSText, "\xff") }, "close 1007"},
		{"idle", idle, func(w *wsTestConn) {}, `close 1001 "idle timeout"`},
		{"message sent too slowly", slow, func(w *wsTestConn) { w.sendRaw(wire.AppendWSHeader(nil, wire.WSText, 10, &wsTestKey)) }, "close 1008"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := wsDial(t, tt.srv, "/v1/responses")
			tt.send(w)
			if got := w.closeCode(); !strings.HasPrefix(got, tt.want) {
				t.Errorf("closed with %s, want %s", got, tt.want)
			}
			if _, err := w.next(); err != io.EOF {
				t.Errorf("after the close frame: %v, want EOF", err)
			}
		})
	}
}

// TestWebSocketClientGoneMidResponse: a client that closes while its
// response streams frees the response's place.
func TestWebSocketClientGoneMidResponse(t *testing.T) {
	srv := startServer(t, Config{Tokens: 1000, DelayMs: 1})
	w := wsDial(t, srv, "/v1/responses")
	w.send(wire.WSText, wsCreate)
	w.events("response.output_text.delta")
	w.sendRaw(wire.AppendWSClose(nil, wire.WSCloseGoingAway, "", &wsTestKey))
	w.closeCode()
	w.c.Close()
	awaitNoStreams(t, srv, "after the client closed")
}

func TestWebSocketUpgradeRefused(t *testing.T) {
	srv := startServer(t, Config{Tokens: 3})
	for _, tt := range []struct {
		name, path string
		extra      []string
		want       []string
	}{
		{"chat path", "/v1/chat/completions", nil, []string{"404 Not Found", "only the Responses path"}},
		{"version 8", "/v1/responses", []string{"Sec-WebSocket-Version: 8"}, []string{"426 ", "Sec-WebSocket-Version: 13\r\n", `\"8\" is not 13`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, head := wsHandshake(t, srv, tt.path, tt.extra...)
			body, _ := io.ReadAll(w.br) // the connection closes after the error
			head += string(body)
			for _, want := range tt.want {
				if !strings.Contains(head, want) {
					t.Errorf("upgrade answered\n%s\nwant %q in it", head, want)
				}
			}
		})
	}
	for _, tt := range []struct {
		name, req, want string
	}{
		{"no Connection upgrade", "GET /v1/responses HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", "does not list Upgrade"},
		{"bad key", "GET /v1/responses HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: upgrade\r\nSec-WebSocket-Key: abc\r\nSec-WebSocket-Version: 13\r\n\r\n", "Sec-WebSocket-Key"},
		{"HTTP/1.0", "GET /v1/responses HTTP/1.0\r\nHost: x\r\nUpgrade: websocket\r\nConnection: upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", "needs HTTP/1.1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := exchange(t, srv, tt.req)
			if !strings.HasPrefix(resp, "HTTP/1.1 400 ") || !strings.Contains(resp, tt.want) || !strings.Contains(resp, `"code":"bad_request"`) {
				t.Errorf("answered\n%s\nwant a 400 JSON error naming %q", resp, tt.want)
			}
		})
	}
}

// wsHostileCases are TestHostile's WebSocket cases: an upgrade cut short,
// then valid upgrades followed by random bytes, by random frames, by
// mutated response.create messages, and over TLS.
func wsHostileCases(rng *rand.Rand) []hostileCase {
	var cases []hostileCase
	add := func(name string, to int, data string, hold bool) {
		cases = append(cases, hostileCase{name: name, to: to, data: []byte(data), hold: hold})
	}
	upgrade := "GET /v1/responses HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	create := string(wire.AppendWSFrame(nil, wire.WSText, []byte(`{"type":"response.create","pi_tokens":3,"pi_delay_ms":0.1}`), &wsTestKey))
	for i := 0; i < len(upgrade); i += 3 {
		add(fmt.Sprintf("WebSocket upgrade truncated to %d bytes", i), toPlain, upgrade[:i], i%2 == 0)
	}
	random := func(n int) []byte {
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		return b
	}
	for i := range 100 {
		add(fmt.Sprintf("WebSocket then random bytes %d", i), toPlain, upgrade+string(random(1+rng.IntN(300))), i%10 == 0)
	}
	for i := range 100 {
		var b []byte
		for range 1 + rng.IntN(6) {
			op := []byte{0, 1, 2, 8, 9, 10, 3, 11}[rng.IntN(8)]
			f := wire.AppendWSFrame(nil, op, random(rng.IntN(140)), &wsTestKey)
			if rng.IntN(4) == 0 {
				f[0] &^= 0x80 // not FIN
			}
			b = append(b, f...)
		}
		add(fmt.Sprintf("WebSocket random frames %d", i), toPlain, upgrade+string(b), i%10 == 0)
	}
	for i := range 200 {
		add(fmt.Sprintf("WebSocket mutated response.create %d", i), toPlain, upgrade+mutate(rng, create+create), i%10 == 0)
	}
	add("WebSocket response.create, held", toPlain, upgrade+create, true)
	add("WebSocket over TLS, then random bytes", overTLS, upgrade+string(random(200)), false)
	add("WebSocket over TLS, mutated response.create", overTLS, upgrade+mutate(rng, create), false)
	return cases
}

// TestWebSocketServerStops: Serve returns when it is cancelled with
// WebSockets open, one idle and one streaming, whose clients see their
// connection end.
func TestWebSocketServerStops(t *testing.T) {
	srv, stop := runServer(t, Config{Tokens: 1000, DelayMs: 50})
	idle, busy := wsDial(t, srv, "/v1/responses"), wsDial(t, srv, "/v1/responses")
	busy.send(wire.WSText, wsCreate)
	busy.events("response.output_text.delta")
	stop("with two WebSockets open")
	for i, w := range []*wsTestConn{idle, busy} {
		for {
			_, err := w.next()
			if isTimeout(err) {
				t.Errorf("connection %d still open 20 s after Serve returned", i)
			}
			if err != nil {
				break
			}
		}
	}
	if n := srv.ActiveStreams(); n != 0 {
		t.Errorf("%d answers in progress after Serve returned", n)
	}
}

// TestWSConnControlAfterPartialFrame: a control frame that comes while a
// stream's frame is partly written waits for the rest of it, and a
// shard's non-blocking write while the lock is held counts as a full
// socket. The server side of a loopback connection with a 4 KiB send
// buffer and a peer that does not read yet makes the partial write: a
// 1 MiB frame is several times what the peer's receive buffer takes
// before it reads (its size is left alone: shrinking it on a connected
// loopback socket stalls the connection for good).
func TestWSConnControlAfterPartialFrame(t *testing.T) {
	if !directWrites {
		t.Skip("no direct writes on this system")
	}
	ln := testutil.Listen(t)
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	sc.(*net.TCPConn).SetWriteBuffer(4 << 10)
	srv := &Server{cfg: Config{WriteTimeout: 10 * time.Second}}
	c := &wsConn{s: srv, hc: newH1conn(srv, sc)}

	big := wire.AppendWSFrame(nil, wire.WSText, bytes.Repeat([]byte("a"), 1<<20), nil)
	n, err := c.tryWrite(big)
	if err != nil && !errors.Is(err, errAgain) || n == 0 || n == len(big) {
		t.Fatalf("tryWrite of 1 MiB into a 4 KiB buffer: %d bytes, %v; want a partial write", n, err)
	}
	c.control(wire.AppendWSFrame(nil, wire.WSPong, []byte("p"), nil)) // queued: the frame is not whole yet
	c.wmu.Lock()
	if m, err := c.tryWrite(big); m != 0 || !errors.Is(err, errAgain) {
		t.Errorf("tryWrite while the lock is held: %d, %v; want 0 and errAgain", m, err)
	}
	c.wmu.Unlock()

	type result struct {
		msgs []wire.WSMessage // each with the first bytes of its payload
		err  error
	}
	got := make(chan result, 1)
	go func() { // the peer reads again
		var r wire.WSReader
		var res result
		buf := make([]byte, 64<<10)
		peer.SetReadDeadline(time.Now().Add(20 * time.Second))
		for len(res.msgs) < 2 && res.err == nil {
			k, err := peer.Read(buf)
			if err != nil {
				res.err = err
				break
			}
			for in := buf[:k]; len(in) > 0; {
				m, used, err := r.Next(in)
				in = in[used:]
				if err != nil {
					res.err = err
					break
				}
				if m.Op != 0 {
					res.msgs = append(res.msgs, wire.WSMessage{Op: m.Op, Payload: append([]byte(nil), m.Payload[:min(len(m.Payload), 8)]...)})
				}
			}
		}
		got <- res
	}()
	if err := c.write(big[n:]); err != nil {
		t.Fatalf("writing the rest: %v", err)
	}
	res := <-got
	if res.err != nil || len(res.msgs) != 2 || res.msgs[0].Op != wire.WSText || res.msgs[1].Op != wire.WSPong || string(res.msgs[1].Payload) != "p" {
		t.Errorf("the peer read %v (%v); want the whole text frame, then the pong", res.msgs, res.err)
	}
}
