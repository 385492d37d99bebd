package wire

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/wire/ssetest"
)

// readResult is what an EventReader made of a stream fed in pieces.
type readResult struct {
	events   []ssetest.Event
	piece    []int // the piece whose Feed dispatched each event
	framing  Framing
	retry    int64 // -1: none
	lastID   string
	comments int
	err      error
}

// readStream feeds pieces to a fresh EventReader and collects (copies of)
// every event, stopping at the first error.
func readStream(pieces [][]byte) readResult {
	var d EventReader
	var res readResult
	for i, p := range pieces {
		d.Feed(p)
		for {
			e, ok := d.Next()
			if !ok {
				break
			}
			typ := string(e.Type)
			if typ == "" {
				typ = "message"
			}
			res.events = append(res.events, ssetest.Event{Type: typ, Data: string(e.Data), ID: string(d.LastEventID())})
			res.piece = append(res.piece, i)
		}
		if d.Err() != nil {
			break
		}
	}
	res.err, res.framing, res.comments, res.lastID = d.Err(), d.Framing(), d.Comments(), string(d.LastEventID())
	res.retry = -1
	if ms, ok := d.Retry(); ok {
		res.retry = ms
	}
	return res
}

// TestConformance reads every conformance case whole, byte by byte, at
// every 2- and 3-way split of the short ones and at random cuts: the
// events, the last event ID, the reconnection time and the framing counts
// must be those the case gives, those the reference model finds, and each
// event must be returned by the Feed that completed it.
func TestConformance(t *testing.T) {
	if len(ssetest.Cases) < 79 {
		t.Errorf("%d conformance cases, want at least the issue's 79", len(ssetest.Cases))
	}
	for n, tc := range ssetest.Cases {
		ref := ssetest.Interpret([]byte(tc.Input))
		if !slices.Equal(ref.Evs(), tc.Want) || ref.Retry != tc.Retry || ref.LastID != tc.LastID {
			t.Errorf("%s (%s): the reference model gives %v, retry %d, last ID %q; the case says %v, %d, %q",
				tc.Name, tc.Rule, ref.Evs(), ref.Retry, ref.LastID, tc.Want, tc.Retry, tc.LastID)
		}
		if tc.Framing != nil && ref.Framing != *tc.Framing {
			t.Errorf("%s (%s): the reference model counts %+v, the case %+v", tc.Name, tc.Rule, ref.Framing, *tc.Framing)
		}
		failed := 0
		ssetest.Chunkings([]byte(tc.Input), uint64(n), func(desc string, pieces [][]byte) {
			if failed > 3 {
				return
			}
			got := readStream(pieces)
			bad := func(format string, args ...any) {
				failed++
				t.Errorf("%s (%s), %s: "+format, append([]any{tc.Name, tc.Rule, desc}, args...)...)
			}
			switch {
			case got.err != nil:
				bad("error %v", got.err)
			case !slices.Equal(got.events, tc.Want):
				bad("events %v; want %v", got.events, tc.Want)
			case got.retry != tc.Retry || got.lastID != tc.LastID:
				bad("retry %d, last ID %q; want %d, %q", got.retry, got.lastID, tc.Retry, tc.LastID)
			case got.framing != Framing(ref.Framing) || got.comments != ref.Comments:
				bad("framing %+v, %d comments; the reference %+v, %d", got.framing, got.comments, ref.Framing, ref.Comments)
			case !slices.Equal(got.piece, ssetest.DispatchPieces(pieces, ref)):
				bad("events dispatched by pieces %v; want %v", got.piece, ssetest.DispatchPieces(pieces, ref))
			}
		})
	}
}

// TestEventReaderZeroCopy: an event whose data line and blank line arrive
// in one feed is a sub-slice of it; reading a stream of such events
// allocates nothing once the buffers have grown.
func TestEventReaderZeroCopy(t *testing.T) {
	var d EventReader
	feed := []byte("data: {\"x\":1}\n\n")
	d.Feed(feed)
	e, ok := d.Next()
	if !ok || string(e.Data) != `{"x":1}` || &e.Data[0] != &feed[6] {
		t.Fatalf("Next = %q, %v; want {\"x\":1} as a sub-slice of the feed", e.Data, ok)
	}
	stream := []byte("event: a\ndata: 1\n\ndata: x\ndata: y\n\nid: 3\nretry: 10\ndata: {\"pi_ts\":1}\n\n: c\n\n")
	read := func() {
		d.Feed(stream)
		for {
			if _, ok := d.Next(); !ok {
				break
			}
		}
	}
	read()
	if a := testing.AllocsPerRun(100, read); a != 0 {
		t.Errorf("reading a stream: %v allocs; want 0", a)
	}
}

