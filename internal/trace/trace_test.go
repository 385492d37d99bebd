package trace

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

const mooncakeSample = `{"timestamp": 0, "input_length": 1024, "output_length": 20, "hash_ids": [0, 1]}
{"timestamp": 250, "input_length": 1536, "output_length": 5, "hash_ids": [0, 1, 2]}

{"timestamp": 100.5, "input_tokens": 40, "output_tokens": 3, "hash_ids": ["9f86d081884c7d65"], "session_id": "s1"}
`

const burstSample = `Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
5,ChatGPT,472,18,490,Conversation log
5.75,GPT-4,1087,230,1317,API log
6,"ChatGPT",20,4,24,"Conversation log"
`

func TestParseMooncake(t *testing.T) {
	tr, err := Parse(strings.NewReader(mooncakeSample), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Format != Mooncake || !tr.Sorted || tr.Lines != 4 || tr.Skipped != 0 {
		t.Errorf("format %s, sorted %v, %d lines, %d skipped; want mooncake, sorted, 4 lines, none skipped", tr.Format, tr.Sorted, tr.Lines, tr.Skipped)
	}
	want := []Entry{
		{Line: 1, AtNs: 0, Input: 1024, Output: 20, Blocks: []uint64{0, 1}},
		{Line: 4, AtNs: 100_500_000, Input: 40, Output: 3, Blocks: []uint64{0x9f86d081884c7d65 >> 1}},
		{Line: 2, AtNs: 250_000_000, Input: 1536, Output: 5, Blocks: []uint64{0, 1, 2}},
	}
	if len(tr.Entries) != len(want) {
		t.Fatalf("%d entries, want %d", len(tr.Entries), len(want))
	}
	for i, e := range tr.Entries {
		w := want[i]
		if e.Line != w.Line || e.AtNs != w.AtNs || e.Input != w.Input || e.Output != w.Output || len(e.Blocks) != len(w.Blocks) {
			t.Errorf("entry %d = %+v, want %+v", i, e, w)
		}
	}
	if tr.Entries[0].Blocks[1] != 1 || tr.Entries[1].Blocks[0] == 0 {
		t.Errorf("blocks %v %v", tr.Entries[0].Blocks, tr.Entries[1].Blocks)
	}
}

func TestParseBurstGPT(t *testing.T) {
	tr, err := Parse(strings.NewReader(burstSample), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Format != BurstGPT || tr.Sorted || len(tr.Entries) != 3 {
		t.Fatalf("format %s, sorted %v, %d entries; want burstgpt, in order, 3", tr.Format, tr.Sorted, len(tr.Entries))
	}
	// Offsets from the first request, at 5 s.
	for i, w := range []Entry{{Line: 2, AtNs: 0, Input: 472, Output: 18}, {Line: 3, AtNs: 750_000_000, Input: 1087, Output: 230}, {Line: 4, AtNs: 1e9, Input: 20, Output: 4}} {
		if e := tr.Entries[i]; e.Line != w.Line || e.AtNs != w.AtNs || e.Input != w.Input || e.Output != w.Output || e.Blocks != nil {
			t.Errorf("entry %d = %+v, want %+v", i, e, w)
		}
	}
}

// TestBadLines: every bad line is an error naming its line and field, or
// with SkipBad is skipped and counted.
func TestBadLines(t *testing.T) {
	good := `{"timestamp": 1, "input_length": 10, "output_length": 2}` + "\n"
	for _, tc := range []struct {
		name, line, want string
	}{
		{"not JSON", `{"timestamp": 1,`, "line 2: not a JSON object"},
		{"no timestamp", `{"input_length": 10, "output_length": 2}`, "line 2: timestamp: missing"},
		{"negative timestamp", `{"timestamp": -1, "input_length": 10, "output_length": 2}`, "line 2: timestamp: -1 is outside"},
		{"absurd timestamp", `{"timestamp": 1e15, "input_length": 10, "output_length": 2}`, "line 2: timestamp: 1e15 is outside"},
		{"string timestamp", `{"timestamp": "now", "input_length": 10, "output_length": 2}`, `line 2: timestamp: "now" is not a number`},
		{"zero input", `{"timestamp": 1, "input_length": 0, "output_length": 2}`, "line 2: input_length: 0 is outside 1..1000"},
		{"huge input", `{"timestamp": 1, "input_length": 1001, "output_length": 2}`, "line 2: input_length: 1001 is outside"},
		{"fractional output", `{"timestamp": 1, "input_length": 10, "output_length": 2.5}`, "line 2: output_length: 2.5 is not a whole number"},
		{"negative output", `{"timestamp": 1, "input_length": 10, "output_length": -2}`, "line 2: output_length: -2 is outside"},
		{"hash_ids not an array", `{"timestamp": 1, "input_length": 10, "output_length": 2, "hash_ids": 3}`, "line 2: hash_ids: not an array"},
		{"negative hash id", `{"timestamp": 1, "input_length": 10, "output_length": 2, "hash_ids": [1, -3]}`, "line 2: hash_ids[1]: -3"},
		{"long string id", `{"timestamp": 1, "input_length": 10, "output_length": 2, "hash_ids": ["` + strings.Repeat("a", 65) + `"]}`, "line 2: hash_ids[0]"},
		{"a line too long", `{"timestamp": 1, "x": "` + strings.Repeat("a", MaxLineBytes) + `"}`, "line 2: longer than"},
	} {
		text := good + tc.line + "\n" + good
		_, err := Parse(strings.NewReader(text), Options{MaxInput: 1000, MaxOutput: 100})
		if err == nil || !errors.Is(err, ErrLine) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Parse = %v; want an error containing %q", tc.name, err, tc.want)
			continue
		}
		tr, err := Parse(strings.NewReader(text), Options{MaxInput: 1000, MaxOutput: 100, SkipBad: true})
		if err != nil || len(tr.Entries) != 2 || tr.Skipped != 1 || !strings.Contains(tr.FirstSkipped, tc.want) {
			t.Errorf("%s, skipping: %v, %d entries, %d skipped (%q); want 2 entries, 1 skipped", tc.name, err, len(tr.Entries), tr.Skipped, tr.FirstSkipped)
		}
	}
	for _, tc := range []struct {
		name, text, want string
	}{
		{"empty", "\n\n", "the file is empty"},
		{"a CSV without the columns", "a,b,c\n1,2,3\n", "neither a JSON object"},
		{"a failed BurstGPT row", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,ChatGPT,10,0,10,API log\n", "line 2: Response tokens: 0 is outside 1..100 (a failed request"},
		{"a short BurstGPT row", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,ChatGPT,10\n", "line 2: 3 fields, the header names 6"},
	} {
		if _, err := Parse(strings.NewReader(tc.text), Options{MaxInput: 1000, MaxOutput: 100}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Parse = %v; want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestLimit(t *testing.T) {
	tr, err := Parse(strings.NewReader(mooncakeSample), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Offsets 0, 100.5 ms and 250 ms.
	for _, tc := range []struct {
		limit    int
		speed    float64
		duration int64
		want     int
	}{
		{0, 1, 0, 3},
		{2, 1, 0, 2},
		{5, 1, 0, 3},
		{0, 1, 200e6, 2},   // 250 ms is past 200 ms
		{0, 2, 200e6, 3},   // at twice the speed 250 ms is 125 ms
		{0, 0.5, 200e6, 1}, // at half the speed 100.5 ms is 201 ms
		{1, 2, 200e6, 1},
	} {
		if got := tr.Limit(tc.limit, tc.speed, tc.duration); got != tc.want {
			t.Errorf("Limit(%d, %v, %d) = %d, want %d", tc.limit, tc.speed, tc.duration, got, tc.want)
		}
	}
	if got := ScaledNs(250e6, 2.5); got != 100e6 {
		t.Errorf("ScaledNs(250ms, 2.5) = %d, want 100ms", got)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(mooncakeSample)
	f.Add(burstSample)
	f.Add(`{"timestamp":1e300,"input_length":1,"output_length":1,"hash_ids":[18446744073709551615]}`)
	f.Add("Timestamp,Request tokens,Response tokens\n\"1\",2,3\n")
	f.Fuzz(func(t *testing.T, text string) {
		for _, skip := range []bool{false, true} {
			tr, err := Parse(strings.NewReader(text), Options{MaxInput: 1 << 20, MaxOutput: 1e6, SkipBad: skip})
			if err != nil {
				continue
			}
			if !slices.IsSortedFunc(tr.Entries, func(a, b Entry) int { return cmpInt(a.AtNs, b.AtNs) }) {
				t.Fatalf("entries out of order")
			}
			for _, e := range tr.Entries {
				if e.AtNs < 0 || e.Input < 1 || e.Input > 1<<20 || e.Output < 1 || e.Output > 1e6 || len(e.Blocks) > MaxBlocks || e.Line < 1 || e.Line > tr.Lines {
					t.Fatalf("entry out of bounds: %s", fmt.Sprint(e))
				}
			}
		}
	})
}
