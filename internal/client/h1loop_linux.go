//go:build linux

package client

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/sse-latency/sse-latency/internal/clock"
	"github.com/sse-latency/sse-latency/internal/evloop"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/tlsrecord"
)

// This file is the epoll engine's HTTP/1.1 exchange: the steps, rules and
// failure texts of Session.doH1 and drainH1, as a state machine that an
// event loop (package evloop) drives instead of a goroutine that blocks.
// The response goes through the same reader.

// errLoopGone: the loop could not watch a socket (its epoll set failed).
var errLoopGone = errors.New("event loop: cannot watch the socket")

// loopGone is the error of a loop that refused a socket: ErrStopped when
// it was stopped, else errLoopGone.
func loopGone(err error) error {
	if errors.Is(err, evloop.ErrStopped) {
		return err
	}
	return errLoopGone
}

// pickLoop returns a loop for a new session: of Options.Loops when set,
// else of the process's loops of the engine.
func (q *Request) pickLoop() *evloop.Loop {
	if q.Loops != nil {
		return q.Loops.Pick()
	}
	return evloop.PickOf(q.loopEngine())
}

// What a session posts to its loop.
const (
	msgStart  uint8 = iota + 1 // run the request (Session.Start)
	msgCancel                  // a watched context is done: its requests end as interrupted
	msgClose                   // close the kept connection (Session.Close)
	msgState                   // look at the kept connection (Session.keptState)
)

// loopShared is what the loops need of a Request, resolved once.
type loopShared struct {
	once sync.Once
	sa   unix.Sockaddr
	err  error
}

// loopSession is a Session's state on the epoll engine. Its loop owns it
// while a request runs, and owns c (the kept connection) always.
type loopSession struct {
	s    *Session
	l    *evloop.Loop
	user *evloop.Loop // the loop pickLoop counted the session on (l, or another one for a group's)
	left bool         // Close told the loop that the session is done with it
	c    *econn       // the open connection; nil: none
	// lost is what the loop found on the kept connection while it was
	// idle, and closed it for: peerClosed (a reuse failure for the next
	// request) or pending (bytes: poisoned).
	lost connState
	// kept is set while c is open between requests, for Close.
	kept atomic.Bool

	// The request in flight.
	ctx      context.Context
	rec      *result.Request
	done     func(*result.Request)
	watch    *ctxWatch // the watch of ctx on the loop; nil: none
	watchAt  int       // the request's place in watch.sessions
	active   bool
	deadline int64
	x        h1Exchange  // the request's exchange; over WebSocket only its reader (x.r) serves
	ws       *wsExchange // the request's, over WebSocket (x.r is its reader)
	out      []byte      // the request as it goes on the wire
	reused   bool        // the attempt runs on a kept connection
	dial     *tlsDial    // the TLS dial and handshake in progress on a goroutine; nil: none

	wait   chan struct{} // Do waits here
	signal func(*result.Request)
	ack    chan struct{} // msgClose, msgState: closed once done
	state  connState     // msgState's answer
	found  bool          // msgState: there is a kept connection, or one was lost
}

// connPhase is where a connection is in its exchange.
type connPhase uint8

const (
	phConnecting connPhase = iota + 1 // connect(2) in progress
	phWriting                         // the request is being written
	phReading                         // the response
	phDraining                        // after the terminal event, to the framing end
	phIdle                            // kept between requests
)

// econn is one connection of a loop.
type econn struct {
	reg   evloop.Reg
	timer evloop.Timer
	phase connPhase
	ls    *loopSession

	written int    // bytes of ls.out written
	idleAt  int64  // the idle timeout (0: none)
	waitAt  int64  // the end of the wait for an error body (0: none)
	drainAt int64  // the end of the drain
	port    int    // the local port, claimed on the loop (0: none)
	wsOut   []byte // WebSocket frames a write could not take yet
	pingAt  int64  // WebSocket: when to ping, or when the pong is due (0: none)

	h2       *h2State        // over HTTP/2: the connection's frames and streams; nil: HTTP/1.1
	hs       h2Stream        // over HTTP/2: the stream of the session's request on h2
	waiting  bool            // a session's wait for its group's connection (loopGroup.waiting), no socket
	settleAt int64           // waiting: the end of the bound on the peer's SETTINGS (0: none yet)
	tls      *tlsrecord.Conn // over TLS: the record layer; nil: plain TCP
	pt       []byte          // over TLS: the plaintext of the last read
	tlsEOF   bool            // over TLS: the peer's close_notify came
	readAt   int64           // over TLS: when the last read returned
}

