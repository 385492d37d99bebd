//go:build linux

package evloop

import (
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sse-latency/sse-latency/internal/clock"
)

// within fails the test when ch does not deliver within a bound that only
// a broken loop misses.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: nothing after 10 s", what)
	}
	var zero T
	return zero
}

// onLoop runs f on l's goroutine and waits for it.
func onLoop(t *testing.T, l *Loop, f func()) {
	t.Helper()
	done := make(chan struct{})
	l.Post(funcReceiver(func() { f(); close(done) }), 0, 0)
	within(t, done, "a posted function")
}

// loopEngines are the backends the loop tests run on: epoll, and
// io_uring where the kernel allows it (see UringExpected).
func loopEngines(t *testing.T) []Engine {
	t.Helper()
	if err := UringAvailable(); err != nil {
		if UringExpected() && os.Getenv("CI") == "true" {
			t.Fatalf("io_uring refused on a kernel that should allow it: %v", err)
		}
		t.Logf("the io_uring backend is not tested here: %v", err)
		return []Engine{Epoll}
	}
	return []Engine{Epoll, Uring}
}

// forBackends runs f as a subtest per backend, on one of its loops.
func forBackends(t *testing.T, f func(t *testing.T, l *Loop)) {
	for _, e := range loopEngines(t) {
		t.Run(string(e), func(t *testing.T) { f(t, PickOf(e)) })
	}
}

type funcReceiver func()

func (f funcReceiver) Receive(*Loop, uint8, uint64) { f() }

// order records what the loop handed it.
type order struct {
	mu  sync.Mutex
	got []uint64
}

func (o *order) Receive(_ *Loop, _ uint8, arg uint64) {
	o.mu.Lock()
	o.got = append(o.got, arg)
	o.mu.Unlock()
}

// TestPostDeliversEverything: messages posted from several goroutines all
// arrive, each poster's in the order it posted them.
func TestPostDeliversEverything(t *testing.T) { forBackends(t, testPostDeliversEverything) }

func testPostDeliversEverything(t *testing.T, l *Loop) {
	const posters, each = 8, 500
	o := &order{}
	var wg sync.WaitGroup
	for p := range posters {
		wg.Go(func() {
			for i := range each {
				l.Post(o, 0, uint64(p*each+i))
			}
		})
	}
	wg.Wait()
	onLoop(t, l, func() {}) // the loop takes its inbox in order: everything before this is in
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.got) != posters*each {
		t.Fatalf("%d messages arrived, want %d", len(o.got), posters*each)
	}
	last := make([]int, posters)
	for p := range last {
		last[p] = -1
	}
	for _, v := range o.got {
		p, i := int(v)/each, int(v)%each
		if i <= last[p] {
			t.Fatalf("poster %d: message %d after %d", p, i, last[p])
		}
		last[p] = i
	}
}

// sock is a handler that forwards what it reads, and the end of the
// stream.
type sock struct {
	reg   Reg
	data  chan string
	ended chan struct{}
}

func (s *sock) Ready(l *Loop) {
	p, err := l.Read(&s.reg)
	switch {
	case len(p) > 0:
		s.data <- string(p)
	case errors.Is(err, unix.EAGAIN):
	default:
		l.Drop(&s.reg)
		close(s.ended)
	}
}

func socketpair(t *testing.T) (loopSide, peer int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fds[0], fds[1]
}

// TestReadEachReadiness: bytes written to a registered socket reach its
// handler, in order, and the peer's close reaches it as the end of the
// stream, after which it is dropped.
func TestReadEachReadiness(t *testing.T) { forBackends(t, testReadEachReadiness) }

