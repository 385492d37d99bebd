package check

// The multiplex scenario: n streams at once on ONE HTTP/2 connection to
// the gateway — or, with --http3, n bidirectional streams of one QUIC
// connection — (the client's group path, client.Options.StreamsPerConn),
// beside as many straight to the server (the calibration, as the timing
// rows run theirs). A gateway that serves HTTP/2 may still forward the
// streams of a connection one at a time, hold one stream's tokens behind
// another's, or reset them or GOAWAY under n, or allow fewer at once (a
// QUIC peer's MAX_STREAMS makes the client wait): the row sees each from the
// records — the server's emission times against the client's arrivals —
// and judges the tokens' flushing as the flush row does (flushRow).

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/sse-latency/sse-latency/internal/advice"

	"github.com/sse-latency/sse-latency/internal/client"
	"github.com/sse-latency/sse-latency/internal/result"
)

// The multiplex scenario's streams: MuxStreams at once by default
// (Options.StreamsPerConn), MuxTokens tokens each (200 ms at DelayMs):
// long enough that every stream's schedule overlaps every other's, so a
// stream's first token due before another's last must arrive before it.
const (
	MuxStreams = 8
	MuxTokens  = 40
)

// muxStream is what the multiplex row reads of one stream's record: its
// failure, its connection, and the times that order it against the
// others (0 when unknown).
type muxStream struct {
	failure       string // sanitised; "" when it completed
	kind          string // failures.Of(rec): "stream_reset", …
	conn          int64  // rec.ConnID
	retried       bool   // rec.ReuseFailed: refused before its response on the shared connection, sent again
	proto         string // rec.Proto
	start         int64  // the request began (its session waited for the shared connection from then)
	inFlight      int    // rec.Streams: streams in flight on the connection when its own began, itself included
	sent          int64  // the last request byte written
	serverArrived int64  // the server had read the request
	firstEmitted  int64  // the server wrote its first token
	lastEmitted   int64  // … its last
	firstArrived  int64  // the client read its first token
	lastArrived   int64  // … its last
}

// muxStreamOf reads rec.
func muxStreamOf(rec *result.Request) muxStream {
	m := muxStream{conn: rec.ConnID, retried: rec.ReuseFailed, proto: rec.Proto, start: rec.Start, inFlight: rec.Streams, sent: rec.Sent, serverArrived: rec.ServerArrived}
	if !rec.OK() {
		m.failure, m.kind = failureTexts(rec)[0], failureKinds(rec)[0]
	}
	for _, t := range rec.Tokens {
		if t.Emitted != 0 && (m.firstEmitted == 0 || t.Emitted < m.firstEmitted) {
			m.firstEmitted = t.Emitted
		}
		m.lastEmitted = max(m.lastEmitted, t.Emitted)
		if m.firstArrived == 0 || t.Arrived < m.firstArrived {
			m.firstArrived = t.Arrived
		}
		m.lastArrived = max(m.lastArrived, t.Arrived)
	}
	return m
}

// muxSkipReason says why the multiplex row cannot run against the
// client's target, "" when it can: HTTP/2 is negotiated by ALPN over TLS
// and spoken with prior knowledge (--h2c) in clear text; HTTP/3 (--http3,
// always TLS) multiplexes the streams of its QUIC connection.
func muxSkipReason(o client.Options) (reason, fix string) {
	switch {
	case o.HTTP3:
		return "", ""
	case o.TLS == nil && o.Scheme != "https" && !o.H2C:
		return "an http:// target speaks HTTP/1.1 unless told HTTP/2 with prior knowledge (--h2c): no streams to multiplex",
			"rerun with --h2c if the gateway speaks h2c, or give an https:// target that offers h2"
	}
	return "", ""
}

// muxOptions is the template of the multiplex streams: one group of n
// sessions sharing a connection, h2 offered in ALPN over TLS (whatever
// --http2 says: the row is about HTTP/2), h2c in clear text; with HTTP/3
// the streams of one QUIC connection (the client's h3 group).
func muxOptions(o client.Options, n int) client.Options {
	o.StreamsPerConn, o.KeepAlive = n, true
	if !o.HTTP3 && (o.TLS != nil || o.Scheme == "https") {
		o.HTTP2, o.H2C = true, false
	}
	return o
}

