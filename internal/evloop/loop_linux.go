//go:build linux

package evloop

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/sse-latency/sse-latency/internal/clock"
)

// ReadBufferSize is the size of a loop's read buffer: what one read(2)
// takes at most.
const ReadBufferSize = 4 << 10

// Interest is what a loop waits for on a socket.
type Interest uint8

// The interests.
const (
	Read  Interest = iota + 1 // readable (or closed, or in error)
	Write                     // writable: a connect or a write in progress
)

// A Handler is told, on its loop's goroutine, that its socket is ready
// for what it is watched for.
type Handler interface {
	Ready(l *Loop)
}

// A Receiver gets, on the loop's goroutine, what other goroutines Post to
// the loop.
type Receiver interface {
	Receive(l *Loop, kind uint8, arg uint64)
}

// An Expirer is told, on the loop's goroutine, that a Timer it scheduled
// is due.
type Expirer interface {
	Expire(l *Loop, now int64)
}

// Reg is a socket's registration with a loop; its owner embeds it. The
// zero Reg is registered nowhere.
type Reg struct {
	fd   int
	key  int32 // 1 + its key; 0: not registered
	want Interest
}

// FD returns the registered descriptor.
func (r *Reg) FD() int { return r.fd }

// Timer is a deadline in a loop's heap; its owner embeds it. The zero
// Timer is not scheduled.
type Timer struct {
	at  int64
	pos int // 1 + its index in the heap; 0: not in it
	h   Expirer
}

// A Set is the event loops of one engine (Epoll or Uring), each a
// goroutine. The process has one per engine (LoopsOf, PickOf): one loop
// per CPU (GOMAXPROCS when first used), started with the first use and
// never stopped (an idle loop is a parked goroutine, costing nothing).
// NewSet makes a private one, which Stop ends: a test's own loops.
type Set struct {
	engine Engine
	once   sync.Once
	all    []*Loop
	err    error
	wg     sync.WaitGroup // the loops' goroutines
	stop   sync.Once
}

// The process's sets, per engine.
var (
	epollLoops = Set{engine: Epoll}
	uringLoops = Set{engine: Uring}
)

// NewSet starts a private set of n loops of engine e (Epoll or Uring; n
// <= 0: one per CPU), for its caller to Stop. It fails as LoopsOf does
// where e cannot run; no loop is left running then.
func NewSet(e Engine, n int) (*Set, error) {
	if !e.OnLoops() {
		return nil, fmt.Errorf("evloop: NewSet(%q): not an engine of the event loops", e)
	}
	s := &Set{engine: e}
	s.start(n)
	if s.err != nil {
		return nil, s.err
	}
	return s, nil
}

// start starts the set's n loops (n <= 0: GOMAXPROCS), once. On a
// failure it stops the loops it started and records the error.
func (s *Set) start(n int) {
	s.once.Do(func() {
		if n <= 0 {
			n = runtime.GOMAXPROCS(0)
		}
		for i := range n {
			l, err := newLoop(i, s.engine, &s.wg)
			if err != nil {
				s.err = err
				break
			}
			s.all = append(s.all, l)
		}
		if s.engine != Uring { // those run already, on their threads
			for _, l := range s.all {
				s.wg.Add(1)
				go l.run(&s.wg)
			}
		}
		if s.err != nil {
			s.stopLoops()
			s.all = nil
		}
	})
}

// Engine is the engine of the set's loops.
func (s *Set) Engine() Engine { return s.engine }

// Loops returns the set's loops.
func (s *Set) Loops() []*Loop { return s.all }

// Pick returns a loop of the set for a new user (see PickOf).
func (s *Set) Pick() *Loop { return pick(s.all) }

// Stop stops the set's loops and returns once their goroutines have
// ended and their descriptors (epoll sets, rings, timers, sockets) are
// closed. What was registered is failed: a Handler that is a Stopper is
// told (ErrStopped), then every socket and Ticker still on a loop is
// closed; the timers are forgotten. A message posted to a stopped loop is
// handled on the poster's goroutine, where Add, Watch, Read and NewTicker
// fail with ErrStopped and a Ticker's Arm with clock.ErrClosed: a request
// started on a stopped loop fails at once, naming it. Stop the users of a
// set first where they can be (a server's shards stop with Serve). The
// process's own sets are never stopped; calling Stop on one panics.
func (s *Set) Stop() {
	if s == &epollLoops || s == &uringLoops {
		panic("evloop: Stop of the process's own loops")
	}
	s.stop.Do(s.stopLoops)
}

