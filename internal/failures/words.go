package failures

import (
	"fmt"
	"strings"

	"github.com/sse-latency/sse-latency/internal/result"
)

// HeadlineGroups is how many groups the headline names; the others it
// counts.
const HeadlineGroups = 3

// Duration words a duration in nanoseconds for the reports: "0.4 ms",
// "181.0 ms", "2.0 s".
func Duration(ns int64) string {
	if ns < 1_000_000_000 {
		return fmt.Sprintf("%.1f ms", float64(ns)/1e6)
	}
	return fmt.Sprintf("%.1f s", float64(ns)/1e9)
}

// At words a time from the batch's start: "+2.013 s".
func At(ns int64) string { return fmt.Sprintf("+%.3f s", float64(ns)/1e9) }

// Phrase words one group for the verdict's headline: its title, and for
// the kinds that cut a stream once tokens may have arrived (Kind.MidStream)
// how long the requests had run and how many tokens they had, p50 —
// "connection reset mid-stream after 2.0 s p50 (181 tokens p50)".
func Phrase(g *GroupSummary) string {
	k, _ := ParseKind(g.Kind)
	title := Sanitize(g.Title)
	if !k.MidStream() && g.Tokens.Max == 0 {
		return title
	}
	return fmt.Sprintf("%s after %s p50 (%d tokens p50)", title, Duration(g.AgeNs.P50), g.Tokens.P50)
}

// Headline is the verdict's first line when requests of the batch failed,
// "" when none did. The gateway's failures lead — "gateway failed 400 of
// 400 requests: connection reset mid-stream after 2.0 s p50 (181 tokens
// p50)", each group followed by its count when there are several — then
// those of the tool's own limits, then the interrupted requests, which are
// not the gateway's doing. At most HeadlineGroups groups are named in
// each part; the others are counted.
func Headline(s *Summary) string {
	if s == nil || s.Failed == 0 {
		return ""
	}
	var gw, tool, stopped []*GroupSummary
	for i := range s.Groups {
		g := &s.Groups[i]
		switch k, _ := ParseKind(g.Kind); {
		case k == Interrupted:
			stopped = append(stopped, g)
		case k == ToolLimit:
			tool = append(tool, g)
		default:
			gw = append(gw, g)
		}
	}
	var parts []string
	if n := count(gw); n > 0 {
		parts = append(parts, fmt.Sprintf("gateway failed %d of %d requests: %s", n, s.Requests, phrases(gw)))
	}
	if n := count(tool); n > 0 {
		what := fmt.Sprintf("%d of %d requests", n, s.Requests)
		if len(parts) > 0 {
			what = fmt.Sprint(n)
		}
		parts = append(parts, fmt.Sprintf("%s failed on sse-latency's own limits: %s", what, examples(tool)))
	}
	if n := count(stopped); n > 0 {
		what := fmt.Sprintf("%d of %d requests", n, s.Requests)
		if len(parts) > 0 {
			what = fmt.Sprint(n)
		}
		parts = append(parts, what+" interrupted: the run was stopped")
	}
	return strings.Join(parts, "; ")
}

// count is the failures of the groups.
func count(gs []*GroupSummary) int {
	n := 0
	for _, g := range gs {
		n += g.Count
	}
	return n
}

// phrases words the groups: one alone, several each with its count, at
// most HeadlineGroups of them and the number of the others.
func phrases(gs []*GroupSummary) string {
	if len(gs) == 1 {
		return Phrase(gs[0])
	}
	var out []string
	for i, g := range gs {
		if i == HeadlineGroups {
			out = append(out, fmt.Sprintf("and %d of %d other kinds", count(gs[i:]), len(gs)-i))
			break
		}
		out = append(out, fmt.Sprintf("%s (%d)", Phrase(g), g.Count))
	}
	return strings.Join(out, ", ")
}

// examples words the tool-limit groups by their example messages (which
// say which limit: "connect(): Too many open files").
func examples(gs []*GroupSummary) string {
	var out []string
	for i, g := range gs {
		if i == HeadlineGroups {
			out = append(out, fmt.Sprintf("and %d more", count(gs[i:])))
			break
		}
		text := Sanitize(g.Example)
		if len(gs) > 1 {
			text += fmt.Sprintf(" (%d)", g.Count)
		}
		out = append(out, text)
	}
	return strings.Join(out, ", ")
}

// Describe words one failed request as the reports name its group, with
// its own message, sanitised: "connection closed mid-stream after 3 tokens
// (connection closed before [DONE])", "connection refused (connect():
// Connection refused)"; "" for a request that did not fail. Package check
// words the failures of its scenarios so.
func Describe(r *result.Request) string {
	k := KeyOf(r)
	if k.Kind == None {
		return ""
	}
	what := k.Title()
	if n := len(r.Tokens); k.Kind.MidStream() || n > 0 {
		what += fmt.Sprintf(" after %d %s", n, map[bool]string{true: "token", false: "tokens"}[n == 1])
	}
	return what + " (" + Sanitize(r.Failure.Error()) + ")"
}
