package failures

import (
	"errors"
	"fmt"
)

// Summary is a Tally as the run document saves it (each batch's
// failure_summary): the batch's requests and failures, when its first
// request started, and its groups, the most frequent first, with their
// times from that start. Summary.Tally rebuilds the Tally, exactly: merged
// runs (rundoc.Merge) have the summary one run of all their requests would
// have had.
type Summary struct {
	Requests int            `json:"requests"`      // the batch's requests, the shares' denominator
	Failed   int            `json:"failed"`        // of which failed: the groups' counts add up to it
	StartNs  int64          `json:"start_unix_ns"` // when the batch's first request started, Unix time in ns (the process clock); 0 without requests
	Groups   []GroupSummary `json:"groups"`
}

// GroupSummary is one group of a Summary.
type GroupSummary struct {
	Kind    string  `json:"kind"`             // Kind.String()
	Status  int     `json:"status,omitempty"` // kind http_status: the status code; absent when it did not read
	Title   string  `json:"title"`            // Key.Title(): what the reports call the group
	Count   int     `json:"count"`
	Share   float64 `json:"share"`    // count / requests
	FirstNs int64   `json:"first_ns"` // when the first of them ended, from start_unix_ns
	LastNs  int64   `json:"last_ns"`  // when the last of them ended, from start_unix_ns
	Example string  `json:"example"`  // the failure text of the first, sanitised (Sanitize)
	// Tokens: the tokens each had received (all phases); AgeNs: how long
	// each had run when it failed (its end − its start), ns.
	Tokens DistSummary `json:"tokens"`
	AgeNs  DistSummary `json:"age_ns"`
}

// Summary returns t's saved form.
func (t *Tally) Summary() *Summary {
	s := &Summary{Requests: t.Requests, Failed: t.Failed, StartNs: t.Start, Groups: []GroupSummary{}}
	for _, g := range t.Groups() {
		s.Groups = append(s.Groups, GroupSummary{
			Kind: g.Kind.String(), Status: g.Status, Title: g.Title(), Count: g.Count, Share: t.Share(&g),
			FirstNs: g.First - t.Start, LastNs: g.Last - t.Start, Example: g.Example,
			Tokens: g.Tokens.Summary(), AgeNs: g.Age.Summary(),
		})
	}
	return s
}

// ErrSummary is wrapped by every error of Summary.Tally.
var ErrSummary = errors.New("invalid failure summary")

// Tally rebuilds the Tally s was made from, after checking it: known kinds
// with their titles, one group per key, counts that add up to failed (no
// more than the requests), times in order, an example that Sanitize leaves
// as it is, and distributions of count samples each (DistSummary.Dist).
// Its errors name the group.
func (s *Summary) Tally() (*Tally, error) {
	if s.Requests < 0 || s.Failed < 0 || s.Failed > s.Requests || s.StartNs < 0 {
		return nil, fmt.Errorf("%w: requests=%d, failed=%d, start_unix_ns=%d: want 0 <= failed <= requests and a start >= 0",
			ErrSummary, s.Requests, s.Failed, s.StartNs)
	}
	t := &Tally{Requests: s.Requests, Failed: s.Failed, Start: s.StartNs, groups: make(map[Key]*Group, len(s.Groups))}
	total := 0
	for i := range s.Groups {
		g, err := s.Groups[i].group(s.StartNs)
		if err != nil {
			return nil, fmt.Errorf("%w: groups[%d] (%s): %v", ErrSummary, i, s.Groups[i].Kind, err)
		}
		if t.groups[g.Key] != nil {
			return nil, fmt.Errorf("%w: groups[%d] (%s): a second group of that kind and status", ErrSummary, i, s.Groups[i].Kind)
		}
		t.groups[g.Key] = g
		total += g.Count
	}
	if total != s.Failed {
		return nil, fmt.Errorf("%w: the groups count %d failures, failed says %d", ErrSummary, total, s.Failed)
	}
	return t, nil
}

// group checks gs and returns its Group, its times made absolute from
// start.
func (gs *GroupSummary) group(start int64) (*Group, error) {
	k, ok := ParseKind(gs.Kind)
	if !ok {
		return nil, fmt.Errorf("unknown kind %q", gs.Kind)
	}
	key := Key{Kind: k, Status: gs.Status}
	switch {
	case gs.Status != 0 && (k != HTTPStatus || gs.Status < 100 || gs.Status > 999):
		return nil, fmt.Errorf("status %d: only an http_status group has one, from 100 to 999", gs.Status)
	case gs.Title != key.Title():
		return nil, fmt.Errorf("title %q, want %q", gs.Title, key.Title())
	case gs.Count <= 0:
		return nil, fmt.Errorf("count %d", gs.Count)
	case gs.FirstNs < 0 || gs.LastNs < gs.FirstNs:
		return nil, fmt.Errorf("first_ns %d, last_ns %d: want 0 <= first <= last", gs.FirstNs, gs.LastNs)
	case len(gs.Example) > ExampleBytes || !Clean(gs.Example):
		return nil, fmt.Errorf("example %q: longer than %d bytes, or with control characters", Sanitize(gs.Example), ExampleBytes)
	}
	g := &Group{Key: key, Count: gs.Count, First: start + gs.FirstNs, Last: start + gs.LastNs, Example: gs.Example}
	for _, d := range []struct {
		name string
		src  *DistSummary
		dst  *Dist
	}{{"tokens", &gs.Tokens, &g.Tokens}, {"age_ns", &gs.AgeNs, &g.Age}} {
		dist, err := d.src.Dist()
		if err != nil {
			return nil, fmt.Errorf("%s: %v", d.name, err)
		}
		if dist.N() != int64(gs.Count) {
			return nil, fmt.Errorf("%s: n is %d for %d failures", d.name, dist.N(), gs.Count)
		}
		*d.dst = *dist
	}
	return g, nil
}
