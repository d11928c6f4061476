package openai_test

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-ai/switchboard/adapters/upstream/openai"
	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/ports"
	"github.com/switchboard-ai/switchboard/test/fakes"
)

func TestChatContract(t *testing.T) {
	t.Parallel()
	f := fakes.NewOpenAI(t, "sk-test")
	fakes.ChatContract{Fake: f.Fake, Key: "sk-test",
		Client: func(key string, wait time.Duration) ports.ChatProvider { return client(f, key, wait) },
		Sent: func(t *testing.T, r fakes.Request) (string, float64, int) {
			var body struct {
				Messages []struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"messages"`
				Temperature         float64 `json:"temperature"`
				MaxTokens           int     `json:"max_tokens"`
				MaxCompletionTokens int     `json:"max_completion_tokens"`
			}
			if err := json.Unmarshal(r.Body, &body); err != nil || r.Path != "/v1/chat/completions" {
				t.Fatalf("%s: %v: %s", r.Path, err, r.Body)
			}
			system := ""
			if len(body.Messages) > 0 && body.Messages[0].Role == "system" {
				system = body.Messages[0].Content
			}
			return system, body.Temperature, max(body.MaxTokens, body.MaxCompletionTokens)
		},
		Failures: []fakes.Failure{
			{Name: "rate limited", Step: fakes.Step{Status: 429, Body: fakes.OpenAIRateLimited, Header: map[string]string{"Retry-After": "2"}},
				Kind: domain.KindRateLimited, Retryable: true, RetryAfter: 2 * time.Second},
			{Name: "quota", Step: fakes.Step{Status: 429, Body: fakes.OpenAIQuota}, Kind: domain.KindUpstream, Retryable: true},
			{Name: "server error", Step: fakes.Step{Status: 500, Body: fakes.OpenAIServerError}, Kind: domain.KindUpstream, Retryable: true},
			{Name: "overloaded", Step: fakes.Step{Status: 503, Body: fakes.OpenAIOverloaded}, Kind: domain.KindOverloaded, Retryable: true},
			{Name: "caller's input", Step: fakes.Step{Status: 400, Body: fakes.OpenAIBadInput}, Kind: domain.KindInvalid},
		},
	}.Run(t)
}

// TestChatPassesUnknownFields: fields the gateway does not read reach an OpenAI-compatible upstream as they
// came; the gateway's own do not; passthrough options go under the caller's fields.
func TestChatPassesUnknownFields(t *testing.T) {
	t.Parallel()
	f := fakes.NewOpenAI(t, "sk-test")
	req := fakes.ChatRequest(t, "up-model", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}},
		"logit_bias": map[string]any{"50256": -100}, "top_k": 3, "session_id": "s1", "models": []any{"x"}, "stream": false,
		"response_format": map[string]any{"type": "json_object"}, "seed": 7})
	req.Options = map[string]any{"top_k": 9, "min_p": 0.1}
	if _, err := fakes.ReadChat(t, client(f, "sk-test", fakes.Patient), req); err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	_ = json.Unmarshal(f.Requests()[0].Body, &body)
	so, _ := body["stream_options"].(map[string]any)
	if body["top_k"] != 3.0 || body["min_p"] != 0.1 || body["logit_bias"] == nil || body["seed"] != 7.0 ||
		body["response_format"] == nil || body["model"] != "up-model" || body["stream"] != true || so["include_usage"] != true {
		t.Fatalf("upstream body: %v", body)
	}
	for _, k := range []string{"session_id", "models", "provider", "preset"} {
		if _, ok := body[k]; ok {
			t.Fatalf("the gateway's field %q went upstream: %v", k, body)
		}
	}
}

// TestChatCompletionLimit: the completion limit sent is the one the call's budget was reserved for. With none in
// the request nor its provider.options, max_completion_tokens chat.DefaultMaxTokens (and a null max_tokens goes);
// one named in either goes as it came, with no default beside it.
func TestChatCompletionLimit(t *testing.T) {
	t.Parallel()
	f := fakes.NewOpenAI(t, "sk-test")
	p := client(f, "sk-test", fakes.Patient)
	hi := []any{map[string]any{"role": "user", "content": "Hi"}}
	for _, tc := range []struct {
		name string
		body map[string]any
		opts map[string]any
		want string
	}{
		{"none: the default", map[string]any{"messages": hi}, nil, `{"max_completion_tokens":4096}`},
		{"null max_tokens: the default", map[string]any{"messages": hi, "max_tokens": nil}, nil, `{"max_completion_tokens":4096}`},
		{"max_tokens", map[string]any{"messages": hi, "max_tokens": 9}, nil, `{"max_tokens":9}`},
		{"max_completion_tokens", map[string]any{"messages": hi, "max_completion_tokens": 9}, nil, `{"max_completion_tokens":9}`},
		{"options max_tokens", map[string]any{"messages": hi}, map[string]any{"max_tokens": 20000.0}, `{"max_tokens":20000}`},
		{"options max_completion_tokens", map[string]any{"messages": hi}, map[string]any{"max_completion_tokens": 20000.0},
			`{"max_completion_tokens":20000}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.Script()
			req := fakes.ChatRequest(t, "up-model", tc.body)
			req.Options = tc.opts
			if _, err := fakes.ReadChat(t, p, req); err != nil {
				t.Fatal(err)
			}
			var sent struct {
				MaxTokens           *int `json:"max_tokens,omitempty"`
				MaxCompletionTokens *int `json:"max_completion_tokens,omitempty"`
			}
			if err := json.Unmarshal(f.Requests()[0].Body, &sent); err != nil {
				t.Fatal(err)
			}
			if got, _ := json.Marshal(sent); string(got) != tc.want {
				t.Fatalf("sent %s, want %s", got, tc.want)
			}
		})
	}
}

// TestChatStreamToolCallIndexes: a streamed answer numbers its tool calls 0, 1, ... in the order the upstream's
// indexes first appear, as the non-streamed answer (chat.Result) gathers them and the Anthropic and Gemini
// adapters number theirs. Before, an upstream's -1, 3 or 2^40 was streamed as it came: a client indexing an
// array by it got a hole or a negative index.
func TestChatStreamToolCallIndexes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		upstream []int
		want     []int
	}{
		{"dense", []int{0, 1, 0, 1}, []int{0, 1, 0, 1}},
		{"from 1", []int{1, 1, 2}, []int{0, 0, 1}},
		{"negative, then a gap", []int{-1, 3, -1}, []int{0, 1, 0}},
		{"huge", []int{1 << 40, 0, 1 << 40}, []int{0, 1, 0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var in strings.Builder
			for _, n := range tt.upstream {
				fmt.Fprintf(&in, "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":%d,\"function\":{\"arguments\":\"x\"}}]}}]}\n\n", n)
			}
			in.WriteString("data: [DONE]\n\n")
			s := openai.NewChatStream(strings.NewReader(in.String()), 200)
			var got []int
			for {
				c, err := s.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range c.ToolCalls {
					got = append(got, d.Index)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("streamed indexes %v, want %v", got, tt.want)
			}
		})
	}
}
