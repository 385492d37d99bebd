package check

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/api"
)

// eventRelay is a relay that passes each whole event of the upstream's
// stream (up to its blank line; the server writes LF line ends) through
// rewrite, flushing each.
func eventRelay(rewrite func(event []byte) []byte) relayFunc {
	return func(w http.ResponseWriter, _ *http.Request, body io.Reader) {
		var data []byte
		buf := make([]byte, 4096)
		for {
			n, err := body.Read(buf)
			data = append(data, buf[:n]...)
			for {
				i := bytes.Index(data, []byte("\n\n"))
				if i < 0 {
					break
				}
				if write(w, rewrite(data[:i+2])) != nil {
					return
				}
				data = data[i+2:]
			}
			if err != nil {
				return
			}
		}
	}
}

// linePerEvent makes each data line an event of its own: the reading of
// a parser that dispatches at every data line.
func linePerEvent(ev []byte) []byte {
	var out []byte
	for _, line := range strings.Split(strings.TrimSuffix(string(ev), "\n\n"), "\n") {
		if strings.HasPrefix(line, "data:") {
			out = append(out, line+"\n\n"...)
		} else if line != "" {
			out = append(out, line+"\n"...)
		}
	}
	return out
}

// joining re-frames by the specification: the BOM stripped, an event's
// data lines joined into one (their line feeds are JSON white space).
func joining(ev []byte) []byte {
	ev = bytes.TrimPrefix(ev, []byte("\xEF\xBB\xBF"))
	var out, data []byte
	for _, line := range strings.Split(strings.TrimSuffix(string(ev), "\n\n"), "\n") {
		if v, ok := strings.CutPrefix(line, "data: "); ok {
			data = append(append(data, v...), ' ')
		} else {
			out = append(out, line+"\n"...)
		}
	}
	if data != nil {
		out = append(append(append(out, "data: "...), bytes.TrimSuffix(data, []byte(" "))...), '\n')
	}
	return append(out, '\n')
}

// TestSSEFramingRow: the sse-framing row passes through a relay that
// forwards the bytes, and through one that re-frames by the specification
// (saying so); it fails through one that reads each data line as an
// event, naming the framing it broke.
func TestSSEFramingRow(t *testing.T) {
	for _, tt := range []struct {
		name   string
		gw     gateway
		status Status
		want   string // in the evidence
	}{
		{"forwards the bytes", flushingProxy, Pass, "all tokens and events with each framing, as sent"},
		{"joins data lines, drops the BOM", relay(eventRelay(joining)), Pass,
			"the gateway re-framed a byte order mark before the first event and each JSON payload over two data lines (spec-valid)"},
		{"an event per data line", relay(eventRelay(linePerEvent)), Fail, "spec-valid streams broken: " +
			"a byte order mark before the first event (12 events, the plain stream 13: the gateway read its lines otherwise); " +
			"each JSON payload over two data lines (25 events, the plain stream 13: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := check(t, tt.gw, api.Chat, "sse-framing")
			r := rows(t, rep, err)["sse-framing"]
			if r.Status != tt.status || !strings.Contains(r.Evidence, tt.want) || r.Requests != 1+len(framingCases) {
				t.Errorf("sse-framing: %s (%s), %d requests; want %s with %q, %d requests", r.Status, r.Evidence, r.Requests,
					tt.status, tt.want, 1+len(framingCases))
			}
			if r.Status == Fail && r.Fix == "" {
				t.Errorf("sse-framing fails without a fix: %+v", r)
			}
		})
	}
}
