package client

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sse-latency/sse-latency/internal/api"
	"github.com/sse-latency/sse-latency/internal/result"
	"github.com/sse-latency/sse-latency/internal/server"
)

// The faulty gateways of the usage tests: each rewrites the usage of the
// events it passes, as gateways have been seen to.
var (
	nullFigure    = regexp.MustCompile(`("(?:cached_tokens|cache_read_input_tokens|cache_creation_input_tokens)"):null`)
	promptDetails = regexp.MustCompile(`,"prompt_tokens_details":\{[^}]*\}`)
	completion    = regexp.MustCompile(`"completion_tokens":(\d+),"total_tokens":(\d+)`)
)

// zeroNulls turns every null cache figure into 0: a gateway that assumes
// zero where the upstream had no figure.
func zeroNulls(ev sseEv) []sseEv {
	ev.data = nullFigure.ReplaceAllString(ev.data, "${1}:0")
	return []sseEv{ev}
}

// dropPromptDetails removes Chat's prompt_tokens_details object.
func dropPromptDetails(ev sseEv) []sseEv {
	ev.data = promptDetails.ReplaceAllString(ev.data, "")
	return []sseEv{ev}
}

// recount counts one output token more, and adds it to the total: a
// gateway that recomputed the output with its own tokenizer.
func recount(ev sseEv) []sseEv {
	ev.data = completion.ReplaceAllStringFunc(ev.data, func(s string) string {
		var c, tot int
		fmt.Sscanf(s, `"completion_tokens":%d,"total_tokens":%d`, &c, &tot)
		return fmt.Sprintf(`"completion_tokens":%d,"total_tokens":%d`, c+1, tot+1)
	})
	return []sseEv{ev}
}

// dropUsageChunk drops Chat's usage chunk altogether.
func dropUsageChunk(ev sseEv) []sseEv {
	if strings.Contains(ev.data, `"usage":{`) {
		return nil
	}
	return []sseEv{ev}
}

func findings(rec *result.Request) string {
	if rec.Usage == nil {
		return "no usage"
	}
	if !rec.Usage.Compared {
		return "not compared"
	}
	var s []string
	for _, f := range rec.Usage.Findings {
		s = append(s, fmt.Sprintf("%s %s %s: %s -> %s", f.Kind, f.Part, f.Field, f.Sent, f.Got))
	}
	return strings.Join(s, "; ")
}

