package server

// The server's own HTTP/2 connection (RFC 9113), h2c and h2 over TLS:
// x/net/http2's Framer and hpack serve as codecs only. One goroutine per
// connection reads its frames; each request, once read, is answered on a
// goroutine of its own through the same route as HTTP/1.1; a stream's
// tokens are written by its shard with one non-blocking write of whole
// DATA frames, as HTTP/1.1's chunks are (h2Response.tryWrite), so that an
// HTTP/2 token costs no goroutine hand-off.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/wire"
)

// HTTP/2 sizes of the server's connections.
const (
	// h2FrameBytes is the largest frame payload the server writes and
	// reads: the initial SETTINGS_MAX_FRAME_SIZE, which every peer accepts
	// (the server does not ask for more; a token's event is far smaller).
	h2FrameBytes = 16 << 10
	// h2StreamWindow is the receive window the server gives each stream
	// (SETTINGS_INITIAL_WINDOW_SIZE): larger than any body it reads
	// (MaxBodyBytes), so a request body never waits for a WINDOW_UPDATE
	// and streams need none.
	h2StreamWindow = 8 << 20
	// h2ConnWindow is the connection's receive window; the server gives
	// back what it read once h2ConnCredit bytes are owed.
	h2ConnWindow = 16 << 20
	h2ConnCredit = 4 << 20
	// h2DefaultWindow is a send window before the peer's SETTINGS say
	// otherwise (RFC 9113 §6.9.2).
	h2DefaultWindow = 65_535
	// h2MaxWindow is the largest a flow-control window may grow.
	h2MaxWindow = 1<<31 - 1
	// h2MaxReadPerFrame bounds the bytes one ReadFrame may read: a header
	// block with its CONTINUATION frames (at most twice the header list
	// limit before the framer gives up), or a DATA frame. A flood of empty
	// CONTINUATION frames ends the connection there.
	h2MaxReadPerFrame = 4 * wire.MaxHeadBytes
	// h2GoAwayWait bounds how long Serve, stopping, waits for the write
	// lock of a connection to write its GOAWAY (all connections at once).
	h2GoAwayWait = 20 * time.Millisecond
	// h2DrainWait bounds how long a connection is read after the GOAWAY
	// of a stopping server, for the requests its client sent before it
	// read the GOAWAY: it ends sooner, once the client has answered the
	// PING sent after the GOAWAY and no stream is left (x/net's server
	// waits 1 s, its goAwayTimeout, for the same).
	h2DrainWait = time.Second
)

// h2DrainPing is the payload of the PING a stopping server sends after
// its GOAWAY: its acknowledgement comes after every frame the client sent
// before it read the GOAWAY.
var h2DrainPing = [8]byte{'s', 't', 'o', 'p', 'p', 'i', 'n', 'g'}

// errH2Stalled is the end of a stream whose client gave no send window
// (WINDOW_UPDATE) for Config.WriteTimeout.
var errH2Stalled = errors.New("HTTP/2 flow control: no WINDOW_UPDATE from the client")

// errH2Reset is the end of a stream the client reset (RST_STREAM).
var errH2Reset = errors.New("HTTP/2 stream reset by the client")

// errH2ConnClosed is the end of the streams of a connection that ended.
var errH2ConnClosed = errors.New("HTTP/2 connection closed")

// errH2FrameFlood is a ReadFrame that read more than h2MaxReadPerFrame.
var errH2FrameFlood = errors.New("HTTP/2 frame (or header block) larger than the server reads")

// errH2HeadTimeout ends a connection whose client began a header block
// (a request head) and did not end it within Config.ReadHeaderTimeout.
var errH2HeadTimeout = errors.New("HTTP/2 header block not received whole")

// errH2StreamWindow ends a stream whose client sent more DATA than the
// receive window the server gave it (RFC 9113 §6.9.1).
var errH2StreamWindow = errors.New("HTTP/2 flow control: the client sent more DATA than the stream's window")

// errH2HalfClosed ends a stream whose client sent DATA or HEADERS after
// its request's END_STREAM (RFC 9113 §5.1, half-closed (remote)).
var errH2HalfClosed = errors.New("HTTP/2: the client sent a frame on a stream it had ended (END_STREAM)")

// errH2SendWindow ends a stream whose client grew its send window past
// 2^31-1 with a WINDOW_UPDATE (RFC 9113 §6.9.1).
var errH2SendWindow = errors.New("HTTP/2 flow control: WINDOW_UPDATE past 2^31-1 on a stream")

// errH2Drained is the end of a connection read for h2DrainWait after the
// GOAWAY of a stopping server, or until its client had seen it.
var errH2Drained = errors.New("HTTP/2 connection drained after the server's GOAWAY")

