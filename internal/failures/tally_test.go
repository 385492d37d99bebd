package failures

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
)

// killed is the record of a stream cut when its gateway died at 3 s: it
// started at start and received a token every 5 ms until then.
func killed(start int64) *result.Request {
	r := &result.Request{Start: start, Connected: start + 1e5, Sent: start + 2e5, HeadAt: start + 3e5, End: 3 * s,
		Failure: result.Failure{Kind: result.ClosedBeforeDone}}
	for at := start + 5e6; at < 3*s; at += 5e6 {
		r.Tokens = append(r.Tokens, result.Token{Arrived: at})
	}
	r.LastReadAt = r.Tokens[len(r.Tokens)-1].Arrived
	r.PrevReadAt = r.LastReadAt - 5e6
	return r
}

// refused is the record of a request refused at the given time.
func refused(at int64) *result.Request {
	return &result.Request{Start: at, End: at + 1e5,
		Failure: result.Failure{Kind: result.Connect, Detail: "Connection refused", Errno: syscall.ECONNREFUSED}}
}

// ok is a request that completed.
func ok(start int64) *result.Request {
	return &result.Request{Start: start, Sent: start + 1e5, End: start + s, Tokens: make([]result.Token, 200)}
}

// killedRun is a batch of 10 requests whose gateway died at 3 s: 4 had
// completed, 4 were cut mid-stream (started at 1, 1.5, 2 and 2.5 s), 2
// refused after.
func killedRun() []*result.Request {
	return []*result.Request{
		ok(s / 2), ok(s / 2), ok(s), ok(s),
		killed(2 * s), killed(s), killed(3 * s / 2), killed(5 * s / 2),
		refused(3*s + 1e6), refused(3*s + 2e6),
	}
}

func tallyOf(recs []*result.Request) *Tally {
	t := NewTally()
	for _, r := range recs {
		t.Add(r)
	}
	return t
}

func TestTallyGroups(t *testing.T) {
	tl := tallyOf(killedRun())
	if tl.Requests != 10 || tl.Failed != 6 || tl.Start != s/2 {
		t.Fatalf("tally: %d requests, %d failed, start %d; want 10, 6, %d", tl.Requests, tl.Failed, tl.Start, s/2)
	}
	gs := tl.Groups()
	if len(gs) != 2 {
		t.Fatalf("groups: %v, want closed mid-stream and refused", tl)
	}
	cut, ref := gs[0], gs[1]
	if cut.Key != (Key{Kind: ClosedMidStream}) || cut.Count != 4 || ref.Key != (Key{Kind: Refused}) || ref.Count != 2 {
		t.Fatalf("groups %v: want 4 closed mid-stream first, then 2 refused", tl)
	}
	if cut.First != 3*s || cut.Last != 3*s || ref.First != 3*s+1e5+1e6 || ref.Last != 3*s+1e5+2e6 {
		t.Errorf("times: cut %d..%d, refused %d..%d", cut.First, cut.Last, ref.First, ref.Last)
	}
	if cut.Example != "connection closed before [DONE]" || ref.Example != "connect(): Connection refused" {
		t.Errorf("examples %q, %q: want the failure texts", cut.Example, ref.Example)
	}
	// Streams that began at 1, 1.5, 2 and 2.5 s and received a token every
	// 5 ms until 3 s: 399, 299, 199 and 99 tokens, 2, 1.5, 1 and 0.5 s old.
	if got := []int64{cut.Tokens.Min(), cut.Tokens.Percentile(0.5), cut.Tokens.Max()}; !slices.Equal(got, []int64{99, 199, 399}) {
		t.Errorf("tokens min/p50/max = %v, want [99 199 399]", got)
	}
	if got := cut.Age.Percentile(0.5); got < s-s/100 || got > s+s/100 {
		t.Errorf("age p50 = %d, want 1 s (within a bucket)", got)
	}
	if share := tl.Share(&cut); share != 0.4 {
		t.Errorf("share of the cut streams = %v, want 0.4", share)
	}
	if got := cut.Shapes(); !slices.Equal(got, []Shape{Together}) {
		t.Errorf("shapes of streams all cut at 3 s, of different ages = %v, want [Together]", got)
	}
}

