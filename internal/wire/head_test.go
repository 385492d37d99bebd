package wire

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

var responseHeadTests = []struct {
	name    string
	head    string // the whole head; the test appends a body after it
	proto   string
	code    int
	line    string
	chunked bool
	cl      int64
	close   bool
	fields  []Field
}{
	{
		name:  "sse stream",
		head:  "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
		proto: "HTTP/1.1", code: 200, line: "HTTP/1.1 200 OK", chunked: true, cl: -1,
		fields: []Field{{"Content-Type", "text/event-stream"}, {"Transfer-Encoding", "chunked"}},
	},
	{
		name:  "bare LF endings",
		head:  "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n",
		proto: "HTTP/1.1", code: 200, line: "HTTP/1.1 200 OK", chunked: true, cl: -1,
		fields: []Field{{"Transfer-Encoding", "chunked"}},
	},
	{
		name:  "mixed endings",
		head:  "HTTP/1.1 200 OK\nA: b\r\n\n",
		proto: "HTTP/1.1", code: 200, line: "HTTP/1.1 200 OK", cl: -1,
		fields: []Field{{"A", "b"}},
	},
	{
		name:  "no reason phrase",
		head:  "HTTP/1.1 204\r\n\r\n",
		proto: "HTTP/1.1", code: 204, line: "HTTP/1.1 204", cl: -1,
	},
	{
		name:  "empty reason phrase",
		head:  "HTTP/1.1 204 \r\n\r\n",
		proto: "HTTP/1.1", code: 204, line: "HTTP/1.1 204 ", cl: -1,
	},
	{
		name:  "error with content length",
		head:  "HTTP/1.1 404 Not Found\r\nContent-Length: 12\r\ncontent-length: 12\r\n\r\n",
		proto: "HTTP/1.1", code: 404, line: "HTTP/1.1 404 Not Found", cl: 12,
		fields: []Field{{"Content-Length", "12"}, {"content-length", "12"}},
	},
	{
		name:  "content length zero",
		head:  "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		proto: "HTTP/1.1", code: 200, line: "HTTP/1.1 200 OK", cl: 0,
		fields: []Field{{"Content-Length", "0"}},
	},
	{
		name:  "case-insensitive names and values",
		head:  "HTTP/1.1 200 OK\r\nTRANSFER-ENCODING: Chunked\r\nconnection: Keep-Alive, CLOSE\r\n\r\n",
		proto: "HTTP/1.1", code: 200, line: "HTTP/1.1 200 OK", chunked: true, cl: -1, close: true,
		fields: []Field{{"TRANSFER-ENCODING", "Chunked"}, {"connection", "Keep-Alive, CLOSE"}},
	},
	{
		name:  "chunked after another coding",
		head:  "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip ,\tchunked\r\n\r\n",
		proto: "HTTP/1.1", code: 200, line: "HTTP/1.1 200 OK", chunked: true, cl: -1,
		fields: []Field{{"Transfer-Encoding", "gzip ,\tchunked"}},
	},
	{
		name:  "not chunked",
		head:  "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nX-Chunked: chunked\r\n\r\n",
		proto: "HTTP/1.1", code: 200, line: "HTTP/1.1 200 OK", cl: -1,
		fields: []Field{{"Transfer-Encoding", "gzip"}, {"X-Chunked", "chunked"}},
	},
	{
		name:  "HTTP/1.0 closes by default",
		head:  "HTTP/1.0 200 OK\r\n\r\n",
		proto: "HTTP/1.0", code: 200, line: "HTTP/1.0 200 OK", cl: -1, close: true,
	},
	{
		name:  "HTTP/1.0 keep-alive",
		head:  "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n",
		proto: "HTTP/1.0", code: 200, line: "HTTP/1.0 200 OK", cl: -1,
		fields: []Field{{"Connection", "keep-alive"}},
	},
	{
		name:  "whitespace around values, empty value",
		head:  "HTTP/1.1 200 OK\r\nX-A:   v  w \t\r\nX-B:\r\nX-C: \xc3\xa9\r\n\r\n",
		proto: "HTTP/1.1", code: 200, line: "HTTP/1.1 200 OK", cl: -1,
		fields: []Field{{"X-A", "v  w"}, {"X-B", ""}, {"X-C", "\xc3\xa9"}},
	},
	{
		name:  "interim",
		head:  "HTTP/1.1 100 Continue\r\n\r\n",
		proto: "HTTP/1.1", code: 100, line: "HTTP/1.1 100 Continue", cl: -1,
	},
	{
		name:  "gateway error",
		head:  "HTTP/1.1 502 Bad Gateway\r\nServer: nginx\r\nContent-Type: text/html\r\nContent-Length: 157\r\nConnection: close\r\n\r\n",
		proto: "HTTP/1.1", code: 502, line: "HTTP/1.1 502 Bad Gateway", cl: 157, close: true,
		fields: []Field{{"Server", "nginx"}, {"Content-Type", "text/html"}, {"Content-Length", "157"}, {"Connection", "close"}},
	},
}

