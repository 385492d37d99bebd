package cli

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/batch"
	"github.com/sse-latency/sse-latency/internal/lengths"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/server"
	"github.com/sse-latency/sse-latency/internal/summary"
	"github.com/sse-latency/sse-latency/internal/sweep"
	"github.com/sse-latency/sse-latency/internal/trace"
)

// Defaults and bounds of the flags of production-shaped traffic.
const (
	DefaultSeed = 1
	// DefaultCacheBlock is the server's prefix cache block, tokens:
	// Mooncake's (and AIPerf's analyze-trace default).
	DefaultCacheBlock = 512
	MinCacheBlock     = api.MinBlockBytes / api.TokenBytes
	MaxCacheBlock     = 1 << 16
	MaxTraceSpeed     = 1000
	MinTraceSpeed     = 0.001
	// minShapePrompt is the smallest prompt a shaped request sends: the
	// reference's short prompt and a little, 5 tokens.
	minShapePrompt = 5 * api.TokenBytes
)

// tokensValue is the -n flag: a whole number of tokens as the reference
// takes it (into Tokens), or a distribution (into TokensDist, Tokens
// then its mean, for the announcements and the server's default).
type tokensValue struct{ c *Config }

func (v tokensValue) String() string {
	if v.c.TokensDist != "" {
		return v.c.TokensDist
	}
	return strconv.Itoa(v.c.Tokens)
}

func (v tokensValue) Set(s string) error {
	if !strings.Contains(s, ":") {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("%q is not a number of tokens or a distribution (%s)", s, lengths.Syntax)
		}
		v.c.Tokens, v.c.TokensDist = n, ""
		return nil
	}
	d, err := tokensDist(s)
	if err != nil {
		return err
	}
	v.c.Tokens, v.c.TokensDist = int(math.Round(d.Mean())), s
	return nil
}

func (v tokensValue) Type() string { return "n|dist" }

// tokensDist parses an -n distribution: 1 to the server's limit.
func tokensDist(s string) (lengths.Dist, error) {
	return lengths.Parse(s, 1, server.DefaultMaxTokens, strconv.Atoi, os.ReadFile)
}

// promptDist parses a --prompt-bytes distribution: sizes from 0 to
// api.MaxPromptBytes.
func promptDist(s string) (lengths.Dist, error) {
	return lengths.Parse(s, 0, api.MaxPromptBytes, sweep.ParseSize, os.ReadFile)
}

// setPromptBytes reads --prompt-bytes: a size, or a distribution of sizes.
func (c *Config) setPromptBytes(s string) error {
	if !strings.Contains(s, ":") {
		n, err := sweep.ParseSize(s)
		if err != nil {
			return fmt.Errorf("--prompt-bytes: %v", err)
		}
		c.PromptBytes = n
		return nil
	}
	d, err := promptDist(s)
	if err != nil {
		return fmt.Errorf("--prompt-bytes: %v", err)
	}
	c.PromptBytes, c.PromptBytesDist = int(math.Round(d.Mean())), s
	return nil
}

// validateShape checks the flags of production-shaped traffic: the trace
// and its speed and limit, the cache block, what a trace excludes.
func (c *Config) validateShape(changed func(string) bool) error {
	if c.CacheBlock != 0 && (c.CacheBlock < MinCacheBlock || c.CacheBlock > MaxCacheBlock) {
		return fmt.Errorf("--cache-block %d: want 0 (no simulated prefix cache) or %d to %d tokens", c.CacheBlock, MinCacheBlock, MaxCacheBlock)
	}
	if c.Trace == "" {
		for _, f := range []struct {
			name string
			set  bool
		}{{"--trace-speed", c.TraceSpeed != 1}, {"--trace-limit", c.TraceLimit != 0}, {"--trace-skip-bad", c.TraceSkipBad}} {
			if f.set {
				return fmt.Errorf("%s needs --trace", f.name)
			}
		}
		return nil
	}
	switch {
	case !(c.TraceSpeed >= MinTraceSpeed && c.TraceSpeed <= MaxTraceSpeed):
		return fmt.Errorf("--trace-speed %v: want %v to %v (2 replays twice as fast)", c.TraceSpeed, MinTraceSpeed, MaxTraceSpeed)
	case c.TraceLimit < 0:
		return errors.New("--trace-limit must not be negative")
	case c.Rate > 0:
		return errors.New("--trace replays the trace's arrivals: not with --rate")
	case c.Rounds > 0:
		return errors.New("--trace replays the trace once: not with --rounds")
	}
	for _, f := range []string{"requests", "tokens", "prompt-bytes", "arrival"} {
		if changed != nil && changed(f) {
			return fmt.Errorf("--trace gives each request's arrival and size: not with --%s (--trace-limit and --duration bound the replay)", f)
		}
	}
	return nil
}

