package server

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/sse-latency/sse-latency/internal/api"
)

// The official SDKs are the judges of the dialects: each must stream from
// our server and accumulate exactly the emitted text and usage, and read the
// non-streaming answers.

const sdkTokens = 7 // more than the role/finish chunks, fewer than a cycle

// sdkServer starts a server whose default answer is sdkTokens tokens and
// returns its address and a context bounding each test.
func sdkServer(t *testing.T) (addr string, ctx context.Context) {
	t.Helper()
	srv := startServer(t, Config{Tokens: sdkTokens, DelayMs: 0.1})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return srv.Addr().String(), ctx
}

func openaiClient(addr string) openai.Client {
	return openai.NewClient(
		option.WithBaseURL("http://"+addr+"/v1/"),
		option.WithAPIKey("sk-test"),
		option.WithMaxRetries(0),
		option.WithHTTPClient(&http.Client{}),
	)
}

// checkUsage compares usage numbers an SDK read with what the server sent.
func checkUsage(t *testing.T, what string, input, output, total int64) {
	t.Helper()
	if input != api.PromptTokens || output != sdkTokens || (total >= 0 && total != api.PromptTokens+sdkTokens) {
		t.Errorf("%s: usage input=%d output=%d total=%d, want %d, %d, %d",
			what, input, output, total, api.PromptTokens, sdkTokens, api.PromptTokens+sdkTokens)
	}
}

func TestOpenAISDKChat(t *testing.T) {
	addr, ctx := sdkServer(t)
	client := openaiClient(addr)
	params := openai.ChatCompletionNewParams{
		Model:         "sse-latency-1",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage(api.ChatPrompt)},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	stream := client.Chat.Completions.NewStreaming(ctx, params, option.WithJSONSet("pi_delay_ms", 0.1))
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			t.Fatalf("ChatCompletionAccumulator rejected chunk %d: %s", chunks, stream.Current().RawJSON())
		}
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("chat stream: %v", err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != allText(sdkTokens) || acc.Choices[0].FinishReason != "stop" {
		t.Errorf("accumulated chat completion %+v, want content %q and finish_reason stop", acc.Choices, allText(sdkTokens))
	}
	if want := 1 + sdkTokens + 2; chunks != want {
		t.Errorf("%d chunks, want %d (role, tokens, finish, usage)", chunks, want)
	}
	checkUsage(t, "chat stream", acc.Usage.PromptTokens, acc.Usage.CompletionTokens, acc.Usage.TotalTokens)
	if acc.Model != "sse-latency-1" {
		t.Errorf("model %q, want the request's", acc.Model)
	}

	res, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatalf("chat non-streaming: %v", err)
	}
	if len(res.Choices) != 1 || res.Choices[0].Message.Content != allText(sdkTokens) {
		t.Errorf("chat non-streaming choices %+v, want content %q", res.Choices, allText(sdkTokens))
	}
	checkUsage(t, "chat non-streaming", res.Usage.PromptTokens, res.Usage.CompletionTokens, res.Usage.TotalTokens)
}

