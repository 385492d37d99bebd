package server

import (
	"context"
	"encoding/json"
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

// chatStreamParams is a streaming chat request for prompt that asks for
// the usage chunk, as the SDK tests send it.
func chatStreamParams(prompt string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:         "sse-latency-1",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
}

func openaiClient(addr string) openai.Client {
	return openai.NewClient(
		option.WithBaseURL("http://"+addr+"/v1/"),
		option.WithAPIKey("sk-test"),
		option.WithMaxRetries(0),
		option.WithHTTPClient(&http.Client{}),
	)
}

func anthropicClient(addr string) anthropic.Client {
	return anthropic.NewClient(
		aoption.WithBaseURL("http://"+addr+"/"),
		aoption.WithAPIKey("sk-ant-test"),
		aoption.WithMaxRetries(0),
		aoption.WithHTTPClient(&http.Client{}),
	)
}

// streamMessage streams a message and accumulates it with the SDK's
// Message.Accumulate.
func streamMessage(t *testing.T, ctx context.Context, client anthropic.Client, params anthropic.MessageNewParams, opts ...aoption.RequestOption) anthropic.Message {
	t.Helper()
	stream := client.Messages.NewStreaming(ctx, params, opts...)
	var msg anthropic.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatalf("Accumulate(%s): %v", stream.Current().RawJSON(), err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("messages stream: %v", err)
	}
	return msg
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
	params := chatStreamParams(api.ChatPrompt)
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
	client := anthropicClient(addr)
	params := anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 4096,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(api.ChatPrompt))},
	}
	msg := streamMessage(t, ctx, client, params, aoption.WithJSONSet("pi_delay_ms", 0.1))
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

// The phases: the SDKs must accumulate exactly the reasoning, the tool
// call's arguments and the text, in each reasoning shape.

const sdkReasoning, sdkToolCall = 5, 4

// phaseServer starts a server whose answers have sdkReasoning reasoning
// tokens in shape field, a tool call of sdkToolCall tokens and sdkTokens of
// text. The reasoning is spread over a think of 60 ms, 12 ms a token, and
// a heartbeat comes after 10 ms of silence: the SDKs must skip the
// heartbeats between the reasoning deltas.
func phaseServer(t *testing.T, field api.ReasoningField) (addr string, ctx context.Context) {
	t.Helper()
	srv := startServer(t, Config{Tokens: sdkTokens, Reasoning: sdkReasoning, ToolCall: sdkToolCall, ReasoningField: field, DelayMs: 0.1,
		ThinkMs: 60, HeartbeatMs: 10})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return srv.Addr().String(), ctx
}

// sdkPhases is what every SDK must read.
var sdkPhases = phaseTexts(sdkReasoning, sdkToolCall, sdkTokens)

const sdkTotal = sdkReasoning + sdkToolCall + sdkTokens

// jsonString decodes a raw JSON string (a field's Raw()).
func jsonString(t *testing.T, raw string) string {
	t.Helper()
	var s string
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatalf("%q is not a JSON string: %v", raw, err)
	}
	return s
}

// checkArguments checks a tool call's accumulated arguments: exactly the
// emitted text, and a JSON object.
func checkArguments(t *testing.T, what, args string) {
	t.Helper()
	var v struct{ Words string }
	if args != sdkPhases[api.PhaseToolCall] || json.Unmarshal([]byte(args), &v) != nil {
		t.Errorf("%s: tool call arguments %q, want the JSON object %q", what, args, sdkPhases[api.PhaseToolCall])
	}
}

