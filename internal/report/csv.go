package report

import (
	"bufio"
	"io"
	"strconv"

	"github.com/sse-latency/sse-latency/internal/result"
)

// CSVHeader is the first line --csv writes.
const CSVHeader = "batch,request,token,emitted_ns,arrived_ns,delay_ms,read\n"

// CSVWriter streams one row per received token to w as requests finish:
// batch ("loop" or "gw"), request index, token index in the stream,
// emission and arrival times (process-clock epoch ns; emitted is empty when
// unknown), the one-way delay in ms (empty when unknown), and the index of
// the socket read that delivered it. Nothing is held beyond one request.
type CSVWriter struct {
	w   *bufio.Writer
	buf []byte
	err error
}

// NewCSVWriter writes the header and returns the writer.
func NewCSVWriter(w io.Writer) *CSVWriter {
	c := &CSVWriter{w: bufio.NewWriterSize(w, 64<<10)}
	_, c.err = c.w.WriteString(CSVHeader)
	return c
}

// Add writes the rows of one finished request. After a write error it does
// nothing; Close reports the error.
func (c *CSVWriter) Add(r *result.Request) {
	if c.err != nil {
		return
	}
	for i, t := range r.Tokens {
		b := c.buf[:0]
		b = append(b, r.Batch...)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(r.Index), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(r.TokenIndex(i)), 10)
		b = append(b, ',')
		if t.Emitted != 0 {
			b = strconv.AppendInt(b, t.Emitted, 10)
		}
		b = append(b, ',')
		b = strconv.AppendInt(b, t.Arrived, 10)
		b = append(b, ',')
		if t.Emitted != 0 {
			b = strconv.AppendFloat(b, float64(t.Arrived-t.Emitted)/1e6, 'f', 6, 64)
		}
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(r.TokenRead(i)), 10)
		b = append(b, '\n')
		c.buf = b
		if _, c.err = c.w.Write(b); c.err != nil {
			return
		}
	}
}

// Close flushes what is buffered and returns the first write error.
func (c *CSVWriter) Close() error {
	if c.err != nil {
		return c.err
	}
	return c.w.Flush()
}
