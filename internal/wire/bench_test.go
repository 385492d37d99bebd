package wire

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// benchEvents is the number of events in the benchmark stream.
const benchEvents = 1000

// benchPayload is a realistic chat-completions chunk of about 200 bytes.
const benchPayload = `{"id":"chatcmpl-0123456789","object":"chat.completion.chunk","created":1700000000,` +
	`"model":"dummy","choices":[{"index":0,"delta":{"content":" token"},"finish_reason":null}],` +
	`"pi_ts":1700000000123456789}`

// benchBody returns the chunked body the server writes for benchEvents
// events followed by [DONE], and the offsets at which each chunk ends (the
// server's write boundaries).
func benchBody() (body []byte, writes []int) {
	for range benchEvents {
		body = AppendChunkedSSEData(body, []byte(benchPayload))
		writes = append(writes, len(body))
	}
	body = AppendChunkedSSEData(body, []byte("[DONE]"))
	body = append(body, LastChunk...)
	return body, append(writes, len(body))
}

// reads cuts body into the pieces the client's Reads would return: one per
// server write, or fixed-size pieces.
func reads(body []byte, writes []int, size int) [][]byte {
	var pieces [][]byte
	if size == 0 {
		start := 0
		for _, end := range writes {
			pieces, start = append(pieces, body[start:end]), end
		}
		return pieces
	}
	for len(body) > 0 {
		k := min(size, len(body))
		pieces, body = append(pieces, body[:k]), body[k:]
	}
	return pieces
}

var readSizes = []struct {
	name string
	size int
}{
	{"per-write", 0},
	{"mss-1460", 1460},
	{"odd-97", 97},
}

// consume is the client's per-Read work: chunked decoding, then reading
// the events. It returns the number of events dispatched.
func consume(dec *ChunkedDecoder, events *EventReader, in []byte) (n int, err error) {
	for len(in) > 0 {
		data, used, err := dec.Next(in)
		in = in[used:]
		events.Feed(data)
		for {
			if _, ok := events.Next(); !ok {
				break
			}
			n++
		}
		if err != nil {
			return n, err
		}
	}
	return n, events.Err()
}

func BenchmarkClientStream(b *testing.B) {
	body, writes := benchBody()
	for _, rs := range readSizes {
		b.Run(rs.name, func(b *testing.B) {
			pieces := reads(body, writes, rs.size)
			var dec ChunkedDecoder
			var er EventReader
			run := func() {
				dec.Reset()
				er.Reset()
				events := 0
				for _, p := range pieces {
					n, err := consume(&dec, &er, p)
					events += n
					if err != nil && err != io.EOF {
						b.Fatal(err)
					}
				}
				if events != benchEvents+1 || !dec.Done() {
					b.Fatalf("saw %d events, done %v; want %d, true", events, dec.Done(), benchEvents+1)
				}
			}
			run() // warm up: size the splitter's buffer
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				run()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(benchEvents+1)), "ns/event")
		})
	}
}

func BenchmarkChunkedDecoder(b *testing.B) {
	body, writes := benchBody()
	for _, rs := range readSizes {
		b.Run(rs.name, func(b *testing.B) {
			pieces := reads(body, writes, rs.size)
			var dec ChunkedDecoder
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				dec.Reset()
				for _, in := range pieces {
					for len(in) > 0 {
						_, n, err := dec.Next(in)
						in = in[n:]
						if err != nil && err != io.EOF {
							b.Fatal(err)
						}
					}
				}
			}
		})
	}
}

// benchReadSizes runs read over a stream of benchEvents events cut into
// reads of three sizes: one event, one MSS, an odd 97 bytes.
func benchReadSizes(b *testing.B, read func(b *testing.B, pieces [][]byte)) {
	var stream []byte
	for range benchEvents {
		stream = AppendSSEData(stream, []byte(benchPayload))
	}
	for _, size := range []int{len(benchPayload) + 8, 1460, 97} {
		b.Run(fmt.Sprintf("read-%d", size), func(b *testing.B) {
			pieces := reads(stream, nil, size)
			read(b, pieces) // warm up: size the buffers
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			for b.Loop() {
				read(b, pieces)
			}
		})
	}
}

func BenchmarkLineSplitter(b *testing.B) {
	var lines LineSplitter
	benchReadSizes(b, func(b *testing.B, pieces [][]byte) {
		lines.Reset()
		for _, p := range pieces {
			lines.Feed(p)
			for {
				if _, ok := lines.Next(); !ok {
					break
				}
			}
		}
	})
}

// BenchmarkEventReader is BenchmarkLineSplitter reading events: lines
// split, decoded, interpreted and dispatched.
func BenchmarkEventReader(b *testing.B) {
	var er EventReader
	benchReadSizes(b, func(b *testing.B, pieces [][]byte) {
		er.Reset()
		n := 0
		for _, p := range pieces {
			er.Feed(p)
			for {
				if _, ok := er.Next(); !ok {
					break
				}
				n++
			}
		}
		if n != benchEvents {
			b.Fatalf("%d events, want %d", n, benchEvents)
		}
	})
}

func BenchmarkAppendChunkedSSEData(b *testing.B) {
	dst := make([]byte, 0, 512)
	payload := []byte(benchPayload)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendChunkedSSEData(dst[:0], payload)
	}
}

func BenchmarkParseResponseHead(b *testing.B) {
	head := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n" +
		"Connection: keep-alive\r\nTransfer-Encoding: chunked\r\n" + strings.Repeat("X-Pad: 0123456789\r\n", 4) + "\r\n")
	b.SetBytes(int64(len(head)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseResponseHead(head); err != nil {
			b.Fatal(err)
		}
	}
}