// h2conn is one HTTP/2 connection of the server. Its reader goroutine
// (serve) owns the read side: the framer, the streams' requests while they
// arrive. Everything written goes under wmu, by whoever writes: the
// shards (tryWrite, which never waits for it), the streams' goroutines
// and the reader (blocking, up to Config.WriteTimeout).
type h2conn struct {
	s  *Server
	c  net.Conn // the accepted connection, released at the end
	rw net.Conn // what frames are read from and written to: c, c replaying its first bytes
	fr *http2.Framer
	in *countingReader
	no uint64 // the connection's number: its streams' shard

	mu      sync.Mutex
	streams map[uint32]*h2Response // guarded by mu: the streams not ended yet
	lastID  uint32                 // guarded by mu, written by the reader: the highest stream the client opened
	away    bool                   // the client sent GOAWAY (reader only)

	// The read deadline is the earliest of these, guarded by mu (armLocked):
	// idleAt while no stream is open, headAt while a header block is read,
	// drainAt once a stopping server sent its GOAWAY.
	idleAt, headAt, drainAt time.Time
	stopping                bool        // guarded by mu: the server is stopping; stopID is in its GOAWAY
	stopID                  uint32      // guarded by mu: the last stream a stopping server's GOAWAY names
	drainAck                bool        // guarded by mu: the client answered the PING after that GOAWAY
	draining                atomic.Bool // the GOAWAY of a stopping server was written: Serve leaves the socket to the reader

	wmu     sync.Mutex
	err     error         // guarded by wmu: why the connection ended
	closed  chan struct{} // closed when the connection ended (err set)
	connWin int64         // guarded by wmu: the connection's send window
	initWin int64         // guarded by wmu: the peer's SETTINGS_INITIAL_WINDOW_SIZE
	credit  chan struct{} // guarded by wmu: closed (and replaced) when a send window grows
	unsent  []byte        // guarded by wmu: the rest of frames a non-blocking write left
	ctl     bytes.Buffer  // guarded by wmu: control frames being written
	cfr     *http2.Framer // guarded by wmu: writes control frames into ctl
	owed    int64         // reader only: DATA bytes read and not credited back yet

	hmu  sync.Mutex // guards henc and hbuf
	henc *hpack.Encoder
	hbuf bytes.Buffer

	socketWriter // the shards' non-blocking write on the socket
}

// countingReader counts the bytes read through it since the last reset,
// and fails past its limit. It tells typed the type of the frame it reads
// once the frame's 9-byte header has passed; begun is told when a frame's
// first bytes arrive without its whole header.
type countingReader struct {
	r     io.Reader
	n     int
	limit int
	head  [9]byte // the first bytes read since the reset: the frame header
	begun func()
	typed func(http2.FrameType)
}

func (cr *countingReader) Read(p []byte) (int, error) {
	if cr.n >= cr.limit {
		return 0, errH2FrameFlood
	}
	n, err := cr.r.Read(p[:min(len(p), cr.limit-cr.n)])
	was := cr.n
	cr.n += n
	if was < len(cr.head) && n > 0 && cr.typed != nil {
		copy(cr.head[was:], p[:n])
		switch {
		case cr.n >= len(cr.head):
			cr.typed(http2.FrameType(cr.head[3]))
		case was == 0:
			cr.begun()
		}
	}
	return n, err
}

// newH2conn returns the HTTP/2 connection of the accepted connection c,
// read and written through rw.
func newH2conn(s *Server, c, rw net.Conn) *h2conn {
	hc := &h2conn{s: s, c: c, rw: rw, streams: make(map[uint32]*h2Response), closed: make(chan struct{}),
		connWin: h2DefaultWindow, initWin: h2DefaultWindow, credit: make(chan struct{}), no: uint64(s.connections.Load())}
	hc.in = &countingReader{r: rw, limit: h2MaxReadPerFrame}
	hc.fr = http2.NewFramer(nil, hc.in)
	hc.fr.SetMaxReadFrameSize(h2FrameBytes)
	hc.fr.MaxHeaderListSize = wire.MaxHeadBytes
	hc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	hc.cfr = http2.NewFramer(&hc.ctl, nil)
	hc.henc = hpack.NewEncoder(&hc.hbuf)
	// No dynamic table: each header block stands alone, so that blocks
	// encoded by different streams may be written in any order.
	hc.henc.SetMaxDynamicTableSizeLimit(0)
	hc.socketWriter.init(c)
	return hc
}

// serve reads the connection's frames until it ends, then releases it.
func (c *h2conn) serve() {
	c.s.mu.Lock()
	c.s.h2conns[c] = true
	c.s.mu.Unlock()
	defer func() {
		c.s.mu.Lock()
		delete(c.s.h2conns, c)
		c.s.mu.Unlock()
	}()
	err := c.run()
	c.shut(err)
	if err != nil && !isClosed(err) && !errors.Is(err, errIdle) {
		c.s.logf("server: %s: HTTP/2: %v", c, err)
	}
	c.wmu.Lock()
	c.c.Close() // not while a shard writes (a recordConn's close_notify)
	c.wmu.Unlock()
	c.s.release(c.c)
}

// run is serve's loop: the preface and the settings, then frame by frame.
func (c *h2conn) run() error {
	c.rw.SetReadDeadline(time.Now().Add(c.s.cfg.ReadHeaderTimeout))
	var preface [len(clientPreface)]byte
	if _, err := io.ReadFull(c.in, preface[:]); err != nil {
		return err
	}
	if string(preface[:]) != clientPreface {
		return errors.New("bad HTTP/2 client preface")
	}
	c.in.begun, c.in.typed = c.frameBegun, c.frameTyped
	err := c.control(func(f *http2.Framer) {
		f.WriteSettings(
			http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: h2MaxStreams},
			http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: wire.MaxHeadBytes},
			http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2StreamWindow},
		)
		f.WriteWindowUpdate(0, h2ConnWindow-h2DefaultWindow)
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.idle()
	c.mu.Unlock()
	for {
		c.in.n = 0
		f, err := c.fr.ReadFrame()
		if err != nil {
			var se http2.StreamError
			if errors.As(err, &se) {
				c.frameRead()
				c.resetStream(se.StreamID, se.Code)
				continue
			}
			return c.fail(err)
		}
		c.frameRead()
		if err := c.handle(f); err != nil {
			return c.fail(err)
		}
	}
}

