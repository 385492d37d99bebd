package wire

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// decodeResult is everything a ChunkedDecoder reported over a whole input.
type decodeResult struct {
	body     []byte
	consumed int   // bytes of input consumed in total
	err      error // io.EOF when the body completed
}

// decodePieces feeds pieces to a fresh decoder the way a client feeds Reads,
// checking the Next contract as it goes: data is a sub-slice of in ending at
// in[consumed], and a call without data or error consumes all of in.
func decodePieces(t testing.TB, pieces ...[]byte) decodeResult {
	t.Helper()
	var d ChunkedDecoder
	var r decodeResult
	for _, in := range pieces {
		for len(in) > 0 {
			data, n, err := d.Next(in)
			if n < 0 || n > len(in) || n < len(data) {
				t.Fatalf("Next(%q) = data %q, consumed %d: out of range", in, data, n)
			}
			if len(data) > 0 && (err != nil || &data[0] != &in[n-len(data)]) {
				t.Fatalf("Next(%q) = data %q, consumed %d, err %v: data must be in[consumed-len(data):consumed] and come without error", in, data, n, err)
			}
			if len(data) == 0 && err == nil && n != len(in) {
				t.Fatalf("Next(%q) = no data, consumed %d, nil error: want all %d bytes consumed", in, n, len(in))
			}
			r.body = append(r.body, data...)
			r.consumed += n
			in = in[n:]
			if err != nil {
				if err == io.EOF && !d.Done() {
					t.Fatalf("Next returned io.EOF but Done() = false")
				}
				if data, n, err2 := d.Next(in); data != nil || n != 0 || err2 != err {
					t.Fatalf("Next after %v = %q, %d, %v; want nil, 0, the same error", err, data, n, err2)
				}
				r.err = err
				return r
			}
		}
	}
	if d.Done() {
		t.Fatalf("Done() = true without io.EOF")
	}
	return r
}

// splits calls f with input whole, one byte at a time, and split in two at
// every point.
func splits(input []byte, f func(desc string, pieces [][]byte)) {
	f("whole", [][]byte{input})
	bytewise := make([][]byte, len(input))
	for i := range input {
		bytewise[i] = input[i : i+1]
	}
	f("one byte at a time", bytewise)
	for i := 1; i < len(input); i++ {
		f("split at "+strconv.Itoa(i), [][]byte{input[:i], input[i:]})
	}
}

var chunkedTests = []struct {
	name     string
	input    string
	body     string
	leftover string // bytes after the body, not consumed
}{
	{"one chunk", "5\r\nhello\r\n0\r\n\r\n", "hello", ""},
	{"empty body", "0\r\n\r\n", "", ""},
	{"bare LF", "5\nhello\n6\n world\n0\n\n", "hello world", ""},
	{"mixed endings", "5\r\nhello\n6\n world\r\n0\n\r\n", "hello world", ""},
	{"uppercase hex", "A\r\n0123456789\r\n1B\r\nabcdefghijklmnopqrstuvwxyz!\r\n0\r\n\r\n", "0123456789abcdefghijklmnopqrstuvwxyz!", ""},
	{"lowercase hex", "a\r\n0123456789\r\n0\r\n\r\n", "0123456789", ""},
	{"leading zeros", "0005\r\nhello\r\n000\r\n\r\n", "hello", ""},
	{"extensions", "5;foo=bar\r\nhello\r\n1;a;b=\"c;d\"\r\n!\r\n0;last\r\n\r\n", "hello!", ""},
	{"whitespace before extension", "5 \t;foo\r\nhello\r\n1\t\r\n!\r\n0 \r\n\r\n", "hello!", ""},
	{"trailers", "5\r\nhello\r\n0\r\nX-A: 1\r\nX-B: 2\r\n\r\n", "hello", ""},
	{"trailers with bare LF", "5\nhello\n0\nX-A: 1\nX-B: 2\n\n", "hello", ""},
	{"one-byte chunks", "1\r\na\r\n1\r\nb\r\n1\r\nc\r\n0\r\n\r\n", "abc", ""},
	{"CRLF inside data", "4\r\n\r\n\r\n\r\n0\r\n\r\n", "\r\n\r\n", ""},
	{"leftover after body", "3\r\nabc\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n", "abc", "HTTP/1.1 200 OK\r\n"},
	{"unfinished", "5\r\nhel", "hel", ""},
	{"unfinished trailer", "5\r\nhello\r\n0\r\nX: y\r\n", "hello", ""},
}

