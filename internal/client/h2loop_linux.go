//go:build linux

package client

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"golang.org/x/sys/unix"

	"github.com/sse-latency/sse-latency/internal/evloop"
	"github.com/sse-latency/sse-latency/internal/result"
)

// This file is HTTP/2 on the event loops: h2c with prior knowledge, and h2
// over TLS 1.3 once ALPN chose it (the handshake of tlsloop_linux.go). It
// is doH2 and readStream as a state machine the loop drives: the loop
// writes the preface, its SETTINGS and each request as HEADERS and DATA
// with END_STREAM (as far as the peer's windows let it, the rest when they
// open), and reads frames (x/net/http2's Framer over the bytes of each
// read, one complete frame at a time; hpack for the heads), feeding each
// DATA payload to the reader of its stream's request, with the time the
// read returned (every stream demultiplexed from one read shares it).
// Without Options.StreamsPerConn a connection is one Session's, one
// stream at a time on it, the next request on the next stream; with it,
// the Sessions of a group (h2Group) share their connections, all on one
// loop (loopGroup): the connection (h2State: framer, hpack, windows, the
// peer's SETTINGS, the write buffer; the socket and TLS on its sock)
// keeps a table of its streams in flight by id, each the stream of one
// Session's econn (econn.hs: its window, body, exchange and deadlines),
// and is closed when the last Session holding it lets it go.
// h2Exchange.settle decides what becomes of the connection, as on the
// goroutine engine. Flow control: our windows are h2Window, given back in
// one WINDOW_UPDATE once half of one is consumed (the connection's over
// all its streams), never per token; PING and SETTINGS are answered.

// h2Window is the receive window of the connection and of each stream.
const h2Window = 16 << 20

// h2MaxHeaderBlock bounds a response's header block (HEADERS and its
// CONTINUATION frames) and each field in it.
const h2MaxHeaderBlock = 256 << 10

// h2DefaultWindow and h2DefaultFrame are the protocol's initial window and
// largest frame until the peer's SETTINGS say otherwise; h2MaxReadFrame
// is the largest frame we take (SETTINGS_MAX_FRAME_SIZE), the transport's
// default on the goroutine engine.
const (
	h2DefaultWindow = 65535
	h2DefaultFrame  = 16384
	h2MaxReadFrame  = 1 << 20
)

// The errors of a stream on the loops, worded as x/net/http2's transport
// words them on the goroutine engine.
var (
	errH2GoAway      = errors.New("http2: Transport received Server's graceful shutdown GOAWAY")
	errH2NoStatus    = errors.New("malformed response from server: missing status pseudo header")
	errH2BadStatus   = errors.New("malformed response from server: malformed non-numeric status pseudo header")
	errH2HeadTooBig  = fmt.Errorf("http2: response header block larger than %d KiB", h2MaxHeaderBlock>>10)
	errH2DataNoHead  = errors.New("http2: DATA before the response HEADERS")
	errH2Upgrade     = errors.New("http2: server sent 101 Switching Protocols")
	errH2FlowControl = http2.ConnectionError(http2.ErrCodeFlowControl)
)

// h2State is an HTTP/2 connection's state on a loop: its frames, hpack
// tables, windows and the peer's SETTINGS, and the table of its streams
// in flight, each the stream of one econn (its session's; the
// connection's socket is sock's, which is also its opener's stream).
type h2State struct {
	proto       string // ProtoH2C or ProtoH2
	fr          *http2.Framer
	src         frameSrc // what fr reads: one complete frame
	wr          frameOut // what fr writes: frames for the peer
	in          []byte   // the start of a frame whose end has not arrived
	wout        []byte   // bytes for the socket it has not taken yet (sealed over TLS)
	enc         *hpack.Encoder
	encBuf      frameOut
	dec         *hpack.Decoder
	fields      map[string][]string // the head being decoded
	status      string              // its :status
	fieldsN     int                 // its bytes
	prefaced    bool                // the preface and SETTINGS went out
	gotSettings bool                // the peer's first SETTINGS came

	// The peer's side.
	maxFrame   uint32 // SETTINGS_MAX_FRAME_SIZE
	maxStreams uint32 // SETTINGS_MAX_CONCURRENT_STREAMS
	peerWin    int64  // SETTINGS_INITIAL_WINDOW_SIZE
	sendWin    int64  // the connection's send window
	goaway     bool   // a GOAWAY came: no new stream
	lastID     uint32 // its last stream id
	awayCode   http2.ErrCode
	recvUsed   int64 // connection bytes received not given back yet

	nextID   uint32
	block    []byte // a header block awaiting its CONTINUATION
	blockOf  uint32 // the stream of block
	blockEnd bool   // block's HEADERS had END_STREAM

	sock     *econn            // the connection's socket
	id       int64             // its ConnID
	streams  map[uint32]*econn // the streams of requests in flight, by id
	holders  []*loopSession    // the sessions holding the connection: a stream in flight, or kept
	unsent   []unsentEnd       // streams whose END_STREAM is queued, not yet written, in the order queued
	sealedN  int               // how many of unsent have their end in the output stream (the rest in wr)
	outEnd   int64             // the bytes put in wout so far, all told
	outDone  int64             // the bytes written to the socket so far
	held     []*econn          // streams whose body waits for a window
	group    *h2Group          // the group sharing it (Options.StreamsPerConn); nil: one session's
	dead     bool              // closed
	reads    uint64            // the reads of the connection, for rec.Reads
	settled  bool              // the peer's first SETTINGS came in this read: the group's waiters go
	settleBy int64             // a group's connection: the end of the bound on the peer's first SETTINGS
	hooks    *h2Hooks          // the tests' hooks of the opener's Request (nil in use), kept here: the loop must not read a session's q while its goroutine prepares the next request
}

