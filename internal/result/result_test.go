package result

import (
	"slices"
	"strings"
	"testing"
)

func TestFailureTexts(t *testing.T) {
	tests := []struct {
		f    Failure
		want string
	}{
		{Failure{}, "ok"},
		{Failure{Kind: NoTokens}, "no content tokens received"},
		{Failure{Kind: ClosedBeforeDone}, "connection closed before [DONE]"},
		{Failure{Kind: ClosedBeforeDone, Detail: "message_stop"}, "connection closed before message_stop"},
		{Failure{Kind: ClosedBeforeDone, Detail: "response.completed"}, "connection closed before response.completed"},
		{Failure{Kind: BadStatus, Detail: "HTTP/1.1 502 Bad Gateway"}, "status HTTP/1.1 502 Bad Gateway"},
		{Failure{Kind: ShortResponse}, "short response"},
		{Failure{Kind: HeadTooLarge}, "response headers too large"},
		{Failure{Kind: Timeout, Detail: "300000"}, "timeout after 300000ms"},
		{Failure{Kind: Connect, Detail: "Connection refused"}, "connect(): Connection refused"},
		{Failure{Kind: RecvError}, "recv error"},
		{Failure{Kind: RecvError, Detail: "Connection reset by peer"}, "recv error: Connection reset by peer"},
		{Failure{Kind: BadFraming, Detail: "bad chunk"}, "malformed response: bad chunk"},
		{Failure{Kind: Interrupted}, "interrupted"},
		{Failure{Kind: Integrity, Detail: "token 5 duplicated"}, "integrity: token 5 duplicated"},
		{Failure{Kind: StreamError, Detail: "error: overloaded_error: Overloaded"}, "stream error: error: overloaded_error: Overloaded"},
		{Failure{Kind: IdleTimeout, Detail: "5000"}, "idle timeout after 5000ms"},
		{Failure{Kind: Redirect, Detail: "302 to https://example.com/login"}, "redirect 302 to https://example.com/login"},
		{Failure{Kind: Kind(99)}, "kind(99)"},
	}
	for _, tt := range tests {
		if got := tt.f.Error(); got != tt.want {
			t.Errorf("%+v.Error() = %q, want %q", tt.f, got, tt.want)
		}
	}
}

func TestKindNames(t *testing.T) {
	seen := map[string]Kind{}
	for k := OK; k <= Redirect; k++ {
		name := k.String()
		if prev, dup := seen[name]; dup || strings.HasPrefix(name, "kind(") {
			t.Errorf("kind %d has name %q (also kind %d)", k, name, prev)
		}
		seen[name] = k
		if back, ok := ParseKind(name); !ok || back != k {
			t.Errorf("ParseKind(%q) = %v, %v; want %v, true", name, back, ok, k)
		}
	}
	for _, bad := range []string{"", "kind(99)", "Timeout", "timeout "} {
		if k, ok := ParseKind(bad); ok {
			t.Errorf("ParseKind(%q) = %v, true; want false", bad, k)
		}
	}
	if StreamError.String() != "stream_error" || Integrity.String() != "integrity" || IdleTimeout.String() != "idle_timeout" || Redirect.String() != "redirect" {
		t.Errorf("names %q, %q, %q, %q", StreamError.String(), Integrity.String(), IdleTimeout.String(), Redirect.String())
	}
}

// TestTokenRuns appends tokens the ways a reader does — one per Read, several
// in one Read, Reads without tokens, a phase whose tokens are missing — and
// checks every token's index and Read, and that the common case costs one
// run.
func TestTokenRuns(t *testing.T) {
	type add struct {
		n           int
		index, read int32
	}
	tests := []struct {
		name  string
		adds  []add
		runs  int
		index []int32
		read  []int32
	}{
		{"one token per Read", []add{{1, 0, 1}, {1, 1, 2}, {1, 2, 3}, {1, 3, 4}}, 1,
			[]int32{0, 1, 2, 3}, []int32{1, 2, 3, 4}},
		{"several tokens per Read", []add{{3, 0, 1}, {2, 3, 4}}, 2,
			[]int32{0, 1, 2, 3, 4}, []int32{1, 1, 1, 4, 4}},
		{"Reads without tokens in between", []add{{1, 0, 0}, {1, 1, 2}, {1, 2, 3}}, 2,
			[]int32{0, 1, 2}, []int32{0, 2, 3}},
		{"a phase missing", []add{{1, 0, 1}, {1, 1, 2}, {1, 5, 3}, {1, 6, 4}}, 2,
			[]int32{0, 1, 5, 6}, []int32{1, 2, 3, 4}},
		{"phases out of order", []add{{1, 0, 0}, {2, 2, 0}, {1, 1, 1}}, 3,
			[]int32{0, 2, 3, 1}, []int32{0, 0, 0, 1}},
		{"one token per Read after a merged Read", []add{{2, 0, 0}, {1, 2, 1}, {1, 3, 2}, {1, 4, 3}}, 2,
			[]int32{0, 1, 2, 3, 4}, []int32{0, 0, 1, 2, 3}},
	}
	for _, tt := range tests {
		r := &Request{}
		for _, a := range tt.adds {
			r.AppendTokens(a.n, a.index, a.read, int64(a.read)*10)
		}
		if len(r.Tokens) != len(tt.index) || len(r.TokenRuns) != tt.runs {
			t.Errorf("%s: %d tokens in %d runs %v, want %d in %d", tt.name, len(r.Tokens), len(r.TokenRuns), r.TokenRuns, len(tt.index), tt.runs)
			continue
		}
		for i := range r.Tokens {
			if got, got2 := r.TokenIndex(i), r.TokenRead(i); got != tt.index[i] || got2 != tt.read[i] {
				t.Errorf("%s: token %d: index %d read %d, want %d and %d", tt.name, i, got, got2, tt.index[i], tt.read[i])
			}
			if r.Tokens[i].Arrived != int64(tt.read[i])*10 {
				t.Errorf("%s: token %d arrived %d, want its Read's %d", tt.name, i, r.Tokens[i].Arrived, tt.read[i]*10)
			}
		}
	}
}

