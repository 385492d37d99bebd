package api

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func ptr[T any](v T) *T { return &v }

// allFaults sets every fault.
var allFaults = Faults{
	CutAfter: ptr[int64](5), NoTerminal: ptr(true), Status: ptr[int64](429), StallAfter: ptr[int64](3),
	StallMs: ptr(250.5), Trickle: ptr(false), EventBytes: ptr[int64](65536), Split: []int{SplitInChar, 7},
	SplitGapMs: ptr(0.5), LineEnd: LineEndCRLF, Comments: ptr(true), Text: TextUTF8,
	BOM: ptr(true), MultilineData: ptr[int64](2), EventAfterData: ptr(false), WriteBytes: ptr[int64](16384),
}

func TestParseFaults(t *testing.T) {
	tests := []struct {
		spec    string
		want    Faults
		wantErr string
	}{
		{spec: "", want: Faults{}},
		{spec: "cut_after=5; no_terminal=1; status=429; stall_after=3; stall_ms=250.5; trickle=off; event_bytes=65536; " +
			"split=utf8,7; split_gap_ms=0.5; line_end=crlf; comments=yes; text=utf8; bom=1; multiline_data=2; event_after_data=no; write_bytes=16384",
			want: allFaults},
		{spec: "write_bytes=1.5", wantErr: "write_bytes=1.5: want a whole number from 0 to 2147483647"},
		{spec: " split = none ;; line_end=CR ; text=ASCII;", want: Faults{Split: []int{}, LineEnd: LineEndCR, Text: TextASCII}},
		{spec: "status=500; status=529", want: Faults{Status: ptr[int64](529)}},
		{spec: "cut=5", wantErr: `unknown fault "cut" (keys: cut_after, no_terminal,`},
		{spec: "trickle", wantErr: `"trickle": want key=value`},
		{spec: "cut_after=-1", wantErr: "cut_after=-1: want a whole number from 0 to 2147483647"},
		{spec: "stall_ms=NaN", wantErr: "stall_ms=NaN: want a non-negative number of milliseconds"},
		{spec: "comments=maybe", wantErr: "comments=maybe: want 1 or 0"},
		{spec: "split=0", wantErr: `split=0: offset "0": want utf8 or a byte offset from 1 to 1048576`},
		{spec: "split=" + strings.Repeat("1,", MaxSplitOffsets) + "1", wantErr: "17 offsets: at most 16"},
		{spec: "line_end=crcr", wantErr: "line_end=crcr: want lf, crlf or cr"},
		{spec: "text=ebcdic", wantErr: "text=ebcdic: want ascii or utf8"},
		{spec: "bom=2", wantErr: "bom=2: want 1 or 0"},
		{spec: "multiline_data=two", wantErr: "multiline_data=two: want a whole number from 0 to 2147483647"},
		{spec: "event_after_data=", wantErr: "event_after_data=: want 1 or 0"},
	}
	for _, tt := range tests {
		got, err := ParseFaults(tt.spec)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseFaults(%q) error %v, want one containing %q", tt.spec, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("ParseFaults(%q): %v", tt.spec, err)
		case !reflect.DeepEqual(got, tt.want):
			t.Errorf("ParseFaults(%q) = %q, want %q", tt.spec, got, tt.want)
		}
	}
	if back, err := ParseFaults(allFaults.String()); err != nil || !reflect.DeepEqual(back, allFaults) {
		t.Errorf("ParseFaults(%q) = %q, %v: the String form does not read back", allFaults.String(), back, err)
	}
	// -0 equals 0, so only the written form tells them apart.
	if got, err := ParseFaults("stall_ms=-0; split_gap_ms=-0.0"); err != nil || got.String() != "stall_ms=0; split_gap_ms=0" {
		t.Errorf(`ParseFaults("stall_ms=-0; split_gap_ms=-0.0") = %q, %v; want "stall_ms=0; split_gap_ms=0"`, got, err)
	}
}

// TestFaultChannels: faults set on the client's hints reach the server's
// parsers through each channel — the JSON body, the header, the prompt
// marker — and an earlier channel wins, fault by fault.
func TestFaultChannels(t *testing.T) {
	h := Hints{ID: "f-1", Faults: allFaults}
	for _, d := range Dialects {
		req, err := ParseServerRequest(AppendRequestBody(nil, d, RequestBody{Hints: h}))
		if err != nil || !reflect.DeepEqual(req.Hints.Faults, allFaults) {
			t.Errorf("%s body: faults %q, %v; want %q", d, req.Hints.Faults, err, allFaults)
		}
	}
	if got := ParseHintHeader(h.HeaderValue()); !reflect.DeepEqual(got.Faults, allFaults) {
		t.Errorf("header %q: faults %q, want %q", h.HeaderValue(), got.Faults, allFaults)
	}
	if got := FindPromptHints([]byte(h.PromptMarker())); !reflect.DeepEqual(got.Faults, allFaults) {
		t.Errorf("marker %q: faults %q, want %q", h.PromptMarker(), got.Faults, allFaults)
	}
	lim := Limits{MaxTokens: 100, MaxDelay: time.Second}
	got, err := lim.Resolve(Hints{Faults: Faults{Status: ptr[int64](500)}},
		Hints{Faults: Faults{Status: ptr[int64](429), CutAfter: ptr[int64](2)}},
		Hints{Faults: Faults{CutAfter: ptr[int64](3), LineEnd: LineEndCR}})
	want := Faults{Status: ptr[int64](500), CutAfter: ptr[int64](2), LineEnd: LineEndCR}
	if err != nil || !reflect.DeepEqual(got.Faults, want) {
		t.Errorf("Resolve merged the faults to %q, %v; want %q", got.Faults, err, want)
	}
}