// unsentEnd is a stream whose END_STREAM is queued: end is where the
// frame carrying it ends, in wr until the frames are sealed, then in the
// connection's output (over TLS: the end of the records sealing it).
type unsentEnd struct {
	c   *econn
	end int64
}

// h2Stream is the stream of one request on an HTTP/2 connection of a
// loop (econn.hs).
type h2Stream struct {
	id      uint32
	open    bool   // neither END_STREAM came nor was the stream reset
	swin    int64  // its send window
	body    []byte // its request body not written yet
	ended   bool   // the END_STREAM of the request is written (in wout or out)
	held    bool   // in h2State.held
	srecv   int64  // stream bytes received not given back yet
	drained int    // bytes read by the drain
	read    uint64 // the connection's read its frames last came in
	x       h2Exchange
}

// frameSrc reads the one frame it holds.
type frameSrc struct{ b []byte }

func (s *frameSrc) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}

// frameOut collects what is written to it.
type frameOut struct{ b []byte }

func (o *frameOut) Write(p []byte) (int, error) {
	o.b = append(o.b, p...)
	return len(p), nil
}

func newH2State(proto string) *h2State {
	h := &h2State{proto: proto, maxFrame: h2DefaultFrame, maxStreams: 1<<31 - 1, peerWin: h2DefaultWindow, sendWin: h2DefaultWindow,
		nextID: 1, streams: make(map[uint32]*econn, 1)}
	h.fr = http2.NewFramer(&h.wr, &h.src)
	h.fr.SetReuseFrames()
	h.fr.SetMaxReadFrameSize(h2MaxReadFrame)
	h.enc = hpack.NewEncoder(&h.encBuf)
	h.dec = hpack.NewDecoder(4096, h.field)
	h.dec.SetMaxStringLength(h2MaxHeaderBlock)
	return h
}

// newH2 makes c, the session's new connection (ls.c), an HTTP/2 one,
// held by the session, and its group's when the session has one.
func (ls *loopSession) newH2(c *econn, proto string) {
	h := newH2State(proto)
	h.sock = c
	h.holders = append(h.holders, ls)
	c.h2 = h
	if g := ls.s.group; g != nil {
		h.group = g
		h.settleBy = ls.s.clk.Now() + int64(ls.s.q.settingsWait())
		h.hooks = ls.s.q.hooks
		g.loop.conns = append(g.loop.conns, h)
		ls.openDone()
		g.loop.bound() // the waiters' wait is now bounded
	}
}

// field takes one decoded field of a head.
func (h *h2State) field(f hpack.HeaderField) {
	h.fieldsN += len(f.Name) + len(f.Value)
	if h.fields == nil {
		return // a head of no stream of ours: decoded for the table only
	}
	if f.Name == ":status" {
		h.status = f.Value
		return
	}
	if strings.HasPrefix(f.Name, ":") {
		return
	}
	k := http.CanonicalHeaderKey(f.Name)
	h.fields[k] = append(h.fields[k], f.Value)
}

// takes reports whether the connection takes another stream now.
func (h *h2State) takes() bool {
	return !h.dead && !h.goaway && h.gotSettings && uint32(len(h.streams)) < h.maxStreams && h.nextID < 1<<31
}

// h2Start writes the request on a new stream: the preface and SETTINGS
// first on a new connection, then HEADERS (and CONTINUATION) and as much
// of the body as the peer's windows take, and reads the response.
func (c *econn) h2Start() {
	ls := c.ls
	h, s := c.h2, ls.s
	q, rec := s.q, ls.rec
	scheme := "https"
	if h.proto == ProtoH2C {
		scheme = "http"
	}
	u, host, hdr, body, err := q.h2Parts(rec.ID, scheme)
	if err != nil {
		ls.failConn(result.Failure{Kind: result.RecvError, Detail: "request: " + err.Error()})
		return
	}
	if !h.prefaced {
		h.prefaced = true
		h.wr.b = append(h.wr.b, http2.ClientPreface...)
		h.fr.WriteSettings(http2.Setting{ID: http2.SettingEnablePush}, http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2Window},
			http2.Setting{ID: http2.SettingMaxFrameSize, Val: h2MaxReadFrame})
		h.fr.WriteWindowUpdate(0, h2Window-h2DefaultWindow)
	}
	st := &c.hs
	*st = h2Stream{id: h.nextID, open: true, body: body, swin: h.peerWin,
		x: h2Exchange{reused: ls.reused, keepAlive: q.KeepAlive && !s.oneShot}}
	h.nextID += 2
	h.streams[st.id] = c
	rec.Streams = len(h.streams)
	h.encBuf.b = h.encBuf.b[:0]
	enc := h.enc
	enc.WriteField(hpack.HeaderField{Name: ":authority", Value: host})
	enc.WriteField(hpack.HeaderField{Name: ":method", Value: http.MethodPost})
	enc.WriteField(hpack.HeaderField{Name: ":path", Value: u.RequestURI()})
	enc.WriteField(hpack.HeaderField{Name: ":scheme", Value: scheme})
	for _, name := range slices.Sorted(maps.Keys(hdr)) {
		for _, v := range hdr[name] {
			enc.WriteField(hpack.HeaderField{Name: strings.ToLower(name), Value: v})
		}
	}
	enc.WriteField(hpack.HeaderField{Name: "content-length", Value: strconv.Itoa(len(body))})
	block := h.encBuf.b
	first := true
	for first || len(block) > 0 {
		n := min(len(block), int(h.maxFrame))
		frag, last := block[:n], n == len(block)
		block = block[n:]
		if first {
			h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: st.id, BlockFragment: frag, EndHeaders: last, EndStream: len(body) == 0})
		} else {
			h.fr.WriteContinuation(st.id, last, frag)
		}
		first = false
	}
	if len(body) == 0 {
		st.ended = true
		h.unsent = append(h.unsent, unsentEnd{c, int64(len(h.wr.b))})
	}
	c.queueBody()

	if n := q.expectedTokens(); cap(rec.Tokens) == 0 && n > 0 {
		rec.Tokens = make([]result.Token, 0, n)
	}
	ls.x = h1Exchange{rec: rec, r: newReader(rec, &q.Options)} // its reader, for timeout's rules
	now := s.clk.Now()
	c.phase = phReading
	c.waitAt, c.idleAt = 0, 0
	if q.IdleTimeout > 0 {
		c.idleAt = now + int64(q.IdleTimeout)
	}
	if h.group != nil && h.group.loop.batching {
		c.schedule() // the group's waiters' frames go out in one write (loopGroup.wake)
		return
	}
	if err := h.sock.h2Flush(); err != nil {
		h.sock.h2Lost(err)
		return
	}
	c.schedule()
}

