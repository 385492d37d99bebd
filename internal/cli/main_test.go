package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
)

// Environment variables under which the test binary, run again by a test
// (childProcess), is something else than the tests: a relay process
// (package sserelay, the stand-in gateway), or the tool itself run by Main,
// at a lower priority (niceEnv) when asked.
const (
	relayEnv = "SSE_LATENCY_TEST_RELAY" // JSON array of sserelay.Main's arguments
	mainEnv  = "SSE_LATENCY_TEST_MAIN"  // JSON array of Main's arguments
	niceEnv  = "SSE_LATENCY_TEST_NICE"  // with mainEnv: run at nice 10
	lnEnv    = "SSE_LATENCY_TEST_LN"    // with mainEnv: the dummy server's listener is file descriptor 3 (MeasureOn)
	spinEnv  = "SSE_LATENCY_TEST_SPIN"  // burn a CPU until killed: a CPU-bound neighbour
	// masterEnv: JSON array of the arguments of a relay worker, which a
	// master process starts on a listener it holds (runMaster).
	masterEnv = "SSE_LATENCY_TEST_RELAY_MASTER"
)

// TestMain runs the tests, or what childProcess asked for.
func TestMain(m *testing.M) {
	if args, ok := childArgs(relayEnv); ok {
		os.Exit(runRelay(args))
	}
	if args, ok := childArgs(masterEnv); ok {
		os.Exit(runMaster(args))
	}
	if args, ok := childArgs(mainEnv); ok {
		if os.Getenv(niceEnv) != "" {
			niceAll(10)
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

// runMaster is a gateway of a master and a worker, as nginx's: the master
// listens and starts the worker, a relay (relayEnv with args) serving that
// listener, and prints "listening on ADDR" and "worker PID". It never
// accepts: once the worker has ended and it has reaped it, it closes the
// listener — so a client refused there knows the worker is gone — and
// waits for SIGTERM.
func runMaster(args []string) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	js, _ := json.Marshal(append(args, "-listen-fd", "3"))
	w := exec.Command(os.Args[0], "-test.run=^$")
	w.Env = append(os.Environ(), relayEnv+"="+string(js))
	w.ExtraFiles = []*os.File{f}
	w.Stderr = os.Stderr
	if err := w.Start(); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	fmt.Printf("listening on %s\nworker %d\n", ln.Addr(), w.Process.Pid)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	done := make(chan struct{})
	go func() { w.Wait(); close(done) }()
	select {
	case <-done:
		ln.Close()
		f.Close()
		<-sig
	case <-sig:
		w.Process.Kill()
		<-done
	}
	return 0
}
