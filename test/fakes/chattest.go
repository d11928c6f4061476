package fakes

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/inbound/chatcompletions"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/ports"
)

// ChatContract is what every chat adapter must do against its provider's fake: the shared contract suite.
type ChatContract struct {
	Fake *Fake
	// Client calls the fake with the key (the fake's own, or a wrong one), waiting up to wait for the first byte
	// and between chunks.
	Client func(key string, wait time.Duration) ports.ChatProvider
	Key    string
	// Sent reads, from a request the fake received, the system prompt, temperature and completion limit it
	// carried, in the provider's own words.
	Sent func(t *testing.T, r Request) (system string, temperature float64, maxTokens int)
	// Failures are the provider's error bodies and how they must be classified.
	Failures []Failure
}

// ChatRequest is a request for the upstream model with the given body fields, decoded as the gateway decodes a
// chat completions body.
func ChatRequest(t *testing.T, model string, body map[string]any) ports.ChatRequest {
	t.Helper()
	if _, ok := body["model"]; !ok {
		body = maps.Clone(body)
		body["model"] = "gateway-model"
	}
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	b, err := chatcompletions.Decode(raw)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	req, err := b.Request()
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return ports.ChatRequest{UpstreamModel: model, Request: req}
}

// ReadChat calls the provider and gathers the whole answer.
func ReadChat(t *testing.T, p ports.ChatProvider, req ports.ChatRequest) (*chat.Result, error) {
	t.Helper()
	reply, err := p.Chat(context.Background(), req)
	if err != nil {
		return nil, err
	}
	defer reply.Body.Close()
	return Gather(reply.Decode(reply.Body))
}

// Gather reads a stream to its end and gathers its chunks into the whole answer, as the gateway does.
func Gather(stream ports.ChatStream) (*chat.Result, error) {
	var res chat.Result
	for {
		c, err := stream.Next()
		if err == io.EOF {
			return &res, nil
		}
		if err != nil {
			return &res, err
		}
		res.Add(c)
	}
}

// CheckNothingToSend holds a provider whose API takes no conversation without a message besides the system prompt
// (Anthropic's, Gemini's) to refusing one before the call — a system message alone, an empty text, empty parts —
// naming messages, for another endpoint of the model to take: the provider is not called.
func CheckNothingToSend(t *testing.T, f *Fake, p ports.ChatProvider) {
	for name, msgs := range map[string][]any{
		"a system prompt alone": {map[string]any{"role": "system", "content": "Be brief."}},
		"an empty text":         {map[string]any{"role": "user", "content": ""}},
		"empty parts":           {map[string]any{"role": "developer", "content": "x"}, map[string]any{"role": "user", "content": []any{}}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ReadChat(t, p, ChatRequest(t, "up-model", map[string]any{"messages": msgs}))
			var ue *ports.UpstreamError
			if !errors.As(err, &ue) || ue.Kind != domain.KindInvalid || !ue.Retryable || !strings.HasPrefix(ue.Reason, "messages: ") {
				t.Fatalf("err = %v (%+v)", err, ue)
			}
		})
	}
	if n := f.Calls(); n != 0 {
		t.Fatalf("the provider was called %d times", n)
	}
}

var weatherTool = []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather",
	"description": "The weather at a place", "parameters": map[string]any{"type": "object",
		"properties": map[string]any{"location": map[string]any{"type": "string"}}, "required": []any{"location"}}}}}

