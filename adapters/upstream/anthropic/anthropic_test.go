package anthropic_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/upstream"
	"github.com/switchboard-ai/switchboard/adapters/upstream/anthropic"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/domain/chat"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/fakes"
)

// client calls the fake with key, waiting up to wait for the first byte and between chunks.
func client(f *fakes.Anthropic, key string, wait time.Duration) *anthropic.Client {
	return anthropic.New(upstream.Config{BaseURL: f.BaseURL(), APIKey: key, Timeout: wait, IdleTimeout: wait}, upstream.NewHTTPClient())
}

func TestChatContract(t *testing.T) {
	t.Parallel()
	f := fakes.NewAnthropic(t, "sk-ant-test")
	fakes.ChatContract{Fake: f.Fake, Key: "sk-ant-test",
		Client: func(key string, wait time.Duration) ports.ChatProvider { return client(f, key, wait) },
		Sent: func(t *testing.T, r fakes.Request) (string, float64, int) {
			var body struct {
				System      string  `json:"system"`
				Temperature float64 `json:"temperature"`
				MaxTokens   int     `json:"max_tokens"`
			}
			if err := json.Unmarshal(r.Body, &body); err != nil || r.Path != "/v1/messages" || r.Header.Get("anthropic-version") != anthropic.Version {
				t.Fatalf("%s %v: %v: %s", r.Path, r.Header, err, r.Body)
			}
			return body.System, body.Temperature, body.MaxTokens
		},
		Failures: []fakes.Failure{
			{Name: "rate limited", Step: fakes.Step{Status: 429, Body: fakes.AnthropicRateLimited, Header: map[string]string{"retry-after": "2"}},
				Kind: domain.KindRateLimited, Retryable: true, RetryAfter: 2 * time.Second},
			{Name: "credit balance too low", Step: fakes.Step{Status: 400, Body: fakes.AnthropicCredit}, Kind: domain.KindUpstream, Retryable: true},
			{Name: "server error", Step: fakes.Step{Status: 500, Body: fakes.AnthropicServerError}, Kind: domain.KindUpstream, Retryable: true},
			{Name: "overloaded", Step: fakes.Step{Status: 529, Body: fakes.AnthropicOverloaded}, Kind: domain.KindOverloaded, Retryable: true},
			{Name: "caller's input", Step: fakes.Step{Status: 400, Body: fakes.AnthropicBadInput}, Kind: domain.KindInvalid},
		},
	}.Run(t)
}

// TestChatOverloadedEvent: an error event in the stream is classified as the same error answered with a status.
func TestChatOverloadedEvent(t *testing.T) {
	t.Parallel()
	f := fakes.NewAnthropic(t, "k")
	f.Overloaded = true
	req := fakes.ChatRequest(t, "claude", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	res, err := fakes.ReadChat(t, client(f, "k", fakes.Patient), req)
	var ue *ports.UpstreamError
	if !errors.As(err, &ue) || ue.Kind != domain.KindOverloaded || !ue.Retryable || ue.Raw == "" || res.Content.Len() != 0 {
		t.Fatalf("err = %v (%+v)", err, ue)
	}
}

// TestBody: the translation of an OpenAI-shaped request into the Messages API.
func TestBody(t *testing.T) {
	t.Parallel()
	req := fakes.ChatRequest(t, "claude-sonnet", map[string]any{
		"messages": []any{
			map[string]any{"role": "system", "content": "Be brief."},
			map[string]any{"role": "developer", "content": []any{map[string]any{"type": "text", "text": "Use metric units."}}},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "What is this?"},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,iVBORw0KGgo="}},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://example.com/cat.jpg", "detail": "high"}},
				map[string]any{"type": "document", "source": map[string]any{"type": "text", "data": "<a&b>"}},
				map[string]any{"type": "text", "text": ""}}},
			map[string]any{"role": "assistant", "content": "", "tool_calls": []any{
				map[string]any{"id": "toolu_1", "type": "function", "function": map[string]any{"name": "look", "arguments": `{"at":"it"}`}},
				map[string]any{"id": "toolu_2", "type": "function", "function": map[string]any{"name": "zoom", "arguments": ""}}}},
			map[string]any{"role": "tool", "tool_call_id": "toolu_1", "content": "a cat"},
			map[string]any{"role": "tool", "tool_call_id": "toolu_2", "content": "closer"},
		},
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "look", "description": "Look",
			"parameters": map[string]any{"type": "object"}}}, map[string]any{"type": "function", "function": map[string]any{"name": "zoom"}}},
		"tool_choice": "required", "stop": []any{"END"}, "temperature": 0.5, "top_p": 0.9, "user": "u-1", "seed": 3,
		"response_format": map[string]any{"type": "json_object"}, "logit_bias": map[string]any{"1": 2},
	})
	req.Options = map[string]any{"top_k": 5, "max_tokens": 1}
	got, _ := json.Marshal(anthropic.Body(req))
	want := `{"max_tokens":4096,"messages":[` +
		`{"role":"user","content":[{"text":"What is this?","type":"text"},` +
		`{"source":{"data":"iVBORw0KGgo=","media_type":"image/png","type":"base64"},"type":"image"},` +
		`{"source":{"type":"url","url":"https://example.com/cat.jpg"},"type":"image"},` +
		`{"source":{"data":"\u003ca\u0026b\u003e","type":"text"},"type":"document"}]},` + // a block of a kind not read: as it came
		`{"role":"assistant","content":[{"id":"toolu_1","input":{"at":"it"},"name":"look","type":"tool_use"},` +
		`{"id":"toolu_2","input":{},"name":"zoom","type":"tool_use"}]},` +
		`{"role":"user","content":[{"content":"a cat","tool_use_id":"toolu_1","type":"tool_result"},` +
		`{"content":"closer","tool_use_id":"toolu_2","type":"tool_result"}]}],` +
		`"model":"claude-sonnet","stop_sequences":["END"],"stream":true,` +
		`"system":"Be brief.\n\nUse metric units.","temperature":0.5,"tool_choice":{"type":"any"},` +
		`"tools":[{"description":"Look","input_schema":{"type":"object"},"name":"look"},` +
		`{"input_schema":{"type":"object","properties":{}},"name":"zoom"}],"top_k":5,"top_p":0.9}`
	if string(got) != want {
		t.Fatalf("body\n got %s\nwant %s", got, want)
	}
}