func TestOpenAISDKChatPhases(t *testing.T) {
	for _, field := range []api.ReasoningField{api.ReasoningContent, api.ReasoningPlain} {
		addr, ctx := phaseServer(t, field)
		client := openaiClient(addr)
		params := chatStreamParams(api.ChatPrompt)
		stream := client.Chat.Completions.NewStreaming(ctx, params)
		var acc openai.ChatCompletionAccumulator
		var reasoning string
		var finished []openai.FinishedChatCompletionToolCall
		for stream.Next() {
			chunk := stream.Current()
			if !acc.AddChunk(chunk) {
				t.Fatalf("%s: ChatCompletionAccumulator rejected chunk %s", field, chunk.RawJSON())
			}
			if tc, ok := acc.JustFinishedToolCall(); ok {
				finished = append(finished, tc)
			}
			for _, ch := range chunk.Choices {
				// An extra field is never Valid() for the SDK: its Raw() is
				// the JSON as it came.
				if f, ok := ch.Delta.JSON.ExtraFields[field.String()]; ok && f.Raw() != "" && f.Raw() != "null" {
					reasoning += jsonString(t, f.Raw())
				}
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("%s: chat stream: %v", field, err)
		}
		if len(acc.Choices) != 1 {
			t.Fatalf("%s: %d choices", field, len(acc.Choices))
		}
		m := acc.Choices[0].Message
		if m.Content != sdkPhases[api.PhaseText] || reasoning != sdkPhases[api.PhaseReasoning] || acc.Choices[0].FinishReason != "tool_calls" {
			t.Errorf("%s: content %q, %s %q, finish_reason %q; want %q, %q, tool_calls", field, m.Content, field, reasoning,
				acc.Choices[0].FinishReason, sdkPhases[api.PhaseText], sdkPhases[api.PhaseReasoning])
		}
		if len(m.ToolCalls) != 1 || m.ToolCalls[0].Function.Name != api.ToolName || m.ToolCalls[0].ID == "" || m.ToolCalls[0].Type != "function" {
			t.Fatalf("%s: tool calls %+v, want one call of %s", field, m.ToolCalls, api.ToolName)
		}
		checkArguments(t, field.String()+" stream", m.ToolCalls[0].Function.Arguments)
		if len(finished) != 1 || finished[0].Arguments != sdkPhases[api.PhaseToolCall] {
			t.Errorf("%s: JustFinishedToolCall reported %+v, want the call once, complete", field, finished)
		}
		if acc.Usage.CompletionTokens != sdkTotal || acc.Usage.CompletionTokensDetails.ReasoningTokens != sdkReasoning {
			t.Errorf("%s: usage %+v, want %d completion tokens of which %d reasoning", field, acc.Usage, sdkTotal, sdkReasoning)
		}

		res, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatalf("%s: chat non-streaming: %v", field, err)
		}
		m = res.Choices[0].Message
		f := m.JSON.ExtraFields[field.String()]
		if m.Content != sdkPhases[api.PhaseText] || jsonString(t, f.Raw()) != sdkPhases[api.PhaseReasoning] || len(m.ToolCalls) != 1 {
			t.Errorf("%s: non-streaming message %s", field, m.RawJSON())
		} else {
			checkArguments(t, field.String()+" non-streaming", m.ToolCalls[0].Function.Arguments)
		}
	}
}

func TestOpenAISDKResponsesPhases(t *testing.T) {
	for _, field := range []api.ReasoningField{api.ReasoningContent, api.ReasoningPlain} {
		addr, ctx := phaseServer(t, field)
		client := openaiClient(addr)
		params := responses.ResponseNewParams{
			Model: "gpt-5",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(api.ChatPrompt)},
		}
		stream := client.Responses.NewStreaming(ctx, params)
		var reasoning, args, text string
		var argsDone string
		var completed *responses.Response
		var seq int64
		for stream.Next() {
			ev := stream.Current()
			if ev.SequenceNumber != seq {
				t.Errorf("%s: event %s has sequence_number %d, want %d", field, ev.Type, ev.SequenceNumber, seq)
			}
			seq++
			switch e := ev.AsAny().(type) {
			case responses.ResponseReasoningSummaryTextDeltaEvent:
				reasoning += e.Delta
			case responses.ResponseReasoningTextDeltaEvent:
				reasoning += e.Delta
			case responses.ResponseFunctionCallArgumentsDeltaEvent:
				args += e.Delta
			case responses.ResponseFunctionCallArgumentsDoneEvent:
				argsDone = e.Arguments
			case responses.ResponseTextDeltaEvent:
				text += e.Delta
			case responses.ResponseCompletedEvent:
				completed = &e.Response
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("%s: responses stream: %v", field, err)
		}
		if reasoning != sdkPhases[api.PhaseReasoning] || text != sdkPhases[api.PhaseText] || argsDone != args {
			t.Errorf("%s: reasoning %q text %q, arguments done %q; want %q, %q, the deltas' %q", field, reasoning, text, argsDone,
				sdkPhases[api.PhaseReasoning], sdkPhases[api.PhaseText], args)
		}
		checkArguments(t, field.String()+" deltas", args)
		if completed == nil {
			t.Fatalf("%s: no response.completed", field)
		}
		checkResponseOutput(t, field, "stream", completed)

		res, err := client.Responses.New(ctx, params)
		if err != nil {
			t.Fatalf("%s: responses non-streaming: %v", field, err)
		}
		checkResponseOutput(t, field, "non-streaming", res)
	}
}

