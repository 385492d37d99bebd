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
// DATA payload of the stream in flight to the same reader, with the time
// the read returned. One connection per Session, one stream at a time on
// it, the next request on the next stream; h2Exchange.settle decides what
// becomes of the connection, as on the goroutine engine. Flow control:
// our windows are h2Window, given back in one WINDOW_UPDATE once half of
// one is consumed, never per token; PING and SETTINGS are answered.

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

// h2State is an HTTP/2 connection's state on a loop, and that of the
// stream in flight on it.
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
	maxFrame uint32 // SETTINGS_MAX_FRAME_SIZE
	peerWin  int64  // SETTINGS_INITIAL_WINDOW_SIZE
	sendWin  int64  // the connection's send window
	goaway   bool   // a GOAWAY came: no new stream
	lastID   uint32 // its last stream id
	awayCode http2.ErrCode
	recvUsed int64 // connection bytes received not given back yet

	// The stream in flight (or the last one).
	id       uint32
	nextID   uint32
	open     bool   // neither END_STREAM came nor was the stream reset
	swin     int64  // its send window
	body     []byte // its request body not written yet
	ended    bool   // the END_STREAM of the request is written (in wout or out)
	block    []byte // a header block awaiting its CONTINUATION
	blockOf  uint32 // the stream of block
	blockEnd bool   // block's HEADERS had END_STREAM
	srecv    int64  // stream bytes received not given back yet
	drained  int    // bytes read by the drain
	x        h2Exchange
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
	h := &h2State{proto: proto, maxFrame: h2DefaultFrame, peerWin: h2DefaultWindow, sendWin: h2DefaultWindow, nextID: 1}
	h.fr = http2.NewFramer(&h.wr, &h.src)
	h.fr.SetReuseFrames()
	h.fr.SetMaxReadFrameSize(h2MaxReadFrame)
	h.enc = hpack.NewEncoder(&h.encBuf)
	h.dec = hpack.NewDecoder(4096, h.field)
	h.dec.SetMaxStringLength(h2MaxHeaderBlock)
	return h
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
	h.id, h.nextID = h.nextID, h.nextID+2
	h.open, h.ended, h.body, h.swin, h.srecv, h.drained = true, false, body, h.peerWin, 0, 0
	h.x = h2Exchange{reused: ls.reused, keepAlive: q.KeepAlive && !s.oneShot}
	rec.Streams = 1
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
			h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: h.id, BlockFragment: frag, EndHeaders: last, EndStream: len(body) == 0})
		} else {
			h.fr.WriteContinuation(h.id, last, frag)
		}
		first = false
	}
	h.ended = len(body) == 0
	h.queueBody()

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
	if err := c.h2Flush(); err != nil {
		c.h2StreamFailed(err)
		return
	}
	c.schedule()
}

// queueBody writes as much of the request body as the windows allow,
// END_STREAM with its last byte.
func (h *h2State) queueBody() {
	for len(h.body) > 0 {
		n := int(min(int64(len(h.body)), int64(h.maxFrame), h.swin, h.sendWin))
		if n <= 0 {
			return // the rest when a WINDOW_UPDATE or SETTINGS opens the window
		}
		last := n == len(h.body)
		h.fr.WriteData(h.id, last, h.body[:n])
		h.body = h.body[n:]
		h.swin -= int64(n)
		h.sendWin -= int64(n)
		h.ended = last
	}
}