// queueBody writes as much of the stream's request body as the windows
// allow, END_STREAM with its last byte; a body held back by a window
// waits in h2State.held.
func (c *econn) queueBody() {
	h, st := c.h2, &c.hs
	for len(st.body) > 0 {
		n := int(min(int64(len(st.body)), int64(h.maxFrame), st.swin, h.sendWin))
		if n <= 0 {
			if !st.held {
				st.held = true
				h.held = append(h.held, c)
			}
			return // the rest when a WINDOW_UPDATE or SETTINGS opens the window
		}
		last := n == len(st.body)
		h.fr.WriteData(st.id, last, st.body[:n])
		st.body = st.body[n:]
		st.swin -= int64(n)
		h.sendWin -= int64(n)
		if last {
			st.ended = true
			h.unsent = append(h.unsent, unsentEnd{c, int64(len(h.wr.b))})
		}
	}
}

// queueBodies writes what the windows now allow of the bodies held back.
func (h *h2State) queueBodies() {
	if len(h.held) == 0 {
		return
	}
	held := h.held
	h.held = nil
	for _, c := range held {
		c.hs.held = false
		if h.streams[c.hs.id] == c && c.hs.open {
			c.queueBody()
		}
	}
}

// h2Flush writes the frames queued on the connection (c is its socket),
// sealed over TLS, as far as the socket takes them now; the rest once it
// is writable (the connection is watched for writing meanwhile). A
// request is sent (rec.Sent) when the write that took its END_STREAM
// returned: each stream's own, however many share the connection.
func (c *econn) h2Flush() error {
	h, ls := c.h2, c.ls
	if h.dead {
		return errH2Closed
	}
	if len(h.wr.b) > 0 {
		before := len(h.wout)
		if c.tls != nil {
			h.wout = c.tls.Seal(h.wout, h.wr.b)
		} else {
			h.wout = append(h.wout, h.wr.b...)
		}
		added := int64(len(h.wout) - before)
		for i := h.sealedN; i < len(h.unsent); i++ {
			if c.tls != nil {
				h.unsent[i].end = h.outEnd + added // in the records of this seal
			} else {
				h.unsent[i].end += h.outEnd
			}
		}
		h.sealedN = len(h.unsent)
		h.outEnd += added
		h.wr.b = h.wr.b[:0]
	}
	if len(h.wout) == 0 {
		return nil
	}
	n, err := evloop.RawWrite(c.reg.FD(), h.wout)
	if hk := h.hooks; hk != nil {
		hk.writes.Add(1)
	}
	h.wout = h.wout[:copy(h.wout, h.wout[n:])]
	h.outDone += int64(n)
	if h.sealedN > 0 && h.unsent[0].end <= h.outDone {
		h.stampSent()
	}
	if len(h.wout) == 0 {
		if cap(h.wout) > 64<<10 {
			h.wout = nil
		}
		if ls.l.Watch(&c.reg, evloop.Read) != nil {
			return errLoopGone
		}
		return nil
	}
	if err != nil && err != unix.EAGAIN && err != unix.EINTR {
		return err
	}
	if ls.l.Watch(&c.reg, evloop.Write) != nil {
		return errLoopGone
	}
	return nil
}

// stampSent sets Sent of the streams whose END_STREAM the write that just
// returned carried (or an earlier one): each stream's own instant.
func (h *h2State) stampSent() {
	now := h.sock.ls.s.clk.Now()
	k := 0
	for ; k < h.sealedN && h.unsent[k].end <= h.outDone; k++ {
		sc := h.unsent[k].c
		if sls := sc.ls; sls.active && sc.hs.ended && sls.rec.Sent == 0 && sc.phase == phReading && h.streams[sc.hs.id] == sc {
			sls.rec.Sent = now
		}
	}
	n := copy(h.unsent, h.unsent[k:])
	clear(h.unsent[n:])
	h.unsent = h.unsent[:n]
	h.sealedN -= k
}

// errH2Closed: a write to a connection already closed.
var errH2Closed = errors.New("http2: client connection lost")

