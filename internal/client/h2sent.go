package client

import (
	"net"
	"sync"
	"sync/atomic"

	"golang.org/x/net/http2"

	"github.com/sse-latency/sse-latency/internal/clock"
)

// streamStamp times the sending of one request on an HTTP/2 connection:
// when the transport read the end of its body (eof) and when the Write
// that carried its END_STREAM returned (sent).
type streamStamp struct {
	eof  atomic.Int64
	sent atomic.Int64
}

// sentBefore returns when the request was written, given that the
// response head had arrived by head: the time the write returned, unless
// the writing goroutine took that time only after the head (it was
// descheduled between the two); then the time it read the end of the
// body, right before the write. 0 when the body's end was never read.
func (st *streamStamp) sentBefore(head int64) int64 {
	if sent := st.sent.Load(); sent != 0 && sent <= head {
		return sent
	}
	return st.eof.Load()
}

// muxConn is the connection under an HTTP/2 client connection. It reads
// the frame headers of what the transport writes (frameScan) and notes,
// for each stream of ours, when the Write that carried its END_STREAM
// returned: streams written concurrently each get their own instant.
//
// Which stream id is which request: the transport writes the HEADERS of
// new streams in the order of their ids, and calls each request's
// httptrace WroteHeaders right after writing them to its buffer, under
// the same lock; the k-th new stream on the wire is the k-th WroteHeaders.
// Either may come first (a header block larger than the transport's
// buffer reaches the socket before WroteHeaders), so both wait in a queue
// for the other.
type muxConn struct {
	net.Conn
	clk clock.Clock

	mu        sync.Mutex
	scan      frameScan
	maxID     uint32                  // the highest stream id seen opening
	waiting   []*streamStamp          // WroteHeaders came, the stream's HEADERS not yet on the wire
	unclaimed []unclaimedStream       // HEADERS on the wire, WroteHeaders not yet
	open      map[uint32]*streamStamp // bound, END_STREAM not yet written

	first settingsScan // the peer's first frame, read by the transport's one reading goroutine
	heard atomic.Bool  // the peer's SETTINGS came whole, as its first frame (first)
}

// unclaimedStream is a stream seen on the wire before its WroteHeaders:
// its id and, if it ended already, when.
type unclaimedStream struct {
	id   uint32
	sent int64
}

func newMuxConn(c net.Conn, clk clock.Clock) *muxConn {
	return &muxConn{Conn: c, clk: clk, scan: frameScan{preface: len(http2.ClientPreface)}, open: make(map[uint32]*streamStamp)}
}

// wroteHeaders binds st to the next new stream (the transport's
// WroteHeaders of st's request).
func (c *muxConn) wroteHeaders(st *streamStamp) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.unclaimed) == 0 {
		c.waiting = append(c.waiting, st)
		return
	}
	u := c.unclaimed[0]
	c.unclaimed = c.unclaimed[1:]
	if u.sent != 0 {
		st.sent.Store(u.sent)
		return
	}
	c.open[u.id] = st
}

// Read reads from the connection, noting when the peer's SETTINGS have
// come whole as its first frame (the group's bound on them,
// h2SettingsWait): bytes alone are not SETTINGS, a part of the frame, or
// a first frame of another type (or no HTTP/2 at all), is not heard.
// Only the transport's read loop reads, so first needs no lock.
func (c *muxConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.heard.Load() && c.first.scan(p[:n]) {
		c.heard.Store(true)
	}
	return n, err
}

// settingsScan follows the first frame of the bytes a peer sends, across
// reads that split it anywhere, to say when it has come whole and is a
// SETTINGS frame on stream 0 (RFC 9113 §3.4: the server's connection
// preface). Once it has decided, either way, it reads no further.
type settingsScan struct {
	hdr  [9]byte
	hn   int  // bytes of hdr filled
	skip int  // payload bytes still to come, once hdr is whole
	over bool // decided: the first frame ended, or it is not SETTINGS
}

// scan scans p, the next bytes read, and reports whether they complete a
// first frame that is SETTINGS on stream 0; it reports so only once.
func (s *settingsScan) scan(p []byte) bool {
	if s.over {
		return false
	}
	if s.hn < len(s.hdr) {
		n := copy(s.hdr[s.hn:], p)
		s.hn += n
		p = p[n:]
		if s.hn < len(s.hdr) {
			return false
		}
		h := s.hdr
		id := (uint32(h[5])<<24 | uint32(h[6])<<16 | uint32(h[7])<<8 | uint32(h[8])) & (1<<31 - 1)
		if http2.FrameType(h[3]) != http2.FrameSettings || id != 0 {
			s.over = true
			return false
		}
		s.skip = int(h[0])<<16 | int(h[1])<<8 | int(h[2])
	}
	n := min(s.skip, len(p))
	s.skip -= n
	if s.skip > 0 {
		return false
	}
	s.over = true
	return true
}