// multiplex runs the multiplex scenario.
func (c *checker) multiplex(ctx context.Context) Row {
	n := c.o.StreamsPerConn
	if n == 0 {
		n = MuxStreams
	}
	if why, fix := muxSkipReason(c.o.Client); why != "" {
		return Row{Status: Skip, Evidence: why, Fix: fix}
	}
	sp := spec{tokens: MuxTokens}
	q := c.request(sp, "mux")
	q.Options = muxOptions(q.Options, n)
	gw := make([]*result.Request, n)
	var loop []*result.Request
	var wg sync.WaitGroup
	wg.Go(func() {
		var all sync.WaitGroup
		for i := range gw {
			gw[i] = &result.Request{Batch: "gw", Index: int(c.seq.Add(1))}
			s := q.NewSession() // in order: session i joins group i/n, the one group
			all.Go(func() {
				defer s.Close()
				s.Do(ctx, gw[i])
			})
		}
		all.Wait()
	})
	direct := sp
	direct.direct = true
	wg.Go(func() { loop = c.doAll(ctx, direct, "muxl", n) })
	wg.Wait()
	s := streams{gw: gw, loop: loop}
	f := muxFacts{n: n, streams: make([]muxStream, n)}
	for i, r := range gw {
		f.streams[i] = muxStreamOf(r)
	}
	if len(failureTexts(gw...)) == 0 {
		f.flush = flushRow(judge(s.calibration(), gw), n)
	}
	return withKinds(multiplexRow(f), gw...)
}

// muxFacts are the figures of the multiplex scenario.
type muxFacts struct {
	n       int
	streams []muxStream
	flush   Row // the flush row of the streams, judged when all completed
}

// conns returns the distinct connections the streams went on, and their
// protocols.
func (f muxFacts) conns() (conns []int64, protos []string) {
	for _, s := range f.streams {
		if s.conn != 0 && !slices.Contains(conns, s.conn) {
			conns = append(conns, s.conn)
		}
		if s.proto != "" && !slices.Contains(protos, s.proto) {
			protos = append(protos, s.proto)
		}
	}
	return conns, protos
}

// muxOrder is how the streams of one connection were ordered against
// each other: the first pair (j, k) found where k waited for j, and how.
type muxOrder int

const (
	muxConcurrent muxOrder = iota // no stream waited for another
	muxQueued                     // the gateway forwarded k's request only once j's last token was out
	muxHeld                       // k's first token, emitted before j's last, arrived after it
)

// serialised looks for two streams that did not run at once, from the
// server's emission times and the client's arrivals — no threshold: k
// waited for j when its request, sent while j was still being emitted,
// reached the server only after j's last token was emitted (the gateway
// queued the requests); or when its first token, emitted before j's last,
// arrived after j's last (the gateway queued the responses). Streams
// without tokens are the failures' to report.
func serialised(ss []muxStream) (o muxOrder, j, k int) {
	for j, a := range ss {
		for k, b := range ss {
			if j == k || a.lastEmitted == 0 || b.firstEmitted == 0 {
				continue
			}
			if b.sent != 0 && b.sent < a.lastEmitted && b.serverArrived > a.lastEmitted {
				return muxQueued, j, k
			}
			if b.firstEmitted < a.lastEmitted && b.firstArrived > a.lastArrived {
				return muxHeld, j, k
			}
		}
	}
	return muxConcurrent, -1, -1
}

// multiplexRow is the multiplex scenario's row (muxVerdict), with the
// number of distinct connections its streams went on (Row.Connections).
func multiplexRow(f muxFacts) Row {
	row := muxVerdict(f)
	conns, _ := f.conns()
	row.Connections = len(conns)
	return row
}