// h2Ready: the socket is writable (frames wait) or readable.
func (c *econn) h2Ready() {
	if len(c.h2.wout) > 0 {
		if err := c.h2Flush(); err != nil {
			c.h2Lost(err)
		}
		return
	}
	c.h2Read()
}

// h2Read reads once and handles the frames completed, the arrival time
// taken right after the read returned (over TLS: the read that completed
// the records); every stream demuxed from the read shares it.
func (c *econn) h2Read() {
	h := c.h2
	p, err := c.recv()
	if len(p) > 0 {
		now := c.readAt
		if c.tls == nil {
			now = c.ls.s.clk.Now()
		}
		h.reads++
		if !c.h2Frames(p, now) {
			return
		}
		if h.settled {
			h.settled = false
			h.group.loop.wake()
			if h.dead {
				return
			}
		}
		if ferr := c.h2Flush(); ferr != nil {
			c.h2Lost(ferr)
			return
		}
		if err == nil {
			return
		}
	}
	if err == unix.EAGAIN || err == unix.EINTR {
		return
	}
	c.h2Lost(readEnded(err))
}

// h2Frames handles the complete frames of what arrived (p after the start
// of a frame kept from the last read), and keeps the start of the next.
// It reports whether the connection is still open.
func (c *econn) h2Frames(p []byte, now int64) bool {
	h := c.h2
	buf := p
	if len(h.in) > 0 {
		h.in = append(h.in, p...)
		buf = h.in
	}
	for len(buf) >= 9 {
		n := 9 + (int(buf[0])<<16 | int(buf[1])<<8 | int(buf[2]))
		if n > 9+h2MaxReadFrame {
			n = 9 // the header alone: ReadFrame refuses the size
		} else if len(buf) < n {
			break
		}
		h.src.b = buf[:n]
		buf = buf[n:]
		f, err := h.fr.ReadFrame()
		switch {
		case err != nil:
			err = c.h2FrameError(err)
		case !h.gotSettings:
			if _, ok := f.(*http2.SettingsFrame); !ok {
				err = http2.ConnectionError(http2.ErrCodeProtocol) // the peer's preface is its SETTINGS
				break
			}
			h.gotSettings = true
			h.settled = h.group != nil
			fallthrough
		case err == nil:
			err = c.h2Frame(f, now)
		}
		if err != nil {
			c.h2ConnError(err)
		}
		if h.dead {
			return false
		}
	}
	switch {
	case len(buf) == 0:
		h.in = h.in[:0]
	case len(h.in) > 0:
		h.in = h.in[:copy(h.in, buf)]
	default:
		h.in = append(h.in[:0], buf...)
	}
	return true
}

// stream returns the econn whose request's stream id is, nil when it is
// no stream in flight of an active request.
func (h *h2State) stream(id uint32) *econn {
	sc := h.streams[id]
	if sc == nil || !sc.hs.open || !sc.ls.active || sc.ls.c != sc {
		return nil
	}
	return sc
}

// h2FrameError takes an error of the framer: a frame that breaks the
// rules of its stream only fails that stream, as the transport takes it;
// any other error is returned, the connection's.
func (c *econn) h2FrameError(err error) error {
	h := c.h2
	var se http2.StreamError // on the heap: only when a frame failed
	if !errors.As(err, &se) {
		return err
	}
	if sc := h.stream(se.StreamID); sc != nil {
		if se.Cause == nil {
			se.Cause = h.fr.ErrorDetail()
		}
		sc.h2Reset(se.Code)
		sc.h2StreamFailed(se)
	}
	return nil
}

// h2Frame handles one frame; an error is the connection's.
func (c *econn) h2Frame(f http2.Frame, now int64) error {
	h := c.h2
	switch f := f.(type) {
	case *http2.DataFrame:
		return c.h2Data(f, now)
	case *http2.HeadersFrame:
		if h.block != nil {
			return http2.ConnectionError(http2.ErrCodeProtocol)
		}
		h.blockOf, h.blockEnd = f.StreamID, f.StreamEnded()
		h.block = append(h.block, f.HeaderBlockFragment()...)
		if f.HeadersEnded() {
			return c.h2Head(now)
		}
		return h.blockBound()
	case *http2.ContinuationFrame:
		h.block = append(h.block, f.HeaderBlockFragment()...)
		if f.HeadersEnded() {
			return c.h2Head(now)
		}
		return h.blockBound()
	case *http2.SettingsFrame:
		if f.IsAck() {
			return nil
		}
		if err := f.ForeachSetting(h.setting); err != nil {
			return err
		}
		h.fr.WriteSettingsAck()
		h.queueBodies()
	case *http2.PingFrame:
		if !f.IsAck() {
			h.fr.WritePing(true, f.Data)
		}
	case *http2.WindowUpdateFrame:
		inc := int64(f.Increment)
		if f.StreamID == 0 {
			if h.sendWin += inc; h.sendWin > 1<<31-1 {
				return errH2FlowControl
			}
		} else if sc := h.stream(f.StreamID); sc != nil {
			if sc.hs.swin += inc; sc.hs.swin > 1<<31-1 {
				sc.h2Reset(http2.ErrCodeFlowControl)
				sc.h2StreamFailed(http2.StreamError{StreamID: f.StreamID, Code: http2.ErrCodeFlowControl})
				return nil
			}
		}
		h.queueBodies()
	case *http2.RSTStreamFrame:
		if sc := h.stream(f.StreamID); sc != nil {
			sc.hs.open = false
			sc.h2StreamFailed(http2.StreamError{StreamID: f.StreamID, Code: f.ErrCode, Cause: errH2FromPeer})
		}
	case *http2.GoAwayFrame:
		h.goaway, h.lastID, h.awayCode = true, f.LastStreamID, f.ErrCode
		// The peer will not answer the streams above its last: as the
		// transport aborts them; those below it go on.
		for _, sc := range h.inFlight() {
			if id := sc.hs.id; id > f.LastStreamID {
				sc.hs.open = false
				err := errH2GoAway
				if id == 1 && f.ErrCode != http2.ErrCodeNo {
					err = fmt.Errorf("http2: Transport received GOAWAY from server ErrCode:%v", f.ErrCode)
				}
				sc.h2StreamFailed(err)
			}
		}
		if !h.dead && len(h.streams) == 0 {
			h.closeIdle()
		}
	case *http2.PushPromiseFrame:
		return http2.ConnectionError(http2.ErrCodeProtocol) // push is off (SETTINGS)
	}
	return nil
}