// expiry is c's next deadline, 0 for none.
func (c *econn) expiry() int64 {
	if c.waiting {
		return minSet(c.ls.deadline, c.settleAt)
	}
	switch c.phase {
	case phConnecting, phWriting:
		return c.ls.deadline
	case phReading:
		return minSet(minSet(minSet(c.ls.deadline, c.idleAt), c.waitAt), c.pingAt)
	case phDraining:
		return minSet(c.drainAt, c.idleAt)
	}
	return 0
}

// minSet is the earlier of two deadlines, 0 meaning none.
func minSet(a, b int64) int64 {
	switch {
	case a == 0:
		return b
	case b == 0 || a < b:
		return a
	}
	return b
}

// loopAddr returns the target address as a socket address, resolved once
// per Request (a Request not made by New resolves it for every request);
// a *unix.SockaddrInet4 or *unix.SockaddrInet6, shared: copy it.
func (q *Request) loopAddr() (unix.Sockaddr, error) {
	if q.shared == nil {
		return resolveSockaddr(q.Addr)
	}
	ls := &q.shared.loop
	ls.once.Do(func() { ls.sa, ls.err = resolveSockaddr(q.Addr) })
	return ls.sa, ls.err
}

func resolveSockaddr(addr string) (unix.Sockaddr, error) {
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, err
	}
	if ip4 := ta.IP.To4(); ip4 != nil {
		sa := &unix.SockaddrInet4{Port: ta.Port}
		copy(sa.Addr[:], ip4)
		return sa, nil
	}
	if ta.IP == nil { // ":port": this host, as net.Dial takes it
		return &unix.SockaddrInet4{Port: ta.Port, Addr: [4]byte{127, 0, 0, 1}}, nil
	}
	sa := &unix.SockaddrInet6{Port: ta.Port, ZoneId: zoneID(ta.Zone)}
	copy(sa.Addr[:], ta.IP.To16())
	return sa, nil
}

// zoneID is the interface index of an IPv6 zone ("" or unknown: 0).
func zoneID(zone string) uint32 {
	if zone == "" {
		return 0
	}
	if ifi, err := net.InterfaceByName(zone); err == nil {
		return uint32(ifi.Index)
	}
	return 0
}

// startLoop is Start on the epoll engine.
func (s *Session) startLoop(ctx context.Context, rec *result.Request, done func(*result.Request)) {
	s.prepare(rec)
	ls := &s.ev
	if ls.l == nil {
		ls.s, ls.l = s, s.q.pickLoop()
		ls.user = ls.l
		if g := s.group; g != nil {
			ls.l = g.loopOf(ls.l) // the sessions of a group share its loop
		}
	}
	ls.ctx, ls.rec, ls.done = ctx, rec, done
	ls.l.Post(ls, msgStart, 0)
}

// ctxWatch watches one context for the requests under it on one loop —
// a batch's requests share theirs —: one context.AfterFunc for all of
// them, where one each would take a few hundred bytes per request in
// flight (thousands at a time).
type ctxWatch struct {
	key      watchKey
	stop     func() bool
	sessions []*loopSession // the requests in flight under the context
}

type watchKey struct {
	l   *evloop.Loop
	ctx context.Context
}

// watches holds the watches of every loop; a loop's goroutine adds and
// removes its own.
var watches struct {
	mu sync.Mutex
	m  map[watchKey]*ctxWatch
}

