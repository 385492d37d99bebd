package api

import (
	"math"
	"strings"
	"testing"
)

// checkHints fails when h holds a hint that set would not have accepted: an
// invalid id, a token count outside 0..MaxInt32, a negative or non-finite
// think or delay.
func checkHints(t *testing.T, from string, h Hints) {
	t.Helper()
	if h.ID != "" && !ValidID(h.ID) {
		t.Fatalf("%s: invalid id %q", from, h.ID)
	}
	for _, n := range []*int64{h.Tokens, h.Reasoning, h.ToolCall} {
		if n != nil && (*n < 0 || *n > math.MaxInt32) {
			t.Fatalf("%s: token count %d out of range", from, *n)
		}
	}
	for _, f := range []*float64{h.ThinkMs, h.DelayMs, h.HeartbeatMs} {
		if f != nil && (math.IsNaN(*f) || math.IsInf(*f, 0) || *f < 0) {
			t.Fatalf("%s: think/delay/heartbeat %v is not a finite non-negative number", from, *f)
		}
	}
	checkFaults(t, from, h.Faults)
}

// checkFaults fails when f holds a fault that parse would not have
// accepted.
func checkFaults(t *testing.T, from string, f Faults) {
	t.Helper()
	for _, n := range []*int64{f.CutAfter, f.Status, f.StallAfter, f.EventBytes} {
		if n != nil && (*n < 0 || *n > math.MaxInt32) {
			t.Fatalf("%s: fault count %d out of range", from, *n)
		}
	}
	for _, x := range []*float64{f.StallMs, f.SplitGapMs} {
		if x != nil && (math.IsNaN(*x) || math.IsInf(*x, 0) || *x < 0) {
			t.Fatalf("%s: fault time %v is not a finite non-negative number", from, *x)
		}
	}
	if len(f.Split) > MaxSplitOffsets {
		t.Fatalf("%s: %d split offsets", from, len(f.Split))
	}
	for _, o := range f.Split {
		if o != SplitInChar && (o < 1 || o > MaxEventBytes) {
			t.Fatalf("%s: split offset %d", from, o)
		}
	}
	if f.LineEnd > LineEndCR || f.Text > TextUTF8 {
		t.Fatalf("%s: line ending %d, words %d", from, f.LineEnd, f.Text)
	}
}

func fmtHints(h Hints) string { return "{" + h.HeaderValue() + "}" }

// markerFits reports whether the pairs of h's prompt marker fit in the
// maxMarkerBytes FindPromptHints looks at before the closing ']'.
func markerFits(h Hints) bool {
	return len(h.PromptMarker())-len(promptMarker)-1 <= maxMarkerBytes
}

// checkRoundTrips checks that valid hints survive both textual channels:
// the header value, and the prompt marker anywhere in a body.
func checkRoundTrips(t *testing.T, h Hints, prefix []byte) {
	t.Helper()
	if got := ParseHintHeader(h.HeaderValue()); !hintsEqual(got, h) {
		t.Fatalf("ParseHintHeader(%q) = %s; want %s", h.HeaderValue(), fmtHints(got), fmtHints(h))
	}
	marker := h.PromptMarker()
	if strings.ContainsAny(marker, "\"\\\x00\n") {
		t.Fatalf("PromptMarker() = %q holds a character JSON would escape", marker)
	}
	want := h
	if !markerFits(h) {
		want = Hints{} // too long to be read back: ignored, as documented by the 256-byte bound
	}
	for _, body := range [][]byte{
		[]byte(marker),
		append(append(append([]byte(nil), prefix...), marker...), `"}]}`...),
		[]byte(`{"messages":[{"role":"user","content":"Say 4-letter words ` + marker + `"}]}`),
	} {
		if got := FindPromptHints(body); !hintsEqual(got, want) {
			t.Fatalf("FindPromptHints(%q) = %s; want %s", body, fmtHints(got), fmtHints(want))
		}
	}
}

func FuzzParseHintHeader(f *testing.F) {
	for _, s := range []string{
		"id=gw-3-k2f9; tokens=200; think=0; delay=5",
		"id=gw-3-k2f9; tokens=200; reasoning=50; tool_call=20; heartbeat=500",
		"heartbeat=-1; heartbeat=NaN; heartbeat=1e400",
		"reasoning=-1; tool_call=2147483648; reasoning=x",
		"id=loop-0;tokens=200",
		"  tokens = 50 ;; delay=0.25 ; unknown=1",
		"id=a b; tokens=-1; think=NaN; delay=Inf",
		"tokens=2147483648; think=1e308; delay=-0",
		"id=" + strings.Repeat("x", MaxIDLen+1),
		"=;=;==;id==",
		"cut_after=5; status=429; stall_after=3; stall_ms=250.5; trickle=1; event_bytes=65536",
		"split=utf8,7; split_gap_ms=0; line_end=crlf; comments=0; text=utf8; no_terminal=true",
		"split=none; line_end=CR; text=ascii; status=-1; cut_after=x; split=0; split=utf8,utf8,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := ParseHintHeader(v)
		checkHints(t, "ParseHintHeader("+v+")", h)
		checkRoundTrips(t, h, []byte(v))
	})
}

func FuzzFindPromptHints(f *testing.F) {
	f.Add([]byte(`{"model":"sse-latency-1","stream":true,"messages":[{"role":"user","content":"Say 4-letter words [sse-latency id=gw-3-k2f9 tokens=200]"}]}`),
		"gw-3-k2f9", int64(200), 0.0, 5.0, int64(0), int64(0))
	f.Add([]byte(`{"input":"[sse-latency id=old tokens=1] then [sse-latency id=new tokens=2 think=1.5 delay=0.25 reasoning=9 tool_call=4]"}`),
		"new", int64(2), 1.5, 0.25, int64(9), int64(4))
	f.Add([]byte(`[sse-latency tokens=abc think=-1 delay=NaN id=a/b reasoning=1e3 tool_call=-2]`), "", int64(-1), -1.0, math.NaN(), int64(-1), int64(1<<40))
	f.Add([]byte(`[sse-latency `+strings.Repeat("x", 300)+`]`), "x", int64(math.MaxInt32), 1e300, 0.0, int64(math.MaxInt32), int64(0))
	f.Add([]byte(`[sse-latency id=unterminated tokens=3`), "", int64(0), 0.0, 0.0, int64(1), int64(1))
	f.Fuzz(func(t *testing.T, body []byte, id string, tokens int64, think, delay float64, reasoning, toolCall int64) {
		h := FindPromptHints(body)
		checkHints(t, "FindPromptHints("+string(body)+")", h)

		// Hints built from the arguments (the valid ones kept) must come
		// back from a marker appended to any body.
		var w Hints
		if ValidID(id) {
			w.ID = id
		}
		if tokens >= 0 && tokens <= math.MaxInt32 {
			w.Tokens = &tokens
		}
		if reasoning >= 0 && reasoning <= math.MaxInt32 {
			w.Reasoning = &reasoning
		}
		if toolCall >= 0 && toolCall <= math.MaxInt32 {
			w.ToolCall = &toolCall
		}
		if !math.IsNaN(think) && !math.IsInf(think, 0) && think >= 0 {
			w.ThinkMs = &think
		}
		if !math.IsNaN(delay) && !math.IsInf(delay, 0) && delay >= 0 {
			w.DelayMs = &delay
			w.HeartbeatMs = &delay // any valid interval: the corpus keeps its signature
		}
		checkRoundTrips(t, w, body)
	})
}
