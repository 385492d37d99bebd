package wire

import (
	"bytes"
	"errors"
	"github.com/sse-latency/sse-latency/internal/wire/ssetest"
	"io"
	"net/http/httputil"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// errClass maps an error to the sentinel it wraps, so that errors from
// different splits of one input can be compared.
func errClass(err error) error {
	for _, e := range []error{io.EOF, ErrHeadTooLarge, ErrBadStatusLine, ErrBadRequestLine, ErrBadHeader,
		ErrBadContentLength, ErrMalformedChunk, ErrChunkTooLarge, ErrTrailerTooLarge, ErrLineTooLong} {
		if errors.Is(err, e) {
			return e
		}
	}
	return err
}

// checkFields checks what every parsed head must satisfy.
func checkFields(t *testing.T, fields []Field, header func(string) string) {
	t.Helper()
	for i, f := range fields {
		if !validToken(f.Name) || strings.ContainsAny(f.Value, "\r\n\x00") || f.Value != trimOWS(f.Value) {
			t.Fatalf("field %d = %q: invalid name or value", i, f)
		}
		first := slices.IndexFunc(fields, func(g Field) bool { return strings.EqualFold(g.Name, f.Name) })
		if got := header(strings.ToUpper(f.Name)); got != fields[first].Value {
			t.Fatalf("Header(%q) = %q; want %q", strings.ToUpper(f.Name), got, fields[first].Value)
		}
	}
}

// checkHeadN checks the need-more convention for a parser given the n it
// returned for data.
func checkHeadN[H any](t *testing.T, parse func([]byte) (H, int, error), data []byte, h H, n int, err error) {
	t.Helper()
	if n < 0 || n > len(data) || n > MaxHeadBytes {
		t.Fatalf("n = %d out of range for %d bytes", n, len(data))
	}
	if err != nil && n != 0 {
		t.Fatalf("err = %v with n = %d; want n = 0", err, n)
	}
	if n == 0 && err == nil && len(data) >= MaxHeadBytes {
		t.Fatalf("need more with %d bytes; want ErrHeadTooLarge", len(data))
	}
	if n == 0 {
		return
	}
	// The head alone parses the same, more bytes after it change nothing,
	// and one byte less is not a head yet.
	for _, in := range [][]byte{data[:n], append(slices.Clip(data[:n]), "\r\n\r\nHTTP/1.1 200 OK\r\n\r\n"...)} {
		h2, n2, err2 := parse(in)
		if n2 != n || err2 != nil || !reflect.DeepEqual(h2, h) {
			t.Fatalf("parsing %q = %+v, %d, %v; want %+v, %d, nil", in, h2, n2, err2, h, n)
		}
	}
	if _, n2, err2 := parse(data[:n-1]); n2 != 0 || err2 != nil {
		t.Fatalf("parsing the head minus its last byte = %d, %v; want need more", n2, err2)
	}
}

func addHeadSeeds(f *testing.F, heads ...string) {
	for _, h := range heads {
		f.Add([]byte(h))
	}
	f.Add([]byte(""))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1a\r\ndata: {}\n\n"))
	f.Add([]byte("GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\n\r\n"))
}

func FuzzParseResponseHead(f *testing.F) {
	for _, tt := range responseHeadTests {
		f.Add([]byte(tt.head))
	}
	for _, tt := range badResponseHeads {
		f.Add([]byte(tt.head))
	}
	addHeadSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		h, n, err := ParseResponseHead(data)
		checkHeadN(t, ParseResponseHead, data, h, n, err)
		if n == 0 {
			return
		}
		if h.StatusCode < 100 || h.StatusCode > 999 || strings.ContainsAny(h.StatusLine, "\r\n") ||
			!strings.HasPrefix(h.StatusLine, h.Proto+" ") || h.ContentLength < -1 {
			t.Fatalf("ParseResponseHead(%q) = %+v: inconsistent", data, h)
		}
		checkFields(t, h.Fields, h.Header)
	})
}

