package cli

import (
	"fmt"
	"strings"
)

// corpus is a preset stream of --corpus: the dialect, the phases and the
// upstream write shape of a stream that reports elsewhere measured, so
// that a relay's before and after are measured on the same stream end to
// end.
type corpus struct {
	name      string
	api       string
	tokens    int    // -n: text deltas
	reasoning int    // --reasoning: reasoning events
	toolCall  int    // --tool-call: argument deltas of one function-call cycle
	faults    string // the upstream write shape, as --fault takes it (the user's --fault overrides it)
}

// corpora are the presets. "responses" is the corpus of the field
// reports on SSE relays (shared seeds: the chunk-forwarding and WebSocket
// relay iterations): 1,024 text deltas, 256 reasoning events, one
// function-call cycle with its argument deltas, response.completed, the
// upstream body in writes of 16 KiB.
var corpora = []corpus{
	{name: "responses", api: "responses", tokens: 1024, reasoning: 256, toolCall: 4, faults: "write_bytes=16384"},
}

// corpusFlags are the flags a corpus sets, by their long names.
var corpusFlags = []string{"api", "tokens", "reasoning", "tool-call"}

// applyCorpus sets what --corpus names; changed says which flags the
// command line gave (those the corpus sets may not be given beside it).
func applyCorpus(cfg *Config, changed func(string) bool) error {
	if cfg.Corpus == "" {
		return nil
	}
	var c *corpus
	names := make([]string, len(corpora))
	for i := range corpora {
		names[i] = corpora[i].name
		if corpora[i].name == cfg.Corpus {
			c = &corpora[i]
		}
	}
	if c == nil {
		return fmt.Errorf("--corpus %q: unknown (want %s)", cfg.Corpus, strings.Join(names, ", "))
	}
	for _, f := range corpusFlags {
		if changed(f) {
			return fmt.Errorf("--corpus %s sets --api, -n, --reasoning and --tool-call: not with --%s", c.name, f)
		}
	}
	cfg.API, cfg.Tokens, cfg.Reasoning, cfg.ToolCall = c.api, c.tokens, c.reasoning, c.toolCall
	if cfg.Faults == "" {
		cfg.Faults = c.faults
	} else {
		cfg.Faults = c.faults + "; " + cfg.Faults // a later key wins: the user's
	}
	return nil
}
