package control

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/emission"
	"github.com/sse-latency/sse-latency/internal/result"
)

// replicaFixture is one server replica for the tests: its registry, its
// control endpoint, its clock offset, and a Syncer that has estimated it.
type replicaFixture struct {
	reg    *emission.Registry
	offset int64
	r      *Replica
}

// newReplica serves a registry holding request id (arrived at 1000, token
// 0 written at 2000, token 1 at 3000: times on the server's clock) as
// instance, the clock it answers ahead of this process's by offset, and
// syncs with it.
func newReplica(t *testing.T, instance, id string, offset int64) *replicaFixture {
	t.Helper()
	reg := emission.New()
	tm := reg.Start(id, 2)
	tm.SetArrived(1000)
	tm.Set(0, 2000)
	tm.Set(1, 3000)
	tm.Finish()
	h, err := NewHandler(reg, testToken, instance)
	if err != nil {
		t.Fatal(err)
	}
	h.SetClock(clock.Offset{Ns: offset})
	return &replicaFixture{reg: reg, offset: offset, r: syncedReplica(t, serveControl(t, h))}
}

// syncedReplica is the replica of the endpoint at base, estimated once.
func syncedReplica(t *testing.T, base string) *Replica {
	t.Helper()
	c, err := NewClient(base, testToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s := NewSyncer(c, 2)
	if _, err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &Replica{Syncer: s}
}

// twoTokens is a finished record of request id, named instance, its token
// 0 stamped piTs (0: none), token 1 without.
func twoTokens(id, instance string, piTs int64) *result.Request {
	rec := &result.Request{ID: id, Instance: instance}
	rec.AppendTokens(1, 0, 0, 10)
	rec.AppendTokens(1, 1, 1, 20)
	if piTs != 0 {
		rec.Tokens[0].Emitted, rec.ByPiTs = piTs, 1
	}
	return rec
}

// TestResolverReplicas: records are completed against the replica that
// served them — the one they name, or the one whose records have their id
// — each with its own clock offset; one that names an instance no replica
// answers as is unmeasured, and an integrity error while every replica is
// up; one no replica has a record of is unmeasured.
func TestResolverReplicas(t *testing.T) {
	a := newReplica(t, "srv-a", "ra", 1_000_000_000)
	b := newReplica(t, "srv-b", "rb", -2_000_000_000)
	if a.r.Instance() != "srv-a" || b.r.Instance() != "srv-b" {
		t.Fatalf("instances %q, %q: want srv-a, srv-b", a.r.Instance(), b.r.Instance())
	}
	estA, _ := a.r.Syncer.Current()
	estB, _ := b.r.Syncer.Current()
	type want struct {
		instance          string
		arrived, emitted0 int64 // client clock; 0 unknown
		emitted1          int64
		failed            string // the start of the integrity detail, "" ok
	}
	check := func(t *testing.T, replicas []*Replica, recs []*result.Request, wants []want) {
		t.Helper()
		var got []*result.Request
		r := NewResolver(replicas, func(rec *result.Request) { got = append(got, rec) })
		for _, rec := range recs {
			r.Add(rec)
		}
		if f := r.Close(); f != nil {
			t.Errorf("fetch failures %+v, want none", f)
		}
		for i, w := range wants {
			g := got[i]
			if g.Instance != w.instance || g.ServerArrived != w.arrived || g.Tokens[0].Emitted != w.emitted0 || g.Tokens[1].Emitted != w.emitted1 {
				t.Errorf("record %d (%s): instance %q, arrived %d, emitted %d, %d; want %q, %d, %d, %d",
					i, g.ID, g.Instance, g.ServerArrived, g.Tokens[0].Emitted, g.Tokens[1].Emitted, w.instance, w.arrived, w.emitted0, w.emitted1)
			}
			if unmeasured := w.emitted0 == 0; unmeasured != (g.ByPiTs+g.ByContent == 0) {
				t.Errorf("record %d (%s): %d by pi_ts, %d by content; want them measured: %v", i, g.ID, g.ByPiTs, g.ByContent, !unmeasured)
			}
			if w.failed == "" && !g.OK() || w.failed != "" && (g.Failure.Kind != result.Integrity || !strings.HasPrefix(g.Failure.Detail, w.failed)) {
				t.Errorf("record %d (%s): %s, want %q", i, g.ID, g.Failure.Error(), w.failed)
			}
		}
	}
	recs := func() []*result.Request {
		return []*result.Request{
			twoTokens("ra", "srv-a", 2000), // named, its pi_ts on A's clock
			twoTokens("rb", "srv-b", 0),    // named, by content
			twoTokens("rb", "", 0),         // named by neither: looked up
			twoTokens("ra", "", 2000),      // looked up, pi_ts on A's clock
			twoTokens("rc", "srv-c", 5),    // an instance no replica is
			twoTokens("zz", "", 5),         // no replica has its record
		}
	}
	check(t, []*Replica{a.r, b.r}, recs(), []want{
		{"srv-a", estA.ToClient(1000), estA.ToClient(2000), estA.ToClient(3000), ""},
		{"srv-b", estB.ToClient(1000), estB.ToClient(2000), estB.ToClient(3000), ""},
		{"srv-b", estB.ToClient(1000), estB.ToClient(2000), estB.ToClient(3000), ""},
		{"srv-a", estA.ToClient(1000), estA.ToClient(2000), estA.ToClient(3000), ""},
		{"srv-c", 0, 0, 0, `served by server instance "srv-c", which no control endpoint answers as ("srv-a", "srv-b")`},
		{"", 0, 0, 0, ""},
	})

	// With a replica down, a record naming an unknown instance may be its:
	// unmeasured, not an integrity error.
	down := &Replica{Syncer: NewSyncer(mustClient(t, "http://127.0.0.1:1"), 1), Down: errors.New("connection refused")}
	check(t, []*Replica{a.r, b.r, down}, recs()[4:5], []want{{"srv-c", 0, 0, 0, ""}})
}

func mustClient(t *testing.T, url string) *Client {
	t.Helper()
	c, err := NewClient(url, testToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestResolverBadReplica: a replica whose records answer garbage, or that
// does not answer in time, fails its fetches with the reason; the records
// it served keep their pi_ts, converted with its estimate, and those of
// the other replica are complete.
func TestResolverBadReplica(t *testing.T) {
	good := newReplica(t, "srv-a", "ra", 0)
	for _, tc := range []struct {
		name  string
		serve func(w http.ResponseWriter, r *http.Request)
		want  string
	}{
		{"garbage", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>no</html>")) }, "reading the answer: invalid character"},
		{"slow", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, "context deadline exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := NewHandler(emission.New(), testToken, "srv-bad")
			var fetches atomic.Int64
			base := serveControl(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == RequestsPath {
					fetches.Add(1)
					tc.serve(w, r)
					return
				}
				h.ServeHTTP(w, r)
			}))
			bad := syncedReplica(t, base)
			est, _ := bad.Syncer.Current()
			var got []*result.Request
			r := newResolver([]*Replica{good.r, bad}, func(rec *result.Request) { got = append(got, rec) }, 2*time.Second) // the good replica answers well within it, however loaded the machine
			for range maxFailedFetches + 1 {
				r.Add(twoTokens("rb", "srv-bad", 7000))
				r.Add(twoTokens("ra", "srv-a", 0))
				r.Flush()
			}
			f := r.Close()
			if len(f) != 1 || f[0].Replica != bad || f[0].Count != maxFailedFetches || f[0].First == nil || !strings.Contains(f[0].First.Error(), tc.want) {
				t.Fatalf("failures %+v, want %d of the bad replica's, %q", f, maxFailedFetches, tc.want)
			}
			if n := fetches.Load(); n != maxFailedFetches {
				t.Errorf("%d fetches of the bad replica, want %d, then none", n, maxFailedFetches)
			}
			for i, g := range got {
				switch g.ID {
				case "rb":
					if g.Tokens[0].Emitted != est.ToClient(7000) || g.Tokens[1].Emitted != 0 || g.ServerArrived != 0 || !g.OK() {
						t.Errorf("record %d of the bad replica: emitted %d, %d, arrived %d, %s; want its pi_ts converted, nothing else",
							i, g.Tokens[0].Emitted, g.Tokens[1].Emitted, g.ServerArrived, g.Failure.Error())
					}
				case "ra":
					if g.Tokens[0].Emitted == 0 || g.Tokens[1].Emitted == 0 || g.ServerArrived == 0 {
						t.Errorf("record %d of the good replica incomplete: %+v", i, g)
					}
				}
			}
		})
	}
}

// TestSyncSeveralInstances: an endpoint whose answers come from two server
// instances (a load-balanced Service) fails its estimate, naming both.
func TestSyncSeveralInstances(t *testing.T) {
	ha, _ := NewHandler(emission.New(), testToken, "srv-a")
	hb, _ := NewHandler(emission.New(), testToken, "srv-b")
	var n atomic.Int64
	base := serveControl(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 0 {
			hb.ServeHTTP(w, r)
			return
		}
		ha.ServeHTTP(w, r)
	}))
	s := NewSyncer(mustClient(t, base), 4)
	_, err := s.Sync(context.Background())
	if !errors.Is(err, ErrSeveralInstances) || !strings.Contains(err.Error(), `("srv-a", then "srv-b")`) {
		t.Errorf("Sync through a balanced endpoint: %v, want ErrSeveralInstances naming srv-a then srv-b", err)
	}
	if _, ok := s.Current(); ok {
		t.Error("the failed burst left an estimate")
	}
	if _, err := NewHandler(emission.New(), testToken, "a b"); err == nil {
		t.Error("NewHandler accepted the instance id \"a b\"")
	}
}
