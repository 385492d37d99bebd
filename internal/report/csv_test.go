package report

import (
	"errors"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/result"
)

// csvRequest builds a finished request whose n tokens are emitted 1 ms
// apart and arrive delay ns later.
func csvRequest(index, n int, delay int64) *result.Request {
	r := &result.Request{Batch: "gw", Index: index, Start: 1000, Sent: 2000}
	for i := 0; i < n; i++ {
		e := int64(10_000 + i*1_000_000)
		r.Tokens = append(r.Tokens, result.Token{Emitted: e, Arrived: e + delay, Read: int32(i), Index: int32(i)})
	}
	r.End = r.Tokens[n-1].Arrived
	return r
}

func TestCSV(t *testing.T) {
	var b strings.Builder
	c := NewCSVWriter(&b)
	r := csvRequest(3, 2, 250_000)
	r.Tokens[1].Emitted = 0
	c.Add(r)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	want := CSVHeader + "gw,3,0,10000,260000,0.250000,0\ngw,3,1,,1260000,,1\n"
	if b.String() != want {
		t.Errorf("CSV =\n%s\nwant\n%s", b.String(), want)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestCSVReportsWriteErrors(t *testing.T) {
	c := NewCSVWriter(failWriter{})
	c.Add(csvRequest(0, 10000, 1))
	if err := c.Close(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Close() = %v, want the write error", err)
	}
}
