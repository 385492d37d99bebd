package client

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/wire"
)

// Bounds on what a failure text quotes of a hostile response. Every byte a
// peer sent is escaped before it lands in a failure text (see printable):
// the texts go to terminals and into JSON, which would mangle invalid
// UTF-8.
const (
	// statusBodyBytes is how much of the body of a non-2xx response the
	// client keeps to quote it; statusExcerptBytes how much of it, once
	// rendered, the failure text quotes.
	statusBodyBytes    = 1 << 10
	statusExcerptBytes = 200
	// locationBytes is how much of a redirect's Location the text quotes.
	locationBytes = 200
)

// headFailure is the failure of a head that wire.ParseResponseHead
// refused with err.
func headFailure(head []byte, err error) result.Failure {
	switch {
	case errors.Is(err, wire.ErrHeadTooLarge):
		return result.Failure{Kind: result.HeadTooLarge}
	case errors.Is(err, wire.ErrBadStatusLine):
		return badStatus(head)
	}
	// A malformed field or Content-Length after a valid status line
	// (ParseResponseHead checks that first): a success with a broken head
	// is a framing error; the status of a failure says more.
	if len(head) > 9 && head[9] == '2' {
		return result.Failure{Kind: result.BadFraming, Detail: err.Error()}
	}
	return badStatus(head)
}

// checkStatusLine looks at the start of a head that is not complete yet,
// so that a response that is no HTTP at all fails at once rather than at
// the timeout: the first bytes must be those of "HTTP/", and a complete
// first line must be a status line. It returns false when they are not.
func checkStatusLine(head []byte) bool {
	const proto = "HTTP/"
	if n := min(len(head), len(proto)); string(head[:n]) != proto[:n] {
		return false
	}
	i := bytes.IndexByte(head, '\n')
	if i < 0 {
		return true
	}
	// The first line alone, as a head without fields.
	line := make([]byte, 0, i+3)
	line = append(line, head[:i+1]...)
	_, _, err := wire.ParseResponseHead(append(line, "\r\n"...))
	return !errors.Is(err, wire.ErrBadStatusLine)
}

// badStatus is the reference's "status <first 32 bytes of the head>": the
// first line, cut at statusDetailBytes, its control bytes and invalid
// UTF-8 escaped.
func badStatus(head []byte) result.Failure {
	line := head
	for i, c := range line {
		if c == '\r' || c == '\n' {
			line = line[:i]
			break
		}
	}
	if len(line) > statusDetailBytes {
		line = line[:statusDetailBytes]
	}
	return result.Failure{Kind: result.BadStatus, Detail: printable(string(line), false, 0)}
}

// redirect is the failure of a 3xx response with a Location: reported,
// not followed.
func redirect(code int, location string) result.Failure {
	return result.Failure{Kind: result.Redirect, Detail: strconv.Itoa(code) + " to " + printable(location, false, locationBytes)}
}

// hasBody reports whether a final response with status code carries a body
// (RFC 9112 §6.3: not a 1xx, 204 or 304).
func hasBody(code int) bool {
	return code >= 200 && code != 204 && code != 304
}

// quotable reports whether the body of an error response is worth quoting
// in its failure text: not encoded, and declared as text, JSON or XML (an
// API's error object, a gateway's error page). A body of no declared type
// is not quoted: it may be anything.
func quotable(contentEncoding, contentType string) bool {
	if contentEncoding != "" && !strings.EqualFold(contentEncoding, "identity") {
		return false
	}
	t := strings.ToLower(strings.TrimSpace(contentType))
	return strings.HasPrefix(t, "text/") || strings.Contains(t, "json") || strings.Contains(t, "xml")
}

// withExcerpt returns status completed with the start of the body of its
// response: "status HTTP/1.1 429 Too Many Requests: {"error": …}". The
// reference's text stays a prefix. An HTML body loses its tags.
func withExcerpt(status result.Failure, body []byte, html bool) result.Failure {
	s := string(body)
	if html {
		s = stripTags(s)
	}
	if e := printable(s, true, statusExcerptBytes); e != "" {
		status.Detail += ": " + e
	}
	return status
}

// isHTML reports whether contentType is HTML's.
func isHTML(contentType string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(contentType)), "text/html")
}

// stripTags replaces the tags of an HTML text by spaces (an error page's
// "<h1>502 Bad Gateway</h1>" says "502 Bad Gateway"); an unclosed tag at
// the end is dropped.
func stripTags(s string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		j := strings.IndexByte(s[i:], '>')
		if j < 0 {
			return b.String()
		}
		b.WriteByte(' ')
		s = s[i+j+1:]
	}
}

// printable renders text a peer sent for a failure text: printable UTF-8
// as it is; control bytes and other unprintable runes as Go escapes (\x1b,
// \t, \u202e); each invalid UTF-8 byte as \xNN. With collapse, every run of
// spaces, tabs and line endings becomes one space, and leading and
// trailing ones go. With limit > 0 the result is cut, at a rune or escape
// boundary, to at most limit bytes followed by "...".
func printable(s string, collapse bool, limit int) string {
	var b strings.Builder
	space := false
	for i := 0; i < len(s); {
		c := s[i]
		if collapse && (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			space = true
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		var piece string
		switch {
		case r == utf8.RuneError && size <= 1:
			piece = `\x` + string("0123456789abcdef"[c>>4]) + string("0123456789abcdef"[c&15])
		case c >= 0x20 && c < 0x7f, r >= utf8.RuneSelf && unicode.IsPrint(r):
			piece = s[i : i+size]
		default:
			q := strconv.QuoteRuneToASCII(r)
			piece = q[1 : len(q)-1]
		}
		if space && b.Len() > 0 {
			piece = " " + piece
		}
		space = false
		if limit > 0 && b.Len()+len(piece) > limit {
			b.WriteString("...")
			return b.String()
		}
		b.WriteString(piece)
		i += size
	}
	return b.String()
}
