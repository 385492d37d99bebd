package check

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/advice"
	gwid "github.com/sse-latency/sse-latency/internal/gateway"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

// TestRowOutcomes renders every row for every outcome it can have, from
// the figures a scenario measures, and checks that the evidence is there,
// says what the figures say (each of them appears in it), and that a row
// that does not pass calls for advice.
func TestRowOutcomes(t *testing.T) {
	buffered := verdict.Verdict{Class: verdict.Buffers, Tokens: 472, CoalescedFraction: 0.98, BurstPeriodMs: 90,
		Signature: &verdict.Signature{Kind: verdict.TimePeriod, Evidence: "released every ~90 ms (quartile spread 0.00), ~18 tokens at a time", PeriodMs: 90}}
	nagle := buffered
	nagle.BurstPeriodMs = 40
	whole := verdict.Verdict{Class: verdict.Buffers, Tokens: 472, CoalescedFraction: 1, HoldRequests: 4, FirstTokenHoldMs: 297.5, FollowingMs: 300.1,
		Signature: &verdict.Signature{Kind: verdict.WholeResponse, Evidence: "100% of the tokens arrived after their response's last token was emitted"}}
	noSig := verdict.Verdict{Class: verdict.Buffers, Tokens: 472, CoalescedFraction: 0.75}
	flushing := verdict.Verdict{Class: verdict.Flushes, AddedP50Ms: 0.051, HoldRequests: 4, FirstTokenHoldMs: 0.02, FollowingMs: 0.051,
		Signature: &verdict.Signature{Kind: verdict.FlushPerEvent, Evidence: "each token arrived on its own, 0.051 ms after its emission (p50)"}}
	noisy := flushing
	noisy.Noisy, noisy.LoopCoalesced = true, 0.42
	unknown := verdict.Verdict{Class: verdict.Unknown, Reason: "too few tokens to judge (12 analysable, need 20)"}
	warnHold := flushing
	warnHold.FirstTokenHold, warnHold.FirstTokenHoldLevel, warnHold.FirstTokenHoldMs = true, verdict.HoldWarn, 26.9
	failHold := flushing
	failHold.FirstTokenHold, failHold.FirstTokenHoldLevel, failHold.FirstTokenHoldMs = true, verdict.HoldFail, 250.4
	noFirst := verdict.Verdict{Class: verdict.Flushes}
	gz := buffered
	gz.Signature = &verdict.Signature{Kind: verdict.Compression, Shape: verdict.WholeResponse, Encoding: "gzip",
		Evidence: "100% of the tokens arrived after their response's last token was emitted"}
	fails := []string{"connection closed before [DONE]"}
	tests := []struct {
		name   string
		row    Row
		status Status
		says   []string     // what the evidence must say: the figures the row was given
		keys   []advice.Key // the advice it calls for
	}{
		{"flush buffered", flushRow(buffered, 4), Fail, []string{"time period", "~90 ms", "~18 tokens"}, []advice.Key{advice.TimePeriod}},
		{"flush nagle", flushRow(nagle, 4), Fail, []string{"time period"}, []advice.Key{advice.Nagle, advice.TimePeriod}},
		{"flush without signature", flushRow(noSig, 4), Fail, []string{"75% of 472 tokens"}, []advice.Key{advice.ByteThreshold}},
		{"flush whole", flushRow(whole, 4), Fail, []string{"whole response", "100%"}, []advice.Key{advice.WholeResponse}},
		{"flush passes", flushRow(flushing, 4), Pass, []string{"0.051 ms"}, nil},
		{"flush passes noisy", flushRow(noisy, 4), Pass, []string{"0.051 ms", "42%"}, nil},
		{"flush unknown", flushRow(unknown, 4), Warn, []string{Overloaded, "4 streams", "12 analysable"}, nil},
		{"first-token fails", firstTokenRow(failHold, 4), Fail, []string{"250.4 ms later", "0.051 ms", "p50 of 4 streams", "50 ms or more"}, []advice.Key{advice.FirstTokenHold}},
		{"first-token warns", firstTokenRow(warnHold, 4), Warn, []string{"26.9 ms later", "0.051 ms", "10 to 50 ms"}, []advice.Key{advice.FirstTokenHold}},
		{"first-token buffered", firstTokenRow(whole, 4), Warn, []string{"597.6 ms after its emission", "300.1 ms", "the flush row"}, []advice.Key{advice.WholeResponse}},
		{"first-token passes", firstTokenRow(flushing, 4), Pass, []string{"0.071 ms after its emission", "0.020 ms beyond"}, nil},
		{"first-token none", firstTokenRow(noFirst, 4), Fail, []string{"no stream brought its first tokens", "no failure recorded"}, []advice.Key{advice.StreamBroken}},
		{"compression off", compressionRow("", verdict.Verdict{}, 4), Pass, []string{"not compressed"}, nil},
		{"compression holds", compressionRow("gzip", gz, 4), Fail, []string{"compression (gzip, whole response)"}, []advice.Key{advice.Compression}},
		{"compression flushes", compressionRow("gzip", flushing, 4), Pass, []string{"0.051 ms"}, nil},
		{"large-event fails", largeEventRow(false, 0, fails), Fail, []string{"64 KB", fails[0]}, []advice.Key{advice.LargeEvent}},
		{"large-event rebuilt", largeEventRow(true, 2345, nil), Warn, []string{"2345 bytes", "65536"}, []advice.Key{advice.EventRebuilt}},
		{"large-event passes", largeEventRow(true, 68193, nil), Pass, []string{"68193 bytes"}, nil},
		{"utf8 broken", utf8Row(false, true, []string{"integrity error: token 3"}), Fail, []string{"integrity error: token 3"}, []advice.Key{advice.UTF8Split}},
		{"utf8 failed", utf8Row(false, false, fails), Fail, []string{fails[0]}, []advice.Key{advice.StreamBroken}},
		{"utf8 passes", utf8Row(true, false, nil), Pass, []string{"8 tokens"}, nil},
		{"line-endings CR", lineEndingsRow(true, false, false, fails), Fail, []string{"with CR line endings", fails[0]}, []advice.Key{advice.LineEndings}},
		{"line-endings both", lineEndingsRow(false, false, false, fails), Fail, []string{"CRLF and CR"}, []advice.Key{advice.LineEndings}},
		{"line-endings comments dropped", lineEndingsRow(true, true, false, nil), Pass, []string{"comments were dropped"}, nil},
		{"sse-framing broken", sseFramingRow(4, []string{"a byte order mark first (8 events, the plain stream 9: the gateway read its lines otherwise)"}, nil, nil),
			Fail, []string{"spec-valid streams broken", "byte order mark", "8 events"}, []advice.Key{advice.SSEFraming}},
		{"sse-framing reframed", sseFramingRow(4, nil, []string{"each JSON payload over two data lines"}, nil), Pass,
			[]string{"re-framed each JSON payload over two data lines"}, nil},
		{"sse-framing passes", sseFramingRow(4, nil, nil, nil), Pass, []string{"as sent"}, nil},
		{"line-endings passes", lineEndingsRow(true, true, true, nil), Pass, []string{"comments passed"}, nil},
		{"usage fails", usageRow(false, fails), Fail, []string{fails[0]}, []advice.Key{advice.UsageDropped}},
		{"usage passes", usageRow(true, nil), Pass, []string{"usage arrived"}, nil},
		{"usage-fidelity failed", usageFidelityRow(false, true, nil, fails), Fail, []string{fails[0]}, []advice.Key{advice.UsageRewritten}},
		{"usage-fidelity not compared", usageFidelityRow(true, false, nil, nil), Warn, []string{"not found"}, nil},
		{"usage-fidelity rewritten", usageFidelityRow(true, true, []string{"zeroed_from_null usage chunk prompt_tokens_details.cached_tokens (null -> 0)"}, nil), Fail,
			[]string{"null -> 0"}, []advice.Key{advice.UsageRewritten}},
		{"usage-fidelity passes", usageFidelityRow(true, true, nil, nil), Pass, []string{"5987"}, nil},
		{"terminal fails", terminalRow(false, nil), Fail, []string{"no failure recorded"}, []advice.Key{advice.TerminalDropped}},
		{"terminal passes", terminalRow(true, nil), Pass, []string{"terminal event"}, nil},
		{"cut error event", upstreamCutRow(cutErrorEvent, 3, "stream error", "upstream gone"), Pass, []string{"after 3 tokens", "upstream gone"}, nil},
		{"cut aborted", upstreamCutRow(cutAborted, 3, fails[0], ""), Pass, []string{"after 3 tokens"}, nil},
		{"cut clean end", upstreamCutRow(cutCleanEnd, 3, fails[0], ""), Fail, []string{"3 of 10 tokens"}, []advice.Key{advice.UpstreamCutHidden}},
		{"cut terminal", upstreamCutRow(cutTerminal, 3, "integrity error: 7 tokens missing", ""), Fail, []string{"3 of 10 tokens", "7 tokens missing"}, []advice.Key{advice.UpstreamCutHidden}},
		{"cut other", upstreamCutRow(cutOther, 2, "timeout", ""), Warn, []string{"after 3 tokens", "after 2", "timeout"}, []advice.Key{advice.UpstreamCutHidden}},
		{"error-status fails", errorStatusRow([]string{"429"}, []string{"500 became 502"}, nil), Fail, []string{"500 became 502"}, []advice.Key{advice.ErrorStatus}},
		{"error-status passes", errorStatusRow([]string{"429", "500"}, nil, nil), Pass, []string{"429, 500"}, nil},
		{"cancel seen", cancelRow(cancelFacts{outcome: cancelSeen, goneIn: 10 * time.Millisecond, emitted: 5, after: 1}, nil), Pass,
			[]string{"10.0 ms after the cancel", "5 of 400 tokens", "1 after"}, nil},
		{"cancel streaming", cancelRow(cancelFacts{outcome: cancelStreaming, after: 201}, nil), Fail, []string{"1s after", "201 tokens"}, []advice.Key{advice.CancelIgnored}},
		{"cancel read whole", cancelRow(cancelFacts{outcome: cancelReadWhole, after: 393}, nil), Fail, []string{"the last 393 of 400"}, []advice.Key{advice.CancelIgnored}},
		{"cancel untestable", cancelRow(cancelFacts{outcome: cancelUntestable, emitted: 400}, []advice.Key{advice.WholeResponse}), Warn,
			[]string{"cancel could not be tested: the gateway released nothing before the stream ended", "emitted 400"}, []advice.Key{advice.WholeResponse}},
		{"cancel untestable, some released", cancelRow(cancelFacts{outcome: cancelUntestable, received: 2, emitted: 400}, nil), Warn,
			[]string{"released only 2 of 400 tokens", "emitted 400"}, []advice.Key{advice.WholeResponse}},
		{"cancel ended", cancelRow(cancelFacts{outcome: cancelEnded, received: 1, failures: fails}, nil), Fail, []string{"after 1 tokens", fails[0]}, []advice.Key{advice.StreamBroken}},
		{"large-body fails", largeBodyRow(false, 0, 0, true, []string{"HTTP/1.1 413"}), Fail, []string{"1 MB", "413"}, []advice.Key{advice.LargeBody}},
		{"large-body slow", largeBodyRow(true, 2500*time.Millisecond, 100*time.Millisecond, true, nil), Warn, []string{"2500.0 ms", "100.0 ms", "2.4 s more"}, []advice.Key{advice.LargeBodySlow}},
		{"large-body passes", largeBodyRow(true, 319200*time.Microsecond, 20800*time.Microsecond, true, nil), Pass, []string{"319.2 ms", "20.8 ms"}, nil},
		{"keepalive failed", keepaliveRow(keepaliveFacts{failures: fails}), Fail, []string{fails[0]}, []advice.Key{advice.StreamBroken}},
		{"keepalive poisoned", keepaliveRow(keepaliveFacts{poisoned: true}), Fail, []string{"did not end at its framing"}, []advice.Key{advice.KeepaliveBroken}},
		{"keepalive broken", keepaliveRow(keepaliveFacts{reuseFailed: true, reused: 1}), Fail, []string{"closed a kept connection"}, []advice.Key{advice.KeepaliveBroken}},
		{"keepalive closed", keepaliveRow(keepaliveFacts{reused: 1}), Warn, []string{"1 of 2 requests"}, []advice.Key{advice.KeepaliveClosed}},
		{"keepalive passes", keepaliveRow(keepaliveFacts{reused: 2}), Pass, []string{"3 streams"}, nil},
		{"silence fails", silenceRow("mid-answer", false, 60100*time.Millisecond, fails), Fail, []string{"1m5s mid-answer", "60.1 s", fails[0]}, []advice.Key{advice.IdleCut}},
		{"silence passes", silenceRow("before the first token", true, 0, nil), Pass, []string{"1m5s of silence before the first token"}, nil},
		{"multiplex HTTP/1.1", multiplexRow(muxFacts{n: 8, streams: muxOf(8, func(int, *muxStream) {}, "HTTP/1.1")}), Skip,
			[]string{"chose HTTP/1.1 in ALPN"}, nil},
		{"multiplex reset", multiplexRow(muxFacts{n: 8, streams: muxOf(8, func(i int, s *muxStream) {
			if i == 2 {
				s.failure = "recv error: stream error: stream ID 7; INTERNAL_ERROR; received from peer"
			}
		}, "h2c")}), Fail, []string{"1 of 8 streams", "(stream 3)", "reset (INTERNAL_ERROR)"}, []advice.Key{advice.MuxStreams}},
		{"multiplex goaway", multiplexRow(muxFacts{n: 4, streams: muxOf(4, func(i int, s *muxStream) {
			if i > 1 {
				s.failure = "recv error: http2: Transport received GOAWAY from server ErrCode:ENHANCE_YOUR_CALM"
			}
		}, "h2")}), Fail, []string{"2 of 4 streams", "(stream 3, 4)", "GOAWAY (ENHANCE_YOUR_CALM)"}, []advice.Key{advice.MuxStreams}},
		{"multiplex retried", multiplexRow(muxFacts{n: 8, flush: flushRow(flushing, 8), streams: muxOf(8, func(i int, s *muxStream) { s.retried = i == 5 }, "h2")}), Warn,
			[]string{"1 of 8 streams refused before their response", "(stream 6; a reset or a GOAWAY)", "and sent again"}, []advice.Key{advice.MuxRefused}},
		{"multiplex retried twice", multiplexRow(muxFacts{n: 8, flush: flushRow(flushing, 8), streams: muxOf(8, func(i int, s *muxStream) { s.retried = i == 1 || i == 6 }, "h2")}), Warn,
			[]string{"2 of 8 streams refused before their response on the shared connection", "(stream 2, 7; a reset or a GOAWAY)", "and sent again"}, []advice.Key{advice.MuxRefused}},
		{"multiplex two connections", multiplexRow(muxFacts{n: 8, flush: flushRow(flushing, 8), streams: muxOf(8, func(i int, s *muxStream) { s.conn = int64(1 + i/4) }, "h2")}), Warn,
			[]string{"8 streams needed 2 connections"}, []advice.Key{advice.MuxStreams}},
		{"multiplex queued", multiplexRow(muxFacts{n: 3, flush: flushRow(flushing, 3), streams: muxOf(3, func(i int, s *muxStream) { s.shift(int64(i) * 300e6) }, "h2c")}), Fail,
			[]string{"serialised", "stream 2's request", "stream 1's last token", "one at a time"}, []advice.Key{advice.MuxStreams}},
		{"multiplex held", multiplexRow(muxFacts{n: 3, flush: flushRow(flushing, 3), streams: muxOf(3, func(i int, s *muxStream) {
			if i == 1 {
				s.firstArrived, s.lastArrived = 400e6, 600e6
			}
		}, "h2c")}), Fail, []string{"serialised", "stream 2's first token", "stream 1's last"}, []advice.Key{advice.MuxStreams}},
		{"multiplex buffered", multiplexRow(muxFacts{n: 8, flush: flushRow(buffered, 8), streams: muxOf(8, func(int, *muxStream) {}, "h2")}), Fail,
			[]string{"a stream's tokens held", "8 streams on one h2 connection", "time period", "~90 ms"}, []advice.Key{advice.TimePeriod, advice.MuxStreams}},
		{"multiplex unknown", multiplexRow(muxFacts{n: 8, flush: flushRow(unknown, 8), streams: muxOf(8, func(int, *muxStream) {}, "h2")}), Warn,
			[]string{Overloaded, "12 analysable"}, nil},
		{"multiplex passes", multiplexRow(muxFacts{n: 8, flush: flushRow(flushing, 8), streams: muxOf(8, func(int, *muxStream) {}, "h2")}), Pass,
			[]string{"8 streams at once on one h2 connection", "0.051 ms"}, nil},
	}
	for _, tt := range tests {
		r := tt.row
		if r.Status != tt.status {
			t.Errorf("%s: status %s, want %s (%s)", tt.name, r.Status, tt.status, r.Evidence)
		}
		e := r.Evidence
		if strings.TrimSpace(e) == "" || strings.HasSuffix(e, ":") || strings.HasSuffix(e, ": ") || strings.Contains(e, "%!") {
			t.Errorf("%s: evidence %q: empty, dangling or misformatted", tt.name, e)
		}
		for _, s := range tt.says {
			if !strings.Contains(e, s) {
				t.Errorf("%s: evidence %q does not say %q", tt.name, e, s)
			}
		}
		if !slices.Equal(r.Advise, tt.keys) {
			t.Errorf("%s: calls for %v, want %v", tt.name, r.Advise, tt.keys)
		}
		if r.Status != Pass && len(r.Advise) == 0 && r.Fix == "" {
			t.Errorf("%s: a %s row without a fix", tt.name, r.Status)
		}
		if r.Requests == 0 {
			t.Errorf("%s: no requests counted", tt.name)
		}
		// The identified gateway's advice, or the generic one.
		c := &checker{id: &gwid.Identity{Name: gwid.Lighttpd}}
		c.advise(&r)
		if r.Status != Pass && len(tt.keys) > 0 && (r.Fix == "" || len(r.Advice) != len(tt.keys)) {
			t.Errorf("%s: after advise, fix %q and %d advice; want one per key", tt.name, r.Fix, len(r.Advice))
		}
		if r.Status == Pass && (r.Fix != "" || r.Advice != nil) {
			t.Errorf("%s: a passing row with fix %q", tt.name, r.Fix)
		}
	}
}

