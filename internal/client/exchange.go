package client

import (
	"errors"
	"io"

	"github.com/sse-latency/sse-latency/internal/result"
)

// fate is what becomes of a connection at a step of a request: the one
// decision every engine (goroutine, epoll, io_uring) and every protocol
// (HTTP/1.1, WebSocket, HTTP/2) takes by the rules of its exchange's
// settle method, and that its driver carries out.
type fate uint8

const (
	fateClose  fate = iota // close the connection; the request's outcome stands
	fateKeep               // keep it: it can carry the next request
	fateDrain              // read on to the response's framing end (settle again with what arrives)
	fateRetry              // a kept connection the peer closed: send the request again on a new one
	fatePoison             // close it, marked rec.Poisoned: no framing end, or bytes beyond it
)

var fateNames = [...]string{fateClose: "close", fateKeep: "keep", fateDrain: "drain", fateRetry: "retry", fatePoison: "poison"}

func (f fate) String() string { return fateNames[f] }

// step is what a driver hands settle: how its last Read (or Write) went.
type step struct {
	p         []byte // bytes read while draining
	err       error  // the Read's or Write's error; nil: the response ended by its parse, or p arrived
	cancelled bool   // the request's context is done
	unsent    bool   // frames queued for the peer are not written yet (WebSocket)
}

// keptLost is the rule of a reuse failure: a kept connection (reused) that
// the peer closed before any byte of the response (bytes 0) while the
// request was not cancelled; the request goes again on a new connection.
func keptLost(reused bool, bytes int64, st step) bool {
	return reused && bytes == 0 && !st.cancelled && st.err != nil && isClosed(st.err)
}

// h1Exchange is one request's HTTP/1.1 response on a connection, without
// I/O: its drivers (Session.doH1 and the event loop's econn) read, feed
// the reader, and ask settle what to do with the connection once the
// response ended or a Read failed, then at each Read of the drain.
type h1Exchange struct {
	r         *reader
	rec       *result.Request
	reused    bool // the connection was kept from an earlier request
	keepAlive bool // the connection may carry another request (Options.KeepAlive, not a one-shot)
	ended     bool // the response ended: what follows is its drain
	drained   int  // bytes read by the drain
}

// settle decides the fate of the connection. Before the response ended,
// st.err is the failure of a Read or Write (retry or close); with st.err
// nil the response has just ended (reader.feed true): the connection is
// closed, poisoned, kept, or drained to the framing end. While draining,
// st holds what a Read returned, and the drain is bounded by DrainBytes.
func (x *h1Exchange) settle(st step) fate {
	rec := x.rec
	if !x.ended {
		if st.err != nil {
			if keptLost(x.reused, rec.Bytes, st) {
				return fateRetry
			}
			return fateClose
		}
		x.ended = true
		r := x.r
		if !x.keepAlive || st.cancelled || !r.keepable() {
			return fateClose
		}
		if !r.framed() {
			if isStreamEnd(rec.Failure.Kind) {
				rec.Poisoned = true // the body had no framing end: read until close
				return fatePoison
			}
			return fateClose
		}
		return x.drainFate(r.drainRest())
	}
	var done bool
	var err error
	if n := len(st.p); n > 0 {
		rec.Reads++
		rec.Bytes += int64(n)
		if x.drained += n; x.drained > DrainBytes {
			err = errDrainTooLong
		} else {
			done, err = x.r.drain(st.p)
		}
	}
	if st.err != nil && err == nil && !done {
		err = st.err
	}
	return x.drainFate(done, err)
}

// drainFate is the fate of a drain that reached its framing end (done) or
// failed (err): kept, closed when the peer closed, else poisoned.
func (x *h1Exchange) drainFate(done bool, err error) fate {
	switch {
	case err != nil:
		if !errors.Is(err, io.EOF) && !isClosed(err) {
			x.rec.Poisoned = true
			return fatePoison
		}
		return fateClose
	case done:
		return fateKeep
	}
	return fateDrain
}

// settle is h1Exchange.settle for a request over WebSocket: before the
// request ended, a Read that failed (retry or close); once it ended, a
// kept connection the peer closed before any message goes again, and the
// connection is kept when it can carry the next request (reusable) and
// nothing waits to be written.
func (w *wsExchange) settle(st step) fate {
	switch {
	case !w.ended:
		if keptLost(w.reused, w.r.rec.Bytes, st) {
			return fateRetry
		}
		return fateClose
	case w.dead && !st.cancelled:
		return fateRetry
	case w.keepAlive && !st.cancelled && !st.unsent && w.reusable():
		return fateKeep
	}
	return fateClose
}

// h2Exchange is one request's stream on an HTTP/2 connection: settle is
// h1Exchange.settle for a stream, whose reset leaves the connection up.
type h2Exchange struct {
	r         *reader // nil until the response head arrived
	reused    bool
	keepAlive bool
	streaming bool // the body is being read (the head did not end the request)
}

// settle decides the fate of the connection: a RoundTrip that failed on
// a kept connection goes again (retry); a stream that ended at
// END_STREAM, or at its head, keeps it; one that ended with its terminal
// event is drained to END_STREAM (fateDrain: the stream is reset if that
// does not come, and the connection kept), unless its status failed.
func (x *h2Exchange) settle(st step) fate {
	switch {
	case x.r == nil:
		if x.reused && !st.cancelled {
			return fateRetry
		}
		return fateClose
	case !x.keepAlive:
		return fateClose
	case st.err != nil:
		if errors.Is(st.err, io.EOF) {
			return fateKeep // the stream ended, the connection is fine
		}
		return fateClose
	case !x.streaming:
		return fateKeep // closing the body resets the stream only
	case x.r.statusFailing():
		return fateClose
	}
	return fateDrain
}