// stopLoops posts the stop to every loop and waits for their goroutines.
func (s *Set) stopLoops() {
	for _, l := range s.all {
		l.Post(stopMessage{}, 0, 0)
	}
	s.wg.Wait()
}

// ErrStopped is the error of a loop that was stopped (Set.Stop).
var ErrStopped = errors.New("evloop: the event loop was stopped")

// A Stopper is a Handler that wants to know that its loop stopped
// (Set.Stop), to fail what it was doing with err, on the loop's goroutine.
// The loop then closes its socket if it is still registered.
type Stopper interface {
	Stopped(l *Loop, err error)
}

// stopMessage is the message that stops a loop.
type stopMessage struct{}

// Receive marks the loop to stop after the messages in hand.
func (stopMessage) Receive(l *Loop, _ uint8, _ uint64) { l.quit = true }

// LoopsOf returns the loops of engine e (Epoll or Uring), starting them
// at the first call.
func LoopsOf(e Engine) ([]*Loop, error) {
	set := &epollLoops
	if e == Uring {
		set = &uringLoops
	}
	set.start(0)
	return set.all, set.err
}

// Loops returns the epoll loops of the process, starting them at the
// first call.
func Loops() ([]*Loop, error) { return LoopsOf(Epoll) }

// Available reports why the epoll loops cannot run here, nil when they
// can.
func Available() error {
	_, err := Loops()
	return err
}

// UringAvailable reports why the io_uring loops cannot run here — the
// kernel refuses io_uring (io_uring_setup fails with ENOSYS or EPERM when
// it is disabled, by the kernel.io_uring_disabled sysctl or a seccomp
// filter) or lacks a feature of Linux 6.1 —, nil when they can.
func UringAvailable() error {
	_, err := LoopsOf(Uring)
	return err
}

// Pick returns an epoll loop for a new user (see PickOf).
func Pick() *Loop { return PickOf(Epoll) }

// PickOf returns a loop of engine e for a new user — a client session,
// which keeps it for its requests —, to Leave when it is done with it:
// the first loop with fewer than fillUsers users, else the one with the
// fewest. A few hundred streams at the usual token rates take a fraction
// of one CPU, and a loop's wake-ups, the larger part of its CPU at those
// loads, are shared by all its streams: spread over every loop, the same
// streams would wake each of them as often, for fewer tokens each
// (docs/PERF.md, "Wake-ups"). The server puts each stream on the loop of
// its client (Affine), so that both sides of a run of up to fillUsers
// streams are on one loop and one CPU.
func PickOf(e Engine) *Loop {
	all, err := LoopsOf(e)
	if err != nil {
		panic("evloop: PickOf without the engine available: " + err.Error())
	}
	return pick(all)
}

// pick is PickOf among the loops all.
func pick(all []*Loop) *Loop {
	best := all[0]
	for _, l := range all {
		n := l.users.Load()
		if n < fillUsers {
			best = l
			break
		}
		if n < best.users.Load() {
			best = l
		}
	}
	best.users.Add(1)
	return best
}

// fillUsers is how many users PickOf gives a loop before it uses the
// next one.
const fillUsers = 128

// Leave tells l that one of the users PickOf gave it is done with it.
func (l *Loop) Leave() { l.users.Add(-1) }

// Users returns how many users PickOf gave l that have not left.
func (l *Loop) Users() int { return int(l.users.Load()) }

// Loop is one event loop. Its methods other than Post, Index and the
// Ticker's Arm and Close are for its own goroutine: the handlers,
// receivers and expirers it calls.
type Loop struct {
	index int
	be    backend
	buf   []byte

	regs    []entry // by key
	free    []int32
	closing []int // descriptors dropped during this pass, closed after it
	freed   []int32
	timers  timerHeap
	keys    [maxEvents]int32
	nested  [maxEvents]int32 // Ticker.Poll's

	mu       sync.Mutex
	inbox    []message // guarded by mu
	work     []message
	queued   atomic.Int32
	sleeping atomic.Bool
	users    atomic.Int32 // PickOf's users that have not left

	quit bool        // a stopMessage came: the loop stops after the messages in hand
	dead atomic.Bool // stopped (set under mu): Post handles messages itself, under deadMu
	// deadMu serialises the messages handled on posters' goroutines once
	// the loop is stopped.
	deadMu sync.Mutex
}