func testReadEachReadiness(t *testing.T, l *Loop) {
	fd, peer := socketpair(t)
	defer unix.Close(peer)
	s := &sock{data: make(chan string, 16), ended: make(chan struct{})}
	var addErr error
	onLoop(t, l, func() { addErr = l.Add(&s.reg, fd, s, Read) })
	if addErr != nil {
		t.Fatal(addErr)
	}
	for _, msg := range []string{"one", "two", "three"} {
		if _, err := unix.Write(peer, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		if got := within(t, s.data, "a write"); got != msg {
			t.Errorf("read %q, want %q", got, msg)
		}
	}
	unix.Close(peer)
	within(t, s.ended, "the peer's close")
}

// expirer records the timers that fired, by name.
type expirer struct {
	name string
	t    Timer
	log  *[]string
}

func (e *expirer) Expire(*Loop, int64) { *e.log = append(*e.log, e.name) }

// TestTimers: due timers fire in deadline order, once; a timer scheduled
// earlier moves up, one scheduled later keeps its earlier deadline, a
// stopped one does not fire, and one not yet due waits.
func TestTimers(t *testing.T) { forBackends(t, testTimers) }

func testTimers(t *testing.T, l *Loop) {
	var log []string
	mk := func(name string) *expirer { return &expirer{name: name, log: &log} }
	a, b, c, d, e, far := mk("a"), mk("b"), mk("c"), mk("d"), mk("e"), mk("far")
	now := clock.Real.Now()
	onLoop(t, l, func() {
		l.Schedule(&a.t, now+3, a)
		l.Schedule(&b.t, now+1, b)
		l.Schedule(&c.t, now+5, c)
		l.Schedule(&c.t, now+2, c) // earlier: moves up
		l.Schedule(&d.t, now+4, d)
		l.Schedule(&d.t, now+9, d) // later: keeps now+4
		l.Schedule(&e.t, now+6, e)
		l.Stop(&e.t)
		l.Schedule(&far.t, now+int64(time.Hour), far)
	})
	done := make(chan struct{})
	probe := mk("probe")
	onLoop(t, l, func() { l.Schedule(&probe.t, now+100, funcExpirer(func() { close(done) })) })
	within(t, done, "the timers")
	var got []string
	onLoop(t, l, func() {
		got = slices.Clone(log)
		l.Stop(&far.t)
	})
	if want := []string{"b", "c", "a", "d"}; !slices.Equal(got, want) {
		t.Errorf("fired %v, want %v", got, want)
	}
}

type funcExpirer func()

func (f funcExpirer) Expire(*Loop, int64) { f() }

// TestHeapOrder checks the heap against a sort over random pushes, moves
// and removals.
func TestHeapOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h timerHeap
	ts := make([]*Timer, 200)
	for i := range ts {
		ts[i] = &Timer{at: r.Int64N(1000)}
		h.push(ts[i])
	}
	for range 300 {
		x := ts[r.IntN(len(ts))]
		switch {
		case x.pos == 0:
			x.at = r.Int64N(1000)
			h.push(x)
		case r.IntN(2) == 0:
			h.removeAt(x.pos - 1)
		default:
			x.at = r.Int64N(1000)
			h.fix(x.pos - 1)
		}
	}
	var want []int64
	for _, x := range ts {
		if x.pos != 0 {
			want = append(want, x.at)
			if h[x.pos-1] != x {
				t.Fatalf("timer at %d: pos %d does not point back at it", x.at, x.pos)
			}
		}
	}
	slices.Sort(want)
	var got []int64
	for len(h) > 0 {
		got = append(got, h[0].at)
		h.removeAt(0)
	}
	if !slices.Equal(got, want) {
		t.Errorf("heap order %v, want %v", got, want)
	}
}

// TestTicker: an armed ticker fires on its loop; Poll, called from fire,
// handles a ready socket of the loop before fire returns; a closed ticker
// refuses to be armed.
func TestTicker(t *testing.T) { forBackends(t, testTicker) }