func TestParseResponseHead(t *testing.T) {
	for _, tt := range responseHeadTests {
		t.Run(tt.name, func(t *testing.T) {
			buf := []byte(tt.head + "5\r\nhello\r\n")
			h, n, err := ParseResponseHead(buf)
			if err != nil || n != len(tt.head) {
				t.Fatalf("ParseResponseHead(%q) = n %d, err %v; want n %d, nil", buf, n, err, len(tt.head))
			}
			if h.Proto != tt.proto || h.StatusCode != tt.code || h.StatusLine != tt.line {
				t.Errorf("ParseResponseHead(%q): proto %q code %d line %q; want %q %d %q",
					tt.head, h.Proto, h.StatusCode, h.StatusLine, tt.proto, tt.code, tt.line)
			}
			if h.Chunked != tt.chunked || h.ContentLength != tt.cl || h.Close != tt.close {
				t.Errorf("ParseResponseHead(%q): chunked %v cl %d close %v; want %v %d %v",
					tt.head, h.Chunked, h.ContentLength, h.Close, tt.chunked, tt.cl, tt.close)
			}
			if !slices.Equal(h.Fields, tt.fields) {
				t.Errorf("ParseResponseHead(%q).Fields = %q; want %q", tt.head, h.Fields, tt.fields)
			}
			// The head must not alias buf.
			clear(buf)
			if h.StatusLine != tt.line || !slices.Equal(h.Fields, tt.fields) {
				t.Errorf("ParseResponseHead(%q) result changed when buf was overwritten", tt.head)
			}
		})
	}
}

func TestParseResponseHeadNeedMore(t *testing.T) {
	for _, tt := range responseHeadTests {
		for k := range len(tt.head) {
			h, n, err := ParseResponseHead([]byte(tt.head[:k]))
			if n != 0 || err != nil || h.StatusCode != 0 {
				t.Errorf("ParseResponseHead(%q) = code %d, n %d, err %v; want need more (0, 0, nil)",
					tt.head[:k], h.StatusCode, n, err)
			}
		}
	}
}