// inFlight returns the streams in flight, in the order of their ids.
func (h *h2State) inFlight() []*econn {
	if len(h.streams) == 1 { // one session's connection: no sort, no map walk
		for id := range h.streams {
			if sc := h.stream(id); sc != nil {
				return []*econn{sc}
			}
		}
		return nil
	}
	var out []*econn
	for _, id := range slices.Sorted(maps.Keys(h.streams)) {
		if sc := h.stream(id); sc != nil {
			out = append(out, sc)
		}
	}
	return out
}

// errH2FromPeer is the cause of a stream reset by the peer, worded as the
// transport's.
var errH2FromPeer = errors.New("received from peer")

// setting applies one of the peer's SETTINGS.
func (h *h2State) setting(s http2.Setting) error {
	if err := s.Valid(); err != nil {
		return err
	}
	switch s.ID {
	case http2.SettingMaxFrameSize:
		h.maxFrame = s.Val
	case http2.SettingMaxConcurrentStreams:
		h.maxStreams = s.Val
	case http2.SettingInitialWindowSize:
		delta := int64(s.Val) - h.peerWin
		h.peerWin = int64(s.Val)
		for _, sc := range h.streams {
			if sc.hs.open {
				if sc.hs.swin += delta; sc.hs.swin > 1<<31-1 {
					return errH2FlowControl
				}
			}
		}
	case http2.SettingHeaderTableSize:
		h.enc.SetMaxDynamicTableSizeLimit(s.Val)
	}
	return nil
}

// blockBound fails a header block larger than h2MaxHeaderBlock.
func (h *h2State) blockBound() error {
	if len(h.block) > h2MaxHeaderBlock {
		return errH2HeadTooBig
	}
	return nil
}

// arrived notes that frames of the stream came in the connection's
// current read, at now: a read of the request's, and the idle timeout
// pushed back.
func (c *econn) arrived(now int64) {
	ls := c.ls
	if st := &c.hs; st.read != c.h2.reads {
		st.read = c.h2.reads
		ls.rec.Reads++
	}
	if q := ls.s.q; q.IdleTimeout > 0 {
		c.idleAt = now + int64(q.IdleTimeout)
	}
}

// h2Data takes a DATA frame: flow control for any stream, the payload for
// the stream it belongs to when that one is in flight.
func (c *econn) h2Data(f *http2.DataFrame, now int64) error {
	h := c.h2
	size := int64(f.Header().Length)
	if h.recvUsed += size; h.recvUsed >= h2Window/2 {
		h.fr.WriteWindowUpdate(0, uint32(h.recvUsed))
		h.recvUsed = 0
	}
	sc := h.stream(f.StreamID)
	if sc == nil {
		return nil // a stream that ended or was reset
	}
	sc.arrived(now)
	sc.h2StreamData(f, size, now)
	return nil
}

// h2StreamData takes a DATA frame of c's stream, of size bytes.
func (c *econn) h2StreamData(f *http2.DataFrame, size, now int64) {
	h, st, ls := c.h2, &c.hs, c.ls
	if st.srecv += size; st.srecv >= h2Window/2 && !f.StreamEnded() {
		h.fr.WriteWindowUpdate(st.id, uint32(st.srecv))
		st.srecv = 0
	}
	if st.srecv > h2Window {
		c.h2Reset(http2.ErrCodeFlowControl)
		c.h2StreamFailed(http2.StreamError{StreamID: st.id, Code: http2.ErrCodeFlowControl})
		return
	}
	data := f.Data()
	switch c.phase {
	case phReading:
		r := st.x.r
		if r == nil {
			c.h2Reset(http2.ErrCodeProtocol)
			c.h2StreamFailed(errH2DataNoHead)
			return
		}
		if len(data) > 0 && r.feed(data, now) {
			c.h2Terminal(now, f.StreamEnded())
			return
		}
		if r.statusFailing() && c.waitAt == 0 {
			c.waitAt = now + int64(ls.s.q.drainTimeout())
			c.schedule()
		}
		if f.StreamEnded() {
			c.h2EndStream()
		}
	case phDraining:
		ls.rec.Bytes += int64(len(data))
		st.drained += len(data)
		switch {
		case f.StreamEnded():
			st.open = false
			c.h2Done(fateKeep)
		case st.drained > DrainBytes:
			c.h2Reset(http2.ErrCodeCancel)
			c.h2Done(fateKeep)
		}
	}
}

