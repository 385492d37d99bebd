package verdict_test

import (
	"math"
	"strings"
	"testing"

	"github.com/sse-latency/sse-latency/internal/summary/summarytest"
	"github.com/sse-latency/sse-latency/internal/verdict"
)

const ms = int64(1_000_000)

// classify runs Classify on records built from the emission e, released
// by rel, for 3 requests (no calibration).
func classify(e summarytest.Emission, rel summarytest.Release, encoding string) verdict.Verdict {
	gw := verdict.NewAccumulator()
	b := summarytest.Batch()
	for i := range 3 {
		e := e
		e.Start += int64(i) * 10_000 * ms
		r := summarytest.Released("gw", i, e, rel, encoding)
		gw.Add(r)
		b.Add(r)
	}
	return verdict.Classify(nil, gw, nil, b)
}

// TestSignature classifies streams released as each kind of gateway
// releases them — with and without a pause in the emission, which is what
// tells a buffer that fills from a timer — and checks the class, the kind,
// the estimates and that the evidence says so.
func TestSignature(t *testing.T) {
	plain := summarytest.Emission{Start: summarytest.Base, Tokens: 200, Gap: 5 * ms, EventBytes: 250}
	paused := summarytest.Emission{Start: summarytest.Base, Tokens: 120, Gap: 5 * ms, EventBytes: 250, StallAfter: 90, Stall: 400 * ms}
	tests := []struct {
		name     string
		e        summarytest.Emission
		rel      summarytest.Release
		encoding string
		class    verdict.Class
		kind     verdict.SignatureKind
		shape    verdict.SignatureKind
		size     float64 // bytes per release, ±15 %; 0: not checked
		period   float64 // ms, ±10 %; 0: not checked
		evidence string
	}{
		{name: "flush", e: plain, rel: summarytest.Flush(100_000), class: verdict.Flushes, kind: verdict.FlushPerEvent,
			evidence: "each token arrived on its own, 0.100 ms after its emission"},
		{name: "flush, paused", e: paused, rel: summarytest.Flush(100_000), class: verdict.Flushes, kind: verdict.FlushPerEvent},
		{name: "a delay of one gap is not one behind, when a pause shows it", e: paused, rel: summarytest.Delay(5 * ms),
			class: verdict.Flushes, kind: verdict.FlushPerEvent},
		{name: "flush, gzip", e: plain, rel: summarytest.Flush(100_000), encoding: "gzip", class: verdict.Flushes,
			kind: verdict.FlushPerEvent, evidence: "gzip-encoded, each token arrived on its own"},
		{name: "16 KB buffer, paused", e: paused, rel: summarytest.ByteThreshold(16384, 100_000), class: verdict.Buffers,
			kind: verdict.ByteThreshold, size: 16384, evidence: "released in blocks of ~16."},
		{name: "16 KB buffer", e: plain, rel: summarytest.ByteThreshold(16384, 100_000), class: verdict.Buffers,
			kind: verdict.ByteThreshold, size: 16384},
		{name: "4 KB buffer", e: plain, rel: summarytest.ByteThreshold(4096, 100_000), class: verdict.Buffers,
			kind: verdict.ByteThreshold, size: 4096},
		{name: "250 ms flush period, paused", e: paused, rel: summarytest.TimePeriod(250*ms, 100_000), class: verdict.Buffers,
			kind: verdict.TimePeriod, period: 250, evidence: "released every ~250 ms"},
		{name: "100 ms flush period", e: plain, rel: summarytest.TimePeriod(100*ms, 100_000), class: verdict.Buffers,
			kind: verdict.TimePeriod, period: 100},
		{name: "one event behind", e: plain, rel: summarytest.OneBehind(100_000), class: verdict.Buffers, kind: verdict.OneEventBehind,
			evidence: "arrived when the next one was emitted"},
		{name: "one event behind, paused", e: paused, rel: summarytest.OneBehind(100_000), class: verdict.Buffers, kind: verdict.OneEventBehind},
		{name: "whole response", e: plain, rel: summarytest.Whole(100_000), class: verdict.Buffers, kind: verdict.WholeResponse,
			evidence: "100% of the tokens arrived after their response's last token was emitted"},
		{name: "dispatch bursts", e: plain, rel: summarytest.Dispatch(7, 2*ms, 30*ms), class: verdict.Buffers, kind: verdict.DispatchBursts,
			evidence: "irregular releases"},
		{name: "dispatch bursts, paused", e: paused, rel: summarytest.Dispatch(7, 2*ms, 30*ms), class: verdict.Buffers, kind: verdict.DispatchBursts},
		{name: "gzip, whole", e: plain, rel: summarytest.Whole(100_000), encoding: "gzip", class: verdict.Buffers,
			kind: verdict.Compression, shape: verdict.WholeResponse, evidence: "100% of the tokens arrived after"},
		{name: "gzip, 8 KB blocks, paused", e: paused, rel: summarytest.ByteThreshold(8192, 100_000), encoding: "gzip",
			class: verdict.Buffers, kind: verdict.Compression, shape: verdict.ByteThreshold},
	}
	for _, tt := range tests {
		v := classify(tt.e, tt.rel, tt.encoding)
		s := v.Signature
		if s == nil {
			t.Errorf("%s: no signature (class %s, %s)", tt.name, v.Class, v.Reason)
			continue
		}
		if v.Class != tt.class || s.Kind != tt.kind || s.Shape != tt.shape {
			t.Errorf("%s: class %s, signature %s/%s (%s); want %s, %s/%s", tt.name, v.Class, s.Kind, s.Shape, s.Evidence, tt.class, tt.kind, tt.shape)
		}
		if tt.size > 0 && math.Abs(s.SizeBytes-tt.size) > 0.15*tt.size {
			t.Errorf("%s: size %.0f B, want ~%.0f", tt.name, s.SizeBytes, tt.size)
		}
		if tt.period > 0 && math.Abs(s.PeriodMs-tt.period) > 0.1*tt.period {
			t.Errorf("%s: period %.1f ms, want ~%.0f", tt.name, s.PeriodMs, tt.period)
		}
		if !strings.Contains(s.Evidence, tt.evidence) {
			t.Errorf("%s: evidence %q, want it to say %q", tt.name, s.Evidence, tt.evidence)
		}
	}
}

// TestSignatureUnknown: no signature without a class.
func TestSignatureUnknown(t *testing.T) {
	e := summarytest.Emission{Start: summarytest.Base, Tokens: 5, Gap: 5 * ms, EventBytes: 250}
	if v := classify(e, summarytest.Flush(100_000), ""); v.Class != verdict.Unknown || v.Signature != nil {
		t.Errorf("15 tokens: class %s, signature %+v; want unknown and none", v.Class, v.Signature)
	}
}
