package client

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Sent is the head of a request as the client sends it, secrets
// redacted (Redact): what a report records of what went on the wire.
type Sent struct {
	Proto   string   `json:"proto"`   // "HTTP/1.1", "h2" (offered by ALPN; HTTP/1.1 if refused), "h2c", "h3" (QUIC), "websocket" (an HTTP/1.1 upgrade)
	Method  string   `json:"method"`  // "POST", "GET" for the WebSocket upgrade
	Path    string   `json:"path"`    // the request target
	Headers []string `json:"headers"` // "Name: value", in the order sent (HTTP/2: the pseudo-fields first, then by name)
}

// SentHead returns the head of the request with id id ("" for none) as
// it goes on the wire, secrets redacted: the HTTP/1.1 head of AppendHTTP,
// the WebSocket upgrade of AppendUpgrade (with a placeholder key), or the
// HTTP/2 (and HTTP/3) fields of the round trip.
func (q *Request) SentHead(id string) Sent {
	switch {
	case q.WebSocket:
		s := sentOf(string(q.AppendUpgrade(nil, "<Sec-WebSocket-Key>")))
		s.Proto = "websocket"
		return s
	case q.HTTP3:
		s := q.sentH2(id)
		s.Proto = ProtoH3
		return s
	case q.tlsConfig() == nil && q.H2C, q.tlsConfig() != nil && q.HTTP2:
		return q.sentH2(id)
	}
	raw := string(q.AppendHTTP(nil, id))
	head, _, _ := strings.Cut(raw, "\r\n\r\n")
	return sentOf(head)
}

// sentOf reads an HTTP/1.1 head: the request line, then the fields.
func sentOf(head string) Sent {
	lines := strings.Split(strings.TrimRight(head, "\r\n"), "\r\n")
	s := Sent{Proto: ProtoHTTP1, Headers: []string{}}
	if f := strings.Fields(lines[0]); len(f) == 3 {
		s.Method, s.Path = f[0], f[1]
	}
	for _, l := range lines[1:] {
		s.Headers = append(s.Headers, Redact(l))
	}
	return s
}

// sentH2 is the HTTP/2 form: :authority and the fields of
// newHTTPRequest, by name.
func (q *Request) sentH2(id string) Sent {
	proto, scheme := ProtoH2C, "http"
	if q.tlsConfig() != nil {
		proto, scheme = ProtoH2, "https"
	}
	s := Sent{Proto: proto, Method: "POST", Headers: []string{}}
	req, err := q.newHTTPRequest(context.Background(), id, scheme)
	if err != nil {
		return s
	}
	s.Path = req.URL.RequestURI()
	s.Headers = append(s.Headers, ":authority: "+req.Host)
	for _, name := range slices.Sorted(maps.Keys(req.Header)) {
		for _, v := range req.Header[name] {
			if v != "" {
				s.Headers = append(s.Headers, Redact(strings.ToLower(name)+": "+v))
			}
		}
	}
	s.Headers = append(s.Headers, "content-length: "+strconv.FormatInt(req.ContentLength, 10))
	return s
}