// h2Head decodes a complete header block: the response head of a
// stream in flight, its trailers, or a block of another stream (decoded
// all the same: the table is the connection's).
func (c *econn) h2Head(now int64) error {
	h := c.h2
	sc := h.stream(h.blockOf)
	ours := sc != nil && sc.phase == phReading && sc.hs.x.r == nil
	h.fields, h.status, h.fieldsN = nil, "", 0
	if ours {
		h.fields = make(map[string][]string)
	}
	_, err := h.dec.Write(h.block)
	if err == nil {
		err = h.dec.Close()
	}
	h.block = nil
	if err != nil {
		return http2.ConnectionError(http2.ErrCodeCompression)
	}
	if sc == nil {
		return nil
	}
	sc.arrived(now)
	fields := h.fields
	h.fields = nil
	sc.h2StreamHead(ours, fields, h.status, h.blockEnd, now)
	return nil
}

// h2StreamHead takes a header block of c's stream: its response head
// (ours: fields and status), or trailers; ended: with END_STREAM.
func (c *econn) h2StreamHead(ours bool, fields map[string][]string, status string, ended bool, now int64) {
	st, ls := &c.hs, c.ls
	if !ours { // trailers
		switch {
		case !ended:
		case c.phase == phDraining: // the terminal event came: the drain ends
			st.open = false
			c.h2Done(fateKeep)
		case c.phase == phReading:
			c.h2EndStream()
		}
		return
	}
	code, err := strconv.Atoi(status)
	switch {
	case status == "":
		err = errH2NoStatus
	case err != nil || len(status) != 3:
		err = errH2BadStatus
	case code == 101:
		err = errH2Upgrade
	case code >= 100 && code <= 199:
		return // informational: the response's head follows
	}
	if err != nil {
		c.h2Reset(http2.ErrCodeProtocol)
		c.h2StreamFailed(err)
		return
	}
	rec := ls.rec
	r := ls.x.r
	st.x.r = r
	if r.h2Head(code, "HTTP/2.0 "+status+" "+http.StatusText(code), fields, now) {
		rec.End = now
		f := st.x.settle(step{})
		if st.open && !ended {
			c.h2Reset(http2.ErrCodeCancel) // closing the body resets the stream
		}
		c.h2Done(f)
		return
	}
	st.x.streaming = true
	if r.statusFailing() {
		c.waitAt = now + int64(ls.s.q.drainTimeout())
		c.schedule()
	}
	if ended {
		c.h2EndStream()
	}
}

// h2EndStream: END_STREAM came before the terminal event, as readStream
// takes io.EOF from the body.
func (c *econn) h2EndStream() {
	st, ls := &c.hs, c.ls
	rec, r := ls.rec, st.x.r
	st.open = false
	rec.BodyEnded = true
	if r.statusFailing() && ls.ctx.Err() == nil {
		rec.Failure = r.statusFailure()
	} else {
		rec.Failure = ls.s.q.classify(ls.ctx, io.EOF, r.endOfStream(io.EOF))
	}
	c.h2Done(st.x.settle(step{err: io.EOF}))
}

// h2Terminal: the terminal event arrived at now (in a frame with
// END_STREAM: ended). The stream is drained to its END_STREAM, as drainH2
// does, unless the exchange closes the connection.
func (c *econn) h2Terminal(now int64, ended bool) {
	st, ls := &c.hs, c.ls
	ls.rec.End = now
	st.x.r.close()
	f := st.x.settle(step{})
	if f != fateDrain {
		c.h2Done(f)
		return
	}
	if ended {
		st.open = false
		c.h2Done(fateKeep)
		return
	}
	c.startDrain(now)
}

// h2StopDrain: the drain's time is up (or the request was cancelled): the
// stream is reset, the connection stays.
func (c *econn) h2StopDrain() {
	c.h2Reset(http2.ErrCodeCancel)
	if err := c.h2.sock.h2Flush(); err != nil {
		c.h2.sock.h2Lost(err)
		return
	}
	c.h2Done(fateKeep)
}

// h2Reset resets c's stream, if it is open.
func (c *econn) h2Reset(code http2.ErrCode) {
	if st := &c.hs; st.open {
		st.open = false
		st.body = nil
		c.h2.fr.WriteRSTStream(st.id, code)
	}
}

// h2Unlink takes c's stream out of the connection's table.
func (c *econn) h2Unlink() {
	st := &c.hs
	st.body = nil // what the peer's window held back of it is not sent now
	if h := c.h2; h.streams[st.id] == c {
		delete(h.streams, st.id)
	}
}

// h2Done ends the request; the session keeps the connection when f says
// so and it can carry another stream (no GOAWAY came), else lets it go.
func (c *econn) h2Done(f fate) {
	ls, h := c.ls, c.h2
	if r := ls.x.r; r != nil {
		r.close()
	}
	c.h2Unlink()
	err := h.sock.h2Flush()
	if f == fateKeep && !h.goaway && h.nextID < 1<<31 && err == nil {
		c.drainEnded(fateKeep)
		return
	}
	if err != nil && !h.dead {
		h.sock.h2Lost(err) // the other streams' failure
	}
	ls.closeConn()
	ls.finish()
}

