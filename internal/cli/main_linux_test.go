package cli

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/sse-latency/sse-latency/internal/sserelay"
)

// runRelay runs the stand-in gateway of a child process.
func runRelay(args []string) int { return sserelay.Main(args, os.Stdout, os.Stderr) }

// niceAll sets the nice value of every thread of the process (Linux's
// is per thread; a thread started later inherits its starter's).
func niceAll(n int) {
	for range 3 { // again for the threads started meanwhile
		entries, _ := os.ReadDir("/proc/self/task")
		for _, e := range entries {
			if tid, err := strconv.Atoi(e.Name()); err == nil {
				unix.Setpriority(unix.PRIO_PROCESS, tid, n)
			}
		}
	}
}
