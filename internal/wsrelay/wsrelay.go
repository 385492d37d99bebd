// Package wsrelay is a test fixture: an in-process gateway of the shape of
// the seed report's relay (shared/seeds, "websocket sse relay
// iteration"). It speaks the Responses API's WebSocket mode to its
// clients and SSE to its upstream: for each response.create message it
// POSTs the body to the upstream's /v1/responses with "stream": true and
// relays each SSE event's data as one text message, its JSON unchanged.
// Variants rewrite the stream the way other relays do: strip pi_ts
// (re-serialising relays drop unknown fields), or merge consecutive
// text deltas into one message. The server side is
// github.com/coder/websocket, a WebSocket implementation independent of
// the tool's own.
package wsrelay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// Config is a relay's behaviour.
type Config struct {
	// Upstream returns the upstream's address (host:port), asked when a
	// response begins: a relay may start before its upstream.
	Upstream func() string
	// StripPiTs removes the pi_ts field of every event.
	StripPiTs bool
	// Merge, when above 1, relays up to Merge consecutive
	// response.output_text.delta events as one message whose delta is
	// theirs concatenated, without pi_ts; a pending merge is flushed by
	// any other event.
	Merge int
}

// Relay is a running relay.
type Relay struct {
	cfg  Config
	srv  *http.Server
	addr string
}

// Start serves the relay on ln until Close.
func Start(ln net.Listener, cfg Config) *Relay {
	r := &Relay{cfg: cfg, addr: ln.Addr().String()}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln)
	return r
}

// Addr is the address clients connect to.
func (r *Relay) Addr() string { return r.addr }

// Close stops the relay and closes its connections.
func (r *Relay) Close() error { return r.srv.Close() }

// upstreamTimeout bounds one relayed response.
const upstreamTimeout = 2 * time.Minute

// forwarded are the upgrade request's fields the relay passes upstream
// with every response.
var forwarded = []string{"X-SSE-Latency", "Authorization"}

func (r *Relay) serve(w http.ResponseWriter, req *http.Request) {
	c, err := websocket.Accept(w, req, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	ctx := req.Context()
	for {
		typ, msg, err := c.Read(ctx)
		if err != nil {
			return
		}
		if typ != websocket.MessageText {
			c.Close(websocket.StatusUnsupportedData, "text only")
			return
		}
		if err := r.relay(ctx, c, req.Header, msg); err != nil {
			ev, _ := json.Marshal(map[string]any{"type": "error", "status": 502,
				"error": map[string]any{"type": "relay_error", "code": "upstream_failed", "message": err.Error(), "param": nil}})
			if c.Write(ctx, websocket.MessageText, ev) != nil {
				return
			}
		}
	}
}

var piTs = regexp.MustCompile(`,"pi_ts":[0-9]+|"pi_ts":[0-9]+,`)

// relay answers one client event: a response.create is posted upstream
// and its events relayed.
func (r *Relay) relay(ctx context.Context, c *websocket.Conn, h http.Header, msg []byte) error {
	var body map[string]json.RawMessage
	if err := json.Unmarshal(msg, &body); err != nil {
		return fmt.Errorf("bad message: %v", err)
	}
	if string(body["type"]) != `"response.create"` {
		return fmt.Errorf("unsupported event %s", body["type"])
	}
	delete(body, "type")
	body["stream"] = json.RawMessage("true")
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, upstreamTimeout)
	defer cancel()
	up, err := http.NewRequestWithContext(ctx, "POST", "http://"+r.cfg.Upstream()+"/v1/responses", bytes.NewReader(b))
	if err != nil {
		return err
	}
	up.Header.Set("Content-Type", "application/json")
	up.Header.Set("Accept", "text/event-stream")
	for _, f := range forwarded {
		if v := h.Get(f); v != "" {
			up.Header.Set(f, v)
		}
	}
	resp, err := http.DefaultClient.Do(up)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("upstream answered %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 2<<20)
	var merged []string // the deltas of a merge in progress
	var first []byte    // the first delta event of the merge
	flush := func() error {
		if len(merged) == 0 {
			return nil
		}
		var ev map[string]json.RawMessage
		json.Unmarshal(first, &ev)
		delete(ev, "pi_ts")
		ev["delta"], _ = json.Marshal(strings.Join(merged, ""))
		out, _ := json.Marshal(ev)
		merged, first = merged[:0], nil
		return c.Write(ctx, websocket.MessageText, out)
	}
	for sc.Scan() {
		line := sc.Bytes()
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimLeft(data, " ")
		if r.cfg.StripPiTs {
			data = piTs.ReplaceAll(data, nil)
		}
		if r.cfg.Merge > 1 && bytes.Contains(data, []byte(`"type":"response.output_text.delta"`)) {
			var ev struct {
				Delta string `json:"delta"`
			}
			if json.Unmarshal(data, &ev) == nil {
				if first == nil {
					first = append([]byte(nil), data...)
				}
				if merged = append(merged, ev.Delta); len(merged) == r.cfg.Merge {
					if err := flush(); err != nil {
						return err
					}
				}
				continue
			}
		}
		if err := flush(); err != nil {
			return err
		}
		if err := c.Write(ctx, websocket.MessageText, data); err != nil {
			return err
		}
	}
	if err := flush(); err != nil {
		return err
	}
	return sc.Err()
}