// h2StreamFailed ends c's stream with err: before its head, as a failed
// round trip (a kept connection goes again: h2Exchange.settle), after it,
// as a failed body Read; the session lets the connection go. In the
// drain it only ends the drain.
func (c *econn) h2StreamFailed(err error) {
	ls, st := c.ls, &c.hs
	q, rec := ls.s.q, ls.rec
	if !ls.active {
		return
	}
	st.open = false
	switch {
	case c.phase == phDraining:
		c.h2Done(fateKeep)
	case st.x.r == nil:
		cancelled := ls.ctx.Err() != nil
		if st.x.settle(step{err: err, cancelled: cancelled}) == fateRetry || !cancelled && groupRefused(c.h2.group != nil, rec, err) {
			ls.retry()
			return
		}
		ls.failConn(q.classify(ls.ctx, err, sysFailure(result.RecvError, "send: ", err)))
	default:
		r := st.x.r
		if r.statusFailing() && ls.ctx.Err() == nil {
			rec.Failure = r.statusFailure()
		} else {
			rec.Failure = q.classify(ls.ctx, err, r.endOfStream(err))
		}
		ls.failConn(rec.Failure)
	}
}

// h2ConnError: the peer broke the protocol (err: what the framer, hpack
// or the rules found). A GOAWAY naming it goes out, best effort, every
// stream in flight fails with err, and the connection is closed.
func (c *econn) h2ConnError(err error) {
	h := c.h2
	code := http2.ErrCodeProtocol
	var ce http2.ConnectionError
	switch {
	case errors.As(err, &ce):
		code = http2.ErrCode(ce)
	case errors.Is(err, http2.ErrFrameTooLarge):
		code = http2.ErrCodeFrameSize
	}
	h.wr.b = h.wr.b[:0]
	h.unsent = h.unsent[:h.sealedN] // their ends went with wr
	h.fr.WriteGoAway(0, code, nil)
	c.h2Flush()
	h.lose(func(sc *econn) { sc.h2StreamFailed(err) })
}

// h2Lost: the connection ended (err: io.EOF for the peer's FIN, else the
// socket's error) or could not be written: every stream in flight on it
// fails, named.
func (c *econn) h2Lost(err error) {
	h := c.h2
	if h.dead {
		return
	}
	switch {
	case h.goaway && (errors.Is(err, io.EOF) || isClosed(err)):
		// the text of the transport's (deprecated) GoAwayError
		err = fmt.Errorf("http2: server sent GOAWAY and closed the connection; LastStreamID=%v, ErrCode=%v, debug=%q", h.lastID, h.awayCode, "")
	case err == io.EOF:
		err = io.ErrUnexpectedEOF // as the transport: the stream did not end
	}
	h.lose(func(sc *econn) { sc.h2StreamFailed(err) })
}

// h2Stopped: the loop was stopped: every request on the connection
// fails, naming it, and so do the sessions waiting to join the group's
// connections (rather than connecting on the stopped loop).
func (c *econn) h2Stopped(err error) {
	f := result.Failure{Kind: result.RecvError, Detail: err.Error()}
	if g := c.h2.group; g != nil {
		w := g.loop.waiting
		g.loop.waiting = nil
		for _, wc := range w {
			if ls := wc.ls; wc.waiting && ls.c == wc && ls.active {
				ls.failConn(f)
			}
		}
	}
	c.h2.lose(func(sc *econn) { sc.ls.failConn(result.Failure{Kind: result.RecvError, Detail: err.Error()}) })
}

// lose closes the connection, which is gone: fail ends each stream in
// flight on it (a stream being drained only ends its drain), and the
// sessions that kept it learn it is lost (peerClosed).
func (h *h2State) lose(fail func(sc *econn)) {
	if h.dead {
		return
	}
	h.dead = true
	h.leaveGroup()
	for _, sc := range h.inFlight() {
		if sc.phase == phDraining {
			sc.h2Unlink()
			sc.ls.closeConn()
			sc.ls.finish()
			continue
		}
		fail(sc)
	}
	clear(h.streams)
	h.closeIdle()
}

// closeIdle closes the connection, no stream in flight on it: the
// sessions that keep it learn it is lost (peerClosed), as on a kept
// connection the peer closed.
func (h *h2State) closeIdle() {
	kept := h.holders[:0]
	for _, ls := range h.holders {
		if ls.active || ls.c == nil || ls.c.h2 != h {
			if ls.active && ls.c != nil && ls.c.h2 == h {
				kept = append(kept, ls) // ends its request on it: lets it go then
			}
			continue
		}
		ls.lost = peerClosed
		ls.l.Stop(&ls.c.timer)
		ls.c = nil
		ls.kept.Store(false)
	}
	clear(h.holders[len(kept):])
	h.holders = kept
	if len(kept) == 0 {
		h.closeSock()
	}
}

// release lets the session's connection go (closeConn): its stream, if
// one is open, is reset when others hold the connection; the connection
// is closed once no session holds it.
func (c *econn) release() {
	ls, h, st := c.ls, c.h2, &c.hs
	if h.streams[st.id] == c {
		if st.open && !h.dead && len(h.holders) > 1 {
			c.h2Reset(http2.ErrCodeCancel)
			if err := h.sock.h2Flush(); err != nil {
				defer h.sock.h2Lost(err)
			}
		}
		c.h2Unlink()
	}
	st.open = false
	ls.l.Stop(&c.timer)
	if i := slices.Index(h.holders, ls); i >= 0 {
		h.holders = slices.Delete(h.holders, i, i+1)
	}
	ls.c = nil
	switch {
	case len(h.holders) == 0:
		h.closeSock()
	case !h.dead && h.goaway && len(h.streams) == 0:
		h.closeIdle()
	}
}

// closeSock closes the connection's socket.
func (h *h2State) closeSock() {
	h.dead = true
	h.leaveGroup()
	c := h.sock
	l := c.ls.l
	l.Stop(&c.timer)
	l.Drop(&c.reg)
	l.Release(c.port)
	c.port = 0
}

