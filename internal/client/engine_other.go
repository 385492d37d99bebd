//go:build !linux

package client

import (
	"context"
	"runtime"

	"github.com/sse-latency/sse-latency/internal/result"
)

// The epoll engine exists on Linux only: elsewhere every request takes the
// goroutine engine, and these are never reached.

type loopShared struct{}

type loopSession struct{}

type loopGroup struct{}

func (s *Session) startLoop(context.Context, *result.Request, func(*result.Request)) {
	panic("client: the epoll engine is not available on " + runtime.GOOS)
}

func (s *Session) doLoop(ctx context.Context, rec *result.Request) { s.startLoop(ctx, rec, nil) }

func (s *Session) closeLoop() {}

func (s *Session) loopKeptState() (connState, bool, bool) { return idle, false, false }
