package rundoc

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/summary/summarytest"
)

// transportDoc is the document of a run whose batches carry connection
// facts (summarytest.TransportRecords).
func transportDoc() (*Document, *summary.Run) {
	ri := RunInfo{Config: testConfig, Start: runStart, End: runStart.Add(time.Second), EndReason: EndDone}
	run := runOf(summarytest.Batch(summarytest.TransportRecords("loop", "HTTP/1.1", false)...),
		summarytest.Batch(summarytest.TransportRecords("gw", "h2", true)...))
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
	if !reflect.DeepEqual(back.Run, *run) {
		t.Errorf("the summary read back differs from the run's:\n%+v\nwant\n%+v", back.Run, *run)
	}
	if again := marshal(t, back); !bytes.Equal(again, js) {
		t.Errorf("WriteJSON(ReadJSON(js)) differs from js")
	}

	m, err := Merge([]*Document{back, back}, MergeOptions{})
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
	for _, b := range back.Batches {
		if b.Warmup != 0 || b.Connections != nil || b.Phases != nil || b.StartLateness != nil {
			t.Errorf("a document without transport fields reads as a %s batch with some: %+v", b.Name, b)
		}
	}
}
