package cli

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/signal"
	"testing"
)

// Environment variables under which the test binary, run again by a test
// (childProcess), is something else than the tests: a relay process
// (package sserelay, the stand-in gateway), or the tool itself run by Main,
// at a lower priority (niceEnv) when asked.
const (
	relayEnv = "SSE_LATENCY_TEST_RELAY" // JSON array of sserelay.Main's arguments
	mainEnv  = "SSE_LATENCY_TEST_MAIN"  // JSON array of Main's arguments
	niceEnv  = "SSE_LATENCY_TEST_NICE"  // with mainEnv: run at nice 19
	lnEnv    = "SSE_LATENCY_TEST_LN"    // with mainEnv: the dummy server's listener is file descriptor 3 (MeasureOn)
	spinEnv  = "SSE_LATENCY_TEST_SPIN"  // burn a CPU until killed: a CPU-bound neighbour
)

// TestMain runs the tests, or what childProcess asked for.
func TestMain(m *testing.M) {
	if args, ok := childArgs(relayEnv); ok {
		os.Exit(runRelay(args))
	}
	if args, ok := childArgs(mainEnv); ok {
		if os.Getenv(niceEnv) != "" {
			niceAll(19)
		}
		var ln net.Listener
		if os.Getenv(lnEnv) != "" {
			l, err := net.FileListener(os.NewFile(3, "listener"))
			if err != nil {
				os.Stderr.WriteString("listener on fd 3: " + err.Error() + "\n")
				os.Exit(2)
			}
			ln = l
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		code, _ := MeasureOn(ctx, ln, args, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	if os.Getenv(spinEnv) != "" {
		x := uint64(1)
		for {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	os.Exit(m.Run())
}

// childArgs reads the arguments a child process was given in env.
func childArgs(env string) ([]string, bool) {
	v := os.Getenv(env)
	if v == "" {
		return nil, false
	}
	var args []string
	if err := json.Unmarshal([]byte(v), &args); err != nil {
		os.Stderr.WriteString("bad " + env + ": " + err.Error() + "\n")
		os.Exit(2)
	}
	return args, true
}