func testTicker(t *testing.T, l *Loop) {
	fd, peer := socketpair(t)
	defer unix.Close(peer)
	s := &sock{data: make(chan string, 16), ended: make(chan struct{})}
	onLoop(t, l, func() {
		if err := l.Add(&s.reg, fd, s, Read); err != nil {
			t.Error(err)
		}
	})
	polled := make(chan string, 1)
	var tk *Ticker
	tk, err := l.NewTicker(func(tk *Ticker) {
		unix.Write(peer, []byte("x"))
		// Written from the loop itself: only Poll can hand it over now.
		for range 1000 {
			tk.Poll()
			select {
			case got := <-s.data:
				polled <- got
				return
			default:
			}
		}
		polled <- ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.Arm(clock.Real.Now() + int64(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if got := within(t, polled, "the ticker"); got != "x" {
		t.Errorf("Poll from fire handed over %q, want \"x\"", got)
	}
	if err := tk.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tk.Arm(clock.Real.Now()); !errors.Is(err, clock.ErrClosed) {
		t.Errorf("Arm after Close: %v, want clock.ErrClosed", err)
	}
	onLoop(t, l, func() { l.Drop(&s.reg) })
}

func TestParseEngine(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Engine
		ok   bool
	}{
		{"", Auto, true}, {"auto", Auto, true}, {"EPOLL", Epoll, true}, {"goroutine", Goroutine, true},
		{"uring", Uring, true}, {"io_uring", "", false}, {"x", "", false},
	} {
		got, err := ParseEngine(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseEngine(%q) = %q, %v; want %q, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
	if ok, note := Goroutine.Loops(); ok || note != "" {
		t.Errorf("Goroutine.Loops() = %v, %q; want false, no note", ok, note)
	}
	if ok, _ := Epoll.Loops(); !ok {
		t.Error("Epoll.Loops() = false on Linux")
	}
}

// TestAffinity: a claimed port names its loop until it is released, and
// only the claiming loop's release forgets it.
func TestAffinity(t *testing.T) {
	all, err := Loops()
	if err != nil {
		t.Fatal(err)
	}
	const port = 40001
	if got := Affine(port); got != -1 {
		t.Fatalf("Affine(%d) = %d before any claim, want -1", port, got)
	}
	l := all[len(all)-1]
	l.Claim(port)
	if got := Affine(port); got != l.Index() {
		t.Errorf("Affine(%d) = %d after loop %d claimed it", port, got, l.Index())
	}
	if len(all) > 1 {
		all[0].Release(port) // not its claim: no effect
		if got := Affine(port); got != l.Index() {
			t.Errorf("Affine(%d) = %d after another loop's release, want %d", port, got, l.Index())
		}
	}
	l.Release(port)
	if got := Affine(port); got != -1 {
		t.Errorf("Affine(%d) = %d after the release, want -1", port, got)
	}
	for _, p := range []int{0, -1, 1 << 16} {
		l.Claim(p)
		if got := Affine(p); got != -1 {
			t.Errorf("Affine(%d) = %d, want -1 for a port out of range", p, got)
		}
	}
}

// TestTickerRearmedInFire: a fire that arms the next deadline is called
// again at it (the expiry it found is not read away after the re-arm); a
// fire that arms nothing is not called again (the expiry is cleared).
func TestTickerRearmedInFire(t *testing.T) { forBackends(t, testTickerRearmedInFire) }

func testTickerRearmedInFire(t *testing.T, l *Loop) {
	const fires = 5
	var mu sync.Mutex
	n := 0
	last := make(chan struct{})
	tk, err := l.NewTicker(func(tk *Ticker) {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		switch {
		case k < fires:
			if err := tk.Arm(clock.Real.Now() + int64(100*time.Microsecond)); err != nil {
				t.Error(err)
			}
		case k == fires:
			close(last)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	if err := tk.Arm(clock.Real.Now()); err != nil {
		t.Fatal(err)
	}
	within(t, last, "the last fire")
	// Two round trips: the loop has waited for its descriptors at least
	// once since the last fire, and would have fired again had the expiry
	// stayed.
	onLoop(t, l, func() {})
	onLoop(t, l, func() {})
	mu.Lock()
	defer mu.Unlock()
	if n != fires {
		t.Errorf("fire ran %d times, want %d", n, fires)
	}
}

// TestPickFillsALoopFirst: a loop takes fillUsers users before the next
// one gets any; once every loop has that many, the least used gets the
// next; a user that leaves makes room where it was.
func TestPickFillsALoopFirst(t *testing.T) {
	all := []*Loop{{index: 0}, {index: 1}, {index: 2}}
	picks := func(n int) []int {
		got := make([]int, len(all))
		for range n {
			got[pick(all).Index()]++
		}
		return got
	}
	if got := picks(fillUsers); !slices.Equal(got, []int{fillUsers, 0, 0}) {
		t.Errorf("the first %d picks went to loops %v, want all to loop 0", fillUsers, got)
	}
	if got := picks(fillUsers + 1); !slices.Equal(got, []int{0, fillUsers, 1}) {
		t.Errorf("the next %d picks went to %v, want loop 1 filled, then loop 2", fillUsers+1, got)
	}
	picks(fillUsers - 1) // loop 2 full too
	if got := picks(4); !slices.Equal(got, []int{2, 1, 1}) {
		t.Errorf("with every loop full, 4 picks went to %v, want the least used in turn", got)
	}
	all[1].Leave()
	all[1].Leave()
	if got := pick(all); got != all[1] {
		t.Errorf("after two users left loop 1, the pick went to loop %d", got.Index())
	}
	if got := []int{all[0].Users(), all[1].Users(), all[2].Users()}; !slices.Equal(got, []int{fillUsers + 2, fillUsers, fillUsers + 1}) {
		t.Errorf("users %v, want %v", got, []int{fillUsers + 2, fillUsers, fillUsers + 1})
	}
}

// flipSock is a handler that, watched for writing, writes a byte and
// goes back to reading (as a writer whose queue emptied does) and says so
// on wrote; a readiness for writing on a full socket is spurious, and it
// keeps waiting. Watched for reading, it forwards what it reads.
type flipSock struct {
	t     *testing.T
	reg   Reg
	wrote chan struct{}
	data  chan string
}

func (s *flipSock) Ready(l *Loop) {
	if s.reg.want == Write {
		if _, err := unix.Write(s.reg.fd, []byte{'w'}); err != nil {
			return // full after all: writable later
		}
		if err := l.Watch(&s.reg, Read); err != nil {
			s.t.Error(err)
		}
		s.wrote <- struct{}{}
		return
	}
	if p, _ := l.Read(&s.reg); len(p) > 0 {
		s.data <- string(p)
	}
}

// TestWriteAfterReadAfterWrite: a socket watched for writing, then for
// reading while its write readiness is reported again behind it, then —
// full — for writing once more, is reported writable once the peer has
// read what filled it. The io_uring backend once kept the readiness its
// POLLOUT poll reported while the socket was watched for reading, armed
// no new poll for the full socket, and never reported it: an HTTP/2
// request body of a few MiB hung on its connection.
func TestWriteAfterReadAfterWrite(t *testing.T) { forBackends(t, testWriteAfterReadAfterWrite) }

func testWriteAfterReadAfterWrite(t *testing.T, l *Loop) {
	fd, peer := socketpair(t)
	defer unix.Close(peer)
	s := &flipSock{t: t, wrote: make(chan struct{}, 1), data: make(chan string, 1)}
	var err error
	onLoop(t, l, func() {
		if err = l.Add(&s.reg, fd, s, Read); err == nil {
			err = l.Watch(&s.reg, Write)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	within(t, s.wrote, "the first write readiness")
	// A read handed over: the loop has waited since the socket went back
	// to reading, with a poll for writing armed again behind it (io_uring).
	if _, err := unix.Write(peer, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if got := within(t, s.data, "a read between the writes"); got != "x" {
		t.Fatalf("read %q, want \"x\"", got)
	}
	filled := 1 // the first 'w'
	onLoop(t, l, func() {
		chunk := make([]byte, 64<<10)
		for {
			n, werr := unix.Write(fd, chunk)
			if werr != nil {
				break
			}
			filled += n
		}
		err = l.Watch(&s.reg, Write)
	})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	for read := 0; read < filled; {
		n, rerr := unix.Read(peer, buf)
		if rerr != nil {
			t.Fatalf("reading what filled the socket (%d of %d): %v", read, filled, rerr)
		}
		read += n
	}
	within(t, s.wrote, "the write readiness after the peer read")
	onLoop(t, l, func() { l.Drop(&s.reg) })
}
