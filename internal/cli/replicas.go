package cli

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/control"
	"github.com/sse-latency/sse-latency/internal/stats"
	"github.com/sse-latency/sse-latency/internal/summary"
)

// MaxReplicas bounds the server replicas one client reads (--server given
// several times, or a name resolving to several addresses): each costs a
// connection, a clock estimate every control.DefaultSyncEvery and a fetch
// per batch of records.
const MaxReplicas = 64

// lookupTimeout bounds the resolution of a --server name.
const lookupTimeout = 10 * time.Second

// lookupIPAddr resolves a --server name (a variable for the tests).
var lookupIPAddr = net.DefaultResolver.LookupIPAddr

// endpoint is one control endpoint to read: its URL, and the --server
// value it came from when a name resolved to several addresses.
type endpoint struct {
	url, from string
}

// expandServers returns the control endpoints of the --server values: a
// URL whose host is a name resolving to several addresses (a headless
// Service: one per replica) stands for one endpoint per address, of one
// family (IPv4 when it has any: a dual-stack name lists each host twice);
// any other URL for itself. More than MaxReplicas endpoints are refused,
// naming the bound.
func expandServers(ctx context.Context, servers []string) ([]endpoint, error) {
	var out []endpoint
	for _, s := range servers {
		u, err := url.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("--server %s: %v", s, err)
		}
		host, port, err := net.SplitHostPort(u.Host)
		if err != nil {
			return nil, fmt.Errorf("--server %s: %v", s, err)
		}
		addrs := []string{host}
		if net.ParseIP(host) == nil {
			lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
			ips, err := lookupIPAddr(lctx, host)
			cancel()
			if err == nil {
				addrs = oneFamily(ips)
			} // else: the endpoint's first estimate fails, naming the lookup
		}
		if len(out)+len(addrs) > MaxReplicas {
			if len(addrs) > 1 {
				return nil, fmt.Errorf("--server %s: %s resolves to %d addresses, more than the %d replicas one run reads (MaxReplicas)",
					s, host, len(addrs), MaxReplicas)
			}
			return nil, fmt.Errorf("--server: more than the %d control endpoints one run reads (MaxReplicas)", MaxReplicas)
		}
		if len(addrs) == 1 {
			out = append(out, endpoint{url: s})
			continue
		}
		for _, a := range addrs {
			v := *u
			v.Host = net.JoinHostPort(a, port)
			out = append(out, endpoint{url: v.String(), from: s})
		}
	}
	return out, nil
}

// oneFamily returns the distinct addresses of ips of one family: IPv4 when
// there is any, else IPv6.
func oneFamily(ips []net.IPAddr) []string {
	var v4, v6 []string
	for _, ip := range ips {
		s := ip.IP.String()
		if ip.IP.To4() != nil {
			v4 = appendNew(v4, s)
		} else {
			v6 = appendNew(v6, ip.String()) // with its zone
		}
	}
	if len(v4) > 0 {
		return v4
	}
	return v6
}

// appendNew appends s to list unless it is there.
func appendNew(list []string, s string) []string {
	for _, v := range list {
		if v == s {
			return list
		}
	}
	return append(list, s)
}

