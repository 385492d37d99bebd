package client

import (
	"bytes"
	"testing"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/wire/ssetest"
)

// TestMatcherFeed follows the tokens completed as pieces of content arrive.
func TestMatcherFeed(t *testing.T) {
	type step struct {
		text     string
		first, n int
		whole    bool
	}
	tests := []struct {
		name   string
		expect int
		steps  []step
	}{
		{"one token per event", 3, []step{{"anan", 0, 1, true}, {"huhu", 1, 1, true}, {"obob", 2, 1, true}}},
		{"merged", 3, []step{{"ananhuhu", 0, 2, false}, {"obob", 2, 1, true}}},
		{"split", 3, []step{{"an", 0, 0, false}, {"anhu", 0, 1, false}, {"huobob", 1, 2, false}}},
		{"misaligned four bytes", 3, []step{{"an", 0, 0, false}, {"anhu", 0, 1, false}, {"huob", 1, 1, false}}},
		{"corrupted inside a token", 3, []step{{"anan", 0, 1, true}, {"huXu", 1, 0, false}, {"obob", 1, 0, false}}},
		{"beyond the expected length", 1, []step{{"anan", 0, 1, true}, {"huhu", 1, 0, false}}},
		{"unknown length", 0, []step{{text(0, 30), 0, 30, false}}},
	}
	for _, tt := range tests {
		m := newMatcher(tt.expect)
		for i, s := range tt.steps {
			first, n, whole := m.feed([]byte(s.text))
			if first != s.first || n != s.n || whole != s.whole {
				t.Errorf("%s: step %d feed(%q) = %d, %d, %v; want %d, %d, %v", tt.name, i, s.text, first, n, whole, s.first, s.n, s.whole)
			}
		}
	}
}

// FuzzMatcher feeds arbitrary content, cut arbitrarily, against a known
// length: the analysis must find a problem exactly when the content is not
// the expected text, and the tokens recognised must be a prefix of it.
func FuzzMatcher(f *testing.F) {
	f.Add(uint8(3), []byte("ananhuhuobob"), []byte{2, 5})
	f.Add(uint8(3), []byte("ananananhuhu"), []byte{4})
	f.Add(uint8(30), []byte(text(0, 17)+text(20, 30)), []byte{7, 7, 7})
	f.Add(uint8(0), []byte("anan!!"), []byte{})
	f.Fuzz(func(t *testing.T, expect uint8, content, cuts []byte) {
		m := newMatcher(int(expect))
		tokens := 0
		rest := content
		for _, c := range cuts {
			k := min(int(c), len(rest))
			first, n, _ := m.feed(rest[:k])
			if first != tokens || n < 0 {
				t.Fatalf("feed returned tokens %d+%d after %d", first, n, tokens)
			}
			tokens += n
			rest = rest[k:]
		}
		first, n, _ := m.feed(rest)
		if first != tokens {
			t.Fatalf("feed returned first %d after %d tokens", first, tokens)
		}
		tokens += n
		if !bytes.HasPrefix(content, []byte(text(0, tokens))) {
			t.Errorf("%d tokens recognised in %q", tokens, content)
		}
		p := m.problem()
		if expect > 0 {
			want := string(content) == text(0, int(expect))
			if (p == "") != want {
				t.Errorf("content %q, expect %d tokens: problem %q", content, expect, p)
			}
		} else if p == "" && (len(content)%4 != 0 || !bytes.Equal(content, []byte(text(0, len(content)/4)))) {
			t.Errorf("content %q of unknown length: no problem found", content)
		}
	})
}

// FuzzReader feeds arbitrary response bodies, cut arbitrarily, to the
// response parser of each dialect: it must not fail, the tokens it
// records are 0, 1, 2, ... in order, and it counts the events the
// specification's algorithm (ssetest.Interpret) dispatches, up to the one
// that ends the stream.
func FuzzReader(f *testing.F) {
	for _, s := range dialectStreams {
		f.Add(uint8(s.d), []byte(s.events(true, s.tokens(3, true)...)), []byte{40, 200, 7})
		f.Add(uint8(s.d), []byte(s.events(false, s.tok(0, text(0, 2)), s.tok(0, `\u006fbob`))), []byte{90})
	}
	for _, tc := range ssetest.Cases {
		if len(tc.Input) < 1024 {
			f.Add(uint8(0), []byte(tc.Input), []byte{byte(len(tc.Input) / 2)})
		}
	}
	f.Fuzz(func(t *testing.T, d uint8, body, cuts []byte) {
		o := &Options{Dialect: dialectStreams[int(d)%len(dialectStreams)].d, ExpectTokens: 3, IncludeUsage: true}
		rec := &result.Request{}
		feedCuts(t, rec, o, body, cuts)
		for i := range rec.Tokens {
			if index := rec.TokenIndex(i); int(index) != i {
				t.Fatalf("token %d has index %d", i, index)
			}
		}
		want := 0
		for _, e := range ssetest.Interpret(body).Events {
			want++
			typ := []byte(e.Type)
			if e.Type == "message" {
				typ = nil
			}
			if api.ScanEvent(o.Dialect, typ, []byte(e.Data)).Flags&(api.Terminal|api.Failed|api.Malformed) != 0 {
				break
			}
		}
		if rec.Events != want {
			t.Fatalf("%s: the reader counts %d events in %q; the specification dispatches %d before the end", o.Dialect, rec.Events, body, want)
		}
	})
}

// feedCuts feeds a response head, then body cut after each of cuts bytes
// (the rest last), to a reader with options o, until the response ends.
func feedCuts(t *testing.T, rec *result.Request, o *Options, body, cuts []byte) {
	t.Helper()
	r := newReader(rec, o)
	defer r.close()
	if r.feed([]byte(sseHead+"\r\n"), 2) {
		t.Fatal(rec.Failure.Error())
	}
	for i, c := range cuts {
		k := min(int(c), len(body))
		if r.feed(body[:k], int64(3+i)) {
			return
		}
		body = body[k:]
	}
	r.feed(body, 1000)
}