func TestResponseHeadHeader(t *testing.T) {
	h, _, err := ParseResponseHead([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Dup: 1\r\nx-dup: 2\r\n\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, want string }{
		{"Content-Type", "text/event-stream"},
		{"content-type", "text/event-stream"},
		{"CONTENT-TYPE", "text/event-stream"},
		{"X-Dup", "1"},
		{"Content-Typ", ""},
		{"Missing", ""},
	} {
		if got := h.Header(tc.name); got != tc.want {
			t.Errorf("Header(%q) = %q; want %q", tc.name, got, tc.want)
		}
	}
}

func TestIsInformational(t *testing.T) {
	for code, want := range map[int]bool{100: true, 101: false, 103: true, 199: true, 200: false, 204: false, 99: false} {
		if got := (ResponseHead{StatusCode: code}).IsInformational(); got != want {
			t.Errorf("ResponseHead{StatusCode: %d}.IsInformational() = %v; want %v", code, got, want)
		}
	}
}

var badResponseHeads = []struct {
	head string
	err  error
}{
	{"\r\n", ErrBadStatusLine},
	{"HTTP/1.1 20 OK\r\n\r\n", ErrBadStatusLine},
	{"HTTP/1.1 abc OK\r\n\r\n", ErrBadStatusLine},
	{"HTTP/1.1  200 OK\r\n\r\n", ErrBadStatusLine},
	{"HTTP/1.1 2000\r\n\r\n", ErrBadStatusLine},
	{"HTTP/1.1 200OK\r\n\r\n", ErrBadStatusLine},
	{"HTTP/1.1 099 Low\r\n\r\n", ErrBadStatusLine},
	{"HTTP/11 200 OK\r\n\r\n", ErrBadStatusLine},
	{"HTTP/1.x 200 OK\r\n\r\n", ErrBadStatusLine},
	{"http/1.1 200 OK\r\n\r\n", ErrBadStatusLine},
	{"ICY 200 OK\r\n\r\n", ErrBadStatusLine},
	{"HTTP/1.1\r\n\r\n", ErrBadStatusLine},
	{"HTTP/1.1 200 O\x00K\r\n\r\n", ErrBadStatusLine},
	{"HTTP/1.1 200 OK\r\nNoColon\r\n\r\n", ErrBadHeader},
	{"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", ErrBadHeader},
	{"HTTP/1.1 200 OK\r\nName : x\r\n\r\n", ErrBadHeader},
	{"HTTP/1.1 200 OK\r\n: x\r\n\r\n", ErrBadHeader},
	{"HTTP/1.1 200 OK\r\nA: b\r\n continued\r\n\r\n", ErrBadHeader},
	{"HTTP/1.1 200 OK\r\nA: b\rc\r\n\r\n", ErrBadHeader},
	{"HTTP/1.1 200 OK\r\nA: b\x00\r\n\r\n", ErrBadHeader},
	{"HTTP/1.1 200 OK\r\nA\x7f: b\r\n\r\n", ErrBadHeader},
	{"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", ErrBadContentLength},
	{"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n", ErrBadContentLength},
	{"HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n", ErrBadContentLength},
	{"HTTP/1.1 200 OK\r\nContent-Length: 1 2\r\n\r\n", ErrBadContentLength},
	{"HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\n", ErrBadContentLength},
	{"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", ErrBadContentLength},
	{"HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775808\r\n\r\n", ErrBadContentLength},
}

func TestParseResponseHeadErrors(t *testing.T) {
	for _, tt := range badResponseHeads {
		h, n, err := ParseResponseHead([]byte(tt.head))
		if !errors.Is(err, tt.err) || n != 0 || h.StatusCode != 0 {
			t.Errorf("ParseResponseHead(%q) = code %d, n %d, err %v; want 0, 0, %v", tt.head, h.StatusCode, n, err, tt.err)
		}
		for k := range len(tt.head) {
			if _, n, err := ParseResponseHead([]byte(tt.head[:k])); n != 0 || err != nil {
				t.Errorf("ParseResponseHead(%q) = n %d, err %v; want need more (0, nil)", tt.head[:k], n, err)
			}
		}
	}
}

// paddedHead returns a head of exactly size bytes, starting with start and
// padded with one header field.
func paddedHead(start string, size int) string {
	const pre, post = "X-Pad: ", "\r\n\r\n"
	return start + pre + strings.Repeat("p", size-len(start)-len(pre)-len(post)) + post
}

func TestHeadTooLarge(t *testing.T) {
	const status, reqLine = "HTTP/1.1 200 OK\r\n", "GET / HTTP/1.1\r\n"
	for _, tc := range []struct {
		name    string
		resp    string
		req     string
		wantN   int
		wantErr error
	}{
		{"just below the limit, open", paddedHead(status, MaxHeadBytes+4)[:MaxHeadBytes-1], paddedHead(reqLine, MaxHeadBytes+4)[:MaxHeadBytes-1], 0, nil},
		{"at the limit, open", paddedHead(status, MaxHeadBytes+4)[:MaxHeadBytes], paddedHead(reqLine, MaxHeadBytes+4)[:MaxHeadBytes], 0, ErrHeadTooLarge},
		{"above the limit, open", paddedHead(status, MaxHeadBytes+4), paddedHead(reqLine, MaxHeadBytes+4), 0, ErrHeadTooLarge},
		{"ends at the limit", paddedHead(status, MaxHeadBytes) + "body", paddedHead(reqLine, MaxHeadBytes) + "body", MaxHeadBytes, nil},
		{"ends one past the limit", paddedHead(status, MaxHeadBytes+1), paddedHead(reqLine, MaxHeadBytes+1), 0, ErrHeadTooLarge},
		{"huge first line", "HTTP/1.1 200 " + strings.Repeat("x", 2*MaxHeadBytes), "GET /" + strings.Repeat("x", 2*MaxHeadBytes), 0, ErrHeadTooLarge},
	} {
		if _, n, err := ParseResponseHead([]byte(tc.resp)); n != tc.wantN || !errors.Is(err, tc.wantErr) {
			t.Errorf("%s: ParseResponseHead(%d bytes) = n %d, err %v; want %d, %v", tc.name, len(tc.resp), n, err, tc.wantN, tc.wantErr)
		}
		if _, n, err := ParseRequestHead([]byte(tc.req)); n != tc.wantN || !errors.Is(err, tc.wantErr) {
			t.Errorf("%s: ParseRequestHead(%d bytes) = n %d, err %v; want %d, %v", tc.name, len(tc.req), n, err, tc.wantN, tc.wantErr)
		}
	}
	// Skipped empty lines count towards the limit.
	req := strings.Repeat("\r\n", MaxHeadBytes/2) + reqLine + "\r\n"
	if _, n, err := ParseRequestHead([]byte(req)); n != 0 || !errors.Is(err, ErrHeadTooLarge) {
		t.Errorf("ParseRequestHead(%d empty lines + request) = n %d, err %v; want 0, %v", MaxHeadBytes/2, n, err, ErrHeadTooLarge)
	}
}

var requestHeadTests = []struct {
	name    string
	head    string
	method  string
	target  string
	proto   string
	cl      int64
	chunked bool
	close   bool
	host    string
	nFields int
}{
	{
		name:   "chat completion",
		head:   "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\nContent-Length: 42\r\n\r\n",
		method: "POST", target: "/v1/chat/completions", proto: "HTTP/1.1", cl: 42, host: "127.0.0.1:8080", nFields: 3,
	},
	{
		name:   "get without body",
		head:   "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n",
		method: "GET", target: "/v1/models", proto: "HTTP/1.1", cl: -1, host: "x", nFields: 1,
	},
	{
		name:   "content length zero is not absent",
		head:   "POST / HTTP/1.1\r\ncontent-length: 0\r\n\r\n",
		method: "POST", target: "/", proto: "HTTP/1.1", cl: 0, nFields: 1,
	},
	{
		name:   "content length with leading zeros and OWS, repeated",
		head:   "POST / HTTP/1.1\r\nContent-Length:\t007 \r\nCONTENT-LENGTH: 7\r\n\r\n",
		method: "POST", target: "/", proto: "HTTP/1.1", cl: 7, nFields: 2,
	},
	{
		name:   "chunked request",
		head:   "POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n",
		method: "POST", target: "/v1/chat/completions", proto: "HTTP/1.1", cl: -1, chunked: true, host: "h", nFields: 2,
	},
	{
		name:   "bare LF endings",
		head:   "POST /x HTTP/1.1\nHost: h\nContent-Length: 3\n\n",
		method: "POST", target: "/x", proto: "HTTP/1.1", cl: 3, host: "h", nFields: 2,
	},
	{
		name:   "connection close",
		head:   "GET / HTTP/1.1\r\nConnection: close\r\n\r\n",
		method: "GET", target: "/", proto: "HTTP/1.1", cl: -1, close: true, nFields: 1,
	},
	{
		name:   "HTTP/1.0 closes by default",
		head:   "GET / HTTP/1.0\r\n\r\n",
		method: "GET", target: "/", proto: "HTTP/1.0", cl: -1, close: true,
	},
	{
		name:   "HTTP/1.0 keep-alive",
		head:   "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n",
		method: "GET", target: "/", proto: "HTTP/1.0", cl: -1, nFields: 1,
	},
	{
		name:   "empty lines before the request line",
		head:   "\r\n\n\r\nOPTIONS * HTTP/1.1\r\n\r\n",
		method: "OPTIONS", target: "*", proto: "HTTP/1.1", cl: -1,
	},
	{
		name:   "absolute form, query",
		head:   "GET http://example.com/a?b=c%20d HTTP/1.1\r\nHost: example.com\r\n\r\n",
		method: "GET", target: "http://example.com/a?b=c%20d", proto: "HTTP/1.1", cl: -1, host: "example.com", nFields: 1,
	},
}

func TestParseRequestHead(t *testing.T) {
	for _, tt := range requestHeadTests {
		t.Run(tt.name, func(t *testing.T) {
			buf := []byte(tt.head + "{}")
			r, n, err := ParseRequestHead(buf)
			if err != nil || n != len(tt.head) {
				t.Fatalf("ParseRequestHead(%q) = n %d, err %v; want n %d, nil", buf, n, err, len(tt.head))
			}
			if r.Method != tt.method || r.Target != tt.target || r.Proto != tt.proto {
				t.Errorf("ParseRequestHead(%q): %q %q %q; want %q %q %q", tt.head, r.Method, r.Target, r.Proto, tt.method, tt.target, tt.proto)
			}
			if r.ContentLength != tt.cl || r.Chunked != tt.chunked || r.Close != tt.close || r.Host != tt.host {
				t.Errorf("ParseRequestHead(%q): cl %d chunked %v close %v host %q; want %d %v %v %q",
					tt.head, r.ContentLength, r.Chunked, r.Close, r.Host, tt.cl, tt.chunked, tt.close, tt.host)
			}
			if len(r.Fields) != tt.nFields {
				t.Errorf("ParseRequestHead(%q): %d fields %q; want %d", tt.head, len(r.Fields), r.Fields, tt.nFields)
			}
			if got := r.Header("hOsT"); got != tt.host {
				t.Errorf("ParseRequestHead(%q).Header(\"hOsT\") = %q; want %q", tt.head, got, tt.host)
			}
			clear(buf)
			if r.Target != tt.target || r.Host != tt.host {
				t.Errorf("ParseRequestHead(%q) result changed when buf was overwritten", tt.head)
			}
		})
	}
}

func TestParseRequestHeadNeedMore(t *testing.T) {
	for _, tt := range requestHeadTests {
		for k := range len(tt.head) {
			r, n, err := ParseRequestHead([]byte(tt.head[:k]))
			if n != 0 || err != nil || r.Method != "" {
				t.Errorf("ParseRequestHead(%q) = method %q, n %d, err %v; want need more", tt.head[:k], r.Method, n, err)
			}
		}
	}
}

func TestParseRequestHeadErrors(t *testing.T) {
	for _, tt := range []struct {
		head string
		err  error
	}{
		{"\r\n\r\n", ErrHeadTooLarge}, // only empty lines: still need more, checked below
		{"GET /\r\n\r\n", ErrBadRequestLine},
		{"GET  / HTTP/1.1\r\n\r\n", ErrBadRequestLine},
		{"GET / HTTP/1.1 extra\r\n\r\n", ErrBadRequestLine},
		{"GET / HTTP/1.1 \r\n\r\n", ErrBadRequestLine},
		{"GET /\x01 HTTP/1.1\r\n\r\n", ErrBadRequestLine},
		{"G(T / HTTP/1.1\r\n\r\n", ErrBadRequestLine},
		{" GET / HTTP/1.1\r\n\r\n", ErrBadRequestLine},
		{"GET / HTTP/1.x\r\n\r\n", ErrBadRequestLine},
		{"GET / HTTP/1\r\n\r\n", ErrBadRequestLine},
		{"GET / FTP/1.1\r\n\r\n", ErrBadRequestLine},
		{"\r\r\n\r\n", ErrBadRequestLine},
		{"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", ErrBadContentLength},
		{"POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n", ErrBadContentLength},
		{"POST / HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n", ErrBadContentLength},
		{"POST / HTTP/1.1\r\nContent-Length: 1.0\r\n\r\n", ErrBadContentLength},
		{"POST / HTTP/1.1\r\nContent-Length:\r\n\r\n", ErrBadContentLength},
		{"POST / HTTP/1.1\r\nContent-Length: 10\r\ncontent-length: 11\r\n\r\n", ErrBadContentLength},
		{"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", ErrBadContentLength},
		{"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", ErrBadHeader},
		{"GET / HTTP/1.1\r\nHost: a\r\n\tfolded\r\n\r\n", ErrBadHeader},
		{"GET / HTTP/1.1\r\nHost a\r\n\r\n", ErrBadHeader},
	} {
		if tt.err == ErrHeadTooLarge {
			// Empty lines before the request line are skipped, so a
			// buffer of them is not a head yet.
			if _, n, err := ParseRequestHead([]byte(tt.head)); n != 0 || err != nil {
				t.Errorf("ParseRequestHead(%q) = n %d, err %v; want need more (0, nil)", tt.head, n, err)
			}
			continue
		}
		r, n, err := ParseRequestHead([]byte(tt.head))
		if !errors.Is(err, tt.err) || n != 0 || r.Method != "" {
			t.Errorf("ParseRequestHead(%q) = method %q, n %d, err %v; want \"\", 0, %v", tt.head, r.Method, n, err, tt.err)
		}
		for k := range len(tt.head) {
			if _, n, err := ParseRequestHead([]byte(tt.head[:k])); n != 0 || err != nil {
				t.Errorf("ParseRequestHead(%q) = n %d, err %v; want need more (0, nil)", tt.head[:k], n, err)
			}
		}
	}
}

func TestParseHeadAllocs(t *testing.T) {
	resp := []byte(responseHeadTests[0].head)
	req := []byte(requestHeadTests[0].head)
	if a := testing.AllocsPerRun(100, func() { _, _, _ = ParseResponseHead(resp) }); a > 2 {
		t.Errorf("ParseResponseHead: %v allocs; want <= 2", a)
	}
	if a := testing.AllocsPerRun(100, func() { _, _, _ = ParseRequestHead(req) }); a > 2 {
		t.Errorf("ParseRequestHead: %v allocs; want <= 2", a)
	}
	if a := testing.AllocsPerRun(100, func() { _, _, _ = ParseResponseHead(resp[:len(resp)-1]) }); a != 0 {
		t.Errorf("ParseResponseHead (need more): %v allocs; want 0", a)
	}
}