// frameBegun starts the header timeout when a frame's first bytes arrive
// without its header: a client that sends a frame header slowly is as
// slow as one sending a header block slowly.
func (c *h2conn) frameBegun() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.headAt = time.Now().Add(c.s.cfg.ReadHeaderTimeout)
	c.armLocked()
}

// frameTyped bounds a header block (HEADERS with its CONTINUATION frames)
// by Config.ReadHeaderTimeout from its first byte, as HTTP/1.1 bounds a
// request head, whatever the other streams do: an unfinished header block
// stops the reader, and cannot be skipped (the HPACK state is the
// connection's). A DATA frame is the body's, bounded by Config.ReadTimeout.
func (c *h2conn) frameTyped(typ http2.FrameType) {
	switch typ {
	case http2.FrameHeaders, http2.FrameContinuation, http2.FramePushPromise:
		if c.headAt.IsZero() { // written by the reader only; set when the header came slowly
			c.mu.Lock()
			c.headAt = time.Now().Add(c.s.cfg.ReadHeaderTimeout)
			c.armLocked()
			c.mu.Unlock()
		}
	case http2.FrameData:
		c.frameRead()
	}
}

// frameRead ends the header timeout of the frame read.
func (c *h2conn) frameRead() {
	if c.headAt.IsZero() { // written by the reader only
		return
	}
	c.mu.Lock()
	c.headAt = time.Time{}
	c.armLocked()
	c.mu.Unlock()
}

// armLocked sets the read deadline: the earliest of the idle, header and
// drain deadlines, none when none is set; at once when a drain is over.
// Called with mu held.
func (c *h2conn) armLocked() {
	var d time.Time
	for _, at := range []time.Time{c.idleAt, c.headAt, c.drainAt} {
		if !at.IsZero() && (d.IsZero() || at.Before(d)) {
			d = at
		}
	}
	if c.stopping && c.drainAck && len(c.streams) == 0 {
		d = time.Now()
	}
	c.rw.SetReadDeadline(d)
}

// fail ends the connection on a read error: a protocol error gets a
// GOAWAY with its code first, an idle connection one without error.
func (c *h2conn) fail(err error) error {
	var ce http2.ConnectionError
	switch {
	case errors.As(err, &ce):
		c.goAway(http2.ErrCode(ce))
	case errors.Is(err, errH2FrameFlood):
		c.goAway(http2.ErrCodeEnhanceYourCalm)
	case errors.Is(err, http2.ErrFrameTooLarge):
		c.goAway(http2.ErrCodeFrameSize)
	case isTimeout(err):
		c.mu.Lock()
		drained, head := c.draining.Load(), !c.headAt.IsZero() && !time.Now().Before(c.headAt)
		c.mu.Unlock()
		switch {
		case drained:
			return errH2Drained // its GOAWAY is written
		case head:
			err := fmt.Errorf("%w within %v (ReadHeaderTimeout)", errH2HeadTimeout, c.s.cfg.ReadHeaderTimeout)
			c.goAwayDebug(http2.ErrCodeEnhanceYourCalm, err.Error())
			return err
		}
		c.goAway(http2.ErrCodeNo)
		return errIdle
	}
	return err
}

// goAway writes a GOAWAY with code, naming the last stream the server
// took.
func (c *h2conn) goAway(code http2.ErrCode) { c.goAwayDebug(code, "") }

// goAwayDebug writes a GOAWAY with code and debug, the text of why,
// naming the last stream the server took.
func (c *h2conn) goAwayDebug(code http2.ErrCode, debug string) {
	c.control(func(f *http2.Framer) { f.WriteGoAway(c.lastID, code, []byte(debug)) })
}

// goAwayClosing tells the client that the server is stopping (GOAWAY
// without error, naming the last stream it took, then a PING) when that
// costs little wait: one non-blocking write, if the connection has a file
// descriptor and its write lock is free within h2GoAwayWait (a writer
// holds it for one write, unless the socket is full, when a GOAWAY would
// not get through either). Without that write Serve closes the
// connection at once. With it the reader goes on for up to h2DrainWait,
// until the client has answered the PING (it has read the GOAWAY) and no
// stream is left: a request above the GOAWAY's stream is refused
// (RST_STREAM REFUSED_STREAM: the client may send it again elsewhere),
// one at or below it not answered yet gets the 503 server_closing of
// HTTP/3 (answer); the streams in progress end as their shard does
// (RST_STREAM). It reports whether the GOAWAY was written.
func (c *h2conn) goAwayClosing() bool {
	if c.raw == nil {
		return false
	}
	c.mu.Lock()
	c.stopping, c.stopID = true, c.lastID
	c.mu.Unlock()
	for end := time.Now().Add(h2GoAwayWait); !c.wmu.TryLock(); {
		if time.Now().After(end) {
			return false
		}
		time.Sleep(h2GoAwayWait / 100)
	}
	if c.err != nil || len(c.unsent) > 0 || c.rec != nil && c.rec.waiting() {
		c.wmu.Unlock()
		return false
	}
	var p [8]byte
	binary.BigEndian.PutUint32(p[:], c.stopID)           // written only above, before the lock
	b := appendFrame(nil, http2.FrameGoAway, 0, 0, p[:]) // code 0: NO_ERROR
	b = appendFrame(b, http2.FramePing, 0, 0, h2DrainPing[:])
	out := b
	if c.rec != nil {
		out = c.rec.seal(b)
	}
	n, err := c.rawWrite(out)
	switch {
	case c.rec != nil:
		_, err = c.rec.wrote(b, out, n, err) // a rest waits in the record layer
	case n < len(b) && (err == nil || errors.Is(err, errAgain)):
		c.unsent = append(c.unsent[:0], b[n:]...) // for the next write
		err = nil
	}
	c.wmu.Unlock()
	if err != nil && !errors.Is(err, errAgain) {
		return false
	}
	c.draining.Store(true)
	c.mu.Lock()
	c.drainAt = time.Now().Add(c.s.cfg.h2DrainWait)
	c.armLocked()
	c.mu.Unlock()
	return true
}

