package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/check/checkreport"
)

// TestCheckSkip: a SKIP row renders as a row of its own, with its reason
// and what would let it run, in the text and the HTML page; the summary
// counts the SKIPs when there are any and leaves them out otherwise.
func TestCheckSkip(t *testing.T) {
	start := time.Date(2026, 12, 3, 16, 0, 0, 0, time.UTC)
	skip := checkreport.Row{Name: "multiplex", Title: "streams of one connection flush independently", Status: checkreport.Skip,
		Evidence: "an http:// target speaks HTTP/1.1", Fix: "rerun with --h2c"}
	pass := checkreport.Row{Name: "terminal", Title: "the terminal event passes", Status: checkreport.Pass, Evidence: "ended with its terminal event"}
	for _, tt := range []struct {
		name     string
		rows     []checkreport.Row
		text     []string // in the text report
		html     []string // in the page
		notInAny string
	}{
		{"a skipped row", []checkreport.Row{pass, skip},
			[]string{"SKIP  multiplex         streams of one connection flush independently: an http:// target speaks HTTP/1.1\n",
				"fix: rerun with --h2c\n", "2 checks: 1 PASS, 0 WARN, 0 FAIL, 1 SKIP (1.0 s)\n"},
			[]string{`<tr class="SKIP"><td class="status">SKIP</td><td class="name">multiplex</td>`, "fix: rerun with --h2c", "1 SKIP"}, ""},
		{"none skipped", []checkreport.Row{pass}, []string{"1 checks: 1 PASS, 0 WARN, 0 FAIL (1.0 s)\n"}, []string{"1 PASS, 0 WARN, 0 FAIL ("}, "SKIP"},
	} {
		rep := &checkreport.Report{SchemaVersion: checkreport.SchemaVersion, Target: "127.0.0.1:8080", Dialect: "chat", Server: "127.0.0.1:8090",
			Start: start, End: start.Add(time.Second), Rows: tt.rows}
		var text, page bytes.Buffer
		if err := WriteCheckText(&text, rep); err != nil {
			t.Fatal(err)
		}
		if err := WriteCheckHTML(&page, rep); err != nil {
			t.Fatal(err)
		}
		for _, s := range tt.text {
			if !strings.Contains(text.String(), s) {
				t.Errorf("%s: the text lacks %q:\n%s", tt.name, s, text.String())
			}
		}
		for _, s := range tt.html {
			if !strings.Contains(page.String(), s) {
				t.Errorf("%s: the page lacks %q", tt.name, s)
			}
		}
		if tt.notInAny != "" && (strings.Contains(text.String(), tt.notInAny) || strings.Contains(page.String(), ">"+tt.notInAny+"<")) {
			t.Errorf("%s: %q rendered:\n%s", tt.name, tt.notInAny, text.String())
		}
		if rep.Failed() {
			t.Errorf("%s: a SKIP counts as failed", tt.name)
		}
	}
}

// TestCheckConnections: a row that counted its connections (the
// multiplex row) says on how many its requests went, after its evidence,
// in the text, and in JSON as "connections"; a row that did not (0) says
// nothing of them in either.
func TestCheckConnections(t *testing.T) {
	for _, tt := range []struct {
		conns int
		text  string // the end of the row's line
		json  string // in its JSON ("" : no "connections" key)
	}{
		{0, "each flushed\n", ""},
		{1, "each flushed; on 1 connection\n", `"connections":1`},
		{2, "each flushed; on 2 connections\n", `"connections":2`},
	} {
		r := checkreport.Row{Name: "multiplex", Title: "streams of one connection flush independently", Status: checkreport.Pass,
			Evidence: "8 streams at once on one h2 connection, each flushed", Requests: 8, Connections: tt.conns}
		var text bytes.Buffer
		if err := WriteCheckRow(&text, r); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(text.String(), tt.text) {
			t.Errorf("WriteCheckRow of a row on %d connections: %q, want it to end %q", tt.conns, text.String(), tt.text)
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if has := strings.Contains(string(b), `"connections"`); has != (tt.json != "") || !strings.Contains(string(b), tt.json) {
			t.Errorf("the JSON of a row on %d connections: %s; want %q in it (none: no key)", tt.conns, b, tt.json)
		}
	}
}