// muxVerdict words the multiplex scenario: SKIP when the gateway chose
// HTTP/1.1 (ALPN); FAIL when a stream failed (a reset with its code, a
// GOAWAY, as the failures read), when the streams were serialised, or
// when their tokens were held (the flush row's verdict of them); WARN
// when the gateway refused streams before their response on the shared
// connection (a reset or a GOAWAY: the client sent them again), when the streams needed more than one connection (the
// gateway took fewer at once), when a stream's request could be sent only
// once another had ended (the gateway's stream limit: a QUIC client
// waits for MAX_STREAMS credit), or when the tool fell behind its own
// schedule; PASS when all n ran at once on one connection, each flushed.
func muxVerdict(f muxFacts) Row {
	n := f.n
	conns, protos := f.conns()
	if len(protos) == 1 && protos[0] == "HTTP/1.1" {
		return Row{Status: Skip, Requests: n, Fix: "enable HTTP/2 on the gateway's TLS listener to check its multiplexing",
			Evidence: "the gateway chose HTTP/1.1 in ALPN (h2 was offered): no streams to multiplex"}
	}
	var failed, texts []string
	for i, s := range f.streams {
		if s.failure == "" {
			continue
		}
		failed = append(failed, fmt.Sprint(i+1))
		what := s.failure
		if found := muxFinding(s.failure); found != "" {
			what = found + ": " + s.failure
		}
		if !slices.Contains(texts, what) {
			texts = append(texts, what)
		}
	}
	if len(failed) > 0 {
		var fs []string
		for _, s := range f.streams {
			if s.failure != "" && !slices.Contains(fs, s.failure) {
				fs = append(fs, s.failure)
			}
		}
		return Row{Status: Fail, Requests: n, Failures: fs, Advise: []advice.Key{advice.MuxStreams},
			Evidence: fmt.Sprintf("%d of %d streams on one connection failed (stream %s): %s",
				len(failed), n, strings.Join(failed, ", "), strings.Join(texts, "; "))}
	}
	var retried []string
	for i, s := range f.streams {
		if s.retried {
			retried = append(retried, fmt.Sprint(i+1))
		}
	}
	if len(retried) > 0 {
		// MuxRefused, not MuxStreams: the streams ran at once; what
		// turned them away is a cap on a connection's requests (or a
		// reload's GOAWAY), a setting MuxStreams does not name.
		return Row{Status: Warn, Requests: n, Advise: []advice.Key{advice.MuxRefused},
			Evidence: fmt.Sprintf("%d of %d streams refused before their response on the shared connection (stream %s; a reset or a GOAWAY) and sent again",
				len(retried), n, strings.Join(retried, ", "))}
	}
	if len(conns) > 1 {
		return Row{Status: Warn, Requests: n, Advise: []advice.Key{advice.MuxStreams},
			Evidence: fmt.Sprintf("the %d streams needed %d connections: the gateway took fewer at once on one (%s, or a GOAWAY)",
				n, len(conns), streamLimit(protos))}
	}
	if j, k := limited(f.streams); k >= 0 {
		return Row{Status: Warn, Requests: n, Advise: []advice.Key{advice.MuxStreams},
			Evidence: fmt.Sprintf("stream %d's request, begun while stream %d was streaming, was sent only after stream %d's last token was out: "+
				"the gateway allows fewer than %d streams at once on one connection%s (%s)", k+1, j+1, j+1, n, f.peak(), streamLimit(protos))}
	}
	switch o, j, k := serialised(f.streams); o {
	case muxQueued:
		return Row{Status: Fail, Requests: n, Advise: []advice.Key{advice.MuxStreams},
			Evidence: fmt.Sprintf("serialised: stream %d's request, sent while stream %d was streaming, reached the server only after stream %d's last token was out: "+
				"the gateway forwards the streams of one connection one at a time", k+1, j+1, j+1)}
	case muxHeld:
		return Row{Status: Fail, Requests: n, Advise: []advice.Key{advice.MuxStreams},
			Evidence: fmt.Sprintf("serialised: stream %d's first token, emitted before stream %d's last, arrived after it: "+
				"the gateway held one stream's tokens behind another's", k+1, j+1)}
	}
	proto := strings.Join(protos, ", ")
	switch fl := f.flush; fl.Status {
	case Fail:
		return Row{Status: Fail, Requests: n, Signature: fl.Signature, Advise: append(slices.Clone(fl.Advise), advice.MuxStreams),
			Evidence: fmt.Sprintf("a stream's tokens held, %d streams on one %s connection: %s", n, proto, fl.Evidence)}
	case Warn:
		return Row{Status: Warn, Requests: n, Fix: fl.Fix, Evidence: fl.Evidence}
	}
	return Row{Status: Pass, Requests: n, Signature: f.flush.Signature,
		Evidence: fmt.Sprintf("%d streams at once on one %s connection, each flushed: %s", n, proto, f.flush.Evidence)}
}

// h2Reset and h2GoAway read an HTTP/2 failure's text as the client words
// it (x/net's http2.StreamError, a GOAWAY error): the error code.
var (
	h2Reset  = regexp.MustCompile(`stream error: stream ID \d+; ([A-Z_0-9]+)`)
	h2GoAway = regexp.MustCompile(`GOAWAY.*?ErrCode[:=]\s*([A-Z_0-9]+)`)
)