func TestShapes(t *testing.T) {
	// Each stream cut 30 s after it started, the second wave 30 s after
	// the first: the same age, not together.
	var recs []*result.Request
	for i := range int64(4) {
		start := s + (i/2)*30*s + i*s/10
		r := &result.Request{Start: start, Sent: start + 1, HeadAt: start + 2, End: start + 30*s, Failure: result.Failure{Kind: result.ClosedBeforeDone},
			Tokens: make([]result.Token, 10), LastReadAt: start + 30*s - 1e6, PrevReadAt: start + 30*s - 2e6}
		recs = append(recs, r)
	}
	g := tallyOf(recs).Summary().Groups[0]
	if got := g.Shapes(); !slices.Equal(got, []Shape{SameAge}) {
		t.Errorf("shapes of streams each cut after 30 s, 30 s apart = %v, want [SameAge]", got)
	}
	advice := AdviceFor(&g)
	if len(advice) != 1 || !strings.Contains(advice[0].Text, "after about the same time") {
		t.Errorf("advice for streams of the same age: %v", advice)
	}
	one := tallyOf(recs[:1]).Summary().Groups[0]
	if got := one.Shapes(); len(got) != 0 {
		t.Errorf("shapes of one failure = %v, want none", got)
	}
	if advice := AdviceFor(&one); len(advice) != 1 || advice[0].Shape != Any {
		t.Errorf("advice for one cut stream: %v, want the row for any shape", advice)
	}
}

func TestAdviceForStatus(t *testing.T) {
	for _, tt := range []struct {
		status int
		want   []string
	}{
		{502, []string{"bad gateway", "error status"}},
		{429, []string{"rate limited", "error status"}},
		{418, []string{"error status"}},
		{0, []string{"error status"}},
	} {
		var got []string
		for _, row := range AdviceFor(&GroupSummary{Kind: HTTPStatus.String(), Status: tt.status, Count: 3}) {
			got = append(got, row.Text)
		}
		if len(got) != len(tt.want) {
			t.Errorf("advice for HTTP %d: %q, want rows with %q", tt.status, got, tt.want)
			continue
		}
		for i := range got {
			if !strings.Contains(got[i], tt.want[i]) {
				t.Errorf("advice for HTTP %d, row %d: %q, want %q in it", tt.status, i, got[i], tt.want[i])
			}
		}
	}
	for _, row := range Advice {
		for _, word := range []string{"buffer", "flush", "http-no-delay", "proxy_buffering"} {
			if strings.Contains(row.Text, word) && !strings.Contains(row.Text, "buffering the whole answer") {
				t.Errorf("advice row for %s speaks of buffering (%q): %s", row.Kind, word, row.Text)
			}
		}
	}
}

func TestHTTPStatusGroupsByCode(t *testing.T) {
	var recs []*result.Request
	for _, d := range []string{"HTTP/1.1 502 Bad Gateway: <b>\x1b[31mhostile</b>", "HTTP/1.1 502 Bad Gateway: other", "HTTP/1.1 429 Too Many Requests", "HTTP/1.1 5x"} {
		recs = append(recs, &result.Request{Start: s, End: s + 1, Failure: result.Failure{Kind: result.BadStatus, Detail: d}})
	}
	got := tallyOf(recs).Summary()
	var titles []string
	for _, g := range got.Groups {
		titles = append(titles, g.Title)
	}
	// By count, then by status: one that did not read (0) before 429.
	if want := []string{"HTTP 502 Bad Gateway", "HTTP error status", "HTTP 429 Too Many Requests"}; !slices.Equal(titles, want) {
		t.Errorf("groups %q, want %q", titles, want)
	}
	if ex := got.Groups[0].Example; ex != "status HTTP/1.1 502 Bad Gateway: <b>[31mhostile</b>" {
		t.Errorf("example %q: want the first text, its escape character dropped", ex)
	}
}

// TestSummaryRoundTrip: a summary, written to JSON and read back, gives
// the tally it was made from.
func TestSummaryRoundTrip(t *testing.T) {
	tl := tallyOf(killedRun())
	b, err := json.Marshal(tl.Summary())
	if err != nil {
		t.Fatal(err)
	}
	var back Summary
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	got, err := back.Tally()
	if err != nil {
		t.Fatalf("Tally of a written summary: %v\n%s", err, b)
	}
	if !reflect.DeepEqual(got.Summary(), tl.Summary()) {
		t.Errorf("round trip changed the summary:\n got %+v\nwant %+v", got.Summary(), tl.Summary())
	}
}