// h2Flush writes the frames queued, sealed over TLS, as far as the socket
// takes them now; the rest once it is writable (the connection is watched
// for writing meanwhile). The request is sent (rec.Sent) when the write
// that took its END_STREAM returned.
func (c *econn) h2Flush() error {
	h, ls := c.h2, c.ls
	if len(h.wr.b) > 0 {
		if c.tls != nil {
			h.wout = c.tls.Seal(h.wout, h.wr.b)
		} else {
			h.wout = append(h.wout, h.wr.b...)
		}
		h.wr.b = h.wr.b[:0]
	}
	if len(h.wout) == 0 {
		return nil
	}
	n, err := evloop.RawWrite(c.reg.FD(), h.wout)
	h.wout = h.wout[:copy(h.wout, h.wout[n:])]
	if len(h.wout) == 0 {
		if cap(h.wout) > 64<<10 {
			h.wout = nil
		}
		if ls.active && h.ended && ls.rec.Sent == 0 && c.phase == phReading {
			ls.rec.Sent = ls.s.clk.Now()
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
// the records).
func (c *econn) h2Read() {
	ls := c.ls
	p, err := c.recv()
	if len(p) > 0 {
		now := c.readAt
		if c.tls == nil {
			now = ls.s.clk.Now()
		}
		if ls.active {
			ls.rec.Reads++
			if q := ls.s.q; q.IdleTimeout > 0 {
				c.idleAt = now + int64(q.IdleTimeout)
			}
		}
		if !c.h2Frames(p, now) {
			return
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
// It reports whether the connection is still c's session's.
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
			fallthrough
		case err == nil:
			err = c.h2Frame(f, now)
		}
		if err != nil {
			c.h2ConnError(err)
		}
		if c.ls.c != c {
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

// h2FrameError takes an error of the framer: a frame that breaks the
// rules of its stream only fails that stream, as the transport takes it;
// any other error is returned, the connection's.
func (c *econn) h2FrameError(err error) error {
	h := c.h2
	var se http2.StreamError // on the heap: only when a frame failed
	if !errors.As(err, &se) {
		return err
	}
	if se.StreamID == h.id && h.open && c.ls.active {
		if se.Cause == nil {
			se.Cause = h.fr.ErrorDetail()
		}
		c.h2Reset(se.Code)
		c.h2StreamFailed(se)
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
		h.queueBody()
	case *http2.PingFrame:
		if !f.IsAck() {
			h.fr.WritePing(true, f.Data)
		}
	case *http2.WindowUpdateFrame:
		inc := int64(f.Increment)
		switch {
		case f.StreamID == 0:
			if h.sendWin += inc; h.sendWin > 1<<31-1 {
				return errH2FlowControl
			}
		case f.StreamID == h.id && h.open:
			if h.swin += inc; h.swin > 1<<31-1 {
				c.h2Reset(http2.ErrCodeFlowControl)
				c.h2StreamFailed(http2.StreamError{StreamID: h.id, Code: http2.ErrCodeFlowControl})
				return nil
			}
		}
		h.queueBody()
	case *http2.RSTStreamFrame:
		if f.StreamID == h.id && h.open {
			h.open = false
			c.h2StreamFailed(http2.StreamError{StreamID: h.id, Code: f.ErrCode, Cause: errH2FromPeer})
		}
	case *http2.GoAwayFrame:
		h.goaway, h.lastID, h.awayCode = true, f.LastStreamID, f.ErrCode
		ls := c.ls
		switch {
		case !ls.active:
			ls.lost = peerClosed
			ls.closeConn()
		case h.open && h.id > f.LastStreamID:
			// The peer will not answer the stream: as the transport aborts it.
			h.open = false
			err := errH2GoAway
			if h.id == 1 && f.ErrCode != http2.ErrCodeNo {
				err = fmt.Errorf("http2: Transport received GOAWAY from server ErrCode:%v", f.ErrCode)
			}
			c.h2StreamFailed(err)
		}
	case *http2.PushPromiseFrame:
		return http2.ConnectionError(http2.ErrCodeProtocol) // push is off (SETTINGS)
	}
	return nil
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
	case http2.SettingInitialWindowSize:
		delta := int64(s.Val) - h.peerWin
		h.peerWin = int64(s.Val)
		if h.open {
			if h.swin += delta; h.swin > 1<<31-1 {
				return errH2FlowControl
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

// h2Data takes a DATA frame: flow control for any stream, the payload for
// the stream in flight.
func (c *econn) h2Data(f *http2.DataFrame, now int64) error {
	h, ls := c.h2, c.ls
	size := int64(f.Header().Length)
	if h.recvUsed += size; h.recvUsed >= h2Window/2 {
		h.fr.WriteWindowUpdate(0, uint32(h.recvUsed))
		h.recvUsed = 0
	}
	if f.StreamID != h.id || !h.open || !ls.active {
		return nil // a stream that ended or was reset
	}
	if h.srecv += size; h.srecv >= h2Window/2 && !f.StreamEnded() {
		h.fr.WriteWindowUpdate(h.id, uint32(h.srecv))
		h.srecv = 0
	}
	if h.srecv > h2Window {
		c.h2Reset(http2.ErrCodeFlowControl)
		c.h2StreamFailed(http2.StreamError{StreamID: h.id, Code: http2.ErrCodeFlowControl})
		return nil
	}
	data := f.Data()
	switch c.phase {
	case phReading:
		r := h.x.r
		if r == nil {
			c.h2Reset(http2.ErrCodeProtocol)
			c.h2StreamFailed(errH2DataNoHead)
			return nil
		}
		if len(data) > 0 && r.feed(data, now) {
			c.h2Terminal(now, f.StreamEnded())
			return nil
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
		h.drained += len(data)
		switch {
		case f.StreamEnded():
			h.open = false
			c.h2Done(fateKeep)
		case h.drained > DrainBytes:
			c.h2Reset(http2.ErrCodeCancel)
			c.h2Done(fateKeep)
		}
	}
	return nil
}

// h2Head decodes a complete header block: the response head of the
// stream in flight, its trailers, or a block of another stream (decoded
// all the same: the table is the connection's).
func (c *econn) h2Head(now int64) error {
	h, ls := c.h2, c.ls
	ours := h.blockOf == h.id && h.open && ls.active && c.phase == phReading && h.x.r == nil
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
	if h.blockOf != h.id || !h.open || !ls.active {
		return nil
	}
	if !ours { // trailers
		switch {
		case !h.blockEnd:
		case c.phase == phDraining: // the terminal event came: the drain ends
			h.open = false
			c.h2Done(fateKeep)
		case c.phase == phReading:
			c.h2EndStream()
		}
		return nil
	}
	fields := h.fields
	h.fields = nil
	code, err := strconv.Atoi(h.status)
	switch {
	case h.status == "":
		err = errH2NoStatus
	case err != nil || len(h.status) != 3:
		err = errH2BadStatus
	case code == 101:
		err = errH2Upgrade
	case code >= 100 && code <= 199:
		return nil // informational: the response's head follows
	}
	if err != nil {
		c.h2Reset(http2.ErrCodeProtocol)
		c.h2StreamFailed(err)
		return nil
	}
	rec := ls.rec
	r := ls.x.r
	h.x.r = r
	if r.h2Head(code, "HTTP/2.0 "+h.status+" "+http.StatusText(code), fields, now) {
		rec.End = now
		f := h.x.settle(step{})
		if h.open && !h.blockEnd {
			c.h2Reset(http2.ErrCodeCancel) // closing the body resets the stream
		}
		c.h2Done(f)
		return nil
	}
	h.x.streaming = true
	if r.statusFailing() {
		c.waitAt = now + int64(ls.s.q.drainTimeout())
		c.schedule()
	}
	if h.blockEnd {
		c.h2EndStream()
	}
	return nil
}

// h2EndStream: END_STREAM came before the terminal event, as readStream
// takes io.EOF from the body.
func (c *econn) h2EndStream() {
	h, ls := c.h2, c.ls
	rec, r := ls.rec, h.x.r
	h.open = false
	rec.BodyEnded = true
	if r.statusFailing() && ls.ctx.Err() == nil {
		rec.Failure = r.statusFailure()
	} else {
		rec.Failure = ls.s.q.classify(ls.ctx, io.EOF, r.endOfStream(io.EOF))
	}
	c.h2Done(h.x.settle(step{err: io.EOF}))
}

// h2Terminal: the terminal event arrived at now (in a frame with
// END_STREAM: ended). The stream is drained to its END_STREAM, as drainH2
// does, unless the exchange closes the connection.
func (c *econn) h2Terminal(now int64, ended bool) {
	h, ls := c.h2, c.ls
	ls.rec.End = now
	h.x.r.close()
	f := h.x.settle(step{})
	if f != fateDrain {
		c.h2Done(f)
		return
	}
	if ended {
		h.open = false
		c.h2Done(fateKeep)
		return
	}
	c.startDrain(now)
}

// h2StopDrain: the drain's time is up (or the request was cancelled): the
// stream is reset, the connection stays.
func (c *econn) h2StopDrain() {
	c.h2Reset(http2.ErrCodeCancel)
	if err := c.h2Flush(); err != nil {
		c.h2Lost(err)
		return
	}
	c.h2Done(fateKeep)
}

// h2Reset resets the stream in flight, if it is open.
func (c *econn) h2Reset(code http2.ErrCode) {
	if h := c.h2; h.open {
		h.open = false
		h.body = nil
		h.fr.WriteRSTStream(h.id, code)
	}
}

// h2Done ends the request; the connection is kept when f says so and it
// can carry another stream (no GOAWAY came), else closed.
func (c *econn) h2Done(f fate) {
	ls, h := c.ls, c.h2
	h.body = nil // what the peer's window held back of it is not sent now
	if r := ls.x.r; r != nil {
		r.close()
	}
	if f == fateKeep && !h.goaway && h.nextID < 1<<31 {
		if err := c.h2Flush(); err == nil {
			c.drainEnded(fateKeep)
			return
		}
	}
	ls.closeConn()
	ls.finish()
}

// h2StreamFailed ends the stream in flight with err: before its head, as
// a failed round trip (a kept connection goes again: h2Exchange.settle),
// after it, as a failed body Read; the connection is closed. In the drain
// it only ends the drain.
func (c *econn) h2StreamFailed(err error) {
	ls, h := c.ls, c.h2
	q, rec := ls.s.q, ls.rec
	if !ls.active {
		return
	}
	h.open = false
	switch {
	case c.phase == phDraining:
		c.h2Done(fateKeep)
	case h.x.r == nil:
		if h.x.settle(step{err: err, cancelled: ls.ctx.Err() != nil}) == fateRetry {
			ls.retry()
			return
		}
		ls.failConn(q.classify(ls.ctx, err, sysFailure(result.RecvError, "send: ", err)))
	default:
		r := h.x.r
		if r.statusFailing() && ls.ctx.Err() == nil {
			rec.Failure = r.statusFailure()
		} else {
			rec.Failure = q.classify(ls.ctx, err, r.endOfStream(err))
		}
		ls.failConn(rec.Failure)
	}
}

// h2ConnError: the peer broke the protocol (err: what the framer, hpack
// or the rules found). A GOAWAY naming it goes out, best effort, the
// stream in flight fails with err, and the connection is closed.
func (c *econn) h2ConnError(err error) {
	h, ls := c.h2, c.ls
	code := http2.ErrCodeProtocol
	var ce http2.ConnectionError
	switch {
	case errors.As(err, &ce):
		code = http2.ErrCode(ce)
	case errors.Is(err, http2.ErrFrameTooLarge):
		code = http2.ErrCodeFrameSize
	}
	h.wr.b = h.wr.b[:0]
	h.fr.WriteGoAway(0, code, nil)
	c.h2Flush()
	if c.h2Closed() {
		return
	}
	c.h2StreamFailed(err)
	if ls.c == c { // cannot happen: a failed stream closes the connection
		ls.closeConn()
	}
}

// h2Lost: the connection ended (err: io.EOF for the peer's FIN, else the
// socket's error) or could not be written.
func (c *econn) h2Lost(err error) {
	h := c.h2
	if c.h2Closed() {
		return
	}
	switch {
	case h.goaway && (errors.Is(err, io.EOF) || isClosed(err)):
		// the text of the transport's (deprecated) GoAwayError
		err = fmt.Errorf("http2: server sent GOAWAY and closed the connection; LastStreamID=%v, ErrCode=%v, debug=%q", h.lastID, h.awayCode, "")
	case err == io.EOF:
		err = io.ErrUnexpectedEOF // as the transport: the stream did not end
	}
	c.h2StreamFailed(err)
}

// h2Closed closes the connection when no stream of a request is in flight
// on it — the session is idle (a kept connection lost), or the stream
// in flight had already ended and was being drained — and reports whether
// it did; else the stream in flight has to fail, and the caller says how.
func (c *econn) h2Closed() bool {
	ls := c.ls
	switch {
	case !ls.active:
		ls.lost = peerClosed
		ls.closeConn()
	case c.phase == phDraining:
		ls.closeConn()
		ls.finish()
	default:
		return false
	}
	return true
}