// loopGroup is a group's state on the event loops (h2Group.loop): the
// loop all its sessions run on, picked by its first session, so that a
// connection and all its streams are one loop's; and, touched by that
// loop's goroutine only, the group's connections, the session opening
// one for it, and the sessions waiting for that (or for the peer's
// first SETTINGS on it, which say how many streams it takes).
type loopGroup struct {
	l        *evloop.Loop // under h2Group.mu
	conns    []*h2State
	opening  *loopSession
	waiting  []*econn
	batching bool // wake is starting the waiters' streams: their frames are written once, after the last
}

// loopOf returns the loop of the group's sessions: l, the one picked
// for the session asking, when it is the first.
func (g *h2Group) loopOf(l *evloop.Loop) *evloop.Loop {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.loop.l == nil {
		g.loop.l = l
	}
	return g.loop.l
}

// pending reports whether a connection of the group is being opened, or
// waits for the peer's first SETTINGS.
func (g *loopGroup) pending() bool {
	return g.opening != nil || slices.ContainsFunc(g.conns, func(h *h2State) bool { return !h.gotSettings && !h.dead })
}

// joinGroup puts the request on a connection of the session's group
// that takes another stream (reused), else, while one is being opened,
// makes it wait for that one (within its deadline), else opens one for
// the group; once the Request's TLS fell back to the goroutine engine,
// it joins the group there.
func (ls *loopSession) joinGroup() {
	if ls.s.q.state().tlsFallback.Load() != nil {
		ls.joinFallback() // the group's connections are the goroutine engine's now
		return
	}
	g := &ls.s.group.loop
	for _, h := range g.conns {
		if h.takes() {
			ls.attach(h)
			return
		}
	}
	if g.pending() {
		c := &econn{ls: ls, phase: phConnecting, waiting: true, settleAt: g.settleBy()}
		ls.c = c
		g.waiting = append(g.waiting, c)
		ls.s.q.waited()
		c.schedule() // at once when the bound has passed: it fails (timeout)
		return
	}
	g.opening = ls
	ls.connect()
}

// attach starts the request as a new stream of h, a connection of the
// session's group.
func (ls *loopSession) attach(h *h2State) {
	s, rec := ls.s, ls.rec
	c := &econn{ls: ls, h2: h}
	ls.c = c
	h.holders = append(h.holders, ls)
	ls.reused = true
	s.id, s.proto = h.id, h.proto
	rec.ConnID, rec.Reused, rec.Proto = s.id, true, s.proto
	c.phase = phWriting
	c.h2Start()
}

// openDone: the session opening a connection for its group is done with
// that: the connection is up (newH2), or it failed, or it is not HTTP/2;
// the sessions waiting for it join again.
func (ls *loopSession) openDone() {
	if g := ls.s.group; g != nil && g.loop.opening == ls {
		g.loop.opening = nil
		g.loop.wake()
	}
}

// settleBy is when the wait of a session for the group's pending
// connection ends, named (Options.noSettings), unless the peer's
// SETTINGS came: the end of the bound of the connection waiting for
// them, the earliest; 0 while one is being opened (its bound starts once
// it is up: bound).
func (g *loopGroup) settleBy() int64 {
	if g.opening != nil {
		return 0
	}
	var by int64
	for _, h := range g.conns {
		if !h.gotSettings && !h.dead {
			by = minSet(by, h.settleBy)
		}
	}
	return by
}

// bound bounds the waiting sessions' wait once no connection of the
// group is being opened (settleBy).
func (g *loopGroup) bound() {
	by := g.settleBy()
	if by == 0 {
		return
	}
	for _, c := range g.waiting {
		if c.waiting && c.settleAt == 0 {
			c.settleAt = by
			c.schedule()
		}
	}
}

// wake lets the waiting sessions join again, once no connection of the
// group is pending. The streams they start on a connection are written
// in one write, after the last (as the read that brought the SETTINGS
// would write them, with its acknowledgement): not one system call each.
func (g *loopGroup) wake() {
	if len(g.waiting) == 0 || g.pending() {
		return
	}
	w := g.waiting
	g.waiting = nil
	outer := !g.batching
	g.batching = true
	for _, c := range w {
		ls := c.ls
		if !c.waiting || ls.c != c || !ls.active {
			continue
		}
		c.waiting = false
		ls.l.Stop(&c.timer)
		ls.c = nil
		if ls.ctx.Err() != nil {
			ls.fail(result.Failure{Kind: result.Interrupted}) // its cancel may come next: no new connection for it
			continue
		}
		ls.joinGroup()
	}
	if !outer {
		return
	}
	g.batching = false
	for _, h := range slices.Clone(g.conns) {
		if !h.dead && len(h.wr.b) > 0 {
			if err := h.sock.h2Flush(); err != nil {
				h.sock.h2Lost(err)
			}
		}
	}
}

// unwait takes c, a session's wait for a connection, out of the group.
func (g *loopGroup) unwait(c *econn) {
	c.waiting = false
	if i := slices.Index(g.waiting, c); i >= 0 {
		g.waiting = slices.Delete(g.waiting, i, i+1)
	}
}

// leaveGroup takes the closed (or closing) connection out of its group;
// the sessions waiting for it join again.
func (h *h2State) leaveGroup() {
	g := h.group
	if g == nil {
		return
	}
	if i := slices.Index(g.loop.conns, h); i >= 0 {
		g.loop.conns = slices.Delete(g.loop.conns, i, i+1)
		g.loop.wake()
	}
}