// TestUsageFidelity streams from the dummy server, its cache figures null
// (no simulated cache) or known (a cache of one-token blocks), directly
// and through gateways that rewrite the usage, and checks that the record
// reports exactly what each did to which field.
func TestUsageFidelity(t *testing.T) {
	const n = 3
	nullAddr, nullReg := serveWith(t, server.Config{Tokens: 1, DelayMs: 0.2})
	for _, tc := range []struct {
		name    string
		d       api.Dialect
		known   bool
		rewrite func(sseEv) []sseEv
		want    string
	}{
		{"chat direct, null figures", api.Chat, false, nil, ""},
		{"chat direct, cache figures", api.Chat, true, nil, ""},
		{"anthropic direct", api.Anthropic, false, nil, ""},
		{"responses direct", api.Responses, true, nil, ""},
		{"chat through a gateway that zeroes null figures", api.Chat, false, zeroNulls,
			"zeroed_from_null usage chunk prompt_tokens_details.cached_tokens: null -> 0"},
		{"responses through a gateway that zeroes null figures", api.Responses, false, zeroNulls,
			"zeroed_from_null response.completed input_tokens_details.cached_tokens: null -> 0"},
		{"anthropic through a gateway that zeroes null figures", api.Anthropic, false, zeroNulls,
			"zeroed_from_null message_start cache_creation_input_tokens: null -> 0; zeroed_from_null message_start cache_read_input_tokens: null -> 0; " +
				"zeroed_from_null message_delta cache_creation_input_tokens: null -> 0; zeroed_from_null message_delta cache_read_input_tokens: null -> 0"},
		{"null figures a gateway drops stay intact: no figure either way", api.Chat, false, dropPromptDetails, ""},
		{"chat through a gateway that drops prompt_tokens_details", api.Chat, true, dropPromptDetails,
			"dropped usage chunk prompt_tokens_details.cached_tokens: 4 -> "},
		{"chat through a gateway that recounts the output", api.Chat, true, recount,
			"recomputed usage chunk completion_tokens: 3 -> 4; recomputed usage chunk total_tokens: 8 -> 9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, reg := nullAddr, nullReg
			if tc.known {
				// A cache of one-token blocks, warmed by one request: the
				// prompt's 4 whole blocks (of its 5 tokens) are read from
				// it after.
				addr, reg = serveWith(t, server.Config{Tokens: 1, DelayMs: 0.2, CacheBlockTokens: 1})
				warm := &result.Request{Batch: "warm"}
				New(Options{Dialect: tc.d, Addr: addr, Tokens: 1, Timeout: 10 * time.Second}).Do(context.Background(), warm)
				if !warm.OK() {
					t.Fatalf("warm-up: %s", warm.Failure.Error())
				}
			}
			if tc.rewrite != nil {
				addr = eventGateway(t, addr, tc.rewrite)
			}
			q := New(Options{Dialect: tc.d, Addr: addr, Tokens: n, ExpectTokens: n, IncludeUsage: true,
				Timeout: 10 * time.Second, Registry: reg, IDPrefix: "usage"})
			rec := &result.Request{Batch: "gw", Index: 1}
			q.Do(context.Background(), rec)
			if !rec.OK() {
				t.Fatalf("failure %q; want ok", rec.Failure.Error())
			}
			if got := findings(rec); got != tc.want {
				t.Errorf("usage findings\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestUsageChunkDropped: a gateway that drops the usage chunk a request
// asked for fails the request (integrity, as before) and names the
// object it dropped.
func TestUsageChunkDropped(t *testing.T) {
	addr, reg := serveWith(t, server.Config{Tokens: 1, DelayMs: 0.2})
	q := New(Options{Dialect: api.Chat, Addr: eventGateway(t, addr, dropUsageChunk), Tokens: 3, ExpectTokens: 3, IncludeUsage: true,
		Timeout: 10 * time.Second, Registry: reg, IDPrefix: "nousage"})
	rec := &result.Request{Batch: "gw", Index: 1}
	q.Do(context.Background(), rec)
	if rec.Failure.Kind != result.Integrity || rec.Failure.Detail != "no usage although it was asked for" {
		t.Errorf("failure %q; want the integrity failure of a missing usage chunk", rec.Failure.Error())
	}
}

func TestDiffUsage(t *testing.T) {
	sent := flattenJSON([]byte(`{"prompt_tokens":5990,"completion_tokens":109,"total_tokens":6099,"prompt_tokens_details":{"cached_tokens":5987}}`))
	for _, tc := range []struct {
		name, got, want string
	}{
		{"intact", `{"prompt_tokens":5990,"completion_tokens":109,"total_tokens":6099,"prompt_tokens_details":{"cached_tokens":5987}}`, ""},
		{"fields added", `{"prompt_tokens":5990,"completion_tokens":109,"total_tokens":6099,"cost":0.1,"prompt_tokens_details":{"cached_tokens":5987,"audio_tokens":0}}`, ""},
		{"cache figure changed", `{"prompt_tokens":5990,"completion_tokens":109,"total_tokens":6099,"prompt_tokens_details":{"cached_tokens":0}}`,
			"changed prompt_tokens_details.cached_tokens 5987->0"},
		{"cache figure nulled", `{"prompt_tokens":5990,"completion_tokens":109,"total_tokens":6099,"prompt_tokens_details":{"cached_tokens":null}}`,
			"dropped prompt_tokens_details.cached_tokens 5987->null"},
		{"output changed, total not: changed", `{"prompt_tokens":5990,"completion_tokens":110,"total_tokens":6099,"prompt_tokens_details":{"cached_tokens":5987}}`,
			"changed completion_tokens 109->110"},
		{"not an object", `[1,2]`,
			"dropped completion_tokens 109->; dropped prompt_tokens 5990->; dropped prompt_tokens_details.cached_tokens 5987->; dropped total_tokens 6099->"},
	} {
		var s []string
		for _, f := range diffUsage("p", sent, flattenJSON([]byte(tc.got))) {
			s = append(s, fmt.Sprintf("%s %s %s->%s", f.Kind, f.Field, f.Sent, f.Got))
		}
		if got := strings.Join(s, "; "); got != tc.want {
			t.Errorf("%s: diffUsage(%s) = %q, want %q", tc.name, tc.got, got, tc.want)
		}
	}
}