// watchCtx puts the request in flight among those its context's watch
// ends as interrupted when the context is done. The loop's goroutine.
func (ls *loopSession) watchCtx() {
	k := watchKey{ls.l, ls.ctx}
	watches.mu.Lock()
	w := watches.m[k]
	made := w == nil
	if made {
		if watches.m == nil {
			watches.m = make(map[watchKey]*ctxWatch)
		}
		w = &ctxWatch{key: k}
		watches.m[k] = w
	}
	watches.mu.Unlock()
	if made {
		l := ls.l
		w.stop = context.AfterFunc(ls.ctx, func() { l.Post(w, msgCancel, 0) })
	}
	ls.watch, ls.watchAt = w, len(w.sessions)
	w.sessions = append(w.sessions, ls)
}

// unwatchCtx takes the request out of its context's watch, which goes
// when no request is left in it. The loop's goroutine.
func (ls *loopSession) unwatchCtx() {
	w := ls.watch
	if w == nil {
		return
	}
	last := len(w.sessions) - 1
	moved := w.sessions[last]
	w.sessions[ls.watchAt], moved.watchAt = moved, ls.watchAt
	w.sessions[last] = nil
	w.sessions = w.sessions[:last]
	ls.watch = nil
	if last == 0 {
		w.stop()
		watches.mu.Lock()
		delete(watches.m, w.key)
		watches.mu.Unlock()
	}
}

// Receive: the watched context is done; every request under it ends as
// interrupted.
func (w *ctxWatch) Receive(*evloop.Loop, uint8, uint64) {
	for _, ls := range slices.Clone(w.sessions) {
		ls.cancel()
	}
}

// doLoop is Do on the epoll engine: Start, and wait.
func (s *Session) doLoop(ctx context.Context, rec *result.Request) {
	ls := &s.ev
	if ls.wait == nil {
		ls.wait = make(chan struct{}, 1)
		ls.signal = func(*result.Request) { ls.wait <- struct{}{} }
	}
	s.startLoop(ctx, rec, ls.signal)
	<-ls.wait
}

// closeLoop is Close on the epoll engine: the session leaves its loop
// (evloop.PickOf counts the sessions on each), and the loop closes the
// kept connection, if there is one, before Close returns.
func (s *Session) closeLoop() {
	ls := &s.ev
	if ls.l != nil && !ls.left {
		ls.left = true
		ls.user.Leave()
	}
	if ls.l == nil || !ls.kept.Load() {
		return
	}
	ls.ack = make(chan struct{})
	ls.l.Post(ls, msgClose, 0)
	<-ls.ack
}

// Receive takes what the session posted to its loop.
func (ls *loopSession) Receive(_ *evloop.Loop, kind uint8, _ uint64) {
	switch kind {
	case msgStart:
		ls.start()
	case msgClose:
		if !ls.active {
			ls.closeConn()
			ls.lost = idle
		}
		close(ls.ack)
	case msgState:
		ls.state, ls.found = ls.lost, ls.lost != idle
		if h := ls.muxConn(); h != nil && !ls.found && !ls.active {
			ls.state, ls.found = idle, true
			if h.dead || h.goaway {
				ls.state = peerClosed
			}
		} else if !ls.found && !ls.active && ls.c != nil {
			if ls.l.Buffered(&ls.c.reg) { // io_uring received it already
				ls.c.readIdle()
				ls.state, ls.found = ls.lost, true
			} else {
				ls.state, ls.found = peekFD(ls.c.reg.FD()), true
				if ls.state == pending && (ls.c.tls != nil || ls.c.h2 != nil) { // records without data, or HTTP/2 control frames, leave it idle
					ls.c.readIdle()
					ls.state = ls.lost
				}
			}
		}
		close(ls.ack)
	}
}

// loopKeptState is keptState on the epoll engine, asked of the loop;
// onLoop is false when the session has not used the engine.
func (s *Session) loopKeptState() (state connState, found, onLoop bool) {
	ls := &s.ev
	if ls.l == nil {
		return idle, false, false
	}
	ls.ack = make(chan struct{})
	ls.l.Post(ls, msgState, 0)
	<-ls.ack
	return ls.state, ls.found, true
}

