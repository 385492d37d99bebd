package procnet

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// childPortEnv, set, makes the test binary a child that listens on that
// loopback port (beside its parent, SO_REUSEPORT) and on one of its own,
// prints the latter, and holds both until its stdin ends.
const childPortEnv = "PROCNET_TEST_CHILD_PORT"

func TestMain(m *testing.M) {
	if port := os.Getenv(childPortEnv); port != "" {
		os.Exit(listenChild(port))
	}
	os.Exit(m.Run())
}

// reusePort is a ListenConfig whose sockets share their port.
var reusePort = net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1) })
	if err != nil {
		return err
	}
	return serr
}}

func listenChild(port string) int {
	shared, err := reusePort.Listen(context.Background(), "tcp4", "127.0.0.1:"+port)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	defer shared.Close()
	own, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	defer own.Close()
	fmt.Println(own.Addr().(*net.TCPAddr).Port)
	bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes it
	return 0
}

// TestListenerOwnersOtherProcess: a socket of another process is found
// — alone on its port, and beside one of this process on a shared port
// (this process holding one of the port's sockets is no reason to skip
// the others').
func TestListenerOwnersOtherProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	shared, err := reusePort.Listen(context.Background(), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	sharedPort := shared.Addr().(*net.TCPAddr).Port
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childPortEnv+"="+strconv.Itoa(sharedPort))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the child printed no port: %v", err)
	}
	ownPort, err := strconv.Atoi(line[:len(line)-1])
	if err != nil {
		t.Fatalf("the child printed %q", line)
	}
	child := cmd.Process.Pid
	tests := []struct {
		port int
		want []int
	}{
		{ownPort, []int{child}},
		{sharedPort, slices.Sorted(slices.Values([]int{os.Getpid(), child}))},
	}
	for _, tt := range tests {
		got, err := ListenerOwners(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(tt.port)))
		var pids []int
		for _, p := range got {
			pids = append(pids, p.PID)
		}
		if err != nil || !slices.Equal(pids, tt.want) {
			t.Errorf("ListenerOwners(127.0.0.1:%d) = %v, %v; want %v", tt.port, pids, err, tt.want)
		}
	}
}
