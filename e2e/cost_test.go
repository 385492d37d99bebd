//go:build linux

package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// costChecked are the gateways whose cost rows TestGateways checks: the
// process is found by itself (the owner of the listening socket) and its
// figures are plausible. Their CPU per token lies between 2 and 60 µs on
// the development machine; the bounds only say "measured, and of the
// order of a proxy's work".
var costChecked = map[string]bool{"haproxy": true, "nginx": true}

// Bounds of a gateway's cost per token.
const (
	costMaxCPUPerTokenUs = 2000 // above: not a proxy's cost, the accounting is wrong
	costMaxWritesPerTok  = 10
)

// checkCost checks m's cost block: the gateway process found by itself
// (the program of ex, pid given), named in the block, with a CPU per token
// above 0 and below costMaxCPUPerTokenUs, and writes it could read —
// nginx writes with writev (counted by syscw: one per upstream read, 0.6
// to 1 per token on the development machine, a few per stream when it
// buffers), haproxy with send (not counted), so only nginx's are bounded
// below, at one per stream.
func checkCost(t *testing.T, m *measurement) {
	t.Helper()
	name := m.ex.Gateway.Name
	if !costChecked[name] {
		return
	}
	gb := m.sum.Run.Gateway()
	if gb == nil || gb.Cost == nil || gb.Cost.Gateway == nil {
		t.Errorf("%s: no gateway cost in the gateway batch\n%s", m.ex.File, m)
		return
	}
	g := gb.Cost.Gateway
	t.Logf("%s: cost: %s pid %v, %.3fus/token (user %.3fs, system %.3fs), %.2f writes/token, %.2f switches/token, %d threads",
		m.ex.File, g.Name, g.PIDs, g.CPUPerTokenUs, g.UserS, g.SystemS, g.WritesPerToken, g.SwitchesPerToken, g.Threads)
	if g.Unseen != "" || g.Found != "listener" || len(g.PIDs) == 0 {
		t.Errorf("%s: gateway cost %+v: want the process found as the owner of %s\n%s", m.ex.File, g, m.gw.Addr, m)
		return
	}
	switch {
	case g.Name != m.ex.Gateway.Program:
		t.Errorf("%s: found %q (pid %v), want %s\n%s", m.ex.File, g.Name, g.PIDs, m.ex.Gateway.Program, m)
	case !(g.CPUPerTokenUs > 0 && g.CPUPerTokenUs < costMaxCPUPerTokenUs):
		t.Errorf("%s: %s's cpu/token %.3fus, want above 0 and below %dus\n%s", m.ex.File, name, g.CPUPerTokenUs, costMaxCPUPerTokenUs, m)
	case !g.WritesKnown || g.WritesPerToken > costMaxWritesPerTok:
		t.Errorf("%s: %s's writes/token %.2f (known %v), want known and at most %d\n%s", m.ex.File, name, g.WritesPerToken, g.WritesKnown, costMaxWritesPerTok, m)
	case name == "nginx" && g.WritesPerStream < 1:
		t.Errorf("%s: nginx's writes/stream %.2f: it writes with writev (what it reads of the events, or what its buffers held), want them counted\n%s", m.ex.File, g.WritesPerStream, m)
	}
	if want := fmt.Sprintf("gateway    %s pid %d", g.Name, g.PIDs[0]); !strings.Contains(m.stdout, want) || !strings.Contains(m.stdout, "gw cpu ") {
		t.Errorf("%s: the cost block does not name the process (%q) with its CPU\n%s", m.ex.File, want, m)
	}
}
