//go:build linux

package evloop

// Compile-time checks of the interfaces with several implementations: the
// I/O backends, and the loop's own Ticker as a Handler and a Receiver.
var (
	_ backend  = (*epollBackend)(nil)
	_ backend  = (*uringBackend)(nil)
	_ Handler  = (*Ticker)(nil)
	_ Receiver = (*Ticker)(nil)
)