// entry is what a key stands for.
type entry struct {
	h      Handler
	fd     int
	ticker bool // a Ticker's timerfd: not handled by Ticker.Poll
}

type message struct {
	r    Receiver
	kind uint8
	arg  uint64
}

// newLoop makes loop index of engine e. A Uring loop's goroutine runs
// at once, counted in wg; the caller starts an Epoll loop's (run).
func newLoop(index int, e Engine, wg *sync.WaitGroup) (*Loop, error) {
	l := &Loop{index: index}
	if e == Uring {
		// The ring belongs to the thread of the loop's goroutine: it is
		// made there, and the goroutine runs the loop at once.
		made := make(chan error)
		wg.Add(1)
		go func() {
			be, err := newUringBackend()
			if err != nil {
				runtime.UnlockOSThread()
				wg.Done()
				made <- err
				return
			}
			l.be = be
			made <- nil
			l.run(wg)
		}()
		return l, <-made
	}
	be, err := newEpollBackend()
	if err != nil {
		return nil, err
	}
	l.be, l.buf = be, make([]byte, ReadBufferSize)
	return l, nil
}

// Index is the loop's place among Loops().
func (l *Loop) Index() int { return l.index }

// Post hands (kind, arg) to r on the loop's goroutine. Any goroutine.
// On a stopped loop (Set.Stop) r.Receive runs on the calling goroutine.
func (l *Loop) Post(r Receiver, kind uint8, arg uint64) {
	l.mu.Lock()
	if l.dead.Load() {
		l.mu.Unlock()
		l.deadMu.Lock()
		defer l.deadMu.Unlock()
		r.Receive(l, kind, arg)
		l.release()
		return
	}
	l.inbox = append(l.inbox, message{r, kind, arg})
	l.queued.Add(1)
	// Woken under mu, so that a stopping loop closes its backend only
	// after every wake-up of it.
	if l.sleeping.Load() {
		l.be.wake()
	}
	l.mu.Unlock()
}

// Add registers fd, a non-blocking socket, with h as its handler, watched
// for want.
func (l *Loop) Add(r *Reg, fd int, h Handler, want Interest) error {
	return l.add(r, fd, entry{h: h}, want)
}

func (l *Loop) add(r *Reg, fd int, e entry, want Interest) error {
	if l.dead.Load() {
		return ErrStopped
	}
	e.fd = fd
	var k int32
	if n := len(l.free); n > 0 {
		k = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		k = int32(len(l.regs))
		l.regs = append(l.regs, entry{})
	}
	if err := l.be.watch(fd, k, want, false, !e.ticker); err != nil {
		l.free = append(l.free, k)
		return err
	}
	*r = Reg{fd: fd, key: k + 1, want: want}
	l.regs[k] = e
	return nil
}

// Watch changes what r is watched for.
func (l *Loop) Watch(r *Reg, want Interest) error {
	if r.want == want || r.key == 0 {
		return nil
	}
	if l.dead.Load() {
		return ErrStopped
	}
	r.want = want
	return l.be.watch(r.fd, r.key-1, want, true, true)
}

// Drop forgets r at once — events still to come for it are ignored — and
// closes its descriptor once the events in hand have been handled, so
// that neither its key nor its descriptor number can be taken by a new
// socket while events naming them are being handled.
func (l *Loop) Drop(r *Reg) {
	if r.key == 0 {
		return
	}
	k := r.key - 1
	if l.dead.Load() && l.regs[k].h == nil { // closed by the stop already
		r.key = 0
		return
	}
	l.be.unwatch(k)
	l.regs[k] = entry{}
	l.freed = append(l.freed, k)
	l.closing = append(l.closing, r.fd)
	r.key = 0
}

// Read reads once from r's socket into the loop's buffer: p holds the
// bytes (valid until the next Read on this loop); len(p) == 0 with a nil
// error is the end of the stream; unix.EAGAIN means nothing was there
// after all.
func (l *Loop) Read(r *Reg) ([]byte, error) {
	if l.dead.Load() {
		return nil, ErrStopped
	}
	return l.be.read(r.fd, r.key-1, l.buf)
}

// Buffered reports whether bytes, or the end of the stream, of r's socket
// were received and not read yet beyond what the socket itself holds (a
// completion backend receives ahead): a peek at the socket misses them.
func (l *Loop) Buffered(r *Reg) bool {
	return r.key != 0 && l.be.buffered(r.key-1)
}