// TestMultiplexConnections: the multiplex row counts the distinct
// connections its streams went on (Row.Connections), whatever its
// verdict; a stream without one (it failed before connecting) does not
// count.
func TestMultiplexConnections(t *testing.T) {
	flushing := verdict.Verdict{Class: verdict.Flushes, AddedP50Ms: 0.051}
	for _, tt := range []struct {
		name string
		edit func(i int, s *muxStream)
		want int
	}{
		{"one connection", func(int, *muxStream) {}, 1},
		{"two connections", func(i int, s *muxStream) { s.conn = int64(1 + i/4) }, 2},
		{"a refused stream sent again on another", func(i int, s *muxStream) {
			if i == 5 {
				s.retried, s.conn = true, 2
			}
		}, 2},
		{"one on each", func(i int, s *muxStream) { s.conn = int64(i + 1) }, 8},
		{"one never connected", func(i int, s *muxStream) {
			if i == 0 {
				s.conn, s.failure = 0, "connect error: connection refused"
			}
		}, 1},
	} {
		r := multiplexRow(muxFacts{n: 8, flush: flushRow(flushing, 8), streams: muxOf(8, tt.edit, "h2")})
		if r.Connections != tt.want {
			t.Errorf("%s: multiplexRow counts %d connections (%s %s), want %d", tt.name, r.Connections, r.Status, r.Evidence, tt.want)
		}
	}
}

