package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/summary"
)

// transportRecords are the records of a keep-alive batch: 2 warm-up
// requests, then 8 counted ones on 3 connections — two reuse the warm-up
// connections, one reuse failure sends a request on a new TLS connection,
// one leaves its connection poisoned, one fails to connect — with open-loop
// schedules when open is set.
func transportRecords(tag, proto string, open bool) []*result.Request {
	const ms = 1_000_000
	var rs []*result.Request
	start := int64(base)
	add := func(r result.Request) {
		r.Batch, r.Index = tag, len(rs)
		r.Start = start + int64(len(rs))*100*ms
		if open {
			r.Scheduled = r.Start - int64(len(rs)%3)*20_000 // 0, 20 or 40 µs late
		}
		if r.ConnID > 0 && !r.Reused {
			r.Connected = r.Start + 52_000
			if r.TLSDone != 0 {
				r.TLSDone = r.Connected + 1_200_000
			}
		}
		if r.Failure.Kind != result.Connect {
			r.Sent = max(r.Start, r.Connected, r.TLSDone) + 11_000
			r.HeadAt = r.Sent + 201_000
			r.Tokens = []result.Token{{Emitted: r.HeadAt, Arrived: r.HeadAt + 30_000}, {Emitted: r.HeadAt + 5*ms, Arrived: r.HeadAt + 5*ms + 30_000}}
			r.End = r.Tokens[1].Arrived
		} else {
			r.End = r.Start + 52_000
		}
		rs = append(rs, &r)
	}
	add(result.Request{Warmup: true, ConnID: 1, Proto: proto})
	add(result.Request{Warmup: true, ConnID: 2, Proto: proto})
	add(result.Request{ConnID: 1, Reused: true, Proto: proto})
	add(result.Request{ConnID: 2, Reused: true, Proto: proto})
	add(result.Request{ConnID: 1, Reused: true, Proto: proto})
	add(result.Request{ConnID: 3, ReuseFailed: true, TLSDone: 1, Proto: proto})
	add(result.Request{ConnID: 3, Reused: true, Proto: proto, Poisoned: true})
	add(result.Request{ConnID: 4, Proto: proto})
	add(result.Request{Failure: result.Failure{Kind: result.Connect, Detail: "Connection refused"}})
	add(result.Request{ConnID: 4, Reused: true, Proto: proto})
	return rs
}

func transportBatch(tag, proto string, open bool) *stats.Batch {
	b := stats.NewBatch()
	for _, r := range transportRecords(tag, proto, open) {
		b.Add(r)
	}
	return b
}

func init() {
	streamCases["transport"] = struct{ loop, gw *stats.Batch }{
		transportBatch("loop", "HTTP/1.1", false),
		transportBatch("gw", "h2", true),
	}
}

// TestTransportLines pins the connections, phases, start-lateness and
// warm-up lines.
func TestTransportLines(t *testing.T) {
	c := streamCases["transport"]
	var b bytes.Buffer
	if err := WriteStream(&b, streamRun(c)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"connections    loopback 2 opened (+2 by warm-up), 1.8 requests each, 1 reuse failure, 1 poisoned; HTTP/1.1 7\n",
		"phases         loopback p50/p99 ms: connect 0.052/0.052, tls 1.200/1.200, written 0.011/0.011, head 0.201/0.201, first-token 0.030/0.030\n",
		"warm-up        loopback 2 requests, left out of the statistics\n",
		"connections    gateway  2 opened (+2 by warm-up), 1.8 requests each, 1 reuse failure, 1 poisoned; h2 7\n",
		"start-lateness gateway  n=8  mean 0.020  p50 0.020  p99 0.040  max 0.040 ms\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("WriteStream lacks\n%q\nin\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "start-lateness loopback") {
		t.Errorf("a closed-loop batch has a start-lateness line:\n%s", b.String())
	}
	// A batch of records without connection facts has none of these lines.
	b.Reset()
	if err := WriteStream(&b, runOf(nil, streamCases["merging"].gw)); err != nil {
		t.Fatal(err)
	}
	if strings.Count(b.String(), "\n") != 2 {
		t.Errorf("a batch without connection facts:\n%s\nwant the title and one stream line", b.String())
	}
}

