package verdict

import (
	"fmt"
	"math"
	"slices"

	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/stats"
)

// A gateway that buffers does it in one of a few ways, and the fix depends
// on which: the Signature names it, from the same arrival records as the
// class. Per request, the classifier looks at
//
//   - which tokens arrived only once the last one had been emitted (the
//     whole response at its end);
//   - whether each token arrived when the next one was emitted (one event
//     behind: a parser that releases an event when it sees the next);
//   - across each long pause in the emission (a stall), whether the tokens
//     before it waited for the stream to resume (a buffer that fills) or
//     were released during it (a timer, an event loop);
//   - the releases: the tokens a gateway let go together. A token belongs
//     to the release of the one before it when it came in the same Read,
//     or arrived less than JoinFraction of their emission gap after it
//     (the class's bursts), or — a release read in several Reads by a busy
//     client — it had been emitted before the one before it arrived and
//     came less than the typical emission gap after it. Of the releases of
//     2 tokens or more: the bytes and tokens each let go, but the last one
//     of a request (the end of the stream let that one go), and the time
//     between the starts of consecutive ones, over stretches without a
//     pause; and for a buffer that fills, the tokens emitted by the first
//     arrival (nothing came through until it was full);
//   - the response's content coding.
//
// The kinds, in the order they are tried: the whole response
// (WholeFraction of the tokens after the last emission), one event behind
// (OneBehindFraction of the pairs, and the tokens before most pauses held
// across them: a gateway that merely adds one emission gap of delay does
// not hold them), flush per event (the class says Flushes), then for a
// buffering gateway a byte threshold (the tokens before most pauses held
// across them), a time period (regular releases: their period's quartile
// spread at most RegularSpread; without a pause to tell, a release size
// within PowerOfTwoTolerance of a power of two from 1 KiB says byte
// threshold instead), else dispatch bursts (irregular). Compression
// (CompressedFraction of the requests content-encoded) overrides every
// kind but flush per event, the kind it overrides kept as the shape. A
// gateway one event behind buffers, though its tokens come one by one:
// the class becomes Buffers.

// The thresholds of the signature.
const (
	// WholeFraction is the share of tokens that arrived after their
	// request's last emission from which the gateway held the whole
	// response: a flushing gateway has only the last token there.
	WholeFraction = 0.9

	// OneBehindFraction is the share of token pairs whose first token
	// arrived with the second's emission from which the gateway is one
	// event behind; OneBehindMinGapNs the emission gap below which a pair
	// is not judged (the transport's own delay would match), and
	// OneBehindSlackNs how long after the next emission the token may
	// arrive (at least JoinFraction of the gap).
	OneBehindFraction = 0.8
	OneBehindMinGapNs = 1_000_000
	OneBehindSlackNs  = 2_000_000

	// A pause in the emission is a gap of at least PauseGaps typical gaps
	// and PauseMinNs: a stall (the check's signature stream has one).
	PauseGaps  = 10
	PauseMinNs = 50_000_000

	// RegularSpread is the quartile spread of the release period,
	// (Q3−Q1)/(Q3+Q1), at most which releases are regular: a timer lets
	// them go (haproxy's 200 ms: 0.01; a 250 ms flush timer: 0.02). A few
	// releases read apart or merged by a busy client move the quartiles
	// little; a dispatching event loop's spread is 0.2 and more.
	RegularSpread = 0.1

	// PowerOfTwoTolerance is the relative distance from a power of two
	// (1 KiB and up) within which regular bursts, with no pause to tell,
	// count as a buffer's size: buffers are sized so.
	PowerOfTwoTolerance = 0.1

	// CompressedFraction is the share of requests whose response was
	// content-encoded from which compression is the signature.
	CompressedFraction = 0.5
)

// SignatureKind names how a gateway releases the stream.
type SignatureKind string

// The kinds of Signature.
const (
	FlushPerEvent  SignatureKind = "flush_per_event"
	ByteThreshold  SignatureKind = "byte_threshold"
	TimePeriod     SignatureKind = "time_period"
	OneEventBehind SignatureKind = "one_event_behind"
	WholeResponse  SignatureKind = "whole_response"
	DispatchBursts SignatureKind = "dispatch_bursts"
	Compression    SignatureKind = "compression"
)

