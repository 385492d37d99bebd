package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/clocksync"
)

// MaxAnswerBytes bounds what the client reads of one answer.
const MaxAnswerBytes = 1 << 30

// Record is the server's record of one request (see the package comment),
// its times on the server's clock.
type Record struct {
	ID         string  `json:"id"`
	Arrived    int64   `json:"arrived_ns"`
	Started    int64   `json:"started_ns"`
	ThinkEnd   int64   `json:"think_end_ns"`
	Gone       int64   `json:"gone_ns"`
	Heartbeats int     `json:"heartbeats"`
	Finished   bool    `json:"finished"`
	Tokens     int     `json:"tokens"`
	Emitted    []int64 `json:"emitted_ns"` // nil unless asked for
}

// EmittedAt returns when token k was written (server clock), 0 if unknown.
func (r *Record) EmittedAt(k int) int64 {
	if r == nil || k < 0 || k >= len(r.Emitted) {
		return 0
	}
	return r.Emitted[k]
}

// Client reads a server's control endpoints. It is safe for concurrent
// use.
type Client struct {
	base  *url.URL // scheme and host of the control endpoint, and its path prefix
	token string
	hc    *http.Client
	clk   clock.Clock // this process's clock (clock.Real unless SetClock)
}

// SetClock makes c time its exchanges on clk (nil: clock.Real): this
// process's clock. Call it before the first Exchange.
func (c *Client) SetClock(clk clock.Clock) { c.clk = clock.Or(clk) }

// ErrUnauthorized is the error of a call the server refused for its token.
var ErrUnauthorized = errors.New("the server refused the control token (401): give the server's --control-token")

// NewClient returns the client of the control endpoint at rawURL
// (http://host:port, a path prefix allowed), authenticated by token.
func NewClient(rawURL, token string) (*Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	switch {
	case u.Scheme != "http":
		return nil, fmt.Errorf("%q: want http://host:port (the server's --control address)", rawURL)
	case u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("%q: want http://host:port, without user, query or fragment", rawURL)
	case token == "":
		return nil, errors.New("no token: give the server's --control-token")
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return nil, fmt.Errorf("%q: %v", rawURL, err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	tr := &http.Transport{
		Proxy:               nil, // the control endpoint is reached directly, never through a proxy
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	return &Client{base: u, token: token, hc: &http.Client{Transport: tr}, clk: clock.Real}, nil
}

// Close closes the client's idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// String is the endpoint's URL.
func (c *Client) String() string { return c.base.String() }

// Exchange reads the server's clock once and returns the exchange, timed
// on this process's clock, and the instance id the server answered with
// ("" if it has none).
func (c *Client) Exchange(ctx context.Context) (clocksync.Sample, string, error) {
	req, err := c.newRequest(ctx, ClockPath, "")
	if err != nil {
		return clocksync.Sample{}, "", err
	}
	sent := c.clk.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		return clocksync.Sample{}, "", err
	}
	defer resp.Body.Close()
	var v struct {
		Now      *int64 `json:"now_ns"`
		Instance string `json:"instance"`
	}
	err = decode(resp, &v)
	received := c.clk.Now()
	switch {
	case err != nil:
		return clocksync.Sample{}, "", err
	case v.Now == nil:
		return clocksync.Sample{}, "", errors.New("clock answer without now_ns")
	case v.Instance != "" && !api.ValidID(v.Instance):
		return clocksync.Sample{}, "", fmt.Errorf("clock answer with instance %.80q: not an instance id", v.Instance)
	}
	return clocksync.Sample{Sent: sent, Server: *v.Now, Received: received}, v.Instance, nil
}

// Records reads the records of ids (at most MaxIDs), with their emission
// times when emitted. Ids the server has no record of are absent from the
// map.
func (c *Client) Records(ctx context.Context, ids []string, emitted bool) (map[string]*Record, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if len(ids) > MaxIDs {
		return nil, fmt.Errorf("%d ids: at most %d per call", len(ids), MaxIDs)
	}
	q := url.Values{"id": ids}
	if emitted {
		q.Set("emitted", "1")
	}
	req, err := c.newRequest(ctx, RequestsPath, q.Encode())
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var v struct {
		Requests []*Record `json:"requests"`
	}
	if err := decode(resp, &v); err != nil {
		return nil, err
	}
	out := make(map[string]*Record, len(v.Requests))
	for _, r := range v.Requests {
		if r != nil {
			out[r.ID] = r
		}
	}
	return out, nil
}

func (c *Client) newRequest(ctx context.Context, path, rawQuery string) (*http.Request, error) {
	u := *c.base
	u.Path += path
	u.RawQuery = rawQuery
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	return req, nil
}

// decode reads a 200 answer's JSON into v; another status becomes an
// error with the server's message.
func decode(resp *http.Response, v any) error {
	body := io.LimitReader(resp.Body, MaxAnswerBytes)
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error apiError `json:"error"`
		}
		b, _ := io.ReadAll(io.LimitReader(body, 4<<10))
		if resp.StatusCode == http.StatusUnauthorized {
			return ErrUnauthorized
		}
		if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
			return fmt.Errorf("%s: %s", resp.Status, e.Error.Message)
		}
		return fmt.Errorf("%s: %s", resp.Status, strconv.Quote(string(b[:min(len(b), 200)])))
	}
	if err := json.NewDecoder(body).Decode(v); err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	return nil
}