// peekFD is peek on a raw socket: it looks without consuming.
func peekFD(fd int) connState {
	var b [1]byte
	n, _, err := unix.Recvfrom(fd, b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	switch {
	case n > 0:
		return pending
	case err == nil, err != unix.EAGAIN && err != unix.EINTR:
		return peerClosed
	}
	return idle
}

// closeConn closes the session's connection; a connection its group
// shares, the session lets go (the last to hold it closes it).
func (ls *loopSession) closeConn() {
	switch c := ls.c; {
	case c == nil:
	case c.waiting:
		ls.s.group.loop.unwait(c)
		ls.l.Stop(&c.timer)
		ls.c = nil
	case ls.muxConn() != nil:
		c.release()
	default:
		c.closeWS()
		ls.l.Stop(&c.timer)
		ls.l.Drop(&c.reg)
		ls.l.Release(c.port)
		c.port = 0
		if c.h2 != nil {
			c.h2.dead = true
		}
		ls.c = nil
	}
	ls.kept.Store(false)
}

// muxConn returns the session's connection when it is one its group
// shares (Options.StreamsPerConn), else nil.
func (ls *loopSession) muxConn() *h2State {
	if c := ls.c; c != nil && c.h2 != nil && c.h2.group != nil {
		return c.h2
	}
	return nil
}

// start begins the session's request (Session.Do's first steps).
func (ls *loopSession) start() {
	q, rec := ls.s.q, ls.rec
	ls.active = true
	rec.ID = q.ID(rec.Batch, rec.Index)
	rec.Start = ls.s.clk.Now()
	ls.deadline = rec.Start + int64(q.Timeout)
	if ls.ctx.Err() != nil {
		ls.failConn(result.Failure{Kind: result.Interrupted})
		return
	}
	if ls.ctx.Done() != nil {
		ls.watchCtx()
	}
	if ls.c != nil && !ls.usable() {
		ls.closeConn()
	}
	switch ls.lost {
	case peerClosed:
		rec.ReuseFailed = true
	case pending:
		rec.Poisoned = true
	}
	ls.lost = idle
	ls.attempt()
}

// usable is Session.usable on the loop: a peek at the kept connection,
// after what the loop received ahead of the socket (uring) if anything.
func (ls *loopSession) usable() bool {
	if h := ls.muxConn(); h != nil { // the loop reads it all along
		if h.dead || h.goaway {
			ls.lost = peerClosed
			return false
		}
		return h.takes() // else another one: not a reuse failure
	}
	if ls.l.Buffered(&ls.c.reg) {
		// closes the connection, unless what waited is a WebSocket frame
		// it answered, or TLS records without data (a session ticket)
		ls.c.readIdle()
		return ls.c != nil && (ls.s.ws != nil || ls.c.tls != nil || ls.c.h2 != nil)
	}
	if ls.lost = peekFD(ls.c.reg.FD()); ls.lost == pending && (ls.s.ws != nil || ls.c.tls != nil || ls.c.h2 != nil) {
		ls.lost = idle
		ls.c.readIdle() // answered, or closed: what waited is a WebSocket frame, or TLS records
		return ls.c != nil
	}
	return ls.lost == idle
}

// attempt sends the request on the kept connection, or on a new one.
func (ls *loopSession) attempt() {
	s, rec := ls.s, ls.rec
	ls.out = nil // made by the first write
	if c := ls.c; c != nil {
		ls.reused = true
		ls.kept.Store(false)
		rec.ConnID, rec.Reused, rec.Proto = s.id, true, s.proto
		c.phase, c.written = phWriting, 0
		c.write()
		return
	}
	ls.reused = false
	if ls.s.group != nil {
		ls.joinGroup()
		return
	}
	ls.connect()
}

// connect opens a new non-blocking connection.
func (ls *loopSession) connect() {
	q := ls.s.q
	if cfg := q.tlsConfig(); cfg != nil {
		ls.connectTLS(cfg)
		return
	}
	sa, err := q.loopAddr()
	if err != nil {
		ls.fail(q.classify(ls.ctx, err, connectFailure(err)))
		return
	}
	// A Sockaddr is not safe for concurrent use (Connect writes its raw
	// form into it): each connect dials a copy.
	domain := unix.AF_INET
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		b := *a
		sa = &b
	case *unix.SockaddrInet6:
		b := *a
		sa, domain = &b, unix.AF_INET6
	}
	fd, err := unix.Socket(domain, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		ls.fail(connectFailure(os.NewSyscallError("socket", err)))
		return
	}
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	c := &econn{ls: ls, phase: phConnecting}
	err = unix.Connect(fd, sa)
	want := evloop.Read
	switch err {
	case nil:
	case unix.EINPROGRESS, unix.EINTR, unix.EALREADY:
		want = evloop.Write
	default:
		unix.Close(fd)
		ls.fail(connectFailure(os.NewSyscallError("connect", err)))
		return
	}
	if err := ls.l.Add(&c.reg, fd, c, want); err != nil {
		unix.Close(fd)
		ls.fail(connectFailure(loopGone(err)))
		return
	}
	ls.c = c
	if q.H2C {
		ls.newH2(c, ProtoH2C)
	}
	// The server, when it is this process's, writes the stream of this
	// connection from this loop (evloop.Affine).
	if c.port = evloop.LocalPort(fd); c.port > 0 {
		ls.l.Claim(c.port)
	}
	if want == evloop.Read {
		c.connected()
		return
	}
	c.schedule()
}

