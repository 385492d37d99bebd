package wire

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

// splitPieces feeds pieces to a fresh LineSplitter and collects (copies of)
// every line, stopping at the first error.
func splitPieces(pieces ...[]byte) (lines []string, err error) {
	var s LineSplitter
	for _, p := range pieces {
		s.Feed(p)
		for {
			line, ok := s.Next()
			if !ok {
				break
			}
			lines = append(lines, string(line))
		}
		if s.Err() != nil {
			return lines, s.Err()
		}
	}
	return lines, nil
}

var lineTests = []struct {
	name  string
	input string
	lines []string
}{
	{"one event", "data: {\"a\":1}\n\n", []string{`data: {"a":1}`, ""}},
	{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []string{"data: a", "", "data: b", ""}},
	{"mixed", "data: a\r\n\ndata: b\n\r\n", []string{"data: a", "", "data: b", ""}},
	{"fields and comments", ": keep-alive\nevent: message\nid: 7\ndata:x\ndata:\ty\n\n",
		[]string{": keep-alive", "event: message", "id: 7", "data:x", "data:\ty", ""}},
	{"incomplete tail kept back", "data: a\n\ndata: [DO", []string{"data: a", ""}},
	{"CR then CRLF", "a\r\r\n\r\n", []string{"a", "", ""}},
	{"bare CRs end lines", "a\rb\n\rc\n", []string{"a", "b", "", "c"}},
	{"CR only", "data: a\r\rdata: b\r\r", []string{"data: a", "", "data: b", ""}},
	{"CR at the end", "data: a\r", []string{"data: a"}},
	{"CRLF split after its CR", "x\r\ny\r", []string{"x", "y"}},
	{"empty input", "", nil},
	{"empty lines", "\n\n\r\n", []string{"", "", ""}},
	{"done", "data: [DONE]\n\n", []string{"data: [DONE]", ""}},
}

func TestLineSplitter(t *testing.T) {
	for _, tt := range lineTests {
		splits([]byte(tt.input), func(desc string, pieces [][]byte) {
			lines, err := splitPieces(pieces...)
			if err != nil || !slices.Equal(lines, tt.lines) {
				t.Errorf("%s, %s: splitting %q gave %q, %v; want %q, nil", tt.name, desc, tt.input, lines, err, tt.lines)
			}
		})
	}
}

func TestLineSplitterZeroCopy(t *testing.T) {
	var s LineSplitter
	p := []byte("data: x\n\ndata: y")
	s.Feed(p)
	line, ok := s.Next()
	if !ok || string(line) != "data: x" || &line[0] != &p[0] {
		t.Fatalf("Next() = %q, %v; want \"data: x\" as a sub-slice of the feed", line, ok)
	}
	if line, ok := s.Next(); !ok || len(line) != 0 {
		t.Fatalf("Next() = %q, %v; want empty line", line, ok)
	}
	if line, ok := s.Next(); ok {
		t.Fatalf("Next() = %q, true; want need more", line)
	}
	p[len(p)-1] = 'Z' // the tail was copied: overwriting the feed must not matter
	s.Feed([]byte("\n"))
	if line, ok := s.Next(); !ok || string(line) != "data: y" {
		t.Fatalf("Next() = %q, %v; want \"data: y\"", line, ok)
	}
}

func TestLineSplitterEarlyFeed(t *testing.T) {
	var s LineSplitter
	s.Feed([]byte("a\nb\nc"))
	if line, ok := s.Next(); !ok || string(line) != "a" {
		t.Fatalf("Next() = %q, %v; want \"a\"", line, ok)
	}
	s.Feed([]byte("d\ne\nf")) // "b\nc" not read yet
	var got []string
	for {
		line, ok := s.Next()
		if !ok {
			break
		}
		got = append(got, string(line))
	}
	s.Feed([]byte("\n"))
	for {
		line, ok := s.Next()
		if !ok {
			break
		}
		got = append(got, string(line))
	}
	if want := []string{"b", "cd", "e", "f"}; !slices.Equal(got, want) || s.Err() != nil {
		t.Fatalf("lines after an early Feed = %q, %v; want %q, nil", got, s.Err(), want)
	}
}

func TestLineSplitterTooLong(t *testing.T) {
	long := strings.Repeat("x", MaxLineBytes)
	for _, tt := range []struct {
		name  string
		input string
		lines []string
		err   error
	}{
		{"at the limit", "a\n" + long + "\nb\n", []string{"a", long, "b"}, nil},
		{"at the limit with CR", "a\n" + long + "\r\nb\n", []string{"a", long, "b"}, nil},
		{"one over", "a\n" + long + "x\nb\n", []string{"a"}, ErrLineTooLong},
		{"one over before CR", "a\n" + long + "x\r\nb\n", []string{"a"}, ErrLineTooLong},
		{"tail at the limit ended by a CR", "a\n" + long + "\r", []string{"a", long}, nil},
		{"open tail over", "a\n" + long + "xx", []string{"a"}, ErrLineTooLong},
	} {
		in := []byte(tt.input)
		for _, split := range []int{0, 1, 2, 3, 10, MaxLineBytes / 2, MaxLineBytes, MaxLineBytes + 2, MaxLineBytes + 3, len(in) - 1} {
			split = min(split, len(in))
			lines, err := splitPieces(in[:split], in[split:])
			if err != tt.err || !slices.Equal(lines, tt.lines) {
				t.Errorf("%s, split at %d: got %d lines, %v; want %d lines, %v", tt.name, split, len(lines), err, len(tt.lines), tt.err)
			}
		}
	}
	// Byte by byte, the buffer never exceeds the bound.
	var s LineSplitter
	b := []byte{'y'}
	for i := 0; s.Err() == nil; i++ {
		s.Feed(b)
		if _, ok := s.Next(); ok {
			t.Fatal("Next() returned a line from input without '\\n'")
		}
		if len(s.carry) > MaxLineBytes+1 {
			t.Fatalf("after %d bytes the splitter holds %d bytes; want <= %d", i+1, len(s.carry), MaxLineBytes+1)
		}
	}
	if !errors.Is(s.Err(), ErrLineTooLong) {
		t.Fatalf("Err() = %v; want ErrLineTooLong", s.Err())
	}
	if _, ok := s.Next(); ok {
		t.Fatal("Next() after ErrLineTooLong returned a line")
	}
	s.Reset()
	s.Feed([]byte("ok\n"))
	if line, ok := s.Next(); !ok || string(line) != "ok" || s.Err() != nil {
		t.Fatalf("after Reset, Next() = %q, %v, Err() = %v; want \"ok\", true, nil", line, ok, s.Err())
	}
}