// FuzzTokenRuns checks the runs against the plain list of indexes and Reads
// they encode, whatever order the appends come in.
func FuzzTokenRuns(f *testing.F) {
	f.Add([]byte{1, 0, 1, 1, 1, 2, 3, 2, 2})
	f.Add([]byte{2, 0, 0, 1, 5, 1, 1, 6, 3, 4, 7, 3})
	f.Fuzz(func(t *testing.T, ops []byte) {
		r := &Request{}
		var wantIndex, wantRead []int32
		read := int32(0)
		for len(ops) >= 3 {
			n, index := int(ops[0]%5), int32(ops[1])
			read += int32(ops[2] % 3) // Reads only go forward
			ops = ops[3:]
			r.AppendTokens(n, index, read, 0)
			for j := range int32(n) {
				wantIndex = append(wantIndex, index+j)
				wantRead = append(wantRead, read)
			}
		}
		for i := range r.Tokens {
			if r.TokenIndex(i) != wantIndex[i] || r.TokenRead(i) != wantRead[i] {
				t.Fatalf("token %d: index %d read %d, want %d and %d (runs %v)", i, r.TokenIndex(i), r.TokenRead(i), wantIndex[i], wantRead[i], r.TokenRuns)
			}
		}
		if len(r.TokenRuns) > len(r.Tokens) {
			t.Fatalf("%d runs for %d tokens", len(r.TokenRuns), len(r.Tokens))
		}
		for base := range 4 {
			r.Reasoning, r.ToolCall = base/2, base%2
			checkVisible(t, r)
		}
	})
}

// checkVisible checks Visible, FirstVisible and VisibleCount against a
// search of every token's index.
func checkVisible(t *testing.T, r *Request) {
	t.Helper()
	var want []int
	for i := range r.Tokens {
		if r.TokenIndex(i) >= r.TextBase() {
			want = append(want, i)
		}
	}
	var got []int
	for i, tok := range r.Visible() {
		if tok != r.Tokens[i] {
			t.Fatalf("Visible gives token %d as %+v, it is %+v", i, tok, r.Tokens[i])
		}
		got = append(got, i)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Visible (base %d, runs %v) gives tokens %v, want %v", r.TextBase(), r.TokenRuns, got, want)
	}
	first, ok := r.FirstVisible()
	if ok != (len(want) > 0) || ok && first != r.Tokens[want[0]] || r.VisibleCount() != len(want) {
		t.Fatalf("FirstVisible %+v %v, VisibleCount %d; want token %v of %d", first, ok, r.VisibleCount(), want, len(want))
	}
}

// TestVisible picks the text tokens out of records of every shape: no
// phases before the text, phases whose tokens all came, reasoning dropped,
// tokens out of order, a record without runs (built by hand).
func TestVisible(t *testing.T) {
	type add struct {
		n           int
		index, read int32
	}
	for _, tt := range []struct {
		name      string
		r, c      int
		adds      []add
		wantIndex []int32
	}{
		{"text only", 0, 0, []add{{3, 0, 1}}, []int32{0, 1, 2}},
		{"all phases", 2, 1, []add{{1, 0, 1}, {1, 1, 2}, {1, 2, 3}, {2, 3, 4}}, []int32{3, 4}},
		{"reasoning dropped", 2, 1, []add{{1, 2, 3}, {2, 3, 4}}, []int32{3, 4}},
		{"a run across the boundary", 1, 0, []add{{3, 0, 1}}, []int32{1, 2}},
		{"out of order", 2, 0, []add{{1, 2, 1}, {1, 0, 2}, {1, 3, 3}, {1, 1, 3}}, []int32{2, 3}},
		{"no text", 2, 2, []add{{4, 0, 1}}, nil},
	} {
		r := &Request{Reasoning: tt.r, ToolCall: tt.c}
		for _, a := range tt.adds {
			r.AppendTokens(a.n, a.index, a.read, 0)
		}
		var got []int32
		for i := range r.Visible() {
			got = append(got, r.TokenIndex(i))
		}
		if !slices.Equal(got, tt.wantIndex) {
			t.Errorf("%s: visible tokens of indexes %v, want %v", tt.name, got, tt.wantIndex)
		}
		checkVisible(t, r)
	}
	hand := &Request{Reasoning: 1, Tokens: []Token{{Arrived: 1}, {Arrived: 2}, {Arrived: 3}}}
	if first, _ := hand.FirstVisible(); first.Arrived != 2 || hand.VisibleCount() != 2 {
		t.Errorf("a record without runs: first visible %+v, %d visible; want the second token, 2", first, hand.VisibleCount())
	}
}