// h2Finding names what an HTTP/2 failure text says happened: "reset
// (CODE)", "GOAWAY (CODE)" or "GOAWAY"; "" for another failure.
func h2Finding(failure string) string {
	if m := h2Reset.FindStringSubmatch(failure); m != nil {
		return "reset (" + m[1] + ")"
	}
	if strings.Contains(failure, "GOAWAY") {
		if m := h2GoAway.FindStringSubmatch(failure); m != nil {
			return "GOAWAY (" + m[1] + ")"
		}
		return "GOAWAY"
	}
	return ""
}

// peak words the most streams the client counted in flight at once on
// the connection (the records' Streams: a stream the peer has ended
// counts until the client read its end, so the limit may be one or two
// below), "" when it counted none.
func (f muxFacts) peak() string {
	most := 0
	for _, s := range f.streams {
		most = max(most, s.inFlight)
	}
	if most == 0 {
		return ""
	}
	return fmt.Sprintf(", at most %d in flight at once", most)
}

// limited looks for a stream whose request the client could not send
// until another stream had ended — no threshold: k began while j's
// tokens were still being emitted, and its last request byte was written
// only after j's last token was emitted. A QUIC client waits so for the
// peer's MAX_STREAMS credit (the stream limit reached: quic-go's
// OpenStreamSync), the credit coming back once a stream has ended. It
// returns the pair, (-1, -1) when no stream waited.
func limited(ss []muxStream) (j, k int) {
	for j, a := range ss {
		for k, b := range ss {
			if j == k || a.lastEmitted == 0 || b.start == 0 || b.sent == 0 {
				continue
			}
			if b.start < a.lastEmitted && b.sent > a.lastEmitted {
				return j, k
			}
		}
	}
	return -1, -1
}

// streamLimit names the setting that limits the streams of one
// connection of protos: HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS, or over
// HTTP/3 the QUIC transport's MAX_STREAMS (QUIC has no SETTINGS that
// says it: the client learns it only by waiting for a stream).
func streamLimit(protos []string) string {
	if slices.Contains(protos, client.ProtoH3) {
		return "its MAX_STREAMS: QUIC has no SETTINGS to read the limit from, the client waits for stream credit"
	}
	return "its SETTINGS_MAX_CONCURRENT_STREAMS"
}

// muxFinding names what a stream's failure text says happened over HTTP/3
// (h3Finding, whose words are its own: first, as its GOAWAY would read
// as h2Finding's) or HTTP/2 (h2Finding); "" for another failure.
func muxFinding(failure string) string {
	if f := h3Finding(failure); f != "" {
		return f
	}
	return h2Finding(failure)
}

// h3Reset and h3Closed read an HTTP/3 failure's text as the
// client words quic-go's errors (a quic.StreamError, a
// quic.ApplicationError, their code as http3.ErrCode says it: "H3_…", or
// "unknown error code: 0x…").
var (
	h3Reset  = regexp.MustCompile(`HTTP/3 stream reset by the peer: (unknown error code: )?([A-Za-z_0-9]+)`)
	h3Closed = regexp.MustCompile(`HTTP/3 connection closed by the peer: (unknown error code: )?([A-Za-z_0-9]+)`)
)

// h3Finding names what an HTTP/3 failure text says happened: "reset
// (CODE)" for a stream the peer reset (RESET_STREAM), "connection closed
// (CODE)", "GOAWAY (stream not served)" for a stream the gateway's GOAWAY
// left out, "stream limit (MAX_STREAMS)" for a request whose time ran out
// waiting for a stream; "" for another failure.
func h3Finding(failure string) string {
	if m := h3Reset.FindStringSubmatch(failure); m != nil {
		return "reset (" + m[2] + ")"
	}
	if m := h3Closed.FindStringSubmatch(failure); m != nil {
		return "connection closed (" + m[2] + ")"
	}
	switch {
	case strings.Contains(failure, "HTTP/3: the gateway sent GOAWAY: stream not served"):
		return "GOAWAY (stream not served)"
	case strings.Contains(failure, "the gateway's stream limit (MAX_STREAMS) was reached"):
		return "stream limit (MAX_STREAMS)"
	}
	return ""
}