// TestMergeExact: merging the tallies of parts of a batch, through their
// summaries, gives the summary of the whole.
func TestMergeExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var recs []*result.Request
	for i := range 300 {
		start := int64(i) * 1e7
		switch rng.IntN(4) {
		case 0:
			recs = append(recs, ok(start))
		case 1:
			recs = append(recs, refused(start+int64(rng.IntN(1e6))))
		default:
			r := killed(start % (2 * s))
			r.End += int64(rng.IntN(5e8))
			recs = append(recs, r)
		}
	}
	whole := tallyOf(recs).Summary()
	merged := NewTally()
	for _, part := range [][]*result.Request{recs[:7], recs[7:150], recs[150:]} {
		b, _ := json.Marshal(tallyOf(part).Summary())
		var s Summary
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		pt, err := s.Tally()
		if err != nil {
			t.Fatal(err)
		}
		merged.Merge(pt)
	}
	if got := merged.Summary(); !reflect.DeepEqual(got, whole) {
		t.Errorf("merged parts:\n got %+v\nwant %+v", got, whole)
	}
}

func TestSummaryInvalid(t *testing.T) {
	good := func() *Summary { return tallyOf(killedRun()).Summary() }
	for _, tt := range []struct {
		name   string
		break_ func(*Summary)
		want   string
	}{
		{"unknown kind", func(s *Summary) { s.Groups[0].Kind = "gremlins" }, `unknown kind "gremlins"`},
		{"wrong title", func(s *Summary) { s.Groups[0].Title = "\x1b[2Jcleared" }, "title"},
		{"status on another kind", func(s *Summary) { s.Groups[1].Status = 502 }, "status 502"},
		{"counts", func(s *Summary) { s.Failed = 5 }, "the groups count 6 failures, failed says 5"},
		{"more failed than requests", func(s *Summary) { s.Failed = 11 }, "failed <= requests"},
		{"times", func(s *Summary) { s.Groups[0].LastNs = s.Groups[0].FirstNs - 1 }, "first <= last"},
		{"hostile example", func(s *Summary) { s.Groups[0].Example = "ok\x1b]0;owned\x07" }, "control characters"},
		{"long example", func(s *Summary) { s.Groups[0].Example = strings.Repeat("x", ExampleBytes+1) }, "longer than"},
		{"twice", func(s *Summary) { s.Groups[1] = s.Groups[0]; s.Failed, s.Requests = 8, 12 }, "a second group"},
		{"tokens n", func(s *Summary) {
			var d Dist
			d.Add(1)
			d.Add(2)
			d.Add(3)
			s.Groups[0].Tokens = d.Summary()
		}, "n is 3 for 4 failures"},
		{"tokens bucket", func(s *Summary) { s.Groups[0].Tokens.Buckets[0][0] = 2049 }, "lowest value of a bucket"},
		{"tokens p50", func(s *Summary) { s.Groups[0].Tokens.P50 = 1 }, "p50 is 1"},
		{"age max", func(s *Summary) { s.Groups[0].AgeNs.Max = 1e12 }, "max 1000000000000 is not in the last bucket"},
		{"age min", func(s *Summary) { s.Groups[0].AgeNs.Min = 1 }, "min 1 is not in the first bucket"},
	} {
		s := good()
		tt.break_(s)
		_, err := s.Tally()
		if err == nil || !errors.Is(err, ErrSummary) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Tally = %v, want an ErrSummary with %q", tt.name, err, tt.want)
		}
	}
}

func TestDistPercentile(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var d Dist
	var exact []int64
	for range 5000 {
		v := rng.Int64N(10_000_000)
		if rng.IntN(3) == 0 {
			v = rng.Int64N(2048)
		}
		d.Add(v)
		exact = append(exact, v)
	}
	slices.Sort(exact)
	for _, p := range []float64{0, 0.01, 0.5, 0.9, 0.99, 1} {
		got, want := d.Percentile(p), stats.ExactPercentile(exact, p)
		lo, w := bucketOf(want)
		if got < lo || got > lo+w || (want < 2048 && got != want) {
			t.Errorf("Percentile(%v) = %d, exact %d: not within its bucket [%d, %d]", p, got, want, lo, lo+w-1)
		}
	}
}