// Name is the kind in words ("byte threshold").
func (k SignatureKind) Name() string {
	switch k {
	case FlushPerEvent:
		return "flush per event"
	case ByteThreshold:
		return "byte threshold"
	case TimePeriod:
		return "time period"
	case OneEventBehind:
		return "one event behind"
	case WholeResponse:
		return "whole response"
	case DispatchBursts:
		return "dispatch bursts"
	case Compression:
		return "compression"
	}
	return string(k)
}

// Signature is how a gateway releases the stream, with the evidence.
type Signature struct {
	Kind  SignatureKind `json:"kind"`
	Shape SignatureKind `json:"shape,omitempty"` // Compression: the kind it overrides (how the compressed stream came)
	// Evidence is one sentence of figures behind the kind.
	Evidence string `json:"evidence"`

	SizeBytes    float64 `json:"size_bytes"`         // byte threshold: typical bytes emitted by the first arrival (the buffer); else typical bytes a release let go (but each request's last); 0 when none
	Tokens       float64 `json:"release_tokens"`     // typical tokens of the same releases; 0 when none
	MaxTokens    int64   `json:"release_tokens_max"` // the most tokens one of them let go
	PeriodMs     float64 `json:"period_ms"`          // typical time between the starts of consecutive releases, pauses left out (p50), ms; 0 when none
	PeriodSpread float64 `json:"period_spread"`      // its quartile spread, (Q3−Q1)/(Q3+Q1)
	Encoding     string  `json:"encoding,omitempty"`

	WholeFraction     float64 `json:"whole_fraction"`      // tokens that arrived after their request's last emission
	OneBehindFraction float64 `json:"one_behind_fraction"` // judged pairs whose first token came with the second's emission
	Pauses            int64   `json:"pauses"`              // pauses in the emission
	HeldPauses        int64   `json:"held_pauses"`         // of which the token before waited for the stream to resume
}

// Title names the signature: its kind in words, for compression with the
// coding and the shape it overrides ("compression (gzip, whole response)").
func (s *Signature) Title() string {
	if s.Kind == Compression {
		return s.Kind.Name() + " (" + s.Encoding + ", " + s.Shape.Name() + ")"
	}
	return s.Kind.Name()
}

// sigAccumulator gathers what the signature needs, in bounded memory: the
// counts and distributions below, and scratch slices as long as the
// longest request.
type sigAccumulator struct {
	requests, encoded int64
	encoding          string
	tokens, whole     int64
	pairs, behind     int64
	pauses, held      int64
	releaseBytes      *stats.Metric // per release of 2 tokens or more, but each request's last
	releaseTokens     *stats.Metric // the same releases' tokens
	firstBytes        *stats.Metric // per request: the bytes of the tokens emitted by its first arrival
	firstTokens       *stats.Metric // and those tokens
	period            *stats.Metric // ns between the starts of consecutive releases, pauses left out

	stamped []result.Token // the request's stamped tokens, in arrival order
	gaps    []int64        // their emission gaps, sorted
}

func newSigAccumulator() sigAccumulator {
	return sigAccumulator{releaseBytes: stats.NewMetric(), releaseTokens: stats.NewMetric(), period: stats.NewMetric(),
		firstBytes: stats.NewMetric(), firstTokens: stats.NewMetric()}
}