// Schedule makes t due no later than at: an earlier deadline t already
// has stays (the expirer then schedules again when it finds that its
// deadline has moved later).
func (l *Loop) Schedule(t *Timer, at int64, h Expirer) {
	t.h = h
	switch {
	case t.pos == 0:
		t.at = at
		l.timers.push(t)
	case at < t.at:
		t.at = at
		l.timers.fix(t.pos - 1)
	}
}

// Stop takes t out of the heap.
func (l *Loop) Stop(t *Timer) {
	if t.pos != 0 {
		l.timers.removeAt(t.pos - 1)
	}
}

// affinity maps a local TCP port of a client connection on a loop to
// that loop (its index + 1; 0: none). The server, in the same process,
// looks up the remote port of the connections it accepts, so that the
// stream answering a connection is written by the loop that reads it: on
// loopback the tokens a loop writes are then read by the same loop, in the
// same wake-up. A port of another process's connection (a gateway's) may
// collide with one in the table: the stream then goes to that loop, as
// good a choice as any.
var affinity [1 << 16]atomic.Uint32

// Claim records that the connection with local port port is on l. The
// loop's goroutine; Release when the connection closes.
func (l *Loop) Claim(port int) {
	if port > 0 && port < len(affinity) {
		affinity[port].Store(uint32(l.index + 1))
	}
}

// Release forgets a Claim.
func (l *Loop) Release(port int) {
	if port > 0 && port < len(affinity) {
		affinity[port].CompareAndSwap(uint32(l.index+1), 0)
	}
}

// Affine returns the index of the loop that claimed port, -1 if none did.
// Any goroutine.
func Affine(port int) int {
	if port > 0 && port < len(affinity) {
		return int(affinity[port].Load()) - 1
	}
	return -1
}

// run is the loop's goroutine, counted in wg; it returns once the loop
// is stopped (stopMessage) and closed.
func (l *Loop) run(wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		l.handleInbox()
		if l.quit {
			l.shutdown()
			return
		}
		l.sleeping.Store(true)
		var until int64
		if l.queued.Load() > 0 {
			until = -1 // messages came in meanwhile: only look
		} else if len(l.timers) > 0 {
			until = l.timers[0].at
		}
		n, err := l.be.wait(until, l.keys[:], true)
		l.sleeping.Store(false)
		if err != nil {
			// The epoll descriptor broke: nothing this loop can recover.
			panic("evloop: " + err.Error())
		}
		l.dispatch(l.keys[:n], true)
		l.expire(clock.Real.Now())
		l.release()
	}
}

// shutdown closes the stopped loop, on its goroutine: the messages still
// in its inbox are handled as a stopped loop's; the Stoppers among the
// handlers are told; the Tickers are closed and every descriptor still
// registered, the backend's last.
func (l *Loop) shutdown() {
	l.deadMu.Lock() // the posters that find the loop stopped wait for the end of this
	defer l.deadMu.Unlock()
	l.mu.Lock()
	l.dead.Store(true)
	rest := l.inbox
	l.inbox, l.work = nil, nil
	l.queued.Store(0)
	l.sleeping.Store(false)
	l.mu.Unlock()
	for _, m := range rest {
		m.r.Receive(l, m.kind, m.arg)
	}
	for k := range l.regs {
		e := l.regs[k]
		if t, ok := e.h.(*Ticker); ok && e.ticker {
			t.mu.Lock() // no Arm on the timerfd once it is closed
			t.done.Store(true)
			t.mu.Unlock()
			continue
		}
		if s, ok := e.h.(Stopper); ok {
			s.Stopped(l, ErrStopped)
		}
	}
	for k := range l.regs {
		if e := l.regs[k]; e.h != nil {
			l.be.unwatch(int32(k))
			l.regs[k] = entry{}
			l.closing = append(l.closing, e.fd)
		}
	}
	l.timers = nil
	l.release()
	l.be.close()
}

// dispatch calls the handlers of the ready keys (the tickers' too when
// tickers is set).
func (l *Loop) dispatch(keys []int32, tickers bool) {
	for _, k := range keys {
		if k == wakeKey {
			l.be.woken()
			continue
		}
		if k < 0 || int(k) >= len(l.regs) {
			continue
		}
		if e := l.regs[k]; e.h != nil && (tickers || !e.ticker) {
			e.h.Ready(l)
		}
	}
}

