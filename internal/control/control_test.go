package control

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/clocksync"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/testutil"
)

const testToken = "s3cret-token"

// serveControl serves h on 127.0.0.1:0 for the duration of the test and
// returns its base URL.
func serveControl(t *testing.T, h http.Handler) string {
	t.Helper()
	ln := testutil.Listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, h, t.Logf) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve = %v, want nil after cancel", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return within 10 s of its cancellation")
		}
	})
	return "http://" + ln.Addr().String()
}

// testRegistry holds request "a" (arrived at 100, its stream begun at 150
// with its think planned to end at 300, 2 heartbeats, 3 tokens, the second
// not written, finished) and request "b" (client gone at 900).
func testRegistry() *emission.Registry {
	reg := emission.New()
	a := reg.Start("a", 3)
	a.SetArrived(100)
	a.Begin(150, 300)
	a.AddHeartbeats(2)
	a.Set(0, 200)
	a.Set(2, 400)
	a.Finish()
	b := reg.Start("b", 1)
	b.SetArrived(500)
	b.Gone(900)
	return reg
}

// get sends a request to the control endpoint and returns its status,
// headers and body.
func get(t *testing.T, method, url, auth string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

func TestEndpoints(t *testing.T) {
	h, err := NewHandler(testRegistry(), testToken, "")
	if err != nil {
		t.Fatal(err)
	}
	base := serveControl(t, h)
	bearer := "Bearer " + testToken
	ids := strings.Repeat("id=x&", MaxIDs) + "id=y"
	tests := []struct {
		method, path, auth string
		status             int
		code               string // of an error answer
		body               string // of a 200 answer
	}{
		{"GET", "/v1/clock", "", 401, "unauthorized", ""},
		{"GET", "/v1/requests/a", "Bearer wrong", 401, "unauthorized", ""},
		{"GET", "/v1/requests/a", "Bearer " + testToken + "x", 401, "unauthorized", ""},
		{"GET", "/v1/requests/a", "bearer " + testToken, 401, "unauthorized", ""},
		{"GET", "/v1/requests/a", testToken, 401, "unauthorized", ""},
		{"GET", "/nothing", "", 401, "unauthorized", ""},
		{"GET", "/v1/requests/a", bearer, 200, "", `{"id":"a","arrived_ns":100,"started_ns":150,"think_end_ns":300,"gone_ns":0,"heartbeats":2,"finished":true,"tokens":3,"emitted_ns":[200,0,400]}` + "\n"},
		{"GET", "/v1/requests/b", bearer, 200, "", `{"id":"b","arrived_ns":500,"started_ns":0,"think_end_ns":0,"gone_ns":900,"heartbeats":0,"finished":true,"tokens":1,"emitted_ns":[0]}` + "\n"},
		{"GET", "/v1/requests/zz", bearer, 404, "unknown_id", ""},
		{"GET", "/v1/requests/a%20b", bearer, 400, "invalid_id", ""},
		{"GET", "/v1/requests/" + strings.Repeat("i", 65), bearer, 400, "invalid_id", ""},
		{"GET", "/v1/requests/", bearer, 400, "invalid_id", ""},
		{"GET", "/v1/requests?id=a&id=zz&id=b", bearer, 200, "",
			`{"requests":[{"id":"a","arrived_ns":100,"started_ns":150,"think_end_ns":300,"gone_ns":0,"heartbeats":2,"finished":true,"tokens":3},{"id":"b","arrived_ns":500,"started_ns":0,"think_end_ns":0,"gone_ns":900,"heartbeats":0,"finished":true,"tokens":1}],"unknown":["zz"]}` + "\n"},
		{"GET", "/v1/requests?id=a&emitted=1", bearer, 200, "",
			`{"requests":[{"id":"a","arrived_ns":100,"started_ns":150,"think_end_ns":300,"gone_ns":0,"heartbeats":2,"finished":true,"tokens":3,"emitted_ns":[200,0,400]}],"unknown":[]}` + "\n"},
		{"GET", "/v1/requests?id=zz&emitted=0", bearer, 200, "", `{"requests":[],"unknown":["zz"]}` + "\n"},
		{"GET", "/v1/requests", bearer, 400, "invalid_query", ""},
		{"GET", "/v1/requests?id=", bearer, 400, "invalid_id", ""},
		{"GET", "/v1/requests?id=a&emitted=yes", bearer, 400, "invalid_query", ""},
		{"GET", "/v1/requests?id=a&emitted=1&emitted=1", bearer, 400, "invalid_query", ""},
		{"GET", "/v1/requests?id=a&token=x", bearer, 400, "invalid_query", ""},
		{"GET", "/v1/requests?id=%zz", bearer, 400, "invalid_query", ""},
		{"GET", "/v1/requests?" + ids, bearer, 400, "too_many_ids", ""},
		{"POST", "/v1/clock", bearer, 405, "method_not_allowed", ""},
		{"DELETE", "/v1/requests/a", bearer, 405, "method_not_allowed", ""},
		{"GET", "/v1/chat/completions", bearer, 404, "unknown_url", ""},
	}
	for _, tt := range tests {
		status, hdr, body := get(t, tt.method, base+tt.path, tt.auth)
		what := tt.method + " " + tt.path[:min(len(tt.path), 60)] + " with " + strconv.Quote(tt.auth)
		if status != tt.status {
			t.Errorf("%s: status %d, want %d (body %s)", what, status, tt.status, body)
			continue
		}
		if tt.status == 200 {
			if body != tt.body {
				t.Errorf("%s: body\n%s\nwant\n%s", what, body, tt.body)
			}
			continue
		}
		var e struct {
			Error apiError `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Code != tt.code || e.Error.Message == "" {
			t.Errorf("%s: error body %s, want an OpenAI-style error of code %s", what, body, tt.code)
		}
		if tt.status == 401 && hdr.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", what)
		}
		if tt.status == 405 && hdr.Get("Allow") != "GET" {
			t.Errorf("%s: 405 with Allow %q, want GET", what, hdr.Get("Allow"))
		}
	}

	before := clock.Real.Now()
	status, _, body := get(t, "GET", base+"/v1/clock", bearer)
	after := clock.Real.Now()
	var c struct {
		Now int64 `json:"now_ns"`
	}
	if err := json.Unmarshal([]byte(body), &c); status != 200 || err != nil || c.Now < before || c.Now > after {
		t.Errorf("GET /v1/clock: %d %s, want now_ns between %d and %d", status, body, before, after)
	}
	if _, err := NewHandler(emission.New(), "", ""); err == nil {
		t.Error("NewHandler accepted an empty token")
	}
}

func TestNewClient(t *testing.T) {
	for _, tt := range []struct {
		url, token string
		ok         bool
	}{
		{"http://127.0.0.1:8091", "t", true},
		{"http://host:8091/prefix/", "t", true},
		{"http://[::1]:8091", "t", true},
		{"http://127.0.0.1:8091", "", false},
		{"https://127.0.0.1:8091", "t", false},
		{"127.0.0.1:8091", "t", false},
		{"http://127.0.0.1", "t", false},
		{"http://u:p@127.0.0.1:1", "t", false},
		{"http://127.0.0.1:1/?q=1", "t", false},
		{"http://%zz", "t", false},
	} {
		c, err := NewClient(tt.url, tt.token)
		if (err == nil) != tt.ok {
			t.Errorf("NewClient(%q, %q) error = %v, want ok %v", tt.url, tt.token, err, tt.ok)
		}
		if c != nil {
			c.Close()
		}
	}
}

// TestClientAndSync reads a handler whose clock runs ahead by a known
// offset: the Syncer's estimate is within its bound of it, the records read
// back are the registry's, and a wrong token is ErrUnauthorized.
func TestClientAndSync(t *testing.T) {
	const offset = 3_456_789_012 // ns: the server's clock is 3.46 s ahead
	h, _ := NewHandler(testRegistry(), testToken, "")
	h.SetClock(clock.Offset{Ns: offset})
	base := serveControl(t, h)
	c, err := NewClient(base, testToken)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := NewSyncer(c, 0)
	if _, ok := s.Current(); ok {
		t.Error("a new Syncer has an estimate")
	}
	ctx := context.Background()
	for range 2 {
		e, err := s.Sync(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d := e.Offset - offset; d > e.Bound || -d > e.Bound || e.Samples < 1 || e.Samples+e.Dropped != DefaultBurst {
			t.Errorf("estimate %d ± %d (%d samples, %d dropped), want %d within the bound, %d exchanges", e.Offset, e.Bound, e.Samples, e.Dropped, offset, DefaultBurst)
		}
	}
	if sum, ok := s.Summary(); !ok || sum.Estimates != 2 || sum.Bound < 0 {
		t.Errorf("Summary = %+v, %v; want 2 estimates", sum, ok)
	}

	recs, err := c.Records(ctx, []string{"a", "zz"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if a := recs["a"]; len(recs) != 1 || a == nil || a.Arrived != 100 || a.EmittedAt(0) != 200 || a.EmittedAt(1) != 0 || a.EmittedAt(2) != 400 || a.EmittedAt(3) != 0 {
		t.Errorf("Records(a, zz) = %+v, want a's record only", recs)
	}
	if recs, err := c.Records(ctx, nil, true); recs != nil || err != nil {
		t.Errorf("Records(no ids) = %v, %v; want nothing", recs, err)
	}
	if _, err := c.Records(ctx, make([]string, MaxIDs+1), false); err == nil {
		t.Error("Records accepted more than MaxIDs ids")
	}

	bad, _ := NewClient(base, "wrong")
	defer bad.Close()
	if _, _, err := bad.Exchange(ctx); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("Exchange with a wrong token: %v, want ErrUnauthorized", err)
	}
	if _, err := NewSyncer(bad, 2).Sync(ctx); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("Sync with a wrong token: %v, want ErrUnauthorized", err)
	}
	if _, err := bad.Records(ctx, []string{"a"}, false); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("Records with a wrong token: %v, want ErrUnauthorized", err)
	}
}

func TestComplete(t *testing.T) {
	est := clocksync.Estimate{Offset: 1000, Bound: 10}
	rec := func() *result.Request {
		r := &result.Request{ID: "a", ByPiTs: 1}
		for k := range int32(3) { // tokens 0, 1, 2, one per Read
			r.AppendTokens(1, k, k, 4500+100*int64(k))
		}
		r.Tokens[0].Emitted = 5000
		return r
	}
	// Without a server record: only the pi_ts are converted.
	r := rec()
	Complete(r, nil, est)
	if r.Tokens[0].Emitted != 4000 || r.Tokens[1].Emitted != 0 || r.ServerArrived != 0 || r.ByContent != 0 || r.ServerRecord {
		t.Errorf("Complete without a record: %+v", r)
	}
	// With one: the tokens without pi_ts get the record's times, converted;
	// a token the record lacks stays unmeasured.
	r = rec()
	Complete(r, &Record{ID: "a", Arrived: 2000, Started: 2500, ThinkEnd: 3000, Heartbeats: 4, Emitted: []int64{9999, 5100}}, est)
	want := []int64{4000, 4100, 0}
	for i, w := range want {
		if r.Tokens[i].Emitted != w {
			t.Errorf("token %d emitted at %d, want %d", i, r.Tokens[i].Emitted, w)
		}
	}
	if r.ServerArrived != 1000 || r.ByContent != 1 || r.ByPiTs != 1 {
		t.Errorf("Complete: arrived %d, by content %d, by pi_ts %d; want 1000, 1, 1", r.ServerArrived, r.ByContent, r.ByPiTs)
	}
	if !r.ServerRecord || r.ServerStart != 1500 || r.ServerThinkEnd != 2000 || r.ServerHeartbeats != 4 {
		t.Errorf("Complete: record %v, stream start %d, think end %d, heartbeats %d; want true, 1500, 2000, 4",
			r.ServerRecord, r.ServerStart, r.ServerThinkEnd, r.ServerHeartbeats)
	}
	// Unknown times stay unknown.
	r = rec()
	Complete(r, &Record{ID: "a"}, est)
	if r.ServerArrived != 0 || r.ServerStart != 0 || r.ServerThinkEnd != 0 {
		t.Errorf("unknown times became arrived %d, stream start %d, think end %d", r.ServerArrived, r.ServerStart, r.ServerThinkEnd)
	}
}

// TestResolver completes records through a real control endpoint, in the
// order they were added, and counts a failed fetch when the endpoint is
// gone.
func TestResolver(t *testing.T) {
	reg := testRegistry()
	h, _ := NewHandler(reg, testToken, "")
	base := serveControl(t, h)
	c, _ := NewClient(base, testToken)
	defer c.Close()
	s := NewSyncer(c, 2)
	if _, err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	est, _ := s.Current()
	var got []*result.Request
	r := NewResolver([]*Replica{{Syncer: s}}, func(rec *result.Request) { got = append(got, rec) })
	const n = 300 // more than one fetch's ids
	for i := range n {
		id := "zz"
		switch i % 3 {
		case 0:
			id = "a"
		case 1:
			id = "b"
		}
		rec := &result.Request{Index: i, ID: id}
		rec.AppendTokens(1, 2, 0, 1) // token 2 of the stream
		r.Add(rec)
		rec.TokenRuns[0].Index = 99 // Add kept a copy
		rec.Tokens[0].Emitted = 99
	}
	if failures := r.Close(); failures != nil {
		t.Fatalf("Close = %+v, want no failure", failures)
	}
	if len(got) != n {
		t.Fatalf("%d records out, want %d", len(got), n)
	}
	for i, rec := range got {
		var wantArrived, wantEmitted int64
		switch i % 3 {
		case 0:
			wantArrived, wantEmitted = est.ToClient(100), est.ToClient(400)
		case 1:
			wantArrived = est.ToClient(500)
		}
		if rec.Index != i || rec.ServerArrived != wantArrived || rec.Tokens[0].Emitted != wantEmitted {
			t.Fatalf("record %d out as %d: arrived %d, token emitted %d; want arrived %d, emitted %d",
				i, rec.Index, rec.ServerArrived, rec.Tokens[0].Emitted, wantArrived, wantEmitted)
		}
	}

	// A server gone: the records still go out, their pi_ts converted; after
	// maxFailedFetches failures in a row no more fetches are tried.
	dead, _ := NewClient("http://127.0.0.1:1", testToken)
	defer dead.Close()
	got = nil
	ds := NewSyncer(dead, 2)
	ds.tr.Add(est) // the estimate the replica had before it went away
	r = NewResolver([]*Replica{{Syncer: ds}}, func(rec *result.Request) { got = append(got, rec) })
	for range maxFailedFetches + 3 {
		r.Add(&result.Request{ID: "a", Tokens: []result.Token{{Emitted: est.Offset + 50}}})
		r.Flush() // one fetch each
	}
	if f := r.Close(); len(f) != 1 || f[0].Count != maxFailedFetches || f[0].First == nil || f[0].Replica.Syncer != ds {
		t.Errorf("fetches from a closed port: Close = %+v; want %d failures of the one replica, then none tried", f, maxFailedFetches)
	}
	if len(got) != maxFailedFetches+3 || got[0].Tokens[0].Emitted != 50 || got[len(got)-1].Tokens[0].Emitted != 50 {
		t.Errorf("after failed fetches: %d records out, want %d with their pi_ts converted", len(got), maxFailedFetches+3)
	}
}

// TestSyncerRun: a running Syncer estimates again every interval until
// its context ends, and reports a failed burst without losing the
// estimates it has.
func TestSyncerRun(t *testing.T) {
	h, _ := NewHandler(testRegistry(), testToken, "")
	base := serveControl(t, h)
	c, _ := NewClient(base, testToken)
	defer c.Close()
	s := NewSyncer(c, 2)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx, time.Millisecond, func(err error) { t.Errorf("a burst failed: %v", err) })
	}()
	testutil.Await(t, "3 estimates", func() bool {
		sum, ok := s.Summary()
		return ok && sum.Estimates >= 3
	})
	cancel()
	<-done

	bad, _ := NewClient(base, "wrong")
	defer bad.Close()
	s = NewSyncer(bad, 2)
	ctx, cancel = context.WithCancel(context.Background())
	errs := make(chan error, 1)
	done = make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx, time.Millisecond, func(err error) {
			select {
			case errs <- err:
			default:
			}
		})
	}()
	select {
	case err := <-errs:
		if !errors.Is(err, ErrUnauthorized) {
			t.Errorf("a failed burst reported %v, want ErrUnauthorized", err)
		}
	case <-time.After(time.Minute):
		t.Error("no failed burst reported within a minute")
	}
	cancel()
	<-done
	if _, ok := s.Current(); ok {
		t.Error("failed bursts left an estimate")
	}
}