// handle is what the reader does with one frame; an error ends the
// connection.
func (c *h2conn) handle(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.SettingsFrame:
		return c.settings(f)
	case *http2.PingFrame:
		if f.IsAck() {
			if f.Data == h2DrainPing {
				c.mu.Lock()
				c.drainAck = c.stopping
				c.armLocked()
				c.mu.Unlock()
			}
			return nil
		}
		return c.control(func(w *http2.Framer) { w.WritePing(true, f.Data) })
	case *http2.WindowUpdateFrame:
		return c.windowUpdate(f.StreamID, f.Increment)
	case *http2.MetaHeadersFrame:
		return c.headers(f)
	case *http2.DataFrame:
		return c.data(f)
	case *http2.RSTStreamFrame:
		if t := c.stream(f.StreamID); t != nil {
			t.fail(errH2Reset)
			c.cancelRequest(t)
		}
	case *http2.GoAwayFrame:
		c.away = true
	case *http2.PushPromiseFrame:
		return http2.ConnectionError(http2.ErrCodeProtocol)
	}
	return nil // PRIORITY, unknown types
}

// settings applies the peer's SETTINGS and acknowledges them. A new
// initial window changes the send window of every open stream by the
// difference (RFC 9113 §6.9.2).
func (c *h2conn) settings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		return nil
	}
	if err := f.ForeachSetting(func(st http2.Setting) error {
		if err := st.Valid(); err != nil {
			return err
		}
		if st.ID == http2.SettingInitialWindowSize {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.wmu.Lock()
			defer c.wmu.Unlock()
			delta := int64(st.Val) - c.initWin
			for _, t := range c.streams {
				if t.win+delta > h2MaxWindow { // §6.9.2: a connection error
					return http2.ConnectionError(http2.ErrCodeFlowControl)
				}
			}
			c.initWin = int64(st.Val)
			for _, t := range c.streams {
				t.win += delta
			}
			c.grew()
		}
		return nil
	}); err != nil {
		return err
	}
	return c.control(func(w *http2.Framer) { w.WriteSettingsAck() })
}

// windowUpdate credits the send window of the connection (id 0) or of a
// stream. A window grown past 2^31-1 is a flow-control error (RFC 9113
// §6.9.1): of the connection, or of the stream, which is reset. (A zero
// increment is the framer's PROTOCOL_ERROR.)
func (c *h2conn) windowUpdate(id, inc uint32) error {
	t := c.stream(id)
	c.wmu.Lock()
	switch {
	case id == 0:
		if c.connWin+int64(inc) > h2MaxWindow {
			c.wmu.Unlock()
			return http2.ConnectionError(http2.ErrCodeFlowControl)
		}
		c.connWin += int64(inc)
	case t != nil:
		if t.win+int64(inc) > h2MaxWindow {
			c.wmu.Unlock()
			c.streamError(t, http2.ErrCodeFlowControl, errH2SendWindow)
			return nil
		}
		t.win += int64(inc)
	default:
		c.wmu.Unlock()
		return nil // a stream that ended
	}
	c.grew()
	c.wmu.Unlock()
	return nil
}

// streamError ends stream t on a stream error of its client: RST_STREAM
// with code, then its writes fail with err (whoever answers it stops) and
// a request not read whole yet is forgotten.
func (c *h2conn) streamError(t *h2Response, code http2.ErrCode, err error) {
	c.s.logf("server: %s: %v", t, err)
	c.resetStream(t.id, code)
	t.fail(err)
	c.cancelRequest(t)
}

// grew wakes the writers waiting for a send window. Called with wmu held.
func (c *h2conn) grew() {
	close(c.credit)
	c.credit = make(chan struct{})
}

// stream returns the open stream id, or nil.
func (c *h2conn) stream(id uint32) *h2Response {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.streams[id]
}