// TestRowAdvice: the fix is the identified gateway's own setting, never
// another's; for a gateway not identified the generic one, with the
// others as "if your gateway is …".
func TestRowAdvice(t *testing.T) {
	whole := verdict.Verdict{Class: verdict.Buffers, Tokens: 472, CoalescedFraction: 1,
		Signature: &verdict.Signature{Kind: verdict.WholeResponse, Evidence: "100% of the tokens arrived after their response's last token was emitted"}}
	r := flushRow(whole, 4)
	(&checker{id: &gwid.Identity{Name: gwid.Lighttpd}}).advise(&r)
	if !strings.Contains(r.Fix, "server.stream-response-body = 2") || len(r.Advice) != 1 || r.Advice[0].Gateway != gwid.Lighttpd || r.Advice[0].Others != nil {
		t.Errorf("lighttpd holding the whole response: fix %q, advice %+v", r.Fix, r.Advice)
	}
	r = flushRow(whole, 4)
	(&checker{id: &gwid.Identity{}}).advise(&r)
	if strings.Contains(r.Fix, "lighttpd") || len(r.Advice) != 1 || r.Advice[0].Gateway != gwid.Unknown || len(r.Advice[0].Others) == 0 {
		t.Errorf("an unknown gateway holding the whole response: fix %q, advice %+v", r.Fix, r.Advice)
	}
}

// muxOf makes n streams of MuxTokens tokens on connection 1 over proto,
// all sent at 0, each token emitted every 5 ms from 1 ms and arriving
// 0.1 ms later; edit changes stream i.
func muxOf(n int, edit func(i int, s *muxStream), proto string) []muxStream {
	out := make([]muxStream, n)
	for i := range out {
		s := muxStream{conn: 1, proto: proto, sent: 1, serverArrived: 500e3, firstEmitted: 1e6, lastEmitted: 1e6 + 5e6*(MuxTokens-1)}
		s.firstArrived, s.lastArrived = s.firstEmitted+100e3, s.lastEmitted+100e3
		edit(i, &s)
		out[i] = s
	}
	return out
}

// shift delays the stream's server side and arrivals by d ns (its
// request reached the server d later).
func (s *muxStream) shift(d int64) {
	s.serverArrived += d
	s.firstEmitted += d
	s.lastEmitted += d
	s.firstArrived += d
	s.lastArrived += d
}
