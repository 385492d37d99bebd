package api

import (
	"bytes"
	"slices"
	"strconv"
)

// PromptUsage is the prompt side of an answer's token accounting, as the
// server reports it in the dialect's usage object (AppendUsage): the
// prompt's tokens, and of them those read from and written to the
// server's prefix cache, when it has a figure for them.
type PromptUsage struct {
	// Tokens is the prompt's size in tokens; 0 means PromptTokens (the
	// reference's short prompt).
	Tokens int
	// CacheKnown says whether the server has a cache figure: without one
	// the cache fields are null — "missing cache accounting is null,
	// never assumed zero" — and a gateway that turns them into 0 shows.
	CacheKnown bool
	// Cached tokens were read from the prefix cache; Written tokens were
	// written to it (Anthropic's cache_creation_input_tokens; the OpenAI
	// dialects have no field for them). Both within Tokens.
	Cached, Written int
}

// tokens is the prompt size the usage objects report.
func (p PromptUsage) tokens() int64 {
	if p.Tokens <= 0 {
		return PromptTokens
	}
	return int64(p.Tokens)
}

// UsagePart names the usage objects of a stream, where each dialect
// carries one: Chat's and Completions' usage chunk, Responses'
// response.completed, Anthropic's message_start and message_delta.
type UsagePart int

// The usage objects of the dialects' streams.
const (
	UsageChunk     UsagePart = iota // Chat, Completions: the usage chunk (stream_options.include_usage)
	UsageCompleted                  // Responses: response.completed's response.usage
	UsageStart                      // Anthropic: message_start's message.usage
	UsageDelta                      // Anthropic: message_delta's usage
	NumUsageParts
)

var usagePartNames = [...]string{"usage chunk", "response.completed", "message_start", "message_delta"}

// String names the part as the findings do.
func (p UsagePart) String() string {
	if p >= 0 && p < NumUsageParts {
		return usagePartNames[p]
	}
	return "usage(" + strconv.Itoa(int(p)) + ")"
}

// UsageParts returns the usage objects a stream of dialect d carries (with
// stream_options.include_usage for Chat and Completions).
func UsageParts(d Dialect) []UsagePart {
	switch d {
	case Responses:
		return []UsagePart{UsageCompleted}
	case Anthropic:
		return []UsagePart{UsageStart, UsageDelta}
	}
	return []UsagePart{UsageChunk}
}

// TokenUsage is the whole token accounting of one answer: its prompt, and its
// output (all phases) of which Reasoning reasoning tokens.
type TokenUsage struct {
	Prompt    PromptUsage
	Output    int
	Reasoning int
}

// Usage returns a's token accounting.
func (a *Answer) Usage() TokenUsage {
	return TokenUsage{Prompt: a.Prompt, Output: a.Total(), Reasoning: max(a.Reasoning, 0)}
}