func TestOpenAISDKCompletions(t *testing.T) {
	addr, ctx := sdkServer(t)
	client := openaiClient(addr)
	params := openai.CompletionNewParams{
		Model:         "gpt-3.5-turbo-instruct",
		Prompt:        openai.CompletionNewParamsPromptUnion{OfString: openai.String(api.ChatPrompt)},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	// The hints by header this time.
	hint := option.WithHeader(api.HintHeader, "tokens="+strconv.Itoa(sdkTokens)+"; delay=0.1")
	stream := client.Completions.NewStreaming(ctx, params, hint)
	var text string
	var usage openai.CompletionUsage
	for stream.Next() {
		c := stream.Current()
		if c.Object != "text_completion" || c.Model != "gpt-3.5-turbo-instruct" {
			t.Errorf("completion chunk object %q model %q", c.Object, c.Model)
		}
		for _, ch := range c.Choices {
			text += ch.Text
		}
		if c.JSON.Usage.Valid() {
			usage = c.Usage
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("completions stream: %v", err)
	}
	if text != allText(sdkTokens) {
		t.Errorf("completions text %q, want %q", text, allText(sdkTokens))
	}
	checkUsage(t, "completions stream", usage.PromptTokens, usage.CompletionTokens, usage.TotalTokens)

	res, err := client.Completions.New(ctx, params, hint)
	if err != nil {
		t.Fatalf("completions non-streaming: %v", err)
	}
	if len(res.Choices) != 1 || res.Choices[0].Text != allText(sdkTokens) || res.Choices[0].FinishReason != "stop" {
		t.Errorf("completions non-streaming choices %+v, want text %q", res.Choices, allText(sdkTokens))
	}
	checkUsage(t, "completions non-streaming", res.Usage.PromptTokens, res.Usage.CompletionTokens, res.Usage.TotalTokens)
}

func TestOpenAISDKResponses(t *testing.T) {
	addr, ctx := sdkServer(t)
	client := openaiClient(addr)
	// The hints by prompt marker this time.
	delay := 0.1
	marker := api.Hints{DelayMs: &delay}.PromptMarker()
	params := responses.ResponseNewParams{
		Model: "gpt-4.1",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(api.ChatPrompt + " " + marker)},
	}
	stream := client.Responses.NewStreaming(ctx, params)
	var text string
	var completed *responses.Response
	var seq int64
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber != seq {
			t.Errorf("event %s has sequence_number %d, want %d", ev.Type, ev.SequenceNumber, seq)
		}
		seq++
		switch e := ev.AsAny().(type) {
		case responses.ResponseTextDeltaEvent:
			text += e.Delta
		case responses.ResponseCompletedEvent:
			completed = &e.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("responses stream: %v", err)
	}
	if text != allText(sdkTokens) {
		t.Errorf("responses deltas %q, want %q", text, allText(sdkTokens))
	}
	if completed == nil {
		t.Fatal("no response.completed event")
	}
	if got := completed.OutputText(); got != allText(sdkTokens) || completed.Status != "completed" || completed.Model != "gpt-4.1" {
		t.Errorf("completed response text %q status %q model %q", got, completed.Status, completed.Model)
	}
	u := completed.Usage
	checkUsage(t, "responses stream", u.InputTokens, u.OutputTokens, u.TotalTokens)

	res, err := client.Responses.New(ctx, params)
	if err != nil {
		t.Fatalf("responses non-streaming: %v", err)
	}
	if got := res.OutputText(); got != allText(sdkTokens) {
		t.Errorf("responses non-streaming text %q, want %q", got, allText(sdkTokens))
	}
	checkUsage(t, "responses non-streaming", res.Usage.InputTokens, res.Usage.OutputTokens, res.Usage.TotalTokens)
}

func TestAnthropicSDKMessages(t *testing.T) {
	addr, ctx := sdkServer(t)
	client := anthropic.NewClient(
		aoption.WithBaseURL("http://"+addr+"/"),
		aoption.WithAPIKey("sk-ant-test"),
		aoption.WithMaxRetries(0),
		aoption.WithHTTPClient(&http.Client{}),
	)
	params := anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 4096,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(api.ChatPrompt))},
	}
	stream := client.Messages.NewStreaming(ctx, params, aoption.WithJSONSet("pi_delay_ms", 0.1))
	var msg anthropic.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatalf("Accumulate(%s): %v", stream.Current().RawJSON(), err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("messages stream: %v", err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Type != "text" || msg.Content[0].Text != allText(sdkTokens) {
		t.Errorf("accumulated content %+v, want one text block %q", msg.Content, allText(sdkTokens))
	}
	if msg.StopReason != anthropic.StopReasonEndTurn || msg.Model != "claude-sonnet-4-5" || msg.ID == "" {
		t.Errorf("accumulated message id %q stop_reason %q model %q", msg.ID, msg.StopReason, msg.Model)
	}
	checkUsage(t, "messages stream", msg.Usage.InputTokens, msg.Usage.OutputTokens, -1)

	res, err := client.Messages.New(ctx, params)
	if err != nil {
		t.Fatalf("messages non-streaming: %v", err)
	}
	if len(res.Content) != 1 || res.Content[0].Text != allText(sdkTokens) || res.StopReason != anthropic.StopReasonEndTurn {
		t.Errorf("non-streaming message content %+v stop_reason %q", res.Content, res.StopReason)
	}
	checkUsage(t, "messages non-streaming", res.Usage.InputTokens, res.Usage.OutputTokens, -1)
}
