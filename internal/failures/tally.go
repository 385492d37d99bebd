package failures

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"

	"github.com/sse-latency/sse-latency/internal/result"
)

// Key identifies a group of failures: its kind, and for HTTPStatus the
// status code (0 for the other kinds, and for a status that does not
// read).
type Key struct {
	Kind   Kind
	Status int
}

// Title returns the group's words in the reports: the kind's title, for an
// HTTP status "HTTP 502 Bad Gateway" (the reason phrase is the standard's,
// never the gateway's own text).
func (k Key) Title() string {
	if k.Kind != HTTPStatus || k.Status == 0 {
		return k.Kind.Title()
	}
	t := "HTTP " + strconv.Itoa(k.Status)
	if reason := http.StatusText(k.Status); reason != "" {
		t += " " + reason
	}
	return t
}

// KeyOf returns the group of r's failure (Kind None for a request that did
// not fail).
func KeyOf(r *result.Request) Key {
	k := Key{Kind: Of(r)}
	if k.Kind == HTTPStatus {
		k.Status = StatusOf(r)
	}
	return k
}

// Group is the failures of one group of a batch.
type Group struct {
	Key
	Count int
	// First and Last are when the first and the last of them ended
	// (result.Request.End, on the process clock: epoch nanoseconds).
	First, Last int64
	// Example is the failure text (result.Failure.Error) of the first of
	// them, sanitised (Sanitize).
	Example string
	// Tokens is how many tokens (all phases) each had received; Age how
	// long each had run when it failed, End − Start, in nanoseconds.
	Tokens, Age Dist
}

// Shape is how the failures of a group were spread over the run.
type Shape int

// The shapes a group can have (Group.Shapes), besides Any, which every
// group has (an advice row for all of them).
const (
	Any      Shape = iota
	Together       // two or more, all ended within TogetherNs of one another
	// SameAge: two or more, not Together, each after about the same time
	// (within SameAgeFraction of the median, which is at least
	// SameAgeMinNs). Streams started together and cut together are
	// Together only: one event cut them, whatever their age.
	SameAge
)

// The bounds of the shapes.
const (
	// TogetherNs: failures that all end within a second of one another
	// came from one event — the gateway went away, or restarted — rather
	// than from each request's own course.
	TogetherNs = 1_000_000_000
	// SameAgeFraction and SameAgeMinNs: streams cut each after the same
	// time (the spread of their ages within 10 % of the median, which is
	// a second or more) met a limit on a response's duration.
	SameAgeFraction = 0.1
	SameAgeMinNs    = 1_000_000_000
)

// Shapes returns the shapes g has besides Any: Together, SameAge or
// neither.
func (g *Group) Shapes() []Shape {
	return shapes(g.Count, g.Last-g.First, g.Age.Min(), g.Age.Percentile(0.5), g.Age.Max())
}

// Shapes returns the shapes g has besides Any (as Group.Shapes).
func (g *GroupSummary) Shapes() []Shape {
	return shapes(g.Count, g.LastNs-g.FirstNs, g.AgeNs.Min, g.AgeNs.P50, g.AgeNs.Max)
}

// shapes are the shapes of count failures that ended within span of one
// another, whose ages had that minimum, median and maximum.
func shapes(count int, span, minAge, p50Age, maxAge int64) []Shape {
	switch {
	case count < 2:
		return nil
	case span <= TogetherNs:
		return []Shape{Together}
	case p50Age >= SameAgeMinNs && float64(maxAge-minAge) <= SameAgeFraction*float64(p50Age):
		return []Shape{SameAge}
	}
	return nil
}

// Tally counts the failures of one batch by group, and its requests. Add
// is called once per finished request (warm-ups left out), one call at a
// time.
type Tally struct {
	// Requests and Failed are the requests added and those that failed.
	Requests, Failed int
	// Start is when the batch's first request started (the earliest
	// result.Request.Start), 0 before any; the reports give the groups'
	// times from it.
	Start  int64
	groups map[Key]*Group
}

// NewTally returns an empty Tally.
func NewTally() *Tally { return &Tally{groups: make(map[Key]*Group)} }

// Add counts r: a request, and when it failed, a failure of its group.
func (t *Tally) Add(r *result.Request) {
	t.Requests++
	if r.Start > 0 && (t.Start == 0 || r.Start < t.Start) {
		t.Start = r.Start
	}
	k := KeyOf(r)
	if k.Kind == None {
		return
	}
	t.Failed++
	at := cmp.Or(r.End, r.Start)
	g := t.group(k)
	if g.Count == 0 || at < g.First {
		g.First, g.Example = at, Sanitize(r.Failure.Error())
	}
	g.Last = max(g.Last, at)
	g.Count++
	g.Tokens.Add(int64(len(r.Tokens)))
	if r.Start > 0 && r.End >= r.Start {
		g.Age.Add(r.End - r.Start)
	} else {
		g.Age.Add(0)
	}
}

// group returns the group of k, creating it if needed.
func (t *Tally) group(k Key) *Group {
	if t.groups == nil {
		t.groups = make(map[Key]*Group)
	}
	g := t.groups[k]
	if g == nil {
		g = &Group{Key: k}
		t.groups[k] = g
	}
	return g
}

// Merge adds everything o counted to t: requests and failures summed, the
// batch's start the earliest, each group's first time the earliest (with
// its example), its last the latest, its distributions merged.
func (t *Tally) Merge(o *Tally) {
	if o == nil {
		return
	}
	t.Requests += o.Requests
	t.Failed += o.Failed
	if o.Start > 0 && (t.Start == 0 || o.Start < t.Start) {
		t.Start = o.Start
	}
	for _, og := range o.groups {
		g := t.group(og.Key)
		if g.Count == 0 || og.First < g.First {
			g.First, g.Example = og.First, og.Example
		}
		g.Last = max(g.Last, og.Last)
		g.Count += og.Count
		g.Tokens.Merge(&og.Tokens)
		g.Age.Merge(&og.Age)
	}
}

// Groups returns copies of the groups, the most frequent first; of as
// many, the one that began first (a gateway that died cut its streams,
// then refused the next requests), then in the order of their kinds, then
// by status.
func (t *Tally) Groups() []Group {
	out := make([]Group, 0, len(t.groups))
	for _, k := range slices.SortedFunc(maps.Keys(t.groups), compareKeys) {
		out = append(out, *t.groups[k])
	}
	slices.SortStableFunc(out, func(a, b Group) int { return cmp.Or(b.Count-a.Count, cmp.Compare(a.First, b.First)) })
	return out
}

// compareKeys orders keys by kind, then status.
func compareKeys(a, b Key) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Status, b.Status))
}

// Share returns the share of the batch's requests that g's are, 0 for a
// batch without requests.
func (t *Tally) Share(g *Group) float64 {
	if t.Requests == 0 {
		return 0
	}
	return float64(g.Count) / float64(t.Requests)
}

// String describes the tally briefly, for test messages.
func (t *Tally) String() string {
	s := fmt.Sprintf("%d of %d failed:", t.Failed, t.Requests)
	for _, g := range t.Groups() {
		s += fmt.Sprintf(" %s×%d", g.Title(), g.Count)
	}
	return s
}
