package server

import (
	"context"
	"errors"
	"net"
	"net/http"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/sse-latency/sse-latency/internal/wire"
)

// ListenHTTP3 binds the UDP port of the server's own TCP address (the same
// host and port number: TCP and UDP ports are separate spaces) and serves
// HTTP/3 on it once Serve runs (UseHTTP3). It needs Config.TLS: QUIC is
// always TLS. Call it before Serve.
func (s *Server) ListenHTTP3() (net.Addr, error) {
	if s.cfg.TLS == nil {
		return nil, errors.New("HTTP/3 needs TLS (QUIC carries TLS 1.3)")
	}
	pc, err := net.ListenPacket("udp", s.ln.Addr().String())
	if err != nil {
		return nil, err
	}
	if err := s.UseHTTP3(pc); err != nil {
		pc.Close()
		return nil, err
	}
	return pc.LocalAddr(), nil
}

// UseHTTP3 makes Serve also serve HTTP/3 (QUIC) on the bound UDP socket
// pc, which the server closes when Serve stops. Every request stream goes
// to the handler of HTTP/2's streams (serveH2Request): the same endpoints,
// dialects, hints, faults and errors, each token written and flushed in a
// DATA frame of its own when due. No Alt-Svc is announced: a client speaks
// HTTP/3 to it by prior knowledge (--http3). Call it before Serve.
func (s *Server) UseHTTP3(pc net.PacketConn) error {
	if s.cfg.TLS == nil {
		return errors.New("HTTP/3 needs TLS (QUIC carries TLS 1.3)")
	}
	tc := s.cfg.TLS.Clone()
	tc.NextProtos = []string{http3.NextProtoH3}
	s.h3 = &http3.Server{
		Handler:        http.HandlerFunc(s.serveH2Request),
		TLSConfig:      tc,
		MaxHeaderBytes: wire.MaxHeadBytes,
		IdleTimeout:    s.cfg.IdleTimeout,
		// As many streams at once as HTTP/2 allows (h2MaxStreams): a
		// gateway multiplexes its clients onto few connections.
		QUICConfig: &quic.Config{MaxIncomingStreams: h2MaxStreams, MaxIdleTimeout: s.cfg.IdleTimeout},
		// Counted for H3Connections, as each QUIC connection's HTTP/3
		// serving starts.
		ConnContext: func(ctx context.Context, _ *quic.Conn) context.Context {
			s.h3conns.Add(1)
			return ctx
		},
	}
	s.h3pc = pc
	return nil
}

// H3Connections returns the number of QUIC connections the HTTP/3
// server (UseHTTP3) accepted so far.
func (s *Server) H3Connections() int64 { return s.h3conns.Load() }

// serveH3 runs the HTTP/3 server until stopH3.
func (s *Server) serveH3() {
	defer s.wg.Done()
	err := s.h3.Serve(s.h3pc)
	if err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, quic.ErrServerClosed) {
		s.logf("server: HTTP/3 on %s: %v", s.h3pc.LocalAddr(), err)
	}
}

// stopH3 closes the HTTP/3 server's connections (their handlers have seen
// s.quit) and its socket.
func (s *Server) stopH3() {
	s.h3.Close()
	s.h3pc.Close()
}
