package report

import (
	"errors"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/result"
)

func TestCSV(t *testing.T) {
	var b strings.Builder
	c := NewCSVWriter(&b)
	r := &result.Request{Batch: "gw", Index: 3}
	r.AppendTokens(1, 0, 0, 260_000)
	r.AppendTokens(1, 1, 1, 1_260_000) // no emission time
	r.Tokens[0].Emitted = 10_000
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
	r := &result.Request{Batch: "gw", Tokens: make([]result.Token, 10000)} // more than the buffer holds
	for i := range r.Tokens {
		r.Tokens[i] = result.Token{Emitted: int64(i) * 1e6, Arrived: int64(i)*1e6 + 1}
	}
	c.Add(r)
	if err := c.Close(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Close() = %v, want the write error", err)
	}
}
