package testutil

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestListen(t *testing.T) {
	ln := Listen(t)
	a := ln.Addr().(*net.TCPAddr)
	if !a.IP.Equal(net.IPv4(127, 0, 0, 1)) || a.Port == 0 {
		t.Fatalf("Listen bound %v, want 127.0.0.1 and a port", a)
	}
	go func() {
		if c, err := net.Dial("tcp", a.String()); err == nil {
			c.Close()
		}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatalf("the listener does not accept: %v", err)
	}
	c.Close()
}

func TestRefusedAddr(t *testing.T) {
	addr := RefusedAddr(t)
	if _, err := net.Dial("tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial %s: %v, want connection refused", addr, err)
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Errorf("listening on %s succeeded: the port is not held", addr)
	}
}

// fakeServer's Serve returns when its context ends.
type fakeServer struct{ served atomic.Bool }

func (s *fakeServer) Serve(ctx context.Context) error {
	s.served.Store(true)
	<-ctx.Done()
	return nil
}

func TestServe(t *testing.T) {
	srv := &fakeServer{}
	stop := Serve(t, srv)
	Await(t, "Serve to run", srv.served.Load)
	stop("in the test")
	stop("again") // a no-op
}

func TestServeTCP(t *testing.T) {
	addr := ServeTCP(t, func(c net.Conn) {
		io.WriteString(c, "hello\n")
		io.Copy(io.Discard, c) // until the client or the cleanup closes it
	})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if line, err := bufio.NewReader(c).ReadString('\n'); line != "hello\n" {
		t.Errorf("read %q, %v; want the handler's hello", line, err)
	}
}

func TestPoll(t *testing.T) {
	var n atomic.Int64
	go func() {
		for range 5 {
			n.Add(1)
		}
	}()
	if !Poll(func() bool { return n.Load() == 5 }, AwaitBound) {
		t.Error("Poll did not see the counter reach 5")
	}
	if Poll(func() bool { return false }, 10*time.Millisecond) {
		t.Error("Poll reported a condition that never holds")
	}
}

// TestPlayOneReadPerStep: a client that counts its Reads, and a script
// whose every step waits for the client's count: each step is one Read.
func TestPlayOneReadPerStep(t *testing.T) {
	const steps = 30
	var reads atomic.Int64
	var script []Step
	for i := range steps {
		script = append(script, Step{Write: fmt.Sprintf("step %d;", i), Until: func() bool { return reads.Load() > int64(i) }})
	}
	played := make(chan error, 1)
	addr := ServeTCP(t, func(c net.Conn) { played <- Play(c, script...) })
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []string
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			got = append(got, string(buf[:n]))
			reads.Add(1)
		}
		if err != nil {
			break
		}
	}
	if err := <-played; err != nil {
		t.Errorf("Play = %v", err)
	}
	if len(got) != steps {
		t.Fatalf("%d reads %q, want one per step (%d)", len(got), got, steps)
	}
	for i, r := range got {
		if want := fmt.Sprintf("step %d;", i); r != want {
			t.Errorf("read %d = %q, want %q", i, r, want)
		}
	}
}

func TestPlayNotReached(t *testing.T) {
	bound = 20 * time.Millisecond
	defer func() { bound = AwaitBound }()
	a, b := net.Pipe()
	defer a.Close()
	go io.Copy(io.Discard, b)
	err := Play(a, Step{Write: "x", Until: func() bool { return false }}, Step{Write: "never"})
	if !errors.Is(err, ErrNotReached) || !strings.Contains(err.Error(), "step 1 of 2") {
		t.Errorf("Play = %v, want ErrNotReached naming step 1 of 2", err)
	}
}

// backend writes n lines "token i", then waits for the client to go.
func backend(t *testing.T, n int) string {
	return ServeTCP(t, func(c net.Conn) {
		for i := range n {
			fmt.Fprintf(c, "token %d\n", i)
		}
		io.Copy(io.Discard, c)
	})
}