func (c *muxConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	now := c.clk.Now()
	c.mu.Lock()
	c.scan.scan(p[:n], func(f scannedFrame) { c.frame(f, now) })
	c.mu.Unlock()
	return n, err
}

// frame takes one frame the transport wrote, whose last byte went out in
// a Write that returned at now.
func (c *muxConn) frame(f scannedFrame, now int64) {
	if f.opens && f.id > c.maxID {
		c.maxID = f.id
		if len(c.waiting) > 0 {
			c.open[f.id] = c.waiting[0]
			c.waiting = c.waiting[1:]
		} else {
			c.unclaimed = append(c.unclaimed, unclaimedStream{id: f.id})
		}
	}
	if !f.ends {
		return
	}
	if st := c.open[f.id]; st != nil {
		st.sent.CompareAndSwap(0, now)
		delete(c.open, f.id)
		return
	}
	for i := range c.unclaimed {
		if c.unclaimed[i].id == f.id && c.unclaimed[i].sent == 0 {
			c.unclaimed[i].sent = now
		}
	}
}

// frameScan follows the HTTP/2 frames of a byte stream by their headers
// alone (RFC 9113 §4.1: length, type, flags, stream id), across writes
// that split them anywhere: after preface bytes of client preface, each
// frame is reported once its last byte has been scanned. It never fails:
// bytes that are no HTTP/2 are framed as they come.
type frameScan struct {
	preface int // preface bytes still to skip
	hdr     [9]byte
	hn      int             // bytes of hdr filled
	skip    int             // payload bytes of the current frame still to come
	cur     scannedFrame    // the current frame, once its header is complete
	endsOf  map[uint32]bool // streams whose HEADERS had END_STREAM, awaiting END_HEADERS
}

// scannedFrame is what frameScan reports of a frame: its stream, whether
// it opens a stream (HEADERS) and whether the stream's sending side ends
// with it (END_STREAM, on DATA, or at the end of the header block that
// carried it).
type scannedFrame struct {
	typ   http2.FrameType
	id    uint32
	opens bool
	ends  bool
}

// scan scans p, calling done for each frame completed in it.
func (s *frameScan) scan(p []byte, done func(scannedFrame)) {
	for len(p) > 0 {
		if s.preface > 0 {
			n := min(s.preface, len(p))
			s.preface -= n
			p = p[n:]
			continue
		}
		if s.hn < len(s.hdr) {
			n := copy(s.hdr[s.hn:], p)
			s.hn += n
			p = p[n:]
			if s.hn < len(s.hdr) {
				return
			}
			s.header()
			if s.skip > 0 {
				continue
			}
		} else {
			n := min(s.skip, len(p))
			s.skip -= n
			p = p[n:]
			if s.skip > 0 {
				return
			}
		}
		s.hn = 0
		done(s.cur)
	}
}

// header reads the frame header in hdr.
func (s *frameScan) header() {
	h := s.hdr
	s.skip = int(h[0])<<16 | int(h[1])<<8 | int(h[2])
	typ, flags := http2.FrameType(h[3]), http2.Flags(h[4])
	id := (uint32(h[5])<<24 | uint32(h[6])<<16 | uint32(h[7])<<8 | uint32(h[8])) & (1<<31 - 1)
	f := scannedFrame{typ: typ, id: id}
	switch typ {
	case http2.FrameData:
		f.ends = flags.Has(http2.FlagDataEndStream)
	case http2.FrameHeaders:
		f.opens = true
		end, endHeaders := flags.Has(http2.FlagHeadersEndStream), flags.Has(http2.FlagHeadersEndHeaders)
		switch {
		case end && endHeaders:
			f.ends = true
		case end:
			if s.endsOf == nil {
				s.endsOf = make(map[uint32]bool)
			}
			s.endsOf[id] = true
		}
	case http2.FrameContinuation:
		if flags.Has(http2.FlagContinuationEndHeaders) && s.endsOf[id] {
			delete(s.endsOf, id)
			f.ends = true
		}
	}
	s.cur = f
}
