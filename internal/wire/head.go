package wire

import (
	"bytes"
	"fmt"
	"strings"
)

// Field is one header field line of a head: the name as sent and the value
// with surrounding spaces and tabs removed.
type Field struct {
	Name  string
	Value string
}

// ResponseHead is a parsed HTTP/1.x response head. Its strings share one
// copy of the head, so it stays valid after the buffer it was parsed from is
// reused.
type ResponseHead struct {
	Proto         string  // "HTTP/1.1"
	StatusCode    int     // 100..999
	StatusLine    string  // the first line without its line ending, e.g. "HTTP/1.1 200 OK"
	Chunked       bool    // Transfer-Encoding lists "chunked"; it takes precedence over ContentLength
	ContentLength int64   // bytes, or -1 when absent
	Close         bool    // "Connection: close", or HTTP/1.0 without "Connection: keep-alive"
	Fields        []Field // every header field in order of arrival
}

// Header returns the value of the first field named name (compared
// case-insensitively), or "" if there is none.
func (h ResponseHead) Header(name string) string { return lookup(h.Fields, name) }

// Values returns the values of every field named name (compared
// case-insensitively), in order of arrival; nil if there is none.
func (h ResponseHead) Values(name string) []string {
	var out []string
	for i := range h.Fields {
		if asciiEqualFold(h.Fields[i].Name, name) {
			out = append(out, h.Fields[i].Value)
		}
	}
	return out
}

// IsInformational reports whether h is an interim 1xx response (such as
// 100 Continue or 103 Early Hints) that precedes the final response on the
// same connection; the caller should skip it and parse the next head.
// 101 Switching Protocols is final and is therefore not informational here.
func (h ResponseHead) IsInformational() bool {
	return h.StatusCode >= 100 && h.StatusCode < 200 && h.StatusCode != 101
}

// RequestHead is a parsed HTTP/1.x request head. Its strings share one copy
// of the head, so it stays valid after the buffer it was parsed from is
// reused.
type RequestHead struct {
	Method        string  // "POST"
	Target        string  // the request-target as sent, e.g. "/v1/chat/completions"
	Proto         string  // "HTTP/1.1"
	ContentLength int64   // bytes, or -1 when absent
	Chunked       bool    // Transfer-Encoding lists "chunked"; it takes precedence over ContentLength
	Close         bool    // "Connection: close", or HTTP/1.0 without "Connection: keep-alive"
	Host          string  // the Host field, or "" when absent
	Fields        []Field // every header field in order of arrival
}

// Header returns the value of the first field named name (compared
// case-insensitively), or "" if there is none.
func (r RequestHead) Header(name string) string { return lookup(r.Fields, name) }

// ParseResponseHead parses the response head at the start of buf, which
// holds all bytes received so far. Until the blank line ending the head has
// arrived it returns n == 0 and err == nil: call it again with more bytes.
// Otherwise n is the length of the head, line endings included, so buf[n:]
// is the start of the body. Lines may end in "\r\n" or a bare "\n".
//
// A head must end within MaxHeadBytes: once len(buf) reaches MaxHeadBytes
// without a complete head, the error is ErrHeadTooLarge, so a buffer of
// MaxHeadBytes is always enough to get an answer. A malformed first line
// gives ErrBadStatusLine; other errors are ErrBadHeader and
// ErrBadContentLength. Interim 1xx heads are returned like any other; see
// ResponseHead.IsInformational.
//
// Unlike ParseRequestHead, it does not skip empty lines before the status
// line: a response starting with one is malformed. Each call rescans buf
// from the start. Parsing a complete head costs two allocations, the copy of
// the head and the field slice; "need more" costs none.
func ParseResponseHead(buf []byte) (head ResponseHead, n int, err error) {
	n, err = headEnd(buf, 0)
	if n == 0 || err != nil {
		return ResponseHead{}, 0, err
	}
	line, rest := nextLine(string(buf[:n]))
	proto, code, ok := parseStatusLine(line)
	if !ok {
		return ResponseHead{}, 0, fmt.Errorf("%w: %s", ErrBadStatusLine, quote(line))
	}
	info, err := parseFields(rest)
	if err != nil {
		return ResponseHead{}, 0, err
	}
	head = ResponseHead{
		Proto:         proto,
		StatusCode:    code,
		StatusLine:    line,
		Chunked:       info.chunked,
		ContentLength: info.contentLength,
		Close:         info.closes(proto),
		Fields:        info.fields,
	}
	return head, n, nil
}

