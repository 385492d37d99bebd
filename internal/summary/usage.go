package summary

import (
	"cmp"
	"slices"

	"github.com/sse-latency/sse-latency/internal/result"
)

// Usage is how a batch's usage objects arrived: how many requests
// received usage, how many of those were compared with what the server
// reported (in process: its record of each request), how many arrived
// intact, and the findings — each field a gateway changed, dropped,
// zeroed from null or recomputed — with how many requests had each.
type Usage struct {
	Received int            `json:"received"`
	Compared int            `json:"compared"`
	Intact   int            `json:"intact"`
	Findings []UsageFinding `json:"findings"`
}

// UsageFinding is one finding of the usage comparison and how many
// requests had it, with the values of the first: what the server sent
// and what arrived, as JSON ("" for absent). Field "" is the whole
// object, Part, missing.
type UsageFinding struct {
	Kind  string `json:"kind"` // result.UsageKind.String(): changed, dropped, zeroed_from_null, recomputed
	Part  string `json:"part"` // the usage object: "usage chunk", "response.completed", "message_start", "message_delta"
	Field string `json:"field"`
	Sent  string `json:"sent"`
	Got   string `json:"got"`
	Count int    `json:"count"`
}

// maxUsageFindings bounds the distinct findings a batch keeps.
const maxUsageFindings = 32

// UsageCollector gathers a batch's usage figures, once per finished
// request.
type UsageCollector struct{ u Usage }

// NewUsageCollector returns an empty UsageCollector.
func NewUsageCollector() *UsageCollector {
	return &UsageCollector{u: Usage{Findings: []UsageFinding{}}}
}

// Add folds one request in.
func (c *UsageCollector) Add(r *result.Request) {
	u := r.Usage
	if u == nil {
		return
	}
	if len(u.Received) > 0 {
		c.u.Received++
	}
	if !u.Compared {
		return
	}
	c.u.Compared++
	if len(u.Findings) == 0 {
		c.u.Intact++
	}
	for _, f := range u.Findings {
		c.u.Findings = addFinding(c.u.Findings, UsageFinding{Kind: f.Kind.String(), Part: f.Part, Field: f.Field, Sent: f.Sent, Got: f.Got, Count: 1})
	}
}

// addFinding counts f among fs, by kind, part and field.
func addFinding(fs []UsageFinding, f UsageFinding) []UsageFinding {
	for i := range fs {
		if fs[i].Kind == f.Kind && fs[i].Part == f.Part && fs[i].Field == f.Field {
			fs[i].Count += f.Count
			return fs
		}
	}
	if len(fs) >= maxUsageFindings {
		return fs
	}
	return append(fs, f)
}

// Usage returns what c gathered, findings most frequent first; nil when
// no request received or was to receive usage.
func (c *UsageCollector) Usage() *Usage {
	if c.u.Received == 0 && c.u.Compared == 0 {
		return nil
	}
	u := c.u
	u.Findings = slices.Clone(u.Findings)
	slices.SortStableFunc(u.Findings, func(a, b UsageFinding) int { return cmp.Compare(b.Count, a.Count) })
	return &u
}

// Requests is the number of requests that had a finding at all: compared
// and not intact.
func (u *Usage) Requests() int { return u.Compared - u.Intact }

// MergeUsage adds the usage figures of parallel runs' batches; nil when
// none has any.
func MergeUsage(all []*Usage) *Usage {
	var out *Usage
	for _, u := range all {
		if u == nil {
			continue
		}
		if out == nil {
			out = &Usage{Findings: []UsageFinding{}}
		}
		out.Received += u.Received
		out.Compared += u.Compared
		out.Intact += u.Intact
		for _, f := range u.Findings {
			out.Findings = addFinding(out.Findings, f)
		}
	}
	if out != nil {
		slices.SortStableFunc(out.Findings, func(a, b UsageFinding) int { return cmp.Compare(b.Count, a.Count) })
	}
	return out
}