func FuzzParseRequestHead(f *testing.F) {
	for _, tt := range requestHeadTests {
		f.Add([]byte(tt.head))
	}
	addHeadSeeds(f, "POST / HTTP/1.1\r\nContent-Length: 5\r\ncontent-length: 6\r\n\r\n", "\r\nGET / HTTP/1.0\r\n\r\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		r, n, err := ParseRequestHead(data)
		checkHeadN(t, ParseRequestHead, data, r, n, err)
		if n == 0 {
			return
		}
		if !validToken(r.Method) || !validTarget(r.Target) || r.ContentLength < -1 || r.Host != r.Header("host") {
			t.Fatalf("ParseRequestHead(%q) = %+v: inconsistent", data, r)
		}
		checkFields(t, r.Fields, r.Header)
	})
}

func FuzzChunkedDecoder(f *testing.F) {
	for _, tt := range chunkedTests {
		f.Add([]byte(tt.input), uint16(len(tt.input)/2))
	}
	f.Add([]byte("1a\r\ndata: {\"pi_ts\":1}\n\n\r\n\r\n0\r\n\r\n"), uint16(3))
	f.Add([]byte("5\r\nhello!\r\n"), uint16(7))
	f.Add([]byte("ffffffffffffffffffff\r\n"), uint16(1))
	f.Add([]byte("0\r\nX: y\rZ\r\n\r\n"), uint16(5))
	f.Fuzz(func(t *testing.T, data []byte, split uint16) {
		whole := decodePieces(t, data)
		at := 0
		if len(data) > 0 {
			at = int(split) % len(data)
		}
		bytewise := make([][]byte, len(data))
		for i := range data {
			bytewise[i] = data[i : i+1]
		}
		for _, pieces := range [][][]byte{{data[:at], data[at:]}, bytewise} {
			r := decodePieces(t, pieces...)
			if !bytes.Equal(r.body, whole.body) || r.consumed != whole.consumed || errClass(r.err) != errClass(whole.err) {
				t.Fatalf("decoding %q in %d pieces = %q, %d, %v; whole = %q, %d, %v",
					data, len(pieces), r.body, r.consumed, r.err, whole.body, whole.consumed, whole.err)
			}
		}
		// Where net/http's strict decoder reads a whole body, ours must
		// agree on it.
		if whole.err == io.EOF {
			if body, err := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(data))); err == nil && !bytes.Equal(body, whole.body) {
				t.Fatalf("decoding %q = %q; net/http decodes %q", data, whole.body, body)
			}
		}
	})
}

func FuzzChunkedRoundTrip(f *testing.F) {
	f.Add([]byte("hello, world"), []byte{1, 5, 200}, uint16(7))
	f.Add([]byte(`{"choices":[{"delta":{"content":"x"}}]}`), []byte{}, uint16(0))
	f.Add([]byte{}, []byte{3}, uint16(1))
	f.Fuzz(func(t *testing.T, payload, sizes []byte, split uint16) {
		var stream []byte
		rest := payload
		for i := 0; len(rest) > 0; i++ {
			k := len(rest)
			if len(sizes) > 0 {
				k = min(k, 1+int(sizes[i%len(sizes)]))
			}
			stream, rest = AppendChunk(stream, rest[:k]), rest[k:]
		}
		stream = append(stream, LastChunk...)
		at := int(split) % len(stream)
		r := decodePieces(t, stream[:at], stream[at:])
		if !bytes.Equal(r.body, payload) || r.err != io.EOF || r.consumed != len(stream) {
			t.Fatalf("round trip of %q via %q = %q, %d, %v", payload, stream, r.body, r.consumed, r.err)
		}
	})
}

// splitReference is the obvious, copying implementation of LineSplitter
// (without the length limit).
func splitReference(data []byte) []string {
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	parts := strings.Split(strings.ReplaceAll(s, "\r", "\n"), "\n")
	return parts[:len(parts)-1]
}