// connected: the connection is up; the request goes out.
func (c *econn) connected() { c.connectedAt(c.ls.s.clk.Now()) }

// connectedAt: the connection came up at the time at; the request goes
// out.
func (c *econn) connectedAt(at int64) {
	ls := c.ls
	s, rec := ls.s, ls.rec
	rec.Connected = at
	s.id = s.q.state().conns.Add(1)
	s.proto = ProtoHTTP1
	switch {
	case c.h2 != nil:
		s.proto, c.h2.id = c.h2.proto, s.id
	case s.q.WebSocket:
		s.proto = ProtoWebSocket
	}
	rec.ConnID, rec.Reused, rec.Proto = s.id, false, s.proto
	c.phase, c.written = phWriting, 0
	c.write()
}

// requestBuffers holds the buffers the first write of a request is put
// together in: a request that goes out whole in that write, as nearly all
// do, needs no buffer of its own while its connection is being opened —
// thousands of them at the start of a batch.
var requestBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// putRequestBuffer gives b, whose bytes are now out, back to
// requestBuffers, unless it grew too large to keep.
func putRequestBuffer(b *[]byte, out []byte) {
	if cap(out) <= 64<<10 {
		*b = out[:0]
		requestBuffers.Put(b)
	}
}

// write writes what remains of the request: at the first write the whole
// request, put together in a pooled buffer and kept (ls.out) only when
// the socket does not take all of it.
func (c *econn) write() {
	ls := c.ls
	if c.h2 != nil {
		c.h2Start()
		return
	}
	out := ls.out
	var pooled, sealed *[]byte
	if out == nil {
		pooled = requestBuffers.Get().(*[]byte)
		out = ls.appendRequest((*pooled)[:0], ls.rec.ID)
		if c.tls != nil {
			sealed = requestBuffers.Get().(*[]byte)
			plain := out
			out = c.seal((*sealed)[:0], plain)
			putRequestBuffer(pooled, plain)
			pooled = sealed
		}
	}
	n, err := evloop.RawWrite(c.reg.FD(), out[c.written:])
	c.written += n
	if pooled != nil {
		if c.written < len(out) {
			ls.out = slices.Clone(out)
		}
		putRequestBuffer(pooled, out)
	}
	switch {
	case c.written == len(out):
		c.sent()
	case err == nil || err == unix.EAGAIN || err == unix.EINTR:
		if ls.l.Watch(&c.reg, evloop.Write) != nil {
			ls.failConn(result.Failure{Kind: result.RecvError, Detail: "send: " + errLoopGone.Error()})
			return
		}
		c.schedule()
	case keptLost(ls.reused, 0, step{err: err, cancelled: ls.ctx.Err() != nil}):
		ls.retry()
	default:
		ls.failConn(ls.s.q.classify(ls.ctx, err, sysFailure(result.RecvError, "send: ", err)))
	}
}

