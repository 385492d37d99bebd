//go:build unix

package cli

import (
	"fmt"
	"syscall"
)

// fdsPerStream is what one stream costs in file descriptors: the client's
// connection and, when the gateway forwards to our own server, the
// server's end of the gateway's upstream connection.
const fdsPerStream = 2

// fdsBaseline covers the listener, the timerfds, stdio and the runtime.
const fdsBaseline = 64

// checkOpenFiles makes sure concurrency streams fit under the open-files
// limit: it raises the soft limit to the hard one (the Go runtime already
// does so at start on Linux; this also covers other systems), and refuses
// with a message saying what to do when even that is not enough.
func checkOpenFiles(concurrency int) error {
	if concurrency <= 0 {
		return nil
	}
	need := uint64(concurrency)*fdsPerStream + fdsBaseline
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return nil // cannot tell: let the run try
	}
	if lim.Cur < need && lim.Cur < lim.Max {
		raised := lim
		raised.Cur = lim.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			lim = raised
		}
	}
	if lim.Cur >= need {
		return nil
	}
	return fmt.Errorf("-c %d needs about %d open files (%d per stream plus %d), but the limit is %d (hard limit %d): "+
		"lower -c, or raise the limit, e.g. `ulimit -n %d` in the shell that runs sse-latency "+
		"(beyond the hard limit: /etc/security/limits.conf, or LimitNOFILE= for a systemd service)",
		concurrency, need, fdsPerStream, fdsBaseline, lim.Cur, lim.Max, need)
}