// headers opens a stream with its request's header block.
func (c *h2conn) headers(f *http2.MetaHeadersFrame) error {
	id := f.StreamID
	if id%2 == 0 {
		return http2.ConnectionError(http2.ErrCodeProtocol)
	}
	if id <= c.lastID {
		t := c.stream(id)
		switch {
		case t != nil && t.remoteEnded:
			c.streamError(t, http2.ErrCodeStreamClosed, errH2HalfClosed)
			return nil
		case t != nil && !t.reqDone && f.StreamEnded():
			t.remoteEnded = true
			c.requestRead(t) // trailers end the body; they are not read
			return nil
		}
		return http2.ConnectionError(http2.ErrCodeProtocol)
	}
	c.mu.Lock()
	c.lastID = id
	n, refused := len(c.streams), c.stopping && id > c.stopID
	c.mu.Unlock()
	if c.away {
		return nil
	}
	if refused { // above the stopping server's GOAWAY: never served
		c.resetStream(id, http2.ErrCodeRefusedStream)
		return nil
	}
	if n >= h2MaxStreams {
		c.resetStream(id, http2.ErrCodeRefusedStream)
		return nil
	}
	t := &h2Response{c: c, id: id, start: time.Now(), done: make(chan struct{})}
	t.head = wire.RequestHead{Proto: "HTTP/2.0", ContentLength: -1}
	for _, hf := range f.Fields {
		switch hf.Name {
		case ":method":
			t.head.Method = hf.Value
		case ":path":
			t.head.Target = hf.Value
		case ":authority":
			t.head.Host = hf.Value
		case ":scheme", ":protocol":
		default:
			t.head.Fields = append(t.head.Fields, wire.Field{Name: hf.Name, Value: hf.Value})
			switch hf.Name {
			case "content-length":
				if n, err := strconv.ParseInt(hf.Value, 10, 64); err == nil && n >= 0 {
					t.head.ContentLength = n
				}
			case "host":
				if t.head.Host == "" {
					t.head.Host = hf.Value
				}
			}
		}
	}
	c.mu.Lock()
	c.wmu.Lock()
	t.win = c.initWin
	c.wmu.Unlock()
	c.streams[id] = t
	if len(c.streams) == 1 { // not idle
		c.idleAt = time.Time{}
		c.armLocked()
	}
	c.mu.Unlock()
	c.s.requests.Add(1)
	switch {
	case f.Truncated:
		c.answerError(t, errHeadTooLarge())
	case t.head.Method == "" || t.head.Target == "":
		c.answerError(t, &httpError{status: 400, code: "bad_request", message: "HTTP/2 request without :method or :path"})
	case t.head.ContentLength > MaxBodyBytes:
		c.answerError(t, &httpError{status: 413, code: "request_too_large",
			message: fmt.Sprintf("request body of %d bytes is larger than the limit of %d", t.head.ContentLength, MaxBodyBytes)})
	case f.StreamEnded():
		t.remoteEnded = true
		c.requestRead(t)
	default:
		c.mu.Lock() // the timer's function reads t.timer (takeRequest)
		t.timer = time.AfterFunc(c.s.cfg.ReadTimeout, func() { c.answerError(t, errTimeout("body", c.s.cfg.ReadTimeout)) })
		c.mu.Unlock()
	}
	return nil
}

// data takes a DATA frame of a request body, and gives its bytes back to
// the connection's window once enough are owed.
func (c *h2conn) data(f *http2.DataFrame) error {
	if f.StreamID == 0 {
		return http2.ConnectionError(http2.ErrCodeProtocol)
	}
	if f.StreamID > c.lastID {
		return http2.ConnectionError(http2.ErrCodeProtocol) // idle stream
	}
	// The connection's receive window needs no check: the server gives
	// back every byte it reads once h2ConnCredit are owed, so the window a
	// client may fill never falls below h2ConnWindow-h2ConnCredit, far
	// more than a frame.
	c.owed += int64(f.Length)
	if c.owed >= h2ConnCredit {
		owed := c.owed
		c.owed = 0
		if err := c.control(func(w *http2.Framer) { w.WriteWindowUpdate(0, uint32(owed)) }); err != nil {
			return err
		}
	}
	t := c.stream(f.StreamID)
	if t == nil {
		return nil // a stream that ended
	}
	if t.remoteEnded {
		c.streamError(t, http2.ErrCodeStreamClosed, errH2HalfClosed)
		return nil
	}
	t.remoteEnded = f.StreamEnded()
	// The stream's receive window is h2StreamWindow for its whole life:
	// the server gives none back (it reads at most MaxBodyBytes), and
	// counts what arrives after it answered too (§6.9.1).
	if t.recv += int64(f.Length); t.recv > h2StreamWindow {
		c.streamError(t, http2.ErrCodeFlowControl, errH2StreamWindow)
		return nil
	}
	c.mu.Lock()
	if t.reqDone {
		c.mu.Unlock()
		return nil // a stream answered already, or ended
	}
	if len(t.body)+len(f.Data()) > MaxBodyBytes {
		c.mu.Unlock()
		c.answerError(t, &httpError{status: 413, code: "request_too_large",
			message: fmt.Sprintf("request body larger than the limit of %d bytes", MaxBodyBytes)})
		return nil
	}
	t.body = append(t.body, f.Data()...)
	c.mu.Unlock()
	if f.StreamEnded() {
		c.requestRead(t)
	}
	return nil
}

// takeRequest marks t's request as answered (read whole, or answered
// early with an error) and reports whether it was not already.
func (c *h2conn) takeRequest(t *h2Response) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.reqDone {
		return false
	}
	t.reqDone = true
	if t.timer != nil {
		t.timer.Stop()
	}
	return true
}

// requestRead answers t's request, read whole, on a goroutine of its own.
func (c *h2conn) requestRead(t *h2Response) {
	if !c.takeRequest(t) {
		return
	}
	t.bodyRead = true
	req := request{head: t.head, body: t.body, arrived: c.s.clk.Now()}
	t.body = nil
	go c.answer(t, func() *stream { return c.s.route(t, req) })
}

// answerError answers t's request, not read whole, with e.
func (c *h2conn) answerError(t *h2Response, e *httpError) {
	if !c.takeRequest(t) {
		return
	}
	go c.answer(t, func() *stream {
		c.s.logf("server: %s: %d %s", t, e.status, e.message)
		c.s.writeError(t, e)
		return nil
	})
}

// cancelRequest forgets a request the client reset before it was read.
func (c *h2conn) cancelRequest(t *h2Response) {
	if c.takeRequest(t) {
		c.remove(t)
	}
}

