package server

import (
	"context"
	"strings"
	"testing"
	"time"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/sse-latency/sse-latency/internal/api"
)

// The official SDKs read the usage the server sends, its cache fields
// included: a figure where the server has one (a hint, or its simulated
// prefix cache), null where it has none — which the SDKs tell from 0.

// usageServer starts a server with a prefix cache of 8-token blocks.
func usageServer(t *testing.T) (addr string, ctx context.Context) {
	t.Helper()
	srv := startServer(t, Config{Tokens: sdkTokens, DelayMs: 0.1, CacheBlockTokens: 8})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return srv.Addr().String(), ctx
}

// fieldReport is the prompt of the field report in shared/seeds: 5,990
// input tokens, of them 5,987 read from the cache (the hint's figure).
var fieldReport = api.ChatPrompt + " " + strings.Repeat("anan ", 5990*api.TokenBytes/5)[:5990*api.TokenBytes-len(api.ChatPrompt)-1]

func TestOpenAISDKChatUsage(t *testing.T) {
	addr, ctx := usageServer(t)
	client := openaiClient(addr)
	for _, tc := range []struct {
		name   string
		cached string // the hint: a figure, "none", or "" for the simulated cache's
		prompt string
		want   int64
		null   bool
	}{
		{"the field report's figures", "5987", fieldReport, 5987, false},
		{"no figure: null", "none", fieldReport, 0, true},
		// The simulated cache (a hint leaves it alone): the first time
		// the prompt's 748 whole blocks are written, the second read.
		{"the simulated cache, first", "", fieldReport, 0, false},
		{"the simulated cache, again", "", fieldReport, 748 * 8, false},
	} {
		params := chatStreamParams(tc.prompt)
		opts := []option.RequestOption{option.WithJSONSet("pi_delay_ms", 0.1)}
		if tc.cached != "" {
			opts = append(opts, option.WithHeader(api.HintHeader, "cached="+tc.cached))
		}
		stream := client.Chat.Completions.NewStreaming(ctx, params, opts...)
		var u openai.CompletionUsage
		for stream.Next() {
			if c := stream.Current(); c.JSON.Usage.Valid() {
				u = c.Usage
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		details := u.PromptTokensDetails
		if u.PromptTokens != 5990 || u.CompletionTokens != sdkTokens || u.TotalTokens != 5990+sdkTokens ||
			details.CachedTokens != tc.want || details.JSON.CachedTokens.Valid() == tc.null {
			t.Errorf("%s: usage prompt %d completion %d total %d cached %d (valid %v; raw %s); want 5990, %d, %d, cached %d, null %v",
				tc.name, u.PromptTokens, u.CompletionTokens, u.TotalTokens, details.CachedTokens, details.JSON.CachedTokens.Valid(),
				u.RawJSON(), sdkTokens, 5990+sdkTokens, tc.want, tc.null)
		}
	}
}

func TestOpenAISDKResponsesUsage(t *testing.T) {
	addr, ctx := usageServer(t)
	client := openaiClient(addr)
	cached := int64(5987)
	marker := api.Hints{Cached: &cached}.PromptMarker()
	stream := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{
		Model: "gpt-4.1",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(fieldReport + " " + marker)},
	})
	var completed *responses.Response
	for stream.Next() {
		if e, ok := stream.Current().AsAny().(responses.ResponseCompletedEvent); ok {
			completed = &e.Response
		}
	}
	if err := stream.Err(); err != nil || completed == nil {
		t.Fatalf("responses stream: %v, completed %v", err, completed != nil)
	}
	if u := completed.Usage; u.InputTokens != 5990 || u.InputTokensDetails.CachedTokens != 5987 || u.OutputTokens != sdkTokens {
		t.Errorf("responses usage input %d cached %d output %d; want 5990, 5987, %d", u.InputTokens, u.InputTokensDetails.CachedTokens,
			u.OutputTokens, sdkTokens)
	}
}

func TestAnthropicSDKMessagesUsage(t *testing.T) {
	addr, ctx := usageServer(t)
	client := anthropicClient(addr)
	params := anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 4096,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(fieldReport))},
	}
	// The first request writes the prompt's 748 whole blocks to the
	// cache, the second reads them; a hint of none makes both fields null.
	for _, tc := range []struct {
		name                   string
		hint                   string
		input, written, cached int64
		null                   bool
	}{
		{"first: written", "", 5990 - 748*8, 748 * 8, 0, false},
		{"again: read", "", 5990 - 748*8, 0, 748 * 8, false},
		{"no figure: null", "cached=none", 5990, 0, 0, true},
	} {
		opts := []aoption.RequestOption{aoption.WithJSONSet("pi_delay_ms", 0.1)}
		if tc.hint != "" {
			opts = append(opts, aoption.WithHeader(api.HintHeader, tc.hint))
		}
		msg := streamMessage(t, ctx, client, params, opts...)
		u := msg.Usage
		if u.InputTokens != tc.input || u.CacheCreationInputTokens != tc.written || u.CacheReadInputTokens != tc.cached ||
			u.OutputTokens != sdkTokens || u.JSON.CacheReadInputTokens.Valid() == tc.null || u.JSON.CacheCreationInputTokens.Valid() == tc.null {
			t.Errorf("%s: usage input %d written %d read %d output %d (read valid %v; raw %s); want %d, %d, %d, %d, null %v",
				tc.name, u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens, u.JSON.CacheReadInputTokens.Valid(),
				u.RawJSON(), tc.input, tc.written, tc.cached, sdkTokens, tc.null)
		}
	}
}