// connectReplicas reaches every endpoint at once and estimates its clock
// offset. An endpoint whose first estimate fails is a replica that is down
// (its tokens stay unmeasured, the run goes on, a warning says why); if
// every one fails, so does the run. Endpoints that answer as the same
// instance are read once (a note says so).
func (r *run) connectReplicas(endpoints []endpoint) ([]*control.Replica, error) {
	replicas := make([]*control.Replica, len(endpoints))
	var wg sync.WaitGroup
	for i, ep := range endpoints {
		c, err := control.NewClient(ep.url, r.cfg.ControlToken)
		if err != nil {
			for _, rep := range replicas[:i] {
				rep.Syncer.Client().Close()
			}
			return nil, fmt.Errorf("--server: %v", err)
		}
		c.SetClock(r.clk)
		rep := &control.Replica{Syncer: control.NewSyncer(c, 0)}
		replicas[i] = rep
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), firstSyncTimeout)
			defer cancel()
			if _, err := rep.Syncer.Sync(ctx); err != nil {
				rep.Down = fmt.Errorf("reading the server's clock: %w", err)
			}
		}()
	}
	wg.Wait()
	up := 0
	var downs []string
	for _, rep := range replicas {
		if rep.Down == nil {
			up++
		} else {
			downs = append(downs, fmt.Sprintf("%s: %v", rep, rep.Down))
		}
	}
	if up == 0 {
		for _, rep := range replicas {
			rep.Syncer.Client().Close()
		}
		if len(replicas) == 1 {
			return nil, fmt.Errorf("--server %s: %w", replicas[0], replicas[0].Down)
		}
		return nil, fmt.Errorf("--server: no control endpoint answered: %s", strings.Join(downs, "; "))
	}
	replicas = r.dedupe(replicas)
	for _, rep := range replicas {
		if rep.Down != nil {
			r.out.errorf("warning: --server %s: %v: the tokens of its replica stay unmeasured\n", rep, rep.Down)
			continue
		}
		e, _ := rep.Syncer.Current()
		instance := ""
		if id := rep.Instance(); id != "" {
			instance = ", instance " + id
		} else if len(replicas) > 1 {
			instance = ", no instance id (an older server: its requests are found by their ids)"
		}
		r.out.errorf("server on another host, control endpoint %s%s: clock offset %+.3fms ± %.3fms "+
			"(server - client; best round trip %.3fms of %d exchanges), estimated again every %v\n",
			rep, instance, stats.Ms(e.Offset), stats.Ms(e.Bound), stats.Ms(e.MinRTT), e.Samples+e.Dropped, control.DefaultSyncEvery)
	}
	return replicas, nil
}

// dedupe drops the endpoints that answer as the instance of an earlier one
// (a server reached by two names), with a note.
func (r *run) dedupe(replicas []*control.Replica) []*control.Replica {
	seen := make(map[string]*control.Replica)
	out := replicas[:0]
	for _, rep := range replicas {
		id := rep.Instance()
		if first, ok := seen[id]; ok && id != "" && rep.Down == nil {
			r.out.errorf("note: --server %s answers as instance %s, as %s does: reading it once\n", rep, id, first)
			rep.Syncer.Client().Close()
			continue
		}
		if rep.Down == nil {
			seen[id] = rep
		}
		out = append(out, rep)
	}
	return out
}

// replicaInfos are the replicas of the run across hosts for its summary:
// their endpoints, instances, clocks, and what went wrong reading them
// (down, or fetches that failed).
func (r *run) replicaInfos() []summary.ReplicaInfo {
	if r.remote == nil {
		return nil
	}
	infos := make([]summary.ReplicaInfo, 0, len(r.remote.replicas))
	for _, rep := range r.remote.replicas {
		in := summary.ReplicaInfo{Instance: rep.Instance(), Control: rep.String()}
		switch {
		case rep.Down != nil:
			in.Error = "down: " + rep.Down.Error()
		case r.remote.fetchErrors[rep] != "":
			in.Error = r.remote.fetchErrors[rep]
		}
		if rep.Down == nil {
			if s, ok := rep.Syncer.Summary(); ok {
				in.Clock = &s
			}
		}
		infos = append(infos, in)
	}
	return infos
}

// defaultInstance is the instance id of a server given none
// (--instance-id): its host name and process id, which tell replicas
// apart in a cluster (a pod's host name is its name) and on one host.
func defaultInstance() string {
	host, _ := os.Hostname()
	var b []byte
	for i := 0; i < len(host); i++ {
		if c := host[i]; 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' {
			b = append(b, c)
		}
	}
	pid := "-" + strconv.Itoa(os.Getpid())
	if n := api.MaxIDLen - len(pid); len(b) > n {
		b = b[:n]
	}
	if len(b) == 0 {
		b = []byte("sse-latency")
	}
	return string(b) + pid
}