// answer runs respond, which answers t, and ends t unless a shard owns it
// then (a stream).
func (c *h2conn) answer(t *h2Response, respond func() *stream) {
	if !c.s.enter() { // stopping: a stream at or below its GOAWAY's
		c.s.writeError(t, errClosing())
		if !t.bodyRead {
			c.resetStream(t.id, http2.ErrCodeNo)
		}
		c.remove(t)
		return
	}
	defer c.recoverStream(t)
	if respond() == nil {
		t.end(false)
	}
}

// recoverStream is recoverPanic for a goroutine answering a stream: it
// counts and logs the panic, and resets the stream.
func (c *h2conn) recoverStream(t *h2Response) {
	r := recover()
	if r == nil {
		return
	}
	c.s.panics.Add(1)
	c.s.logf("server: %s: panic: %v\n%s", t, r, debug.Stack())
	t.cut = true
	t.end(false)
}

// streamEvent is the onEvent of the connection's streams: it runs on its
// own goroutine, and ends the stream when advance does.
func (c *h2conn) streamEvent(st *stream, ev event) {
	t := h2ResponseOf(st.w)
	defer c.recoverStream(t)
	if ended, complete := c.s.advance(st, ev); ended {
		t.end(!complete)
	}
}

// remove forgets t; the connection is idle when it was the last.
func (c *h2conn) remove(t *h2Response) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.streams[t.id] != t {
		return
	}
	delete(c.streams, t.id)
	if len(c.streams) == 0 {
		c.idle()
	}
}

// idle starts the idle timeout: the reader's next read fails once the
// connection has had no stream for Config.IdleTimeout. Called with mu
// held.
func (c *h2conn) idle() {
	c.idleAt = time.Now().Add(c.s.cfg.IdleTimeout)
	c.armLocked()
}

// resetStream writes RST_STREAM for stream id with code.
func (c *h2conn) resetStream(id uint32, code http2.ErrCode) {
	c.control(func(w *http2.Framer) { w.WriteRSTStream(id, code) })
}

// control writes the frames write puts in ctl, blocking up to
// Config.WriteTimeout.
func (c *h2conn) control(write func(*http2.Framer)) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.err != nil {
		return c.err
	}
	c.ctl.Reset()
	write(c.cfr)
	return c.writeLocked(c.ctl.Bytes())
}

// writeLocked writes b after what a non-blocking write left, blocking up
// to Config.WriteTimeout. A failed write ends the connection: frames may
// be cut. Called with wmu held.
func (c *h2conn) writeLocked(b []byte) error {
	c.rw.SetWriteDeadline(time.Now().Add(c.s.cfg.WriteTimeout))
	defer c.rw.SetWriteDeadline(time.Time{})
	if len(c.unsent) > 0 {
		if _, err := c.rw.Write(c.unsent); err != nil {
			c.brokeLocked(err)
			return err
		}
		c.unsent = c.unsent[:0]
	}
	if len(b) == 0 && c.rec != nil {
		_, err := c.rw.Write(nil) // the records a non-blocking write left
		if err != nil {
			c.brokeLocked(err)
		}
		return err
	}
	if len(b) == 0 {
		return nil
	}
	if _, err := c.rw.Write(b); err != nil {
		c.brokeLocked(err)
		return err
	}
	return nil
}

// brokeLocked ends the connection after a failed write: its socket is
// closed, which ends the reader. Called with wmu held.
func (c *h2conn) brokeLocked(err error) {
	if c.err == nil {
		c.err = fmt.Errorf("%w: %w", errH2ConnClosed, err)
		close(c.closed)
	}
	c.c.Close()
}

// shut ends the connection once its reader has stopped: every stream's
// next write fails, every wait ends.
func (c *h2conn) shut(err error) {
	c.wmu.Lock()
	if c.err == nil {
		if err == nil {
			err = io.EOF
		}
		c.err = fmt.Errorf("%w: %w", errH2ConnClosed, err)
		close(c.closed)
	}
	c.wmu.Unlock()
	c.mu.Lock()
	var pending []*h2Response
	for _, t := range c.streams {
		if !t.reqDone {
			pending = append(pending, t)
		}
	}
	c.mu.Unlock()
	for _, t := range pending {
		c.cancelRequest(t)
	}
}

func (c *h2conn) String() string { return describe(c.c) + " (HTTP/2)" }

// h2Response is the transport and stream writer of one request on an
// h2conn. Its bytes are whole frames: startStream puts the HEADERS frame
// before the first event, appendEvent a DATA frame around each event,
// appendEnd an empty DATA frame that ends the stream.
type h2Response struct {
	c     *h2conn
	id    uint32
	start time.Time // its HEADERS frame arrived

	// The request, owned by the reader until reqDone; reqDone, body and
	// timer are guarded by c.mu.
	head     wire.RequestHead
	body     []byte
	timer    *time.Timer // Config.ReadTimeout for the body
	reqDone  bool        // the request is read whole or answered already
	bodyRead bool        // the request was read whole (else the answer resets the stream's rest)

	recv    int64         // the DATA bytes received, against h2StreamWindow (reader only)
	win     int64         // guarded by c.wmu: the stream's send window
	err     error         // guarded by c.wmu: why the stream cannot be written any more
	done    chan struct{} // closed with err
	sentEnd bool          // guarded by c.wmu: END_STREAM is written
	// partial is the start of a frame a write ended in (the write_bytes
	// fault cuts the bytes anywhere), written with the next write; guarded
	// by c.wmu.
	partial []byte
	cut     bool // a cut fault (or a panic) ended the stream: it is reset
	// remoteEnded: the request's END_STREAM arrived, the stream is
	// half-closed (remote); the reader's only.
	remoteEnded bool
	ended       bool // end ran (owned by the stream's goroutine)
}