func TestDataPayload(t *testing.T) {
	for _, tt := range []struct {
		line    string
		payload string
		ok      bool
	}{
		{"data: x", "x", true},
		{"data:x", "x", true},
		{"data:\tx", "\tx", true},
		{"data: \t  x y ", "\t  x y ", true},
		{"data:  x", " x", true},
		{`data: {"choices":[]}`, `{"choices":[]}`, true},
		{"data: [DONE]", "[DONE]", true},
		{"data:", "", true},
		{"data: ", "", true},
		{"data", "", true},
		{"data:: x", ": x", true},
		{"Data: x", "", false},
		{"database: x", "", false},
		{"dat", "", false},
		{"event: data", "", false},
		{"id: 1", "", false},
		{": data: x", "", false},
		{" data: x", "", false},
		{"", "", false},
	} {
		payload, ok := DataPayload([]byte(tt.line))
		if string(payload) != tt.payload || ok != tt.ok {
			t.Errorf("DataPayload(%q) = %q, %v; want %q, %v", tt.line, payload, ok, tt.payload, tt.ok)
		}
	}
}

func TestAppendSSE(t *testing.T) {
	for _, p := range []string{"", "x", `{"choices":[{"delta":{"content":"hi"}}],"pi_ts":1}`, strings.Repeat("y", 300)} {
		if got, want := string(AppendSSEData([]byte("pre"), []byte(p))), "predata: "+p+"\n\n"; got != want {
			t.Errorf("AppendSSEData(\"pre\", %.20q) = %.40q; want %.40q", p, got, want)
		}
		got := AppendChunkedSSEData([]byte("pre"), []byte(p))
		want := AppendChunk([]byte("pre"), AppendSSEData(nil, []byte(p)))
		if !bytes.Equal(got, want) {
			t.Errorf("AppendChunkedSSEData(\"pre\", %.20q) = %.40q; want %.40q", p, got, want)
		}
	}
	dst := make([]byte, 0, 1024)
	payload := []byte(`{"x":1}`)
	if a := testing.AllocsPerRun(100, func() { dst = AppendChunkedSSEData(dst[:0], payload) }); a != 0 {
		t.Errorf("AppendChunkedSSEData with capacity: %v allocs; want 0", a)
	}
}

// sseStream is what the server writes for payloads: a response head, then
// each payload as one chunked SSE event, then the last chunk.
func sseStream(payloads []string) []byte {
	out := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
	for _, p := range payloads {
		out = AppendChunkedSSEData(out, []byte(p))
	}
	return append(out, LastChunk...)
}

// clientRead is what the client does with a stream arriving in pieces:
// parse the head, then decode chunks and read them as events.
func clientRead(t testing.TB, pieces [][]byte) (payloads []string, done bool) {
	t.Helper()
	var (
		head   []byte
		inBody bool
		dec    ChunkedDecoder
		events EventReader
	)
	for _, in := range pieces {
		if !inBody {
			head = append(head, in...)
			h, n, err := ParseResponseHead(head)
			if err != nil {
				t.Fatalf("ParseResponseHead: %v", err)
			}
			if n == 0 {
				continue
			}
			if h.StatusCode != 200 || !h.Chunked {
				t.Fatalf("head: status %d chunked %v", h.StatusCode, h.Chunked)
			}
			inBody, in = true, head[n:]
		}
		for len(in) > 0 {
			data, n, err := dec.Next(in)
			in = in[n:]
			events.Feed(data)
			for {
				ev, ok := events.Next()
				if !ok {
					break
				}
				payloads = append(payloads, string(ev.Data))
			}
			if err == io.EOF {
				return payloads, true
			}
			if err != nil || events.Err() != nil {
				t.Fatalf("decoding: %v, %v", err, events.Err())
			}
		}
	}
	return payloads, false
}

func TestServerToClient(t *testing.T) {
	want := []string{`{"id":"1","choices":[{"delta":{"content":"Hello"}}],"pi_ts":1700000000000000000}`, "x", "", "[DONE]"}
	stream := sseStream(want)
	splits(stream, func(desc string, pieces [][]byte) {
		got, done := clientRead(t, pieces)
		if !done || !slices.Equal(got, want) {
			t.Errorf("%s: client read %q, done %v; want %q, true", desc, got, done, want)
		}
	})
}