// sent: the whole request is out; the response is read from here on.
func (c *econn) sent() {
	ls := c.ls
	q, rec := ls.s.q, ls.rec
	now := ls.s.clk.Now()
	rec.Sent = now
	ls.out = nil // sent: thousands of sessions would each keep it for nothing
	if cap(rec.Tokens) == 0 && q.ExpectTokens > 0 {
		rec.Tokens = make([]result.Token, 0, q.ExpectTokens)
	}
	ls.x = h1Exchange{rec: rec, reused: ls.reused, keepAlive: q.KeepAlive && !ls.s.oneShot}
	if q.WebSocket {
		ls.ws = newWSExchange(q, rec, ls.s.ws, ls.reused)
		ls.ws.keepAlive = ls.x.keepAlive
		ls.x.r = ls.ws.r
	} else {
		ls.x.r = newReader(rec, &q.Options)
	}
	c.phase = phReading
	c.waitAt, c.idleAt = 0, 0
	if q.IdleTimeout > 0 {
		c.idleAt = now + int64(q.IdleTimeout)
	}
	if ls.l.Watch(&c.reg, evloop.Read) != nil {
		ls.failConn(result.Failure{Kind: result.RecvError, Detail: errLoopGone.Error()})
		return
	}
	c.schedule()
	if ls.ws != nil {
		c.armPing(now)
	}
}

// schedule puts c's next deadline in the loop's timer heap. A deadline
// that moves later (the idle timeout, pushed back by every read) leaves
// the heap alone: Expire looks again when the entry falls due. The heap
// runs on the real clock (clock.ToReal), c's deadlines on the session's.
func (c *econn) schedule() {
	if at := c.expiry(); at != 0 {
		c.ls.l.Schedule(&c.timer, clock.ToReal(c.ls.s.clk, at), c)
	}
}

// Stopped: the loop was stopped (evloop.Set.Stop). The request in flight
// fails, naming it; a kept connection is closed.
func (c *econn) Stopped(_ *evloop.Loop, err error) {
	ls := c.ls
	if h := c.h2; h != nil && h.group != nil {
		c.h2Stopped(err)
		return
	}
	if ls.active && ls.c == c {
		ls.failConn(result.Failure{Kind: result.RecvError, Detail: err.Error()})
		return
	}
	if ls.c == c {
		ls.closeConn()
		ls.lost = peerClosed
	}
}

// Expire: the earliest deadline c scheduled has passed (now: the loop's
// real clock).
func (c *econn) Expire(l *evloop.Loop, now int64) {
	now = clock.FromReal(c.ls.s.clk, now)
	switch at := c.expiry(); {
	case at == 0:
	case at > now:
		l.Schedule(&c.timer, clock.ToReal(c.ls.s.clk, at), c)
	default:
		c.timeout(now)
	}
}

// Ready handles a readiness event of c.
func (c *econn) Ready(*evloop.Loop) {
	if c.h2 != nil && c.phase != phConnecting {
		c.h2Ready()
		return
	}
	switch c.phase {
	case phConnecting:
		c.connecting()
	case phWriting:
		c.write()
	case phReading:
		if len(c.wsOut) > 0 {
			c.flushWS()
			return
		}
		c.readResponse()
	case phDraining:
		c.readDrain()
	case phIdle:
		c.readIdle()
	}
}

// connecting: the connect finished, or failed.
func (c *econn) connecting() {
	ls := c.ls
	v, err := unix.GetsockoptInt(c.reg.FD(), unix.SOL_SOCKET, unix.SO_ERROR)
	if err == nil && v != 0 {
		err = unix.Errno(v)
	}
	switch err {
	case nil:
		c.connected()
	case unix.EINPROGRESS, unix.EALREADY, unix.EINTR:
	default:
		ls.failConn(ls.s.q.classify(ls.ctx, err, connectFailure(os.NewSyscallError("connect", err))))
	}
}