// h2ResponseOf returns the HTTP/2 response under a stream's writer.
func h2ResponseOf(w streamWriter) *h2Response {
	if fw, ok := w.(*faultWriter); ok {
		w = fw.streamWriter
	}
	return w.(*h2Response)
}

// fail makes the stream's writes fail with err from now on.
func (t *h2Response) fail(err error) {
	t.c.wmu.Lock()
	defer t.c.wmu.Unlock()
	if t.err == nil {
		t.err = err
		close(t.done)
	}
}

// end ends the stream once its answer is over: reset when it was cut,
// failed or did not end its body, or when the client is still sending a
// request the server did not read; then forgotten. A cut (a fault, a
// panic) is INTERNAL_ERROR; an answer a stopping server does not finish
// is CANCEL (RFC 9113 §7: the stream is no longer needed): the client, or
// a gateway in front, must not log it as a server failure.
func (t *h2Response) end(failed bool) {
	if t.ended {
		return
	}
	t.ended = true
	c := t.c
	c.wmu.Lock()
	sent, gone := t.sentEnd, t.err != nil || c.err != nil
	c.wmu.Unlock()
	c.mu.Lock()
	stopping := c.stopping
	c.mu.Unlock()
	switch {
	case gone:
	case !t.cut && stopping && (failed || !sent):
		c.resetStream(t.id, http2.ErrCodeCancel)
	case t.cut || failed || !sent:
		c.resetStream(t.id, http2.ErrCodeInternal)
	case !t.bodyRead:
		c.resetStream(t.id, http2.ErrCodeNo) // the answer is whole: stop sending the request
	}
	t.fail(errH2ConnClosed)
	c.remove(t)
	c.s.wg.Done()
}

// appendFrame appends a frame header and payload.
func appendFrame(dst []byte, typ http2.FrameType, flags http2.Flags, id uint32, payload []byte) []byte {
	n := len(payload)
	dst = append(dst, byte(n>>16), byte(n>>8), byte(n), byte(typ), byte(flags))
	dst = binary.BigEndian.AppendUint32(dst, id&(1<<31-1))
	return append(dst, payload...)
}

// appendHeaders appends the HEADERS frame of a response with status and
// fields (their names lowercased).
func (t *h2Response) appendHeaders(dst []byte, status int, end bool, fields ...wire.Field) []byte {
	c := t.c
	c.hmu.Lock()
	defer c.hmu.Unlock()
	c.hbuf.Reset()
	c.henc.WriteField(hpack.HeaderField{Name: ":status", Value: strconv.Itoa(status)})
	for _, f := range fields {
		c.henc.WriteField(hpack.HeaderField{Name: strings.ToLower(f.Name), Value: f.Value})
	}
	flags := http2.FlagHeadersEndHeaders
	if end {
		flags |= http2.FlagHeadersEndStream
	}
	return appendFrame(dst, http2.FrameHeaders, flags, t.id, c.hbuf.Bytes())
}

func (t *h2Response) writeJSON(status int, body []byte, fields ...wire.Field) {
	all := append([]wire.Field{{Name: "Content-Type", Value: "application/json"},
		{Name: "Content-Length", Value: strconv.Itoa(len(body))}}, fields...)
	b := t.appendHeaders(nil, status, len(body) == 0, all...)
	if len(body) > 0 {
		b = t.appendEvent(b, body)
		b = t.appendEnd(b)
	}
	t.write(b)
}

func (t *h2Response) waitUntil(at time.Time) bool {
	return sleepUntil(at, t.done, t.c.closed, t.c.s.quit)
}

// startStream appends the HEADERS frame of the 200 text/event-stream
// response.
func (t *h2Response) startStream(dst []byte) []byte {
	fields := []wire.Field{{Name: "content-type", Value: "text/event-stream"}, {Name: "cache-control", Value: "no-cache"},
		{Name: "x-accel-buffering", Value: "no"}}
	if id := t.c.s.cfg.Instance; id != "" {
		fields = append(fields, wire.Field{Name: api.InstanceHeader, Value: id})
	}
	return t.appendHeaders(dst, 200, false, fields...)
}

func (t *h2Response) bind(st *stream) { st.onEvent = t.c.streamEvent }

// appendEvent appends ev in DATA frames: one, unless it is larger than
// h2FrameBytes.
func (t *h2Response) appendEvent(dst, ev []byte) []byte {
	for {
		n := min(len(ev), h2FrameBytes)
		dst = appendFrame(dst, http2.FrameData, 0, t.id, ev[:n])
		if ev = ev[n:]; len(ev) == 0 {
			return dst
		}
	}
}

// appendEnd appends an empty DATA frame with END_STREAM.
func (t *h2Response) appendEnd(dst []byte) []byte {
	return appendFrame(dst, http2.FrameData, http2.FlagDataEndStream, t.id, nil)
}

// frameAt returns the type, flags and whole length of the frame at the
// start of b (the frames the writer appended: always whole).
func frameAt(b []byte) (http2.FrameType, http2.Flags, int) {
	n := int(b[0])<<16 | int(b[1])<<8 | int(b[2])
	return http2.FrameType(b[3]), http2.Flags(b[4]), 9 + n
}

