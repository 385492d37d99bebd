package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/control"
	"github.com/sse-latency/sse-latency/internal/control/controltest"
	"github.com/sse-latency/sse-latency/internal/emission"
)

// hostileToken guards the control listener of TestHostile.
const hostileToken = "hostile-control-token"

// controlFixture is a control listener on the hostile servers' registry.
type controlFixture struct {
	addr   string
	panics atomic.Int64 // handler panics net/http recovered and logged
}

// startControl serves the control endpoints of reg on 127.0.0.1:0 for the
// duration of the test, counting the panics net/http logs.
func startControl(t *testing.T, reg *emission.Registry) *controlFixture {
	t.Helper()
	f := &controlFixture{}
	url := controltest.Serve(t, reg, hostileToken, func(format string, args ...any) {
		if line := fmt.Sprintf(format, args...); strings.Contains(line, "panic") {
			f.panics.Add(1)
			t.Log(line)
		}
	})
	f.addr = strings.TrimPrefix(url, "http://")
	return f
}

// normalUse checks that the control endpoint answers a client: a clock
// exchange and a record read (an unknown id is not an error there).
func (f *controlFixture) normalUse(t *testing.T) {
	t.Helper()
	c, err := control.NewClient("http://"+f.addr, hostileToken)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, _, err := c.Exchange(ctx); err != nil {
		t.Errorf("control clock exchange: %v", err)
	}
	if _, err := c.Records(ctx, []string{"hostile-1", "nobody"}, true); err != nil {
		t.Errorf("control records: %v", err)
	}
}

// controlCases are the hostile requests to the control listener: valid
// ones cut at every length, random mutations of them, bad tokens, ids and
// queries, oversized heads, and random bytes.
func controlCases(rng *rand.Rand) []hostileCase {
	var cases []hostileCase
	add := func(name, data string, hold bool) {
		cases = append(cases, hostileCase{name: "control: " + name, to: toControl, data: []byte(data), hold: hold})
	}
	get := func(target string, header ...string) string {
		return "GET " + target + " HTTP/1.1\r\nHost: x\r\n" + strings.Join(append(header, ""), "\r\n") + "Connection: close\r\n\r\n"
	}
	auth := "Authorization: Bearer " + hostileToken
	valid := []string{
		get("/v1/clock", auth),
		get("/v1/requests/hostile-1", auth),
		get("/v1/requests?id=hostile-1&id=big&emitted=1", auth),
	}
	for _, v := range valid {
		for i := range len(v) {
			add(fmt.Sprintf("%q truncated to %d bytes", v[:20], i), v[:i], i%7 == 0)
		}
		for i := range 150 {
			add(fmt.Sprintf("mutated %q %d", v[:20], i), mutate(rng, v), i%25 == 0)
		}
	}
	ids := strings.Repeat("id=a&", control.MaxIDs+1)
	for _, tc := range []struct{ name, data string }{
		{"no token", get("/v1/clock")},
		{"wrong token", get("/v1/clock", "Authorization: Bearer nope")},
		{"empty bearer", get("/v1/clock", "Authorization: Bearer ")},
		{"basic auth", get("/v1/clock", "Authorization: Basic aGk6aGk=")},
		{"two tokens", get("/v1/clock", auth, "Authorization: Bearer nope")},
		{"token of 60 KB", get("/v1/clock", "Authorization: Bearer "+strings.Repeat("t", 60_000))},
		{"token with control bytes", get("/v1/clock", "Authorization: Bearer a\x01b")},
		{"70 KB head", get("/v1/clock", auth, "X-Big: "+strings.Repeat("b", 70_000))},
		{"70 KB query", get("/v1/requests?"+strings.Repeat("id=a&", 14_000), auth)},
		{"too many ids", get("/v1/requests?"+ids, auth)},
		{"bad escape", get("/v1/requests?id=%zz", auth)},
		{"bad escape in the path", get("/v1/requests/%zz", auth)},
		{"id with a slash", get("/v1/requests/a%2Fb", auth)},
		{"dot-dot", get("/v1/requests/../clock", auth)},
		{"NUL in the id", get("/v1/requests/a%00b", auth)},
		{"UTF-8 id", get("/v1/requests/%C3%A9", auth)},
		{"emitted twice", get("/v1/requests?id=a&emitted=1&emitted=0", auth)},
		{"unknown parameter", get("/v1/requests?id=a&x=1", auth)},
		{"empty id", get("/v1/requests?id=", auth)},
		{"POST with a body", "POST /v1/clock HTTP/1.1\r\nHost: x\r\n" + auth + "\r\nContent-Length: 5\r\n\r\nhello"},
		{"body of 1 MB declared", "GET /v1/clock HTTP/1.1\r\nHost: x\r\n" + auth + "\r\nContent-Length: 1000000\r\n\r\n{"},
		{"chunked garbage", "GET /v1/clock HTTP/1.1\r\nHost: x\r\n" + auth + "\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"},
		{"CONNECT", "CONNECT x:1 HTTP/1.1\r\nHost: x:1\r\n" + auth + "\r\n\r\n"},
		{"OPTIONS *", "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"absolute URI", get("http://x/v1/clock", auth)},
		{"HTTP/1.0", "GET /v1/clock HTTP/1.0\r\n" + auth + "\r\n\r\n"},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"},
		{"100 pipelined", strings.Repeat("GET /v1/clock HTTP/1.1\r\nHost: x\r\n"+auth+"\r\n\r\n", 100)},
		{"model API path", "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" + auth + "\r\nContent-Length: 2\r\n\r\n{}"},
	} {
		add(tc.name, tc.data, false)
		add(tc.name+", held", tc.data, true)
	}
	for i := range 100 {
		b := make([]byte, 1+rng.IntN(512))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		add(fmt.Sprintf("random bytes %d", i), string(b), i%20 == 0)
	}
	return cases
}
