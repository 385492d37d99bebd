package wire

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestParseServerTiming(t *testing.T) {
	dur := func(name string, d float64) ServerTimingMetric {
		return ServerTimingMetric{Name: name, Dur: d, HasDur: true}
	}
	tests := []struct {
		in   string
		want []ServerTimingMetric
	}{
		{"", nil},
		{"miss", []ServerTimingMetric{{Name: "miss"}}},
		{"db;dur=53", []ServerTimingMetric{dur("db", 53)}},
		{`cache;desc="Cache Read";dur=23.2, db;dur=53, app;dur=47.2`,
			[]ServerTimingMetric{{Name: "cache", Dur: 23.2, HasDur: true, Desc: "Cache Read"}, dur("db", 53), dur("app", 47.2)}},
		{"gw ; DUR = 1.5 ; desc=proxy", []ServerTimingMetric{{Name: "gw", Dur: 1.5, HasDur: true, Desc: "proxy"}}},
		// Quoted strings: separators and escapes inside them.
		{`a;desc="x, y; z";dur=2, b`, []ServerTimingMetric{{Name: "a", Dur: 2, HasDur: true, Desc: "x, y; z"}, {Name: "b"}}},
		{`a;desc="say \"hi\" \\ ok"`, []ServerTimingMetric{{Name: "a", Desc: `say "hi" \ ok`}}},
		// The first dur and desc count, even when the first dur is invalid.
		{"a;dur=1;dur=2;desc=x;desc=y", []ServerTimingMetric{{Name: "a", Dur: 1, HasDur: true, Desc: "x"}}},
		{"a;dur=abc;dur=2", []ServerTimingMetric{{Name: "a"}}},
		{"a;dur=1e999", []ServerTimingMetric{{Name: "a"}}},
		{"a;dur=NaN", []ServerTimingMetric{{Name: "a"}}},
		{`a;dur="7"`, []ServerTimingMetric{dur("a", 7)}},
		// Skipped: a name that is not a token, a parameter without =, an
		// unterminated quoted value; unknown parameters are ignored.
		{`"quoted";dur=1, ok;dur=2`, []ServerTimingMetric{dur("ok", 2)}},
		{"a b;dur=1, c;dur", []ServerTimingMetric{{Name: "c"}}},
		{`a;desc="open;dur=4`, []ServerTimingMetric{{Name: "a"}}},
		{"a;foo=bar;dur=3", []ServerTimingMetric{dur("a", 3)}},
		{",,a,,", []ServerTimingMetric{{Name: "a"}}},
		{"a;dur=-2", []ServerTimingMetric{dur("a", -2)}},
	}
	for _, tt := range tests {
		if got := ParseServerTiming(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseServerTiming(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
	many := strings.Repeat("m;dur=1, ", MaxServerTimingMetrics+5)
	if got := len(ParseServerTiming(many)); got != MaxServerTimingMetrics {
		t.Errorf("ParseServerTiming of %d metrics returned %d, want the first %d", MaxServerTimingMetrics+5, got, MaxServerTimingMetrics)
	}
}

func TestServerTimingRoundTrip(t *testing.T) {
	in := []ServerTimingMetric{
		{Name: "gateway", Dur: 0.125, HasDur: true},
		{Name: "upstream", Dur: 41, HasDur: true, Desc: `model "x", region; eu\1`},
		{Name: "cache-hit"},
	}
	v := string(AppendServerTiming(nil, in))
	if got := ParseServerTiming(v); !reflect.DeepEqual(got, in) {
		t.Errorf("ParseServerTiming(AppendServerTiming(%+v) = %q) = %+v", in, v, got)
	}
}

// FuzzServerTiming: any value parses without panicking into at most
// MaxServerTimingMetrics metrics with token names and finite durations,
// and what it returns, written back, parses to the same metrics.
func FuzzServerTiming(f *testing.F) {
	for _, s := range []string{
		`cache;desc="Cache Read";dur=23.2, db;dur=53, app;dur=47.2`,
		"litellm;dur=0.81, upstream;dur=12",
		`a;desc="x, y; z";dur=2, b`,
		`a;desc="unterminated`,
		`a;desc="esc \" \\";dur=1e3`,
		"total;dur=123.4;desc=\"Total\"",
		",;=\"\\",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		ms := ParseServerTiming(v)
		if len(ms) > MaxServerTimingMetrics {
			t.Fatalf("%d metrics", len(ms))
		}
		for _, m := range ms {
			if !validToken(m.Name) || (m.HasDur && (math.IsNaN(m.Dur) || math.IsInf(m.Dur, 0))) || (!m.HasDur && m.Dur != 0) {
				t.Fatalf("metric %+v of %q", m, v)
			}
		}
		back := string(AppendServerTiming(nil, ms))
		if again := ParseServerTiming(back); !reflect.DeepEqual(again, ms) && !(len(again) == 0 && len(ms) == 0) {
			t.Fatalf("ParseServerTiming(%q) = %+v; written back as %q it parses to %+v", v, ms, back, again)
		}
	})
}
