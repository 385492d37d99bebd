package wire_test

import (
	"fmt"
	"io"

	"github.com/sse-latency/sse-latency/internal/wire"
)

// The client side: parse the head from the bytes received so far, then feed
// the rest through the chunked decoder and the event reader.
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
		events wire.EventReader
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
			events.Feed(data)
			for ev, ok := events.Next(); ok; ev, ok = events.Next() {
				fmt.Printf("event %s\n", ev.Data)
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
	// event {"pi_ts":1}
	// event [DONE]
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

// An event stream read by the specification's rules: the byte order mark
// at its start stripped, an event's data lines joined, the event line
// wherever it stands before the blank line, and an event without its
// blank line never dispatched.
func ExampleEventReader() {
	var r wire.EventReader
	r.Feed([]byte("\xEF\xBB\xBFdata: {\"a\":1,\ndata: \"b\":2}\nevent: delta\n\n: comment\nid: 7\ndata: cut"))
	for ev, ok := r.Next(); ok; ev, ok = r.Next() {
		fmt.Printf("%s %q\n", ev.Type, ev.Data)
	}
	fmt.Printf("%+v\n", r.Framing())
	// Output:
	// delta "{\"a\":1,\n\"b\":2}"
	// {BOMs:1 MultiLineEvents:1 NoDataBlocks:0 BareCRLines:0 InvalidUTF8:0 IDFields:1 RetryFields:0}
}

func ExampleAppendChunkedSSEData() {
	out := wire.AppendChunkedSSEData(nil, []byte(`{"x":1}`))
	out = append(out, wire.LastChunk...)
	fmt.Printf("%q\n", out)
	// Output:
	// "f\r\ndata: {\"x\":1}\n\n\r\n0\r\n\r\n"
}