// Run runs the suite.
func (c ChatContract) Run(t *testing.T) {
	p := c.Client(c.Key, Patient)
	hello := []any{map[string]any{"role": "system", "content": "Be brief."}, map[string]any{"role": "user", "content": "Hi there"}}
	t.Run("text", func(t *testing.T) {
		c.Fake.Script()
		res, err := ReadChat(t, p, ChatRequest(t, "up-model", map[string]any{"messages": hello, "temperature": 0.25}))
		if err != nil {
			t.Fatal(err)
		}
		if res.Content.String() != "Hello from the fake upstream." || res.FinishReason != "stop" || res.Usage == nil ||
			res.Usage.PromptTokens <= 0 || res.Usage.CompletionTokens != int64(len(FakeSentence)) {
			t.Fatalf("answer %q finish %q usage %+v", res.Content.String(), res.FinishReason, res.Usage)
		}
		system, temp, _ := c.Sent(t, c.Fake.Requests()[0])
		if system != "Be brief." || temp != 0.25 {
			t.Fatalf("upstream got system %q temperature %v", system, temp)
		}
	})
	// The completion limit the upstream is sent is the one the call's budget was reserved for: the request's, or
	// chat.DefaultMaxTokens when it sets none (a fake answers up to FakeWordLimit words, else FakeSentence).
	for _, tc := range []struct {
		name   string
		body   map[string]any
		sent   int
		answer string
		finish string
		tokens int64
	}{
		{"max tokens", map[string]any{"messages": hello, "max_tokens": 7}, 7, " w0 w1 w2 w3 w4 w5 w6", "length", 7},
		{"no max tokens: the default", map[string]any{"messages": hello}, chat.DefaultMaxTokens, "Hello from the fake upstream.", "stop", int64(len(FakeSentence))},
		{"null max tokens: the default", map[string]any{"messages": hello, "max_tokens": nil}, chat.DefaultMaxTokens,
			"Hello from the fake upstream.", "stop", int64(len(FakeSentence))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.Fake.Script()
			res, err := ReadChat(t, p, ChatRequest(t, "up-model", tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if _, _, n := c.Sent(t, c.Fake.Requests()[0]); n != tc.sent {
				t.Fatalf("upstream got max tokens %d, want %d", n, tc.sent)
			}
			if res.FinishReason != tc.finish || res.Content.String() != tc.answer || res.Usage == nil ||
				res.Usage.CompletionTokens != tc.tokens {
				t.Fatalf("answer %q finish %q usage %+v", res.Content.String(), res.FinishReason, res.Usage)
			}
		})
	}
	t.Run("tool call round trip", func(t *testing.T) {
		c.Fake.Script()
		msgs := []any{map[string]any{"role": "user", "content": "Weather in Paris?"}}
		res, err := ReadChat(t, p, ChatRequest(t, "up-model", map[string]any{"messages": msgs, "tools": weatherTool}))
		if err != nil {
			t.Fatal(err)
		}
		if res.FinishReason != "tool_calls" || len(res.ToolCalls) != 1 || res.ToolCalls[0].Name != "get_weather" ||
			res.ToolCalls[0].Arguments != `{"location":"Paris"}` || res.ToolCalls[0].ID == "" {
			t.Fatalf("finish %q tool calls %+v", res.FinishReason, res.ToolCalls)
		}
		tc := res.ToolCalls[0]
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": tc.ID, "type": "function",
				"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}}}},
			map[string]any{"role": "tool", "tool_call_id": tc.ID, "content": "sunny, 21C"})
		res, err = ReadChat(t, p, ChatRequest(t, "up-model", map[string]any{"messages": msgs, "tools": weatherTool}))
		if err != nil {
			t.Fatal(err)
		}
		if res.Content.String() != "The tool said: sunny, 21C" || res.FinishReason != "stop" {
			t.Fatalf("answer %q finish %q", res.Content.String(), res.FinishReason)
		}
	})
	t.Run("failures", func(t *testing.T) {
		req := ChatRequest(t, "up-model", map[string]any{"messages": hello})
		shared := []Failure{
			{Name: "no first byte in time", Step: Step{Hold: make(chan struct{})}, Kind: domain.KindTimeout, Retryable: true},
			{Name: "stalls mid-stream", Step: Step{HoldAfter: 300}, Kind: domain.KindTimeout, Retryable: true},
			{Name: "cut mid-stream", Step: Step{Abort: 300}, Kind: domain.KindUpstream, Retryable: true},
		}
		for _, tc := range append(c.Failures, shared...) {
			t.Run(tc.Name, func(t *testing.T) {
				c.Fake.Script(tc.Step)
				_, err := ReadChat(t, c.Client(c.Key, tc.Step.Wait()), req)
				c.Fake.settle(tc.Step)
				checkFailure(t, err, tc)
			})
		}
		t.Run("our key rejected", func(t *testing.T) {
			c.Fake.Script()
			_, err := ReadChat(t, c.Client("wrong-key", Patient), req)
			checkFailure(t, err, Failure{Kind: domain.KindUpstream, Retryable: true, Step: Step{Status: 401}})
		})
	})
}

func checkFailure(t *testing.T, err error, tc Failure) {
	t.Helper()
	var ue *ports.UpstreamError
	if !errors.As(err, &ue) {
		t.Fatalf("err = %v (%T), want an UpstreamError", err, err)
	}
	if ue.Kind != tc.Kind || ue.Retryable != tc.Retryable || ue.RetryAfter != tc.RetryAfter {
		t.Fatalf("classified as kind %d retryable %v retry-after %v; want kind %d retryable %v retry-after %v (%v)",
			ue.Kind, ue.Retryable, ue.RetryAfter, tc.Kind, tc.Retryable, tc.RetryAfter, ue)
	}
	if tc.Step.Status != 0 && ue.Raw == "" {
		t.Fatal("the provider's error body was not kept for the record")
	}
}
