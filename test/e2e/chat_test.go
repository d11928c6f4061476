package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
)

// TestOpenAIGoChat drives chat completions with the official Go client, unchanged but for its base URL: a
// tool call round trip through the Anthropic translation, a stream with its usage, a preset applied by
// @preset/slug (asserted on the upstream's side), and a stream that breaks, which the client raises.
func TestOpenAIGoChat(t *testing.T) {
	t.Parallel()
	oai, ant := fakes.NewOpenAI(t, "sk-chat"), fakes.NewAnthropic(t, "sk-ant")
	g := harness.Start(t, harness.WithConfig(fmt.Sprintf(`
providers:
  - {slug: chatfake, kind: openai, base_url: %s, api_key: sk-chat}
  - {slug: anthropic, kind: anthropic, base_url: %s, api_key: sk-ant}
models:
  - {id: chat/fake, modality: chat, endpoints: [{provider: chatfake, upstream_model: fake-1, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 2}}]}
  - {id: anthropic/claude, modality: chat, endpoints: [{provider: anthropic, upstream_model: claude-x, pricing: {per_million_prompt_tokens: 3, per_million_completion_tokens: 15}}]}
`, oai.BaseURL(), ant.BaseURL())))
	key, _ := g.Key(t, nil)
	client := openai.NewClient(option.WithBaseURL(g.URL+"/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// A tool call round trip, not streamed, through Anthropic.
	tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
		Name: "get_weather", Description: openai.String("The weather at a place"),
		Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"location": map[string]any{"type": "string"}}},
	})}
	params := openai.ChatCompletionNewParams{Model: "anthropic/claude", Tools: tools,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Weather in Paris?")}}
	res, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatalf("tool call: %v", err)
	}
	msg := res.Choices[0].Message
	if res.Choices[0].FinishReason != "tool_calls" || len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != "get_weather" ||
		msg.ToolCalls[0].Function.Arguments != `{"location":"Paris"}` {
		t.Fatalf("tool call: %+v", res.Choices[0])
	}
	params.Messages = append(params.Messages, msg.ToParam(), openai.ToolMessage("sunny, 21C", msg.ToolCalls[0].ID))
	if res, err = client.Chat.Completions.New(ctx, params); err != nil || res.Choices[0].Message.Content != "The tool said: sunny, 21C" {
		t.Fatalf("tool result: %v %+v", err, res)
	}

	// Streamed, with the usage chunk, gathered by the client's accumulator.
	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "chat/fake",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi there")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil || acc.Choices[0].Message.Content != "Hello from the fake upstream." ||
		acc.Choices[0].FinishReason != "stop" || acc.Usage.CompletionTokens != 6 {
		t.Fatalf("stream: %v %+v", err, acc.ChatCompletion)
	}

	// A preset by @preset/slug: its system prompt and parameters reach the upstream, the caller's messages after.
	if r := g.Do(t, "POST", "/presets/go-chat/chat/completions", key, map[string]any{"model": "chat/fake", "temperature": 0.7,
		"top_p": 0.5, "messages": []any{map[string]any{"role": "system", "content": "Talk like a robot."}}}); r.Status != 200 {
		t.Fatalf("preset: %d %s", r.Status, r.Body)
	}
	if _, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "@preset/go-chat",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi there")}}); err != nil {
		t.Fatalf("preset call: %v", err)
	}
	reqs := oai.Requests()
	var sent struct {
		Model       string
		Messages    []struct{ Role, Content string }
		Temperature float64
		TopP        float64 `json:"top_p"`
	}
	if err := json.Unmarshal(reqs[len(reqs)-1].Body, &sent); err != nil || sent.Model != "fake-1" || len(sent.Messages) != 2 ||
		sent.Messages[0].Role != "system" || sent.Messages[0].Content != "Talk like a robot." || sent.Messages[1].Content != "Hi there" ||
		sent.Temperature != 0.7 || sent.TopP != 0.5 {
		t.Fatalf("the upstream got %s", reqs[len(reqs)-1].Body)
	}

	// A stream that breaks after its first tokens: the client raises the error event.
	oai.Script(fakes.Step{Abort: 700})
	stream = client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "chat/fake",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi there")}})
	got := ""
	for stream.Next() {
		if c := stream.Current(); len(c.Choices) > 0 {
			got += c.Choices[0].Delta.Content
		}
	}
	var se *ssestream.StreamError
	if !errors.As(stream.Err(), &se) || got == "" {
		t.Fatalf("broken stream: %q then %v", got, stream.Err())
	}
}