// handleInbox takes every message posted so far.
func (l *Loop) handleInbox() {
	if l.queued.Load() == 0 {
		return
	}
	l.mu.Lock()
	l.work, l.inbox = l.inbox, l.work[:0]
	l.queued.Store(0)
	l.mu.Unlock()
	for i := range l.work {
		m := &l.work[i]
		m.r.Receive(l, m.kind, m.arg)
		*m = message{}
	}
	l.release()
}

// expire calls the expirers whose timers are due.
func (l *Loop) expire(now int64) {
	for len(l.timers) > 0 && l.timers[0].at <= now {
		t := l.timers[0]
		l.timers.removeAt(0)
		t.h.Expire(l, now)
	}
}

// release closes what Drop set aside, and frees its keys.
func (l *Loop) release() {
	for _, fd := range l.closing {
		unix.Close(fd)
	}
	l.closing = l.closing[:0]
	l.free = append(l.free, l.freed...)
	l.freed = l.freed[:0]
}

// A Ticker is a precise timer (a timerfd) in a loop's set, for the
// server's emission shards: Arm from any goroutine, and the loop calls its
// fire function when the deadline passes.
type Ticker struct {
	l     *Loop
	reg   Reg
	fd    int
	added chan error
	mu    sync.Mutex
	spec  unix.ItimerSpec
	arms  uint64 // guarded by mu: Arm calls so far
	fire  func(t *Ticker)
	done  atomic.Bool
}

// What a Ticker posts to its loop.
const (
	tickerAdd uint8 = iota + 1
	tickerClose
)

// NewTicker adds a timerfd to the loop; fire runs on the loop's goroutine
// each time an armed deadline passes. It must not be called from the
// loop's goroutine (it waits for the loop to add the timer).
func (l *Loop) NewTicker(fire func(t *Ticker)) (*Ticker, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("timerfd_create", err)
	}
	t := &Ticker{l: l, fd: fd, fire: fire, added: make(chan error, 1)}
	l.Post(t, tickerAdd, 0)
	if err := <-t.added; err != nil {
		unix.Close(fd)
		return nil, err
	}
	return t, nil
}

// Arm sets the absolute process-clock deadline at which fire runs,
// replacing the previous one. Any goroutine.
func (t *Ticker) Arm(deadline int64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done.Load() {
		return clock.ErrClosed
	}
	t.spec = unix.ItimerSpec{Value: unix.NsecToTimespec(max(clock.Real.Mono(deadline), 1))}
	t.arms++
	if err := timerfdSettime(t.fd, &t.spec); err != nil {
		return os.NewSyscallError("timerfd_settime", err)
	}
	return nil
}

// Close stops the ticker: fire is not called once Close has returned,
// and the loop closes the timer. Any goroutine but the loop's own.
func (t *Ticker) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done.Swap(true) {
		return nil
	}
	t.l.Post(t, tickerClose, 0)
	return nil
}

// Receive adds the ticker to its loop, or drops it.
func (t *Ticker) Receive(l *Loop, kind uint8, _ uint64) {
	switch kind {
	case tickerAdd:
		t.added <- l.add(&t.reg, t.fd, entry{h: t, ticker: true}, Read)
	case tickerClose:
		l.Drop(&t.reg)
	}
}

// Ready runs fire, then clears the timerfd unless it was armed again
// meanwhile: setting a timerfd clears its expiry, so that a fire that
// arms the next deadline (a shard's tick) costs no read(2). The check and
// the read are one step under mu, so that an Arm from another goroutine
// after fire is never cleared.
func (t *Ticker) Ready(*Loop) {
	t.mu.Lock()
	arms := t.arms
	t.mu.Unlock()
	if !t.done.Load() {
		t.fire(t)
	}
	t.mu.Lock()
	if t.arms == arms {
		var b [8]byte
		RawRead(t.fd, b[:])
	}
	t.mu.Unlock()
}

// Poll handles, without blocking, the sockets of the loop that are ready
// (not its tickers): for fire to call while it spins towards a deadline,
// so that the loop's other sockets are not kept waiting.
func (t *Ticker) Poll() {
	l := t.l
	n, err := l.be.wait(-1, l.nested[:], false)
	if err != nil || n == 0 {
		return
	}
	l.dispatch(l.nested[:n], false)
}