func TestPhasesLine(t *testing.T) {
	const ms = 1_000_000
	tokens := []result.Token{{Arrived: 1000*ms + 400_000}}
	tests := []struct {
		name string
		r    result.Request
		want string
	}{
		{"new TLS connection", result.Request{Batch: "gw", Index: 3, Proto: "h2", ConnID: 2, Start: 1000 * ms, Connected: 1000*ms + 50_000,
			TLSDone: 1000*ms + 120_000, Sent: 1000*ms + 132_000, HeadAt: 1000*ms + 342_000, Tokens: tokens},
			"gw   3: h2 conn 2 (new) connect 0.050 tls 0.070 written 0.012 head 0.210 first-token 0.058 ms"},
		{"reused", result.Request{Batch: "gw", Index: 3, Proto: "HTTP/1.1", ConnID: 2, Reused: true, Start: 1000 * ms,
			Sent: 1000*ms + 12_000, HeadAt: 1000*ms + 222_000, Tokens: tokens},
			"gw   3: HTTP/1.1 conn 2 (reused) connect 0.000 tls 0.000 written 0.012 head 0.210 first-token 0.178 ms"},
		{"plain TCP after a reuse failure, warm-up, poisoned", result.Request{Batch: "loop", Index: 12, Proto: "HTTP/1.1", ConnID: 7,
			ReuseFailed: true, Warmup: true, Poisoned: true, Start: 1000 * ms, Connected: 1000*ms + 80_000, Sent: 1000*ms + 90_000},
			"loop  12: HTTP/1.1 conn 7 (new, after a reuse failure) connect 0.080 tls 0.000 written 0.010 head - first-token - ms; connection poisoned, not kept; warm-up"},
		{"TLS handshake failed", result.Request{Batch: "gw", Index: 0, ConnID: 1, Start: 1000 * ms, Connected: 1000*ms + 50_000},
			"gw   0: - conn 1 (new) connect 0.050 tls - written - head - first-token - ms"},
		{"no connection", result.Request{Batch: "gw", Index: 1, Start: 1000 * ms},
			"gw   1: no connection connect - tls - written - head - first-token - ms"},
	}
	for _, tt := range tests {
		if got := PhasesLine(&tt.r); got != tt.want {
			t.Errorf("PhasesLine(%s) =\n%q\nwant\n%q", tt.name, got, tt.want)
		}
	}
}

// transportDoc is the document of a run whose batches carry connection
// facts.
func transportDoc() (*Document, *summary.Run) {
	ri := RunInfo{Config: json.RawMessage(testConfig), Start: runStart, End: runStart.Add(time.Second), EndReason: EndDone}
	run := runOf(transportBatch("loop", "HTTP/1.1", false), transportBatch("gw", "h2", true))
	run.Loop().Target, run.Gateway().Target = "127.0.0.1:8090", "127.0.0.1:8443"
	return fixEnv(NewDocument(ri, run)), run
}

