package wire_test

import (
	"fmt"
	"io"

	"github.com/sse-latency/sse-latency/internal/wire"
)

// The client side: parse the head from the bytes received so far, then feed
// the rest through the chunked decoder and the line splitter.
func Example() {
	// What the server writes, arriving in two Reads split mid-chunk.
	var stream []byte
	stream = append(stream, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"...)
	stream = wire.AppendChunkedSSEData(stream, []byte(`{"pi_ts":1}`))
	stream = wire.AppendChunkedSSEData(stream, []byte(`[DONE]`))
	stream = append(stream, wire.LastChunk...)
	reads := [][]byte{stream[:60], stream[60:]}

	var (
		head   []byte
		inBody bool
		dec    wire.ChunkedDecoder
		lines  wire.LineSplitter
	)
	for _, r := range reads {
		if !inBody {
			head = append(head, r...)
			h, n, err := wire.ParseResponseHead(head)
			if err != nil || n == 0 {
				continue // a real client fails on err, reads more on n == 0
			}
			fmt.Println(h.StatusLine, "chunked:", h.Chunked)
			inBody, r = true, head[n:]
		}
		for len(r) > 0 {
			data, n, err := dec.Next(r)
			r = r[n:]
			lines.Feed(data)
			for line, ok := lines.Next(); ok; line, ok = lines.Next() {
				if p, ok := wire.DataPayload(line); ok {
					fmt.Printf("payload %s\n", p)
				}
			}
			if err == io.EOF {
				fmt.Println("body done:", dec.Done())
			} else if err != nil {
				fmt.Println(err)
				return
			}
		}
	}
	// Output:
	// HTTP/1.1 200 OK chunked: true
	// payload {"pi_ts":1}
	// payload [DONE]
	// body done: true
}

func ExampleParseRequestHead() {
	buf := []byte("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}")
	req, n, err := wire.ParseRequestHead(buf)
	if err != nil {
		panic(err)
	}
	fmt.Println(req.Method, req.Target, req.ContentLength, req.Header("host"))
	fmt.Printf("body %s\n", buf[n:])
	// Output:
	// POST /v1/chat/completions 2 127.0.0.1
	// body {}
}

func ExampleAppendChunkedSSEData() {
	out := wire.AppendChunkedSSEData(nil, []byte(`{"x":1}`))
	out = append(out, wire.LastChunk...)
	fmt.Printf("%q\n", out)
	// Output:
	// "f\r\ndata: {\"x\":1}\n\n\r\n0\r\n\r\n"
}