func TestRelayForward(t *testing.T) {
	addr := Relay(t, func() string { return backend(t, 3) }, Forward)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	for i := range 3 {
		if line, err := r.ReadString('\n'); line != fmt.Sprintf("token %d\n", i) {
			t.Fatalf("line %d: %q, %v", i, line, err)
		}
	}
}

func TestRelayNoUpstream(t *testing.T) {
	c, err := net.Dial("tcp", Relay(t, func() string { return "" }, Forward))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(AwaitBound))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("read %d, %v; want the relay to close a connection it has no upstream for", n, err)
	}
}

// TestHoldAndUnread: the hold passes the first 5 tokens of 100, and Unread
// tells when the client has read them.
func TestHoldAndUnread(t *testing.T) {
	hold := &Hold{Marker: "token ", N: 5}
	addr := Relay(t, func() string { return backend(t, 100) }, hold.Pump)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	Await(t, "the relay to hold the connection", func() bool { return len(hold.Held()) == 1 })
	down := hold.Held()[0]
	n, err := Unread(down)
	if err != nil {
		t.Skip(err)
	}
	if n == 0 {
		t.Errorf("Unread = 0 before the client read anything")
	}
	var mu sync.Mutex
	var got []byte
	go func() {
		buf := make([]byte, 1<<10)
		for {
			n, err := c.Read(buf)
			mu.Lock()
			got = append(got, buf[:n]...)
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	text := func() string { mu.Lock(); defer mu.Unlock(); return string(got) }
	Await(t, "the client to read what the relay passed", func() bool {
		u, err := Unread(down)
		return err == nil && u == 0 && strings.Count(text(), "\n") >= 5
	})
	if s := text(); strings.Count(s, "\n") >= 100 || !strings.HasPrefix(s, "token 0\ntoken 1\n") {
		t.Errorf("the client got %q: want tokens 0 to 4 at least, not all 100", s)
	}
}

func TestUnreadCounts(t *testing.T) {
	ln := Listen(t)
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if _, err := Unread(srv); err != nil {
		t.Skip(err)
	}
	const size = 3000
	if _, err := srv.Write(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	if n, _ := Unread(srv); n != size {
		t.Errorf("Unread = %d after writing %d bytes the client has not read", n, size)
	}
	io.ReadFull(client, make([]byte, 1000))
	if n, _ := Unread(srv); n != size-1000 {
		t.Errorf("Unread = %d after the client read 1000 of %d", n, size)
	}
	io.ReadFull(client, make([]byte, size-1000))
	if n, _ := Unread(srv); n != 0 {
		t.Errorf("Unread = %d after the client read everything", n)
	}
	// A client gone with bytes unread: they are not waiting for it.
	srv.Write(make([]byte, 10))
	client.Close()
	Await(t, "Unread to stop counting bytes for a client that has gone", func() bool { n, err := Unread(srv); return err != nil || n == 0 })
}

// TestFullDuplex: a handler that reads the request body after it began
// its answer gets the body under FullDuplex, and not without it (the
// server consumed and closed it at the first write).
func TestFullDuplex(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		b, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%q %v", b, err)
	})
	for _, tt := range []struct {
		name    string
		handler http.Handler
		want    string
	}{
		{"plain", h, `"" http: invalid Read on closed Body`},
		{"full duplex", FullDuplex(h), `"the body" <nil>`},
	} {
		srv := httptest.NewServer(tt.handler)
		resp, err := http.Post(srv.URL, "text/plain", strings.NewReader("the body"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		if string(b) != tt.want {
			t.Errorf("%s: the handler read %s, want %s", tt.name, b, tt.want)
		}
	}
}

// TestImportedOnlyByTests: no file of the module but a _test.go one
// imports this package.
func TestImportedOnlyByTests(t *testing.T) {
	const self = "github.com/sse-latency/sse-latency/internal/testutil"
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, imp := range f.Imports {
			if strings.Trim(imp.Path.Value, `"`) == self {
				t.Errorf("%s imports %s: only _test.go files may", path, self)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Errorf("checked only %d files under %s: the walk missed the module", files, root)
	}
}