// ParseRequestHead parses the request head at the start of buf, which holds
// all bytes received so far, with the same conventions as
// ParseResponseHead: n == 0 and err == nil means "need more", and buf[n:] is
// the start of the body. Empty lines before the request line are skipped
// (RFC 9112 §2.2) and counted in n. A malformed first line gives
// ErrBadRequestLine; other errors are ErrHeadTooLarge, ErrBadHeader and
// ErrBadContentLength.
func ParseRequestHead(buf []byte) (req RequestHead, n int, err error) {
	skip := 0
	for skip < len(buf) && skip < MaxHeadBytes {
		if buf[skip] == '\n' {
			skip++
		} else if buf[skip] == '\r' && skip+1 < len(buf) && buf[skip+1] == '\n' {
			skip += 2
		} else {
			break
		}
	}
	n, err = headEnd(buf, skip)
	if n == 0 || err != nil {
		return RequestHead{}, 0, err
	}
	line, rest := nextLine(string(buf[skip:n]))
	method, target, proto, ok := parseRequestLine(line)
	if !ok {
		return RequestHead{}, 0, fmt.Errorf("%w: %s", ErrBadRequestLine, quote(line))
	}
	info, err := parseFields(rest)
	if err != nil {
		return RequestHead{}, 0, err
	}
	req = RequestHead{
		Method:        method,
		Target:        target,
		Proto:         proto,
		ContentLength: info.contentLength,
		Chunked:       info.chunked,
		Close:         info.closes(proto),
		Host:          info.host,
		Fields:        info.fields,
	}
	return req, n, nil
}

// headEnd returns the length of the head that starts at buf[from:], through
// its terminating empty line, or 0 if that line has not arrived yet.
func headEnd(buf []byte, from int) (int, error) {
	limit := buf
	if len(limit) > MaxHeadBytes {
		limit = limit[:MaxHeadBytes]
	}
	for start := from; start <= len(limit); {
		i := bytes.IndexByte(limit[start:], '\n')
		if i < 0 {
			break
		}
		if i == 0 || (i == 1 && limit[start] == '\r') {
			return start + i + 1, nil
		}
		start += i + 1
	}
	if len(buf) >= MaxHeadBytes {
		return 0, ErrHeadTooLarge
	}
	return 0, nil
}

// nextLine splits s, which must contain '\n', after its first line and
// drops that line's ending ("\n" or "\r\n").
func nextLine(s string) (line, rest string) {
	i := strings.IndexByte(s, '\n')
	line, rest = s[:i], s[i+1:]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, rest
}

// parseStatusLine parses "HTTP/x.y NNN[ reason]".
func parseStatusLine(line string) (proto string, code int, ok bool) {
	if len(line) < len("HTTP/1.1 200") || line[8] != ' ' {
		return "", 0, false
	}
	proto = line[:8]
	if _, _, ok := parseProto(proto); !ok {
		return "", 0, false
	}
	digits := line[9:12]
	for i := range len(digits) {
		if !isDigit(digits[i]) {
			return "", 0, false
		}
		code = code*10 + int(digits[i]-'0')
	}
	if code < 100 {
		return "", 0, false
	}
	reason := line[12:]
	if reason != "" && (reason[0] != ' ' || !validFieldValue(reason)) {
		return "", 0, false
	}
	return proto, code, true
}

