package client

import (
	"bytes"
	"io"
	"net"
	"testing"

	"golang.org/x/net/http2"

	"github.com/sse-latency/sse-latency/internal/clock"
)

// splitConn is a connection whose Reads return its pieces in turn, then EOF.
type splitConn struct {
	net.Conn
	p [][]byte
}

func (c *splitConn) Read(b []byte) (int, error) {
	if len(c.p) == 0 {
		return 0, io.EOF
	}
	n := copy(b, c.p[0])
	if c.p[0] = c.p[0][n:]; len(c.p[0]) == 0 {
		c.p = c.p[1:]
	}
	return n, nil
}

// TestMuxConnHeard: a muxConn is heard once the bytes it has read hold the
// peer's whole first frame and that frame is SETTINGS on stream 0 — not
// on any bytes, not on a part of the frame, not when the first frame is
// another one or no HTTP/2 — however the reads split the bytes: whole,
// cut in two at every offset, and one byte per Read.
func TestMuxConnHeard(t *testing.T) {
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	one := "\x00\x03\x00\x00\x00\x64" // SETTINGS_MAX_CONCURRENT_STREAMS 100
	settings := frame(http2.FrameSettings, 0, 0, one+one)
	empty := frame(http2.FrameSettings, 0, 0, "")
	ping := frame(http2.FramePing, 0, 0, "12345678")
	tests := []struct {
		name  string
		bytes []byte
		at    int // the bytes after which the conn is heard; -1: never
	}{
		{"a whole SETTINGS", settings, len(settings)},
		{"an empty SETTINGS", empty, len(empty)},
		{"SETTINGS and more frames", cat(settings, ping, empty), len(settings)},
		{"a part of a SETTINGS", settings[:len(settings)-1], -1},
		{"a SETTINGS header alone", settings[:9], -1},
		{"a PING first, then SETTINGS", cat(ping, settings), -1},
		{"SETTINGS on stream 1", frame(http2.FrameSettings, 0, 1, ""), -1},
		{"no HTTP/2", []byte("HTTP/1.1 400 Bad Request\r\n\r\n"), -1},
	}
	for _, tt := range tests {
		// heard says what is heard after reading the pieces in turn,
		// checked after each against tt.at.
		heard := func(split string, cuts ...int) {
			t.Helper()
			var p [][]byte
			last := 0
			for _, c := range append(cuts, len(tt.bytes)) {
				p = append(p, tt.bytes[last:c])
				last = c
			}
			c := newMuxConn(&splitConn{p: p}, clock.Real)
			buf := make([]byte, 4096)
			read := 0
			for range p {
				n, _ := c.Read(buf)
				read += n
				if want := tt.at >= 0 && read >= tt.at; c.heard.Load() != want {
					t.Errorf("%s, %s: heard %v after %d of %d bytes, want %v", tt.name, split, c.heard.Load(), read, len(tt.bytes), want)
					return
				}
			}
		}
		heard("whole")
		for cut := 1; cut < len(tt.bytes); cut++ {
			heard("cut in two", cut)
		}
		var bytewise []int
		for i := 1; i < len(tt.bytes); i++ {
			bytewise = append(bytewise, i)
		}
		heard("a byte per Read", bytewise...)
	}
}

// TestSettingsScanNoAlloc: scanning what a peer sends allocates nothing.
func TestSettingsScanNoAlloc(t *testing.T) {
	settings := frame(http2.FrameSettings, 0, 0, "\x00\x03\x00\x00\x00\x64")
	if n := testing.AllocsPerRun(100, func() {
		var s settingsScan
		for i := range settings {
			s.scan(settings[i : i+1])
		}
	}); n != 0 {
		t.Errorf("scanning a SETTINGS byte by byte: %v allocations, want 0", n)
	}
}