func TestPhraseAndHeadline(t *testing.T) {
	killedAll := func() []*result.Request {
		var recs []*result.Request
		for range 400 {
			r := killed(s)
			r.Failure = result.Failure{Kind: result.RecvError, Detail: "Connection reset by peer", Errno: syscall.ECONNRESET}
			recs = append(recs, r)
		}
		return recs
	}
	for _, tt := range []struct {
		name string
		recs []*result.Request
		want string
	}{
		{"none failed", []*result.Request{ok(s)}, ""},
		{"all reset", killedAll(), "gateway failed 400 of 400 requests: connection reset mid-stream after 2.0 s p50 (399 tokens p50)"},
		{"two kinds", killedRun(), "gateway failed 6 of 10 requests: connection closed mid-stream after 1.0 s p50 (199 tokens p50) (4), connection refused (2)"},
		{"refused", []*result.Request{refused(s), refused(s), ok(s)}, "gateway failed 2 of 3 requests: connection refused"},
		{"tool limit and interruption", []*result.Request{
			{Start: s, End: s, Failure: result.Failure{Kind: result.Connect, Detail: "Too many open files", Errno: syscall.EMFILE}},
			{Start: s, End: s, Failure: result.Failure{Kind: result.Interrupted}},
			refused(s),
		}, "gateway failed 1 of 3 requests: connection refused; 1 failed on sse-latency's own limits: connect(): Too many open files; " +
			"1 interrupted: the run was stopped"},
		{"interrupted only", []*result.Request{{Start: s, End: s, Failure: result.Failure{Kind: result.Interrupted}}, ok(s)},
			"1 of 2 requests interrupted: the run was stopped"},
		{"five kinds", []*result.Request{refused(s), refused(s), killed(s), killed(s), killed(s),
			{Start: s, End: s, Failure: result.Failure{Kind: result.NoTokens}},
			{Start: s, End: s, Failure: result.Failure{Kind: result.Redirect, Detail: "301 to /x"}},
			{Start: s, End: s, Failure: result.Failure{Kind: result.Redirect, Detail: "301 to /x"}},
			{Start: s, End: s, Failure: result.Failure{Kind: result.BadStatus, Detail: "HTTP/1.1 503 x"}},
		}, "gateway failed 9 of 9 requests: connection closed mid-stream after 2.0 s p50 (399 tokens p50) (3), " +
			"redirect, not followed (2), connection refused (2), and 2 of 2 other kinds"}, // of as many, the first to happen first
	} {
		if got := Headline(tallyOf(tt.recs).Summary()); got != tt.want {
			t.Errorf("%s: Headline =\n  %q\nwant\n  %q", tt.name, got, tt.want)
		}
	}
}

func TestSanitize(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"status HTTP/1.1 502 Bad Gateway", "status HTTP/1.1 502 Bad Gateway"},
		{"a\x1b[31mred\x1b[0m b", "a[31mred[0m b"},
		{"line\r\nbreak\ttab  spaces ", "line break tab spaces"},
		{"rtl \u202egnp.exe", "rtl gnp.exe"},
		{"bad \xff\xfe utf8 é", "bad utf8 é"},
		{"\x00\x07", ""},
		{strings.Repeat("ab ", 200), strings.Repeat("ab ", 78) + "ab..."},
		{strings.Repeat("é", 200), strings.Repeat("é", 118) + "..."},
	} {
		if got := Sanitize(tt.in); got != tt.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"status HTTP/1.1 502: <h1>502</h1>", "\x1b]0;x\x07", "\u202e\u200b", strings.Repeat("é", 150), "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Sanitize(s)
		if len(got) > ExampleBytes || !Clean(got) {
			t.Fatalf("Sanitize(%q) = %q: longer than %d bytes, or not stable", s, got, ExampleBytes)
		}
		for _, r := range got {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u202e' || r == '\ufffd' {
				t.Fatalf("Sanitize(%q) = %q keeps %U", s, got, r)
			}
		}
	})
}