func TestChunkedDecoder(t *testing.T) {
	for _, tt := range chunkedTests {
		done := !strings.HasPrefix(tt.name, "unfinished")
		splits([]byte(tt.input), func(desc string, pieces [][]byte) {
			r := decodePieces(t, pieces...)
			wantErr := error(nil)
			if done {
				wantErr = io.EOF
			}
			if string(r.body) != tt.body || r.err != wantErr || r.consumed != len(tt.input)-len(tt.leftover) {
				t.Errorf("%s, %s: decoding %q gave body %q, consumed %d, err %v; want %q, %d, %v",
					tt.name, desc, tt.input, r.body, r.consumed, r.err, tt.body, len(tt.input)-len(tt.leftover), wantErr)
			}
		})
	}
}

func TestChunkedDecoderErrors(t *testing.T) {
	for _, tt := range []struct {
		name  string
		input string
		err   error
	}{
		{"bad hex", "g\r\n", ErrMalformedChunk},
		{"bad hex after digit", "5g\r\n", ErrMalformedChunk},
		{"0x prefix", "0x5\r\n", ErrMalformedChunk},
		{"negative", "-5\r\n", ErrMalformedChunk},
		{"leading space", " 5\r\n", ErrMalformedChunk},
		{"missing size", "\r\n", ErrMalformedChunk},
		{"missing size, bare LF", "\n", ErrMalformedChunk},
		{"extension without size", ";a\r\n", ErrMalformedChunk},
		{"digit after whitespace", "5 5\r\n", ErrMalformedChunk},
		{"bare CR in size line", "5\rX", ErrMalformedChunk},
		{"bare CR in extension", "5;a\rb\r\n", ErrMalformedChunk},
		{"data too long", "5\r\nhello!\r\n", ErrMalformedChunk},
		{"CR without LF after data", "5\r\nhello\rX", ErrMalformedChunk},
		{"bare CR in trailer", "0\r\nX: y\rZ\r\n\r\n", ErrMalformedChunk},
		{"bare CR after last chunk", "0\r\n\rX", ErrMalformedChunk},
		{"size line too long, zeros", strings.Repeat("0", MaxChunkSizeLine+1) + "\r\n", ErrMalformedChunk},
		{"size line too long, extension", "1;" + strings.Repeat("x", MaxChunkSizeLine) + "\r\nA\r\n", ErrMalformedChunk},
		{"chunk too large", "40000001\r\n", ErrChunkTooLarge},
		{"chunk too large, uppercase", "7FFFFFFF\r\n", ErrChunkTooLarge},
		{"size overflows int64", "ffffffffffffffffffffffff\r\n", ErrChunkTooLarge},
		{"trailer too large", "0\r\nX: " + strings.Repeat("t", MaxTrailerBytes) + "\r\n\r\n", ErrTrailerTooLarge},
		{"many trailer lines", "0\r\n" + strings.Repeat("X: y\r\n", MaxTrailerBytes/6+1) + "\r\n", ErrTrailerTooLarge},
	} {
		byteSplits := len(tt.input) < 200
		splits([]byte(tt.input), func(desc string, pieces [][]byte) {
			if !byteSplits && desc != "whole" && desc != "one byte at a time" {
				return
			}
			r := decodePieces(t, pieces...)
			if !errors.Is(r.err, tt.err) {
				t.Errorf("%s, %s: decoding %q gave err %v; want %v", tt.name, desc, tt.input, r.err, tt.err)
			}
		})
	}
}