// checkResponseOutput checks the output items of a completed response:
// the reasoning item (summary or reasoning text), the function call, the
// message, and the usage.
func checkResponseOutput(t *testing.T, field api.ReasoningField, what string, r *responses.Response) {
	t.Helper()
	if len(r.Output) != 3 {
		t.Fatalf("%s %s: %d output items, want reasoning, function call, message: %s", field, what, len(r.Output), r.RawJSON())
	}
	rs := r.Output[0].AsReasoning()
	var reasoning string
	for _, s := range rs.Summary {
		reasoning += s.Text
	}
	for _, c := range rs.Content {
		reasoning += c.Text
	}
	wantSummary := field == api.ReasoningContent
	if r.Output[0].Type != "reasoning" || reasoning != sdkPhases[api.PhaseReasoning] || (len(rs.Summary) == 1) != wantSummary {
		t.Errorf("%s %s: reasoning item %s", field, what, r.Output[0].RawJSON())
	}
	fc := r.Output[1].AsFunctionCall()
	if r.Output[1].Type != "function_call" || fc.Name != api.ToolName || fc.CallID == "" || fc.Status != "completed" {
		t.Errorf("%s %s: function call item %s", field, what, r.Output[1].RawJSON())
	}
	checkArguments(t, field.String()+" "+what+" item", fc.Arguments)
	if got := r.OutputText(); got != sdkPhases[api.PhaseText] {
		t.Errorf("%s %s: output text %q, want %q", field, what, got, sdkPhases[api.PhaseText])
	}
	if r.Usage.OutputTokens != sdkTotal || r.Usage.OutputTokensDetails.ReasoningTokens != sdkReasoning {
		t.Errorf("%s %s: usage %s, want %d output tokens of which %d reasoning", field, what, r.Usage.RawJSON(), sdkTotal, sdkReasoning)
	}
}

func TestAnthropicSDKMessagesPhases(t *testing.T) {
	addr, ctx := phaseServer(t, api.ReasoningContent)
	client := anthropicClient(addr)
	params := anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 4096,
		Thinking:  anthropic.ThinkingConfigParamOfEnabled(api.AnthropicThinkingBudget),
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(api.ChatPrompt))},
	}
	msg := streamMessage(t, ctx, client, params)
	checkAnthropicPhases(t, "stream", msg)

	res, err := client.Messages.New(ctx, params)
	if err != nil {
		t.Fatalf("messages non-streaming: %v", err)
	}
	checkAnthropicPhases(t, "non-streaming", *res)
}

// checkAnthropicPhases checks a message's blocks: thinking with its
// signature, tool_use with its input, text; stop_reason tool_use.
func checkAnthropicPhases(t *testing.T, what string, msg anthropic.Message) {
	t.Helper()
	if len(msg.Content) != 3 {
		t.Fatalf("%s: %d content blocks, want thinking, tool_use, text: %+v", what, len(msg.Content), msg.Content)
	}
	th, tu, tx := msg.Content[0], msg.Content[1], msg.Content[2]
	if th.Type != "thinking" || th.Thinking != sdkPhases[api.PhaseReasoning] || th.Signature != api.AnthropicSignature {
		t.Errorf("%s: thinking block %s", what, th.RawJSON())
	}
	if tu.Type != "tool_use" || tu.Name != api.ToolName || tu.ID == "" {
		t.Errorf("%s: tool_use block %s", what, tu.RawJSON())
	}
	var in, want any
	json.Unmarshal([]byte(sdkPhases[api.PhaseToolCall]), &want)
	if err := json.Unmarshal(tu.Input, &in); err != nil || jstr(in) != jstr(want) {
		t.Errorf("%s: tool input %s (%v), want %s", what, tu.Input, err, sdkPhases[api.PhaseToolCall])
	}
	if tx.Type != "text" || tx.Text != sdkPhases[api.PhaseText] {
		t.Errorf("%s: text block %s", what, tx.RawJSON())
	}
	if msg.StopReason != anthropic.StopReasonToolUse || msg.Usage.OutputTokens != sdkTotal {
		t.Errorf("%s: stop_reason %q, %d output tokens; want tool_use, %d", what, msg.StopReason, msg.Usage.OutputTokens, sdkTotal)
	}
}
