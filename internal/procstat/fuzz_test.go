package procstat

import (
	"strings"
	"testing"
)

// FuzzParse feeds every parser of the package the same bytes (none may
// panic, and what they accept must be consistent), and checks that a stat
// line written with any command name and times reads back the same.
func FuzzParse(f *testing.F) {
	f.Add([]byte(recordedStat), "gw", uint64(12))
	f.Add([]byte(statLine(42, 1, "a (b) c", 1, 2, 3, 4, 5, 6, 7)), ") (", uint64(0))
	f.Add([]byte("rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\n"), "x", uint64(1<<62))
	f.Add([]byte("5326524 38469404 22\n"), "nginx: worker process", uint64(99))
	f.Fuzz(func(t *testing.T, b []byte, comm string, ticks uint64) {
		if h, err := ParseHost(b); err == nil {
			for _, c := range h.CPUs {
				if c.ID < 0 {
					t.Errorf("ParseHost(%q): cpu id %d", b, c.ID)
				}
			}
		}
		if s, err := ParseStat(b); err == nil && s.PID <= 0 {
			t.Errorf("ParseStat(%q): pid %d", b, s.PID)
		}
		ParseIO(b)
		ParseSchedstat(b)

		if strings.ContainsAny(comm, "\n") || ticks > 1<<62 {
			return
		}
		line := statLine(7, 1, comm, ticks, 2, 3, 4, 5, 6, 7)
		s, err := ParseStat([]byte(line))
		if err != nil {
			t.Fatalf("ParseStat(%q): %v", line, err)
		}
		if s.Comm != comm || s.UserTicks != ticks || s.PID != 7 || s.RSSPages != 7 {
			t.Errorf("ParseStat(%q) = %+v, want comm %q and utime %d back", line, s, comm, ticks)
		}
	})
}