// add folds one request in.
func (a *sigAccumulator) add(r *result.Request) {
	st := a.stamped[:0]
	for _, t := range r.Tokens {
		if t.Emitted != 0 {
			st = append(st, t)
		}
	}
	a.stamped = st
	if len(st) < 2 {
		return
	}
	a.requests++
	if r.Encoding != "" {
		a.encoded++
		if a.encoding == "" {
			a.encoding = r.Encoding
		}
	}
	gaps := a.gaps[:0]
	last := st[0].Emitted
	for i := 1; i < len(st); i++ {
		gaps = append(gaps, st[i].Emitted-st[i-1].Emitted)
		last = max(last, st[i].Emitted)
	}
	slices.Sort(gaps)
	a.gaps = gaps
	typical := stats.ExactPercentile(gaps, 0.5)
	pause := max(PauseGaps*typical, PauseMinNs)

	perToken := float64(r.Bytes) / float64(len(r.Tokens))
	// A buffer that fills lets nothing through until it is full: the
	// tokens emitted by the first arrival filled it, however the client
	// then read them.
	var first int64
	for _, t := range st {
		if t.Emitted <= st[0].Arrived {
			first++
		}
	}
	a.firstTokens.Record(first)
	a.firstBytes.Record(int64(float64(first) * perToken))
	var b sigBurst
	for i, t := range st {
		a.tokens++
		if t.Arrived >= last {
			a.whole++
		}
		if i == 0 {
			b.start(t, false)
			continue
		}
		p := st[i-1]
		g := t.Emitted - p.Emitted
		if g >= OneBehindMinGapNs {
			a.pairs++
			if d := p.Arrived - t.Emitted; d >= -g/10 && d <= max(int64(JoinFraction*float64(g)), OneBehindSlackNs) {
				a.behind++
			}
		}
		paused := g >= pause
		if paused {
			a.pauses++
			if p.Arrived >= t.Emitted-int64(JoinFraction*float64(typical)) {
				a.held++
			}
		}
		if sameRelease(p, t, typical) {
			b.size++
			b.paused = b.paused || paused
			continue
		}
		a.closeBurst(&b, perToken)
		b.start(t, paused)
	}
	// The last burst is left out: the end of the stream released it.
}

// sameRelease reports whether token t came in the same release as token p
// before it (see the comment at the top of the file), typical being the
// request's typical emission gap. Tokens the server wrote together (no
// emission gap, when it falls behind) break a burst of the class, not a
// release.
func sameRelease(p, t result.Token, typical int64) bool {
	arrive, emit := t.Arrived-p.Arrived, t.Emitted-p.Emitted
	return arrive == 0 || joined(arrive, emit) || t.Emitted <= p.Arrived && arrive < typical
}

// sigBurst is the current burst of a request, for the signature.
type sigBurst struct {
	size      int64
	at        int64 // arrival of its first token
	paused    bool  // a pause lies within it or before it, since the previous burst
	prevAt    int64 // start of the previous burst of 2 or more
	prevValid bool
}

func (b *sigBurst) start(t result.Token, paused bool) {
	b.size, b.at, b.paused = 1, t.Arrived, b.paused || paused
}

// closeBurst accounts for a burst that did not end its request: its bytes
// (a release) and, when no pause came since the previous one, the period.
func (a *sigAccumulator) closeBurst(b *sigBurst, perToken float64) {
	if b.size < 2 {
		return
	}
	a.releaseBytes.Record(int64(float64(b.size) * perToken))
	a.releaseTokens.Record(b.size)
	if b.prevValid && !b.paused {
		a.period.Record(b.at - b.prevAt)
	}
	b.prevAt, b.prevValid, b.paused = b.at, true, false
}

