package e2e_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/switchboard-ai/switchboard/test/fakes"
	"github.com/switchboard-ai/switchboard/test/harness"
)

// messagesSuite is the Anthropic SDK's suite (js/messages.test.mjs).
const messagesSuite = "messages.test.mjs"

// messagesGateway starts a gateway with a model on an Anthropic fake (claude/sonnet), one on an OpenAI-compatible
// fake (gpt/fake), and one whose Anthropic fake is rate limited (claude/limited).
func messagesGateway(t *testing.T) (*harness.Gateway, *fakes.Anthropic, *fakes.OpenAI, *fakes.Anthropic) {
	anthropic := fakes.NewAnthropic(t, "sk-ant-fake")
	openai := fakes.NewOpenAI(t, "sk-openai-fake")
	limited := fakes.NewAnthropic(t, "sk-ant-limited")
	steps := make([]fakes.Step, 20)
	for i := range steps {
		steps[i] = fakes.Step{Status: 429, Body: fakes.AnthropicRateLimited}
	}
	limited.Script(steps...)
	g := harness.Start(t, harness.WithConfig(fmt.Sprintf(`
providers:
  - {slug: anthropic, kind: anthropic, base_url: %s, api_key: sk-ant-fake}
  - {slug: openaifake, kind: openai, base_url: %s, api_key: sk-openai-fake}
  - {slug: limited, kind: anthropic, base_url: %s, api_key: sk-ant-limited}
models:
  - {id: claude/sonnet, modality: chat, endpoints: [{provider: anthropic, upstream_model: claude-sonnet-4-5, pricing: {per_million_prompt_tokens: 3, per_million_completion_tokens: 15}}]}
  - {id: gpt/fake, modality: chat, endpoints: [{provider: openaifake, upstream_model: fake-1, pricing: {per_million_prompt_tokens: 1, per_million_completion_tokens: 2}}]}
  - {id: claude/limited, modality: chat, endpoints: [{provider: limited, upstream_model: claude-x, pricing: {per_million_prompt_tokens: 3, per_million_completion_tokens: 15}}]}
`, anthropic.BaseURL(), openai.BaseURL(), limited.BaseURL())))
	return g, anthropic, openai, limited
}

// TestAnthropicSDK runs the Anthropic SDK against /messages routed to an Anthropic fake, whose requests must carry
// what the SDK sent as it came: the system blocks with their cache_control, the thinking block with its signature,
// the anthropic-beta header.
func TestAnthropicSDK(t *testing.T) {
	t.Parallel()
	g, anthropic, _, _ := messagesGateway(t)
	key, _ := g.Key(t, nil)
	runNode(t, map[string]string{"SB_URL": g.URL, "SB_ANTHROPIC_URL": strings.TrimSuffix(g.URL, "/v1"), "SB_KEY": key,
		"SB_MESSAGES_MODEL": "claude/sonnet", "SB_FAILING_MODEL": "claude/limited"},
		func(f string) bool { return f == messagesSuite })

	var found bool
	for _, r := range anthropic.Requests() {
		if !strings.Contains(string(r.Body), "SYSTEM-CACHED") {
			continue
		}
		found = true
		var body struct {
			Model    string
			Stream   bool
			System   json.RawMessage
			Messages []struct {
				Content json.RawMessage
			}
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		wantSystem := `[{"type":"text","text":"You are terse."},{"type":"text","text":"SYSTEM-CACHED","cache_control":{"type":"ephemeral","ttl":"1h"}}]`
		if string(body.System) != wantSystem {
			t.Errorf("system upstream: %s\nwant %s", body.System, wantSystem)
		}
		wantThinking := `[{"type":"thinking","thinking":"THINKING-SENT-BACK","signature":"c2lnbmF0dXJlLW9mLXRoZS10aGlua2luZw=="},{"type":"text","text":"I thought."}]`
		if len(body.Messages) != 3 || string(body.Messages[1].Content) != wantThinking {
			t.Errorf("messages upstream: %s", r.Body)
		}
		if want := `[{"type":"text","text":"Go on.","cache_control":{"type":"ephemeral"}}]`; string(body.Messages[2].Content) != want {
			t.Errorf("last message upstream: %s", body.Messages[2].Content)
		}
		if body.Model != "claude-sonnet-4-5" || !body.Stream {
			t.Errorf("model %q stream %v upstream", body.Model, body.Stream)
		}
		if got := r.Header.Get("anthropic-beta"); got != "interleaved-thinking-2025-05-14" {
			t.Errorf("anthropic-beta upstream: %q", got)
		}
		if got := r.Header.Get("anthropic-version"); got == "" || got == "2023-06-01" {
			t.Errorf("anthropic-version upstream: %q, want the SDK's own", got)
		}
	}
	if !found {
		t.Fatal("the cached system prompt never reached the upstream")
	}
}

// TestAnthropicSDKTranslated runs the same suite routed to an OpenAI-compatible fake: the gateway translates the
// request and the answer both ways, and drops what the upstream cannot take (cache_control, thinking).
func TestAnthropicSDKTranslated(t *testing.T) {
	t.Parallel()
	g, _, openai, _ := messagesGateway(t)
	key, _ := g.Key(t, nil)
	runNode(t, map[string]string{"SB_URL": g.URL, "SB_ANTHROPIC_URL": strings.TrimSuffix(g.URL, "/v1"), "SB_KEY": key,
		"SB_MESSAGES_MODEL": "gpt/fake"}, func(f string) bool { return f == messagesSuite })
	var found bool
	for _, r := range openai.Requests() {
		body := string(r.Body)
		if !strings.Contains(body, "SYSTEM-CACHED") {
			continue
		}
		found = true
		for _, dropped := range []string{"cache_control", "THINKING-SENT-BACK", "signature"} {
			if strings.Contains(body, dropped) {
				t.Errorf("%s reached the OpenAI-compatible upstream: %s", dropped, body)
			}
		}
		if !strings.Contains(body, `"role":"system"`) || !strings.Contains(body, "I thought.") {
			t.Errorf("the conversation upstream: %s", body)
		}
	}
	if !found {
		t.Fatal("the system prompt never reached the upstream")
	}
}
