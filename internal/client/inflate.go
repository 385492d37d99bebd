package client

import (
	"compress/gzip"
	"errors"
	"io"
)

// inflater decompresses a gzip-encoded response body as it arrives, without
// losing track of which Read delivered which bytes. compress/gzip pulls its
// input, so it runs on its own goroutine and the two sides hand off in lock
// step: feed gives it one piece and waits until it asks for the next one, by
// which time every byte it could decode from that piece has been passed to
// sink. Tokens decoded from a Read therefore get that Read's arrival time.
type inflater struct {
	in   chan []byte
	ack  chan struct{} // the decoder wants more input: all output so far is delivered
	done chan struct{} // the decoder has stopped (end of stream, error, or close)
	err  error         // why it stopped; read after done is closed

	sink func(p []byte) bool // returns true when the request has ended
	cur  []byte
}

// errSinkEnded stops the decoder once the sink has seen the end of the
// request.
var errSinkEnded = errors.New("request ended")

func newInflater(sink func(p []byte) bool) *inflater {
	z := &inflater{in: make(chan []byte), ack: make(chan struct{}), done: make(chan struct{}), sink: sink}
	go z.run()
	// Wait until the decoder asks for its first input (or fails).
	select {
	case <-z.ack:
	case <-z.done:
	}
	return z
}

// Read is the decoder's input: it returns the piece being fed, and asks for
// the next one only once it is used up.
func (z *inflater) Read(p []byte) (int, error) {
	if len(z.cur) == 0 {
		z.ack <- struct{}{}
		b, ok := <-z.in
		if !ok {
			return 0, io.ErrUnexpectedEOF
		}
		z.cur = b
	}
	n := copy(p, z.cur)
	z.cur = z.cur[n:]
	return n, nil
}

func (z *inflater) run() {
	defer close(z.done)
	zr, err := gzip.NewReader(z)
	if err != nil {
		z.err = err
		return
	}
	zr.Multistream(false)
	buf := make([]byte, 4096)
	for {
		n, err := zr.Read(buf)
		if n > 0 && z.sink(buf[:n]) {
			z.err = errSinkEnded
			return
		}
		if err != nil {
			z.err = err
			return
		}
	}
}

// feed hands p to the decoder and waits until it has been decoded and
// delivered. It returns false once the decoder has stopped.
func (z *inflater) feed(p []byte) bool {
	select {
	case z.in <- p:
	case <-z.done:
		return false
	}
	select {
	case <-z.ack:
		return true
	case <-z.done:
		return false
	}
}

// close stops the decoder and waits for it.
func (z *inflater) close() {
	select {
	case <-z.done:
	default:
		close(z.in)
		<-z.done
	}
}