// FuzzLineSplitter splits arbitrary streams, whole and in three pieces,
// against the obvious implementation; and reads them as events, in three
// pieces, against the reference model of the specification
// (ssetest.Interpret): the same events, each returned by the piece that
// completes it, the same last event ID, reconnection time, comments and
// framing counts.
func FuzzLineSplitter(f *testing.F) {
	for _, tt := range lineTests {
		f.Add([]byte(tt.input), uint16(1), uint16(len(tt.input)/2))
	}
	for _, tc := range ssetest.Cases {
		if len(tc.Input) < 4096 {
			f.Add([]byte(tc.Input), uint16(len(tc.Input)/3), uint16(len(tc.Input)/2))
		}
	}
	f.Add([]byte("data: a\r\n\r\ndata:b\n\n: c\r\r\n"), uint16(8), uint16(9))
	f.Fuzz(func(t *testing.T, data []byte, a, b uint16) {
		i, j := 0, 0
		if len(data) > 0 {
			i, j = int(a)%len(data), int(b)%len(data)
		}
		i, j = min(i, j), max(i, j)
		whole, err := splitPieces(data)
		if want := splitReference(data); err != nil || !slices.Equal(whole, want) {
			t.Fatalf("splitting %q = %q, %v; want %q", data, whole, err, want)
		}
		pieces, err := splitPieces(data[:i], data[i:j], data[j:])
		if err != nil || !slices.Equal(pieces, whole) {
			t.Fatalf("splitting %q at %d, %d = %q, %v; whole = %q", data, i, j, pieces, err, whole)
		}
		for _, line := range whole {
			p, ok := DataPayload([]byte(line))
			if ok != (line == "data" || strings.HasPrefix(line, "data:")) || !strings.HasSuffix(line, string(p)) {
				t.Fatalf("DataPayload(%q) = %q, %v", line, p, ok)
			}
		}
		in := [][]byte{data[:i], data[i:j], data[j:]}
		got, ref := readStream(in), ssetest.Interpret(data)
		switch {
		case got.err != nil:
			t.Fatalf("reading %q as events: %v", data, got.err)
		case !slices.Equal(got.events, ref.Evs()):
			t.Fatalf("reading %q cut at %d, %d: events %v; the specification's %v", data, i, j, got.events, ref.Evs())
		case !slices.Equal(got.piece, ssetest.DispatchPieces(in, ref)):
			t.Fatalf("reading %q cut at %d, %d: events dispatched by pieces %v; want %v", data, i, j, got.piece, ssetest.DispatchPieces(in, ref))
		case got.lastID != ref.LastID || got.retry != ref.Retry:
			t.Fatalf("reading %q: last ID %q, retry %d; the specification's %q, %d", data, got.lastID, got.retry, ref.LastID, ref.Retry)
		case got.framing != Framing(ref.Framing) || got.comments != ref.Comments:
			t.Fatalf("reading %q cut at %d, %d: framing %+v, %d comments; the reference's %+v, %d",
				data, i, j, got.framing, got.comments, ref.Framing, ref.Comments)
		}
	})
}

func FuzzSSERoundTrip(f *testing.F) {
	f.Add([]byte(`{"choices":[{"delta":{"content":"hi"}}],"pi_ts":1}`), []byte("[DONE]"), uint16(30))
	f.Add([]byte(""), []byte("x"), uint16(0))
	f.Add([]byte("\tx"), []byte("\xa3\xE2\x82\xEF\xBB\xBF"), uint16(41)) // a tab kept; invalid UTF-8 and a BOM mid-stream
	f.Fuzz(func(t *testing.T, p1, p2 []byte, split uint16) {
		// A payload is one line, its leading space is the one after the
		// colon, and it is read as UTF-8 (each error a U+FFFD).
		var want []string
		for _, p := range [][]byte{p1, p2} {
			if bytes.ContainsAny(p, "\r\n") || (len(p) > 0 && p[0] == ' ') {
				return
			}
			want = append(want, ssetest.DecodeUTF8(p))
		}
		stream := sseStream(want)
		at := int(split) % len(stream)
		got, done := clientRead(t, [][]byte{stream[:at], stream[at:]})
		if !done || !slices.Equal(got, want) {
			t.Fatalf("SSE round trip of %q split at %d = %q, %v", want, at, got, done)
		}
	})
}