// readResponse reads once and feeds the response parser, the arrival time
// taken right after the read returned.
func (c *econn) readResponse() {
	ls := c.ls
	q, rec := ls.s.q, ls.rec
	p, err := c.recv()
	if len(p) > 0 {
		var now int64
		if c.tls != nil {
			now = c.readAt // the read that completed the records, before they were opened
		} else {
			now = ls.s.clk.Now()
		}
		rec.Reads++
		if q.IdleTimeout > 0 {
			c.idleAt = now + int64(q.IdleTimeout)
		}
		r := ls.x.r
		if ls.feed(p, now) {
			rec.End = now
			r.close()
			c.responseEnded()
			return
		}
		if r.statusFailing() && c.waitAt == 0 {
			c.waitAt = now + int64(q.drainTimeout())
			c.schedule()
		}
		if err == nil { // over TLS, a record after the data may have ended the stream (err)
			return
		}
	}
	if err == unix.EAGAIN || err == unix.EINTR {
		return
	}
	err = readEnded(err)
	if ls.settle(step{err: err, cancelled: ls.ctx.Err() != nil}) == fateRetry {
		ls.retry()
		return
	}
	ls.failConn(q.classify(ls.ctx, err, ls.x.r.endOfStream(err)))
}

// settle asks the request's exchange, HTTP/1.1 or WebSocket, the fate of
// its connection.
func (ls *loopSession) settle(st step) fate {
	if ls.ws != nil {
		return ls.ws.settle(st)
	}
	return ls.x.settle(st)
}

// feed hands one read's bytes to the request's parser: the HTTP reader, or
// over WebSocket the frames' (which may ask for frames to be written,
// or for the request to go again on a new connection). It reports
// whether the request has ended.
func (ls *loopSession) feed(p []byte, now int64) bool {
	if ls.ws == nil {
		return ls.x.r.feed(p, now)
	}
	return ls.c.feedWS(p, now)
}

// responseEnded: the response ended (its terminal event, or a failure).
// With keep-alive the rest of its framing is drained, as drainH1 does:
// the exchange decides (h1Exchange.settle).
func (c *econn) responseEnded() {
	ls := c.ls
	if ls.ws != nil {
		c.wsEnded()
		return
	}
	f := ls.x.settle(step{cancelled: ls.ctx.Err() != nil})
	if f == fateDrain {
		c.startDrain(ls.s.clk.Now())
		return
	}
	c.drainEnded(f)
}

// startDrain: from now on the rest of the response is drained (over
// HTTP/2, the rest of the stream), within the drain timeout, the request's
// deadline and the idle timeout.
func (c *econn) startDrain(now int64) {
	ls := c.ls
	q := ls.s.q
	c.phase = phDraining
	c.drainAt = min(now+int64(q.drainTimeout()), ls.deadline)
	c.idleAt = 0
	if q.IdleTimeout > 0 {
		c.idleAt = now + int64(q.IdleTimeout)
	}
	c.schedule()
}

// readDrain reads once while draining.
func (c *econn) readDrain() {
	ls := c.ls
	q := ls.s.q
	p, err := c.recv()
	if len(p) > 0 {
		if q.IdleTimeout > 0 {
			c.idleAt = ls.s.clk.Now() + int64(q.IdleTimeout)
		}
		if c.drainStep(step{p: p}); err == nil || c.phase != phDraining || c.ls.c != c {
			return
		}
	}
	if err == unix.EAGAIN || err == unix.EINTR {
		return
	}
	if err == nil {
		err = io.EOF
	}
	c.drainStep(step{err: err})
}

// drainStep hands what a drain's Read returned (or why the drain stops) to
// the exchange, and ends the drain unless it goes on.
func (c *econn) drainStep(st step) {
	if f := c.ls.x.settle(st); f != fateDrain {
		c.drainEnded(f)
	}
}

// drainEnded keeps the connection when the exchange says so (f), else
// closes it, and ends the request.
func (c *econn) drainEnded(f fate) {
	ls := c.ls
	if f == fateKeep {
		c.phase = phIdle
		c.idleAt, c.waitAt, c.drainAt = 0, 0, 0
		ls.l.Stop(&c.timer)
		ls.kept.Store(true)
	} else {
		ls.closeConn()
	}
	ls.finish()
}