// TestFaultCaps: a fault past its cap is refused with an error naming it
// as its channel spells it; a value an earlier channel overrides is not
// checked.
func TestFaultCaps(t *testing.T) {
	lim := Limits{MaxTokens: 100, MaxDelay: time.Second}
	f := func(fs Faults) Hints { return Hints{Faults: fs} }
	tests := []struct {
		name                 string
		json, header, prompt Hints
		wantErr              string
	}{
		{name: "at the caps", json: f(Faults{CutAfter: ptr[int64](100), StallAfter: ptr[int64](100), StallMs: ptr(1000.0),
			Status: ptr[int64](599), EventBytes: ptr[int64](MaxEventBytes), SplitGapMs: ptr(1000.0), MultilineData: ptr[int64](MaxDataLines),
			WriteBytes: ptr[int64](MaxWriteBytes)})},
		{name: "prompt multiline_data", prompt: f(Faults{MultilineData: ptr[int64](MaxDataLines + 1)}),
			wantErr: "multiline_data=65 in the prompt marker; the limit is 64"},
		{name: "json cut", json: f(Faults{CutAfter: ptr[int64](101)}), wantErr: "pi_cut_after 101 in the JSON body; the limit is 100"},
		{name: "header stall_after", header: f(Faults{StallAfter: ptr[int64](101)}),
			wantErr: "stall_after=101 in the X-SSE-Latency header; the limit is 100"},
		{name: "prompt stall_ms", prompt: f(Faults{StallMs: ptr(1000.5)}),
			wantErr: "stall_ms=1000.5 in the prompt marker; the limit is 1000 ms (1s)"},
		{name: "json status low", json: f(Faults{Status: ptr[int64](200)}), wantErr: "pi_status 200 in the JSON body; the limit is 400 to 599"},
		{name: "header status high", header: f(Faults{Status: ptr[int64](600)}),
			wantErr: "status=600 in the X-SSE-Latency header; the limit is 400 to 599"},
		{name: "json event bytes", json: f(Faults{EventBytes: ptr[int64](MaxEventBytes + 1)}),
			wantErr: "pi_event_bytes 1048577 in the JSON body; the limit is 1048576"},
		{name: "header write bytes", header: f(Faults{WriteBytes: ptr[int64](MaxWriteBytes + 1)}),
			wantErr: "write_bytes=1048577 in the X-SSE-Latency header; the limit is 1048576"},
		{name: "json split gap", json: f(Faults{SplitGapMs: ptr(1001.0)}),
			wantErr: "pi_split_gap_ms 1001 in the JSON body; the limit is 1000 ms (1s)"},
		{name: "overridden", json: f(Faults{Status: ptr[int64](500)}), header: f(Faults{Status: ptr[int64](1)}),
			prompt: f(Faults{Status: ptr[int64](9999)})},
	}
	for _, tt := range tests {
		_, err := lim.Resolve(tt.json, tt.header, tt.prompt)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: Resolve: %v", tt.name, err)
		case tt.wantErr != "" && (err == nil || !errors.Is(err, ErrHintAboveLimit) || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: Resolve error %v, want ErrHintAboveLimit containing %q", tt.name, err, tt.wantErr)
		}
	}
	if err := lim.CheckFaults(Faults{Status: ptr[int64](302)}); err == nil || !strings.Contains(err.Error(), "status=302 in the server's faults; the limit is 400 to 599") {
		t.Errorf("CheckFaults(status 302) = %v, want an error naming status", err)
	}
}