// TestTransportJSON: the new fields are written, validate against the
// schema, read back to the same text and JSON, and merge by summing.
func TestTransportJSON(t *testing.T) {
	d, run := transportDoc()
	gw := d.Batches[1]
	if gw.Warmup != 2 || gw.Connections == nil || gw.Phases == nil || gw.StartLateness == nil {
		t.Fatalf("gateway batch: warmup %d, connections %v, phases %v, start lateness %v; want 2 and all set",
			gw.Warmup, gw.Connections, gw.Phases, gw.StartLateness)
	}
	wantConns := summary.Connections{Opened: 2, OpenedByWarmup: 2, Requests: 7, RequestsPerConnection: 1.75, ReuseFailures: 1, Poisoned: 1,
		Protocols: map[string]int{"h2": 7}}
	if c := *gw.Connections; c.Opened != wantConns.Opened || c.OpenedByWarmup != 2 || c.Requests != 7 || c.RequestsPerConnection != 1.75 ||
		c.ReuseFailures != 1 || c.Poisoned != 1 || len(c.Protocols) != 1 || c.Protocols["h2"] != 7 {
		t.Errorf("gateway connections %+v, want %+v", c, wantConns)
	}
	if gw.Phases.TLS.N != 1 || gw.Phases.Connect.N != 2 || gw.Phases.FirstToken.N != 7 || gw.StartLateness.N != 8 || d.Batches[0].StartLateness != nil {
		t.Errorf("phase samples tls %d, connect %d, first token %d, start lateness %d (loopback %v); want 1, 2, 7, 8 (nil)",
			gw.Phases.TLS.N, gw.Phases.Connect.N, gw.Phases.FirstToken.N, gw.StartLateness.N, d.Batches[0].StartLateness)
	}

	js := marshal(t, d)
	sch := schema(t)
	if err := validate(sch, js); err != nil {
		t.Errorf("the document with connections does not validate: %v", err)
	}
	back, err := ReadJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatalf("ReadJSON: %v", err)
	}
	var got, want bytes.Buffer
	if err := WriteText(&got, &back.Run, false); err != nil {
		t.Fatal(err)
	}
	if err := WriteText(&want, run, false); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("WriteText after the round trip =\n%s\nwant\n%s", got.Bytes(), want.Bytes())
	}
	if again := marshal(t, back); !bytes.Equal(again, js) {
		t.Errorf("WriteJSON(ReadJSON(js)) differs from js")
	}

	m, err := Merge([]*Document{back, back})
	if err != nil {
		t.Fatal(err)
	}
	mc := m.Batches[1].Connections
	if mc == nil || mc.Opened != 4 || mc.OpenedByWarmup != 4 || mc.Requests != 14 || mc.RequestsPerConnection != 1.75 ||
		mc.Protocols["h2"] != 14 || m.Batches[1].Warmup != 4 || m.Batches[1].Phases.Head.N != 14 || m.Batches[1].StartLateness.N != 16 {
		t.Errorf("merged gateway: connections %+v, warmup %d; want the counts doubled", mc, m.Batches[1].Warmup)
	}
	if err := validate(sch, marshal(t, m)); err != nil {
		t.Errorf("the merged document does not validate: %v", err)
	}

	bad := []struct {
		name   string
		mutate func(m map[string]any)
		want   string // ReadJSON's error; "" : the schema alone refuses it
		schema bool
	}{
		{"negative opened", func(m map[string]any) { at(m, "batches", 1, "connections")["opened"] = -1 }, "connections: negative counter", true},
		{"connections field", func(m map[string]any) { at(m, "batches", 1, "connections")["extra"] = 1 }, "", true},
		{"protocol count a string", func(m map[string]any) { at(m, "batches", 1, "connections", "protocols")["h2"] = "7" },
			"a JSON string where an integer is wanted", true},
		{"more requests on connections than requests", func(m map[string]any) { at(m, "batches", 1, "connections")["requests"] = 99 },
			"connections.requests is 99, more than the batch's 8 requests", false},
		{"phase missing", func(m map[string]any) { delete(at(m, "batches", 1, "phases"), "tls") },
			"phases.tls: histogram: invalid metric snapshot", true},
		{"phase histogram", func(m map[string]any) { at(m, "batches", 1, "phases", "head")["n"] = 3 }, "phases.head: n is 3", false},
		{"start lateness histogram", func(m map[string]any) { at(m, "batches", 1, "start_lateness")["n"] = 3 }, "start_lateness: n is 3", false},
		{"negative warmup", func(m map[string]any) { at(m, "batches", 1)["warmup"] = -2 }, "warmup is -2", true},
	}
	for _, tt := range bad {
		mjs := mutate(t, js, tt.mutate)
		if tt.want != "" {
			if _, err := ReadJSON(bytes.NewReader(mjs)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadJSON(%s) = %v, want an error containing %q", tt.name, err, tt.want)
			}
		}
		if err := validate(sch, mjs); (err != nil) != tt.schema {
			t.Errorf("schema on %s: %v, want refused %v", tt.name, err, tt.schema)
		}
	}
}

// TestOldDocumentReads: a document without the transport fields (as written
// before them) still reads, and prints no transport line.
func TestOldDocumentReads(t *testing.T) {
	d, _ := transportDoc()
	js := mutate(t, marshal(t, d), func(m map[string]any) {
		for _, b := range m["batches"].([]any) {
			for _, k := range []string{"warmup", "connections", "phases", "start_lateness"} {
				delete(b.(map[string]any), k)
			}
		}
	})
	back, err := ReadJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatalf("ReadJSON(without the transport fields): %v", err)
	}
	var b bytes.Buffer
	if err := WriteText(&b, &back.Run, false); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"connections ", "phases ", "start-lateness ", "warm-up "} {
		if strings.Contains(b.String(), l) {
			t.Errorf("a document without transport fields prints a %q line:\n%s", l, b.String())
		}
	}
}