func TestChunkedDecoderLimits(t *testing.T) {
	// Exactly at each limit is fine.
	for _, input := range []string{
		"40000000\r\n",
		strings.Repeat("0", MaxChunkSizeLine-1) + "1\r\nA\r\n",
		"1;" + strings.Repeat("x", MaxChunkSizeLine-2) + "\r\nA\r\n",
		"0\r\nX: " + strings.Repeat("t", MaxTrailerBytes-len("X: \r\n\r\n")) + "\r\n\r\n",
	} {
		r := decodePieces(t, []byte(input))
		if r.err != nil && r.err != io.EOF {
			t.Errorf("decoding %.40q... (%d bytes) gave %v; want no error", input, len(input), r.err)
		}
	}
}

func TestChunkedDecoderReset(t *testing.T) {
	var d ChunkedDecoder
	if _, _, err := d.Next([]byte("0\r\n\r\n")); err != io.EOF || !d.Done() {
		t.Fatalf("Next(last chunk) = %v, Done() = %v; want io.EOF, true", err, d.Done())
	}
	d.Reset()
	if d.Done() {
		t.Fatal("Done() after Reset = true")
	}
	if _, _, err := d.Next([]byte("zz")); !errors.Is(err, ErrMalformedChunk) {
		t.Fatalf("Next(zz) = %v; want ErrMalformedChunk", err)
	}
	d.Reset()
	if data, n, err := d.Next([]byte("2\r\nok\r\n")); string(data) != "ok" || n != 5 || err != nil {
		t.Fatalf("Next after Reset = %q, %d, %v; want \"ok\", 5, nil", data, n, err)
	}
}

func TestAppendChunk(t *testing.T) {
	for _, tt := range []struct{ payload, want string }{
		{"", ""},
		{"a", "1\r\na\r\n"},
		{"hello world!!!!", "f\r\nhello world!!!!\r\n"},
		{strings.Repeat("x", 0xab), "ab\r\n" + strings.Repeat("x", 0xab) + "\r\n"},
		{strings.Repeat("x", 0x1000), "1000\r\n" + strings.Repeat("x", 0x1000) + "\r\n"},
	} {
		if got := string(AppendChunk([]byte("pre"), []byte(tt.payload))); got != "pre"+tt.want {
			t.Errorf("AppendChunk(\"pre\", %.20q) = %.40q; want %.40q", tt.payload, got, "pre"+tt.want)
		}
	}
}

func TestChunkedRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var payloads [][]byte
	for _, n := range []int{0, 1, 15, 16, 17, 255, 256, 4095, 4096, 70000} {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rng.IntN(256))
		}
		payloads = append(payloads, p)
	}
	for _, p := range payloads {
		var stream, want []byte
		// The payload as chunks of varying size, then an SSE chunk.
		for rest := p; len(rest) > 0; {
			k := min(len(rest), 1+rng.IntN(300))
			stream = AppendChunk(stream, rest[:k])
			rest = rest[k:]
		}
		want = append(want, p...)
		stream = AppendChunkedSSEData(stream, []byte(`{"x":1}`))
		want = AppendSSEData(want, []byte(`{"x":1}`))
		stream = append(stream, LastChunk...)

		check := func(desc string, pieces [][]byte) {
			r := decodePieces(t, pieces...)
			if !bytes.Equal(r.body, want) || r.err != io.EOF || r.consumed != len(stream) {
				t.Errorf("round trip of %d bytes, %s: body %d bytes (equal %v), consumed %d of %d, err %v",
					len(p), desc, len(r.body), bytes.Equal(r.body, want), r.consumed, len(stream), r.err)
			}
		}
		if len(stream) < 2000 {
			splits(stream, check)
			continue
		}
		check("whole", [][]byte{stream})
		for range 50 {
			i := rng.IntN(len(stream))
			check("split at "+strconv.Itoa(i), [][]byte{stream[:i], stream[i:]})
		}
		var pieces [][]byte
		for rest := stream; len(rest) > 0; {
			k := min(len(rest), 1+rng.IntN(1500))
			pieces, rest = append(pieces, rest[:k]), rest[k:]
		}
		check("random pieces", pieces)
	}
}
