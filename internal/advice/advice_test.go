package advice

import (
	"slices"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/gateway"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// TestEveryRowRendered asks For every row of the table: the row's own
// gateway gets exactly that row, and nothing of another gateway.
func TestEveryRowRendered(t *testing.T) {
	seen := map[[2]string]bool{}
	for _, r := range Table {
		id := [2]string{string(r.Gateway), string(r.Key)}
		if seen[id] {
			t.Errorf("two rows for %s × %s", r.Gateway.Title(), r.Key)
		}
		seen[id] = true
		if !slices.Contains(Keys, r.Key) {
			t.Errorf("row %s × %s: key not in Keys", r.Gateway.Title(), r.Key)
		}
		if r.Setting == "" || !strings.HasPrefix(r.Reference, "http") {
			t.Errorf("row %s × %s: setting %q, reference %q; want both", r.Gateway.Title(), r.Key, r.Setting, r.Reference)
		}
		if r.Gateway != gateway.Unknown && r.Snippet == "" {
			t.Errorf("row %s × %s has no snippet", r.Gateway.Title(), r.Key)
		}
		a := For(r.Gateway, r.Key)
		want := gateway.Advice{Key: string(r.Key), Gateway: r.Gateway, Setting: r.Setting, Snippet: r.Snippet, Reference: r.Reference}
		if r.Gateway == gateway.Unknown {
			if a.Setting != r.Setting || a.Gateway != gateway.Unknown {
				t.Errorf("For(unknown, %s) = %+v, want the generic row", r.Key, a)
			}
			continue
		}
		if a.Setting != want.Setting || a.Gateway != want.Gateway || a.Snippet != want.Snippet || a.Reference != want.Reference || a.Others != nil {
			t.Errorf("For(%s, %s) = %+v, want its own row %+v alone", r.Gateway, r.Key, a, want)
		}
		if line := a.Line(); !strings.HasPrefix(line, r.Gateway.Title()+": ") || !strings.Contains(line, r.Setting) {
			t.Errorf("For(%s, %s).Line() = %q", r.Gateway, r.Key, line)
		}
	}
}

func TestEveryKeyHasGenericAdvice(t *testing.T) {
	for _, k := range Keys {
		if _, ok := lookup(gateway.Unknown, k); !ok {
			t.Errorf("no generic row for %s", k)
		}
	}
}

func TestEveryGatewayHasAdvice(t *testing.T) {
	for _, n := range gateway.Names {
		if !slices.ContainsFunc(Table, func(r Row) bool { return r.Gateway == n }) {
			t.Errorf("no row for %s", n.Title())
		}
	}
}

// TestNeverAnotherGateway: a recognised gateway without a row for the
// key gets the generic advice, not another gateway's; an unknown one
// gets the generic advice and every gateway's as "if your gateway is".
func TestNeverAnotherGateway(t *testing.T) {
	for _, k := range Keys {
		for _, n := range gateway.Names {
			a := For(n, k)
			if a.Gateway != n && a.Gateway != gateway.Unknown || len(a.Others) > 0 {
				t.Errorf("For(%s, %s) gives %s's advice (%d others)", n, k, a.Gateway, len(a.Others))
			}
		}
		a := For(gateway.Unknown, k)
		var want []gateway.Name
		for _, n := range gateway.Names {
			if _, ok := lookup(n, k); ok {
				want = append(want, n)
			}
		}
		var got []gateway.Name
		for _, o := range a.Others {
			got = append(got, o.Gateway)
		}
		if a.Gateway != gateway.Unknown || !slices.Equal(got, want) {
			t.Errorf("For(unknown, %s) = %s with others %v; want the generic row with %v", k, a.Gateway, got, want)
		}
	}
}

func TestVerdictAdvice(t *testing.T) {
	lighttpd := &gateway.Identity{Name: gateway.Lighttpd}
	whole := &verdict.Verdict{Class: verdict.Buffers, Signature: &verdict.Signature{Kind: verdict.WholeResponse}}
	got := Verdict(lighttpd, whole)
	if len(got) != 1 || got[0].Gateway != gateway.Lighttpd || !strings.Contains(got[0].Setting, "server.stream-response-body = 2") {
		t.Errorf("lighttpd holding the whole response: %+v; want its server.stream-response-body advice alone", got)
	}
	nagle := &verdict.Verdict{Class: verdict.Buffers, BurstPeriodMs: 41, Signature: &verdict.Signature{Kind: verdict.TimePeriod},
		FirstTokenHold: true, Findings: []verdict.Finding{{Name: verdict.FindingIdleCut}, {Name: "unheard_of"}}}
	got = Verdict(nil, nagle)
	var keys []string
	for _, a := range got {
		keys = append(keys, a.Key)
	}
	if want := []string{"nagle", "time_period", "first_token_hold", "idle_cut"}; !slices.Equal(keys, want) {
		t.Errorf("advice keys %v, want %v", keys, want)
	}
	if causes := Causes(got); len(causes) != 4 || causes[0] != got[0].Setting {
		t.Errorf("causes %q", causes)
	}
	flushes := &verdict.Verdict{Class: verdict.Flushes, Signature: &verdict.Signature{Kind: verdict.FlushPerEvent}}
	if got := Verdict(lighttpd, flushes); len(got) != 0 || got == nil {
		t.Errorf("a flushing gateway gets advice %+v; want an empty list", got)
	}
}