// parseRequestLine parses "METHOD SP target SP HTTP/x.y".
func parseRequestLine(line string) (method, target, proto string, ok bool) {
	method, rest, ok1 := strings.Cut(line, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || !validToken(method) || !validTarget(target) {
		return "", "", "", false
	}
	if _, _, ok := parseProto(proto); !ok {
		return "", "", "", false
	}
	return method, target, proto, true
}

// parseProto parses "HTTP/x.y" with single-digit versions (RFC 9112 §2.3).
func parseProto(p string) (major, minor int, ok bool) {
	if len(p) != 8 || p[:5] != "HTTP/" || !isDigit(p[5]) || p[6] != '.' || !isDigit(p[7]) {
		return 0, 0, false
	}
	return int(p[5] - '0'), int(p[7] - '0'), true
}

// headerInfo is what the field lines of either kind of head tell us.
type headerInfo struct {
	fields        []Field
	contentLength int64
	chunked       bool
	connClose     bool
	connKeepAlive bool
	host          string
	hostSeen      bool
}

// closes reports whether the connection ends after this message.
func (hi *headerInfo) closes(proto string) bool {
	major, minor, _ := parseProto(proto)
	persistent := major > 1 || (major == 1 && minor >= 1)
	return hi.connClose || (!persistent && !hi.connKeepAlive)
}

// parseFields parses the field lines in s, which runs from the line after
// the start line through the terminating empty line.
func parseFields(s string) (headerInfo, error) {
	hi := headerInfo{contentLength: -1}
	if count := strings.Count(s, "\n") - 1; count > 0 {
		hi.fields = make([]Field, 0, count)
	}
	for {
		var line string
		line, s = nextLine(s)
		if line == "" {
			return hi, nil
		}
		if line[0] == ' ' || line[0] == '\t' {
			return hi, fmt.Errorf("%w: folded line %s", ErrBadHeader, quote(line))
		}
		name, value, ok := strings.Cut(line, ":")
		value = trimOWS(value)
		if !ok || !validToken(name) || !validFieldValue(value) {
			return hi, fmt.Errorf("%w: %s", ErrBadHeader, quote(line))
		}
		hi.fields = append(hi.fields, Field{Name: name, Value: value})
		if err := hi.note(name, value); err != nil {
			return hi, err
		}
	}
}

// note records what a field with a meaning for framing says.
func (hi *headerInfo) note(name, value string) error {
	switch {
	case asciiEqualFold(name, "Content-Length"):
		cl, ok := parseContentLength(value)
		if !ok || (hi.contentLength >= 0 && cl != hi.contentLength) {
			return fmt.Errorf("%w: %s", ErrBadContentLength, quote(value))
		}
		hi.contentLength = cl
	case asciiEqualFold(name, "Transfer-Encoding"):
		hi.chunked = hi.chunked || hasToken(value, "chunked")
	case asciiEqualFold(name, "Connection"):
		hi.connClose = hi.connClose || hasToken(value, "close")
		hi.connKeepAlive = hi.connKeepAlive || hasToken(value, "keep-alive")
	case asciiEqualFold(name, "Host"):
		if hi.hostSeen {
			return fmt.Errorf("%w: duplicate Host", ErrBadHeader)
		}
		hi.host, hi.hostSeen = value, true
	}
	return nil
}

// parseContentLength parses a non-negative decimal that fits in an int64.
func parseContentLength(v string) (int64, bool) {
	if v == "" {
		return 0, false
	}
	var n int64
	for i := range len(v) {
		if !isDigit(v[i]) {
			return 0, false
		}
		d := int64(v[i] - '0')
		if n > (1<<63-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// hasToken reports whether the comma-separated list v contains token,
// compared case-insensitively.
func hasToken(v, token string) bool {
	for v != "" {
		var item string
		item, v, _ = strings.Cut(v, ",")
		if asciiEqualFold(trimOWS(item), token) {
			return true
		}
	}
	return false
}

func lookup(fields []Field, name string) string {
	for i := range fields {
		if asciiEqualFold(fields[i].Name, name) {
			return fields[i].Value
		}
	}
	return ""
}

// asciiEqualFold is strings.EqualFold restricted to ASCII, as header names
// are.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		if lower(a[i]) != lower(b[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

func trimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// validToken reports whether s is a non-empty RFC 9110 token.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if !isTokenChar(s[i]) {
			return false
		}
	}
	return true
}

func isTokenChar(c byte) bool { return tokenChars[c] }

// tokenChars marks the bytes allowed in an RFC 9110 token: visible ASCII
// except the delimiters.
var tokenChars = func() (t [256]bool) {
	for c := '!'; c <= '~'; c++ {
		t[c] = !strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c)
	}
	return t
}()

// validFieldValue reports whether s has no control bytes other than tab.
func validFieldValue(s string) bool {
	for i := range len(s) {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// validTarget reports whether s is a non-empty request-target without
// spaces or control bytes.
func validTarget(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if c := s[i]; c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// quote renders at most the first 64 bytes of s for an error message.
func quote(s string) string {
	const limit = 64
	if len(s) > limit {
		return fmt.Sprintf("%q...", s[:limit])
	}
	return fmt.Sprintf("%q", s)
}
