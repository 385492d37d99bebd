package client

import (
	"io"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/result"
)

// TestInstance: the server instance a response names — in its head, in
// its events beside pi_ts, in every dialect — becomes the record's; two
// different ones, or one that is no instance id, fail the request as an
// integrity error naming them.
func TestInstance(t *testing.T) {
	named := func(s dialectStream, id string) func(ts int64, raw string) string {
		return func(ts int64, raw string) string {
			ev := s.tok(ts, raw)
			if id == "" {
				return ev
			}
			return strings.Replace(ev, `"pi_ts":`, `"pi_instance":"`+id+`","pi_ts":`, 1)
		}
	}
	for _, s := range dialectStreams {
		for _, tc := range []struct {
			name         string
			header       string   // the head's api.InstanceHeader ("" none)
			events       []string // the instance each token event names ("" none)
			want, detail string   // the record's instance; the integrity failure's detail, "" when ok
		}{
			{"none", "", []string{"", "", ""}, "", ""},
			{"head only", "srv-b", []string{"", "", ""}, "srv-b", ""},
			{"events only", "", []string{"srv-a", "srv-a", "srv-a"}, "srv-a", ""},
			{"some events", "", []string{"", "srv-a", ""}, "srv-a", ""},
			{"head and events agree", "srv-a", []string{"srv-a", "srv-a", "srv-a"}, "srv-a", ""},
			{"two in the events", "", []string{"srv-a", "srv-b", "srv-a"}, "srv-a", `events from two server instances ("srv-a", then "srv-b")`},
			{"head and events differ", "srv-b", []string{"srv-a", "srv-a", "srv-a"}, "srv-b", `events from two server instances ("srv-b", then "srv-a")`},
			{"no id", "", []string{"a b", "", ""}, "", `the server instance named is no instance id: "a b"`},
		} {
			var body strings.Builder
			for _, e := range s.pre {
				body.WriteString(chunk(e))
			}
			for i, id := range tc.events {
				body.WriteString(chunk(named(s, id)(int64(100*(i+1)), api.Token(i))))
			}
			for _, e := range append(s.fin, s.term) {
				body.WriteString(chunk(e))
			}
			head := sseHead
			if tc.header != "" {
				head += api.InstanceHeader + ": " + tc.header + "\r\n"
			}
			rec := &result.Request{Batch: "gw"}
			r := newReader(rec, &Options{Dialect: s.d, Tokens: 3})
			if !r.feed([]byte(head+"Transfer-Encoding: chunked\r\n\r\n"+body.String()+"0\r\n\r\n"), 1) {
				rec.Failure = r.endOfStream(io.EOF)
			}
			r.close()
			what := s.d.String() + ", " + tc.name
			if rec.Instance != tc.want {
				t.Errorf("%s: instance %q, want %q", what, rec.Instance, tc.want)
			}
			switch {
			case tc.detail == "" && !rec.OK():
				t.Errorf("%s: %s, want ok", what, rec.Failure.Error())
			case tc.detail != "" && (rec.Failure.Kind != result.Integrity || !strings.HasPrefix(rec.Failure.Detail, tc.detail)):
				t.Errorf("%s: %s, want an integrity failure %q", what, rec.Failure.Error(), tc.detail)
			}
			if tc.detail == "" && rec.ByPiTs != 3 {
				t.Errorf("%s: %d tokens by pi_ts, want 3", what, rec.ByPiTs)
			}
		}
	}
}

// TestInstancePerTokenDoesNotAllocate: events naming the server instance
// cost the per-token path no allocation: the record takes the id once.
func TestInstancePerTokenDoesNotAllocate(t *testing.T) {
	for _, s := range dialectStreams {
		var reads [][]byte
		for _, e := range s.tokens(periodTokens, true) {
			reads = append(reads, []byte(chunk(strings.Replace(e, `"pi_ts":`, `"pi_instance":"sse-latency-server-0","pi_ts":`, 1))))
		}
		rec := &result.Request{Tokens: make([]result.Token, 0, 4096)}
		r := newReader(rec, &Options{Dialect: s.d})
		if r.feed([]byte(sseHead+api.InstanceHeader+": sse-latency-server-0\r\nTransfer-Encoding: chunked\r\n\r\n"), 1) {
			t.Fatal(rec.Failure.Error())
		}
		i := 0
		allocs := testing.AllocsPerRun(200, func() {
			if len(rec.Tokens) == cap(rec.Tokens) {
				rec.Tokens = rec.Tokens[:0]
			}
			r.feed(reads[i], int64(i))
			i = (i + 1) % len(reads)
		})
		if allocs != 0 || rec.Instance != "sse-latency-server-0" || r.instanceProblem != "" {
			t.Errorf("%s: %.1f allocations per token event, instance %q, problem %q; want none, the id, none", s.d, allocs, rec.Instance, r.instanceProblem)
		}
	}
}