// TestEventReaderKeepsDataAcrossFeeds: a data line whose blank line comes
// in a later feed survives the caller's reuse of its buffer.
func TestEventReaderKeepsDataAcrossFeeds(t *testing.T) {
	var d EventReader
	buf := []byte("data: abc\n")
	d.Feed(buf)
	if _, ok := d.Next(); ok {
		t.Fatal("an event before its blank line")
	}
	copy(buf, "XXXXXXXXXX")
	d.Feed([]byte("\n"))
	if e, ok := d.Next(); !ok || string(e.Data) != "abc" {
		t.Fatalf("Next = %q, %v; want abc, true", e.Data, ok)
	}
}

// TestEventReaderLimits: a stream that never sends a blank line stops at
// MaxEventBytes of joined data, with an error naming the limit; a line
// past MaxLineBytes stops it with ErrLineTooLong; data lines up to the
// limit pass.
func TestEventReaderLimits(t *testing.T) {
	line := "data: " + strings.Repeat("x", 64<<10-1) + "\n" // 16 of them join to MaxEventBytes-1 bytes
	for _, tt := range []struct {
		name   string
		input  string
		events int
		err    error
	}{
		{"joined data at the limit", strings.Repeat(line, 16) + "data:\n\n", 1, nil},
		{"joined data one byte past the limit", strings.Repeat(line, 16) + "data: y\n\n", 0, ErrEventTooLarge},
		{"no blank line ever", strings.Repeat(line, 20), 0, ErrEventTooLarge},
		{"a line too long", "data: " + strings.Repeat("z", MaxLineBytes) + "\n\n", 0, ErrLineTooLong},
	} {
		res := readStream(reads([]byte(tt.input), nil, 4096))
		if len(res.events) != tt.events || !errors.Is(res.err, tt.err) {
			t.Errorf("%s: %d events, %v; want %d, %v", tt.name, len(res.events), res.err, tt.events, tt.err)
		}
		if tt.err == ErrEventTooLarge && !strings.Contains(res.err.Error(), fmt.Sprint(MaxEventBytes)) {
			t.Errorf("%s: %q does not name the limit", tt.name, res.err)
		}
	}
}

// TestEventReaderChanged: Changed says when a count, the last event ID or
// the retry may have moved since it was last asked, and only then.
func TestEventReaderChanged(t *testing.T) {
	var d EventReader
	for i, step := range []struct {
		feed    string
		changed bool
	}{
		{"data: 1\n\n", false},
		{"data: 2\n\n", false},
		{": c\n\n", true},
		{"id: 5\n", true}, // the id field
		{"\n", true},      // the last event ID, at the blank line
		{"data: 3\r\r", true},
		{"retry: 9\n\n", true},
		{"data: 4\n\n", false},
	} {
		d.Feed([]byte(step.feed))
		for {
			if _, ok := d.Next(); !ok {
				break
			}
		}
		if got, again := d.Changed(), d.Changed(); got != step.changed || again {
			t.Errorf("step %d, after %q: Changed() = %v, then %v; want %v, then false", i, step.feed, got, again, step.changed)
		}
	}
	if ms, ok := d.Retry(); string(d.LastEventID()) != "5" || d.Comments() != 1 || ms != 9 || !ok {
		t.Errorf("last event ID %q, %d comments, retry %d, %v; want 5, 1, 9, true", d.LastEventID(), d.Comments(), ms, ok)
	}
	d.Reset()
	if d.Framing() != (Framing{}) || d.Comments() != 0 || len(d.LastEventID()) != 0 || d.Changed() {
		t.Errorf("after Reset: %+v, %d comments, last event ID %q", d.Framing(), d.Comments(), d.LastEventID())
	}
	d.Feed([]byte("\xEF\xBB\xBFdata: x\n\n"))
	if e, ok := d.Next(); !ok || string(e.Data) != "x" || d.Framing().BOMs != 1 {
		t.Errorf("after Reset, a stream with a BOM: %q, %v, %+v", e.Data, ok, d.Framing())
	}
}

// TestASCII checks the ASCII fast path against the obvious loop, at every
// length and position of a high byte.
func TestASCII(t *testing.T) {
	for n := range 80 {
		b := []byte(strings.Repeat("a", n))
		if !ascii(b) {
			t.Errorf("ascii(%d ASCII bytes) = false", n)
		}
		for i := range n {
			b[i] = 0x80
			if ascii(b) {
				t.Errorf("ascii(%d bytes, 0x80 at %d) = true", n, i)
			}
			b[i] = 'a'
		}
	}
}