// fit returns how many bytes of the frames at the start of b fit the send
// windows avail (whole frames), the DATA payload they carry, and whether
// they end the stream.
func fit(b []byte, avail int64) (n int, data int64, end bool) {
	for n < len(b) {
		typ, flags, l := frameAt(b[n:])
		if typ == http2.FrameData && l > 9 {
			if data+int64(l-9) > avail {
				break
			}
			data += int64(l - 9)
		}
		end = end || typ == http2.FrameData && flags.Has(http2.FlagDataEndStream) ||
			typ == http2.FrameHeaders && flags.Has(http2.FlagHeadersEndStream)
		n += l
	}
	return n, data, end
}

// write writes the frames b, blocking up to Config.WriteTimeout for the
// socket and, for each DATA frame, for the send windows of the
// connection and the stream: a frame larger than they allow is cut to
// what they allow, the rest waits for a WINDOW_UPDATE. With b empty, it
// writes what a non-blocking write left.
func (t *h2Response) write(b []byte) error {
	c := t.c
	deadline := time.Now().Add(c.s.cfg.WriteTimeout)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if len(b) == 0 {
		return c.writeLocked(nil)
	}
	if len(t.partial) > 0 {
		b = append(t.partial, b...)
		t.partial = nil
	}
	if whole := wholeFrames(b); whole < len(b) {
		t.partial = append([]byte(nil), b[whole:]...)
		b = b[:whole]
	}
	for len(b) > 0 {
		if err := t.errLocked(); err != nil {
			return err
		}
		avail := min(c.connWin, t.win)
		n, data, end := fit(b, avail)
		if n > 0 {
			c.connWin -= data
			t.win -= data
			if err := c.writeLocked(b[:n]); err != nil {
				return err
			}
			t.sentEnd = t.sentEnd || end
			b = b[n:]
			continue
		}
		if avail > 0 { // the first DATA frame, cut to the windows
			_, flags, l := frameAt(b)
			var head [9]byte
			appendFrame(head[:0], http2.FrameData, flags&^http2.FlagDataEndStream, t.id, nil)
			head[0], head[1], head[2] = byte(avail>>16), byte(avail>>8), byte(avail)
			c.connWin -= avail
			t.win -= avail
			if err := c.writeLocked(append(head[:], b[9:9+avail]...)); err != nil {
				return err
			}
			// The rest of the frame, then the frames after it.
			rest := appendFrame(make([]byte, 0, len(b)-int(avail)), http2.FrameData, flags, t.id, b[9+avail:l])
			b = append(rest, b[l:]...)
			continue
		}
		ch := c.credit
		c.wmu.Unlock()
		if timer == nil {
			timer = time.NewTimer(time.Until(deadline))
		}
		select {
		case <-ch:
		case <-timer.C:
			c.wmu.Lock()
			return fmt.Errorf("%w within %v", errH2Stalled, c.s.cfg.WriteTimeout)
		case <-t.done:
		case <-c.closed:
		}
		c.wmu.Lock()
	}
	return nil
}

// wholeFrames returns the length of the whole frames at the start of b.
func wholeFrames(b []byte) int {
	n := 0
	for n+9 <= len(b) {
		_, _, l := frameAt(b[n:])
		if n+l > len(b) {
			break
		}
		n += l
	}
	return n
}

// errLocked is why the stream cannot be written, nil if it can. Called
// with c.wmu held.
func (t *h2Response) errLocked() error {
	if t.c.err != nil {
		return t.c.err
	}
	return t.err
}

func (t *h2Response) direct() bool { return t.c.raw != nil }

// tryWrite writes the frames b with one non-blocking write, when the
// connection is free (its write lock not held, nothing left of an earlier
// write) and the send windows take their DATA; otherwise errAgain, and
// the stream's goroutine writes them (write). A short write leaves the
// rest to be written first by the next write on the connection: the
// stream's, whose goroutine it wakes (errAgain with all of b counted).
func (t *h2Response) tryWrite(b []byte) (int, error) {
	c := t.c
	if !c.wmu.TryLock() {
		return 0, errAgain
	}
	defer c.wmu.Unlock()
	if err := t.errLocked(); err != nil {
		return 0, err
	}
	if len(c.unsent) > 0 || c.rec != nil && c.rec.waiting() {
		return 0, errAgain
	}
	n, data, end := fit(b, min(c.connWin, t.win))
	if n < len(b) {
		return 0, errAgain
	}
	c.connWin -= data
	t.win -= data
	t.sentEnd = t.sentEnd || end
	if rc := c.rec; rc != nil {
		out := rc.seal(b)
		n, err := c.rawWrite(out)
		n, err = rc.wrote(b, out, n, err)
		if err != nil && !errors.Is(err, errAgain) {
			c.brokeLocked(err)
		}
		return n, err
	}
	w, err := c.rawWrite(b)
	switch {
	case w == len(b) && err == nil:
		return w, nil
	case err == nil || errors.Is(err, errAgain):
		c.unsent = append(c.unsent[:0], b[w:]...)
		return len(b), errAgain
	}
	c.brokeLocked(err)
	return 0, err
}

func (t *h2Response) String() string {
	return describe(t.c.c) + " (HTTP/2 stream " + strconv.FormatUint(uint64(t.id), 10) + ")"
}

// pinnedShard returns the shard number of the streams of t's HTTP/2
// connection, when t is one of its streams: the connection's number, so
// that one shard writes all of them, in one wake-up, without contending
// for the connection's write lock (another shard's tryWrite would find
// it taken and hand its token to a goroutine).
func pinnedShard(t transport) (uint64, bool) {
	if r, ok := t.(*h2Response); ok {
		return r.c.no, true
	}
	return 0, false
}