// loadTrace reads the --trace file and bounds the replay: the gateway
// batch's requests become those the run's bounds let it start, and the
// notes say what the trace had to have done to it (lines skipped,
// timestamps sorted, the replay stopped before the trace's end).
func (r *run) loadTrace() error {
	cfg := &r.cfg
	if cfg.Trace == "" {
		return nil
	}
	t, err := trace.Read(cfg.Trace, trace.Options{MaxInput: api.MaxPromptBytes / api.TokenBytes, MaxOutput: server.DefaultMaxTokens,
		SkipBad: cfg.TraceSkipBad})
	if err != nil {
		if errors.Is(err, trace.ErrLine) {
			err = fmt.Errorf("%w (--trace-skip-bad skips bad lines)", err)
		}
		return fmt.Errorf("--trace %s: %w", cfg.Trace, err)
	}
	n := t.Limit(cfg.TraceLimit, cfg.TraceSpeed, int64(cfg.Duration))
	if n == 0 {
		return fmt.Errorf("--trace %s: no request to replay (%d in the trace, none within the run's bounds)", cfg.Trace, len(t.Entries))
	}
	replay := &summary.Replay{File: cfg.Trace, Format: t.Format, Entries: len(t.Entries), Replayed: n, Skipped: t.Skipped,
		Sorted: t.Sorted, Speed: cfg.TraceSpeed}
	if t.Skipped > 0 {
		r.out.errorf("note: --trace: %d bad %s skipped (first: %s)\n", t.Skipped, plural(t.Skipped, "line"), t.FirstSkipped)
	}
	if t.Sorted {
		r.out.errorf("note: --trace: the timestamps were out of order; the requests are replayed sorted by timestamp\n")
	}
	if n < len(t.Entries) {
		replay.StoppedBy = "--duration"
		if cfg.TraceLimit > 0 && n == min(cfg.TraceLimit, len(t.Entries)) {
			replay.StoppedBy = "--trace-limit"
		}
		r.out.errorf("note: --trace: the trace has %d requests; %s stops the replay after %d\n", len(t.Entries), replay.StoppedBy, n)
	}
	cfg.Requests = n
	cfg.Concurrency = max(cfg.Concurrency, 0)
	r.trace, r.replay = t, replay
	return nil
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// shaper returns the Shape of each request of a batch of the run — a
// trace line's, or the draws of the -n and --prompt-bytes distributions —
// with its tokens capped at maxTokens (the calibration's cap; 0: none),
// and with the trace's prefix blocks when blocks; nil when the run's
// requests all have the same size.
func (r *run) shaper(maxTokens int, blocks bool) func(i int) *result.Shape {
	cfg := r.cfg
	capTokens := func(n int) int {
		if maxTokens > 0 {
			return min(n, maxTokens)
		}
		return n
	}
	if t := r.trace; t != nil {
		blockTokens := cfg.CacheBlock
		if blockTokens == 0 {
			blockTokens = DefaultCacheBlock
		}
		return func(i int) *result.Shape {
			e := t.Entries[i%len(t.Entries)]
			sh := &result.Shape{Tokens: capTokens(e.Output), PromptBytes: max(e.Input*api.TokenBytes, minShapePrompt), Line: e.Line}
			if blocks {
				sh.BlockBytes = blockTokens * api.TokenBytes
				sh.Blocks = traceBlocks(e, (sh.PromptBytes+sh.BlockBytes-1)/sh.BlockBytes)
			}
			return sh
		}
	}
	if cfg.TokensDist == "" && cfg.PromptBytesDist == "" {
		return nil
	}
	tokens, prompt := fixedDist(cfg.Tokens), fixedDist(cfg.PromptBytes)
	if cfg.TokensDist != "" {
		tokens, _ = tokensDist(cfg.TokensDist) // Validate parsed it
	}
	if cfg.PromptBytesDist != "" {
		prompt, _ = promptDist(cfg.PromptBytesDist)
	}
	seed := cfg.Seed
	return func(i int) *result.Shape {
		return &result.Shape{Tokens: capTokens(tokens.Draw(seed, lengths.StreamTokens, i)),
			PromptBytes: prompt.Draw(seed, lengths.StreamPrompt, i)}
	}
}

// fixedDist is the distribution of one length.
func fixedDist(n int) lengths.Dist {
	return lengths.Dist{Kind: lengths.Fixed, A: float64(n), Min: n, Max: n}
}

// traceBlocks returns the n blocks of entry e's prompt: its hash ids, then
// ids of its own for the blocks they do not cover (BurstGPT has none) —
// the top bit set, which no hash id has, so that they share nothing.
func traceBlocks(e trace.Entry, n int) []uint64 {
	out := make([]uint64, n)
	k := copy(out, e.Blocks)
	for j := k; j < n; j++ {
		out[j] = 1<<63 | uint64(e.Line)<<20 | uint64(j)
	}
	return out
}

// shapeBatch gives spec, a batch of the run's load, the run's shapes: the
// trace's arrivals and sizes, or the distributions' draws.
func (r *run) shapeBatch(spec batch.Spec, calibration bool) batch.Spec {
	maxTokens := 0
	if calibration {
		maxTokens = batch.CalibrationMaxTokens
	}
	// The calibration sends each request's size, not its blocks: its
	// prompts must not fill the server's cache before the replay.
	spec.Shape = r.shaper(maxTokens, !calibration)
	if r.trace != nil && !calibration {
		offsets := make([]int64, r.cfg.Requests)
		for i := range offsets {
			offsets[i] = r.trace.Entries[i].AtNs
		}
		// --duration bounded the requests to replay (loadTrace): each of
		// them starts, late if need be, its lateness reported — not
		// dropped by a deadline it was due before.
		spec.Offsets, spec.Speed, spec.Requests, spec.Rate, spec.Duration = offsets, r.cfg.TraceSpeed, r.cfg.Requests, 0, 0
		spec.Warmup = min(r.cfg.Warmup, r.cfg.Requests)
	}
	return spec
}

// sizeText describes the run's request sizes for the announcements:
// "tokens=1000", "tokens=uniform:50-500, prompt=lognormal:4k,1".
func sizeText(c Config) string {
	s := "tokens=" + strconv.Itoa(c.Tokens)
	if c.TokensDist != "" {
		s = "tokens=" + c.TokensDist
	}
	if c.PromptBytesDist != "" {
		s += ", prompt=" + c.PromptBytesDist
	}
	return s
}

// newCollector returns the collector of a batch of the run: with the
// breakdown by size when the run's sizes vary.
func (r *run) newCollector() *summary.Collector {
	c := summary.NewCollector()
	if r.shaper(0, false) != nil {
		c.Sizes = summary.NewSizeCollector()
	}
	return c
}