// TestFaultJSON: the JSON fields take their natural types, and a wrong
// type or a malformed value is a bad hint naming the field.
func TestFaultJSON(t *testing.T) {
	tests := []struct {
		body    string
		want    Faults
		wantErr string
	}{
		{body: `{"pi_split":[5,17],"pi_trickle":1,"pi_comments":false,"pi_line_end":"cr","pi_cut_after":null}`,
			want: Faults{Split: []int{5, 17}, Trickle: ptr(true), Comments: ptr(false), LineEnd: LineEndCR}},
		{body: `{"pi_split":"utf8","pi_text":"utf8","pi_stall_ms":12.5}`,
			want: Faults{Split: []int{SplitInChar}, Text: TextUTF8, StallMs: ptr(12.5)}},
		{body: `{"pi_split":[]}`, want: Faults{Split: []int{}}},
		{body: `{"pi_trickle":"yes"}`, wantErr: "pi_trickle: a string where a number or a boolean is wanted"},
		{body: `{"pi_status":"429"}`, wantErr: "pi_status: a string where a number or a boolean is wanted"},
		{body: `{"pi_cut_after":-3}`, wantErr: "pi_cut_after: cut_after=-3: want a whole number"},
		{body: `{"pi_cut_after":2.5}`, wantErr: "pi_cut_after: cut_after=2.5"},
		{body: `{"pi_split":[0]}`, wantErr: "pi_split: split=0"},
		{body: `{"pi_split":{"at":3}}`, wantErr: `pi_split: want "utf8", "none", "5,17" or an array of byte offsets`},
		{body: `{"pi_line_end":true}`, wantErr: "pi_line_end: line_end=1: want lf, crlf or cr"},
		{body: `{"pi_status":true}`, wantErr: "pi_status: a boolean where a number is wanted"},
		{body: `{"pi_cut_after":false}`, wantErr: "pi_cut_after: a boolean where a number is wanted"},
		{body: `{"pi_stall_ms":true}`, wantErr: "pi_stall_ms: a boolean where a number is wanted"},
		{body: `{"pi_no_terminal":true,"pi_comments":0}`, want: Faults{NoTerminal: ptr(true), Comments: ptr(false)}},
		{body: `{"pi_bom":true,"pi_multiline_data":2,"pi_event_after_data":1}`,
			want: Faults{BOM: ptr(true), MultilineData: ptr[int64](2), EventAfterData: ptr(true)}},
		{body: `{"pi_multiline_data":true}`, wantErr: "pi_multiline_data: a boolean where a number is wanted"},
		{body: `{"pi_event_after_data":"1"}`, wantErr: "pi_event_after_data: a string where a number or a boolean is wanted"},
	}
	for _, tt := range tests {
		req, err := ParseServerRequest([]byte(tt.body))
		switch {
		case tt.wantErr != "":
			if err == nil || !errors.Is(err, ErrBadHint) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseServerRequest(%s) error %v, want ErrBadHint containing %q", tt.body, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("ParseServerRequest(%s): %v", tt.body, err)
		case !reflect.DeepEqual(req.Hints.Faults, tt.want):
			t.Errorf("ParseServerRequest(%s) faults %q, want %q", tt.body, req.Hints.Faults, tt.want)
		}
	}
}

// TestUTF8Text: the UTF-8 words are 4 bytes of valid UTF-8, two 2-byte
// characters each, distinct within their period of 26 and repeating
// after it, and the encoders stream them where the text goes.
func TestUTF8Text(t *testing.T) {
	seen := map[string]int{}
	for i := range 52 {
		w := string(AppendText(nil, TextUTF8, i))
		if len(w) != TokenLen || !utf8.ValidString(w) || utf8.RuneCountInString(w) != 2 {
			t.Fatalf("UTF-8 word %d = %q: want 2 characters in %d bytes", i, w, TokenLen)
		}
		if j, ok := seen[w]; ok && j != i-26 {
			t.Errorf("UTF-8 words %d and %d are both %q", j, i, w)
		}
		seen[w] = i
		if got := string(AppendText(nil, TextASCII, i)); got != Token(i) {
			t.Errorf("AppendText(ASCII, %d) = %q, want %q", i, got, Token(i))
		}
	}
	if got := string(AppendText(nil, TextUTF8, 0)); got != "ан" {
		t.Errorf("UTF-8 word 0 = %q, want \"ан\" (anan's a and n)", got)
	}
	for _, d := range Dialects {
		e := NewEncoder(d, Answer{Tokens: 2, Text: TextUTF8})
		ev := string(e.AppendToken(nil, 1, 1))
		body := string(e.AppendBody(nil))
		w1 := string(AppendText(nil, TextUTF8, 1))
		if !strings.Contains(ev, w1) || !strings.Contains(body, string(AppendText(nil, TextUTF8, 0))+w1) {
			t.Errorf("%s: token event %q or body %q lacks the UTF-8 words", d, ev, body)
		}
	}
}

func FuzzParseFaults(f *testing.F) {
	for _, s := range []string{
		allFaults.String(),
		"split=utf8,utf8,1; line_end=lf; text=utf8",
		"status=99999999999; stall_ms=1e309; cut_after=;",
		"=;;split=,; x=y",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		fs, err := ParseFaults(spec)
		if err != nil {
			return
		}
		checkFaults(t, "ParseFaults("+spec+")", fs)
		back, err := ParseFaults(fs.String())
		if err != nil || !reflect.DeepEqual(back, fs) {
			t.Fatalf("ParseFaults(%q) = %q, but its String %q reads back as %q, %v", spec, fs, fs.String(), back, err)
		}
		// The lenient header parser reads the same faults.
		if h := ParseHintHeader(fs.String()); !reflect.DeepEqual(h.Faults, fs) {
			t.Fatalf("ParseHintHeader(%q) faults %q, want %q", fs.String(), h.Faults, fs)
		}
	})
}
