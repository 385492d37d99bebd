package control

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"time"
)

// Limits of the control listener (net/http's server enforces them).
const (
	// ReadHeaderTimeout bounds how long a client may take to send a
	// request head; ReadTimeout the whole request.
	ReadHeaderTimeout = 10 * time.Second
	ReadTimeout       = 10 * time.Second
	// WriteTimeout bounds writing one answer: a batch of MaxIDs records
	// of a million tokens each is some hundreds of megabytes.
	WriteTimeout = 5 * time.Minute
	// IdleTimeout closes a kept-alive connection without requests.
	IdleTimeout = 60 * time.Second
	// MaxHeaderBytes bounds a request head (MaxIDs ids of 64 bytes fit).
	MaxHeaderBytes = 64 << 10
	// shutdownGrace is how long Serve waits for answers in progress when
	// it stops, before it closes their connections.
	shutdownGrace = 2 * time.Second
)

// Serve serves h on ln until ctx is cancelled, then stops: it closes ln,
// gives the answers in progress a moment, closes every connection, and
// returns nil. It returns an accept error that ended it otherwise. logf,
// when set, receives the errors net/http logs (a bad TLS handshake, a
// panic in a handler).
func Serve(ctx context.Context, ln net.Listener, h http.Handler, logf func(format string, args ...any)) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          log.New(logWriter(logf), "", 0),
	}
	stopped := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(stopped)
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
	})
	err := srv.Serve(ln)
	if stop() { // not stopped by ctx: an accept error
		srv.Close()
		return err
	}
	<-stopped
	return nil
}

// logWriter turns net/http's log lines into logf lines (none without
// logf).
func logWriter(logf func(format string, args ...any)) io.Writer {
	if logf == nil {
		return io.Discard
	}
	return writerFunc(func(p []byte) (int, error) {
		logf("control: %s", strings.TrimRight(string(p), "\n"))
		return len(p), nil
	})
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