func frac(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// spread is the quartile spread (Q3−Q1)/(Q3+Q1) of m, 0 when empty.
func spread(m *stats.Metric) float64 {
	q1, q3 := float64(m.Percentile(0.25)), float64(m.Percentile(0.75))
	if q1+q3 <= 0 {
		return 0
	}
	return (q3 - q1) / (q3 + q1)
}

// nearPowerOfTwo reports whether bytes is within PowerOfTwoTolerance of a
// power of two from 1 KiB.
func nearPowerOfTwo(bytes float64) bool {
	if bytes < 1024*(1-PowerOfTwoTolerance) {
		return false
	}
	p := math.Exp2(math.Round(math.Log2(bytes)))
	return math.Abs(bytes-p) <= PowerOfTwoTolerance*p
}

// signature decides the signature of v (whose class is decided), and
// makes a gateway one event behind a buffering one. It returns nil for an
// unknown class.
func (a *sigAccumulator) signature(v *Verdict) *Signature {
	if v.Class == Unknown || a.tokens == 0 {
		return nil
	}
	s := &Signature{
		WholeFraction: frac(a.whole, a.tokens), OneBehindFraction: frac(a.behind, a.pairs),
		Pauses: a.pauses, HeldPauses: a.held,
	}
	if a.period.N() > 0 {
		s.PeriodMs, s.PeriodSpread = stats.Ms(a.period.Percentile(0.5)), spread(a.period)
	}
	releases := a.releaseBytes.N()
	if releases > 0 {
		s.SizeBytes = float64(a.releaseBytes.Percentile(0.5))
		s.Tokens, s.MaxTokens = float64(a.releaseTokens.Percentile(0.5)), a.releaseTokens.Max()
	}
	regular := a.period.N() > 0 && s.PeriodSpread <= RegularSpread
	switch {
	case s.WholeFraction >= WholeFraction:
		s.Kind = WholeResponse
	case a.pairs >= MinTokens && s.OneBehindFraction >= OneBehindFraction && (a.pauses == 0 || 2*a.held > a.pauses):
		s.Kind = OneEventBehind
		v.Class = Buffers
	case v.Class == Flushes:
		s.Kind = FlushPerEvent
	case a.pauses > 0 && 2*a.held > a.pauses:
		s.Kind = ByteThreshold
	case regular && a.pauses == 0 && nearPowerOfTwo(s.SizeBytes):
		s.Kind = ByteThreshold
	case regular, a.period.N() == 0 && releases > 0 && a.pauses > 0:
		s.Kind = TimePeriod
	case a.period.N() == 0 && releases > 0:
		s.Kind = ByteThreshold
	default:
		s.Kind = DispatchBursts
	}
	if s.Kind == ByteThreshold {
		s.SizeBytes, s.Tokens = float64(a.firstBytes.Percentile(0.5)), float64(a.firstTokens.Percentile(0.5))
	}
	if frac(a.encoded, a.requests) >= CompressedFraction {
		s.Encoding = a.encoding
		if s.Kind != FlushPerEvent {
			s.Shape, s.Kind = s.Kind, Compression
		}
	}
	s.Evidence = s.evidence(v)
	return s
}

// evidence words the figures behind the signature in one sentence.
func (s *Signature) evidence(v *Verdict) string {
	k := s.Kind
	if k == Compression {
		k = s.Shape // Title says the rest
	}
	pauses := ""
	if s.Pauses > 0 {
		pauses = fmt.Sprintf("; the tokens before %d of %d pauses in the stream waited for it to resume", s.HeldPauses, s.Pauses)
	}
	var e string
	switch k {
	case FlushPerEvent:
		e = fmt.Sprintf("each token arrived on its own, %.3f ms after its emission (p50)", v.AddedP50Ms)
		if s.Encoding != "" {
			e = s.Encoding + "-encoded, " + e
		}
	case WholeResponse:
		e = fmt.Sprintf("%.0f%% of the tokens arrived after their response's last token was emitted", 100*s.WholeFraction)
	case OneEventBehind:
		e = fmt.Sprintf("%.0f%% of the tokens arrived when the next one was emitted, not when they were", 100*s.OneBehindFraction)
	case ByteThreshold:
		e = "released in blocks"
		if s.SizeBytes > 0 {
			e += " of ~" + sizeText(s.SizeBytes)
		}
		e += fmt.Sprintf(" (~%.0f tokens per release)", s.Tokens) + periodText(s) + pauses
	case TimePeriod:
		e = "released"
		if s.PeriodMs > 0 {
			e += fmt.Sprintf(" every ~%.0f ms (quartile spread %.2f),", s.PeriodMs, s.PeriodSpread)
		}
		e += fmt.Sprintf(" ~%.0f tokens at a time", s.Tokens)
		if s.Pauses > 0 {
			e += fmt.Sprintf("; the tokens before %d of %d pauses in the stream arrived during them", s.Pauses-s.HeldPauses, s.Pauses)
		}
	case DispatchBursts:
		e = fmt.Sprintf("irregular releases of ~%.0f tokens (max %d per release)", s.Tokens, s.MaxTokens)
		if s.PeriodMs > 0 {
			e += fmt.Sprintf(", ~%.0f ms apart (quartile spread %.2f)", s.PeriodMs, s.PeriodSpread)
		}
		e += fmt.Sprintf("; %.0f%% of the tokens arrived in bursts", 100*v.CoalescedFraction)
	}
	return e
}

func periodText(s *Signature) string {
	if s.PeriodMs <= 0 {
		return ""
	}
	return fmt.Sprintf(", every ~%.0f ms", s.PeriodMs)
}

// sizeText prints a byte count in B, KB or MB (1 KB = 1024 B).
func sizeText(b float64) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}