// AppendUsage appends the JSON usage object of part p in dialect d:
//
//	chat, completions   {"prompt_tokens":P,"completion_tokens":C,"total_tokens":P+C,"prompt_tokens_details":{"cached_tokens":X}[,"completion_tokens_details":{"reasoning_tokens":R}]}
//	responses           {"input_tokens":P,"input_tokens_details":{"cached_tokens":X},"output_tokens":C,"output_tokens_details":{"reasoning_tokens":R},"total_tokens":P+C}
//	anthropic start     {"input_tokens":I,"cache_creation_input_tokens":W,"cache_read_input_tokens":X,"output_tokens":1}
//	anthropic delta     {"input_tokens":I,"cache_creation_input_tokens":W,"cache_read_input_tokens":X,"output_tokens":C}
//
// where X and W are null when the server has no cache figure
// (PromptUsage.CacheKnown false), and Anthropic's input_tokens I counts
// the prompt tokens neither read from nor written to the cache, as
// Anthropic's API does (its three fields add up to the prompt). The client
// rebuilds the same objects from the server's record to compare what
// arrived with what was sent.
func AppendUsage(dst []byte, d Dialect, p UsagePart, u TokenUsage) []byte {
	prompt := u.Prompt.tokens()
	out := int64(u.Output)
	switch {
	case d == Responses:
		dst = append(dst, `{"input_tokens":`...)
		dst = strconv.AppendInt(dst, prompt, 10)
		dst = append(dst, `,"input_tokens_details":{"cached_tokens":`...)
		dst = appendCacheFigure(dst, u.Prompt, u.Prompt.Cached)
		dst = append(dst, `},"output_tokens":`...)
		dst = strconv.AppendInt(dst, out, 10)
		dst = append(dst, `,"output_tokens_details":{"reasoning_tokens":`...)
		dst = strconv.AppendInt(dst, int64(u.Reasoning), 10)
		dst = append(dst, `},"total_tokens":`...)
		dst = strconv.AppendInt(dst, out+prompt, 10)
		return append(dst, '}')
	case d == Anthropic:
		input := prompt
		if u.Prompt.CacheKnown {
			input = max(prompt-int64(u.Prompt.Cached)-int64(u.Prompt.Written), 0)
		}
		if p == UsageStart {
			out = 1 // as Anthropic's message_start reports it
		}
		dst = append(dst, `{"input_tokens":`...)
		dst = strconv.AppendInt(dst, input, 10)
		dst = append(dst, `,"cache_creation_input_tokens":`...)
		dst = appendCacheFigure(dst, u.Prompt, u.Prompt.Written)
		dst = append(dst, `,"cache_read_input_tokens":`...)
		dst = appendCacheFigure(dst, u.Prompt, u.Prompt.Cached)
		dst = append(dst, `,"output_tokens":`...)
		dst = strconv.AppendInt(dst, out, 10)
		return append(dst, '}')
	}
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, prompt, 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, out, 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, out+prompt, 10)
	dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
	dst = appendCacheFigure(dst, u.Prompt, u.Prompt.Cached)
	dst = append(dst, '}')
	if u.Reasoning > 0 {
		dst = append(dst, `,"completion_tokens_details":{"reasoning_tokens":`...)
		dst = strconv.AppendInt(dst, int64(u.Reasoning), 10)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// appendCacheFigure appends n, or null when p has no cache figure.
func appendCacheFigure(dst []byte, p PromptUsage, n int) []byte {
	if !p.CacheKnown {
		return append(dst, "null"...)
	}
	return strconv.AppendInt(dst, int64(n), 10)
}

// MinBlockBytes is the smallest block of a block prompt
// (AppendBlockPrompt) whose first block holds all of ChatPrompt, which the
// server finds the prompt by: 8 tokens.
const MinBlockBytes = 8 * TokenBytes

// TokenBytes is how many prompt bytes make one prompt token, for the
// server's count of a prompt's tokens (PromptText) and the client's size
// of a trace's prompt (input_length tokens are TokenBytes times as many
// bytes): OpenAI's rule of thumb of four characters a token.
const TokenBytes = 4

// PromptText finds the text of an sse-latency prompt in a request body of
// any dialect, however a gateway re-wrapped it: from the first ChatPrompt
// to the hint marker or the end of the JSON string, whichever comes first,
// without the space before the marker. The prompt is ASCII that JSON does
// not escape, so the bytes are the text. ok is false when the body holds no
// ChatPrompt (a request of another client).
func PromptText(body []byte) (text []byte, ok bool) {
	i := bytes.Index(body, []byte(ChatPrompt))
	if i < 0 {
		return nil, false
	}
	rest := body[i:]
	end := len(rest)
	if q := bytes.IndexByte(rest, '"'); q >= 0 {
		end = q
	}
	if m := bytes.Index(rest[:end], []byte(promptMarker)); m >= 0 {
		end = m
	}
	return bytes.TrimRight(rest[:end], " "), true
}

// PromptTokensOf is the number of tokens the server counts in prompt text:
// one per TokenBytes bytes, the last one partial.
func PromptTokensOf(text []byte) int {
	return (len(text) + TokenBytes - 1) / TokenBytes
}

// AppendBlockPrompt appends a prompt of size bytes (at most MaxPromptBytes)
// laid out in blocks of blockBytes: block j holds words that depend only
// on blocks[j] (and the first block begins with ChatPrompt), so that two
// prompts whose block lists share a prefix share that prefix of bytes —
// what a prefix cache keys on — and prompts whose blocks differ differ
// there. Bytes past the last block are filler of block id 0. Then a space
// and the hints' PromptMarker when any hint is set, after the size bytes
// (so that the marker, unique to each request, shares no block). The text
// is lower-case words and spaces, never a space last, which JSON does not
// escape: PromptText finds it whole in the body (when the first block and
// the size hold all of ChatPrompt: MinBlockBytes), and PromptTokensOf
// counts size/TokenBytes tokens for a size that is a multiple of
// TokenBytes.
func AppendBlockPrompt(dst []byte, h Hints, size int, blocks []uint64, blockBytes int) []byte {
	size = min(max(size, 0), MaxPromptBytes)
	if blockBytes <= 0 {
		blockBytes = size
	}
	start := len(dst)
	for j := 0; len(dst)-start < size; j++ {
		var id uint64
		if j < len(blocks) {
			id = blocks[j]
		}
		n := min(blockBytes, size-(len(dst)-start))
		dst = appendBlock(dst, id, n, j == 0)
	}
	if !h.Empty() {
		dst = append(dst, ' ')
		dst = append(dst, h.PromptMarker()...)
	}
	return dst
}

// appendBlock appends n bytes of the words of block id: ChatPrompt and a
// space first when first, then five-byte words (four letters and a space)
// drawn from a generator seeded with id, never a space last.
func appendBlock(dst []byte, id uint64, n int, first bool) []byte {
	start := len(dst)
	switch {
	case first && n > len(ChatPrompt)+1:
		dst = append(dst, ChatPrompt+" "...)
	case first:
		dst = append(dst, ChatPrompt[:min(n, len(ChatPrompt))]...)
	}
	from := len(dst) - start
	dst = slices.Grow(dst, n-from)[:start+n]
	b := dst[start+from:]
	x, r, left := id, uint64(0), 0
	for k := range b {
		if k%5 == 4 && k < len(b)-1 {
			b[k] = ' '
			continue
		}
		if left == 0 { // splitmix64: 13 letters from each draw
			x += 0x9e3779b97f4a7c15
			r = (x ^ x>>30) * 0xbf58476d1ce4e5b9
			r = (r ^ r>>27) * 0x94d049bb133111eb
			r ^= r >> 31
			left = 13
		}
		b[k] = alphabet[r%26]
		r /= 26
		left--
	}
	return dst
}