// TestBodyResponsesParts: a Responses request's part of a kind chat has not (input_file) is left out, as other
// upstreams leave it out, rather than sent for Anthropic to refuse.
func TestBodyResponsesParts(t *testing.T) {
	t.Parallel()
	req := ports.ChatRequest{UpstreamModel: "claude-sonnet", Request: chat.Request{Format: chat.Responses,
		Messages: []chat.Message{{Role: "user", Content: []chat.Part{{Type: "text", Text: "Read it."},
			{Type: "input_file", Raw: domain.Opaque(`{"type":"input_file","file_id":"file-1"}`)}}}}}}
	got, _ := json.Marshal(anthropic.Body(req)["messages"])
	if want := `[{"role":"user","content":[{"text":"Read it.","type":"text"}]}]`; string(got) != want {
		t.Fatalf("messages\n got %s\nwant %s", got, want)
	}
}

func TestToolChoice(t *testing.T) {
	t.Parallel()
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "f"}}}
	for _, tc := range []struct {
		choice any
		want   string // tool_choice sent; "-" for no tools sent at all
	}{
		{"auto", `{"type":"auto"}`},
		{"required", `{"type":"any"}`},
		{"none", "-"},
		{map[string]any{"type": "function", "function": map[string]any{"name": "f"}}, `{"name":"f","type":"tool"}`},
	} {
		req := fakes.ChatRequest(t, "m", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x"}},
			"tools": tools, "tool_choice": tc.choice})
		body := anthropic.Body(req)
		got, _ := json.Marshal(body["tool_choice"])
		if tc.want == "-" {
			if _, ok := body["tools"]; ok || body["tool_choice"] != nil {
				t.Errorf("%v: tools %v choice %s", tc.choice, body["tools"], got)
			}
			continue
		}
		if string(got) != tc.want {
			t.Errorf("%v: tool_choice %s, want %s", tc.choice, got, tc.want)
		}
	}
}

// TestMaxTokens: the caller's max_tokens is sent; without it, the documented default.
func TestMaxTokens(t *testing.T) {
	t.Parallel()
	msgs := []any{map[string]any{"role": "user", "content": "x"}}
	if got := anthropic.Body(fakes.ChatRequest(t, "m", map[string]any{"messages": msgs}))["max_tokens"]; got != int64(chat.DefaultMaxTokens) {
		t.Fatalf("default max_tokens %v", got)
	}
	if got := anthropic.Body(fakes.ChatRequest(t, "m", map[string]any{"messages": msgs, "max_completion_tokens": 9}))["max_tokens"]; got != int64(9) {
		t.Fatalf("max_tokens %v", got)
	}
}

// TestChatNothingToSend: Anthropic refuses a request without messages, and an empty text block: a conversation
// with nothing else than its system prompt is not sent.
func TestChatNothingToSend(t *testing.T) {
	t.Parallel()
	f := fakes.NewAnthropic(t, "k")
	fakes.CheckNothingToSend(t, f.Fake, client(f, "k", fakes.Patient))
}