// readIdle: a kept connection became readable between requests: the peer
// closed it, or sent bytes that belong to no request. Either way it is
// closed, and the next request learns why (Session.usable's rules).
func (c *econn) readIdle() {
	ls := c.ls
	if c.h2 != nil { // frames for the connection (SETTINGS, PING, GOAWAY) leave it kept, or close it
		c.h2Read()
		return
	}
	p, err := c.recv()
	if len(p) > 0 && ls.s.ws != nil {
		c.idleWS(p)
		return
	}
	switch {
	case len(p) > 0:
		ls.lost = pending
	case err == unix.EAGAIN || err == unix.EINTR:
		return
	default:
		ls.lost = peerClosed
	}
	ls.closeConn()
}

// timeout: c's deadline passed (see readLimit.failure for the order).
func (c *econn) timeout(now int64) {
	ls := c.ls
	q := ls.s.q
	if c.waiting && c.settleAt != 0 && c.settleAt <= now && c.settleAt < ls.deadline && ls.ctx.Err() == nil {
		ls.failConn(q.noSettings())
		return
	}
	switch c.phase {
	case phConnecting, phWriting:
		ls.failConn(q.classify(ls.ctx, os.ErrDeadlineExceeded, result.Failure{Kind: result.Timeout}))
	case phReading:
		switch {
		case ls.ctx.Err() != nil:
			ls.failConn(result.Failure{Kind: result.Interrupted})
		case c.pingFirst(now):
			c.pingDue(now)
		case ls.x.r.statusFailing():
			ls.failConn(ls.x.r.statusFailure())
		case c.idleAt != 0 && c.idleAt <= now && c.idleAt < ls.deadline:
			ls.failConn(q.idleFailure())
		default:
			ls.failConn(q.classify(ls.ctx, os.ErrDeadlineExceeded, result.Failure{Kind: result.Timeout}))
		}
	case phDraining:
		if c.h2 != nil {
			c.h2StopDrain()
			return
		}
		c.drainStep(step{err: os.ErrDeadlineExceeded})
	}
}

// cancel: the request's context is done.
func (ls *loopSession) cancel() {
	if !ls.active || ls.dial != nil { // a dial ends by itself, on its context
		return
	}
	if c := ls.c; c != nil && c.phase == phDraining {
		if c.h2 != nil {
			c.h2StopDrain() // doH2's cancel: the stream is reset
			return
		}
		// doH1 moves the deadline to the past: the drain read fails.
		c.drainStep(step{err: os.ErrDeadlineExceeded})
		return
	}
	ls.failConn(result.Failure{Kind: result.Interrupted})
}

// retry: the kept connection was found closed before any byte of the
// response: a reuse failure; the request goes again on a new connection.
func (ls *loopSession) retry() {
	rec := ls.rec
	ls.closeConn()
	if ls.x.r != nil {
		ls.x.r.close()
	}
	ls.x = h1Exchange{}
	ls.ws = nil
	rec.ReuseFailed = true
	rec.ConnID, rec.Reused, rec.Proto = 0, false, ""
	rec.Sent, rec.HeadAt, rec.Bytes, rec.Reads = 0, 0, 0, 0
	rec.Failure = result.Failure{}
	ls.attempt()
}

// failConn ends the request with f and closes its connection.
func (ls *loopSession) failConn(f result.Failure) {
	ls.closeConn()
	ls.fail(f)
}

// fail ends the request with f.
func (ls *loopSession) fail(f result.Failure) {
	ls.rec.Failure = f
	if ls.x.r != nil {
		ls.x.r.close()
	}
	ls.finish()
}

// finish hands the ended request back to its caller.
func (ls *loopSession) finish() {
	rec, done := ls.rec, ls.done
	ls.openDone()
	ls.unwatchCtx()
	if rec.End == 0 {
		rec.End = ls.s.clk.Now()
	}
	ls.s.q.fillEmitted(rec)
	ls.active = false
	ls.ctx, ls.rec, ls.done, ls.x, ls.ws = nil, nil, nil, h1Exchange{}, nil
	done(rec)
}

// readEnded names how a read of the connection ended it: nil (a read of
// no bytes) is the peer's FIN, io.EOF; an errno is the read(2)'s.
func readEnded(err error) error {
	if err == nil {
		return io.EOF
	}
	if errno, ok := err.(unix.Errno); ok {
		return os.NewSyscallError("read", errno)
	}
	return err
}
